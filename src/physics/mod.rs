//! Physics stages: pure functions generic over the burn backend, tensors in, tensors out.
//!
//! Shapes in doc comments: `R` = sub-pixel samples in a chunk (pixels × layers × sub-pixels),
//! `S` = sources, `C` = orientations (source × φ step × mosaic domain), in C's loop order.
//! Units: metres, radians, m⁻¹ for scattering vectors; Miller indices are dimensionless.

pub mod detector;
pub mod lattice;
pub mod polarization;
pub mod scattering;
pub mod structure_factor;

use burn::tensor::{backend::Backend, Tensor};

/// x·m + row for `x` `[N, K]`, `m` `[K, M]` and `row` `[1, M]`, as one product [x 1]·[m; row].
///
/// Same value as the broadcast sum, but under autodiff the gradient of `row` comes from a
/// matrix product: burn-ndarray reduces a broadcast gradient over rows one row at a time, which
/// made the backward pass ten times slower than the forward one.
pub fn affine_rows<B: Backend>(x: Tensor<B, 2>, m: Tensor<B, 2>, row: Tensor<B, 2>) -> Tensor<B, 2> {
    let n = x.dims()[0];
    let ones = Tensor::ones([n, 1], &x.device());
    Tensor::cat(vec![x, ones], 1).matmul(Tensor::cat(vec![m, row], 0))
}

/// x·s for a column `x` `[N, 1]` and a scalar tensor `s` `[1, 1]` (or a column `[N, 1]`,
/// then element-wise). Under autodiff it is the
/// product with a 1×1 matrix, whose backward is a matrix product instead of a slow row-by-row
/// reduction (see [`affine_rows`]); otherwise a plain element-wise product.
pub fn scale_column<B: Backend>(x: Tensor<B, 2>, s: Tensor<B, 2>) -> Tensor<B, 2> {
    if B::ad_enabled(&x.device()) && x.dims()[1] == 1 && s.dims() == [1, 1] {
        x.matmul(s)
    } else {
        x * s
    }
}

/// `t` `[1, M]` repeated to `n` rows under autodiff, as the product ones·t whose backward is a
/// matrix product (see [`affine_rows`]); unchanged otherwise (it broadcasts). Tensors with
/// more than one row are returned as they are.
pub fn rows_for_autodiff<B: Backend>(t: Tensor<B, 2>, n: usize) -> Tensor<B, 2> {
    if B::ad_enabled(&t.device()) && t.dims()[0] == 1 && n > 1 {
        Tensor::ones([n, 1], &t.device()).matmul(t)
    } else {
        t
    }
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

/// Whether `B` computes small matrix products directly on the host (burn-ndarray, with or
/// without autodiff), rather than through autotuned GPU kernels.
pub fn matmul_is_cheap<B: Backend>() -> bool {
    std::any::type_name::<B>().contains("burn_ndarray")
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
    let (s, c) = (theta.clone().sin(), theta.cos());
    let kv = dot_rows(k.clone(), v.clone());
    let kxv = cross_rows(&k, &v);
    v * c.clone() + kxv * s + k * (kv * (c.neg() + 1.0))
}
