//! Sines and cosines of tensors, accurate in f32 on any device.
//!
//! WGSL promises `sin`/`cos` only to 2⁻¹¹ absolute and only on [−π, π], and NVIDIA's drivers
//! evaluate them with fast approximations whose relative error is large for small arguments
//! (measured on an H200: the lattice factor's sin(Nx)/sin x gave ∞ at the Bragg nodes and
//! gradients of the wrong sign). So in f32 these functions never call the platform's sine:
//! the argument, in half-turns t (x = π·t), is reduced exactly (t − 2·floor(t/2 + ½) ∈
//! [−1, 1]), folded onto [−½, ½], and an odd Taylor polynomial to x¹³ evaluated (truncation
//! below 7e-10, relative accuracy kept down to t → 0), as the GPU kernel's `sin_pi` does.
//! In f64 (the CPU engine) they are the platform's `sin`/`cos`, exact to the last bits C's
//! libm gives.
//!
//! Every step is a differentiable tensor operation (the floor's derivative is 0), so these
//! serve the autodiff graphs too.

use super::series::SIN_TAYLOR;
use burn::tensor::{backend::Backend, DType, Tensor};
use std::f64::consts::PI;

/// Whether `t` is evaluated with the platform's functions (f64) or the portable polynomial.
fn native<B: Backend, const D: usize>(t: &Tensor<B, D>) -> bool {
    t.dtype() == DType::F64
}

/// sin(π·t), t in half-turns.
pub fn sin_pi<B: Backend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, D> {
    if native(&t) {
        return (t * PI).sin();
    }
    let m = reduced(t);
    // sin(π·m) = sin(π·(±1 − m)): onto [−½, ½]
    let above = m.clone().greater_elem(0.5);
    let below = m.clone().lower_elem(-0.5);
    let folded = m
        .clone()
        .mask_where(above, m.clone().neg() + 1.0)
        .mask_where(below, m.neg() - 1.0);
    sin_pi_folded(folded)
}

/// t − 2·round(t/2) ∈ [−1, 1], exactly (the rounding's derivative is 0).
fn reduced<B: Backend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, D> {
    t.clone() - ((t * 0.5 + 0.5).detach().floor() * 2.0)
}

/// sin(π·t) for t in [−½, ½]: the odd polynomial to x¹³ ([`SIN_TAYLOR`]).
fn sin_pi_folded<B: Backend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, D> {
    let x = t * PI;
    let x2 = x.clone() * x.clone();
    let mut series = x2.clone() * SIN_TAYLOR[6] + SIN_TAYLOR[5];
    for c in [SIN_TAYLOR[4], SIN_TAYLOR[3], SIN_TAYLOR[2], SIN_TAYLOR[1]] {
        series = series * x2.clone() + c;
    }
    x.clone() * (series * x2 + SIN_TAYLOR[0])
}

/// cos(π·t), t in half-turns: sin(π·(½ − |m|)) with m = t − 2·round(t/2) ∈ [−1, 1].
pub fn cos_pi<B: Backend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, D> {
    if native(&t) {
        return (t * PI).cos();
    }
    // ½ − |m| is in [−½, ½] already
    sin_pi_folded(reduced(t).abs().neg() + 0.5)
}

/// sin x, x in radians.
pub fn sin<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    if native(&x) {
        return x.sin();
    }
    sin_pi(x / PI)
}

/// cos x, x in radians.
pub fn cos<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    if native(&x) {
        return x.cos();
    }
    cos_pi(x / PI)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::ndarray::NdArray;
    use burn::backend::Autodiff;
    use burn::tensor::TensorData;

    /// The tests' CPU backend: f64 by default (the device's default dtype is fixed once per
    /// process, and the other unit tests need f64), its tensors here created in f32 explicitly.
    type F32 = NdArray<f64>;

    fn values(t: Tensor<F32, 1>) -> Vec<f64> {
        t.into_data().convert::<f64>().to_vec().unwrap()
    }

    /// sin(π·t) of an f64 t, reduced exactly first (the reference for f32 arguments).
    fn reference_sin_pi(t: f64) -> f64 {
        let m = t - 2.0 * (t / 2.0 + 0.5).floor();
        let folded = if m > 0.5 {
            1.0 - m
        } else if m < -0.5 {
            -1.0 - m
        } else {
            m
        };
        (PI * folded).sin()
    }

    /// In f32 the polynomial matches the exactly reduced f64 sine to 1e-6 of the value, down
    /// to the smallest arguments, at the zeros and far from the origin.
    #[test]
    fn f32_sines_are_accurate_relative_to_their_value() {
        let device = crate::diff::testing::dev();
        let ts = [
            1e-30f32, -3e-12, 1e-7, 2.5e-4, 0.01, 0.1, 0.25, 0.4999, 0.5, 0.75, 0.999999, 1.0, 1.5, 3.3, -17.25,
            123.456, 1000.0001, -4095.7, 7.0,
        ];
        let t = Tensor::<F32, 1>::from_data(TensorData::from(ts), (&device, DType::F32));
        assert_eq!(t.dtype(), DType::F32);
        let (s, c) = (values(sin_pi(t.clone())), values(cos_pi(t)));
        for (k, &t) in ts.iter().enumerate() {
            let t = t as f64;
            let m = t - 2.0 * (t / 2.0 + 0.5).floor();
            let (es, ec) = (reference_sin_pi(t), reference_sin_pi(0.5 - m.abs()));
            assert!(
                (s[k] - es).abs() <= 1e-6 * es.abs() + 1e-38,
                "sin(π·{t}) = {} vs {es}",
                s[k]
            );
            assert!(
                (c[k] - ec).abs() <= 1e-6 * ec.abs() + 1e-38,
                "cos(π·{t}) = {} vs {ec}",
                c[k]
            );
        }
    }

    /// The polynomial path differentiates: d sin(π t)/dt = π cos(π t).
    #[test]
    fn f32_sine_gradient_is_pi_cosine() {
        let device = crate::diff::testing::dev();
        let t =
            Tensor::<Autodiff<F32>, 1>::from_data(TensorData::from([0.1f32, -0.7, 2.3, 1e-5]), (&device, DType::F32))
                .require_grad();
        assert_eq!(t.dtype(), DType::F32);
        let grads = sin_pi(t.clone()).sum().backward();
        let g: Vec<f64> = t.grad(&grads).unwrap().into_data().convert::<f64>().to_vec().unwrap();
        for (k, tv) in [0.1f32, -0.7, 2.3, 1e-5].iter().enumerate() {
            let want = PI * (PI * *tv as f64).cos();
            assert!((g[k] - want).abs() <= 1e-5 * want.abs(), "{tv}: {} vs {want}", g[k]);
        }
    }
}
