//! The cube backends' and burn-ndarray's bodies of [`PixelKernel::render`], [`PixelKernel::vjp`] and
//! [`PixelKernel::derivative_images`]: the kernels where the options ask for them and they
//! cover the configuration, else the trait's defaults (the tensor stages). Every other caller
//! goes through the trait and decides nothing.

use super::backend::PixelKernel;
use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::gradients::derivative::{derivative_images_by_stages, DerivativeImage};
use crate::gradients::{vjp_by_stages, At, ChunkWeights, Vjp};
use crate::render::image::Image;
use crate::render::{render_by_stages, RenderOptions};
use crate::scene::Scene;

/// The images of `scene` (one shot or a batch) by one kernel launch where `opts.pixel_kernel`
/// asks for it and the launch fits, else by the tensor stages.
pub(crate) fn render<B: PixelKernel>(
    exp: &Experiment,
    scene: &Scene,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<Vec<Image>> {
    if opts.pixel_kernel {
        if let Some(images) = super::launch::render::<B>(exp, scene, device)? {
            if let Some(progress) = &opts.progress {
                let n = exp.active_pixels().rect().len();
                progress(n, n);
            }
            return Ok(images);
        }
    }
    render_by_stages::<B>(exp, scene, opts, device)
}

/// The image at `at`, the loss and Σ_p w_p·∂I_p/∂θ by the render and vector–Jacobian kernels
/// (or the native loop and its reverse pass) where `at.opts` asks for both and they cover the configuration, else by the tensor stages.
pub(crate) fn vjp<B: PixelKernel>(at: &At<'_>, weigh: &ChunkWeights<'_>, device: &B::Device) -> Result<Vjp> {
    if at.opts.pixel_kernel && at.opts.adjoint_kernel {
        if let Some(vjp) = super::vjp::weighted_vjp::<B>(at, weigh, device)? {
            return Ok(vjp);
        }
    }
    vjp_by_stages::<B>(at, weigh, device)
}

/// The image and the derivative images `names` by the derivative-image kernel where `at.opts`
/// asks for the kernels, `at` is the configuration's own point and the kernel covers it, else
/// by the tensor stages.
pub(crate) fn derivative_images<B: PixelKernel>(
    at: &At<'_>,
    names: &[&str],
    device: &B::Device,
) -> Result<(Image, Vec<DerivativeImage>)> {
    if at.opts.pixel_kernel && at.opts.adjoint_kernel && at.values.is_empty() {
        if let Some(out) = super::vjp::derivative_images::<B>(at.cfg, at.exp, names, at.opts, device)? {
            return Ok(out);
        }
    }
    derivative_images_by_stages::<B>(at, names, device)
}

/// The cube backends' bodies of [`PixelKernel::render_job`], [`PixelKernel::host_image`],
/// [`PixelKernel::job_vjp`], [`PixelKernel::job_derivatives`] and
/// [`PixelKernel::render_params`]: the render, vector–Jacobian and derivative-image kernels,
/// in f32, where a launch fits.
macro_rules! cube_jobs {
    () => {
        fn render_job(
            job: &mut $crate::kernel::job::PixelJob,
            exp: &$crate::experiment::Experiment,
            _: &$crate::render::RenderOptions,
            device: &Self::Device,
        ) -> $crate::base::error::Result<Option<$crate::kernel::job::KernelImage<Self>>> {
            $crate::kernel::launch::cube_render_job::<Self>(job, exp, device)
        }

        fn host_image(
            job: &mut $crate::kernel::job::PixelJob,
            exp: &$crate::experiment::Experiment,
            _: &$crate::render::RenderOptions,
            device: &Self::Device,
        ) -> $crate::base::error::Result<Option<$crate::kernel::job::HostImage>> {
            $crate::kernel::launch::cube_host_image::<Self>(job, exp, device)
        }

        fn job_vjp(
            job: &$crate::kernel::job::PixelJob,
            exp: &$crate::experiment::Experiment,
            weights: burn::tensor::Tensor<Self, 2>,
            grid: bool,
            _: &$crate::render::RenderOptions,
            device: &Self::Device,
        ) -> $crate::base::error::Result<Option<$crate::kernel::job::JobSums>> {
            $crate::kernel::vjp::kernel_job_vjp::<Self>(job, exp, weights, grid, device)
        }

        fn job_derivatives(
            job: &$crate::kernel::job::PixelJob,
            exp: &$crate::experiment::Experiment,
            tangents: &[f64],
            n: usize,
            _: &$crate::render::RenderOptions,
            device: &Self::Device,
        ) -> $crate::base::error::Result<Option<Vec<f64>>> {
            $crate::kernel::vjp::kernel_job_derivatives::<Self>(job, exp, tangents, n, device)
        }

        fn render_params<S: $crate::render::scenes::Scenes>(
            scenes: &std::sync::Arc<S>,
            params: &$crate::scene::params::Params<Self>,
        ) -> $crate::base::error::Result<Option<Vec<burn::tensor::Tensor<Self, 2>>>> {
            $crate::kernel::launch::render_params::<Self, S>(scenes, params)
        }
    };
}
#[cfg(feature = "gpu")]
pub(crate) use cube_jobs;
