//! The adjoints of the native loop's helpers ([`super::pixel`]), in f64: each returns its
//! forward value with its partial derivatives, or pushes a cotangent back into the pixel's
//! accumulators, in the vector–Jacobian layout of the cube kernel (`kernel::layout`'s `G_*`
//! slots, then 12 numbers per orientation row). They mirror the cube kernels' adjoint helpers
//! (`kernel::stages`, named `…_partials` and `…_adjoint` there, beside the forward helpers)
//! and the tensor stages' partials (`physics/`), which stay the reference.

use super::inputs::{Grid, Params, Source, V3};
use super::pixel::{self as forward, cross, dot, fractional, grid_offset, lagrange_weights, scaled, sum3};
use super::real::{cos_pi_small, sin_pi_small, Real};
use crate::base::series::{
    GAUSS_WIDTH, ROUND_SCALE, SINC3_SERIES_BELOW, SINC3_SLOPE, SINC3_TAYLOR, SINCG_EPS, TOPHAT_R2,
};
use crate::kernel::job::Switches;
use crate::kernel::layout as at;
use std::f64::consts::PI;

type V = V3<f64>;

/// `acc[at..at + 3]` += g.
#[inline]
pub fn add3(acc: &mut [f64], at: usize, g: V) {
    acc[at] += g[0];
    acc[at + 1] += g[1];
    acc[at + 2] += g[2];
}

/// A sample of a pixel: its detector coordinates (m, along f, s, o), its direction d (unit)
/// and its air path r (m).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ray {
    pub coords: V,
    pub d: V,
    pub r: f64,
}

/// The ray of layer `t`, sub-pixel (`sub_s`, `sub_f`) of pixel (`slow`, `fast`) with `os`
/// sub-pixels a side, as the forward loop computes it.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn ray(
    p: &Params<f64>,
    sw: &Switches,
    os: usize,
    slow: usize,
    fast: usize,
    t: usize,
    sub_s: usize,
    sub_f: usize,
) -> Ray {
    let coords = [
        p.subpixel * (fast * os + sub_f) as f64 + p.subpixel * 0.5,
        p.subpixel * (slow * os + sub_s) as f64 + p.subpixel * 0.5,
        t as f64 * p.layer_step,
    ];
    let mut pos = forward::sample_position(p, coords[0], coords[1], coords[2]);
    if sw.curved {
        pos = forward::curved_position(p, pos);
    }
    let r = dot(pos, pos).sqrt();
    Ray {
        coords,
        d: scaled(pos, 1.0 / r),
        r,
    }
}

/// The adjoint of [`forward::sample_position`]: P = f·F + s·S + o·O + pix0 pushes ∂L/∂P to
/// the detector frame.
pub fn sample_position(acc: &mut [f64], coords: V, g_pos: V) {
    add3(acc, at::G_FDET, scaled(g_pos, coords[0]));
    add3(acc, at::G_SDET, scaled(g_pos, coords[1]));
    add3(acc, at::G_ODET, scaled(g_pos, coords[2]));
    add3(acc, at::G_PIX0, g_pos);
}

/// The adjoint of [`forward::rotate_about`] for the cotangent `g` of the rotated vector:
/// ∂L/∂v, ∂L/∂k and ∂L/∂θ.
pub fn rotate_about(v: V, k: V, theta: f64, g: V) -> (V, V, f64) {
    let half = theta / PI;
    let s = (half * PI).sin();
    let h = (half * 0.5 * PI).sin();
    let one_minus_cos = 2.0 * h * h;
    let cos = 1.0 - one_minus_cos;
    let (kg, kv) = (dot(k, g), dot(k, v));
    // g cos θ + (g × k) sin θ + k (k·g)(1 − cos θ)
    let g_v = sum3(
        sum3(scaled(g, cos), scaled(cross(g, k), s)),
        scaled(k, kg * one_minus_cos),
    );
    // (v × g) sin θ + ((k·g) v + (k·v) g)(1 − cos θ)
    let g_k = sum3(
        scaled(cross(v, g), s),
        scaled(sum3(scaled(v, kg), scaled(g, kv)), one_minus_cos),
    );
    let g_theta = -s * dot(v, g) + cos * dot(cross(k, v), g) + s * kv * kg;
    (g_v, g_k, g_theta)
}

/// The adjoint of [`forward::curved_position`] at the planar position `planar` (m) for the
/// cotangent `g` of the curved one: the rotation axes and the distance into `acc`; returns
/// ∂L/∂planar.
pub fn curved_position(p: &Params<f64>, acc: &mut [f64], planar: V, g: V) -> V {
    let start = scaled(p.beam, p.distance);
    let about_s = planar[1] / p.distance;
    let about_f = planar[2] / p.distance;
    let middle = forward::rotate_about(start, p.sdet, about_s);
    let second = rotate_about(middle, p.fdet, about_f, g);
    let first = rotate_about(start, p.sdet, about_s, second.0);
    add3(acc, at::G_CURVED_FDET, second.1);
    add3(acc, at::G_CURVED_SDET, first.1);
    acc[at::G_DISTANCE] += dot(p.beam, first.0) - (first.2 * about_s + second.2 * about_f) / p.distance;
    [0.0, first.2 / p.distance, second.2 / p.distance]
}

/// The adjoint of the lab position of detector coordinates `coords` (m) for the cotangent
/// `g_pos`: the detector frame and, on the curved detector, its axes and distance.
pub fn lab_position(p: &Params<f64>, sw: &Switches, acc: &mut [f64], coords: V, g_pos: V) {
    if sw.curved {
        let planar = forward::sample_position(p, coords[0], coords[1], coords[2]);
        let g_planar = curved_position(p, acc, planar, g_pos);
        sample_position(acc, coords, g_planar);
    } else {
        sample_position(acc, coords, g_pos);
    }
}

/// A change ∂L/∂d of a sample's direction d = P/r pushed back to the detector:
/// ∂L/∂P = (g − d·(d·g))/r.
pub fn push_direction(p: &Params<f64>, sw: &Switches, acc: &mut [f64], ray: &Ray, g_d: V) {
    lab_position(p, sw, acc, ray.coords, direction_to_position(ray.d, ray.r, g_d));
}

/// ∂L/∂P = (g − d·(d·g))/r of a direction d = P/r (r = |P|) for its cotangent `g_d`.
#[inline(always)]
pub fn direction_to_position(d: V, r: f64, g_d: V) -> V {
    let along = dot(d, g_d);
    scaled(sum3(g_d, scaled(d, -along)), 1.0 / r)
}

/// The adjoint of [`forward::solid_angle`] at `ray` for the cotangent `g` of ω:
/// close_distance and the position.
pub fn solid_angle(p: &Params<f64>, sw: &Switches, acc: &mut [f64], ray: &Ray, g: f64) {
    let (g_close, g_r) = solid_angle_partials(p, sw.point_pixel, ray.r, g);
    acc[at::G_CLOSE_DISTANCE] += g_close;
    // ∂r/∂P = d
    lab_position(p, sw, acc, ray.coords, scaled(ray.d, g_r));
}

/// g·∂ω/∂close_distance and g·∂ω/∂r of [`forward::solid_angle`] at air path `r` (m).
#[inline(always)]
pub fn solid_angle_partials(p: &Params<f64>, point_pixel: bool, r: f64, g: f64) -> (f64, f64) {
    if point_pixel {
        return (0.0, -2.0 * g / (r * r * r));
    }
    let area_over_r3 = p.pixel_area / (r * r * r);
    (g * area_over_r3, -3.0 * g * area_over_r3 * p.close_distance / r)
}

/// The adjoint of [`forward::capture_fraction`] in layer `layer` at `ray` for the cotangent
/// `g`: the parallax ρ = d·o reads o (the scene's `odet_col`) and d.
pub fn capture_fraction(p: &Params<f64>, sw: &Switches, acc: &mut [f64], ray: &Ray, layer: f64, g: f64) {
    let g_parallax = capture_partial(p, ray.d, layer, g);
    add3(acc, at::G_ODET_COL, scaled(ray.d, g_parallax));
    push_direction(p, sw, acc, ray, scaled(p.odet, g_parallax));
}

/// g·∂C/∂ρ of [`forward::capture_fraction`] in layer `layer` along `d`, ρ = d·o.
#[inline(always)]
pub fn capture_partial(p: &Params<f64>, d: V, layer: f64, g: f64) -> f64 {
    let parallax = dot(d, p.odet);
    let k = -p.step_mu / parallax;
    // C = e^{tk} − e^{(t+1)k}, ∂k/∂ρ = Δzμ/ρ²
    let dk = layer * (layer * k).exp() - (layer + 1.0) * ((layer + 1.0) * k).exp();
    g * dk * p.step_mu / (parallax * parallax)
}

/// The adjoint of [`forward::kahn_factor`] of `source` at `ray` for the cotangent `g`: K and
/// the direction (its part along i as the component across d, as the cube adjoint).
pub fn kahn_factor(p: &Params<f64>, sw: &Switches, acc: &mut [f64], source: &Source<f64>, ray: &Ray, g: f64) {
    let (g_kahn, g_d) = kahn_partials(p.kahn, source, ray.d, g);
    acc[at::G_KAHN] += g_kahn;
    push_direction(p, sw, acc, ray, g_d);
}

/// g·∂P/∂K and g·∂P/∂d of [`forward::kahn_factor`] P of `source` along `d` (∂/∂d's part along
/// i as the component across d, as the cube adjoint).
#[inline(always)]
pub fn kahn_partials(kahn: f64, source: &Source<f64>, d: V, g: f64) -> (f64, V) {
    let cos2t = dot(d, source.incident);
    let across = cross(d, source.incident);
    let sin2 = dot(across, across);
    let e = dot(d, source.e_in);
    let b = dot(d, source.b_in);
    let denom = e * e + b * b;
    // every quotient (over 1 where denom is 0), then chosen: selects, as `forward::kahn_factor`
    let on_frame = denom != 0.0;
    let safe = if on_frame { denom } else { 1.0 };
    let (quotient, de, db) = (
        (e * e - b * b) / safe,
        4.0 * e * b * b / (safe * safe),
        -4.0 * b * e * e / (safe * safe),
    );
    let (cos_two_psi, d_e, d_b) = match on_frame {
        true => (quotient, de, db),
        false => (1.0, 0.0, 0.0),
    };
    let along_i = g * cos2t * (1.0 + kahn * cos_two_psi);
    let i_across_d = cross(across, d);
    let frame = -0.5 * g * kahn * sin2;
    let g_d = sum3(
        scaled(i_across_d, along_i),
        sum3(scaled(source.e_in, frame * d_e), scaled(source.b_in, frame * d_b)),
    );
    (g * (-0.5 * cos_two_psi * sin2), g_d)
}

/// sin(Nπh)/sin(πh) on δ = h − floor(h + ½), with ∂/∂h and ∂/∂N (the tensor stage's `sincg_n`):
/// with x = πδ, ∂/∂N = x·cos(Nx)/sin x and ∂/∂h = π·(N·cos(Nx) − value·cos x)/sin x; at a node
/// (|δ| below [`SINCG_EPS`]) N, 1 and 0.
///
/// sin x and cos x are polynomials on [−π/2, π/2]; for whole N up to 32, sin(Nx)/sin x and
/// cos(Nx) are Chebyshev's U_{N−1}(cos x) and U_N − cos x·U_{N−1} (as the forward loop's
/// [`forward::sincg`]), else the platform's sine and cosine of Nx.
#[inline(always)]
pub fn sincg(h: f64, n: f64) -> (f64, f64, f64) {
    let delta = h - Real::floor(h + 0.5);
    if delta.abs() < SINCG_EPS {
        return (n, 0.0, 1.0);
    }
    let x = delta * PI;
    let (sin_x, cos_x) = (sin_pi_small(delta), cos_pi_small(delta));
    let over_sin = 1.0 / sin_x;
    let (value, cos_nx) = if forward::on_recurrence(n) {
        let (below, at) = forward::chebyshev_u(cos_x, n as usize);
        (below, at - cos_x * below)
    } else {
        let (sin_nx, cos_nx) = (n * x).sin_cos();
        (sin_nx * over_sin, cos_nx)
    };
    (
        value,
        PI * (n * cos_nx - value * cos_x) * over_sin,
        x * cos_nx * over_sin,
    )
}

/// sinc3 as a function of u = x² (x = π·t) and ∂/∂u: its series below [`SINC3_SERIES_BELOW`] in
/// x (as the tensor stage), the closed form 3(sin x/x − cos x)/u above.
pub fn sinc3(u: f64) -> (f64, f64) {
    if u < SINC3_SERIES_BELOW * SINC3_SERIES_BELOW {
        let [c0, c1, c2, c3, c4, c5] = SINC3_TAYLOR;
        let [_, s1, s2, s3, s4, s5] = SINC3_SLOPE;
        let value = c0 + u * (c1 + u * (c2 + u * (c3 + u * (c4 + u * c5))));
        let du = s1 + u * (s2 + u * (s3 + u * (s4 + u * s5)));
        return (value, du);
    }
    let x = u.sqrt();
    let (sin, cos) = x.sin_cos();
    let value = 3.0 * (sin / x - cos) / u;
    (value, (3.0 * sin / x - 3.0 * value) / (2.0 * u))
}

/// F_latt with its partials ∂/∂(h, k, l) and ∂/∂(Na, Nb, Nc); for GAUSS, ∂F/∂c = `kappa`·c
/// with c = Σ_v δ_v·recip_v (`c`) and δ the fractional indices (`frac`), both 0 for SQUARE
/// and ROUND.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatticePartials {
    pub value: f64,
    pub d_hkl: V,
    pub d_n: V,
    pub kappa: f64,
    pub c: V,
    pub frac: V,
}

/// The adjoint of [`forward::lattice_factor`], with N as reals (SQUARE takes sincg of every
/// axis, 1 for N = 1, as the tensor stage's differentiable form).
pub fn lattice_factor(p: &Params<f64>, hkl: V, sw: &Switches) -> LatticePartials {
    let mut out = LatticePartials::default();
    let [na, nb, nc] = p.n;
    if sw.square {
        let [a, b, cc] = [0, 1, 2].map(|v| sincg(hkl[v], p.n[v]));
        out.value = a.0 * b.0 * cc.0;
        out.d_hkl = [a.1 * b.0 * cc.0, a.0 * b.1 * cc.0, a.0 * b.0 * cc.1];
        out.d_n = [a.2 * b.0 * cc.0, a.0 * b.2 * cc.0, a.0 * b.0 * cc.2];
    } else if sw.round {
        let frac = hkl.map(fractional);
        let fudge_pi2 = p.fudge * PI * PI;
        let x = [frac[0] * na, frac[1] * nb, frac[2] * nc];
        let (s, ds) = sinc3(dot(x, x) * fudge_pi2);
        let scale = na * nb * nc * ROUND_SCALE;
        out.value = s * scale;
        // ∂u/∂δ_a = 2·π²·fudge·δ_a·N_a², ∂u/∂N_a = 2·π²·fudge·δ_a²·N_a
        let g = ds * scale * 2.0 * fudge_pi2;
        out.d_hkl = [0, 1, 2].map(|a| g * x[a] * p.n[a]);
        let per = s * ROUND_SCALE;
        out.d_n = [
            g * x[0] * frac[0] + per * nb * nc,
            g * x[1] * frac[1] + per * na * nc,
            g * x[2] * frac[2] + per * na * nb,
        ];
    } else {
        // GAUSS and TOPHAT: the distance from the node in reciprocal space
        out.frac = hkl.map(fractional);
        out.c = [0, 1, 2].map(|axis| (0..3).map(|v| out.frac[v] * p.recip[v][axis]).sum::<f64>());
        let (c, volume) = (out.c, na * nb * nc);
        let r2 = dot(c, c) * volume * volume * p.fudge;
        let others = [nb * nc, na * nc, na * nb];
        if sw.gauss {
            let e = (-r2 / GAUSS_WIDTH).exp();
            out.value = e * volume;
            // ∂F/∂c = F·(−2V²·fudge/0.63)·c
            out.kappa = out.value * (-2.0 * volume * volume * p.fudge / GAUSS_WIDTH);
            out.d_hkl = [0, 1, 2].map(|v| out.kappa * dot(c, p.recip[v]));
            // ∂F/∂V = e·(1 − 2r²/0.63)
            let dv = e * (1.0 - 2.0 * r2 / GAUSS_WIDTH);
            out.d_n = others.map(|o| dv * o);
        } else if r2 < TOPHAT_R2 {
            out.value = volume;
            out.d_n = others;
        }
    }
    out
}

/// F_cell with ∂/∂(h, k, l), whether it is default_F, and the grid nodes it read with their
/// weights (∂F/∂F_node): none for default_F, one for nearest neighbour, 64 for tricubic.
#[derive(Debug, Clone, Copy)]
pub struct CellFactor {
    pub value: f64,
    pub is_default: bool,
    pub d_hkl: V,
    /// The first node of the 4×4×4 block (tricubic) or the node (nearest), and the block's
    /// weights along h, k, l (nearest: one weight 1).
    pub nodes: Nodes,
}

/// The grid nodes a structure factor read.
#[derive(Debug, Clone, Copy)]
pub enum Nodes {
    None,
    One(usize),
    Block { base: i32, weights: [[f64; 4]; 3] },
}

/// The adjoint of [`forward::structure_factor`]: tricubic interpolation (before C's fall-back,
/// `nearest_now` false), nearest neighbour, or default_F without a grid.
pub fn structure_factor(
    p: &Params<f64>,
    grid: Option<&Grid<f64>>,
    sw: &Switches,
    hkl: V,
    nearest_now: bool,
) -> CellFactor {
    let default = CellFactor {
        value: p.default_f,
        is_default: true,
        d_hkl: [0.0; 3],
        nodes: Nodes::None,
    };
    match grid {
        Some(g) if sw.tricubic && !nearest_now => tricubic(g, hkl),
        Some(g) => nearest_node(g, hkl).map_or(default, |node| CellFactor {
            value: g.values[node],
            is_default: false,
            d_hkl: [0.0; 3],
            nodes: Nodes::One(node),
        }),
        None => default,
    }
}

/// The node [`forward::nearest`] reads, `None` off the grid.
fn nearest_node(g: &Grid<f64>, hkl: V) -> Option<usize> {
    let i = [0, 1, 2].map(|a| grid_offset(g, Real::ceil(hkl[a] - 0.5), a));
    let inside = (0..3).all(|a| i[a] >= 0 && i[a] < g.count[a]);
    inside.then(|| ((i[0] * g.count[1] + i[1]) * g.count[2] + i[2]) as usize)
}

/// ∂w_n/∂t of the Lagrange weights (nodes at −1, 0, 1, 2).
fn lagrange_slopes(t: f64) -> [f64; 4] {
    let t2 = 3.0 * t * t;
    [
        (t2 - 6.0 * t + 2.0) / -6.0,
        (t2 - 4.0 * t - 1.0) / 2.0,
        (t2 - 2.0 * t - 2.0) / -2.0,
        (t2 - 1.0) / 6.0,
    ]
}

/// The node index of entry (i, j, m) of the block at `base`, clamped into the grid as the
/// forward loop clamps it.
#[inline]
fn block_node(g: &Grid<f64>, base: i32, i: usize, j: usize, m: usize) -> usize {
    let [_, ck, cl] = g.count;
    let last = g.count.iter().product::<i32>() - 1;
    (base + (i as i32 * ck + j as i32) * cl + m as i32).min(last).max(0) as usize
}

/// The adjoint of [`forward::tricubic`]: the same sums in the same order, with ∂/∂(h, k, l)
/// by the weights' slopes (the block's nodes do not move within a cell).
pub fn tricubic(g: &Grid<f64>, hkl: V) -> CellFactor {
    let floor = hkl.map(Real::floor);
    let clamp = |x: i32, hi: i32| x.min(hi).max(0);
    let b = [0, 1, 2].map(|a| clamp(grid_offset(g, floor[a], a) - 1, g.count[a] - 4));
    let base = (b[0] * g.count[1] + b[1]) * g.count[2] + b[2];
    let t = [0, 1, 2].map(|a| hkl[a] - floor[a]);
    let w = t.map(lagrange_weights);
    let s = t.map(lagrange_slopes);
    let (mut f, mut dh, mut dk, mut dl) = (0.0, 0.0, 0.0, 0.0);
    for i in 0..4 {
        let (mut fk, mut fk_dk, mut fk_dl) = (0.0, 0.0, 0.0);
        for j in 0..4 {
            let (mut fl, mut fl_dl) = (0.0, 0.0);
            for m in 0..4 {
                let v = g.values[block_node(g, base, i, j, m)];
                fl += v * w[2][m];
                fl_dl += v * s[2][m];
            }
            fk += fl * w[1][j];
            fk_dk += fl * s[1][j];
            fk_dl += fl_dl * w[1][j];
        }
        f += fk * w[0][i];
        dh += fk * s[0][i];
        dk += fk_dk * w[0][i];
        dl += fk_dl * w[0][i];
    }
    CellFactor {
        value: f,
        is_default: false,
        d_hkl: [dh, dk, dl],
        nodes: Nodes::Block { base, weights: w },
    }
}

/// ∂L/∂F_node += g·∂F/∂F_node for the nodes `cell` read.
pub fn scatter_to_grid(g: &Grid<f64>, cell: &CellFactor, grad: f64, into: &mut [f64]) {
    match cell.nodes {
        Nodes::None => {}
        Nodes::One(node) => into[node] += grad,
        Nodes::Block { base, weights: w } => {
            for i in 0..4 {
                for j in 0..4 {
                    let gij = grad * w[0][i] * w[1][j];
                    for m in 0..4 {
                        into[block_node(g, base, i, j, m)] += gij * w[2][m];
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central difference of `f` at `x` with step `h`.
    fn central(f: impl Fn(f64) -> f64, x: f64, h: f64) -> f64 {
        (f(x + h) - f(x - h)) / (2.0 * h)
    }

    /// The lattice sum's partials against central differences of its value, away from and
    /// near a node, for whole and fractional N.
    #[test]
    fn sincg_partials_are_the_value_s_slopes() {
        for (h, n) in [
            (0.3, 5.0),
            (7.123, 10.0),
            (-2.49, 3.0),
            (4.0003, 7.0),
            (0.21, 2.5),
            (1.1, 1.0),
        ] {
            let (value, dh, dn) = sincg(h, n);
            assert!((value - forward::sincg(h, n)).abs() <= 1e-12 * n, "{h} {n}");
            let num_h = central(|x| sincg(x, n).0, h, 1e-6);
            let num_n = central(|m| sincg(h, m).0, n, 1e-6);
            assert!(
                (dh - num_h).abs() <= 1e-6 * num_h.abs().max(1.0),
                "∂/∂h at {h} {n}: {dh} vs {num_h}"
            );
            assert!(
                (dn - num_n).abs() <= 1e-6 * num_n.abs().max(1.0),
                "∂/∂N at {h} {n}: {dn} vs {num_n}"
            );
        }
    }

    /// sinc3's slope: the series' own derivative near the switch (where a central difference
    /// of the closed form drowns in its cancellation), central differences above.
    #[test]
    fn sinc3_slope_is_the_value_s_slope() {
        let series_slope =
            |u: f64| -1.0 / 10.0 + 2.0 * u / 280.0 - 3.0 * u * u / 15120.0 + 4.0 * u * u * u / 1_330_560.0;
        for u in [1e-6, 5e-5, 2e-4, 1e-3] {
            let (value, du) = sinc3(u);
            assert!((value - forward::sinc3(u.sqrt() / PI)).abs() <= 1e-11, "{u}");
            // above the switch (u = 1e-4) the closed form's slope carries its value's
            // cancellation, ~1e-12 over 2u
            assert!((du - series_slope(u)).abs() <= 1e-7, "{u}: {du} vs {}", series_slope(u));
        }
        for u in [0.3, 4.0, 30.0] {
            let (value, du) = sinc3(u);
            assert!((value - forward::sinc3(u.sqrt() / PI)).abs() <= 1e-12, "{u}");
            let num = central(|v| sinc3(v).0, u, 1e-5 * u);
            assert!((du - num).abs() <= 1e-6 * num.abs(), "{u}: {du} vs {num}");
        }
    }

    /// Each shape's partials against central differences of the forward lattice factor.
    #[test]
    fn lattice_partials_are_the_forward_factor_s_slopes() {
        let p = test_params();
        for (square, round, gauss) in [(true, false, false), (false, true, false), (false, false, true)] {
            let sw = Switches {
                square,
                round,
                gauss,
                ..crate::kernel::native::pixel::tests_support::switches()
            };
            let hkl = [2.03, -2.96, 1.011];
            let lat = lattice_factor(&p, hkl, &sw);
            assert!((lat.value - forward::lattice_factor(&p, hkl, &sw)).abs() <= 1e-9 * lat.value.abs());
            for a in 0..3 {
                let num = central(
                    |x| {
                        let mut q = hkl;
                        q[a] = x;
                        lattice_factor(&p, q, &sw).value
                    },
                    hkl[a],
                    1e-7,
                );
                let tol = 1e-5 * num.abs().max(1e-3);
                assert!(
                    (lat.d_hkl[a] - num).abs() <= tol,
                    "{sw:?} ∂/∂hkl[{a}]: {} vs {num}",
                    lat.d_hkl[a]
                );
                let num_n = central(
                    |m| {
                        let mut q = p;
                        q.n[a] = m;
                        lattice_factor(&q, hkl, &sw).value
                    },
                    p.n[a],
                    1e-6,
                );
                let tol = 1e-5 * num_n.abs().max(1e-3);
                assert!(
                    (lat.d_n[a] - num_n).abs() <= tol,
                    "∂/∂N[{a}]: {} vs {num_n}",
                    lat.d_n[a]
                );
            }
        }
    }

    /// Tricubic interpolation's slopes against central differences, and its node weights sum
    /// to the value (the interpolation is linear in the grid).
    #[test]
    fn tricubic_slopes_and_node_weights() {
        let count = [9, 10, 11];
        let min = [-4, -5, -5];
        let mut values = Vec::new();
        for h in 0..count[0] {
            for k in 0..count[1] {
                for l in 0..count[2] {
                    values.push(((h * 7 + k * 3 + l * 5) % 11) as f64 + 0.5 * f64::from(h - k));
                }
            }
        }
        let g = Grid { min, count, values };
        let hkl = [0.3, -1.7, 2.45];
        let cell = tricubic(&g, hkl);
        assert!((cell.value - forward::tricubic(&g, hkl)).abs() < 1e-12);
        for a in 0..3 {
            let num = central(
                |x| {
                    let mut q = hkl;
                    q[a] = x;
                    forward::tricubic(&g, q)
                },
                hkl[a],
                1e-6,
            );
            assert!((cell.d_hkl[a] - num).abs() < 1e-6, "{a}: {} vs {num}", cell.d_hkl[a]);
        }
        let mut weights = vec![0.0; g.values.len()];
        scatter_to_grid(&g, &cell, 1.0, &mut weights);
        let linear: f64 = weights.iter().zip(&g.values).map(|(w, v)| w * v).sum();
        assert!((linear - cell.value).abs() < 1e-12);
    }

    /// The detector adjoints against central differences of a ray's solid angle, capture
    /// fraction and Kahn factor in pix0 (flat and curved detector).
    #[test]
    fn detector_adjoints_are_the_forward_factors_slopes() {
        for curved in [false, true] {
            let sw = Switches {
                curved,
                sensor: true,
                polar: true,
                ..crate::kernel::native::pixel::tests_support::switches()
            };
            let mut p = test_params();
            let source = Source {
                incident: [1.0, 0.0, 0.0],
                inv_lambda: 1e10,
                e_in: [0.0, 0.0, 1.0],
                b_in: [0.0, 1.0, 0.0],
            };
            let factors = |p: &Params<f64>| {
                let r = ray(p, &sw, 2, 30, 41, 1, 1, 0);
                [
                    forward::solid_angle(p, r.r, false),
                    forward::capture_fraction(p, dot(r.d, p.odet), 1.0),
                    forward::kahn_factor(&source, r.d, p.kahn),
                ]
            };
            for (f, name) in [0, 1, 2].into_iter().zip(["ω", "capture", "Kahn"]) {
                let mut acc = vec![0.0; at::G_GLOBALS];
                let r = ray(&p, &sw, 2, 30, 41, 1, 1, 0);
                match f {
                    0 => solid_angle(&p, &sw, &mut acc, &r, 1.0),
                    1 => capture_fraction(&p, &sw, &mut acc, &r, 1.0, 1.0),
                    _ => kahn_factor(&p, &sw, &mut acc, &source, &r, 1.0),
                }
                for axis in 0..3 {
                    let x0 = p.pix0[axis];
                    let h = 1e-7;
                    p.pix0[axis] = x0 + h;
                    let up = factors(&p)[f];
                    p.pix0[axis] = x0 - h;
                    let down = factors(&p)[f];
                    p.pix0[axis] = x0;
                    let num = (up - down) / (2.0 * h);
                    let got = acc[at::G_PIX0 + axis];
                    // relative, with a floor for slopes that vanish (ω on the curved detector)
                    let tol = 1e-5 * num.abs() + 1e-9 * factors(&p)[f].abs() / 0.1;
                    assert!(
                        (got - num).abs() <= tol,
                        "{name} curved={curved} pix0[{axis}]: {got} vs {num}"
                    );
                }
            }
        }
    }

    fn test_params() -> Params<f64> {
        Params {
            pix0: [0.1, 0.0513, -0.0488],
            fdet: [0.0, 0.0, 1.0],
            sdet: [0.0, -1.0, 0.0],
            odet: [1.0, 0.0, 0.0],
            subpixel: 5e-5,
            layer_step: 1e-5,
            close_distance: 0.1,
            pixel_area: 1e-8,
            beam: [1.0, 0.0, 0.0],
            distance: 0.1,
            step_mu: 0.02,
            stol_max: 1e12,
            kahn: 0.9,
            default_f: 3.0,
            i_bg: 0.0,
            n: [5.0, 6.0, 7.0],
            fudge: 1.0,
            recip: [[0.011, 0.001, 0.0], [0.0, 0.012, 0.002], [0.001, 0.0, 0.013]],
        }
    }
}
