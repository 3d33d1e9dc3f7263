//! The adjoint of the pixel kernel: Σ_p w_p·∂I_p/∂z for the scene variables z, in one launch
//! plus one small reduction, reverse mode by hand (CubeCL has no autodiff).
//!
//! Each `#[cube]` helper here is the adjoint of the forward helper of the same name in
//! [`super::pixel`]: it returns the forward value with its partial derivatives, or pushes a
//! cotangent back to the variables the forward helper read. The tensor stages
//! (`src/physics/`) stay the reference; `tests/integration/kernel_vjp.rs` holds the two
//! against each other.
//!
//! **Accumulation.** A pixel's image is I = scale·(I_bg + Σ_n F_n²·L_n²)·Ω·P·C (physics
//! reference §7; Ω, P and C are C's cached first-sample factors), so the cotangent of every
//! term is the same number w·scale·Ω·P·C: one pass over the samples gives every term's
//! adjoint, and the sum that the factors' adjoints need. The pass runs over batches of up to
//! [`ORIENTATION_BATCH`] orientation rows, C's loop inside each batch, so each thread keeps
//! the 12 adjoints of each row of the batch and the [`G_GLOBALS`] of the rest in registers.
//! After each batch, and for the rest at the end, the 64 threads of a workgroup write theirs
//! to shared memory and one thread per column sums it, in thread order, into the workgroup's
//! row of `partials`; [`sum_partials`] then sums the rows, in row order. No float atomics:
//! the same inputs give the same bits. Where the products are off (`Switches::image_rows`),
//! each thread takes several image rows into the same accumulators before each workgroup sum
//! ([`image_rows_vjp`]): one sum for that many pixels a thread. Their cached factors are
//! evaluated once before the batches and their adjoints once after them (the adjoints are
//! linear in the running sum).
//!
//! **Inputs in registers.** Each thread copies `params` and `counts` at the start
//! ([`copy_f32`]) and each orientation batch, with its rows' incident directions, once
//! before its terms ([`load_batch`]): the terms then read no storage buffer (llvmpipe reads
//! each element of one lane by lane, with a bounds check; on llvmpipe this took the heavy
//! kernel from 0.78 s to 0.32 s).
//!
//! Covered: the four spot shapes, default_F, nearest-neighbour and tricubic structure factors
//! (C's fall-back included; the grid values' own gradient is the scatter kernel's,
//! [`super::scatter`]), polarization, `-dmin`, absorption layers, point pixels, the curved
//! detector, ROI and mask, water, several sources, φ steps and mosaic domains, the
//! `-oversample_*` products, one shot per launch ([`super::vjp::kernel_covers`]).
//!
//! **The `-oversample_*` products.** C multiplies the running sum by each counted term's
//! factors f after the term, so I = I_bg·Π f + Σ_n t_n·Π_{m≥n} f_m. Where a shot's orientation
//! rows fit one batch, the pass is forward mode over the pixel ([`batch_terms`]). With more
//! rows (`Switches::rows_reversed`), the rows of earlier batches would need the factors of
//! terms not yet seen, so the pass
//! takes everything but the rows in forward mode over C's order, then sweeps the terms in C's
//! order backwards, one (sample, batch) block at a time, carrying ∂I/∂running after the
//! current block, the product of the later terms' factors, as one number.

use super::job::Switches;
use super::layout::*;
use super::pixel as forward;
use super::pixel::{
    block_node, copy_f32, copy_i32, counted, cross, dot, fractional, is_rendered, lab_position, lagrange_weight, load3,
    miller_index, nearest, nearest_node, sample_position, scaled, stol, sum3, tricubic_block, tricubic_out_of_range,
    Vec3,
};
use super::trig::{sin_cos, sin_cos_pi, sin_pi, PI_F32};
use cubecl::prelude::*;

/// sin(Nπh)/sin(πh) on δ = h − round(h) and its partials ∂/∂h, ∂/∂N.
#[derive(CubeType, Clone, Copy)]
pub struct SincgPartials {
    pub value: f32,
    pub dh: f32,
    pub dn: f32,
}

/// The adjoint of `trig::sincg`: value and partials, with x = πδ: value sin(Nx)/sin x,
/// ∂/∂N = x·cos(Nx)/sin x and ∂/∂h = π·(N·cos(Nx) − value·cos x)/sin x, as the tensor stage's
/// `sincg_n`. The value and ∂/∂N keep their relative accuracy down to x → 0 (both sines do);
/// ∂/∂h is a difference of two numbers near N there, so within |Nx| < 0.1 it is the Taylor
/// series π·N(N²−1)·x·((3N²−7)x²/90 − ⅓) (error below 1e-7 relative). At a node (x = 0) the
/// limits: N, ∂/∂N = 1, ∂/∂h = 0.
///
/// Selected, not branched: SIMD drivers such as llvmpipe evaluate both sides of a branch
/// anyway, and pay for the lane masks on top.
#[cube]
pub fn sincg(h: f32, n: f32) -> SincgPartials {
    let delta = h - (h + 0.5).floor();
    let x = delta * PI_F32;
    // δ ∈ [−½, ½]: πδ needs no reduction
    let one = sin_cos(x);
    let all = sin_cos_pi(n * delta);
    let node = x == 0.0;
    let inv_s = 1.0 / select(node, 1.0, one.sin);
    let value = select(node, n, all.sin * inv_s);
    let x2 = x * x;
    let series = PI_F32 * n * (n * n - 1.0) * x * ((3.0 * n * n - 7.0) * x2 * (1.0 / 90.0) - 1.0 / 3.0);
    let closed = PI_F32 * (n * all.cos - value * one.cos) * inv_s;
    SincgPartials {
        value,
        dh: select((n * x).abs() < 0.1 && x.abs() < 0.1, series, closed),
        dn: select(node, 1.0, x * all.cos * inv_s),
    }
}

/// sinc3 as a function of u = x² (x = π·t) and its derivative ∂/∂u: the series below x = 1
/// (as the forward kernel), the closed form 3(sin x/x − cos x)/u above it.
#[derive(CubeType, Clone, Copy)]
pub struct Sinc3Partials {
    pub value: f32,
    pub du: f32,
}

#[cube]
pub fn sinc3(u: f32) -> Sinc3Partials {
    let mut out = Sinc3Partials {
        value: 1.0
            + u * (-1.0 / 10.0
                + u * (1.0 / 280.0 + u * (-1.0 / 15120.0 + u * (1.0 / 1330560.0 + u * (-1.0 / 172972800.0))))),
        du: -1.0 / 10.0 + u * (2.0 / 280.0 + u * (-3.0 / 15120.0 + u * (4.0 / 1330560.0 + u * (-5.0 / 172972800.0)))),
    };
    if u >= 1.0 {
        let x = u.sqrt();
        let sc = sin_cos_pi(x / PI_F32);
        let sin_over_x = sc.sin / x;
        let value = 3.0 * (sin_over_x - sc.cos) / u;
        out.value = value;
        // d/du = (3 sin x/x − 3·sinc3)/(2u)
        out.du = (3.0 * sin_over_x - 3.0 * value) / (2.0 * u);
    }
    out
}

/// F_latt at (h, k, l) with its partials: ∂/∂h, ∂/∂k, ∂/∂l, ∂/∂Na, ∂/∂Nb, ∂/∂Nc, and for
/// GAUSS ∂/∂(recip_v)[axis] = `kappa`·c[axis]·δ_v with c = Σ_v δ_v·recip_v (`c`) and δ the
/// fractional indices (`frac`).
#[derive(CubeType, Clone, Copy)]
pub struct LatticePartials {
    pub value: f32,
    pub dh: f32,
    pub dk: f32,
    pub dl: f32,
    pub dna: f32,
    pub dnb: f32,
    pub dnc: f32,
    pub kappa: f32,
    pub c: Vec3,
    pub frac: Vec3,
}

/// The adjoint of `pixel::lattice_factor`, with N as reals (the tensor stage's
/// `lattice_factor_tensor`: SQUARE takes sincg of every axis, its value 1 for N = 1).
#[cube]
pub fn lattice_factor(
    params: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    #[comptime] square: bool,
    #[comptime] round: bool,
    #[comptime] gauss: bool,
) -> LatticePartials {
    let na = params[N_CELLS];
    let nb = params[N_CELLS + 1];
    let nc = params[N_CELLS + 2];
    let frac = Vec3 {
        x: fractional(h),
        y: fractional(k),
        z: fractional(l),
    };
    let c = Vec3 {
        x: frac.x * params[RECIP] + frac.y * params[RECIP + 3] + frac.z * params[RECIP + 6],
        y: frac.x * params[RECIP + 1] + frac.y * params[RECIP + 4] + frac.z * params[RECIP + 7],
        z: frac.x * params[RECIP + 2] + frac.y * params[RECIP + 5] + frac.z * params[RECIP + 8],
    };
    let mut value = 0.0;
    let mut dh = 0.0;
    let mut dk = 0.0;
    let mut dl = 0.0;
    let mut dna = 0.0;
    let mut dnb = 0.0;
    let mut dnc = 0.0;
    let mut kappa = 0.0;
    if square {
        let a = sincg(h, na);
        let b = sincg(k, nb);
        let cc = sincg(l, nc);
        value = a.value * b.value * cc.value;
        dh = a.dh * b.value * cc.value;
        dk = a.value * b.dh * cc.value;
        dl = a.value * b.value * cc.dh;
        dna = a.dn * b.value * cc.value;
        dnb = a.value * b.dn * cc.value;
        dnc = a.value * b.value * cc.dn;
    } else if round {
        let fudge_pi2 = params[FUDGE] * PI_F32 * PI_F32;
        let xh = frac.x * na;
        let xk = frac.y * nb;
        let xl = frac.z * nc;
        let s = sinc3((xh * xh + xk * xk + xl * xl) * fudge_pi2);
        let scale = na * nb * nc * 0.723_601_2;
        value = s.value * scale;
        // ∂u/∂δ_a = 2·π²·fudge·δ_a·N_a², ∂u/∂N_a = 2·π²·fudge·δ_a²·N_a
        let g = s.du * scale * 2.0 * fudge_pi2;
        dh = g * xh * na;
        dk = g * xk * nb;
        dl = g * xl * nc;
        let per = s.value * 0.723_601_2;
        dna = g * xh * frac.x + per * nb * nc;
        dnb = g * xk * frac.y + per * na * nc;
        dnc = g * xl * frac.z + per * na * nb;
    } else {
        let volume = na * nb * nc;
        let fudge = params[FUDGE];
        let r2 = dot(c, c) * volume * volume * fudge;
        if gauss {
            let e = (-r2 / 0.63).exp();
            value = e * volume;
            // ∂F/∂c = F·(−2V²·fudge/0.63)·c
            kappa = value * (-2.0 * volume * volume * fudge / 0.63);
            dh = kappa * (c.x * params[RECIP] + c.y * params[RECIP + 1] + c.z * params[RECIP + 2]);
            dk = kappa * (c.x * params[RECIP + 3] + c.y * params[RECIP + 4] + c.z * params[RECIP + 5]);
            dl = kappa * (c.x * params[RECIP + 6] + c.y * params[RECIP + 7] + c.z * params[RECIP + 8]);
            // ∂F/∂V = e·(1 − 2r²/0.63), ∂V/∂N_a = the product of the other two
            let dv = e * (1.0 - 2.0 * r2 / 0.63);
            dna = dv * nb * nc;
            dnb = dv * na * nc;
            dnc = dv * na * nb;
        } else if r2 < 0.3969 {
            value = volume;
            dna = nb * nc;
            dnb = na * nc;
            dnc = na * nb;
        }
    }
    LatticePartials {
        value,
        dh,
        dk,
        dl,
        dna,
        dnb,
        dnc,
        kappa,
        c,
        frac,
    }
}

/// F_cell with its partials ∂/∂h, ∂/∂k, ∂/∂l, whether it is default_F, and Σ|∂F/∂F_node|
/// over the grid's nodes it read (1 for nearest neighbour, the product of the axes' Σ|w| for
/// tricubic; 0 for default_F).
#[derive(CubeType, Clone, Copy)]
pub struct CellFactor {
    pub value: f32,
    pub is_default: bool,
    pub dh: f32,
    pub dk: f32,
    pub dl: f32,
    pub weight_sum: f32,
}

/// F_cell as the forward kernel: tricubic interpolation (before C's fall-back, `nearest_now`
/// false), nearest neighbour, or default_F without a grid.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn structure_factor(
    params: &Array<f32>,
    counts: &Array<i32>,
    hkl: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    nearest_now: bool,
    #[comptime] sw: Switches,
) -> CellFactor {
    let mut out = CellFactor {
        value: params[DEFAULT_F],
        is_default: true,
        dh: 0.0,
        dk: 0.0,
        dl: 0.0,
        weight_sum: 0.0,
    };
    if comptime!(sw.tricubic) {
        if nearest_now {
            let t = nearest_factor(params, counts, hkl, h, k, l);
            copy_factor(&mut out, t);
        } else {
            let t = tricubic(counts, hkl, h, k, l);
            copy_factor(&mut out, t);
        }
    } else if comptime!(sw.nearest) {
        let t = nearest_factor(params, counts, hkl, h, k, l);
        copy_factor(&mut out, t);
    }
    out
}

/// `to` = `from`, field by field (a kernel cannot reassign a struct).
#[cube]
fn copy_factor(to: &mut CellFactor, from: CellFactor) {
    to.value = from.value;
    to.is_default = from.is_default;
    to.dh = from.dh;
    to.dk = from.dk;
    to.dl = from.dl;
    to.weight_sum = from.weight_sum;
}

/// F_cell of the nearest node (default_F where (h, k, l) leaves the grid).
#[cube]
fn nearest_factor(params: &Array<f32>, counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> CellFactor {
    let mut out = CellFactor {
        value: nearest(params, counts, hkl, h, k, l),
        is_default: true,
        dh: 0.0,
        dk: 0.0,
        dl: 0.0,
        weight_sum: 0.0,
    };
    if nearest_node(counts, h, k, l) >= 0 {
        out.is_default = false;
        out.weight_sum = 1.0;
    }
    out
}

/// ∂w_n/∂t of [`lagrange_weight`] (nodes at −1, 0, 1, 2).
#[cube]
pub fn lagrange_slope(t: f32, n: u32) -> f32 {
    let t2 = 3.0 * t * t;
    let mut w = (t2 - 1.0) / 6.0;
    if n == 0 {
        w = (t2 - 6.0 * t + 2.0) / -6.0;
    } else if n == 1 {
        w = (t2 - 4.0 * t - 1.0) / 2.0;
    } else if n == 2 {
        w = (t2 - 2.0 * t - 2.0) / -2.0;
    }
    w
}

/// Σ_n |w_n(t)|, the four Lagrange weights' absolute sum.
#[cube]
fn lagrange_abs_sum(t: f32) -> f32 {
    let mut s = 0.0;
    #[unroll]
    for n in 0..4u32 {
        s += lagrange_weight(t, n).abs();
    }
    s
}

/// The adjoint of `pixel::tricubic`: the same sums in the same order, with ∂/∂h, ∂/∂k, ∂/∂l
/// by the weights' slopes (the block's nodes do not move within a cell).
#[cube]
pub fn tricubic(counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> CellFactor {
    let block = tricubic_block(counts, h, k, l);
    let mut f = 0.0;
    let mut dh = 0.0;
    let mut dk = 0.0;
    let mut dl = 0.0;
    #[unroll]
    for i in 0..4u32 {
        let mut fk_sum = 0.0;
        let mut fk_dk = 0.0;
        let mut fk_dl = 0.0;
        #[unroll]
        for j in 0..4u32 {
            let mut fl_sum = 0.0;
            let mut fl_dl = 0.0;
            #[unroll]
            for m in 0..4u32 {
                let v = hkl[block_node(block, i, j, m)];
                fl_sum += v * lagrange_weight(block.tl, m);
                fl_dl += v * lagrange_slope(block.tl, m);
            }
            let wj = lagrange_weight(block.tk, j);
            fk_sum += fl_sum * wj;
            fk_dk += fl_sum * lagrange_slope(block.tk, j);
            fk_dl += fl_dl * wj;
        }
        let wi = lagrange_weight(block.th, i);
        f += fk_sum * wi;
        dh += fk_sum * lagrange_slope(block.th, i);
        dk += fk_dk * wi;
        dl += fk_dl * wi;
    }
    CellFactor {
        value: f,
        is_default: false,
        dh,
        dk,
        dl,
        weight_sum: lagrange_abs_sum(block.th) * lagrange_abs_sum(block.tk) * lagrange_abs_sum(block.tl),
    }
}

/// The detector coordinates (m) of sample (t, sub_s, sub_f) of a pixel: along f, s, o.
#[cube]
pub fn detector_coordinates(
    params: &Array<f32>,
    slow: i32,
    fast: i32,
    os: i32,
    t: i32,
    sub_s: i32,
    sub_f: i32,
) -> Vec3 {
    let subpixel = params[SUBPIXEL];
    Vec3 {
        x: subpixel * (fast * os + sub_f) as f32 + subpixel * 0.5,
        y: subpixel * (slow * os + sub_s) as f32 + subpixel * 0.5,
        z: t as f32 * params[LAYER_STEP],
    }
}

/// v += g at `at..at + 3` of a thread's accumulators.
#[cube]
fn add3(acc: &mut Array<f32>, at: usize, g: Vec3) {
    acc[at] += g.x;
    acc[at + 1] += g.y;
    acc[at + 2] += g.z;
}

/// The adjoint of `pixel::sample_position`: P = f·F + s·S + o·O + pix0 pushes ∂L/∂P to the
/// detector frame (rows F, S, O and pix0).
#[cube]
pub fn sample_position_adjoint(acc: &mut Array<f32>, coords: Vec3, g_pos: Vec3) {
    add3(acc, G_FDET, scaled(g_pos, coords.x));
    add3(acc, G_SDET, scaled(g_pos, coords.y));
    add3(acc, G_ODET, scaled(g_pos, coords.z));
    add3(acc, G_PIX0, g_pos);
}

/// The adjoint of `pixel::rotate_about`, R = v cos θ + (k × v) sin θ + k (k·v)(1 − cos θ), for
/// the cotangent g of R: ∂L/∂v, ∂L/∂k and ∂L/∂θ.
#[derive(CubeType, Clone, Copy)]
pub struct RotationAdjoint {
    pub g_v: Vec3,
    pub g_k: Vec3,
    pub g_theta: f32,
}

#[cube]
pub fn rotate_about(v: Vec3, k: Vec3, theta: f32, g: Vec3) -> RotationAdjoint {
    let half = theta / PI_F32;
    let s = sin_pi(half);
    let h = sin_pi(half * 0.5);
    let one_minus_cos = 2.0 * h * h;
    let cos = 1.0 - one_minus_cos;
    let kg = dot(k, g);
    let kv = dot(k, v);
    RotationAdjoint {
        // g cos θ + (g × k) sin θ + k (k·g)(1 − cos θ)
        g_v: sum3(
            sum3(scaled(g, cos), scaled(cross(g, k), s)),
            scaled(k, kg * one_minus_cos),
        ),
        // (v × g) sin θ + ((k·g) v + (k·v) g)(1 − cos θ)
        g_k: sum3(
            scaled(cross(v, g), s),
            scaled(sum3(scaled(v, kg), scaled(g, kv)), one_minus_cos),
        ),
        g_theta: -s * dot(v, g) + cos * dot(cross(k, v), g) + s * kv * kg,
    }
}

/// The adjoint of `pixel::curved_position` at the planar position `planar` (m) for the
/// cotangent `g` of the curved one: the rotation axes (rows f and s as the curved detector
/// reads them) and the distance into `acc`; returns ∂L/∂planar (only its y and z move the
/// curved position).
#[cube]
pub fn curved_position(params: &Array<f32>, acc: &mut Array<f32>, planar: Vec3, g: Vec3) -> Vec3 {
    let distance = params[DISTANCE];
    let beam = load3(params, BEAM);
    let fdet = load3(params, FDET);
    let sdet = load3(params, SDET);
    let start = scaled(beam, distance);
    let about_s = planar.y / distance;
    let about_f = planar.z / distance;
    let middle = forward::rotate_about(start, sdet, about_s);
    let second = rotate_about(middle, fdet, about_f, g);
    let first = rotate_about(start, sdet, about_s, second.g_v);
    add3(acc, G_CURVED_FDET, second.g_k);
    add3(acc, G_CURVED_SDET, first.g_k);
    acc[G_DISTANCE] += dot(beam, first.g_v) - (first.g_theta * about_s + second.g_theta * about_f) / distance;
    Vec3 {
        x: 0.0,
        y: first.g_theta / distance,
        z: second.g_theta / distance,
    }
}

/// The adjoint of `pixel::lab_position` at detector coordinates `coords` (m) for the cotangent
/// `g_pos` of the lab position: the detector frame and, on the curved detector, its axes and
/// distance.
#[cube]
fn lab_position_adjoint(
    params: &Array<f32>,
    acc: &mut Array<f32>,
    coords: Vec3,
    g_pos: Vec3,
    #[comptime] curved: bool,
) {
    if curved {
        let planar = sample_position(params, coords.x, coords.y, coords.z);
        let g_planar = curved_position(params, acc, planar, g_pos);
        sample_position_adjoint(acc, coords, g_planar);
    } else {
        sample_position_adjoint(acc, coords, g_pos);
    }
}

/// The adjoint of d = P/|P| (unit, `r` = |P| in m): ∂L/∂P = (g − d·(d·g))/r.
#[cube]
pub fn direction_adjoint(d: Vec3, r: f32, g_d: Vec3) -> Vec3 {
    let along = dot(d, g_d);
    scaled(
        Vec3 {
            x: g_d.x - d.x * along,
            y: g_d.y - d.y * along,
            z: g_d.z - d.z * along,
        },
        1.0 / r,
    )
}

/// A sample's lab position (m), its air path r (m) and direction d.
#[derive(CubeType, Clone, Copy)]
pub struct Ray {
    pub coords: Vec3,
    pub d: Vec3,
    pub r: f32,
}

#[allow(clippy::too_many_arguments)]
#[cube]
pub(super) fn ray(
    params: &Array<f32>,
    slow: i32,
    fast: i32,
    os: i32,
    t: i32,
    sub_s: i32,
    sub_f: i32,
    #[comptime] curved: bool,
) -> Ray {
    let coords = detector_coordinates(params, slow, fast, os, t, sub_s, sub_f);
    let pos = lab_position(params, coords.x, coords.y, coords.z, curved);
    let r = dot(pos, pos).sqrt();
    Ray {
        coords,
        d: scaled(pos, 1.0 / r),
        r,
    }
}

/// C's flat sample index (layer·os + sub-pixel row)·os + sub-pixel column, as its parts.
#[derive(CubeType, Clone, Copy)]
pub struct SampleIndex {
    pub layer: i32,
    pub row: i32,
    pub column: i32,
}

#[cube]
impl SampleIndex {
    /// The parts of flat index `q` with `os` sub-pixels a side.
    pub fn of(q: i32, os: i32) -> SampleIndex {
        SampleIndex {
            layer: q / (os * os),
            row: (q / os) % os,
            column: q % os,
        }
    }

    /// The next sample in C's order.
    pub fn advance(&mut self, os: i32) {
        self.column += 1;
        if self.column == os {
            self.column = 0;
            self.row += 1;
        }
        if self.row == os {
            self.row = 0;
            self.layer += 1;
        }
    }
}

/// The ray of C's flat sample index `q` = (layer·os + sub-pixel row)·os + sub-pixel column.
#[cube]
pub(super) fn sample_ray(params: &Array<f32>, slow: i32, fast: i32, os: i32, q: i32, #[comptime] curved: bool) -> Ray {
    let at = SampleIndex::of(q, os);
    ray(params, slow, fast, os, at.layer, at.row, at.column, curved)
}

/// A change ∂L/∂d of a sample's direction, pushed back to the detector.
#[cube]
fn push_direction(params: &Array<f32>, acc: &mut Array<f32>, ray: Ray, g_d: Vec3, #[comptime] curved: bool) {
    lab_position_adjoint(params, acc, ray.coords, direction_adjoint(ray.d, ray.r, g_d), curved);
}

/// The adjoint of `pixel::solid_angle` at `ray` for cotangent `g` of ω: close_distance and
/// the position.
#[cube]
pub fn solid_angle(params: &Array<f32>, acc: &mut Array<f32>, ray: Ray, g: f32, #[comptime] sw: Switches) {
    let r = ray.r;
    let mut g_r = -2.0 * g / (r * r * r);
    if !sw.point_pixel {
        let area_over_r3 = params[PIXEL_AREA] / (r * r * r);
        acc[G_CLOSE_DISTANCE] += g * area_over_r3;
        g_r = -3.0 * g * area_over_r3 * params[CLOSE_DISTANCE] / r;
    }
    // ∂r/∂P = d
    lab_position_adjoint(params, acc, ray.coords, scaled(ray.d, g_r), sw.curved);
}

/// The adjoint of `pixel::capture_fraction` in layer `layer` at `ray` for cotangent `g`: the
/// parallax ρ = d·o reads o (the scene's `odet_col`) and d.
#[cube]
pub fn capture_fraction(
    params: &Array<f32>,
    acc: &mut Array<f32>,
    ray: Ray,
    layer: f32,
    g: f32,
    #[comptime] sw: Switches,
) {
    let odet = load3(params, ODET);
    let parallax = dot(ray.d, odet);
    let step_mu = params[STEP_MU];
    let k = -step_mu / parallax;
    // C = e^{tk} − e^{(t+1)k}, ∂k/∂ρ = Δzμ/ρ²
    let dk = layer * (layer * k).exp() - (layer + 1.0) * ((layer + 1.0) * k).exp();
    let g_parallax = g * dk * step_mu / (parallax * parallax);
    add3(acc, G_ODET_COL, scaled(ray.d, g_parallax));
    push_direction(params, acc, ray, scaled(odet, g_parallax), sw.curved);
}

/// The adjoint of `pixel::kahn_factor` of source row `row` at `ray` for cotangent `g`: K and
/// the direction. sin²2θ = |d × i|² as the forward kernel (1 − cos²2θ loses its digits at
/// small angles in f32, and ∂/∂K sums it with both signs of cos 2ψ over the detector); the
/// part of ∂/∂d along i enters as its component across d, (d × i) × d, for the same reason.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn kahn_factor(
    sources: &Array<f32>,
    params: &Array<f32>,
    acc: &mut Array<f32>,
    row: usize,
    ray: Ray,
    g: f32,
    #[comptime] sw: Switches,
) {
    let d = ray.d;
    let incident = load3(sources, row + INCIDENT);
    let e_in = load3(sources, row + E_IN);
    let b_in = load3(sources, row + B_IN);
    let kahn = params[KAHN];
    let cos2t = dot(d, incident);
    let across = cross(d, incident);
    let sin2 = dot(across, across);
    let e = dot(d, e_in);
    let b = dot(d, b_in);
    let denom = e * e + b * b;
    let mut cos_two_psi = 1.0;
    let mut d_e = 0.0;
    let mut d_b = 0.0;
    if denom != 0.0 {
        cos_two_psi = (e * e - b * b) / denom;
        d_e = 4.0 * e * b * b / (denom * denom);
        d_b = -4.0 * b * e * e / (denom * denom);
    }
    acc[G_KAHN] += g * (-0.5 * cos_two_psi * sin2);
    // ∂P/∂d = cos2θ·(1 + K·cos2ψ)·i − ½K·sin²2θ·(∂cos2ψ/∂e·E + ∂cos2ψ/∂b·B), with sin²2θ as
    // 1 − cos²2θ (its gradient along d is projected away anyway)
    let along_i = g * cos2t * (1.0 + kahn * cos_two_psi);
    let i_across_d = cross(across, d);
    let frame = -0.5 * g * kahn * sin2;
    let g_d = Vec3 {
        x: along_i * i_across_d.x + frame * (d_e * e_in.x + d_b * b_in.x),
        y: along_i * i_across_d.y + frame * (d_e * e_in.y + d_b * b_in.y),
        z: along_i * i_across_d.z + frame * (d_e * e_in.z + d_b * b_in.z),
    };
    push_direction(params, acc, ray, g_d, sw.curved);
}

/// Whether source row `row` keeps the sample along `d` (`-dmin`).
#[cube]
pub(super) fn kept(params: &Array<f32>, sources: &Array<f32>, row: usize, d: Vec3, #[comptime] dmin: bool) -> bool {
    let mut keep = true;
    if dmin {
        keep = stol(d, load3(sources, row + INCIDENT), sources[row + INV_LAMBDA]) <= params[STOL_MAX];
    }
    keep
}

/// C's cached per-pixel factors: ω of the first sample, the capture fraction of the last
/// layer's first sample, the polarization of the first kept sample (layer, sub-pixel row and
/// column, source); 1 for a factor whose `-oversample_*` flag applies it per term instead.
#[derive(CubeType, Clone, Copy)]
pub struct PixelFactors {
    pub omega: f32,
    pub capture: f32,
    pub polar: f32,
    pub polar_found: bool,
    pub polar_t: i32,
    pub polar_s: i32,
    pub polar_f: i32,
    pub polar_source: u32,
}

#[cube]
pub(super) fn pixel_factors(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    slow: i32,
    fast: i32,
    #[comptime] sw: Switches,
) -> PixelFactors {
    let os = counts[OVERSAMPLE];
    let layers = counts[LAYERS];
    let first = ray(params, slow, fast, os, 0, 0, 0, sw.curved);
    let mut out = PixelFactors {
        omega: 1.0,
        capture: 1.0,
        polar: 1.0,
        polar_found: false,
        polar_t: 0,
        polar_s: 0,
        polar_f: 0,
        polar_source: 0,
    };
    if !sw.oversample_omega {
        out.omega = forward::solid_angle(params, first.r, sw.point_pixel);
    }
    if sw.sensor && !sw.oversample_thick {
        let last = ray(params, slow, fast, os, layers - 1, 0, 0, sw.curved);
        let parallax = dot(last.d, load3(params, ODET));
        out.capture = forward::capture_fraction(params, parallax, (layers - 1) as f32);
    }
    if sw.polar && !sw.oversample_polar {
        out.polar = 0.0;
        let n_sources = counts[SOURCES] as u32;
        for t in 0..layers {
            for sub_s in 0..os {
                for sub_f in 0..os {
                    let at = ray(params, slow, fast, os, t, sub_s, sub_f, sw.curved);
                    for si in 0..n_sources {
                        let row = si as usize * SOURCE_WIDTH;
                        if !out.polar_found && kept(params, sources, row, at.d, sw.dmin) {
                            out.polar = forward::kahn_factor(sources, row, at.d, params[KAHN]);
                            out.polar_found = true;
                            out.polar_t = t;
                            out.polar_s = sub_s;
                            out.polar_f = sub_f;
                            out.polar_source = si;
                        }
                    }
                }
            }
        }
    }
    out
}

/// The cotangent of each of a pixel's terms for its ∂L/∂I `weight`: w·scale·Ω·P·C, with
/// `scale` = r_e²·fluence/steps and C's cached factors.
#[cube]
pub(super) fn term_cotangent(weight: f32, scale: f32, factors: PixelFactors) -> f32 {
    weight * scale * factors.omega * factors.polar * factors.capture
}

/// C's index (sample, then orientation row) of the first term of pixel `pixel` that takes
/// nearest-neighbour structure factors under C's tricubic fall-back (`counts[SWITCH_PIXEL]`,
/// found by the render): 0 after the switching pixel, never before it or without tricubic
/// interpolation, and at the switching pixel the first kept, counted term whose point leaves
/// the grid (the render's test, in the render's order).
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn first_nearest_term(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    pixel: i32,
    slow: i32,
    fast: i32,
    #[comptime] sw: Switches,
) -> i32 {
    // i32::MAX: never
    let mut first = 2147483647i32;
    if sw.tricubic {
        let switch = counts[SWITCH_PIXEL];
        if pixel > switch {
            first = 0;
        } else if pixel == switch {
            let os = counts[OVERSAMPLE];
            let per_shot = counts[PER_SHOT] as usize;
            let per_source = per_shot / counts[SOURCES] as usize;
            let mut index = 0i32;
            for t in 0..counts[LAYERS] {
                for sub_s in 0..os {
                    for sub_f in 0..os {
                        let at = ray(params, slow, fast, os, t, sub_s, sub_f, sw.curved);
                        for o in 0..per_shot {
                            let row = (o / per_source) * SOURCE_WIDTH;
                            if first == 2147483647i32 && kept(params, sources, row, at.d, sw.dmin) {
                                let r = o * ORIENTATION_WIDTH;
                                let h = miller_index(orientations, r, 0, at.d);
                                let k = miller_index(orientations, r, 1, at.d);
                                let l = miller_index(orientations, r, 2, at.d);
                                let lattice = forward::lattice_factor(params, h, k, l, sw.square, sw.round, sw.gauss);
                                if counted(lattice, sw) && tricubic_out_of_range(counts, h, k, l) {
                                    first = index;
                                }
                            }
                            index += 1;
                        }
                    }
                }
            }
        }
    }
    first
}

/// Numbers a thread keeps for each row of an orientation batch: the row's 12 (a/λ, b/λ, c/λ,
/// the offsets) at m·12, then its source's incident direction at B·12 + 3m.
pub(super) const BATCH_ROW: usize = ORIENTATION_WIDTH + 3;

/// Batch `batch` (rows b·B..b·B + B of the shot, those below `per_shot`) into the thread's
/// `batch_rows` [B·[`BATCH_ROW`]], which the terms read instead of the storage buffers (see
/// [`copy_f32`](super::pixel::copy_f32)).
#[cube]
fn load_batch(
    orientations: &Array<f32>,
    sources: &Array<f32>,
    per_shot: usize,
    per_source: usize,
    batch: usize,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    if comptime!(sw.rows_in_registers) {
        load_only_batch(orientations, sources, batch_rows, sw);
    } else {
        #[unroll]
        for m in 0..sw.orientation_batch {
            let o = batch * sw.orientation_batch + m;
            if o < per_shot {
                #[unroll]
                for j in 0..ORIENTATION_WIDTH {
                    batch_rows[m * ORIENTATION_WIDTH + j] = orientations[o * ORIENTATION_WIDTH + j];
                }
                let row = (o / per_source) * SOURCE_WIDTH + INCIDENT;
                #[unroll]
                for j in 0..3usize {
                    batch_rows[comptime!(sw.orientation_batch * ORIENTATION_WIDTH + 3 * m + j)] = sources[row + j];
                }
            }
        }
    }
}

/// [`load_batch`] where the one source's rows fit one batch ([`Switches::rows_in_registers`]):
/// every row and source 0's incident direction, at constant offsets and without a branch.
#[cube]
fn load_only_batch(
    orientations: &Array<f32>,
    sources: &Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    #[unroll]
    for j in 0..comptime!(sw.orientation_batch * ORIENTATION_WIDTH) {
        batch_rows[j] = orientations[j];
    }
    #[unroll]
    for m in 0..sw.orientation_batch {
        #[unroll]
        for j in 0..3usize {
            batch_rows[comptime!(sw.orientation_batch * ORIENTATION_WIDTH + 3 * m + j)] = sources[INCIDENT + j];
        }
    }
}

/// The terms of samples `first_sample..end_sample` (C's flat sample index: layer, sub-pixel
/// row, sub-pixel column) and orientation batches `first_batch..end_batch` (rows
/// `b·B..b·B + B`, B = `sw.orientation_batch`) of one pixel, in C's order (sample, then row),
/// with cotangent `g_term` each; returns the running sum after them, from `running` before.
/// Their adjoints go into `acc` and, with `rows`, into the thread's orientation accumulators
/// `orient` (row m of the batch at m·12: a/λ, b/λ, c/λ, then the offsets; one batch then).
/// One ray and one direction adjoint per sample.
///
/// With the `-oversample_*` products C multiplies the running sum by the sample's factor f
/// after every counted term: running ← (running + t)·f. Their adjoint here is forward mode:
/// the accumulators hold g·∂running/∂z, so after each term they are multiplied by f and take
/// g·(running + t)·∂f/∂z. `acc[G_I_BG]` is thereby multiplied by the product of the terms'
/// factors ([`pixel_adjoint`] uses it as the running sum's ∂/∂ of its start).
///
/// Terms from C's index `nearest_from` on take nearest-neighbour structure factors (C's
/// tricubic fall-back, [`first_nearest_term`]).
#[allow(clippy::too_many_arguments)]
#[cube]
fn batch_terms(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    first_sample: i32,
    end_sample: i32,
    first_batch: usize,
    end_batch: usize,
    slow: i32,
    fast: i32,
    g_term: f32,
    running: f32,
    nearest_from: i32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] preloaded: bool,
    #[comptime] rows: bool,
    #[comptime] sw: Switches,
) -> f32 {
    let flags = comptime!(sw.products());
    let os = counts[OVERSAMPLE];
    let per_shot = counts[PER_SHOT] as usize;
    let per_source = per_shot / counts[SOURCES] as usize;
    let mut sum = running;
    // the sample's layer and sub-pixel row and column, counted along (an integer division is
    // a scalar loop per lane on SIMD drivers such as llvmpipe)
    let mut sample_at = SampleIndex::of(first_sample, os);
    for q in first_sample..end_sample {
        let t = sample_at.layer;
        let at = ray(params, slow, fast, os, t, sample_at.row, sample_at.column, sw.curved);
        sample_at.advance(os);
        let sample = q * per_shot as i32;
        // ∂L/∂d over the sample's terms (a Vec3 cannot be reassigned in a kernel)
        let mut gx = 0.0;
        let mut gy = 0.0;
        let mut gz = 0.0;
        for b in first_batch..end_batch {
            if comptime!(!preloaded) {
                load_batch(orientations, sources, per_shot, per_source, b, batch_rows, sw);
            }
            #[unroll]
            for m in 0..sw.orientation_batch {
                let o = b * sw.orientation_batch + m;
                let row = (o / per_source) * SOURCE_WIDTH;
                if o < per_shot && kept(params, sources, row, at.d, sw.dmin) {
                    let term = term_adjoint(
                        params,
                        counts,
                        batch_rows,
                        hkl,
                        at.d,
                        load3(batch_rows, comptime!(sw.orientation_batch * ORIENTATION_WIDTH + 3 * m)),
                        g_term,
                        sample + o as i32 >= nearest_from,
                        acc,
                        orient,
                        m * ORIENTATION_WIDTH,
                        rows,
                        sw,
                    );
                    if term.valid {
                        gx += term.g_d.x;
                        gy += term.g_d.y;
                        gz += term.g_d.z;
                        if flags {
                            let f = term_factor(params, sources, row, at, t as f32, sw);
                            let product = f.omega * f.capture * f.polar;
                            scale_all(acc, orient, product, rows, sw);
                            gx *= product;
                            gy *= product;
                            gz *= product;
                            let g_factor = g_term * (sum + term.value);
                            term_factor_adjoint(params, sources, acc, row, at, t as f32, f, g_factor, sw);
                            sum = (sum + term.value) * product;
                        } else {
                            sum += term.value;
                        }
                    }
                }
            }
        }
        push_direction(params, acc, at, Vec3 { x: gx, y: gy, z: gz }, sw.curved);
    }
    sum
}

/// The factors one term of the `-oversample_*` products multiplies the running sum by: ω,
/// the capture fraction and the Kahn factor of the sample (each 1 where its flag is off).
#[derive(CubeType, Clone, Copy)]
pub struct TermFactor {
    pub omega: f32,
    pub capture: f32,
    pub polar: f32,
}

#[cube]
pub(super) fn term_factor(
    params: &Array<f32>,
    sources: &Array<f32>,
    row: usize,
    at: Ray,
    layer: f32,
    #[comptime] sw: Switches,
) -> TermFactor {
    let mut out = TermFactor {
        omega: 1.0,
        capture: 1.0,
        polar: 1.0,
    };
    if sw.oversample_omega {
        out.omega = forward::solid_angle(params, at.r, sw.point_pixel);
    }
    if sw.oversample_thick && sw.sensor {
        out.capture = forward::capture_fraction(params, dot(at.d, load3(params, ODET)), layer);
    }
    if sw.oversample_polar && sw.polar {
        out.polar = forward::kahn_factor(sources, row, at.d, params[KAHN]);
    }
    out
}

/// The adjoint of [`term_factor`]'s product for cotangent `g`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn term_factor_adjoint(
    params: &Array<f32>,
    sources: &Array<f32>,
    acc: &mut Array<f32>,
    row: usize,
    at: Ray,
    layer: f32,
    f: TermFactor,
    g: f32,
    #[comptime] sw: Switches,
) {
    if sw.oversample_omega {
        solid_angle(params, acc, at, g * f.capture * f.polar, sw);
    }
    if sw.oversample_thick && sw.sensor {
        capture_fraction(params, acc, at, layer, g * f.omega * f.polar, sw);
    }
    if sw.oversample_polar && sw.polar {
        kahn_factor(sources, params, acc, row, at, g * f.omega * f.capture, sw);
    }
}

/// Every accumulator of the thread times `f` (the orientation rows' with `rows`).
#[cube]
fn scale_all(acc: &mut Array<f32>, orient: &mut Array<f32>, f: f32, #[comptime] rows: bool, #[comptime] sw: Switches) {
    #[unroll]
    for j in 0..G_GLOBALS {
        acc[j] *= f;
    }
    if rows {
        #[unroll]
        for j in 0..comptime!(sw.orientation_batch * ORIENTATION_WIDTH) {
            orient[j] *= f;
        }
    }
}

/// One term's value F²·L², the cotangent of its direction d, and whether C counts it (it
/// skips zero lattice factors without water where the `-oversample_*` products or tricubic
/// interpolation make a skipped term differ from a zero one).
#[derive(CubeType, Clone, Copy)]
pub struct TermAdjoint {
    pub value: f32,
    pub g_d: Vec3,
    pub valid: bool,
}

/// The adjoint of one term F²·L² of orientation row `o` along `d` with cotangent `g_term`:
/// N, a*/b*/c* and default_F into `acc`, the row's 12 numbers into `orient[slot..slot + 12]`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn term_adjoint(
    params: &Array<f32>,
    counts: &Array<i32>,
    batch_rows: &Array<f32>,
    hkl: &Array<f32>,
    d: Vec3,
    incident: Vec3,
    g_term: f32,
    nearest_now: bool,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    #[comptime] slot: usize,
    #[comptime] rows: bool,
    #[comptime] sw: Switches,
) -> TermAdjoint {
    let h = miller_index(batch_rows, slot, 0, d);
    let k = miller_index(batch_rows, slot, 1, d);
    let l = miller_index(batch_rows, slot, 2, d);
    let lat = lattice_factor(params, h, k, l, sw.square, sw.round, sw.gauss);
    let f = structure_factor(params, counts, hkl, h, k, l, nearest_now, sw);
    let f2 = f.value * f.value;
    let l2 = lat.value * lat.value;
    // an invalid term (F_latt = 0) adds exactly 0 below
    let valid = counted(lat.value, sw);
    // ∂L/∂F_cell
    let g_f = g_term * 2.0 * f.value * l2;
    if f.is_default {
        acc[G_DEFAULT_F] += g_f;
    } else {
        acc[G_GRID_BOUND] += g_f.abs() * f.weight_sum;
    }
    let g_l = g_term * 2.0 * lat.value * f2;
    acc[G_N_CELLS] += g_l * lat.dna;
    acc[G_N_CELLS + 1] += g_l * lat.dnb;
    acc[G_N_CELLS + 2] += g_l * lat.dnc;
    if sw.gauss {
        let g_c = scaled(lat.c, g_l * lat.kappa);
        add3(acc, G_RECIP, scaled(g_c, lat.frac.x));
        add3(acc, G_RECIP + 3, scaled(g_c, lat.frac.y));
        add3(acc, G_RECIP + 6, scaled(g_c, lat.frac.z));
    }
    let gh = g_l * lat.dh + g_f * f.dh;
    let gk = g_l * lat.dk + g_f * f.dk;
    let gl = g_l * lat.dl + g_f * f.dl;
    // h_v = d·(a_v/λ) − offset_v with offset_v = (a_v/λ)·i: the a/λ slots take (d − i)·∂L/∂h,
    // small near the direct beam where d·∂L/∂h and i·∂L/∂h would cancel in the sums
    // (`vjp::orientation_gradients` adds i·Σ ∂L/∂h back in f64)
    if rows {
        let q = sum3(d, scaled(incident, -1.0));
        add3(orient, slot, scaled(q, gh));
        add3(orient, slot + 3, scaled(q, gk));
        add3(orient, slot + 6, scaled(q, gl));
        orient[slot + OFFSET] -= gh;
        orient[slot + OFFSET + 1] -= gk;
        orient[slot + OFFSET + 2] -= gl;
    }
    let axis_a = load3(batch_rows, slot);
    let axis_b = load3(batch_rows, slot + 3);
    let axis_c = load3(batch_rows, slot + 6);
    TermAdjoint {
        value: f2 * l2,
        valid,
        g_d: Vec3 {
            x: gh * axis_a.x + gk * axis_b.x + gl * axis_c.x,
            y: gh * axis_a.y + gk * axis_b.y + gl * axis_c.y,
            z: gh * axis_a.z + gk * axis_b.z + gl * axis_c.z,
        },
    }
}

/// The cached factors' adjoints, once the pixel's running sum `total` is known;
/// `weight` = ∂L/∂I of the pixel, `scale` = r_e²·fluence/steps.
// a compile-time switch stays its own `if`: joined with a runtime condition by `&&`, the
// kernel would carry the switched-off branch as code
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
#[cube]
fn factor_adjoints(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    slow: i32,
    fast: i32,
    factors: PixelFactors,
    total: f32,
    weight: f32,
    scale: f32,
    acc: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    let os = counts[OVERSAMPLE];
    let layers = counts[LAYERS];
    let omega = factors.omega;
    let polar = factors.polar;
    let capture = factors.capture;
    acc[G_SCALE] += weight * total * omega * polar * capture;
    let g = weight * scale * total;
    if !sw.oversample_omega {
        solid_angle(
            params,
            acc,
            ray(params, slow, fast, os, 0, 0, 0, sw.curved),
            g * polar * capture,
            sw,
        );
    }
    if sw.sensor && !sw.oversample_thick {
        let last = ray(params, slow, fast, os, layers - 1, 0, 0, sw.curved);
        capture_fraction(params, acc, last, (layers - 1) as f32, g * omega * polar, sw);
    }
    if comptime!(sw.polar && !sw.oversample_polar) {
        if factors.polar_found {
            let at = ray(
                params,
                slow,
                fast,
                os,
                factors.polar_t,
                factors.polar_s,
                factors.polar_f,
                sw.curved,
            );
            let row = factors.polar_source as usize * SOURCE_WIDTH;
            kahn_factor(sources, params, acc, row, at, g * omega * capture, sw);
        }
    }
}

/// The workgroup's sum of `values[0..columns]` over its threads, in thread order, into (or,
/// with `add`, onto) `output[at..at + min(columns, limit)]`. Every thread of the workgroup
/// calls it (it synchronises them).
#[cube]
fn reduce_columns(
    values: &Array<f32>,
    #[comptime] columns: usize,
    shared: &mut SharedMemory<f32>,
    output: &mut Array<f32>,
    at: usize,
    limit: usize,
    unit: usize,
    add: bool,
) {
    #[unroll]
    for j in 0..columns {
        shared[unit * columns + j] = values[j];
    }
    sync_cube();
    if unit < columns && unit < limit {
        let mut s = 0.0;
        for t in 0..WORKGROUP {
            s += shared[t * columns + unit];
        }
        if add {
            output[at + unit] += s;
        } else {
            output[at + unit] = s;
        }
    }
    sync_cube();
}

/// `values[0..columns]` = 0.
#[cube]
fn zero(values: &mut Array<f32>, #[comptime] columns: usize) {
    #[unroll]
    for j in 0..columns {
        values[j] = 0.0;
    }
}

/// Σ_j `values[j]`·`tangents[at + j]` over the `columns` values.
#[cube]
fn contract(
    values: &Array<f32>,
    #[comptime] from: usize,
    #[comptime] columns: usize,
    tangents: &Array<f32>,
    at: usize,
) -> f32 {
    let mut s = 0.0;
    #[unroll]
    for j in 0..columns {
        s += values[from + j] * tangents[at + j];
    }
    s
}

/// Where a pixel's adjoint goes: `n` derivative images of `pixels` (at `pixel`), or the
/// workgroup's row `row` of partials (thread `unit`), each `width` = G_GLOBALS + 12·`per_shot`
/// columns wide.
#[derive(CubeType, Clone, Copy)]
pub struct Outlet {
    pub n: usize,
    pub width: usize,
    pub per_shot: usize,
    pub pixel: usize,
    pub pixels: usize,
    pub row: usize,
    pub unit: usize,
}

/// The thread's orientation accumulators `orient` of batch `batch`: contracted with the
/// tangents `input` into the pixel's derivative images (`derivatives`), else summed over the
/// workgroup into its partials (added to what is there with `add`). Every thread of the
/// workgroup calls it.
#[allow(clippy::too_many_arguments)]
#[cube]
fn emit_rows(
    orient: &Array<f32>,
    batch: usize,
    add: bool,
    input: &Array<f32>,
    output: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    to: Outlet,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    let batch_rows = sw.orientation_batch;
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let column = G_GLOBALS + batch * batch_columns;
    if derivatives {
        let rows = min(to.per_shot - batch * batch_rows, batch_rows) * ORIENTATION_WIDTH;
        for k in 0..to.n {
            let mut s = 0.0;
            #[unroll]
            for m in 0..batch_rows {
                if m * ORIENTATION_WIDTH < rows {
                    s += contract(
                        orient,
                        m * ORIENTATION_WIDTH,
                        ORIENTATION_WIDTH,
                        input,
                        k * to.width + column + m * ORIENTATION_WIDTH,
                    );
                }
            }
            output[k * to.pixels + to.pixel] += s;
        }
    } else {
        reduce_columns(
            orient,
            batch_columns,
            shared,
            output,
            to.row + column,
            to.width - column,
            to.unit,
            add,
        );
    }
}

/// Shared memory the pass needs: one row of batch columns per thread for the reduction.
fn shared_len(derivatives: bool, batch_columns: usize) -> usize {
    if derivatives {
        1
    } else {
        WORKGROUP * batch_columns.max(G_GLOBALS)
    }
}

/// One pixel's adjoint (x = fast, y = slow, one shot), 64 invocations per workgroup along
/// fast, then either the workgroup's reduction ([`pixel_vjp`]: `input` = weights, `output` =
/// partials) or the contraction with tangents ([`pixel_derivatives`]: `input` = tangents,
/// `output` = derivative images), chosen at compile time.
#[allow(clippy::too_many_arguments)]
#[cube]
fn pixel_adjoint(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    input: &Array<f32>,
    output: &mut Array<f32>,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    let fpixels = counts[FPIXELS] as usize;
    let pixels = fpixels * counts[SPIXELS] as usize;
    let fast_at = ABSOLUTE_POS_X as usize;
    let pixel = ABSOLUTE_POS_Y as usize * fpixels + fast_at;
    let slow = ABSOLUTE_POS_Y as i32;
    let fast = fast_at as i32;
    let inside = fast_at < fpixels && pixel < pixels;
    let rendered = inside && is_rendered(counts, mask, slow, fast, sw.masked);
    let per_shot = counts[PER_SHOT] as usize;
    let width = G_GLOBALS + per_shot * ORIENTATION_WIDTH;
    let mut n = 0usize;
    let mut weight = 1.0;
    if derivatives {
        n = input.len() / width;
        if inside {
            for k in 0..n {
                output[k * pixels + pixel] = 0.0;
            }
        }
        if !rendered {
            terminate!();
        }
    } else {
        weight = 0.0;
        if rendered {
            weight = input[pixel];
        }
    }
    let active = rendered && weight != 0.0;
    let row = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) as usize * width;
    let unit = UNIT_POS_X as usize;
    let scale = scales[0];
    let batch_rows = sw.orientation_batch;
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let mut shared = SharedMemory::<f32>::new(comptime!(shared_len(derivatives, batch_columns)));
    let mut acc = Array::<f32>::new(G_GLOBALS);
    zero(&mut acc, G_GLOBALS);
    let mut orient = Array::<f32>::new(batch_columns);
    let mut batch_data = Array::<f32>::new(comptime!(sw.orientation_batch * BATCH_ROW));
    let factors = pixel_factors(params, counts, sources, slow, fast, sw);
    let g_term = term_cotangent(weight, scale, factors);
    let nearest_from = first_nearest_term(params, counts, sources, orientations, pixel as i32, slow, fast, sw);
    // ∂I/∂I_bg: the running sum starts at I_bg (the `-oversample_*` products scale it after)
    acc[G_I_BG] = g_term;
    let mut total = params[I_BG];
    let samples = counts[LAYERS] * counts[OVERSAMPLE] * counts[OVERSAMPLE];
    let batches = per_shot.div_ceil(batch_rows);
    let outlet = Outlet {
        n,
        width,
        per_shot,
        pixel,
        pixels,
        row,
        unit,
    };
    if sw.rows_reversed {
        // the products over several batches: the rest in forward mode over C's order, then
        // the orientation rows in reverse mode, C's order backwards
        if active {
            total = batch_terms(
                params,
                counts,
                sources,
                orientations,
                hkl,
                0,
                samples,
                0,
                batches,
                slow,
                fast,
                g_term,
                total,
                nearest_from,
                &mut acc,
                &mut orient,
                &mut batch_data,
                false,
                false,
                sw,
            );
        }
        let mut block = Array::<f32>::new(G_GLOBALS);
        // ∂I/∂running after the terms done so far: the product of the later terms' factors
        let mut later = g_term;
        for i in 0..samples {
            let q = samples - 1 - i;
            for j in 0..batches {
                let batch = batches - 1 - j;
                zero(&mut orient, batch_columns);
                if active {
                    zero(&mut block, G_GLOBALS);
                    // block[G_I_BG] becomes the block's ∂running/∂running before it
                    block[G_I_BG] = 1.0;
                    batch_terms(
                        params,
                        counts,
                        sources,
                        orientations,
                        hkl,
                        q,
                        q + 1,
                        batch,
                        batch + 1,
                        slow,
                        fast,
                        later,
                        0.0,
                        nearest_from,
                        &mut block,
                        &mut orient,
                        &mut batch_data,
                        false,
                        true,
                        sw,
                    );
                    later *= block[G_I_BG];
                }
                emit_rows(
                    &orient,
                    batch,
                    i > 0,
                    input,
                    output,
                    &mut shared,
                    outlet,
                    derivatives,
                    sw,
                );
            }
        }
    } else {
        let per_source = per_shot / counts[SOURCES] as usize;
        for batch in 0..batches {
            zero(&mut orient, batch_columns);
            load_batch(orientations, sources, per_shot, per_source, batch, &mut batch_data, sw);
            if active {
                total = batch_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    0,
                    samples,
                    batch,
                    batch + 1,
                    slow,
                    fast,
                    g_term,
                    total,
                    nearest_from,
                    &mut acc,
                    &mut orient,
                    &mut batch_data,
                    true,
                    true,
                    sw,
                );
            }
            emit_rows(
                &orient,
                batch,
                false,
                input,
                output,
                &mut shared,
                outlet,
                derivatives,
                sw,
            );
        }
    }
    if active {
        factor_adjoints(
            params, counts, sources, slow, fast, factors, total, weight, scale, &mut acc, sw,
        );
    }
    if derivatives {
        for k in 0..n {
            output[k * pixels + pixel] += contract(&acc, 0usize, G_GLOBALS, input, k * width);
        }
    } else {
        reduce_columns(&acc, G_GLOBALS, &mut shared, output, row, G_GLOBALS, unit, false);
    }
}

/// The pixels of [`image_rows_vjp`]'s invocation across its orientation batches: the scale
/// r_e²·fluence/steps, then one entry per image row: ∂L/∂I of the pixel (0 where it is not
/// rendered or has weight 0), its terms' cotangent w·scale·Ω·P·C, and its running sum so far.
#[derive(CubeType)]
struct RowPixels {
    scale: f32,
    weight: Array<f32>,
    g_term: Array<f32>,
    total: Array<f32>,
}

/// The image row, column and index of image row `r` of the invocation, `None` (slow = −1)
/// where it lies outside the image or is not rendered.
#[derive(CubeType, Clone, Copy)]
struct RowPixel {
    slow: i32,
    fast: i32,
    pixel: usize,
}

#[cube]
fn row_pixel(counts: &Array<i32>, mask: &Array<f32>, r: usize, #[comptime] sw: Switches) -> RowPixel {
    let fpixels = counts[FPIXELS] as usize;
    let spixels = counts[SPIXELS] as usize;
    let fast_at = ABSOLUTE_POS_X as usize;
    let slow_at = ABSOLUTE_POS_Y as usize * sw.image_rows + r;
    let mut out = RowPixel {
        slow: -1,
        fast: fast_at as i32,
        pixel: slow_at * fpixels + fast_at,
    };
    if fast_at < fpixels && slow_at < spixels && is_rendered(counts, mask, slow_at as i32, fast_at as i32, sw.masked) {
        out.slow = slow_at as i32;
    }
    out
}

/// Before the batches: each pixel's weight, cotangent and running sum (I_bg), and I_bg's
/// adjoint.
#[allow(clippy::too_many_arguments)]
#[cube]
fn rows_start(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    rows: &mut RowPixels,
    acc: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    for r in 0..sw.image_rows {
        rows.weight[r] = 0.0;
        rows.g_term[r] = 0.0;
        rows.total[r] = 0.0;
        let at = row_pixel(counts, mask, r, sw);
        if at.slow >= 0 {
            let weight = weights[at.pixel];
            if weight != 0.0 {
                let factors = pixel_factors(params, counts, sources, at.slow, at.fast, sw);
                let g_term = term_cotangent(weight, rows.scale, factors);
                rows.weight[r] = weight;
                rows.g_term[r] = g_term;
                rows.total[r] = params[I_BG];
                acc[G_I_BG] += g_term;
            }
        }
    }
}

/// After the batches: the cached factors' adjoints of each pixel, from its whole running sum.
#[allow(clippy::too_many_arguments)]
#[cube]
fn rows_finish(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    mask: &Array<f32>,
    rows: &RowPixels,
    acc: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    for r in 0..sw.image_rows {
        if rows.weight[r] != 0.0 {
            let at = row_pixel(counts, mask, r, sw);
            let factors = pixel_factors(params, counts, sources, at.slow, at.fast, sw);
            factor_adjoints(
                params,
                counts,
                sources,
                at.slow,
                at.fast,
                factors,
                rows.total[r],
                rows.weight[r],
                rows.scale,
                acc,
                sw,
            );
        }
    }
}

/// The terms of orientation batch `batch` (its rows in `batch_rows`, [`load_batch`]) of the
/// pixel `at`, with cotangent `g_term` each, into `acc` and `orient`; the running sum after
/// them, from `running` before.
#[allow(clippy::too_many_arguments)]
#[cube]
fn pixel_terms(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    at: RowPixel,
    batch: usize,
    g_term: f32,
    running: f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) -> f32 {
    let samples = counts[LAYERS] * counts[OVERSAMPLE] * counts[OVERSAMPLE];
    let nearest_from = first_nearest_term(
        params,
        counts,
        sources,
        orientations,
        at.pixel as i32,
        at.slow,
        at.fast,
        sw,
    );
    batch_terms(
        params,
        counts,
        sources,
        orientations,
        hkl,
        0,
        samples,
        batch,
        batch + 1,
        at.slow,
        at.fast,
        g_term,
        running,
        nearest_from,
        acc,
        orient,
        batch_rows,
        true,
        true,
        sw,
    )
}

/// The one-batch case of [`image_rows_vjp`]: each pixel's cached factors, its terms and the
/// factors' adjoints in one pass (the factors evaluated once).
#[allow(clippy::too_many_arguments)]
#[cube]
fn rows_one_batch(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    scale: f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    for r in 0..sw.image_rows {
        let at = row_pixel(counts, mask, r, sw);
        if at.slow >= 0 {
            let weight = weights[at.pixel];
            if weight != 0.0 {
                let factors = pixel_factors(params, counts, sources, at.slow, at.fast, sw);
                let g_term = term_cotangent(weight, scale, factors);
                acc[G_I_BG] += g_term;
                let total = pixel_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    at,
                    0,
                    g_term,
                    params[I_BG],
                    acc,
                    orient,
                    batch_rows,
                    sw,
                );
                factor_adjoints(
                    params, counts, sources, at.slow, at.fast, factors, total, weight, scale, acc, sw,
                );
            }
        }
    }
}

/// Batch `batch` of the image rows of [`image_rows_vjp`]'s invocation: every pixel's terms
/// of the batch into `acc` and `orient` (and its running sum into `rows`), then the
/// workgroup's sum of `orient` into its columns of `partials`. Every thread of the workgroup
/// calls it.
#[allow(clippy::too_many_arguments)]
#[cube]
fn image_rows_batch(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    partials: &mut Array<f32>,
    batch: usize,
    per_source: usize,
    rows: &mut RowPixels,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_data: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    outlet: Outlet,
    #[comptime] sw: Switches,
) {
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    zero(orient, batch_columns);
    load_batch(
        orientations,
        sources,
        outlet.per_shot,
        per_source,
        batch,
        batch_data,
        sw,
    );
    if comptime!(sw.one_batch) {
        rows_one_batch(
            params,
            counts,
            sources,
            orientations,
            hkl,
            mask,
            weights,
            rows.scale,
            acc,
            orient,
            batch_data,
            sw,
        );
    } else {
        for r in 0..sw.image_rows {
            if rows.weight[r] != 0.0 {
                let at = row_pixel(counts, mask, r, sw);
                let g_term = rows.g_term[r];
                let running = rows.total[r];
                rows.total[r] = pixel_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    at,
                    batch,
                    g_term,
                    running,
                    acc,
                    orient,
                    batch_data,
                    sw,
                );
            }
        }
    }
    emit_rows(orient, batch, false, weights, partials, shared, outlet, false, sw);
}

/// [`pixel_vjp`] where each invocation takes `sw.image_rows` image rows (x = fast, y = a block
/// of rows; `Switches::image_rows`): every pixel of the thread adds into the same
/// accumulators, and one workgroup sum serves them all. Each pixel's cached factors are
/// evaluated before the orientation batches and their adjoints after them.
#[allow(clippy::too_many_arguments)]
#[cube]
fn image_rows_vjp(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    partials: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    let per_shot = counts[PER_SHOT] as usize;
    let width = G_GLOBALS + per_shot * ORIENTATION_WIDTH;
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let mut shared = SharedMemory::<f32>::new(comptime!(shared_len(false, batch_columns)));
    let mut acc = Array::<f32>::new(G_GLOBALS);
    zero(&mut acc, G_GLOBALS);
    let mut orient = Array::<f32>::new(batch_columns);
    let mut batch_data = Array::<f32>::new(comptime!(sw.orientation_batch * BATCH_ROW));
    let mut rows = RowPixels {
        scale: scales[0],
        weight: Array::<f32>::new(sw.image_rows),
        g_term: Array::<f32>::new(sw.image_rows),
        total: Array::<f32>::new(sw.image_rows),
    };
    let per_source = per_shot / counts[SOURCES] as usize;
    let outlet = Outlet {
        n: 0,
        width,
        per_shot,
        pixel: 0,
        pixels: 0,
        row: (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) as usize * width,
        unit: UNIT_POS_X as usize,
    };
    if comptime!(sw.one_batch) {
        image_rows_batch(
            params,
            counts,
            sources,
            orientations,
            hkl,
            mask,
            weights,
            partials,
            0,
            per_source,
            &mut rows,
            &mut acc,
            &mut orient,
            &mut batch_data,
            &mut shared,
            outlet,
            sw,
        );
    } else {
        rows_start(params, counts, sources, mask, weights, &mut rows, &mut acc, sw);
        for batch in 0..per_shot.div_ceil(sw.orientation_batch) {
            image_rows_batch(
                params,
                counts,
                sources,
                orientations,
                hkl,
                mask,
                weights,
                partials,
                batch,
                per_source,
                &mut rows,
                &mut acc,
                &mut orient,
                &mut batch_data,
                &mut shared,
                outlet,
                sw,
            );
        }
        rows_finish(params, counts, sources, mask, &rows, &mut acc, sw);
    }
    reduce_columns(
        &acc,
        G_GLOBALS,
        &mut shared,
        partials,
        outlet.row,
        G_GLOBALS,
        outlet.unit,
        false,
    );
}

/// One invocation per `sw.image_rows` image pixels (x = fast, y = the block of slow rows, one
/// shot), 64 per workgroup along fast: the workgroup's Σ_p w_p·∂I_p/∂z into its row of
/// `partials` `[workgroups,
/// G_GLOBALS + 12·orientations]` (the layout's `G_*` slots, then a/λ, b/λ, c/λ and the
/// offsets of each orientation row). `weights` `[spixels·fpixels]` is ∂L/∂I; pixels outside
/// the ROI, masked or of weight 0 add nothing. The other inputs are the render's
/// ([`super::pixel::render_pixels`]).
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked)]
pub fn pixel_vjp(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    partials: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    // a thread's own copies ([`copy_f32`])
    let mut p = Array::<f32>::new(PARAMS);
    copy_f32(params, &mut p, PARAMS);
    let mut c = Array::<i32>::new(COUNTS);
    copy_i32(counts, &mut c, COUNTS);
    let mut source = Array::<f32>::new(comptime!(forward::still_registers(sw, SOURCE_WIDTH)));
    if comptime!(sw.rows_in_registers) {
        copy_f32(sources, &mut source, SOURCE_WIDTH);
    }
    if comptime!(sw.image_rows > 1 && sw.rows_in_registers) {
        image_rows_vjp(&p, &c, &source, orientations, scales, hkl, mask, weights, partials, sw);
    } else if comptime!(sw.image_rows > 1) {
        image_rows_vjp(&p, &c, sources, orientations, scales, hkl, mask, weights, partials, sw);
    } else {
        pixel_adjoint(
            &p,
            &c,
            sources,
            orientations,
            scales,
            hkl,
            mask,
            weights,
            partials,
            false,
            sw,
        );
    }
}

/// One invocation per image pixel (x = fast, y = slow, one shot): the derivative images
/// `derivatives[k·P + pixel]` = dI_p/dθ_k = Σ_z ∂I_p/∂z·t_k[z] for the tangents `tangents`
/// `[K, width]` (t_k = ∂z/∂θ_k in the layout of [`pixel_vjp`]'s rows), 0 outside the ROI and
/// where masked: the adjoint of each pixel with weight 1, contracted with the tangents where
/// [`pixel_vjp`] reduces over the workgroup (forward mode's result, one launch).
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked)]
pub fn pixel_derivatives(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    tangents: &Array<f32>,
    derivatives: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    let mut p = Array::<f32>::new(PARAMS);
    copy_f32(params, &mut p, PARAMS);
    let mut c = Array::<i32>::new(COUNTS);
    copy_i32(counts, &mut c, COUNTS);
    pixel_adjoint(
        &p,
        &c,
        sources,
        orientations,
        scales,
        hkl,
        mask,
        tangents,
        derivatives,
        true,
        sw,
    );
}

/// `sums[j]` = Σ_b `partials[b·width + j]`, b in order (width = `sums`' length): the second
/// launch of the vector–Jacobian product.
#[cube(launch_unchecked)]
pub fn sum_partials(partials: &Array<f32>, sums: &mut Array<f32>) {
    let j = ABSOLUTE_POS;
    let width = sums.len();
    if j < width {
        let rows = partials.len() / width;
        let mut s = 0.0;
        for b in 0..rows {
            s += partials[b * width + j];
        }
        sums[j] = s;
    }
}
