//! Physics stages: pure functions generic over the burn backend, tensors in, tensors out.
//!
//! Shapes in doc comments: `R` = sub-pixel samples in a chunk (pixels × layers × sub-pixels),
//! `S` = sources, `C` = orientations (source × φ step × mosaic domain), in C's loop order.
//! Units: metres, radians, m⁻¹ for scattering vectors; Miller indices are dimensionless.

pub mod amorphous;
pub mod detector;
pub mod lattice;
pub mod polarization;
pub mod psf;
pub mod scattering;
pub mod structure_factor;
pub mod vectors;

use crate::base::trig::{cos as trig_cos, sin as trig_sin};
use burn::tensor::{backend::Backend, Tensor};

/// x·s for a column `x` `[N, 1]` and a scalar tensor `s` `[1, 1]` (or a column `[N, 1]`,
/// then element-wise).
///
/// Under autodiff the product is taken on the flattened column, `[N]` times `[1]`: burn
/// reduces a broadcast gradient with `sum_dim`, which burn-ndarray runs as a fast lane sum on a
/// 1-D array but row by row (one small array operation per row) along axis 0 of a 2-D one.
pub fn scale_column<B: Backend>(x: Tensor<B, 2>, s: Tensor<B, 2>) -> Tensor<B, 2> {
    let [n, m] = x.dims();
    if B::ad_enabled(&x.device()) && m == 1 && s.dims() == [1, 1] && n > 1 {
        (x.reshape([n]) * s.reshape([1])).reshape([n, 1])
    } else {
        x * s
    }
}

/// `t` `[1, M]` repeated to `n` rows under autodiff, so that the operation it enters has no
/// row broadcast, whose gradient burn-ndarray would reduce row by row (see [`scale_column`]);
/// `t` unchanged otherwise (it broadcasts). A single value is expanded as a 1-D tensor (its
/// gradient is then a lane sum); a row of M > 1 values as the product ones·t (its gradient a
/// matrix product). Tensors with more than one row are returned as they are.
pub fn rows_for_autodiff<B: Backend>(t: Tensor<B, 2>, n: usize) -> Tensor<B, 2> {
    let [rows, m] = t.dims();
    if !B::ad_enabled(&t.device()) || rows != 1 || n <= 1 {
        return t;
    }
    if m == 1 {
        t.reshape([1]).expand([n]).reshape([n, 1])
    } else {
        Tensor::ones([n, 1], &t.device()).matmul(t)
    }
}

/// f(x₀) as a node of the graph with the given partial derivatives: f + Σ_i (x_i − x₀_i)·∂f/∂x_i,
/// where x₀_i are the inputs `x_i` detached and `value`, `∂f/∂x_i` were computed from them.
///
/// x − x₀ is exactly 0, so the value is f's exactly; the backward pass sees only products with
/// the (untracked) partial derivatives, however costly f's own backward steps would be. The
/// partials must be finite; a second derivative through this node is 0.
pub fn with_partials<B: Backend, const D: usize, const N: usize>(
    value: Tensor<B, D>,
    partials: [(Tensor<B, D>, Tensor<B, D>); N],
) -> Tensor<B, D> {
    partials.into_iter().fold(value, |acc, (x, d)| {
        let x0 = x.clone().detach();
        acc + (x - x0) * d
    })
}

/// Column `j` of a `[N, M]` tensor, as `[N, 1]`.
pub fn column<B: Backend>(t: &Tensor<B, 2>, j: usize) -> Tensor<B, 2> {
    let n = t.dims()[0];
    t.clone().slice([0..n, j..j + 1])
}

/// `a·b` for a small inner dimension: `[R, K] × [K, N] → [R, N]` (K = 3 here: directions or
/// coordinates times a basis).
///
/// How it is evaluated depends on the backend, the value does not:
/// - burn-ndarray: one `matmul`. Slicing a column out of a row-major `[R, 3]` tensor copies it
///   through ndarray's strided iterator, which cost more than the rest of a light render.
/// - other backends (wgpu): K broadcast multiply–adds. They fuse with their neighbours, and
///   burn's matmul autotuning, which compiles a dozen large tiled kernels per shape class
///   (minutes on llvmpipe), is never entered.
pub fn project<B: Backend>(a: Tensor<B, 2>, b: Tensor<B, 2>) -> Tensor<B, 2> {
    if matmul_is_cheap::<B>() {
        return a.matmul(b);
    }
    let [r, k] = a.dims();
    let n = b.dims()[1];
    (0..k)
        .map(|i| column(&a, i) * b.clone().slice([i..i + 1, 0..n]))
        .reduce(|acc, t| acc + t)
        .unwrap_or_else(|| Tensor::zeros([r, n], &a.device()))
}

/// `a·b − row` for `a` `[R, K]`, `b` `[K, N]` and `row` `[1, N]` (see [`project`]).
///
/// Under autodiff the row is repeated by [`rows_for_autodiff`], so its gradient is a matrix
/// product rather than burn-ndarray's row-by-row reduction of a broadcast. A difference, not a
/// sum: burn-ndarray subtracts a broadcast row in place, but adds it into a fresh array through
/// ndarray's element-wise broadcasting iterator (three times slower at C = 1).
pub fn project_minus<B: Backend>(a: Tensor<B, 2>, b: Tensor<B, 2>, row: Tensor<B, 2>) -> Tensor<B, 2> {
    let r = a.dims()[0];
    project(a, b) - rows_for_autodiff(row, r)
}

/// Where a backend keeps its tensors, which decides how it is best driven: host-memory
/// backends (burn-ndarray, with or without autodiff) take small matrix products directly and
/// are read back span by span; the others (wgpu) get fusable element-wise forms and keep
/// results on their device.
///
/// Every backend has it: the answer follows from the backend's device type (a burn-ndarray
/// device is the host), so it needs no bound beyond `Backend` and no type-name matching.
pub trait Placement: Backend {
    /// Whether this backend's tensors are host memory.
    fn tensors_on_host() -> bool {
        std::any::TypeId::of::<Self::Device>() == std::any::TypeId::of::<burn::backend::ndarray::NdArrayDevice>()
    }
}

impl<B: Backend> Placement for B {}

/// Whether `B` computes small matrix products directly on the host rather than through
/// autotuned GPU kernels (see [`Placement`]).
pub fn matmul_is_cheap<B: Backend>() -> bool {
    B::tensors_on_host()
}

/// Row-wise cross product of `[N, 3]` (or `[1, 3]`) tensors, broadcasting rows.
pub fn cross_rows<B: Backend>(a: &Tensor<B, 2>, b: &Tensor<B, 2>) -> Tensor<B, 2> {
    let (a0, a1, a2) = (column(a, 0), column(a, 1), column(a, 2));
    let (b0, b1, b2) = (column(b, 0), column(b, 1), column(b, 2));
    Tensor::cat(
        vec![
            a1.clone() * b2.clone() - a2.clone() * b1.clone(),
            a2 * b0.clone() - a0.clone() * b2,
            a0 * b1 - a1 * b0,
        ],
        1,
    )
}

/// Row-wise dot product of `[N, 3]` (or `[1, 3]`) tensors → `[N, 1]`.
pub fn dot_rows<B: Backend>(a: Tensor<B, 2>, b: Tensor<B, 2>) -> Tensor<B, 2> {
    (a * b).sum_dim(1)
}

/// Rodrigues rotation of rows `v` `[N, 3]` about the unit axis `k` `[1, 3]` by angles `θ`
/// `[N, 1]` (rad).
pub fn rotate_about<B: Backend>(v: Tensor<B, 2>, k: Tensor<B, 2>, theta: Tensor<B, 2>) -> Tensor<B, 2> {
    let (s, c) = (trig_sin(theta.clone()), trig_cos(theta));
    let kv = dot_rows(k.clone(), v.clone());
    let kxv = cross_rows(&k, &v);
    v * c.clone() + kxv * s + k * (kv * (c.neg() + 1.0))
}

#[cfg(test)]
mod tests {
    use super::Placement;
    use burn::backend::ndarray::NdArray;
    use burn::backend::Autodiff;

    /// burn-ndarray keeps tensors in host memory, with or without autodiff and in either float
    /// type; wgpu does not (no adapter is needed to ask).
    #[test]
    fn placement_follows_the_device() {
        assert!(NdArray::<f64>::tensors_on_host());
        assert!(NdArray::<f32>::tensors_on_host());
        assert!(Autodiff::<NdArray<f64>>::tensors_on_host());
        #[cfg(feature = "gpu")]
        {
            assert!(!crate::base::gpu::WgpuFused::tensors_on_host());
            assert!(!crate::base::gpu::WgpuUnfused::tensors_on_host());
            assert!(!Autodiff::<crate::base::gpu::WgpuFused>::tensors_on_host());
        }
    }
}
