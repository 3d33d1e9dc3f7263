//! Detector stages: sub-pixel positions, diffracted directions, air path, solid angle and
//! sensor absorption (physics reference §4.6, §12).

use super::vectors::SampleVectors;
use super::{column, rotate_about, scale_column};
use burn::tensor::{backend::Backend, Tensor};

/// Lab positions `[R, 3]` (m) of sub-pixel samples: P = Fdet·f + Sdet·s + Odet·o + pix0.
///
/// `coords` `[R, 3]` holds (Fdet, Sdet, Odet) (m); `basis` `[3, 3]` has rows f, s, o;
/// `pix0` `[1, 3]` (m). The positions come in the layout of `coords`.
pub fn pixel_positions<B: Backend>(
    coords: impl Into<SampleVectors<B>>,
    basis: Tensor<B, 2>,
    pix0: Tensor<B, 2>,
) -> SampleVectors<B> {
    coords.into().affine_minus(basis, pix0.neg())
}

/// Positions on a spherical detector (`-curved_det`), as C builds them: the point
/// `distance·b` rotated about s by P_y/distance, then about f by P_z/distance, where P_y and P_z
/// are the lab y and z components of the planar position.
///
/// `planar` `[R, 3]`; `beam`, `fdet`, `sdet` `[1, 3]`; `distance` `[1, 1]` (m).
pub fn curved_positions<B: Backend>(
    planar: Tensor<B, 2>,
    beam: Tensor<B, 2>,
    fdet: Tensor<B, 2>,
    sdet: Tensor<B, 2>,
    distance: Tensor<B, 2>,
) -> Tensor<B, 2> {
    let r = planar.dims()[0];
    let v = (beam * distance.clone()).expand([r, 3]);
    let v = rotate_about(v, sdet, column(&planar, 1) / distance.clone());
    rotate_about(v, fdet, column(&planar, 2) / distance)
}

/// Unit diffracted directions `[R, 3]` and air paths `[R, 1]` (m) to the positions `[R, 3]`.
pub fn diffracted_directions<B: Backend>(positions: impl Into<SampleVectors<B>>) -> (SampleVectors<B>, Tensor<B, 2>) {
    positions.into().normalized()
}

/// Solid angle `[R, 1]` (sr) of a pixel seen at distance `airpath` `[R, 1]` (m):
/// ω = pixel²/R² · close_distance/R, or 1/R² for a point pixel (`-point_pixel`).
/// `close_distance` `[1, 1]` (m).
pub fn solid_angle<B: Backend>(
    airpath: Tensor<B, 2>,
    pixel_size: f64,
    close_distance: Tensor<B, 2>,
    point_pixel: bool,
) -> Tensor<B, 2> {
    if point_pixel {
        airpath.powi_scalar(2).recip()
    } else {
        // R²·R rather than R³: a power other than 2 costs a libm pow per element
        scale_column((airpath.clone().powi_scalar(2) * airpath).recip(), close_distance) * (pixel_size * pixel_size)
    }
}

/// Fraction of photons absorbed in sensor layer t `[R, 1]` (layer index as a float):
/// exp(−t·Δz·μ/ρ) − exp(−(t+1)·Δz·μ/ρ) with parallax ρ = d·o.
///
/// `directions` `[R, 3]`; `odet` `[3, 1]`; `step` Δz (m); `mu` (1/m).
pub fn capture_fraction<B: Backend>(
    directions: impl Into<SampleVectors<B>>,
    odet: Tensor<B, 2>,
    layer: Tensor<B, 2>,
    step: f64,
    mu: f64,
) -> Tensor<B, 2> {
    capture_fraction_at(directions.into().dot(odet), layer, step, mu)
}

/// [`capture_fraction`] from the parallax factor ρ = d·o `[R, 1]`.
pub fn capture_fraction_at<B: Backend>(
    parallax: Tensor<B, 2>,
    layer: Tensor<B, 2>,
    step: f64,
    mu: f64,
) -> Tensor<B, 2> {
    let depth = |t: Tensor<B, 2>| (t * (-step * mu) / parallax.clone()).exp();
    depth(layer.clone()) - depth(layer + 1.0)
}
