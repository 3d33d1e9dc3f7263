//! Amorphous scattering (the C suite's `nonBragg`): the structure factor of a material without
//! long-range order as a function of sinθ/λ, interpolated from a `.stol` table, and the
//! background intensity it gives each pixel.
//!
//! Per sample and source, I = sign(F)·F²·P·ω·capture·w, where F = F(sinθ/λ) (electrons), P the
//! Kahn polarization factor, ω the pixel's solid angle (sr), capture the sensor's absorbed
//! fraction and w the source's weight. Summed over samples and divided by their count, times
//! r_e²·fluence·molecules, it is photons per pixel.
//!
//! [`StolCurve`] is C's table: two guard points at each end and a four-point Lagrange
//! interpolation (`polint`) in the interval that holds sinθ/λ. The tensor stages take their
//! values from it in f64 on the host, so every backend gets C's F, and their derivative in
//! sinθ/λ exactly.

use crate::io::stol::{StolTable, StolUnits};
#[cfg(any(test, feature = "stages"))]
use burn::tensor::{backend::Backend, Tensor, TensorData};
pub use single::SingleCubics;
use std::ops::{Add, Mul};

mod single;

/// A `.stol` table as C interpolates it: sinθ/λ (m⁻¹) strictly increasing, with two guard
/// points at each end (at ∓10⁹⁹ and ∓10⁹⁸ m⁻¹) that repeat the first and the last F.
#[derive(Debug, Clone, PartialEq)]
pub struct StolCurve {
    /// sinθ/λ of each point (m⁻¹), guards included.
    pub stol: Vec<f64>,
    /// F at each point (electrons).
    pub f: Vec<f64>,
}

impl StolCurve {
    /// The curve of `table`, its abscissae read in `units`.
    pub fn new(table: &StolTable, units: StolUnits) -> Self {
        let mult = units.to_stol_per_m();
        let (low, high) = (table.f[0], table.f[table.f.len() - 1]);
        let mut stol = vec![-1e99, -1e98];
        stol.extend(table.x.iter().map(|x| x * mult));
        stol.extend([1e98, 1e99]);
        let mut f = vec![low, low];
        f.extend(&table.f);
        f.extend([high, high]);
        Self { stol, f }
    }

    /// Points in the curve, guards included (C's `stols`).
    pub fn len(&self) -> usize {
        self.stol.len()
    }

    /// Never empty: a curve holds its four guards.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// C's `nearest` for sinθ/λ = `s` (m⁻¹): the last point at or below `s`, at least 1.
    pub fn interval(&self, s: f64) -> usize {
        self.stol
            .partition_point(|&x| x <= s)
            .saturating_sub(1)
            .clamp(1, self.len() - 3)
    }

    /// F(s) (electrons) for sinθ/λ = `s` (m⁻¹): C's `polint` through points
    /// `interval(s) − 1 ..= interval(s) + 2`, with C's order of operations.
    pub fn f_at(&self, s: f64) -> f64 {
        let k = self.interval(s) - 1;
        polint(&self.stol[k..k + 4], &self.f[k..k + 4], s)
    }

    /// [`Self::f_at`] with the interval searched from `hint` (C's walk from the previous
    /// sample's interval) and left there: the same interval, as the table increases, found
    /// in a step or two between neighbouring pixels instead of a binary search.
    pub fn f_near(&self, s: f64, hint: &mut usize) -> f64 {
        let n = self.walk(s, hint);
        polint(&self.stol[n - 1..n + 3], &self.f[n - 1..n + 3], s)
    }

    /// C's walk to the interval of `s` from `hint` (left there): [`Self::interval`] on an
    /// increasing table.
    #[inline(always)]
    pub fn walk(&self, s: f64, hint: &mut usize) -> usize {
        let last = self.len() - 3;
        let mut n = (*hint).clamp(1, last);
        while n < last && self.stol[n + 1] <= s {
            n += 1;
        }
        while n > 1 && (self.stol[n] > s || s.is_nan()) {
            n -= 1;
        }
        *hint = n;
        n
    }

    /// F(s) and dF/ds (electrons·m) of the same cubic.
    pub fn f_and_slope(&self, s: f64) -> (f64, f64) {
        let k = self.interval(s) - 1;
        let (xa, ya) = (&self.stol[k..k + 4], &self.f[k..k + 4]);
        let mut slope = 0.0;
        for i in 0..4 {
            let others = (0..4).filter(|&j| j != i);
            let denom: f64 = others.clone().map(|j| xa[i] - xa[j]).product();
            // d/ds Π_{j≠i}(s − x_j) = Σ_{m≠i} Π_{j≠i,m}(s − x_j)
            let d: f64 = others
                .clone()
                .map(|m| others.clone().filter(|&j| j != m).map(|j| s - xa[j]).product::<f64>())
                .sum();
            slope += d * ya[i] / denom;
        }
        (polint(xa, ya, s), slope)
    }
}

/// [`StolCurve`]'s cubics, without division: the same cubic as C's `polint`, which divides
/// term by term, to a few units in the last place. On an evenly spaced table the cubic of an
/// interval between the guards is in powers of t = s − x_n (Horner's rule: three products),
/// well conditioned there because its nodes lie at least a quarter of a spacing apart.
/// Elsewhere (uneven tables, whose points may nearly coincide, and the intervals that reach a
/// guard) C's Lagrange denominators are folded into each point's F: for the interval starting
/// at point n, `w_i = F_i / Π_{j≠i}(x_i − x_j)` over its four points, so
/// F(s) = Σ_i w_i·Π_{j≠i}(s − x_j).
///
/// The interval of s is C's (the last point at or below s), found without a search. On an
/// evenly spaced table (each point within [`Self::EVEN_TOLERANCE`] of a spacing of its even
/// place, as `water.stol`'s 10⁴ points are) s's place on the even grid is its interval or a
/// neighbour, and the two abscissae of that interval's own cubic decide: one cache line read,
/// no index. On any other table s picks one of [`Self::BUCKETS_PER_POINT`]·n equal buckets
/// spanning it: a bucket holding at most one point stores the interval at its lower edge and
/// the next point, so the interval is that one or the next by one comparison; a crowded bucket
/// (two points or more) walks. An interval's four abscissae and weights share one cache line.
/// No state carries from one sample to the next, so the samples of a lane group are
/// independent.
#[derive(Debug, Clone, PartialEq)]
pub struct StolCubics {
    pub curve: StolCurve,
    /// Per interval n (points n − 1 ..= n + 2), its abscissae and weights; entry 0 unused.
    cubics: Vec<IntervalCubic>,
    /// The first and last interval whose cubic is in powers of t (empty when the first is
    /// past the last).
    powers: (usize, usize),
    /// sinθ/λ of the table's first point (m⁻¹), where the buckets and the even grid start.
    lo: f64,
    /// Even grid places per m⁻¹ (one per spacing) on an evenly spaced table, else 0.
    per_spacing: f64,
    /// Buckets per m⁻¹, and the buckets (none on an evenly spaced table).
    per_stol: f64,
    buckets: Vec<Bucket>,
    /// The even table's interior rounded to f32, where it fits, for f32 lanes.
    single: Option<SingleCubics>,
}

/// One interval's cubic: its four points' sinθ/λ `x` (m⁻¹) and either the product form's
/// folded weights `w` (electrons·m³) or the cubic's coefficients in powers of t = s − x[1]
/// (`w[k]`: electrons·m^k), as [`StolCubics`] chooses for the interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(64))]
struct IntervalCubic {
    x: [f64; 4],
    w: [f64; 4],
}

impl IntervalCubic {
    /// `w_i = F_i / Π_{j≠i}(x_i − x_j)`: F(s) = Σ_i w_i·Π_{j≠i}(s − x_j).
    fn folded_weights(xa: &[f64], ya: &[f64]) -> [f64; 4] {
        std::array::from_fn(|i| {
            let denom: f64 = (0..4).filter(|&j| j != i).map(|j| xa[i] - xa[j]).product();
            ya[i] / denom
        })
    }

    /// `c` with F(s) = c0 + t·(c1 + t·(c2 + t·c3)), t = s − x1: c0 = F1, and c1 + c2·t + c3·t²
    /// the quadratic through the other three points' (F_i − F1)/(x_i − x1), by Newton's
    /// divided differences.
    fn powers_of_t(xa: &[f64], ya: &[f64]) -> [f64; 4] {
        let (a, b, c) = (xa[0] - xa[1], xa[2] - xa[1], xa[3] - xa[1]);
        let g = |i: usize, e: f64| (ya[i] - ya[1]) / e;
        let (ga, gb, gc) = (g(0, a), g(2, b), g(3, c));
        let ab = (gb - ga) / (b - a);
        let abc = ((gc - gb) / (c - b) - ab) / (c - a);
        [ya[1], ga - ab * a + abc * a * b, ab - abc * (a + b), abc]
    }

    /// F(s) (electrons) of a cubic in powers of t = s − x[1] (m⁻¹).
    #[inline(always)]
    fn horner(&self, s: f64) -> f64 {
        horner(self.w, s - self.x[1])
    }
}

/// w0 + t·(w1 + t·(w2 + t·w3)), by Horner's rule (three products), in any precision.
#[inline(always)]
pub(crate) fn horner<T: Copy + Add<Output = T> + Mul<Output = T>>(w: [T; 4], t: T) -> T {
    ((w[3] * t + w[2]) * t + w[1]) * t + w[0]
}

/// On an evenly spaced table, where sinθ/λ `s` lies against the two points of its grid
/// place's interval g, at `below` (point g) and `above` (point g + 1): (below point g, at or
/// above point g + 1). Its interval is g − 1, g + 1 or g. NaN counts as below, so that it ends
/// at C's first interval.
#[inline(always)]
pub(crate) fn beside_place<T: PartialOrd>(s: T, below: T, above: T) -> (bool, bool) {
    // `!(s >= below)` is true for NaN too
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let back = !(s >= below);
    (back, s >= above)
}

/// One bucket of the interval index: the interval at its lower edge, the sinθ/λ of the next
/// point (m⁻¹), and whether more than one point falls inside it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    next_point: f64,
    first: u32,
    crowded: bool,
}

impl StolCubics {
    /// Buckets of the interval index per point of the table.
    pub const BUCKETS_PER_POINT: usize = 4;

    pub fn new(curve: &StolCurve) -> Self {
        let last = curve.len() - 3;
        let per_spacing = Self::even_spacing(curve);
        let even = per_spacing > 0.0;
        // in powers of t: the intervals of an evenly spaced table whose four points are the
        // table's own (interval n spans points n − 1 ..= n + 2; the guards are 0, 1, last + 1
        // and last + 2)
        let powers = match even {
            true => (3, last.saturating_sub(2)),
            false => (1, 0),
        };
        let cubics: Vec<IntervalCubic> = (0..=last)
            .map(|n| match n {
                0 => IntervalCubic::default(),
                n => {
                    let (xa, ya) = (&curve.stol[n - 1..n + 3], &curve.f[n - 1..n + 3]);
                    let w = match (powers.0..=powers.1).contains(&n) {
                        true => IntervalCubic::powers_of_t(xa, ya),
                        false => IntervalCubic::folded_weights(xa, ya),
                    };
                    IntervalCubic {
                        x: [xa[0], xa[1], xa[2], xa[3]],
                        w,
                    }
                }
            })
            .collect();
        // the table's own points, between the guards
        let (lo, hi) = (curve.stol[2], curve.stol[last]);
        let count = match even {
            true => 0,
            false => Self::BUCKETS_PER_POINT * curve.len(),
        };
        let per_stol = match hi > lo {
            true => count as f64 / (hi - lo),
            false => 0.0,
        };
        let single = SingleCubics::new(&curve.stol, |n| cubics[n].w, powers, lo, per_spacing);
        Self {
            curve: curve.clone(),
            cubics,
            powers,
            lo,
            per_spacing,
            per_stol,
            buckets: Self::buckets(curve, lo, hi, count),
            single,
        }
    }

    /// How far (in spacings) a point of an evenly spaced table may lie from its place on the
    /// even grid: below ½, so that s's place is its interval or a neighbour.
    pub const EVEN_TOLERANCE: f64 = 0.375;

    /// Grid places per m⁻¹ when the table's own points (three or more) lie within
    /// [`Self::EVEN_TOLERANCE`] of an even grid from the first to the last, as
    /// [`Self::interval`] computes the place; else 0.
    fn even_spacing(curve: &StolCurve) -> f64 {
        let last = curve.len() - 3;
        if last < 4 {
            return 0.0;
        }
        let (lo, hi) = (curve.stol[2], curve.stol[last]);
        let per = (last - 2) as f64 / (hi - lo);
        let even = (2..=last).all(|i| ((curve.stol[i] - lo) * per - (i - 2) as f64).abs() <= Self::EVEN_TOLERANCE);
        match even && per.is_finite() {
            true => per,
            false => 0.0,
        }
    }

    /// `count` equal buckets over [lo, hi] (m⁻¹), the last open above, each widened by a
    /// margin beyond the rounding of `(s − lo)·per_stol`. The edges increase: one walk up the
    /// table for the lower edges and one for the upper, not a search per bucket.
    fn buckets(curve: &StolCurve, lo: f64, hi: f64, count: usize) -> Vec<Bucket> {
        let width = (hi - lo) / count as f64;
        let margin = 1e-6 * width + 1e-12 * (lo.abs() + hi.abs());
        let (mut below, mut above) = (1, 1);
        (0..count)
            .map(|k| {
                let lower = lo + k as f64 * width - margin;
                let upper = match k + 1 == count {
                    true => f64::INFINITY,
                    false => lo + (k + 1) as f64 * width + margin,
                };
                let first = curve.walk(lower, &mut below);
                let points_inside = curve.walk(upper, &mut above) - first;
                Bucket {
                    next_point: curve.stol[first + 1],
                    first: first as u32,
                    crowded: points_inside > 1 || width.is_nan() || width <= 0.0,
                }
            })
            .collect()
    }

    /// C's interval for sinθ/λ = `s` (m⁻¹): [`StolCurve::interval`], from the bucket of `s`
    /// (NaN falls to the first interval, as C's search leaves it).
    #[inline(always)]
    pub fn interval(&self, s: f64) -> usize {
        let last = self.cubics.len() - 1;
        if self.per_spacing > 0.0 {
            // s's place on the even grid (saturating: below the table or NaN 0, above it the
            // last): its interval n or n ± 1 (the tolerance), which the place's own abscissae
            // x[1] = point g and x[2] = point g + 1 tell apart; NaN ends at C's first interval
            let g = 2 + self.grid_place(s, last);
            let x = &self.cubics[g].x;
            let (back, up) = beside_place(s, x[1], x[2]);
            return (g - usize::from(back) + usize::from(up)).min(last);
        }
        // saturating: below the table (or NaN) bucket 0, above it the last
        let bucket = &self.buckets[(((s - self.lo) * self.per_stol) as usize).min(self.buckets.len() - 1)];
        let mut n = bucket.first as usize;
        match bucket.crowded {
            false => (n + usize::from(bucket.next_point <= s)).min(self.cubics.len() - 1),
            true => self.curve.walk(s, &mut n),
        }
    }

    /// s's place on the even grid, counted from the table's first point: ⌊(s − lo)·per⌋
    /// saturating at 0 (below the table, and NaN) and at `last` − 2. The clamp is in floating
    /// point, so the conversion needs no range fix-up of its own.
    #[inline(always)]
    fn grid_place(&self, s: f64, last: usize) -> usize {
        let top = (last - 2) as f64;
        // f64::max returns 0 for NaN
        ((s - self.lo) * self.per_spacing).max(0.0).min(top) as u32 as usize
    }

    /// Whether interval `n`'s cubic is in powers of t.
    #[inline(always)]
    fn in_powers(&self, n: usize) -> bool {
        n >= self.powers.0 && n <= self.powers.1
    }

    /// F(s) (electrons) for sinθ/λ = `s` (m⁻¹) in interval `n` ([`Self::interval`]).
    #[inline(always)]
    pub fn f_in(&self, s: f64, n: usize) -> f64 {
        if self.in_powers(n) {
            return self.cubics[n].horner(s);
        }
        let IntervalCubic { x, w } = &self.cubics[n];
        let d = [s - x[0], s - x[1], s - x[2], s - x[3]];
        let (d01, d23) = (d[0] * d[1], d[2] * d[3]);
        w[0] * d[1] * d23 + w[1] * d[0] * d23 + w[2] * d01 * d[3] + w[3] * d01 * d[2]
    }

    /// F (electrons) at each sinθ/λ of `s` (m⁻¹): the intervals first, then the cubics
    /// across the lanes.
    #[inline(always)]
    pub fn f_lanes<const L: usize>(&self, s: &[f64; L]) -> [f64; L] {
        if self.per_spacing > 0.0 {
            return self.even_f_lanes(s);
        }
        // loops rather than `array::from_fn`, whose closures the compiler leaves out of line
        let mut n = [0usize; L];
        for l in 0..L {
            n[l] = self.interval(s[l]);
        }
        let mut f = [0.0; L];
        for l in 0..L {
            f[l] = self.f_in(s[l], n[l]);
        }
        f
    }

    /// [`Self::f_lanes`] on an evenly spaced table, each step across the lanes before the
    /// next (so that they go into vector registers and only the table's reads are lane by
    /// lane): s's place on the grid, the place's two points, the interval they tell (as
    /// [`Self::interval`]), then the cubics, by Horner's rule where every lane's is in powers
    /// of t (one branch for the lanes).
    #[inline(always)]
    fn even_f_lanes<const L: usize>(&self, s: &[f64; L]) -> [f64; L] {
        let last = self.cubics.len() - 1;
        let mut place = [0usize; L];
        for l in 0..L {
            // `grid_place` is at most last − 2 already: the `min` spares the reads below their
            // bounds checks
            place[l] = self.grid_place(s[l], last).min(last - 2) + 2;
        }
        let (mut below, mut above) = ([0.0; L], [0.0; L]);
        for l in 0..L {
            let x = &self.cubics[place[l]].x;
            (below[l], above[l]) = (x[1], x[2]);
        }
        let mut n = [0usize; L];
        for l in 0..L {
            let (back, up) = beside_place(s[l], below[l], above[l]);
            n[l] = place[l] - usize::from(back) + usize::from(up);
        }
        let (first, end) = (
            n.iter().fold(usize::MAX, |m, &n| m.min(n)),
            n.iter().fold(0, |m, &n| m.max(n)),
        );
        let mut f = [0.0; L];
        if self.in_powers(first) && self.in_powers(end) {
            let (mut origin, mut w) = ([0.0; L], [[0.0; L]; 4]);
            for l in 0..L {
                // n ≤ last here (in powers of t): the `min` spares the read its bounds check
                let c = &self.cubics[n[l].min(last)];
                origin[l] = c.x[1];
                (w[0][l], w[1][l], w[2][l], w[3][l]) = (c.w[0], c.w[1], c.w[2], c.w[3]);
            }
            for l in 0..L {
                f[l] = horner([w[0][l], w[1][l], w[2][l], w[3][l]], s[l] - origin[l]);
            }
            return f;
        }
        for l in 0..L {
            f[l] = self.f_in(s[l], n[l].min(last));
        }
        f
    }

    /// [`Self::f_lanes`] for sinθ/λ in f32 (m⁻¹), in f32 where the table allows
    /// ([`SingleCubics`]: an evenly spaced table whose interior is in f32's range), else
    /// through f64.
    #[inline(always)]
    pub fn f_lanes_f32<const L: usize>(&self, s: &[f32; L]) -> [f32; L] {
        let Some(single) = &self.single else {
            return self.f_lanes(&s.map(f64::from)).map(|f| f as f32);
        };
        match single.f_lanes(s) {
            Ok(f) => f,
            Err(n) => {
                let mut f = [0.0f32; L];
                for l in 0..L {
                    f[l] = self.f_in(f64::from(s[l]), n[l]) as f32;
                }
                f
            }
        }
    }
}

/// A lane precision [`StolCubics`] evaluates F in: f64 with the table's own values, f32 with
/// the f32 copy of an evenly spaced table's interior ([`StolCubics::f_lanes_f32`]).
pub trait StolLanes: Copy {
    /// F (electrons) at each sinθ/λ of `s` (m⁻¹).
    fn f_lanes<const L: usize>(table: &StolCubics, s: &[Self; L]) -> [Self; L];
}

impl StolLanes for f64 {
    #[inline(always)]
    fn f_lanes<const L: usize>(table: &StolCubics, s: &[f64; L]) -> [f64; L] {
        table.f_lanes(s)
    }
}

impl StolLanes for f32 {
    #[inline(always)]
    fn f_lanes<const L: usize>(table: &StolCubics, s: &[f32; L]) -> [f32; L] {
        table.f_lanes_f32(s)
    }
}

/// C's `polint`: the cubic through four points (xa, ya), at x, term by term as C writes it.
pub fn polint(xa: &[f64], ya: &[f64], x: f64) -> f64 {
    let x0 = (x - xa[1]) * (x - xa[2]) * (x - xa[3]) * ya[0] / ((xa[0] - xa[1]) * (xa[0] - xa[2]) * (xa[0] - xa[3]));
    let x1 = (x - xa[0]) * (x - xa[2]) * (x - xa[3]) * ya[1] / ((xa[1] - xa[0]) * (xa[1] - xa[2]) * (xa[1] - xa[3]));
    let x2 = (x - xa[0]) * (x - xa[1]) * (x - xa[3]) * ya[2] / ((xa[2] - xa[0]) * (xa[2] - xa[1]) * (xa[2] - xa[3]));
    let x3 = (x - xa[0]) * (x - xa[1]) * (x - xa[2]) * ya[3] / ((xa[3] - xa[0]) * (xa[3] - xa[1]) * (xa[3] - xa[2]));
    x0 + x1 + x2 + x3
}

/// F(sinθ/λ) `[R, S]` (electrons) from sinθ/λ `[R, S]` (m⁻¹): C's interpolated value, with
/// ∂F/∂(sinθ/λ) the cubic's slope. The values come from the host in f64 (the table's guard
/// points are out of f32's range), so F is C's on every backend.
#[cfg(any(test, feature = "stages"))]
pub fn structure_factor<B: Backend>(stol: Tensor<B, 2>, curve: &StolCurve) -> Tensor<B, 2> {
    let shape = stol.dims();
    let device = stol.device();
    let values: Vec<f64> = stol.clone().into_data().convert::<f64>().to_vec().unwrap_or_default();
    let (f, slope): (Vec<f64>, Vec<f64>) = values.iter().map(|&s| curve.f_and_slope(s)).unzip();
    let host = |v: Vec<f64>| Tensor::<B, 2>::from_data(TensorData::new(v, shape), &device);
    // value F exactly (the difference is 0), gradient dF/ds
    host(f) + (stol.clone() - stol.detach()) * host(slope)
}

/// Background intensity per sample `[R, 1]` (electrons²·sr): Σ_s sign(F)·F²·P·w_s·ω·capture.
///
/// `f` and `polar` `[R, S]`, `omega` and `capture` `[R, 1]`, `weights` `[1, S]`.
#[cfg(any(test, feature = "stages"))]
pub fn amorphous_intensity<B: Backend>(
    f: Tensor<B, 2>,
    polar: Tensor<B, 2>,
    omega: Tensor<B, 2>,
    capture: Tensor<B, 2>,
    weights: Tensor<B, 2>,
) -> Tensor<B, 2> {
    let signed_square = f.clone().abs() * f;
    (signed_square * polar * weights).sum_dim(1) * omega * capture
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::testing::{dev, host, Ad, B};

    pub(super) fn curve(x: &[f64], f: &[f64]) -> StolCurve {
        StolCurve::new(
            &StolTable {
                x: x.to_vec(),
                f: f.to_vec(),
            },
            StolUnits::Stol,
        )
    }

    /// C's search: walk up while s > x[n], then down while s < x[n] (and n ≥ 2), from any start.
    fn c_nearest(c: &StolCurve, s: f64, mut n: usize) -> usize {
        while s > c.stol[n] && n <= c.len() {
            n += 1;
        }
        while s < c.stol[n] && n >= 2 {
            n -= 1;
        }
        n
    }

    #[test]
    fn interval_is_cs_search_from_any_start() {
        let c = curve(&[0.01, 0.1, 0.2, 0.35, 0.5], &[2.0, 1.0, 3.0, 0.5, 0.2]);
        for s in [0.0, 0.005e10, 0.01e10, 0.05e10, 0.1e10, 0.3e10, 0.5e10, 0.7e10, 3e10] {
            for start in 1..c.len() - 2 {
                assert_eq!(c.interval(s), c_nearest(&c, s, start), "s = {s}, start = {start}");
            }
        }
    }

    #[test]
    fn the_walk_from_a_hint_finds_the_binary_searchs_value() {
        let xs: Vec<f64> = (0..200).map(|i| (i as f64 * 0.013).powf(1.3)).collect();
        let c = curve(&xs, &xs.iter().map(|x| (7.0 * x).sin()).collect::<Vec<_>>());
        let mut hint = 1;
        let mut s = crate::diff::testing::uniform(3000, -0.1e10, 2.0e10, 9);
        s.extend(xs.iter().map(|x| x * 1e10));
        s.extend([f64::NAN, 0.0, -0.0, 1e99]);
        for &v in &s {
            let (near, at) = (c.f_near(v, &mut hint), c.f_at(v));
            assert!(
                near.to_bits() == at.to_bits() || near.is_nan() && at.is_nan(),
                "{v}: {near} vs {at}"
            );
        }
    }

    /// The index finds C's interval for any sinθ/λ, and the lanes ([`StolCubics::f_lanes`])
    /// each lane's own interval and cubic: in and between the points, off both ends, ±0, ±∞
    /// and NaN; by the even grid on evenly spaced tables (written to six digits as
    /// `water.stol` is, or each point up to 0.35 of a spacing off its place), by buckets on
    /// uneven tables (one point 0.4 off) and on tables of one, two and three points.
    #[test]
    fn the_index_finds_cs_interval() {
        let uneven: Vec<f64> = (0..300).map(|i| (i as f64 * 0.011).powf(2.2)).collect();
        let six_digits: Vec<f64> = (0..2000)
            .map(|i| format!("{:.5e}", i as f64 * 5.0005e-5).parse().unwrap())
            .collect();
        let mut jitter = crate::diff::testing::uniform(400, -0.35, 0.35, 5);
        (jitter[0], jitter[399]) = (0.0, 0.0);
        let jittered: Vec<f64> = jitter
            .iter()
            .enumerate()
            .map(|(i, j)| 0.01 + (i as f64 + j) * 2e-4)
            .collect();
        let mut one_off: Vec<f64> = (0..50).map(|i| i as f64 * 0.01).collect();
        one_off[20] += 0.004;
        let tables = [
            (six_digits, true),
            (jittered, true),
            (one_off, false),
            (uneven, false),
            (vec![0.2], false),
            (vec![0.1, 0.4], false),
            (vec![0.1, 0.2, 0.3], true),
            (vec![0.0, 1e-9, 1e-8, 0.5, 0.50000001], false),
        ];
        for (xs, even) in tables {
            let c = curve(&xs, &xs.iter().map(|x| (3.0 * x).cos()).collect::<Vec<_>>());
            let cubics = StolCubics::new(&c);
            assert_eq!(cubics.per_spacing > 0.0, even, "{} points", xs.len());
            assert_eq!(cubics.buckets.is_empty(), even);
            let mut s = crate::diff::testing::uniform(5000, -0.5e10, 8.0e10, 3);
            s.extend(xs.iter().flat_map(|x| {
                let v = x * 1e10;
                [v, v.next_up(), v.next_down()]
            }));
            s.extend([f64::NAN, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1e99, -1e99, 2e99]);
            for &v in &s {
                assert_eq!(cubics.interval(v), c.interval(v), "s = {v}, table of {}", xs.len());
            }
            // and the lanes take each lane's own interval and cubic, in any mix of lanes
            for group in s.chunks_exact(8) {
                let lanes: [f64; 8] = group.try_into().unwrap();
                for (&v, f) in lanes.iter().zip(cubics.f_lanes(&lanes)) {
                    let one = cubics.f_in(v, cubics.interval(v));
                    assert!(
                        f.to_bits() == one.to_bits() || f.is_nan() && one.is_nan(),
                        "s = {v}, table of {}: lanes {f} vs {one}",
                        xs.len()
                    );
                }
            }
        }
    }

    #[test]
    fn interpolation_is_exact_at_the_points_and_for_cubics() {
        let xs = [0.0, 0.05, 0.12, 0.2, 0.31, 0.4];
        let cubic = |x: f64| 1.0 - 2.0 * x + 3.0 * x * x - 4.0 * x * x * x;
        let c = curve(&xs, &xs.map(cubic));
        for &x in &xs {
            assert!((c.f_at(x * 1e10) - cubic(x)).abs() < 1e-12);
        }
        // inside the table, away from the guards, the four-point cubic reproduces a cubic
        for s in [0.06, 0.1, 0.15, 0.25, 0.3] {
            assert!((c.f_at(s * 1e10) - cubic(s)).abs() < 1e-9, "{s}");
        }
    }

    #[test]
    fn slope_is_the_derivative_of_the_value() {
        let c = curve(&[0.0, 0.1, 0.2, 0.3, 0.45], &[2.5, 2.0, 1.2, 1.9, 0.4]);
        // between the points: the cubics of neighbouring intervals meet at a point with
        // different slopes
        for s in [0.01e10, 0.03e10, 0.17e10, 0.29e10, 0.44e10, 0.6e10] {
            let h = 1e-7 * 1e10;
            let numeric = (c.f_at(s + h) - c.f_at(s - h)) / (2.0 * h);
            let (_, slope) = c.f_and_slope(s);
            assert!(
                (slope - numeric).abs() <= 1e-6 * (1.0 + numeric.abs()) / 1e10,
                "{s}: {slope} vs {numeric}"
            );
        }
    }

    #[test]
    fn tensor_stage_gives_cs_values_and_slopes() {
        let c = curve(&[0.0, 0.1, 0.2, 0.3, 0.45], &[2.5, 2.0, -1.2, 1.9, 0.4]);
        let s = [0.01e10, 0.13e10, 0.22e10, 0.41e10];
        let x = Tensor::<Ad, 2>::from_data(TensorData::new(s.to_vec(), [2, 2]), &dev()).require_grad();
        let f = structure_factor(x.clone(), &c);
        let values = host(f.clone().inner());
        let grads = f.sum().backward();
        let slopes = host(x.grad(&grads).unwrap());
        for i in 0..4 {
            assert_eq!(values[i], c.f_at(s[i]));
            assert_eq!(slopes[i], c.f_and_slope(s[i]).1);
        }
        // and without autodiff
        let plain = structure_factor(
            Tensor::<B, 2>::from_data(TensorData::new(s.to_vec(), [2, 2]), &dev()),
            &c,
        );
        assert_eq!(host(plain), values);
    }
}
