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
///
/// Only the span's first row and column come from the host. The device counts positions from
/// the start of that row, so the floats it divides stay below `len` + the ROI width (exact in
/// f32 for spans under 2²³ positions, see [`MAX_SPAN`]).
pub fn sample_coordinates<B: Backend>(
    grid: &SampleGrid,
    start: usize,
    len: usize,
    device: &B::Device,
) -> (SampleVectors<B>, Tensor<B, 2>) {
    let width = grid.width.max(1);
    let (os, per) = (grid.oversample, grid.per_pixel());
    let r = len * per;
    let h = grid.subpixel;
    // positions counted from the start of the span's first row
    let counted = Tensor::<B, 1, Int>::arange(0..len as i64, device).float() + (start % width) as f64;
    let rows = (counted.clone() / width as f64).floor();
    let fast = counted - rows.clone() * width as f64 + grid.first_col as f64;
    let slow = rows + (grid.first_row + start / width) as f64;
    let (along_fast, along_slow, depth, layer) = if per == 1 {
        let zero = Tensor::<B, 1>::zeros([len], device);
        (
            fast * h + h / 2.0,
            slow * h + h / 2.0,
            zero.clone(),
            zero.reshape([r, 1]),
        )
    } else {
        // samples within a pixel, [1, per]: (layer, sub-slow, sub-fast) = digits of the index
        let os = os as f64;
        let sample = Tensor::<B, 1, Int>::arange(0..per as i64, device).float();
        let above = |t: Tensor<B, 1>, base: f64| (t / base).floor();
        let layer = above(sample.clone(), os * os);
        let sub_fast = sample.clone() - above(sample.clone(), os) * os;
        let sub_slow = above(sample.clone(), os) - layer.clone() * os;
        let row = |t: Tensor<B, 1>| t.reshape([1, per]);
        let along = |pixel: Tensor<B, 1>, sub: Tensor<B, 1>| {
            ((pixel.reshape([len, 1]) * os + row(sub)) * h + h / 2.0).reshape([r])
        };
        let layer = row(layer).expand([len, per]).reshape([r, 1]);
        let depth = layer.clone().reshape([r]) * grid.layer_step;
        (along(fast, sub_fast), along(slow, sub_slow), depth, layer)
    };
    let components = [along_fast, along_slow, depth];
    let coords = if B::ad_enabled(device) {
        SampleVectors::Components(components)
    } else {
        // one interleaving copy into a row-major [R, 3]: the product with the detector basis
        // then takes it as it is (a transposed view would be copied there again)
        SampleVectors::Rows(Tensor::cat(components.map(|c| c.reshape([r, 1])).to_vec(), 1))
    };
    (coords, layer)
}

/// The longest span [`sample_coordinates`] takes (positions): its float arithmetic is exact
/// in f32 below 2²³.
pub const MAX_SPAN: usize = 1 << 22;

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
/// `directions` `[R, 3]`; `odet` `[3, 1]`; `step` Δz (m); `mu` (1/m). (The render takes
/// [`capture_fraction_at`] of the parallax it has already formed.)
#[cfg(any(test, feature = "stages"))]
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

#[cfg(test)]
mod sample_tests {
    use super::{sample_coordinates, SampleGrid};
    use crate::diff::testing::{dev, host, Ad, B};
    use proptest::prelude::*;

    /// C's loop: for each pixel (slow, fast) of the ROI in order, each layer t, sub-slow and
    /// sub-fast: Fdet = h·(fast·os + sub-fast) + h/2, Sdet likewise, Odet = t·step.
    fn c_loop(g: &SampleGrid, height: usize, start: usize, len: usize) -> (Vec<f64>, Vec<f64>) {
        let h = g.subpixel;
        let (mut coords, mut layers) = (Vec::new(), Vec::new());
        let all = (0..height).flat_map(|s| (0..g.width).map(move |f| (g.first_row + s, g.first_col + f)));
        for (slow, fast) in all.skip(start).take(len) {
            for t in 0..g.layers {
                for ss in 0..g.oversample {
                    for sf in 0..g.oversample {
                        coords.push(h * (fast * g.oversample + sf) as f64 + h / 2.0);
                        coords.push(h * (slow * g.oversample + ss) as f64 + h / 2.0);
                        coords.push(t as f64 * g.layer_step);
                        layers.push(t as f64);
                    }
                }
            }
        }
        (coords, layers)
    }

    /// The coordinates and layers of `len` pixels from ROI pixel `start_frac` of the way in
    /// (`len_frac` of the rest), on both backends, against [`c_loop`].
    fn check_coordinates(g: &SampleGrid, height: usize, start_frac: f64, len_frac: f64) -> Result<(), TestCaseError> {
        let total = g.width * height;
        let start = ((total - 1) as f64 * start_frac) as usize;
        let len = 1 + ((total - start - 1) as f64 * len_frac) as usize;
        let (want, want_layers) = c_loop(g, height, start, len);
        for ad in [false, true] {
            let (coords, layer) = if ad {
                let (c, l) = sample_coordinates::<Ad>(g, start, len, &dev());
                (host(c.rows()), host(l))
            } else {
                let (c, l) = sample_coordinates::<B>(g, start, len, &dev());
                (host(c.rows()), host(l))
            };
            prop_assert_eq!(&layer, &want_layers);
            prop_assert_eq!(coords.len(), want.len());
            for (a, b) in coords.iter().zip(&want) {
                prop_assert!((a - b).abs() <= 1e-15, "{a} vs {b}");
            }
        }
        Ok(())
    }

    /// One pixel, one sample, a zero-thickness layer: the smallest grid.
    #[test]
    fn device_coordinates_of_one_sample_are_cs() {
        let g = SampleGrid {
            first_row: 0,
            first_col: 0,
            width: 1,
            oversample: 1,
            subpixel: 1e-5,
            layers: 1,
            layer_step: 0.0,
        };
        check_coordinates(&g, 1, 0.0, 0.0).unwrap();
    }

    proptest! {
        // a fixed seed and no persistence: the same cases on every run, as the other property tests
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x6e62_0de7),
            ..ProptestConfig::default()
        })]
        #[test]
        fn device_coordinates_are_cs(
            first_row in 0usize..50, first_col in 0usize..50, width in 1usize..20, height in 1usize..20,
            oversample in 1usize..4, layers in 1usize..4, start_frac in 0.0f64..1.0, len_frac in 0.0f64..1.0,
            pixel in 1e-5f64..1e-3, step in 0.0f64..1e-4,
        ) {
            let g = SampleGrid {
                first_row, first_col, width, oversample, subpixel: pixel / oversample as f64, layers, layer_step: step,
            };
            check_coordinates(&g, height, start_frac, len_frac)?;
        }
    }
}
