//! [`SingleCubics`]: an evenly spaced `.stol` table's interior in f32, so that the f32 lanes
//! look F up and evaluate its cubic without widening to f64.

use super::{beside_place, horner};

/// The cubics in powers of t of an evenly spaced table (`StolCubics`) rounded to f32, with
/// the even grid. Built only where the table fits f32 with room to spare: its points lie
/// within 0.01 of a spacing of their f64 values, s's place on the grid is computed to 0.01 of
/// a spacing, and every coefficient is a normal f32 or 0; the intervals that reach a guard
/// point are left to the f64 table. F(s) is then the f64 cubic's to f32's rounding, except
/// that an s within an f32 unit of a point may take the neighbouring interval's cubic, which
/// passes through the same point.
#[derive(Debug, Clone, PartialEq)]
pub struct SingleCubics {
    /// Per interval n (points n − 1 ..= n + 2), the cubic in f32; zero in the intervals not
    /// in powers of t, except x1 and x2 from point 2 on (the grid's lookup).
    cubics: Vec<SingleCubic>,
    /// The first and last interval in powers of t.
    powers: (usize, usize),
    /// sinθ/λ of the table's first point (m⁻¹).
    lo: f32,
    /// Even grid places per m⁻¹.
    per_spacing: f32,
    /// The last grid place.
    top: f32,
}

/// One interval's cubic in f32: sinθ/λ of its points n and n + 1 (m⁻¹) and its coefficients
/// in powers of t = s − x1 (`w[k]`: electrons·m^k).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(32))]
struct SingleCubic {
    x1: f32,
    x2: f32,
    w: [f32; 4],
}

impl SingleCubics {
    /// The f32 copy of an evenly spaced table with points `stol` (m⁻¹, guards included, the
    /// first of the table at `lo`, `per_spacing` places per m⁻¹) whose intervals `powers` have
    /// the cubics `coefficients(n)` in powers of t = s − stol[n] (electrons·m^k); `None` where
    /// the table does not fit f32 as [`SingleCubics`] requires.
    pub fn new(
        stol: &[f64],
        coefficients: impl Fn(usize) -> [f64; 4],
        powers: (usize, usize),
        lo: f64,
        per_spacing: f64,
    ) -> Option<Self> {
        let last = stol.len() - 3;
        let eps = f64::from(f32::EPSILON);
        let reach = stol[last].abs().max(lo.abs());
        let fits = per_spacing > 0.0
            && powers.0 <= powers.1
            && (last - 2) as f64 * 4.0 * eps <= 0.01
            && reach * per_spacing * eps <= 0.01
            && normal(per_spacing)
            && (lo == 0.0 || normal(lo));
        if !fits {
            return None;
        }
        let single = (0..=last)
            .map(|n| {
                let mut c = SingleCubic::default();
                if n >= 2 {
                    (c.x1, c.x2) = (stol[n] as f32, stol[n + 1] as f32);
                }
                if (powers.0..=powers.1).contains(&n) {
                    c.w = coefficients(n).map(|w| w as f32);
                }
                c
            })
            .collect::<Vec<_>>();
        let coefficients_fit = single[powers.0..=powers.1]
            .iter()
            .all(|c| c.w.iter().all(|&w| w == 0.0 || w.is_normal()));
        coefficients_fit.then(|| SingleCubics {
            cubics: single,
            powers,
            lo: lo as f32,
            per_spacing: per_spacing as f32,
            top: (last - 2) as f32,
        })
    }

    /// F (electrons) at each sinθ/λ of `s` (m⁻¹) where every lane's interval is in powers of
    /// t; else each lane's interval (to be evaluated in f64).
    ///
    /// Each step runs across the lanes before the next, so that the places, the intervals
    /// and the cubics go into vector registers and only the table's reads are lane by lane:
    /// s's place on the grid, the place's two points (point g and g + 1), the interval they
    /// tell (as `StolCubics::interval` tells it), then the cubics.
    #[inline(always)]
    pub fn f_lanes<const L: usize>(&self, s: &[f32; L]) -> Result<[f32; L], [usize; L]> {
        // loops rather than `array::from_fn`, whose closures the compiler leaves out of line
        let last = self.cubics.len() - 1;
        let mut place = [0u32; L];
        for l in 0..L {
            // f32::max returns 0 for NaN; the clamp keeps the conversion in range
            place[l] = ((s[l] - self.lo) * self.per_spacing).max(0.0).min(self.top) as u32;
        }
        let (mut below, mut above) = ([0.0f32; L], [0.0f32; L]);
        for l in 0..L {
            // the place is at most last − 2 already: the `min` spares the read its bounds check
            let c = &self.cubics[(place[l] as usize).min(last - 2) + 2];
            (below[l], above[l]) = (c.x1, c.x2);
        }
        let mut n = [0u32; L];
        for l in 0..L {
            let (back, up) = beside_place(s[l], below[l], above[l]);
            n[l] = place[l] + 2 - u32::from(back) + u32::from(up);
        }
        let (first, end) = (
            n.iter().fold(u32::MAX, |m, &n| m.min(n)),
            n.iter().fold(0, |m, &n| m.max(n)),
        );
        let in_powers = |n: u32| (self.powers.0..=self.powers.1).contains(&(n as usize));
        if !in_powers(first) || !in_powers(end) {
            return Err(n.map(|n| (n as usize).min(last)));
        }
        let (mut origin, mut w) = ([0.0f32; L], [[0.0f32; L]; 4]);
        for l in 0..L {
            // n ≤ last here (in powers of t): the `min` spares the read its bounds check
            let c = &self.cubics[(n[l] as usize).min(last)];
            origin[l] = c.x1;
            (w[0][l], w[1][l], w[2][l], w[3][l]) = (c.w[0], c.w[1], c.w[2], c.w[3]);
        }
        let mut f = [0.0f32; L];
        for l in 0..L {
            f[l] = horner([w[0][l], w[1][l], w[2][l], w[3][l]], s[l] - origin[l]);
        }
        Ok(f)
    }
}

/// Whether `v` rounds to a normal f32 (finite, not subnormal, not 0).
fn normal(v: f64) -> bool {
    (v as f32).is_normal()
}

#[cfg(test)]
mod tests {
    use super::super::tests::curve;
    use super::super::StolCubics;

    /// On `water.stol`, its layout with a livelier F (evenly spaced, six digits) and a
    /// jittered even table, F in f32 lanes equals the f64 cubic (C's `polint`) at the same
    /// sinθ/λ to f32's rounding of F plus the slope times an f32 unit of s (the neighbouring
    /// interval's cubic near a point): everywhere, at the points, off both ends, ±∞ and NaN.
    #[test]
    fn f32_lanes_are_the_f64_cubic_to_f32_rounding() {
        let six_digits: Vec<f64> = (0..2000)
            .map(|i| format!("{:.5e}", i as f64 * 5.0005e-5).parse().unwrap())
            .collect();
        let jitter = crate::diff::testing::uniform(400, -0.35, 0.35, 5);
        let jittered: Vec<f64> = jitter
            .iter()
            .enumerate()
            .map(|(i, j)| 0.01 + (i as f64 + if i == 0 || i == 399 { 0.0 } else { *j }) * 2e-4)
            .collect();
        let water = crate::io::stol::read_stol(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/stol/water.stol"),
        )
        .unwrap();
        let synthetic = [six_digits, jittered].map(|xs| {
            let fs: Vec<f64> = xs.iter().map(|x| 40.0 * (9.0 * x).cos() - 3.0).collect();
            (xs, fs)
        });
        for (xs, fs) in synthetic.into_iter().chain([(water.x, water.f)]) {
            let c = curve(&xs, &fs);
            let cubics = StolCubics::new(&c);
            assert!(cubics.single.is_some(), "{} points: no f32 copy", xs.len());
            let peak = fs.iter().fold(0.0f64, |m, f| m.max(f.abs()));
            let mut s: Vec<f32> = crate::diff::testing::uniform(20000, -0.5e10, 1.2e10, 3)
                .iter()
                .map(|&v| v as f32)
                .collect();
            s.extend(xs.iter().flat_map(|x| {
                let v = (x * 1e10) as f32;
                [v, v.next_up(), v.next_down()]
            }));
            s.extend([
                f32::NAN,
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::MAX,
                f32::MIN,
            ]);
            for group in s.chunks_exact(8) {
                let lanes: [f32; 8] = group.try_into().unwrap();
                let f = cubics.f_lanes_f32(&lanes);
                for (&v, &f) in lanes.iter().zip(&f) {
                    let (exact, slope) = c.f_and_slope(f64::from(v));
                    let unit = f64::from(v.abs().next_up() - v.abs()).min(1e30);
                    let tolerance = 4.0 * f64::from(f32::EPSILON) * peak + 2.0 * slope.abs() * unit;
                    assert!(
                        (f64::from(f) - exact).abs() <= tolerance || exact.is_nan() && f.is_nan(),
                        "s = {v}: {f} vs {exact} ({} points)",
                        xs.len()
                    );
                }
            }
        }
    }

    /// Tables f32 cannot hold to a hundredth of a spacing keep to f64: too many points, or
    /// points too close for their size.
    #[test]
    fn tables_beyond_f32_keep_to_f64() {
        let long: Vec<f64> = (0..30000).map(|i| i as f64 * 1e-5).collect();
        let tight: Vec<f64> = (0..100).map(|i| 5.0 + i as f64 * 1e-6).collect();
        for xs in [long, tight] {
            let c = curve(&xs, &xs.iter().map(|x| x.sin()).collect::<Vec<_>>());
            let cubics = StolCubics::new(&c);
            assert!(
                cubics.per_spacing > 0.0 && cubics.single.is_none(),
                "{} points",
                xs.len()
            );
            let s = [c.stol[7] as f32; 8];
            assert_eq!(
                cubics.f_lanes_f32(&s),
                cubics.f_lanes(&s.map(f64::from)).map(|f| f as f32)
            );
        }
    }
}
