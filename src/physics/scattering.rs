//! Scattering geometry: scattering angle, sinθ/λ, and fractional Miller indices
//! (physics reference §5.6, §7).

use super::vectors::SampleVectors;
use burn::tensor::{backend::Backend, Tensor};

/// cos 2θ `[R, S]` between diffracted directions `[R, 3]` and incident directions, given
/// transposed as `[3, S]`.
pub fn cos_two_theta<B: Backend>(directions: impl Into<SampleVectors<B>>, incident_t: Tensor<B, 2>) -> Tensor<B, 2> {
    directions.into().dot(incident_t)
}

/// sinθ/λ `[R, S]` (m⁻¹) = ½‖q‖ with q = (d − i)/λ, from cos 2θ `[R, S]` and the source
/// wavelengths `inv_lambda` = 1/λ `[1, S]` (m⁻¹). Uses ‖d − i‖² = 2 − 2 cos 2θ for unit vectors.
pub fn stol<B: Backend>(cos_two_theta: Tensor<B, 2>, inv_lambda: Tensor<B, 2>) -> Tensor<B, 2> {
    (cos_two_theta.neg() * 2.0 + 2.0).clamp_min(0.0).sqrt() * inv_lambda * 0.5
}

/// Fractional Miller indices h, k, l, each `[R, C]`, for every sample and orientation.
///
/// h = a·q = a·d/λ − a·i/λ is linear in the diffracted direction, so all orientations come
/// out of one product: `coef` `[3, 3C]` holds the columns a/λ (then b/λ, then c/λ) of every
/// orientation (m⁻¹·m = dimensionless per unit direction) and `offset` `[1, 3C]` the matching
/// a·i/λ.
pub fn miller_indices<B: Backend>(
    directions: impl Into<SampleVectors<B>>,
    coef: Tensor<B, 2>,
    offset: Tensor<B, 2>,
) -> [Tensor<B, 2>; 3] {
    // one product per axis: each index comes out contiguous (slicing columns out of one
    // [R, 3C] product is a strided copy per axis on the CPU, slower than the products)
    let directions = directions.into();
    let c = coef.dims()[1] / 3;
    [0, 1, 2].map(|i| {
        let cols = i * c..(i + 1) * c;
        directions.dot_minus(
            coef.clone().slice([0..3, cols.clone()]),
            offset.clone().slice([0..1, cols]),
        )
    })
}
