//! Poisson noise drawn exactly as the C program draws it (Numerical Recipes `poidev` and
//! `gaussdev` on `ran1`, with C's single-precision intermediates), so the same `-seed` gives
//! the same noise image.

use crate::base::rng::ShuffleTable;

/// ln Γ(x) by the Lanczos series, as C's `gammln` (float in, float out, double inside).
pub fn gammln(xx: f32) -> f32 {
    const COF: [f64; 6] = [
        76.18009172947146,
        -86.50532032941677,
        24.01409824083091,
        -1.231739572450155,
        0.1208650973866179e-2,
        -0.5395239384953e-5,
    ];
    let x = xx as f64;
    let mut y = x;
    let mut tmp = x + 5.5;
    tmp -= (x + 0.5) * tmp.ln();
    let mut ser = 1.000000000190015;
    for c in COF {
        y += 1.0;
        ser += c / y;
    }
    (-tmp + (2.5066282746310005 * ser / x).ln()) as f32
}

/// C's deviates with their statics: the `ran1` shuffle table and the spare Gaussian deviate
/// `gaussdev` keeps between calls, both shared by every seed variable drawn through them (as in
/// one C process). Each call names the seed variable it advances.
#[derive(Debug, Clone, Default)]
pub struct Deviates {
    table: ShuffleTable,
    spare: Option<f32>,
}

impl Deviates {
    /// Uniform deviate in (0, 1), as C's `ran1(idum)`.
    pub fn uniform(&mut self, idum: &mut i64) -> f32 {
        self.table.ran1(idum)
    }

    /// Normal deviate (polar Box–Muller), as C's `gaussdev(idum)`: the spare deviate of the
    /// previous pair comes back first, whichever seed drew it.
    pub fn gaussian(&mut self, idum: &mut i64) -> f32 {
        if let Some(g) = self.spare.take() {
            return g;
        }
        loop {
            let v1 = (2.0 * self.uniform(idum) as f64 - 1.0) as f32;
            let v2 = (2.0 * self.uniform(idum) as f64 - 1.0) as f32;
            let rsq = v1 * v1 + v2 * v2;
            if rsq < 1.0 && rsq != 0.0 {
                let fac = (-2.0 * (rsq as f64).ln() / rsq as f64).sqrt() as f32;
                self.spare = Some(v1 * fac);
                return v2 * fac;
            }
        }
    }

    /// Poisson deviate with mean `xm`, as C's `poidev(xm, idum)`.
    ///
    /// Terminates for every input. A non-finite mean draws nothing from the generator and gives
    /// itself back: NaN stays NaN and +∞ stays +∞ (C's `poidev` loops forever on NaN), while −∞
    /// gives 0 as every negative mean does. A finite mean above 10⁶ uses C's Gaussian
    /// approximation, whose result may round to +∞ in single precision near `f32::MAX`.
    pub fn poisson(&mut self, xm: f32, idum: &mut i64) -> f32 {
        if xm.is_nan() || xm == f32::INFINITY {
            return xm;
        }
        if xm == f32::NEG_INFINITY {
            return 0.0;
        }
        if xm > 1.0e6 {
            return (xm as f64 + (xm as f64).sqrt() * self.gaussian(idum) as f64) as f32;
        }
        if xm < 12.0 {
            return self.poisson_direct(xm, idum);
        }
        self.poisson_rejection(xm, idum)
    }

    /// Small means: multiplies uniform deviates until the product drops below e^(−xm).
    fn poisson_direct(&mut self, xm: f32, idum: &mut i64) -> f32 {
        let g = (-(xm as f64)).exp() as f32;
        let mut em = -1.0f32;
        let mut t = 1.0f32;
        loop {
            em += 1.0;
            t *= self.uniform(idum);
            if t <= g {
                return em;
            }
        }
    }

    /// Means from 12 to 10⁶: rejection from a Lorentzian comparison function.
    fn poisson_rejection(&mut self, xm: f32, idum: &mut i64) -> f32 {
        let sq = (2.0 * xm as f64).sqrt() as f32;
        let alxm = (xm as f64).ln() as f32;
        let g = xm * alxm - gammln((xm as f64 + 1.0) as f32);
        loop {
            let (mut em, mut y);
            loop {
                y = (std::f64::consts::PI * self.uniform(idum) as f64).tan() as f32;
                em = sq * y + xm;
                if em >= 0.0 {
                    break;
                }
            }
            em = em.floor();
            let e = em * alxm - gammln((em as f64 + 1.0) as f32) - g;
            let t = (0.9 * (1.0 + (y * y) as f64) * (e as f64).exp()) as f32;
            if self.uniform(idum) <= t {
                return em;
            }
        }
    }
}

/// A noise stream of nanoBragg's `-seed`: one seed variable with deviates of its own.
#[derive(Debug, Clone)]
pub struct PoissonNoise {
    deviates: Deviates,
    idum: i64,
}

impl PoissonNoise {
    /// A stream for `-seed n` (C stores −n).
    pub fn new(seed: i64) -> Self {
        Self {
            deviates: Deviates::default(),
            idum: -seed,
        }
    }

    /// Normal deviate, as C's `gaussdev`.
    pub fn gaussian(&mut self) -> f32 {
        self.deviates.gaussian(&mut self.idum)
    }

    /// Poisson deviate with mean `xm`, as C's `poidev` (see [`Deviates::poisson`]).
    pub fn poisson(&mut self, xm: f32) -> f32 {
        self.deviates.poisson(xm, &mut self.idum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gammln_matches_factorials() {
        for n in 1..15u32 {
            let fact: f64 = (1..n).map(|k| k as f64).product();
            assert!((gammln(n as f32) as f64 - fact.ln()).abs() < 1e-4, "{n}");
        }
    }

    /// Runs `f` on a thread and fails if it has not returned within a few seconds.
    fn finishes<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{what} did not finish"))
    }

    #[test]
    fn poisson_terminates_on_any_mean() {
        let means = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            1e30,
            1.0e6,
            1.0e6 + 64.0,
            12.0,
            11.999,
            f32::MIN_POSITIVE,
            1e-45,
            0.0,
            -0.0,
            -5.0,
        ];
        for mean in means {
            let got = finishes(&format!("poisson({mean})"), move || {
                let mut noise = PoissonNoise::new(7);
                (0..200).map(|_| noise.poisson(mean)).collect::<Vec<f32>>()
            });
            for v in got {
                if mean.is_nan() {
                    assert!(v.is_nan());
                } else if mean == f32::INFINITY {
                    assert_eq!(v, f32::INFINITY);
                } else if mean <= 0.0 {
                    assert_eq!(v, 0.0, "mean {mean}");
                } else if mean > 1e6 {
                    // C's Gaussian approximation: not an integer, +inf near f32::MAX
                    assert!(v > 0.0, "mean {mean}: {v}");
                } else {
                    assert!(v >= 0.0 && v.fract() == 0.0, "mean {mean}: {v}");
                }
            }
        }
    }

    #[test]
    fn non_finite_means_leave_the_stream_alone() {
        // a NaN pixel must not shift the noise of the pixels after it
        let mut a = PoissonNoise::new(99);
        let mut b = PoissonNoise::new(99);
        let _ = b.poisson(f32::NAN);
        let _ = b.poisson(f32::INFINITY);
        for _ in 0..50 {
            assert_eq!(a.poisson(30.0), b.poisson(30.0));
        }
    }

    #[test]
    fn poisson_moments() {
        for mean in [0.5f32, 5.0, 40.0, 3000.0] {
            let mut noise = PoissonNoise::new(1234);
            let n = 20000;
            let xs: Vec<f64> = (0..n).map(|_| noise.poisson(mean) as f64).collect();
            let m = xs.iter().sum::<f64>() / n as f64;
            let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
            let se = (mean as f64 / n as f64).sqrt();
            assert!((m - mean as f64).abs() < 5.0 * se, "mean {mean}: {m}");
            assert!((v / mean as f64 - 1.0).abs() < 0.1, "variance {mean}: {v}");
            assert!(xs.iter().all(|x| x.fract() == 0.0 && *x >= 0.0));
        }
    }
}
