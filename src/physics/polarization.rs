//! Kahn polarization factor (physics reference §11).

use burn::tensor::{backend::Backend, Tensor};

/// Polarization factor `[R, S]`: ½(1 + cos²2θ − K·cos 2ψ·sin²2θ).
///
/// `cos_two_theta` `[R, S]`; `e_proj` and `b_proj` `[R, S]` are the diffracted direction's
/// components along each source's E_in = unit(i × B_in) and B_in = unit(p × i). ψ is the
/// azimuth of the diffracted ray in that frame: cos 2ψ = (e² − b²)/(e² + b²), which is 1 when
/// the ray is along the beam (where sin²2θ = 0 anyway). `kahn` is K (0 = unpolarized).
pub fn kahn_factor<B: Backend>(
    cos_two_theta: Tensor<B, 2>,
    e_proj: Tensor<B, 2>,
    b_proj: Tensor<B, 2>,
    kahn: f64,
) -> Tensor<B, 2> {
    let cos2 = cos_two_theta.powi_scalar(2);
    if kahn == 0.0 {
        return (cos2 + 1.0) * 0.5;
    }
    let sin2 = cos2.clone().neg() + 1.0;
    (cos2 + 1.0 - cos_two_psi(e_proj, b_proj) * sin2 * kahn) * 0.5
}

/// [`kahn_factor`] with K a tensor `[1, 1]` or `[R, 1]` (differentiable): always the full
/// formula, so ∂/∂K = −½·cos 2ψ·sin²2θ also at K = 0.
pub fn kahn_factor_tensor<B: Backend>(
    cos_two_theta: Tensor<B, 2>,
    e_proj: Tensor<B, 2>,
    b_proj: Tensor<B, 2>,
    kahn: Tensor<B, 2>,
) -> Tensor<B, 2> {
    let cos2 = cos_two_theta.powi_scalar(2);
    let sin2 = cos2.clone().neg() + 1.0;
    (cos2 + 1.0 - cos_two_psi(e_proj, b_proj) * sin2 * kahn) * 0.5
}

/// cos 2ψ = (e² − b²)/(e² + b²) `[R, S]`, 1 along the beam.
fn cos_two_psi<B: Backend>(e_proj: Tensor<B, 2>, b_proj: Tensor<B, 2>) -> Tensor<B, 2> {
    let (e2, b2) = (e_proj.powi_scalar(2), b_proj.powi_scalar(2));
    let denom = e2.clone() + b2.clone();
    let along_beam = denom.clone().equal_elem(0.0);
    ((e2 - b2) / denom.mask_fill(along_beam.clone(), 1.0)).mask_fill(along_beam, 1.0)
}
