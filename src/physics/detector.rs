//! Detector stages: sub-pixel positions, diffracted directions, air path, solid angle and
//! sensor absorption (physics reference §4.6, §12).

use super::vectors::SampleVectors;
use super::{column, rotate_about, scale_column};
use burn::tensor::{backend::Backend, Int, Tensor};

/// Where the sub-pixel samples of the ROI lie: its first row and column and width (pixels),
/// the sub-pixels per pixel side, the sub-pixel size (m), and the sensor layers with their
/// thickness step (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleGrid {
    pub first_row: usize,
    pub first_col: usize,
    pub width: usize,
    pub oversample: usize,
    pub subpixel: f64,
    pub layers: usize,
    pub layer_step: f64,
}

impl SampleGrid {
    /// Samples per pixel: layers × oversample².
    pub fn per_pixel(&self) -> usize {
        self.layers * self.oversample * self.oversample
    }
}

/// Detector coordinates (Fdet, Sdet, Odet) `[R, 3]` (m) and layer indices `[R, 1]` of the
/// samples of ROI positions `start..start + len` (numbered row by row), R = len·samples per
/// pixel, in C's order (pixel; layer, sub-slow, sub-fast), computed on the device from
/// `arange`: Fdet = subpixel·(fast·oversample + sub-fast) + subpixel/2, likewise Sdet, and
/// Odet = layer·step, as C computes them.
pub fn sample_coordinates<B: Backend>(
    grid: &SampleGrid,
    start: usize,
    len: usize,
    device: &B::Device,
) -> (SampleVectors<B>, Tensor<B, 2>) {
    let (os, per) = (grid.oversample as i64, grid.per_pixel());
    let r = len * per;
    let position = Tensor::<B, 1, Int>::arange(start as i64..(start + len) as i64, device);
    let width = grid.width.max(1) as i64;
    let column = |t: Tensor<B, 1, Int>| t.float().reshape([len, 1]);
    let slow = column(position.clone().div_scalar(width) + grid.first_row as i64);
    let fast = column(position.remainder_scalar(width) + grid.first_col as i64);
    let sample = Tensor::<B, 1, Int>::arange(0..per as i64, device);
    let row = |t: Tensor<B, 1, Int>| t.float().reshape([1, per]);
    let sub_fast = row(sample.clone().remainder_scalar(os));
    let sub_slow = row(sample.clone().div_scalar(os).remainder_scalar(os));
    let layer = row(sample.div_scalar(os * os));
    let h = grid.subpixel;
    let along = |pixel: Tensor<B, 2>, sub: Tensor<B, 2>| ((pixel * os as f64 + sub) * h + h / 2.0).reshape([r]);
    let components = [
        along(fast, sub_fast),
        along(slow, sub_slow),
        (layer.clone() * grid.layer_step).expand([len, per]).reshape([r]),
    ];
    let layer = layer.expand([len, per]).reshape([r, 1]);
    let coords = if B::ad_enabled(device) {
        SampleVectors::Components(components)
    } else {
        SampleVectors::Rows(Tensor::stack(components.to_vec(), 1))
    };
    (coords, layer)
}

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
