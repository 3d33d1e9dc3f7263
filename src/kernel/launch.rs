//! Images from one launch of the render kernel (or burn-ndarray's native loop): the job
//! packed on the host, uploaded, launched through [`PixelKernel::render_pixels`] (a second
//! launch where C's tricubic fall-back starts), read back with C's statistics.

use super::backend::{KernelInputs, KernelShape, PixelKernel};
use super::job::{self, HostImage, KernelImage, PixelJob};
use super::layout::{self, PARTIAL_WIDTH};
use crate::base::error::{Error, Result};
use crate::diff::host::Host;
use crate::experiment::Experiment;
use crate::render::image::{Image, Statistics};
use crate::render::scenes::Scenes;
use crate::render::RenderOptions;
use crate::scene::params::Params;
use crate::scene::Scene;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Int, Tensor, TensorData, TensorPrimitive};
use std::sync::Arc;

/// Render `exp` with the orientations and fluences of `scene` (one shot or a batch, see
/// [`Scene::batch`]) by one kernel launch on backend `B`: an image per shot, with its
/// statistics. `None` where `B` has no kernel.
///
/// With tricubic structure factors a first launch finds the first pixel whose loop left the
/// grid; if there is one, a second launch renders every later pixel with nearest neighbour, as
/// C switches for good at that point.
pub fn render<B: PixelKernel>(exp: &Experiment, scene: &Scene, device: &B::Device) -> Result<Option<Vec<Image>>> {
    if !runs_on::<B>(exp, scene.shots) {
        return Ok(None);
    }
    let mut job = PixelJob::new(exp, scene);
    let (out, fell_back) = launch_with_fall_back::<B>(&mut job, exp, device)?;
    images(exp, &job, out, fell_back).map(Some)
}

/// Whether `B` has the kernel and a launch of `shots` images fits its grid: one workgroup count
/// per grid axis is at most 65535 (WebGPU's limit).
pub fn runs_on<B: PixelKernel>(exp: &Experiment, shots: usize) -> bool {
    let d = &exp.detector;
    let fits = [d.fpixels.div_ceil(layout::WORKGROUP), d.spixels, shots]
        .iter()
        .all(|&n| n <= 65535);
    B::has_pixel_kernel() && fits
}

/// A job's image, left on the device, with the job (its tricubic switch pixel set).
pub type RenderedJob<B> = (KernelImage<B>, PixelJob);

/// The images `[spixels, fpixels]` (photons) of `scenes` at the parameter `values` (as
/// [`Params::values`] lists them), each with its job's tricubic switch pixel
/// ([`PixelJob::switch_pixel`]) and the job itself (the switch set), rendered by the kernel or
/// the native loop ([`PixelKernel::render_job`]) and left on `device`, untracked: the scenes are evaluated on
/// the host in f64 ([`Host`], whatever the CPU device's default dtype) and packed, so the
/// device runs the kernel launches alone. `None` where `B` renders no jobs, an image's options
/// do not ask for it (`RenderOptions::pixel_kernel`) or a launch does not fit (the caller then
/// renders with the tensor stages on its own device).
pub fn images_at<B: PixelKernel, S: Scenes>(
    scenes: &S,
    values: &[(&'static str, Vec<f64>)],
    device: &B::Device,
) -> Result<Option<Vec<RenderedJob<B>>>> {
    let images = scenes.images();
    if !B::renders_jobs() || !images.iter().all(|(setup, _)| setup.options.pixel_kernel) {
        return Ok(None);
    }
    // the scenes' small graphs where burn-ndarray's operations run in place
    let jobs = crate::base::workers::on_host(|| {
        let params = Params::<Host>::from_values(values, crate::diff::host::f64_options())?;
        let scenes = scenes.scenes(&params);
        images
            .iter()
            .zip(scenes)
            .map(|((setup, host), st)| PixelJob::of_scene_tensors(&setup.exp, host, &st))
            .collect::<Result<Vec<_>>>()
    })?;
    images
        .iter()
        .zip(jobs)
        .map(|((setup, _), mut job)| {
            // the native loop on the simulator's worker count, as the backward pass
            let opts = RenderOptions {
                progress: None,
                ..setup.options.clone()
            };
            let image = B::render_job(&mut job, &setup.exp, &opts, device)?;
            Ok(image.map(|image| (image, job)))
        })
        .collect::<Result<Option<Vec<_>>>>()
}

/// The image `[spixels, fpixels]` of a one-shot job, left on the device (C's tricubic
/// fall-back included), and the pixel after which it switched to nearest neighbour
/// ([`PixelJob::switch_pixel`], also set in `job`).
pub fn job_image<B: PixelKernel>(job: &mut PixelJob, exp: &Experiment, device: &B::Device) -> Result<KernelImage<B>> {
    let (out, _) = launch_with_fall_back::<B>(job, exp, device)?;
    let d = &exp.detector;
    Ok((out.image.reshape([d.spixels, d.fpixels]), job.switch_pixel()))
}

/// The image of the one-shot `job` by the kernel, read back with its statistics; C's tricubic
/// fall-back, where the render found one, set in `job`.
pub(crate) fn kernel_host_image<B: PixelKernel>(
    job: &mut PixelJob,
    exp: &Experiment,
    device: &B::Device,
) -> Result<HostImage> {
    let (out, fell_back) = launch_with_fall_back::<B>(job, exp, device)?;
    let image = images(exp, job, out, fell_back)?.remove(0);
    let photons = image.data.iter().map(|&v| f64::from(v)).collect();
    Ok(HostImage { image, photons })
}

/// One launch, and with tricubic structure factors a second one if the first found a pixel
/// whose loop left the grid (every later pixel then uses nearest neighbour); whether it fell
/// back.
fn launch_with_fall_back<B: PixelKernel>(
    job: &mut PixelJob,
    exp: &Experiment,
    device: &B::Device,
) -> Result<(Launched<B>, bool)> {
    let out = launch::<B>(job, exp, device);
    // only tricubic interpolation can leave the grid: other renders skip this readback (a
    // synchronisation with the device)
    if !job.switches.tricubic {
        return Ok((out, false));
    }
    let first = read_ints(out.first_out_of_range.clone())?[0];
    if first == i64::from(i32::MAX) {
        return Ok((out, false));
    }
    job.switch_to_nearest_after(first as i32);
    Ok((launch::<B>(job, exp, device), true))
}

/// One launch: the job's arrays uploaded, the kernel's outputs as tensors.
fn launch<B: PixelKernel>(job: &PixelJob, exp: &Experiment, device: &B::Device) -> Launched<B> {
    let inputs = upload::<B>(job, device);
    let d = &exp.detector;
    let shape = KernelShape {
        switches: job.switches,
        shots: job.shots,
        spixels: d.spixels,
        fpixels: d.fpixels,
        blocks: job.shots * job.blocks_per_shot,
    };
    let out = B::render_pixels(inputs, shape).expect("the backend said it has the kernel");
    let float = |t| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
    let int = |t| Tensor::<B, 1, Int>::from_primitive(t);
    Launched {
        image: Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(out.image)),
        partials: float(out.partials),
        first_max: int(out.first_max),
        first_out_of_range: int(out.first_out_of_range),
    }
}

/// The job's arrays on `device`, as the kernels read them: f32 and i32 whatever the device's
/// default dtypes (an embedding program may have set i64).
pub(crate) fn upload<B: PixelKernel>(job: &PixelJob, device: &B::Device) -> KernelInputs<B> {
    let float = |v: &[f64]| upload_floats::<B>(v, device);
    let counts = TensorData::new(job.counts.clone(), [job.counts.len()]);
    KernelInputs::<B> {
        params: float(&job.params),
        counts: Tensor::<B, 1, Int>::from_data(counts, (device, DType::I32)).into_primitive(),
        sources: float(&job.sources),
        orientations: float(&job.orientations),
        scales: float(&job.scales),
        hkl: float(&job.hkl),
        mask: float(&job.mask),
    }
}

/// `v` rounded to f32, as an f32 tensor `[v.len()]` on `device`.
pub(crate) fn upload_floats<B: PixelKernel>(v: &[f64], device: &B::Device) -> FloatTensor<B> {
    let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    let n = v.len();
    Tensor::<B, 1>::from_data(TensorData::new(v, [n]), (device, DType::F32))
        .into_primitive()
        .tensor()
}

/// The outputs of [`launch`], as tensors.
struct Launched<B: PixelKernel> {
    image: Tensor<B, 3>,
    partials: Tensor<B, 1>,
    first_max: Tensor<B, 1, Int>,
    first_out_of_range: Tensor<B, 1, Int>,
}

pub(crate) fn read_ints<B: PixelKernel>(t: Tensor<B, 1, Int>) -> Result<Vec<i64>> {
    t.into_data().convert::<i64>().to_vec::<i64>().map_err(readback)
}

pub(crate) fn readback(e: burn::tensor::DataError) -> Error {
    Error::Engine {
        engine: "pixel kernel".into(),
        message: format!("reading back: {e:?}"),
    }
}

/// The images and their statistics from what the launch left on the device (three readbacks).
fn images<B: PixelKernel>(exp: &Experiment, job: &PixelJob, out: Launched<B>, fell_back: bool) -> Result<Vec<Image>> {
    let d = &exp.detector;
    let pixels = d.pixels();
    // the image is f32 by construction: taken as it is, without a conversion or a copy
    let data = out.image.into_data().into_vec::<f32>().map_err(readback)?;
    let partials = out.partials.into_data().into_vec::<f32>().map_err(readback)?;
    let first_max = read_ints(out.first_max)?;
    let per_shot = job.blocks_per_shot;
    let rows: Vec<&[f32]> = partials.chunks_exact(PARTIAL_WIDTH).collect();
    // Σω: shot 0's blocks, in order, in f64
    let omega_sum = rows[..per_shot].iter().map(|r| r[3] as f64).sum();
    let shot_data: Vec<Vec<f32>> = match job.shots {
        1 => vec![data],
        _ => data.chunks(pixels.max(1)).map(<[f32]>::to_vec).collect(),
    };
    Ok(shot_data
        .into_iter()
        .enumerate()
        .map(|(s, data)| {
            let blocks = s * per_shot..(s + 1) * per_shot;
            Image {
                fpixels: d.fpixels,
                spixels: d.spixels,
                data,
                omega_sum,
                interpolation_fell_back: fell_back,
                statistics: Some(statistics(exp, &rows[blocks.clone()], &first_max[blocks])),
            }
        })
        .collect())
}

/// C's statistics from the blocks of one shot: sums and deviations combined in f64 (Chan's
/// update of Welford's block sums), the first maximum in C's loop order.
fn statistics(exp: &Experiment, rows: &[&[f32]], first_max: &[i64]) -> Statistics {
    let m = exp.active_pixels().rect().len();
    let rendered = exp.active_pixels().count();
    let size = |b: usize| (m - b * job::STAT_BLOCK).min(job::STAT_BLOCK) as f64;
    let sum: f64 = rows.iter().map(|r| r[0] as f64).sum();
    let mean = sum / rendered.max(1) as f64;
    let (mut sumsq, mut deviation) = (0.0, 0.0);
    let (mut max_i, mut at) = (0.0f64, None);
    for (b, r) in rows.iter().enumerate() {
        let n = size(b);
        if n <= 0.0 {
            continue;
        }
        let block_mean = r[0] as f64 / n;
        sumsq += r[1] as f64 + n * block_mean * block_mean;
        deviation += r[1] as f64 + n * (block_mean - mean).powi(2);
        if (r[2] as f64) > max_i {
            max_i = r[2] as f64;
            at = Some(first_max[b] as usize);
        }
    }
    Statistics::from_sums(exp, sum, sumsq, deviation, at.map(|q| (max_i, q)))
}

/// [`PixelKernel::render_job`] on a cube backend: one launch where it fits.
pub(crate) fn cube_render_job<B: PixelKernel>(
    job: &mut PixelJob,
    exp: &Experiment,
    device: &B::Device,
) -> Result<Option<KernelImage<B>>> {
    if !runs_on::<B>(exp, 1) {
        return Ok(None);
    }
    job_image::<B>(job, exp, device).map(Some)
}

/// [`PixelKernel::host_image`] on a cube backend: one launch where it fits, read back.
pub(crate) fn cube_host_image<B: PixelKernel>(
    job: &mut PixelJob,
    exp: &Experiment,
    device: &B::Device,
) -> Result<Option<HostImage>> {
    if !runs_on::<B>(exp, 1) {
        return Ok(None);
    }
    kernel_host_image::<B>(job, exp, device).map(Some)
}

/// [`PixelKernel::render_params`] of a backend that renders jobs: the images of `scenes` at
/// the values of `params`, by [`images_at`].
pub(crate) fn render_params<B: PixelKernel, S: Scenes>(
    scenes: &Arc<S>,
    params: &Params<B>,
) -> Result<Option<Vec<Tensor<B, 2>>>> {
    if !B::renders_jobs() {
        return Ok(None);
    }
    let images = images_at::<B, S>(&**scenes, &params.values()?, &params.cell.val().device())?;
    Ok(images.map(|images| images.into_iter().map(|((image, _), _)| image).collect()))
}
