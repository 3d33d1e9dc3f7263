//! burn-ndarray's body of [`PixelKernel`]: the native per-pixel loop (in the backend's
//! precision) and its reverse pass (f64), through [`super::dispatch`] where the options ask
//! for them; the tensor stages otherwise.

use super::backend::PixelKernel;
use super::job::{HostImage, JobSums, KernelImage, PixelJob};
use super::native::vjp::{job_vjp, Cotangent};
use super::native::Real;
use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::gradients::derivative::DerivativeImage;
use crate::gradients::{At, ChunkWeights, Vjp};
use crate::render::amorphous::{with_background, BackgroundScene};
use crate::render::image::Image;
use crate::render::scenes::Scenes;
use crate::render::RenderOptions;
use crate::scene::params::Params;
use crate::scene::Scene;
use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArray, NdArrayTensor, QuantElement, SharedArray,
};
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use std::sync::Arc;

impl<E: FloatNdArrayElement + Real, I: IntNdArrayElement, Q: QuantElement> PixelKernel for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
    /// The native loop in the backend's precision `E` where `opts.pixel_kernel` asks for the
    /// kernel, else the tensor stages.
    fn render(exp: &Experiment, scene: &Scene, opts: &RenderOptions, device: &Self::Device) -> Result<Vec<Image>> {
        if opts.pixel_kernel {
            return super::native::render::<E>(exp, scene, opts);
        }
        crate::render::render_by_stages::<Self>(exp, scene, opts, device)
    }

    /// The native loop in `E` with the background summed in it, where `opts.pixel_kernel`
    /// asks for the kernel; else the tensor stages' image with the background added.
    fn render_with_background(
        exp: &Experiment,
        scene: &Scene,
        opts: &RenderOptions,
        background: &BackgroundScene,
        device: &Self::Device,
    ) -> Result<Vec<Image>> {
        if opts.pixel_kernel {
            return super::native::render_with_background::<E>(exp, scene, opts, background);
        }
        with_background(exp, background, Self::render(exp, scene, opts, device))
    }

    /// The native loop (in `E`) and its reverse pass (in f64) where `at.opts` asks for them,
    /// else the tensor stages.
    fn vjp(at: &At<'_>, weigh: &ChunkWeights<'_>, device: &Self::Device) -> Result<Vjp> {
        super::dispatch::vjp::<Self>(at, weigh, device)
    }

    /// The native loop (in `E`) and its derivative pass (in f64) where `at.opts` asks for them,
    /// else the tensor stages.
    fn derivative_images(at: &At<'_>, names: &[&str], device: &Self::Device) -> Result<(Image, Vec<DerivativeImage>)> {
        super::dispatch::derivative_images::<Self>(at, names, device)
    }

    fn renders_jobs() -> bool {
        true
    }

    /// The native loop in the backend's precision `E` (the image `Engine::render` gives).
    fn host_image(
        job: &mut PixelJob,
        _: &Experiment,
        opts: &RenderOptions,
        _: &Self::Device,
    ) -> Result<Option<HostImage>> {
        super::native::host_image::<E>(job, opts).map(Some)
    }

    /// The native reverse pass in f64 on `opts.threads` workers, whatever the backend's
    /// precision (the job's numbers are the host's; an f32 cotangent is read as f64).
    fn job_vjp(
        job: &PixelJob,
        _: &Experiment,
        weights: Tensor<Self, 2>,
        grid: bool,
        opts: &RenderOptions,
        _: &Self::Device,
    ) -> Result<Option<JobSums>> {
        let run = |w: Cotangent<'_>| job_vjp(job, w, grid, opts.threads, opts.memory_budget).map(Some);
        // a loss's cotangent is read where it lies: a broadcast one (the backward step of a
        // sum expands one value) as that value, a laid-out one as its memory
        let primitive = weights.into_primitive().tensor();
        if let Some(w) = broadcast_value(&primitive) {
            return run(Cotangent::Uniform(w));
        }
        match &primitive {
            NdArrayTensor::F64(storage) => {
                if let Some(w) = storage.view().as_slice() {
                    return run(Cotangent::PerPixel(w));
                }
            }
            // widened in one pass (burn's element-by-element dtype conversion is far slower)
            NdArrayTensor::F32(storage) => {
                if let Some(w) = storage.view().as_slice() {
                    let w: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
                    return run(Cotangent::PerPixel(&w));
                }
            }
            _ => {}
        }
        let weights = Tensor::<Self, 2>::from_primitive(TensorPrimitive::Float(primitive));
        run(Cotangent::PerPixel(&crate::scene::to_host(weights)?))
    }

    /// The native derivative pass in f64 on `opts.threads` workers, whatever the backend's
    /// precision.
    fn job_derivatives(
        job: &PixelJob,
        _: &Experiment,
        tangents: &[f64],
        n: usize,
        opts: &RenderOptions,
        _: &Self::Device,
    ) -> Result<Option<Vec<f64>>> {
        super::native::vjp::job_derivatives(job, tangents, n, opts.threads).map(Some)
    }

    /// The native loop in the backend's precision `E`, its image not rounded to f32.
    fn render_job(
        job: &mut PixelJob,
        exp: &Experiment,
        opts: &RenderOptions,
        device: &Self::Device,
    ) -> Result<Option<KernelImage<Self>>> {
        let (photons, switch) = super::native::job_photons::<E>(job, opts)?;
        // in the backend's precision here, in one pass (burn's element-by-element dtype
        // conversion is far slower)
        let photons: Vec<E> = photons.into_iter().map(E::of).collect();
        let d = &exp.detector;
        let image = Tensor::from_data(TensorData::new(photons, [d.spixels, d.fpixels]), device);
        let switch = switch.map_or(i32::MAX, |p| i32::try_from(p).unwrap_or(i32::MAX));
        job.switch_to_nearest_after(switch);
        Ok(Some((image, switch)))
    }

    fn render_params<S: Scenes>(scenes: &Arc<S>, params: &Params<Self>) -> Result<Option<Vec<Tensor<Self, 2>>>> {
        super::launch::render_params::<Self, S>(scenes, params)
    }
}

/// The one value of a broadcast cotangent, f64 or f32, as f64: every axis of extent 1 or
/// stride 0 (the backward step of a sum expands one value).
fn broadcast_value(t: &NdArrayTensor) -> Option<f64> {
    macro_rules! one_value {
        ($storage:expr) => {{
            let view = $storage.view();
            let broadcast = view.shape().iter().zip(view.strides()).all(|(&n, &s)| n <= 1 || s == 0);
            view.iter().next().filter(|_| broadcast).map(|&w| f64::from(w))
        }};
    }
    match t {
        NdArrayTensor::F64(storage) => one_value!(storage),
        NdArrayTensor::F32(storage) => one_value!(storage),
        _ => None,
    }
}
