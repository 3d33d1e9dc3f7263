//! The simulator: composes the physics stages over chunks of pixels, with bounded memory, on
//! any burn backend, and assembles the image.
//!
//! Work is split into chunks of rendered pixels (ROI and mask applied) sized from a memory
//! budget; each chunk evaluates all its sub-pixel samples × orientations as tensors. Worker
//! threads (one per core by default) take chunks in order. Within a chunk the orientation axis
//! is split into blocks when needed, so memory is bounded by the budget, not by the number of
//! sources, φ steps or mosaic domains.

pub mod amorphous;
pub mod detector;
pub(crate) mod drive;
pub(crate) mod finite;
pub mod image;
pub mod nexus;
pub mod noise;
pub mod options;
pub mod output;
pub(crate) mod plan;
pub(crate) mod scenes;
pub(crate) mod stages;
pub mod trace;

/// The host scene [`chunk_intensity`] reads beside the parameters' tensors.
pub use crate::scene::Scene;
pub use drive::Progress;
pub use image::Image;
pub use options::{RenderOptions, DEFAULT_MEMORY_BUDGET};
pub(crate) use plan::{derivative_spans, gradient_spans, spans};
pub use stages::{chunk_intensity, chunk_intensity_probed, ChunkIntensity};

use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::scene::{to_host, SceneTensors};
use burn::tensor::{backend::Backend, Tensor};
use drive::{drive, Rendered};
use stages::scalar;

/// [`PixelKernel::render`]'s default: the images of `scene` (one shot or a batch,
/// [`Scene::batch`]) of `exp` by the tensor stages on `B`, an image per shot.
pub fn render_by_stages<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<Vec<Image>> {
    render_shots(exp, scene, opts, device, &|| SceneTensors::<B>::new(scene, exp, device))
}

/// Render with the scene tensors made by `make` (once per worker): the host scene, or a
/// differentiable one built from [`crate::scene::params::Params`].
pub fn render_scene<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    opts: &RenderOptions,
    device: &B::Device,
    make: &(dyn Fn() -> SceneTensors<B> + Sync),
) -> Result<Image> {
    debug_assert_eq!(scene.shots, 1, "one image");
    let mut images = render_shots(exp, scene, opts, device, make)?;
    Ok(images.swap_remove(0))
}

/// [`render_scene`] for a scene of one or more shots ([`Scene::batch`]): an image per shot.
fn render_shots<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    opts: &RenderOptions,
    device: &B::Device,
    make: &(dyn Fn() -> SceneTensors<B> + Sync),
) -> Result<Vec<Image>> {
    let (spans, block) = spans(exp, scene, opts, 8);
    let rect = spans.rect.clone();
    let d = &exp.detector;
    let shots = scene.shots;
    let on_device = opts.assemble_on_device;
    let mut data = vec![vec![0.0f32; if on_device { 0 } else { d.pixels() }]; shots];
    // Σω per span, summed in span order at the end (the folds come in any order)
    let mut omegas = vec![0.0; spans.len()];
    let mut parts: Vec<Option<(Tensor<B, 2>, Tensor<B, 1>)>> =
        (0..if on_device { spans.len() } else { 0 }).map(|_| None).collect();
    let fell_back = drive(
        &spans,
        opts.threads,
        exp.structure_factors.interpolate,
        make,
        |st, chunk| {
            let out = chunk_intensity(exp, scene, st, chunk.span, chunk.tricubic, block, device);
            let value = if on_device {
                Part::Device(out.intensity, out.omega_sum)
            } else {
                Part::Host(to_host(out.intensity)?, scalar(out.omega_sum))
            };
            Ok(Rendered {
                value,
                out_of_range: out.out_of_range,
            })
        },
        |chunk, part| match part {
            // `[len, shots]` row-major: column s is shot s
            Part::Host(values, omega) => {
                for (s, image) in data.iter_mut().enumerate() {
                    rect.store(image, chunk.span, values.iter().skip(s).step_by(shots).copied());
                }
                omegas[chunk.index] = omega;
            }
            Part::Device(values, omega) => parts[chunk.index] = Some((values, omega)),
        },
        opts.progress.as_ref(),
    )?;
    let mut omega_sum = omegas.iter().sum();
    let mut statistics = vec![None; shots];
    if on_device {
        let (values, omegas): (Vec<_>, Vec<_>) = parts.into_iter().flatten().unzip();
        if !omegas.is_empty() {
            omega_sum = scalar(Tensor::cat(omegas, 0));
        }
        // `[N, shots]` for the whole ROI, then an image per shot, read back together
        let values = match values.len() {
            0 => None,
            1 => values.into_iter().next(),
            _ => Some(Tensor::cat(values, 0)),
        };
        let mut images = Vec::with_capacity(shots);
        for (s, stats) in statistics.iter_mut().enumerate() {
            let column: Vec<Tensor<B, 1>> = values
                .iter()
                .map(|v| {
                    let n = v.dims()[0];
                    match shots {
                        1 => v.clone().reshape([n]),
                        _ => v.clone().slice([0..n, s..s + 1]).reshape([n]),
                    }
                })
                .collect();
            let image = assemble(exp, column, device);
            *stats = Some(crate::render::output::Statistics::of_tensor(exp, image.clone())?);
            images.push(image.unsqueeze_dim::<3>(0));
        }
        let host = to_host(if shots == 1 {
            images.swap_remove(0)
        } else {
            Tensor::cat(images, 0)
        })?;
        for (image, values) in data.iter_mut().zip(host.chunks(d.pixels().max(1))) {
            *image = values.iter().map(|&v| v as f32).collect();
        }
    }
    Ok(data
        .into_iter()
        .zip(statistics)
        .map(|(data, statistics)| Image {
            fpixels: d.fpixels,
            spixels: d.spixels,
            data,
            omega_sum,
            interpolation_fell_back: fell_back,
            statistics,
        })
        .collect())
}

/// A finished span: its values `[len, shots]` (photons) and Σω `[1]` (sr), read back or on the
/// device.
enum Part<B: Backend> {
    Host(Vec<f64>, f64),
    Device(Tensor<B, 2>, Tensor<B, 1>),
}

/// The image `[spixels, fpixels]` from the values of every span of the ROI, in order (each
/// `[len]`): joined on the device, and placed in a zero image when the ROI is smaller.
pub fn assemble<B: Backend>(exp: &Experiment, values: Vec<Tensor<B, 1>>, device: &B::Device) -> Tensor<B, 2> {
    let d = &exp.detector;
    let rect = exp.active_pixels().rect();
    let (rows, cols) = (rect.rows.clone(), rect.cols.clone());
    if rect.is_empty() {
        return Tensor::zeros([d.spixels, d.fpixels], device);
    }
    let roi = match values.len() {
        1 => values.into_iter().next().expect("one span"),
        _ => Tensor::cat(values, 0),
    }
    .reshape([rows.len(), cols.len()]);
    if rows.len() == d.spixels && cols.len() == d.fpixels {
        return roi;
    }
    Tensor::zeros([d.spixels, d.fpixels], device).slice_assign([rows, cols], roi)
}
