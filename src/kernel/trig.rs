//! Trigonometry on arguments in half-turns, accurate in f32 on any shader compiler.
//!
//! WGSL promises `sin`/`cos` only to 2⁻¹¹ absolute and only on [−π, π], and NVIDIA's drivers
//! evaluate them with fast approximations whose relative error is large for small arguments.
//! The physics calls sines on arguments such as π·N·h with N·h in the hundreds, and divides
//! small sines by small sines at the nodes of the lattice factor. So the kernel never calls the
//! platform's sine: [`sin_pi`] reduces its argument exactly (t − 2·round(t/2) is exact in
//! floating point for every t) and evaluates an odd polynomial on [−π/2, π/2], which keeps a
//! relative error of a few ulp down to the smallest arguments.

use crate::base::series::{COS_TAYLOR_F32, SIN_TAYLOR_F32};
use cubecl::prelude::*;

/// π in f32.
pub const PI_F32: f32 = std::f32::consts::PI;

/// sin(π·t) for any t (dimensionless half-turns).
///
/// t − 2·floor(t/2 + ½) lies in [−1, 1] and is computed exactly; it is folded onto [−½, ½]
/// with sin(π·m) = sin(π·(±1 − m)), and sin x for |x| ≤ π/2 is its Taylor polynomial to x¹³
/// (truncation error below 7e-10, relative accuracy kept down to x → 0).
#[cube]
pub fn sin_pi(t: f32) -> f32 {
    sin_series(fold(t).x)
}

/// An argument t (half-turns) folded onto x ∈ [−π/2, π/2] (rad): sin(π·t) = sin x and
/// cos(π·t) = `sign`·cos x.
#[derive(CubeType, Clone, Copy)]
pub struct Folded {
    pub x: f32,
    pub sign: f32,
}

#[cube]
fn fold(t: f32) -> Folded {
    let m = t - 2.0 * (t * 0.5 + 0.5).floor();
    let mut folded = m;
    let mut sign = 1.0;
    if m > 0.5 {
        folded = 1.0 - m;
        sign = -1.0;
    }
    if m < -0.5 {
        folded = -1.0 - m;
        sign = -1.0;
    }
    Folded {
        x: folded * PI_F32,
        sign,
    }
}

// The Taylor coefficients of [`crate::base::series`] as scalars: a kernel reads a `const`
// scalar, not an element of a `const` array.
const SIN_X1: f32 = SIN_TAYLOR_F32[0];
const SIN_X3: f32 = SIN_TAYLOR_F32[1];
const SIN_X5: f32 = SIN_TAYLOR_F32[2];
const SIN_X7: f32 = SIN_TAYLOR_F32[3];
const SIN_X9: f32 = SIN_TAYLOR_F32[4];
const SIN_X11: f32 = SIN_TAYLOR_F32[5];
const SIN_X13: f32 = SIN_TAYLOR_F32[6];
const COS_X0: f32 = COS_TAYLOR_F32[0];
const COS_X2: f32 = COS_TAYLOR_F32[1];
const COS_X4: f32 = COS_TAYLOR_F32[2];
const COS_X6: f32 = COS_TAYLOR_F32[3];
const COS_X8: f32 = COS_TAYLOR_F32[4];
const COS_X10: f32 = COS_TAYLOR_F32[5];
const COS_X12: f32 = COS_TAYLOR_F32[6];
const COS_X14: f32 = COS_TAYLOR_F32[7];

/// sin x for |x| ≤ π/2: its Taylor polynomial to x¹³.
#[cube]
pub(crate) fn sin_series(x: f32) -> f32 {
    let x2 = x * x;
    let series = SIN_X1 + x2 * (SIN_X3 + x2 * (SIN_X5 + x2 * (SIN_X7 + x2 * (SIN_X9 + x2 * (SIN_X11 + x2 * SIN_X13)))));
    x * series
}

/// cos x for |x| ≤ π/2: its Taylor polynomial to x¹⁴ (truncation error below 1e-10).
#[cube]
fn cos_series(x: f32) -> f32 {
    let x2 = x * x;
    COS_X0
        + x2 * (COS_X2 + x2 * (COS_X4 + x2 * (COS_X6 + x2 * (COS_X8 + x2 * (COS_X10 + x2 * (COS_X12 + x2 * COS_X14))))))
}

/// sin(π·t) and cos(π·t).
#[derive(CubeType, Clone, Copy)]
pub struct SinCos {
    pub sin: f32,
    pub cos: f32,
}

/// sin(π·t) and cos(π·t) from one reduction (half-turns), for the adjoints, which need both
/// of one argument. The sine as [`sin_pi`]; the cosine to a few ulp absolute (not relative
/// near its zeros, as [`cos_pi`]: the adjoints add it to terms of order one).
#[cube]
pub fn sin_cos_pi(t: f32) -> SinCos {
    let f = fold(t);
    SinCos {
        sin: sin_series(f.x),
        cos: f.sign * cos_series(f.x),
    }
}

/// sin x and cos x for |x| ≤ π/2 (rad), where no reduction is needed: as [`sin_cos_pi`].
#[cube]
pub fn sin_cos(x: f32) -> SinCos {
    SinCos {
        sin: sin_series(x),
        cos: cos_series(x),
    }
}

/// cos(π·t) = sin(π·(½ − |m|)) with m = t − 2·round(t/2) ∈ [−1, 1] (dimensionless
/// half-turns): ½ − |m| rounds only where the cosine is flat, unlike t + ½.
#[cube]
pub fn cos_pi(t: f32) -> f32 {
    let m = t - 2.0 * (t * 0.5 + 0.5).floor();
    sin_pi(0.5 - m.abs())
}

#[cfg(test)]
mod tests {
    //! The reduced-argument functions against f64, on the wgpu device (llvmpipe without a
    //! GPU), for h ∈ [−10⁴, 10⁴].
    use super::*;
    use crate::kernel::testing::{arguments, check_values, launch_unary};
    use cubecl::wgpu::WgpuRuntime;

    #[cube(launch)]
    fn apply(input: &Array<f32>, output: &mut Array<f32>, #[comptime] which: u32) {
        let i = ABSOLUTE_POS;
        if i < input.len() {
            let x = input[i];
            if which == 0 {
                output[i] = sin_pi(x);
            } else if which == 1 {
                output[i] = cos_pi(x);
            } else if which == 4 {
                output[i] = sin_cos_pi(x).sin;
            } else {
                output[i] = sin_cos_pi(x).cos;
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
        check_values(&format!("function {which}"), &h, &got, reference, tolerance);
    }

    use std::f64::consts::PI;

    #[test]
    fn sin_pi_matches_f64_to_a_few_ulp() {
        check(
            0,
            |t| (PI * (t - 2.0 * (t / 2.0).round())).sin(),
            |w| 3e-7 + 4e-7 * w.abs(),
        );
        check(
            1,
            |t| (PI * (t - 2.0 * (t / 2.0).round())).cos(),
            |w| 3e-7 + 4e-7 * w.abs(),
        );
    }

    #[test]
    fn sin_cos_pi_matches_f64_to_a_few_ulp() {
        check(
            4,
            |t| (PI * (t - 2.0 * (t / 2.0).round())).sin(),
            |w| 3e-7 + 4e-7 * w.abs(),
        );
        check(5, |t| (PI * (t - 2.0 * (t / 2.0).round())).cos(), |_| 4e-7);
    }
}
