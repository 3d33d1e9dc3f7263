//! C's per-pixel loop in native Rust: layers × sub-pixels × sources × orientation rows, in
//! C's order, for one pixel (physics reference §7).
//!
//! Each helper carries the name of the cube kernel's helper it mirrors (`kernel::stages`) and
//! of the tensor stage beside it (`physics/`): [`sample_position`], [`curved_position`],
//! [`solid_angle`], [`capture_fraction`], [`stol`], [`kahn_factor`], [`miller_index`],
//! [`lattice_factor`], [`nearest`], [`tricubic`].

use super::inputs::{Grid, Inputs, Params, Row, Source, V3};
use super::real::{is_whole, Real};
use crate::base::series::{
    CHEBYSHEV_MAX_N, GAUSS_WIDTH, ROUND_SCALE, SINC3_SERIES_BELOW, SINC3_TAYLOR, SINCG_EPS, TOPHAT_R2,
};
use crate::kernel::job::Switches;

#[inline(always)]
pub(super) fn dot<F: Real>(a: V3<F>, b: V3<F>) -> F {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline(always)]
pub(super) fn cross<F: Real>(a: V3<F>, b: V3<F>) -> V3<F> {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[inline(always)]
pub(super) fn scaled<F: Real>(a: V3<F>, k: F) -> V3<F> {
    [a[0] * k, a[1] * k, a[2] * k]
}

#[inline(always)]
pub(super) fn sum3<F: Real>(a: V3<F>, b: V3<F>) -> V3<F> {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// P = Fdet·f + Sdet·s + Odet·o + pix0 (m), from the detector coordinates (m).
#[inline(always)]
pub fn sample_position<F: Real>(p: &Params<F>, fdet: F, sdet: F, odet: F) -> V3<F> {
    // written out, not `array::map`, so that it inlines into the lanes' vector clones
    [
        sample_position_axis(p, 0, fdet, sdet, odet),
        sample_position_axis(p, 1, fdet, sdet, odet),
        sample_position_axis(p, 2, fdet, sdet, odet),
    ]
}

/// Axis `j` of [`sample_position`] (m): for lanes that keep positions by axis.
#[inline(always)]
pub fn sample_position_axis<F: Real>(p: &Params<F>, j: usize, fdet: F, sdet: F, odet: F) -> F {
    ((p.fdet[j] * fdet + p.sdet[j] * sdet) + p.odet[j] * odet) + p.pix0[j]
}

/// v rotated by θ (rad) about the unit axis k: v cos θ + (k × v) sin θ + k (k·v)(1 − cos θ),
/// with 1 − cos θ = 2 sin²(θ/2).
pub fn rotate_about<F: Real>(v: V3<F>, k: V3<F>, theta: F) -> V3<F> {
    let half = theta / F::of(std::f64::consts::PI);
    let s = half.sin_pi();
    let h = (half * F::of(0.5)).sin_pi();
    let one_minus_cos = F::of(2.0) * h * h;
    let cos = F::ONE - one_minus_cos;
    sum3(
        sum3(scaled(v, cos), scaled(cross(k, v), s)),
        scaled(k, dot(k, v) * one_minus_cos),
    )
}

/// The spherical detector's position (`-curved_det`): distance·b rotated about s by
/// P_y/distance, then about f by P_z/distance (m).
pub fn curved_position<F: Real>(p: &Params<F>, planar: V3<F>) -> V3<F> {
    let v = scaled(p.beam, p.distance);
    let v = rotate_about(v, p.sdet, planar[1] / p.distance);
    rotate_about(v, p.fdet, planar[2] / p.distance)
}

/// ω (sr) at air path `r` (m): pixel²/r²·close_distance/r, or 1/r² for a point pixel.
#[inline(always)]
pub fn solid_angle<F: Real>(p: &Params<F>, r: F, point_pixel: bool) -> F {
    if point_pixel {
        F::ONE / (r * r)
    } else {
        p.pixel_area * p.close_distance / (r * r * r)
    }
}

/// Fraction absorbed in layer t: exp(−t·Δzμ/ρ) − exp(−(t+1)·Δzμ/ρ), parallax ρ = d·o.
#[inline(always)]
pub fn capture_fraction<F: Real>(p: &Params<F>, parallax: F, layer: F) -> F {
    let k = -p.step_mu / parallax;
    (layer * k).exp() - ((layer + F::ONE) * k).exp()
}

/// sin θ/λ = |d − i|/(2λ) (m⁻¹).
#[inline(always)]
pub fn stol<F: Real>(d: V3<F>, s: &Source<F>) -> F {
    let q = sum3(d, scaled(s.incident, -F::ONE));
    F::of(0.5) * s.inv_lambda * dot(q, q).sqrt()
}

/// Kahn's factor ½(1 + cos²2θ − K·cos 2ψ·sin²2θ), cos 2ψ = (e² − b²)/(e² + b²) (1 along the
/// beam) with e, b the projections of d on E_in, B_in; sin²2θ = |d × i|².
#[inline(always)]
pub fn kahn_factor<F: Real>(s: &Source<F>, d: V3<F>, kahn: F) -> F {
    let cos2t = dot(d, s.incident);
    let across = cross(d, s.incident);
    let sin2 = dot(across, across);
    let e = dot(d, s.e_in);
    let b = dot(d, s.b_in);
    let denom = e * e + b * b;
    // the quotient in every case (over 1 where denom is 0), then chosen: a select, where a
    // quotient computed inside the choice would be a branch per lane of the callers' lanes
    let quotient = (e * e - b * b) / if denom != F::ZERO { denom } else { F::ONE };
    let cos_two_psi = if denom != F::ZERO { quotient } else { F::ONE };
    F::of(0.5) * (F::ONE + cos2t * cos2t - kahn * cos_two_psi * sin2)
}

/// The fractional Miller indices (h, k, l) of direction `d` in orientation `row`.
/// Written out, not `array::map`, so that it inlines wherever it is called: an out-of-line
/// `map` would leave the forward lanes' vector clones for the baseline build's code.
#[inline(always)]
pub fn miller_index<F: Real>(row: &Row<F>, d: V3<F>) -> V3<F> {
    let index = |v: usize| dot(d, row.axes[v]) - row.offset[v];
    [index(0), index(1), index(2)]
}

/// x − ceil(x − ½) ∈ (−½, ½] (C's rounding, ties down).
#[inline]
pub fn fractional<F: Real>(x: F) -> F {
    x - (x - F::of(0.5)).ceil()
}

/// sin(N·π·h)/sin(π·h) on δ = h − floor(h + ½) (the sign dropped squares away; the rules for
/// δ in [`crate::base::series`]); N at a node.
///
/// For whole N up to [`CHEBYSHEV_MAX_N`] it is U_{N−1}(cos πδ), Chebyshev's polynomial of the
/// second kind, by its recurrence: one cosine instead of two sines, exact at the node, and
/// within a few ulp·N² of the quotient elsewhere (below the quotient's own rounding of πNδ).
#[inline]
pub fn sincg<F: Real>(h: F, n: F) -> F {
    let delta = h - (h + F::of(0.5)).floor();
    if delta.abs() < F::of(SINCG_EPS) {
        return n;
    }
    if on_recurrence(n.to_f64()) {
        return chebyshev_u(delta.cos_pi_small(), n.to_f64() as usize - 1).1;
    }
    (n * delta).sin_pi() / delta.sin_pi()
}

/// Whether the lattice sum of N takes Chebyshev's recurrence (whole N from 1 to
/// [`CHEBYSHEV_MAX_N`]) rather than the platform's sines.
#[inline]
pub fn on_recurrence(n: f64) -> bool {
    (1.0..=CHEBYSHEV_MAX_N).contains(&n) && is_whole(n)
}

/// (U_{k−1}(c), U_k(c)), k ≥ 0, Chebyshev's polynomials of the second kind, by U_{−1} = 0,
/// U_0 = 1, U_{j+1} = 2c·U_j − U_{j−1}.
#[inline(always)]
pub fn chebyshev_u<F: Real>(c: F, k: usize) -> (F, F) {
    let two_c = c + c;
    let (mut below, mut at) = (F::ZERO, F::ONE);
    for _ in 0..k {
        (below, at) = (at, two_c * at - below);
    }
    (below, at)
}

/// 3(sin x − x·cos x)/x³ with x = π·|t|, the transform of a sphere; its Taylor series to x¹⁰
/// below [`SINC3_SERIES_BELOW`] (as the tensor stage).
pub fn sinc3<F: Real>(t: F) -> F {
    let t = t.abs();
    let x = t * F::of(std::f64::consts::PI);
    let x2 = x * x;
    if x < F::of(SINC3_SERIES_BELOW) {
        let c = |j: usize| F::of(SINC3_TAYLOR[j]);
        return F::ONE + x2 * (c(1) + x2 * (c(2) + x2 * (c(3) + x2 * (c(4) + x2 * c(5)))));
    }
    F::of(3.0) * (t.sin_pi() / x - t.cos_pi()) / x2
}

/// F_latt at (h, k, l) for the crystal shape of `sw` (physics reference §5.6).
pub fn lattice_factor<F: Real>(p: &Params<F>, hkl: V3<F>, sw: &Switches) -> F {
    let [na, nb, nc] = p.n;
    let volume = na * nb * nc;
    if sw.square {
        let mut f = F::ONE;
        for (x, n) in hkl.into_iter().zip(p.n) {
            if n > F::ONE {
                f *= sincg(x, n);
            }
        }
        return f;
    }
    let delta = [fractional(hkl[0]), fractional(hkl[1]), fractional(hkl[2])];
    if sw.round {
        let r2 = dot(
            [delta[0] * na, delta[1] * nb, delta[2] * nc],
            [delta[0] * na, delta[1] * nb, delta[2] * nc],
        );
        return sinc3((r2 * p.fudge).sqrt()) * volume * F::of(ROUND_SCALE);
    }
    let mut r2 = F::ZERO;
    for axis in 0..3 {
        let c = delta[0] * p.recip[0][axis] + delta[1] * p.recip[1][axis] + delta[2] * p.recip[2][axis];
        r2 += c * c;
    }
    r2 *= volume * volume * p.fudge;
    if sw.gauss {
        (-r2 / F::of(GAUSS_WIDTH)).exp() * volume
    } else if r2 < F::of(TOPHAT_R2) {
        volume
    } else {
        F::ZERO
    }
}

/// The offset from the grid's first index of the integral index `x` along `axis`, with `x`
/// clamped to one step outside the grid first (NaN to below it).
#[inline]
pub(super) fn grid_offset<F: Real>(g: &Grid<F>, x: F, axis: usize) -> i32 {
    let min = g.min[axis];
    let below = F::of(f64::from(min - 1));
    let above = F::of(f64::from(min + g.count[axis]));
    let mut v = below;
    if x >= below {
        v = x;
    }
    if v > above {
        v = above;
    }
    v.to_i32() - min
}

/// F_cell by nearest neighbour: the grid value at ceil(x − ½), default_F outside the grid.
pub fn nearest<F: Real>(p: &Params<F>, g: &Grid<F>, hkl: V3<F>) -> F {
    let i = [0, 1, 2].map(|a| grid_offset(g, (hkl[a] - F::of(0.5)).ceil(), a));
    let inside = (0..3).all(|a| i[a] >= 0 && i[a] < g.count[a]);
    if inside {
        g.values[((i[0] * g.count[1] + i[1]) * g.count[2] + i[2]) as usize]
    } else {
        p.default_f
    }
}

/// Whether tricubic interpolation at (h, k, l) leaves the grid: C needs min + 2 ≤ x ≤ max − 2.
pub fn tricubic_out_of_range<F: Real>(g: &Grid<F>, hkl: V3<F>) -> bool {
    (0..3).any(|a| {
        let min = f64::from(g.min[a]);
        let max = min + f64::from(g.count[a] - 1);
        hkl[a] < F::of(min + 2.0) || hkl[a] > F::of(max - 2.0)
    })
}

/// The 4-point Lagrange weights of the nodes at −1, 0, 1, 2 at t ∈ [0, 1).
#[inline]
pub(super) fn lagrange_weights<F: Real>(t: F) -> [F; 4] {
    let (tm1, tm2, tp1) = (t - F::ONE, t - F::of(2.0), t + F::ONE);
    [
        t * tm1 * tm2 / F::of(-6.0),
        tp1 * tm1 * tm2 / F::of(2.0),
        tp1 * t * tm2 / F::of(-2.0),
        tp1 * t * tm1 / F::of(6.0),
    ]
}

/// F_cell by tricubic interpolation over the 4×4×4 nodes around (h, k, l), summed along l,
/// then k, then h (as the tensor stage and the kernel), the node block clamped into the grid.
pub fn tricubic<F: Real>(g: &Grid<F>, hkl: V3<F>) -> F {
    let floor = hkl.map(F::floor);
    let clamp = |x: i32, hi: i32| x.min(hi).max(0);
    let b = [0, 1, 2].map(|a| clamp(grid_offset(g, floor[a], a) - 1, g.count[a] - 4));
    let [_, ck, cl] = g.count;
    let last = g.count.iter().product::<i32>() - 1;
    let base = (b[0] * ck + b[1]) * cl + b[2];
    let [wh, wk, wl] = [0, 1, 2].map(|a| lagrange_weights(hkl[a] - floor[a]));
    let mut f = F::ZERO;
    for (i, &w_h) in wh.iter().enumerate() {
        let mut fk = F::ZERO;
        for (j, &w_k) in wk.iter().enumerate() {
            let mut fl = F::ZERO;
            for (m, &w_l) in wl.iter().enumerate() {
                let node = clamp(base + (i as i32 * ck + j as i32) * cl + m as i32, last);
                fl += g.values[node as usize] * w_l;
            }
            fk += fl * w_k;
        }
        f += fk * w_h;
    }
    f
}

/// Whether C counts a term of lattice factor `lattice`: it skips zero lattice factors without
/// water, which matters where the `-oversample_*` products or tricubic interpolation make a
/// skipped term differ from a zero one.
#[inline]
pub(super) fn counted<F: Real>(lattice: F, sw: &Switches) -> bool {
    sw.water || !(sw.products() || sw.tricubic) || lattice != F::ZERO
}

/// F_cell at (h, k, l): default_F without a grid; the grid by nearest neighbour, or by
/// tricubic interpolation until `nearest_now` (C's fall-back).
#[inline]
pub(super) fn structure_factor<F: Real>(inp: &Inputs<F>, hkl: V3<F>, nearest_now: bool) -> F {
    match &inp.grid {
        Some(g) if inp.sw.tricubic && !nearest_now => tricubic(g, hkl),
        Some(g) => nearest(&inp.p, g, hkl),
        None => inp.p.default_f,
    }
}

/// One pixel's loop: its photons before the r_e²·fluence/steps scale, its Σω (sr), and
/// whether tricubic interpolation left the grid in it (the pixel where C switches to
/// nearest neighbour for good).
pub struct Pixel<F> {
    pub photons: F,
    pub omega: F,
    pub left_grid: bool,
}

/// The loop of one rendered pixel (slow, fast) over the orientation rows `rows` of its shot;
/// structure factors by nearest neighbour from the start where `nearest_now`.
pub fn pixel_photons<F: Real>(
    inp: &Inputs<F>,
    rows: &[Row<F>],
    slow: usize,
    fast: usize,
    nearest_now: bool,
) -> Pixel<F> {
    let (sw, p) = (&inp.sw, &inp.p);
    let os = inp.oversample;
    let per_source = rows.len() / inp.sources.len().max(1);
    let mut nearest_now = nearest_now;
    let mut left_grid = false;
    // C's per-pixel state: the running sum starts at I_bg; ω, polar and capture are cached
    let mut running = p.i_bg;
    let (mut omega_first, mut omega_total) = (F::ZERO, F::ZERO);
    let (mut capture, mut capture_last) = (F::ONE, F::ONE);
    let mut polar_first = if sw.polar { F::ZERO } else { F::ONE };
    let mut polar_found = false;
    for t in 0..inp.layers {
        for sub_s in 0..os {
            for sub_f in 0..os {
                let fdet = p.subpixel * F::of((fast * os + sub_f) as f64) + p.subpixel * F::of(0.5);
                let sdet = p.subpixel * F::of((slow * os + sub_s) as f64) + p.subpixel * F::of(0.5);
                let mut pos = sample_position(p, fdet, sdet, F::of(t as f64) * p.layer_step);
                if sw.curved {
                    pos = curved_position(p, pos);
                }
                let r = dot(pos, pos).sqrt();
                let d = scaled(pos, F::ONE / r);
                let omega = solid_angle(p, r, sw.point_pixel);
                let first_of_layer = sub_s == 0 && sub_f == 0;
                if t == 0 && first_of_layer {
                    omega_first = omega;
                }
                omega_total += omega;
                if sw.sensor {
                    if first_of_layer || sw.oversample_thick {
                        capture = capture_fraction(p, dot(d, p.odet), F::of(t as f64));
                    }
                    if first_of_layer {
                        capture_last = capture;
                    }
                }
                for (si, source) in inp.sources.iter().enumerate() {
                    let kept = !sw.dmin || stol(d, source) <= p.stol_max;
                    if !kept {
                        continue;
                    }
                    let mut polar = F::ONE;
                    if sw.polar {
                        polar = kahn_factor(source, d, p.kahn);
                        if !polar_found {
                            polar_first = polar;
                            polar_found = true;
                        }
                    }
                    let factor = term_factor(sw, capture, polar, omega);
                    for row in &rows[si * per_source..(si + 1) * per_source] {
                        let hkl = miller_index(row, d);
                        let f_latt = lattice_factor(p, hkl, sw);
                        if !counted(f_latt, sw) {
                            continue;
                        }
                        if sw.tricubic && !nearest_now {
                            if let Some(g) = &inp.grid {
                                if tricubic_out_of_range(g, hkl) {
                                    nearest_now = true;
                                    left_grid = true;
                                }
                            }
                        }
                        let f_cell = structure_factor(inp, hkl, nearest_now);
                        let term = f_cell * f_cell * f_latt * f_latt;
                        if sw.products() {
                            running = (running + term) * factor;
                        } else {
                            running += term;
                        }
                    }
                }
            }
        }
    }
    let sums = PixelSums {
        running,
        capture_last,
        polar_first,
        omega_first,
        omega_total,
    };
    sums.finish(sw, inp.layers * os * os, left_grid)
}

/// The factor of a term under the `-oversample_*` products: the capture fraction, polarization
/// factor and solid angle of its sample, each where its flag asks for it per sample.
#[inline]
pub(super) fn term_factor<F: Real>(sw: &Switches, capture: F, polar: F, omega: F) -> F {
    let mut factor = F::ONE;
    if sw.oversample_thick && sw.sensor {
        factor *= capture;
    }
    if sw.oversample_polar && sw.polar {
        factor *= polar;
    }
    if sw.oversample_omega {
        factor *= omega;
    }
    factor
}

/// What one pixel's loop leaves: its running sum and the factors C caches per pixel (the last
/// layer's first capture fraction, the first polarization factor, the first and summed solid
/// angles, sr).
pub(super) struct PixelSums<F> {
    pub running: F,
    pub capture_last: F,
    pub polar_first: F,
    pub omega_first: F,
    pub omega_total: F,
}

impl<F: Real> PixelSums<F> {
    /// The [`Pixel`] of `steps` samples: the cached factors the `-oversample_*` products did
    /// not take per sample applied once, and its Σω.
    #[inline]
    pub(super) fn finish(self, sw: &Switches, steps: usize, left_grid: bool) -> Pixel<F> {
        let mut photons = self.running;
        if sw.sensor && !sw.oversample_thick {
            photons *= self.capture_last;
        }
        if !sw.oversample_polar {
            photons *= self.polar_first;
        }
        if !sw.oversample_omega {
            photons *= self.omega_first;
        }
        let omega = match sw.oversample_omega {
            true => self.omega_total,
            false => self.omega_first * F::of(steps as f64),
        };
        Pixel {
            photons,
            omega,
            left_grid,
        }
    }
}

/// Switches with everything off, for the unit tests of the loop and its adjoint.
#[cfg(test)]
pub(crate) mod tests_support {
    use crate::kernel::job::Switches;

    pub fn switches() -> Switches {
        Switches {
            square: false,
            round: false,
            gauss: false,
            nearest: false,
            tricubic: false,
            polar: false,
            dmin: false,
            water: false,
            curved: false,
            point_pixel: false,
            sensor: false,
            oversample_thick: false,
            oversample_polar: false,
            oversample_omega: false,
            masked: false,
            orientation_batch: 1,
            rows_reversed: false,
            one_batch: true,
            rows_in_registers: false,
            image_rows: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn grid(min: [i32; 3], count: [i32; 3], f: impl Fn(f64, f64, f64) -> f64) -> Grid<f64> {
        let mut values = Vec::new();
        for h in 0..count[0] {
            for k in 0..count[1] {
                for l in 0..count[2] {
                    values.push(f(f64::from(min[0] + h), f64::from(min[1] + k), f64::from(min[2] + l)));
                }
            }
        }
        Grid { min, count, values }
    }

    /// Four-point Lagrange interpolation is exact for cubics in each index: the tricubic
    /// structure factor reproduces a product of cubics between the nodes.
    #[test]
    fn tricubic_is_exact_for_cubic_polynomials() {
        let cubic = |x: f64| 0.3 * x * x * x - 2.0 * x * x + x - 5.0;
        let f = |h: f64, k: f64, l: f64| cubic(h) * cubic(0.5 * k) + cubic(l);
        let g = grid([-6, -5, -7], [13, 12, 14], f);
        for hkl in [[0.25, 1.5, -2.75], [-3.1, 2.9, 4.01], [1.0, -1.0, 0.0]] {
            let got = tricubic(&g, hkl);
            let want = f(hkl[0], hkl[1], hkl[2]);
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{hkl:?}: {got} vs {want}"
            );
        }
    }

    /// Nearest neighbour rounds ties down (C's ceil(x − ½)) and gives default_F off the grid.
    #[test]
    fn nearest_rounds_as_c_and_falls_back_to_default_f() {
        let g = grid([-2, -2, -2], [5, 5, 5], |h, k, l| 100.0 * h + 10.0 * k + l);
        let mut p = test_params();
        p.default_f = 7.0;
        assert_eq!(nearest(&p, &g, [0.5, -0.5, 1.49]), 0.0 + -10.0 + 1.0);
        assert_eq!(nearest(&p, &g, [2.4, 0.0, 0.0]), 200.0);
        assert_eq!(nearest(&p, &g, [2.6, 0.0, 0.0]), 7.0);
        assert_eq!(nearest(&p, &g, [f64::NAN, 0.0, 0.0]), 7.0);
        assert!(tricubic_out_of_range(&g, [0.5, 0.0, 0.0]));
        let wide = grid([-4, -4, -4], [9, 9, 9], |_, _, _| 1.0);
        assert!(!tricubic_out_of_range(&wide, [1.9, -2.0, 0.0]));
    }

    /// sin(Nπh)/sin(πh) as C writes it, away from the nodes; N at them.
    #[test]
    fn sincg_is_cs_lattice_sum() {
        for (h, n) in [
            (0.3, 5.0),
            (7.123, 10.0),
            (-2.49, 3.0),
            (100.01, 20.0),
            (0.4999, 32.0),
            (3.2, 1.0),
            (-5.0001, 2.0),
            (0.37, 47.0),
        ] {
            let c: f64 = (PI * n * h).sin() / (PI * h).sin();
            assert!((sincg(h, n).abs() - c.abs()).abs() <= 1e-9 * n, "{h} {n}");
        }
        assert_eq!(sincg(3.0, 5.0), 5.0);
    }

    /// A whole N below 1 (a refined `n_cells` may reach one) takes the sines, as C does:
    /// sin(Nπh)/sin(πh) away from the nodes and N at them, in both precisions and in the lanes.
    #[test]
    fn whole_n_below_one_is_cs_lattice_sum() {
        for n in [0.0, -1.0, -3.0] {
            for h in [0.3, -2.49, 7.123] {
                let c: f64 = (PI * n * h).sin() / (PI * h).sin();
                assert!((sincg(h, n) - c).abs() <= 1e-12, "{h} {n}");
                assert!(
                    (f64::from(sincg(h as f32, n as f32)) - c).abs() <= 1e-5,
                    "{h} {n} in f32"
                );
            }
            assert_eq!(sincg(2.0, n), n);
        }
    }

    /// Chebyshev's (U_{k−1}, U_k) at c = cos x are sin(k·x)/sin x and sin((k+1)·x)/sin x, by
    /// libm's sines, for every k the lattice sums take and x across [0, π/2]; the lanes take
    /// the scalar's operations, bit for bit.
    #[test]
    fn chebyshev_pairs_are_quotients_of_sines() {
        for k in 0..=33usize {
            for i in 1..=200 {
                let x = f64::from(i) / 200.0 * PI / 2.0;
                let (below, at) = chebyshev_u(x.cos(), k);
                let quotient = |m: usize| (m as f64 * x).sin() / x.sin();
                let tolerance = 1e-14 * (k * k) as f64;
                assert!(
                    (below - quotient(k)).abs() <= tolerance,
                    "U_{{k−1}} for k = {k} at x = {x}"
                );
                assert!((at - quotient(k + 1)).abs() <= tolerance, "U_{k} at x = {x}");
            }
            let c = [0.0, 0.1, 0.5, 0.9, 1.0, 0.999_999];
            let (below, at) = crate::kernel::native::lanes::chebyshev_u(c, k);
            for (l, &c) in c.iter().enumerate() {
                assert_eq!((below[l], at[l]), chebyshev_u(c, k), "lane {l}, k = {k}");
            }
        }
    }

    /// The series and the closed form of sinc3 meet at the switch, and sinc3(0) = 1.
    #[test]
    fn sinc3_is_continuous_at_the_series_switch() {
        let t = SINC3_SERIES_BELOW / PI;
        let closed = |t: f64| {
            let x = PI * t;
            3.0 * (x.sin() - x * x.cos()) / (x * x * x)
        };
        assert!((sinc3(t * (1.0 - 1e-9)) - closed(t)).abs() < 1e-9);
        assert_eq!(sinc3(0.0f64), 1.0);
        assert!((sinc3(1.3f64) - closed(1.3)).abs() < 1e-15);
    }

    /// At a Bragg node the lattice factor is the number of cells for every shape
    /// (ROUND's scale included).
    #[test]
    fn lattice_factor_at_a_node_is_the_cell_count() {
        let p = test_params();
        let sw = |square, round, gauss| Switches {
            square,
            round,
            gauss,
            ..test_switches()
        };
        let volume = 5.0 * 6.0 * 7.0;
        assert_eq!(lattice_factor(&p, [2.0, -3.0, 1.0], &sw(true, false, false)), volume);
        assert_eq!(lattice_factor(&p, [2.0, -3.0, 1.0], &sw(false, false, true)), volume);
        assert_eq!(lattice_factor(&p, [2.0, -3.0, 1.0], &sw(false, false, false)), volume);
        let round = lattice_factor(&p, [2.0, -3.0, 1.0], &sw(false, true, false));
        assert!((round - volume * ROUND_SCALE).abs() < 1e-12);
    }

    fn test_switches() -> Switches {
        super::tests_support::switches()
    }

    fn test_params() -> Params<f64> {
        let z = [0.0; 3];
        Params {
            pix0: z,
            fdet: z,
            sdet: z,
            odet: z,
            subpixel: 1e-4,
            layer_step: 0.0,
            close_distance: 0.1,
            pixel_area: 1e-8,
            beam: [1.0, 0.0, 0.0],
            distance: 0.1,
            step_mu: 0.0,
            stol_max: 0.0,
            kahn: 0.0,
            default_f: 0.0,
            i_bg: 0.0,
            n: [5.0, 6.0, 7.0],
            fudge: 1.0,
            recip: [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]],
        }
    }
}
