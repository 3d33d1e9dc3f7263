//! Crystal orientations as tensors: the spindle-then-mosaic rotation of every (φ step, mosaic
//! domain), and the coefficients the physics stages take from them (the rotated direct vectors
//! over λ, and their projections on each source's incident direction).
//!
//! Parameter → geometry map (units): φ angles `[Φ]` (rad) about the unit spindle `[3]`, and the
//! mosaic matrices `[M, 3, 3]` → `M_{φ,m} = U_m·R_φ` `[Φ·M, 3, 3]` in C's order (φ outer);
//! direct vectors a, b, c (m) → `v' = M·v` → coefficients `v'/λ_s` (dimensionless per m) and
//! offsets `v'·i_s/λ_s` for every source s (1/λ `[1, S]` in m⁻¹, unit incident directions
//! `[S, 3]`). Used by the differentiable scene ([`crate::scene::params::Params::scene`]) and, in f64
//! on the host, by the rendered one ([`crate::scene::Scene::new`]).

use super::rotation::axis_rotations;
use burn::tensor::{backend::Backend, Tensor};

/// `U_m·R_φ` for every (φ, m), φ outer: spindle `[3]` (unit), `phis` `[Φ]` (rad), `umats`
/// `[M, 3, 3]` → `[Φ·M, 3, 3]`.
pub fn crystal_rotations<B: Backend>(spindle: Tensor<B, 1>, phis: Tensor<B, 1>, umats: Tensor<B, 3>) -> Tensor<B, 3> {
    let np = phis.dims()[0];
    let domains = umats.dims()[0];
    let r_phi = axis_rotations(spindle.reshape([1, 3]).expand([np, 3]), phis); // [Φ, 3, 3]
    umats
        .unsqueeze_dim::<4>(0)
        .expand([np, domains, 3, 3])
        .reshape([np * domains, 3, 3])
        .matmul(
            r_phi
                .unsqueeze_dim::<4>(1)
                .expand([np, domains, 3, 3])
                .reshape([np * domains, 3, 3]),
        )
}

/// The stages' orientation coefficients for rotations `rots` `[R, 3, 3]`, direct vectors `abc`
/// `[3, 3]` (rows a, b, c; m), sources' `inv_lambda` `[1, S]` (m⁻¹) and unit `incident`
/// directions `[S, 3]`: (`[3, 3C]` columns v'/λ for v = a, b, c in three blocks of C = S·R,
/// source outer; `[1, 3C]` the offsets v'·i/λ in the same order).
pub fn orientation_coefficients<B: Backend>(
    rots: Tensor<B, 3>,
    abc: Tensor<B, 2>,
    inv_lambda: Tensor<B, 2>,
    incident: Tensor<B, 2>,
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let nr = rots.dims()[0];
    let s = incident.dims()[0];
    let c = s * nr;
    // rotated vectors v' = M·v for v in a, b, c: [R, 3 (xyz), 3 (a, b, c)]
    let rotated = rots.matmul(abc.transpose().unsqueeze_dim::<3>(0).expand([nr, 3, 3]));
    let mut coef = Vec::with_capacity(3);
    let mut offset = Vec::with_capacity(3);
    for v in 0..3 {
        let vecs = rotated.clone().narrow(2, v, 1).reshape([nr, 3]); // [R, 3]
                                                                     // columns v/λ_s for (s, r): [3, S·R]. The unit axis is added before the axes are
                                                                     // swapped: reshaping a transposed view with a unit axis is what burn 0.21's cube
                                                                     // backends got wrong (vendor/README.md), so this holds even without the patched burn-std.
        let cols =
            vecs.clone().reshape([nr, 1, 3]).swap_dims(0, 2).expand([3, s, nr]) * inv_lambda.clone().reshape([1, s, 1]);
        coef.push(cols.reshape([3, c]));
        // offsets v·i_s/λ_s: [1, S·R]
        let off = incident.clone().matmul(vecs.transpose()) * inv_lambda.clone().reshape([s, 1]);
        offset.push(off.reshape([1, c]));
    }
    (Tensor::cat(coef, 1), Tensor::cat(offset, 1))
}
