//! Lattice factor F_latt: the crystal's shape transform (physics reference §5.6).

use super::{rows_for_autodiff, with_partials};
use crate::base::series::{
    GAUSS_WIDTH, ROUND_SCALE, SINC3_SERIES_BELOW, SINC3_SERIES_BELOW_F32, SINC3_TAYLOR, SINCG_EPS, TOPHAT_R2,
};
use crate::base::trig::{self, cos_pi, sin_pi};
use crate::base::vec3::Vec3;
use crate::config::CrystalShape;
use burn::tensor::{backend::Backend, Tensor};
use std::f64::consts::PI;

/// δ put in at a node by [`sincg_n`] (half-turns) so that no quotient there is 0/0; the node's
/// value N and partials (1, 0) replace what it gives.
const NODE_T: f64 = 0.25;

/// Distance to the nearest integer, δ = x − ceil(x − ½) ∈ (−½, ½] (C's rounding, ties down;
/// the rules for δ are compared in [`crate::base::series`]).
///
/// The integer is a constant of the graph (detached): its gradient is 0 anyway.
pub fn fractional<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    x.clone() - (x.detach() - 0.5).ceil()
}

/// sin(Nπh)/sin(πh) `[R, C]`, evaluated on the fractional part δ = h − round(h) of h (not
/// the kernels' h − floor(h + ½): the two differ only at half-integers, where sincg is even in
/// δ, see [`crate::base::series`]).
///
/// For integer N, sin(Nπ(n+δ))/sin(π(n+δ)) = ±sin(Nπδ)/sin(πδ): the sign squares away in the
/// intensity, and the small argument keeps f32 accurate far from the origin. Within 1e-9 of a
/// node the value is the limit N, selected by a mask so the gradient there is the limit's (0)
/// instead of a difference of huge terms. (C returns N only at h = 0 exactly and ±N·(1+ε)
/// elsewhere.)
pub fn sincg<B: Backend>(h: Tensor<B, 2>, n: f64) -> Tensor<B, 2> {
    let delta = h.clone() - h.round();
    let at_node = delta.clone().abs().lower_elem(SINCG_EPS);
    let den = sin_pi(delta.clone()).mask_fill(at_node.clone(), 1.0);
    (sin_pi(delta * n) / den).mask_fill(at_node, n)
}

/// [`sincg`] with N a tensor `[1, 1]` or `[R, 1]` (real, differentiable): at a node the value
/// is N and ∂/∂N = 1; elsewhere ∂/∂N = x·cos(Nx)/sin x with x = πδ, and
/// ∂/∂h = π·(N·cos(Nx) − F·cos x)/sin x, 0 at a node (the limit's).
///
/// The value and both partial derivatives are evaluated on detached tensors and joined by
/// [`with_partials`]: the graph holds six cheap steps instead of the sine, the quotient and the
/// masks, whose backward steps (a cosine each, the quotient's five operations, zero-filled
/// tensors for the masks) cost more than a forward render. At a node the value is N and the
/// partials 1 and 0, put in by masks (a quotient of tiny sines there is 0/0 on a GPU).
pub fn sincg_n<B: Backend>(h: Tensor<B, 2>, n: Tensor<B, 2>) -> Tensor<B, 2> {
    let (h0, n0) = (h.clone().detach(), n.clone().detach());
    let delta = h0.clone() - h0.round();
    let at_node = delta.clone().abs().lower_elem(SINCG_EPS);
    // δ in half-turns (x = π·δ); any safe value at a node, whose results the masks replace
    let t = delta.mask_fill(at_node.clone(), NODE_T);
    let nt = t.clone() * n0.clone();
    let sin_x = sin_pi(t.clone());
    let value = (sin_pi(nt.clone()) / sin_x.clone()).mask_where(at_node.clone(), t.zeros_like() + n0.clone());
    if !B::ad_enabled(&h.device()) {
        return value;
    }
    let cos_nx = cos_pi(nt);
    let d_n = (t.clone() * PI * cos_nx.clone() / sin_x.clone()).mask_fill(at_node.clone(), 1.0);
    let d_h = ((cos_nx * n0 - value.clone() * cos_pi(t)) / sin_x * PI).mask_fill(at_node, 0.0);
    with_partials(value, [(h, d_h), (n, d_n)])
}

/// 3(sin x/x − cos x)/x², the transform of a sphere, with sinc3(0) = 1 (series near 0).
pub fn sinc3<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    let small = x.clone().abs().lower_elem(sinc3_series_below(&x));
    let x2 = x.clone().powi_scalar(2);
    let safe_x = x.mask_fill(small.clone(), 1.0);
    sinc3_of(safe_x.clone(), safe_x.powi_scalar(2), x2, small)
}

/// [`sinc3`] as a function of x² `[R, C]`: no square root near 0, so the gradient stays
/// finite at the origin of reciprocal space.
pub fn sinc3_squared<B: Backend>(x2: Tensor<B, 2>) -> Tensor<B, 2> {
    let below = sinc3_series_below(&x2);
    let small = x2.clone().lower_elem(below * below);
    let safe_x2 = x2.clone().mask_fill(small.clone(), 1.0);
    sinc3_of(safe_x2.clone().sqrt(), safe_x2, x2, small)
}

/// 3(sin x/x − cos x)/x²: the closed form of `safe_x` (and its square) where `small` is
/// false, the Taylor series in `x2` (to x¹⁰, error < 4e-11) where it is true. The closed form
/// subtracts two numbers near 1: in f32 it loses digits up to x ≈ 1, where the series takes
/// over, as in the GPU kernel ([`sinc3_series_below`]).
fn sinc3_of<B: Backend>(
    safe_x: Tensor<B, 2>,
    safe_x2: Tensor<B, 2>,
    x2: Tensor<B, 2>,
    small: Tensor<B, 2, burn::tensor::Bool>,
) -> Tensor<B, 2> {
    let mut series = x2.clone() * SINC3_TAYLOR[5] + SINC3_TAYLOR[4];
    for c in [SINC3_TAYLOR[3], SINC3_TAYLOR[2], SINC3_TAYLOR[1], SINC3_TAYLOR[0]] {
        series = series * x2.clone() + c;
    }
    let exact = (trig::sin(safe_x.clone()) / safe_x.clone() - trig::cos(safe_x)) * 3.0 / safe_x2;
    exact.mask_where(small, series)
}

/// |x| below which sinc3 takes its series: [`SINC3_SERIES_BELOW`] in f64,
/// [`SINC3_SERIES_BELOW_F32`] in f32.
fn sinc3_series_below<B: Backend>(x: &Tensor<B, 2>) -> f64 {
    if x.dtype() == burn::tensor::DType::F64 {
        SINC3_SERIES_BELOW
    } else {
        f64::from(SINC3_SERIES_BELOW_F32)
    }
}

/// Parameters of the lattice factor that do not depend on the sample point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatticeShape {
    pub shape: CrystalShape,
    /// Unit cells along a, b, c.
    pub n: [f64; 3],
    pub fudge: f64,
    /// Static reciprocal vectors (Å⁻¹; misset applied, not rotated by φ or mosaic), used by
    /// GAUSS and TOPHAT, as C.
    pub recip: [Vec3; 3],
}

/// Differentiable replacements for the host constants of [`LatticeShape`].
#[derive(Debug, Clone)]
pub struct LatticeTensors<B: Backend> {
    /// `[1, 3]` (or `[R, 3]`): Na, Nb, Nc as reals.
    pub n: Tensor<B, 2>,
    /// `[1, 9]` (or `[R, 9]`): a*, b*, c* (Å⁻¹) back to back, for GAUSS and TOPHAT.
    pub recip: Tensor<B, 2>,
}

/// Lattice factor F_latt `[R, C]` from fractional Miller indices h, k, l `[R, C]`, with the
/// shape's constants from `p`, or N and the reciprocal vectors from `t` when given (the
/// differentiable form).
pub fn lattice_factor<B: Backend>(
    hkl: &[Tensor<B, 2>; 3],
    p: &LatticeShape,
    t: Option<&LatticeTensors<B>>,
) -> Tensor<B, 2> {
    match t {
        None => lattice_factor_host(hkl, p),
        Some(t) => lattice_factor_tensor(hkl, p, t),
    }
}

fn lattice_factor_host<B: Backend>(hkl: &[Tensor<B, 2>; 3], p: &LatticeShape) -> Tensor<B, 2> {
    let [na, nb, nc] = p.n;
    let volume = na * nb * nc;
    match p.shape {
        CrystalShape::Square => {
            let mut f: Option<Tensor<B, 2>> = None;
            for (x, n) in hkl.iter().zip(p.n) {
                if n > 1.0 {
                    let s = sincg(x.clone(), n);
                    f = Some(match f {
                        Some(f) => f * s,
                        None => s,
                    });
                }
            }
            f.unwrap_or_else(|| hkl[0].ones_like())
        }
        CrystalShape::Round => {
            let mut r2 = hkl[0].zeros_like();
            for (x, n) in hkl.iter().zip(p.n) {
                r2 = r2 + fractional(x.clone()).powi_scalar(2) * (n * n);
            }
            sinc3((r2 * p.fudge).sqrt() * PI) * (volume * ROUND_SCALE)
        }
        CrystalShape::Gauss | CrystalShape::Tophat => {
            let d: Vec<Tensor<B, 2>> = hkl.iter().map(|x| fractional(x.clone())).collect();
            let mut r2 = hkl[0].zeros_like();
            for axis in 0..3 {
                let comp =
                    d[0].clone() * p.recip[0][axis] + d[1].clone() * p.recip[1][axis] + d[2].clone() * p.recip[2][axis];
                r2 = r2 + comp.powi_scalar(2);
            }
            let r2 = r2 * (volume * volume * p.fudge);
            if p.shape == CrystalShape::Gauss {
                (r2 / -GAUSS_WIDTH).exp() * volume
            } else {
                r2.lower_elem(TOPHAT_R2).float() * volume
            }
        }
    }
}

/// The lattice factor with N `[·, 3]` and the reciprocal vectors `[·, 9]` as tensors.
///
/// Their columns are taken once; a single row is then repeated to the R rows of h, k, l by
/// [`rows_for_autodiff`] (a slice of the `[1, ·]` row costs nothing, of an `[R, ·]` one a
/// strided copy per column).
fn lattice_factor_tensor<B: Backend>(hkl: &[Tensor<B, 2>; 3], p: &LatticeShape, t: &LatticeTensors<B>) -> Tensor<B, 2> {
    let r = hkl[0].dims()[0];
    let columns = |m: &Tensor<B, 2>, k: usize| -> Vec<Tensor<B, 2>> {
        let rows = m.dims()[0];
        (0..k)
            .map(|j| rows_for_autodiff(m.clone().slice([0..rows, j..j + 1]), r))
            .collect()
    };
    let n_cols = columns(&t.n, 3);
    let n = |a: usize| n_cols[a].clone();
    let volume = n(0) * n(1) * n(2);
    match p.shape {
        CrystalShape::Square => {
            sincg_n(hkl[0].clone(), n(0)) * sincg_n(hkl[1].clone(), n(1)) * sincg_n(hkl[2].clone(), n(2))
        }
        CrystalShape::Round => {
            let mut r2 = hkl[0].zeros_like();
            for (a, x) in hkl.iter().enumerate() {
                r2 = r2 + fractional(x.clone()).powi_scalar(2) * n(a).powi_scalar(2);
            }
            sinc3_squared(r2 * (p.fudge * PI * PI)) * (volume * ROUND_SCALE)
        }
        CrystalShape::Gauss | CrystalShape::Tophat => {
            let d: Vec<Tensor<B, 2>> = hkl.iter().map(|x| fractional(x.clone())).collect();
            let recip = columns(&t.recip, 9);
            let r = |v: usize, axis: usize| recip[3 * v + axis].clone();
            let mut r2 = hkl[0].zeros_like();
            for axis in 0..3 {
                let comp = d[0].clone() * r(0, axis) + d[1].clone() * r(1, axis) + d[2].clone() * r(2, axis);
                r2 = r2 + comp.powi_scalar(2);
            }
            let r2 = r2 * (volume.clone().powi_scalar(2) * p.fudge);
            if p.shape == CrystalShape::Gauss {
                (r2 / -GAUSS_WIDTH).exp() * volume
            } else {
                r2.lower_elem(TOPHAT_R2).float() * volume
            }
        }
    }
}
