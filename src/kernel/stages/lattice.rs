//! The lattice factor F_latt, the crystal's shape transform (physics reference §5.6; the tensor
//! stages' `physics::lattice`): sincg and sinc3 on reduced arguments, the four shapes, and
//! each with its partial derivatives for the adjoint kernels. The series and switch points
//! are [`crate::base::series`]'s.

use super::vectors::{dot, Vec3};
use crate::base::series::{
    GAUSS_WIDTH_F32, ROUND_SCALE_F32, SINC3_SERIES_BELOW_F32, SINC3_SERIES_BELOW_F32_SQUARED, SINC3_SLOPE_F32,
    SINC3_TAYLOR_F32, SINCG_DH_SERIES_BELOW_F32, SINCG_DH_TAYLOR_F32, SINCG_EPS_F32, TOPHAT_R2_F32,
};
use crate::kernel::layout::*;
use crate::kernel::trig::{cos_pi, sin_cos, sin_cos_pi, sin_pi, sin_series, PI_F32};
use cubecl::prelude::*;

// The series of [`crate::base::series`] as scalars: a kernel reads a `const` scalar, not an
// element of a `const` array. sinc3 = Σ_j SINC3_Uj·u^j (u = x²), d sinc3/du = Σ_j
// SINC3_DUj·u^(j−1); ∂sincg/∂h near a node: π·N(N²−1)·x·((3N²−7)·x²·SINCG_DH_X3 −
// SINCG_DH_X1).
const SINC3_U0: f32 = SINC3_TAYLOR_F32[0];
const SINC3_U1: f32 = SINC3_TAYLOR_F32[1];
const SINC3_U2: f32 = SINC3_TAYLOR_F32[2];
const SINC3_U3: f32 = SINC3_TAYLOR_F32[3];
const SINC3_U4: f32 = SINC3_TAYLOR_F32[4];
const SINC3_U5: f32 = SINC3_TAYLOR_F32[5];
const SINC3_DU1: f32 = SINC3_SLOPE_F32[1];
const SINC3_DU2: f32 = SINC3_SLOPE_F32[2];
const SINC3_DU3: f32 = SINC3_SLOPE_F32[3];
const SINC3_DU4: f32 = SINC3_SLOPE_F32[4];
const SINC3_DU5: f32 = SINC3_SLOPE_F32[5];
const SINCG_DH_X1: f32 = SINCG_DH_TAYLOR_F32[0];
const SINCG_DH_X3: f32 = SINCG_DH_TAYLOR_F32[1];

/// x − ceil(x − ½) ∈ (−½, ½].
#[cube]
pub(crate) fn fractional(x: f32) -> f32 {
    x - (x - 0.5).ceil()
}

/// sin(N·π·h)/sin(π·h), the one-dimensional lattice sum, on δ = h − floor(h + ½): for integer
/// N the sign it drops squares away in the intensity. N·δ is reduced by [`sin_pi`]; at a node
/// (|δ| below [`SINCG_EPS_F32`]) the value is its limit N.
#[cube]
pub fn sincg(h: f32, n: f32) -> f32 {
    let delta = h - (h + 0.5).floor();
    let mut value = n;
    if delta.abs() >= SINCG_EPS_F32 {
        // δ ∈ [−½, ½]: πδ needs no reduction
        value = sin_pi(n * delta) / sin_series(delta * PI_F32);
    }
    value
}

/// 3(sin x − x·cos x)/x³ with x = π·|t|, the transform of a sphere (t in half-turns).
///
/// Below x = 1 its Taylor series to x¹⁰ (error < 4e-11): the closed form loses digits there
/// in f32 (sin x/x − cos x ≈ x²/3 from two numbers near 1).
#[cube]
pub fn sinc3(t: f32) -> f32 {
    let t = t.abs();
    let x = t * PI_F32;
    let x2 = x * x;
    let mut value = SINC3_U0 + x2 * (SINC3_U1 + x2 * (SINC3_U2 + x2 * (SINC3_U3 + x2 * (SINC3_U4 + x2 * SINC3_U5))));
    if x >= SINC3_SERIES_BELOW_F32 {
        value = 3.0 * (sin_pi(t) / x - cos_pi(t)) / x2;
    }
    value
}

/// F_latt at (h, k, l) for the crystal shape chosen at compile time (physics reference §5.6).
#[cube]
pub(crate) fn lattice_factor(
    params: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    #[comptime] square: bool,
    #[comptime] round: bool,
    #[comptime] gauss: bool,
) -> f32 {
    let na = params[N_CELLS];
    let nb = params[N_CELLS + 1];
    let nc = params[N_CELLS + 2];
    let volume = na * nb * nc;
    let mut f = 1.0;
    if square {
        if na > 1.0 {
            f *= sincg(h, na);
        }
        if nb > 1.0 {
            f *= sincg(k, nb);
        }
        if nc > 1.0 {
            f *= sincg(l, nc);
        }
    } else if round {
        let dh = fractional(h) * na;
        let dk = fractional(k) * nb;
        let dl = fractional(l) * nc;
        let r2 = dh * dh + dk * dk + dl * dl;
        f = sinc3((r2 * params[FUDGE]).sqrt()) * volume * ROUND_SCALE_F32;
    } else {
        let dh = fractional(h);
        let dk = fractional(k);
        let dl = fractional(l);
        let mut r2 = 0.0;
        #[unroll]
        for axis in 0..3usize {
            let c = dh * params[RECIP + axis] + dk * params[RECIP + 3 + axis] + dl * params[RECIP + 6 + axis];
            r2 += c * c;
        }
        r2 *= volume * volume * params[FUDGE];
        if gauss {
            f = (-r2 / GAUSS_WIDTH_F32).exp() * volume;
        } else {
            f = 0.0;
            if r2 < TOPHAT_R2_F32 {
                f = volume;
            }
        }
    }
    f
}

/// sin(Nπh)/sin(πh) on δ = h − floor(h + ½) and its partials ∂/∂h, ∂/∂N.
#[derive(CubeType, Clone, Copy)]
pub struct SincgPartials {
    pub value: f32,
    pub dh: f32,
    pub dn: f32,
}

/// The adjoint of `trig::sincg`: value and partials, with x = πδ: value sin(Nx)/sin x,
/// ∂/∂N = x·cos(Nx)/sin x and ∂/∂h = π·(N·cos(Nx) − value·cos x)/sin x, as the tensor stage's
/// `sincg_n`. The value and ∂/∂N keep their relative accuracy down to x → 0 (both sines do);
/// ∂/∂h is a difference of two numbers near N there, so within |Nx| < 0.1
/// ([`SINCG_DH_SERIES_BELOW_F32`]) it is the Taylor
/// series π·N(N²−1)·x·((3N²−7)x²/90 − ⅓) (error below 1e-7 relative). At a node (x = 0) the
/// limits: N, ∂/∂N = 1, ∂/∂h = 0.
///
/// Selected, not branched: SIMD drivers such as llvmpipe evaluate both sides of a branch
/// anyway, and pay for the lane masks on top.
#[cube]
pub fn sincg_partials(h: f32, n: f32) -> SincgPartials {
    let delta = h - (h + 0.5).floor();
    let x = delta * PI_F32;
    // δ ∈ [−½, ½]: πδ needs no reduction
    let one = sin_cos(x);
    let all = sin_cos_pi(n * delta);
    let node = x == 0.0;
    let inv_s = 1.0 / select(node, 1.0, one.sin);
    let value = select(node, n, all.sin * inv_s);
    let x2 = x * x;
    let series = PI_F32 * n * (n * n - 1.0) * x * ((3.0 * n * n - 7.0) * x2 * SINCG_DH_X3 - SINCG_DH_X1);
    let closed = PI_F32 * (n * all.cos - value * one.cos) * inv_s;
    SincgPartials {
        value,
        dh: select(
            (n * x).abs() < SINCG_DH_SERIES_BELOW_F32 && x.abs() < SINCG_DH_SERIES_BELOW_F32,
            series,
            closed,
        ),
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
pub fn sinc3_partials(u: f32) -> Sinc3Partials {
    let mut out = Sinc3Partials {
        value: SINC3_U0 + u * (SINC3_U1 + u * (SINC3_U2 + u * (SINC3_U3 + u * (SINC3_U4 + u * SINC3_U5)))),
        du: SINC3_DU1 + u * (SINC3_DU2 + u * (SINC3_DU3 + u * (SINC3_DU4 + u * SINC3_DU5))),
    };
    if u >= SINC3_SERIES_BELOW_F32_SQUARED {
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

/// The adjoint of [`lattice_factor`], with N as reals (the tensor stage's
/// `lattice_factor_tensor`: SQUARE takes sincg of every axis, its value 1 for N = 1).
#[cube]
pub fn lattice_factor_partials(
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
        let a = sincg_partials(h, na);
        let b = sincg_partials(k, nb);
        let cc = sincg_partials(l, nc);
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
        let s = sinc3_partials((xh * xh + xk * xk + xl * xl) * fudge_pi2);
        let scale = na * nb * nc * ROUND_SCALE_F32;
        value = s.value * scale;
        // ∂u/∂δ_a = 2·π²·fudge·δ_a·N_a², ∂u/∂N_a = 2·π²·fudge·δ_a²·N_a
        let g = s.du * scale * 2.0 * fudge_pi2;
        dh = g * xh * na;
        dk = g * xk * nb;
        dl = g * xl * nc;
        let per = s.value * ROUND_SCALE_F32;
        dna = g * xh * frac.x + per * nb * nc;
        dnb = g * xk * frac.y + per * na * nc;
        dnc = g * xl * frac.z + per * na * nb;
    } else {
        let volume = na * nb * nc;
        let fudge = params[FUDGE];
        let r2 = dot(c, c) * volume * volume * fudge;
        if gauss {
            let e = (-r2 / GAUSS_WIDTH_F32).exp();
            value = e * volume;
            // ∂F/∂c = F·(−2V²·fudge/0.63)·c
            kappa = value * (-2.0 * volume * volume * fudge / GAUSS_WIDTH_F32);
            dh = kappa * (c.x * params[RECIP] + c.y * params[RECIP + 1] + c.z * params[RECIP + 2]);
            dk = kappa * (c.x * params[RECIP + 3] + c.y * params[RECIP + 4] + c.z * params[RECIP + 5]);
            dl = kappa * (c.x * params[RECIP + 6] + c.y * params[RECIP + 7] + c.z * params[RECIP + 8]);
            // ∂F/∂V = e·(1 − 2r²/0.63), ∂V/∂N_a = the product of the other two
            let dv = e * (1.0 - 2.0 * r2 / GAUSS_WIDTH_F32);
            dna = dv * nb * nc;
            dnb = dv * na * nc;
            dnc = dv * na * nb;
        } else if r2 < TOPHAT_R2_F32 {
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

#[cfg(test)]
mod tests {
    //! The lattice stage on the wgpu device (llvmpipe without a GPU) against independent f64
    //! references: sincg and sinc3 against their closed forms, the forward lattice factor
    //! against the tensor stage `physics::lattice::lattice_factor` (f64), and its partials
    //! against burn-autodiff of the tensor stage's differentiable form (f64).
    use super::*;
    use crate::config::CrystalShape;
    use crate::diff::testing::{dev, Ad, B};
    use crate::kernel::stages::vectors::scaled;
    use crate::kernel::testing::{arguments, check_values, launch_unary, launch_with_params};
    use crate::physics::lattice::{self as stage, LatticeShape, LatticeTensors};
    use burn::tensor::{Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;
    use std::f64::consts::PI;

    #[cube(launch)]
    fn apply(input: &Array<f32>, output: &mut Array<f32>, #[comptime] which: u32) {
        let i = ABSOLUTE_POS;
        if i < input.len() {
            let x = input[i];
            if which == 0 {
                output[i] = sincg(x, 37.0);
            } else {
                output[i] = sinc3(x);
            }
        }
    }

    fn check(which: u32, reference: impl Fn(f64) -> f64, tolerance: impl Fn(f64) -> f64) {
        let h = arguments();
        let Some(got) = launch_unary(&h, |client, count, dim, input, output| {
            apply::launch::<WgpuRuntime>(client, count, dim, input, output, which)
        }) else {
            return;
        };
        let name = ["sincg", "sinc3"][which as usize];
        check_values(name, &h, &got, reference, tolerance);
    }

    #[test]
    fn sincg_matches_f64_relative_to_n() {
        let n = 37.0;
        check(
            0,
            move |h| {
                let d = h - h.round();
                if d.abs() < 1e-9 {
                    n
                } else {
                    (n * PI * d).sin() / (PI * d).sin()
                }
            },
            // N·δ carries one f32 rounding of δ: sin'(Nπδ)·Nπ·ulp(h) at most, relative to N
            |_| 2e-5 * n,
        );
    }

    #[test]
    fn sinc3_matches_f64() {
        check(
            1,
            |t| {
                let x = PI * t.abs();
                if x < 1e-6 {
                    1.0
                } else {
                    3.0 * (x.sin() - x * x.cos()) / x.powi(3)
                }
            },
            |_| 2e-6,
        );
    }

    /// Numbers the test kernel writes a point: F_latt, ∂/∂(h, k, l), ∂/∂(Na, Nb, Nc), then
    /// ∂/∂(recip_v)[axis] at 3v + axis (a*, b*, c*).
    const PARTIALS: usize = 16;

    /// The lattice factor of `shape` (0 SQUARE, 1 ROUND, 2 GAUSS, 3 TOPHAT) at the points
    /// (h, k, l) of `hkl`: forward (`lattice_factor`, one number a point) or with its partials
    /// (`lattice_factor_partials`, [`PARTIALS`] numbers a point).
    #[cube(launch)]
    fn lattice_points(
        params: &Array<f32>,
        hkl: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] shape: u32,
        #[comptime] partials: bool,
    ) {
        let i = ABSOLUTE_POS;
        if i * 3 < hkl.len() {
            let h = hkl[3 * i];
            let k = hkl[3 * i + 1];
            let l = hkl[3 * i + 2];
            let square = comptime!(shape == 0);
            let round = comptime!(shape == 1);
            let gauss = comptime!(shape == 2);
            if partials {
                let p = lattice_factor_partials(params, h, k, l, square, round, gauss);
                let o = i * PARTIALS;
                output[o] = p.value;
                output[o + 1] = p.dh;
                output[o + 2] = p.dk;
                output[o + 3] = p.dl;
                output[o + 4] = p.dna;
                output[o + 5] = p.dnb;
                output[o + 6] = p.dnc;
                let g = scaled(p.c, p.kappa);
                let ga = scaled(g, p.frac.x);
                let gb = scaled(g, p.frac.y);
                let gc = scaled(g, p.frac.z);
                output[o + 7] = ga.x;
                output[o + 8] = ga.y;
                output[o + 9] = ga.z;
                output[o + 10] = gb.x;
                output[o + 11] = gb.y;
                output[o + 12] = gb.z;
                output[o + 13] = gc.x;
                output[o + 14] = gc.y;
                output[o + 15] = gc.z;
            } else {
                output[i] = lattice_factor(params, h, k, l, square, round, gauss);
            }
        }
    }

    /// One configuration of the lattice factor, in values f32 holds exactly (the kernel and
    /// the f64 reference see the same numbers).
    struct Case {
        shape: CrystalShape,
        n: [f32; 3],
        fudge: f32,
        recip: [[f32; 3]; 3],
    }

    impl Case {
        fn code(&self) -> u32 {
            match self.shape {
                CrystalShape::Square => 0,
                CrystalShape::Round => 1,
                CrystalShape::Gauss => 2,
                CrystalShape::Tophat => 3,
            }
        }

        /// The kernel's `params`: N, fudge and a*, b*, c* at their slots.
        fn params(&self) -> Vec<f32> {
            let mut p = vec![0.0f32; PARAMS];
            p[N_CELLS..N_CELLS + 3].copy_from_slice(&self.n);
            p[FUDGE] = self.fudge;
            for v in 0..3 {
                p[RECIP + 3 * v..RECIP + 3 * v + 3].copy_from_slice(&self.recip[v]);
            }
            p
        }

        fn shape(&self) -> LatticeShape {
            LatticeShape {
                shape: self.shape,
                n: self.n.map(f64::from),
                fudge: f64::from(self.fudge),
                recip: self.recip.map(|r| r.map(f64::from)),
            }
        }

        /// r² of GAUSS and TOPHAT at a point, in f64 (C's rounding of the fractional parts).
        fn r2(&self, p: [f32; 3]) -> f64 {
            let frac = p.map(|x| f64::from(x) - (f64::from(x) - 0.5).ceil());
            let c: Vec<f64> = (0..3)
                .map(|axis| (0..3).map(|v| frac[v] * f64::from(self.recip[v][axis])).sum())
                .collect();
            let volume: f64 = self.n.iter().map(|&n| f64::from(n)).product();
            c.iter().map(|x| x * x).sum::<f64>() * volume * volume * f64::from(self.fudge)
        }
    }

    /// Points (h, k, l) spread over [−6, 6]³, and points at and near nodes, where sincg's
    /// partials switch to their series; TOPHAT's points keep away from its edge (r² = 0.3969),
    /// where one rounding decides between V and 0. No half-integers (the rules for δ differ
    /// there, see `base::series`).
    fn points(case: &Case) -> Vec<[f32; 3]> {
        let mut state = 2024u64;
        let mut uniform = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut out = Vec::new();
        for _ in 0..300 {
            out.push([0, 1, 2].map(|_| (uniform() * 12.0 - 6.0) as f32));
        }
        let offsets = [
            0.0, 1e-7, -1e-6, 1e-5, -1e-4, 1e-3, -3e-3, 5e-3, -1e-2, 2e-2, -0.05, 0.1, 0.3,
        ];
        for (j, &node) in [0.0f64, 1.0, -3.0, 17.0, -250.0].iter().enumerate() {
            for (m, &e) in offsets.iter().enumerate() {
                let other = offsets[(m + j + 3) % offsets.len()];
                out.push([(node + e) as f32, (2.0 - other) as f32, (-1.0 + 0.5 * e) as f32]);
            }
        }
        if case.shape == CrystalShape::Tophat {
            out.retain(|&p| (case.r2(p) - 0.3969).abs() > 1e-3);
        }
        out
    }

    fn column(v: &[f32]) -> Tensor<B, 2> {
        let data: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        Tensor::from_data(TensorData::new(data, [v.len(), 1]), &dev())
    }

    /// F_latt at `points` by the tensor stage in f64 (its host form, as the render).
    fn reference_values(case: &Case, points: &[[f32; 3]]) -> Vec<f64> {
        let hkl = [0, 1, 2].map(|a| column(&points.iter().map(|p| p[a]).collect::<Vec<_>>()));
        let f = stage::lattice_factor::<B>(&hkl, &case.shape(), None);
        f.into_data().convert::<f64>().to_vec().unwrap()
    }

    /// F_latt and its [`PARTIALS`] at `points` by burn-autodiff of the tensor stage's
    /// differentiable form (N and a*, b*, c* as tensors, one row a point), in f64.
    fn reference_partials(case: &Case, points: &[[f32; 3]]) -> Vec<[f64; PARTIALS]> {
        let r = points.len();
        let leaf = |v: Vec<f64>, width: usize| {
            Tensor::<Ad, 2>::from_data(TensorData::new(v, [r, width]), &dev()).require_grad()
        };
        let hkl = [0, 1, 2].map(|a| leaf(points.iter().map(|p| f64::from(p[a])).collect(), 1));
        let n = leaf((0..r).flat_map(|_| case.n.map(f64::from)).collect(), 3);
        let recip = leaf(
            (0..r)
                .flat_map(|_| case.recip.iter().flatten().map(|&x| f64::from(x)).collect::<Vec<_>>())
                .collect(),
            9,
        );
        let t = LatticeTensors {
            n: n.clone(),
            recip: recip.clone(),
        };
        let f = stage::lattice_factor(&hkl, &case.shape(), Some(&t));
        let grads = f.clone().sum().backward();
        let read = |t: Option<Tensor<B, 2>>, width: usize| -> Vec<f64> {
            t.map_or(vec![0.0; r * width], |g| {
                g.into_data().convert::<f64>().to_vec().unwrap()
            })
        };
        let value = read(Some(f.inner()), 1);
        let d_hkl = hkl.map(|x| read(x.grad(&grads), 1));
        let d_n = read(n.grad(&grads), 3);
        let d_recip = read(recip.grad(&grads), 9);
        (0..r)
            .map(|i| {
                let mut row = [0.0; PARTIALS];
                row[0] = value[i];
                for a in 0..3 {
                    row[1 + a] = d_hkl[a][i];
                    row[4 + a] = d_n[3 * i + a];
                }
                row[7..].copy_from_slice(&d_recip[9 * i..9 * i + 9]);
                row
            })
            .collect()
    }

    /// `got[i][q]` against `want[i][q]` for every quantity q: within `tolerance` of the
    /// largest |want[·][q]| over the points (an f32 kernel against f64: its roundings scale
    /// with the function's size, not with the value at each point).
    fn compare(name: &str, got: &[Vec<f64>], want: &[Vec<f64>], tolerance: f64) {
        let quantities = want[0].len();
        for q in 0..quantities {
            let peak = want.iter().map(|w| w[q].abs()).fold(0.0, f64::max);
            let mut worst = (0.0f64, 0usize);
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                let err = (g[q] - w[q]).abs();
                assert!(
                    err <= tolerance * peak,
                    "{name}, quantity {q}, point {i}: {} vs {} (peak {peak:.3e})",
                    g[q],
                    w[q]
                );
                if err > worst.0 {
                    worst = (err, i);
                }
            }
            if peak > 0.0 {
                eprintln!(
                    "{name} quantity {q}: worst {:.2e} of the peak {peak:.3e}",
                    worst.0 / peak
                );
            }
        }
    }

    fn cases() -> Vec<Case> {
        let recip = [[0.031, 0.0042, -0.0017], [0.0, 0.027, 0.0051], [0.0013, -0.0022, 0.019]];
        let recip = recip.map(|r| r.map(|x: f64| x as f32));
        let case = |shape, n, fudge| Case { shape, n, fudge, recip };
        vec![
            case(CrystalShape::Square, [5.0, 7.0, 3.0], 1.0),
            case(CrystalShape::Square, [4.5, 6.25, 2.0], 1.0),
            case(CrystalShape::Round, [5.0, 7.0, 3.0], 1.0),
            case(CrystalShape::Round, [4.5, 6.25, 2.0], 0.75),
            case(CrystalShape::Gauss, [5.0, 7.0, 3.0], 1.0),
            case(CrystalShape::Gauss, [12.0, 9.0, 20.0], 0.5),
            case(CrystalShape::Tophat, [5.0, 7.0, 3.0], 1.0),
            case(CrystalShape::Tophat, [12.0, 9.0, 20.0], 0.5),
        ]
    }

    fn flat(points: &[[f32; 3]]) -> Vec<f32> {
        points.iter().flatten().copied().collect()
    }

    /// The kernel's forward lattice factor (the render's) against the tensor stage in f64.
    #[test]
    fn lattice_factor_matches_the_tensor_stage() {
        for case in cases() {
            let pts = points(&case);
            let (code, params) = (case.code(), case.params());
            let Some(got) = launch_with_params(&params, &flat(&pts), pts.len(), pts.len(), |c, count, dim, p, i, o| {
                lattice_points::launch::<WgpuRuntime>(c, count, dim, p, i, o, code, false)
            }) else {
                return;
            };
            let want = reference_values(&case, &pts);
            let got: Vec<Vec<f64>> = got.iter().map(|&g| vec![f64::from(g)]).collect();
            let want: Vec<Vec<f64>> = want.iter().map(|&w| vec![w]).collect();
            compare(&format!("{:?} N {:?}", case.shape, case.n), &got, &want, 1e-6);
        }
    }

    /// The kernel's lattice factor with partials (the adjoint kernels') against burn-autodiff
    /// of the tensor stage in f64: the value, ∂/∂(h, k, l), ∂/∂N and ∂/∂(a*, b*, c*).
    #[test]
    fn lattice_partials_match_autodiff_of_the_tensor_stage() {
        for case in cases() {
            let pts = points(&case);
            let (code, params) = (case.code(), case.params());
            let out = PARTIALS * pts.len();
            let Some(got) = launch_with_params(&params, &flat(&pts), out, pts.len(), |c, count, dim, p, i, o| {
                lattice_points::launch::<WgpuRuntime>(c, count, dim, p, i, o, code, true)
            }) else {
                return;
            };
            let want = reference_partials(&case, &pts);
            let got: Vec<Vec<f64>> = got
                .chunks(PARTIALS)
                .map(|g| g.iter().map(|&x| f64::from(x)).collect())
                .collect();
            let want: Vec<Vec<f64>> = want.iter().map(|w| w.to_vec()).collect();
            compare(&format!("{:?} N {:?} partials", case.shape, case.n), &got, &want, 4e-6);
        }
    }
}
