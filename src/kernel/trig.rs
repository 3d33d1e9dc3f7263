//! Trigonometry on arguments in half-turns, accurate in f32 on any shader compiler.
//!
//! WGSL promises `sin`/`cos` only to 2⁻¹¹ absolute and only on [−π, π], and NVIDIA's drivers
//! evaluate them with fast approximations whose relative error is large for small arguments.
//! The physics calls sines on arguments such as π·N·h with N·h in the hundreds, and divides
//! small sines by small sines at the nodes of the lattice factor. So the kernel never calls the
//! platform's sine: [`sin_pi`] reduces its argument exactly (t − 2·round(t/2) is exact in
//! floating point for every t) and evaluates an odd polynomial on [−π/2, π/2], which keeps a
//! relative error of a few ulp down to the smallest arguments.

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

/// sin x for |x| ≤ π/2: its Taylor polynomial to x¹³.
#[cube]
fn sin_series(x: f32) -> f32 {
    let x2 = x * x;
    let series = 1.0
        + x2 * (-1.0 / 6.0
            + x2 * (1.0 / 120.0
                + x2 * (-1.0 / 5040.0 + x2 * (1.0 / 362880.0 + x2 * (-1.0 / 39916800.0 + x2 * (1.0 / 6227020800.0))))));
    x * series
}

/// cos x for |x| ≤ π/2: its Taylor polynomial to x¹⁴ (truncation error below 1e-10).
#[cube]
fn cos_series(x: f32) -> f32 {
    let x2 = x * x;
    1.0 + x2
        * (-1.0 / 2.0
            + x2 * (1.0 / 24.0
                + x2 * (-1.0 / 720.0
                    + x2 * (1.0 / 40320.0
                        + x2 * (-1.0 / 3628800.0 + x2 * (1.0 / 479001600.0 + x2 * (-1.0 / 87178291200.0)))))))
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

/// sin(N·π·h)/sin(π·h), the one-dimensional lattice sum, on δ = h − round(h): for integer
/// N the sign it drops squares away in the intensity. N·δ is reduced by [`sin_pi`]; at a node
/// (|δ| < 1e-9) the value is its limit N.
#[cube]
pub fn sincg(h: f32, n: f32) -> f32 {
    let delta = h - (h + 0.5).floor();
    let mut value = n;
    if delta.abs() >= 1e-9 {
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
    let mut value = 1.0
        + x2 * (-1.0 / 10.0
            + x2 * (1.0 / 280.0 + x2 * (-1.0 / 15120.0 + x2 * (1.0 / 1330560.0 + x2 * (-1.0 / 172972800.0)))));
    if x >= 1.0 {
        value = 3.0 * (sin_pi(t) / x - cos_pi(t)) / x2;
    }
    value
}

#[cfg(test)]
mod tests {
    //! The reduced-argument functions against f64, on the wgpu device (llvmpipe without a
    //! GPU), for h ∈ [−10⁴, 10⁴].
    use super::*;
    use crate::kernel::testing::launch_unary;
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
            } else if which == 2 {
                output[i] = sincg(x, 37.0);
            } else if which == 4 {
                output[i] = sin_cos_pi(x).sin;
            } else if which == 5 {
                output[i] = sin_cos_pi(x).cos;
            } else {
                output[i] = sinc3(x);
            }
        }
    }

    /// Arguments spread over [−10⁴, 10⁴], dense near integers and half-integers (nodes and
    /// extrema), and tiny values: f32 values, so the f64 reference sees the same inputs.
    fn arguments() -> Vec<f32> {
        let mut h = Vec::new();
        let mut state = 12345u64;
        for _ in 0..20000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            h.push((u * 2e4 - 1e4) as f32);
        }
        for n in -50..=50 {
            for eps in [0.0, 1e-7, -1e-7, 1e-5, -3e-4, 0.01, 0.4999, 0.5, 0.5001] {
                h.push((n as f64 * 173.0 + eps) as f32);
                h.push((n as f64 + eps) as f32);
            }
        }
        h.extend([1e-30f32, -1e-20, 1e-12, 3e-8, 1e4, -1e4, 9999.5, -9999.5]);
        h
    }

    fn check(which: u32, reference: impl Fn(f64) -> f64, tolerance: impl Fn(f64) -> f64) {
        let h = arguments();
        let Some(got) = launch_unary(&h, |client, count, dim, input, output| {
            apply::launch::<WgpuRuntime>(client, count, dim, input, output, which)
        }) else {
            return;
        };
        let mut worst = (0.0f64, 0.0f32);
        for (&x, &g) in h.iter().zip(&got) {
            let want = reference(x as f64);
            let err = (g as f64 - want).abs();
            assert!(err <= tolerance(want), "function {which} at {x}: {g} vs {want}");
            if err > worst.0 {
                worst = (err, x);
            }
        }
        eprintln!("function {which}: worst abs error {:.3e} at {}", worst.0, worst.1);
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

    #[test]
    fn sincg_matches_f64_relative_to_n() {
        let n = 37.0;
        check(
            2,
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
            3,
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
}
