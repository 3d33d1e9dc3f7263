//! The geometry, written once: backend-generic tensor functions from the continuous parameters
//! (cell, misset, detector distance, beam centre, rotations, 2θ, mosaic spread, φ) to
//! everything the physics stages consume, so that gradients flow through them.
//!
//! Each function maps explicit parameter tensors to geometry tensors. The host setup
//! ([`crate::experiment`]) decides the discrete choices (convention, pivot, which of `-cell`/`-mat`
//! was given, the random draws of the mosaic domains and of a random misset) and evaluates these
//! same functions in f64 ([`host`]) for the numbers C resolves and prints; [`crate::scene::params`]
//! evaluates them on parameter tensors for the differentiable scene. Constants are created on
//! the device and in the dtype of the parameters they meet. Tests compare the result with the
//! geometry C printed (`tests/integration/geometry.rs`) and with the reference's geometry
//! built from scalar rotations (`src/tests/diff_geometry.rs`, the unit tests here).
//!
//! Units: lengths in metres except where noted (the crystal cell in Å, reciprocal vectors in
//! Å⁻¹, as the host), angles in radians. Vectors are `[3]` tensors, rotation matrices `[3, 3]`
//! (row-major, acting on column vectors: `v' = M·v`), batches of them `[M, 3, 3]`.
//!
//! Only ops that burn-autodiff 0.21 differentiates are used: slice, cat, reshape, unsqueeze,
//! add/sub/mul/div, recip, abs, sqrt, sin, cos, sum and matmul.

pub mod crystal;
pub mod detector;
pub mod host;
pub mod mosaic;
pub mod orientation;
pub mod rigid_motion;
pub mod rotation;

use crate::base::vec3::Vec3;
use burn::tensor::{backend::Backend, Tensor, TensorData};

/// Element `i` of a 1-D tensor, as `[1]`.
pub(crate) fn elem<B: Backend>(t: &Tensor<B, 1>, i: usize) -> Tensor<B, 1> {
    t.clone().narrow(0, i, 1)
}

/// The three components of a `[3]` tensor, each `[1]`.
pub(crate) fn components<B: Backend>(v: &Tensor<B, 1>) -> [Tensor<B, 1>; 3] {
    [elem(v, 0), elem(v, 1), elem(v, 2)]
}

/// A constant `[n]` on the device and in the float dtype of `like`: constants follow the
/// parameters, so the host's f64 evaluation ([`host`]) stays f64 on a device whose default is
/// f32.
pub(crate) fn constant<B: Backend, const D: usize>(values: Vec<f64>, like: &Tensor<B, D>) -> Tensor<B, 1> {
    let n = values.len();
    Tensor::from_data(TensorData::new(values, [n]), (&like.device(), like.dtype()))
}

/// A constant `[3]` vector, placed as `like`.
pub(crate) fn const_vec3<B: Backend, const D: usize>(v: Vec3, like: &Tensor<B, D>) -> Tensor<B, 1> {
    constant(v.to_vec(), like)
}

/// A constant `[1]`, placed as `like`.
pub(crate) fn const_scalar<B: Backend, const D: usize>(x: f64, like: &Tensor<B, D>) -> Tensor<B, 1> {
    constant(vec![x], like)
}

/// Dot product of two `[3]` vectors → `[1]`.
pub(crate) fn dot3<B: Backend>(a: Tensor<B, 1>, b: Tensor<B, 1>) -> Tensor<B, 1> {
    (a * b).sum()
}

/// Cross product `a × b` of two `[3]` vectors → `[3]`.
pub(crate) fn cross3<B: Backend>(a: &Tensor<B, 1>, b: &Tensor<B, 1>) -> Tensor<B, 1> {
    let [a0, a1, a2] = components(a);
    let [b0, b1, b2] = components(b);
    Tensor::cat(
        vec![
            a1.clone() * b2.clone() - a2.clone() * b1.clone(),
            a2 * b0.clone() - a0.clone() * b2,
            a0 * b1 - a1 * b0,
        ],
        0,
    )
}

/// Euclidean length of a `[3]` vector → `[1]`.
pub(crate) fn norm3<B: Backend>(v: &Tensor<B, 1>) -> Tensor<B, 1> {
    dot3(v.clone(), v.clone()).sqrt()
}

/// `M·v` for a `[3, 3]` matrix and a `[3]` vector → `[3]`.
pub(crate) fn mat_vec3<B: Backend>(m: Tensor<B, 2>, v: Tensor<B, 1>) -> Tensor<B, 1> {
    m.matmul(v.reshape([3, 1])).reshape([3])
}

#[cfg(test)]
pub(crate) mod testing {
    //! Shared helpers of the `diff` unit tests: the f64 CPU backend (its default dtype fixed to
    //! F64 once per process), its autodiff wrapper, read-back and finite differences.

    use burn::backend::ndarray::{NdArray, NdArrayDevice};
    use burn::backend::Autodiff;
    use burn::tensor::{backend::Backend, DType, Tensor, TensorData};

    /// The reference backend.
    pub type B = NdArray<f64>;
    /// Its autodiff wrapper.
    pub type Ad = Autodiff<NdArray<f64>>;

    /// The CPU device, with its default float dtype set to F64 (once per process).
    pub fn dev() -> NdArrayDevice {
        static INIT: std::sync::Once = std::sync::Once::new();
        let d = NdArrayDevice::Cpu;
        INIT.call_once(|| burn::tensor::set_default_dtypes::<B>(&d, DType::F64, DType::I64).unwrap());
        d
    }

    /// A `[n]` tensor from host values.
    pub fn t1<K: Backend<Device = NdArrayDevice>>(v: &[f64]) -> Tensor<K, 1> {
        Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), &dev())
    }

    /// All values of a tensor, row-major.
    pub fn host<K: Backend, const D: usize>(t: Tensor<K, D>) -> Vec<f64> {
        t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
    }

    /// Largest |a − b| / max(|b|, floor) over two equally long slices.
    pub fn max_rel(a: &[f64], b: &[f64], floor: f64) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs() / y.abs().max(floor))
            .fold(0.0, f64::max)
    }

    /// Deterministic pseudo-random numbers in [lo, hi).
    pub fn uniform(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                lo + (hi - lo) * ((x >> 11) as f64 / (1u64 << 53) as f64)
            })
            .collect()
    }

    /// Central finite-difference gradient of `f` at `x`, step `rel·max(|xᵢ|, 1e-3·scale)`.
    pub fn fd_gradient(f: &dyn Fn(&[f64]) -> f64, x: &[f64], rel: f64, scale: f64) -> Vec<f64> {
        (0..x.len())
            .map(|i| {
                let h = rel * x[i].abs().max(1e-3 * scale);
                let mut xp = x.to_vec();
                let mut xm = x.to_vec();
                xp[i] += h;
                xm[i] -= h;
                (f(&xp) - f(&xm)) / (2.0 * h)
            })
            .collect()
    }

    /// Autodiff gradient of the scalar `f(x)` with respect to the `[n]` input `x`.
    pub fn ad_gradient(f: &dyn Fn(Tensor<Ad, 1>) -> Tensor<Ad, 1>, x: &[f64]) -> Vec<f64> {
        let xt = t1::<Ad>(x).require_grad();
        let grads = f(xt.clone()).backward();
        host(xt.grad(&grads).expect("the input is part of the graph"))
    }

    /// Largest |ad − fd| / max(|fd|, scale) (scale: a typical gradient magnitude).
    pub fn grad_err(ad: &[f64], fd: &[f64], scale: f64) -> f64 {
        max_rel(ad, fd, scale)
    }
}
