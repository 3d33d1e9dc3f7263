//! Poisson noise drawn exactly as the C program draws it (Numerical Recipes `poidev` and
//! `gaussdev` on `ran1`, with C's single-precision intermediates), so the same `-seed` gives
//! the same noise image.

use crate::rng::Ran1;

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

/// A noise stream: C's generator plus the spare Gaussian deviate it keeps between calls.
#[derive(Debug, Clone)]
pub struct PoissonNoise {
    rng: Ran1,
    spare: Option<f32>,
}

impl PoissonNoise {
    /// A stream for `-seed n` (C stores −n).
    pub fn new(seed: i64) -> Self {
        Self {
            rng: Ran1::new(-seed),
            spare: None,
        }
    }

    /// Normal deviate (polar Box–Muller), as C's `gaussdev`.
    pub fn gaussian(&mut self) -> f32 {
        if let Some(g) = self.spare.take() {
            return g;
        }
        loop {
            let v1 = (2.0 * self.rng.next_f32() as f64 - 1.0) as f32;
            let v2 = (2.0 * self.rng.next_f32() as f64 - 1.0) as f32;
            let rsq = v1 * v1 + v2 * v2;
            if rsq < 1.0 && rsq != 0.0 {
                let fac = (-2.0 * (rsq as f64).ln() / rsq as f64).sqrt() as f32;
                self.spare = Some(v1 * fac);
                return v2 * fac;
            }
        }
    }

    /// Poisson deviate with mean `xm`, as C's `poidev`.
    pub fn poisson(&mut self, xm: f32) -> f32 {
        if xm > 1.0e6 {
            return (xm as f64 + (xm as f64).sqrt() * self.gaussian() as f64) as f32;
        }
        if xm < 12.0 {
            let g = (-(xm as f64)).exp() as f32;
            let mut em = -1.0f32;
            let mut t = 1.0f32;
            loop {
                em += 1.0;
                t *= self.rng.next_f32();
                if t <= g {
                    return em;
                }
            }
        }
        let sq = (2.0 * xm as f64).sqrt() as f32;
        let alxm = (xm as f64).ln() as f32;
        let g = xm * alxm - gammln((xm as f64 + 1.0) as f32);
        loop {
            let (mut em, mut y);
            loop {
                y = (std::f64::consts::PI * self.rng.next_f32() as f64).tan() as f32;
                em = sq * y + xm;
                if em >= 0.0 {
                    break;
                }
            }
            em = em.floor();
            let e = em * alxm - gammln((em as f64 + 1.0) as f32) - g;
            let t = (0.9 * (1.0 + (y * y) as f64) * (e as f64).exp()) as f32;
            if self.rng.next_f32() <= t {
                return em;
            }
        }
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
