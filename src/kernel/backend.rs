//! The one-kernel render as a backend extension (burn's pattern): [`PixelKernel`] is
//! implemented per backend type, never chosen by type name.
//!
//! * `CubeBackend<R, …>` (any cubecl runtime): launches [`super::pixel::render_pixels`] and
//!   [`super::pixel::image_statistics`] ([`super::cube`]).
//! * `Fusion<B>`: registers the two launches as one `CustomOpIr` in burn-fusion's stream, run
//!   by `B`'s implementation ([`super::fusion`]).
//! * burn-ndarray: [`PixelKernel::render`] and [`PixelKernel::render_job`] by the native loop
//!   ([`super::native`]) where the options ask for the kernel (`RenderOptions::pixel_kernel`),
//!   else the tensor stages (the reference); [`PixelKernel::vjp`] and
//!   [`PixelKernel::derivative_images`] by the loop's reverse pass in f64
//!   ([`super::native::vjp`]) where the options also ask for the adjoint
//!   (`RenderOptions::adjoint_kernel`), else the tensor stages. On an autodiff backend over
//!   it, a simulator's image is the native loop's and its backward pass the reverse pass
//!   ([`super::autodiff`]).
//! * `Autodiff<B>`: no kernel for packed inputs; a simulator's parameters
//!   ([`PixelKernel::render_params`], `Simulator::forward`) render with `B`'s kernel or native
//!   loop, and the image's backward pass is `B`'s vector–Jacobian product
//!   ([`PixelKernel::job_vjp`]) where it covers the image, else the tensor stages' product on
//!   the host ([`super::autodiff`]).

use super::job::{HostImage, JobSums, KernelImage, PixelJob, Switches};
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
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::Tensor;
use std::sync::Arc;

/// The kernel's inputs on the backend's device (see [`super::layout`]): f32 `params`
/// `[PARAMS]`, i32 `counts` `[COUNTS]`, f32 `sources` `[S·10]`, `orientations`
/// `[shots·S·Φ·M·12]`, `scales` `[shots]`, `hkl` `[grid]`, `mask` `[ROI positions]`.
#[derive(Clone)]
pub struct KernelInputs<B: Backend> {
    pub params: FloatTensor<B>,
    pub counts: IntTensor<B>,
    pub sources: FloatTensor<B>,
    pub orientations: FloatTensor<B>,
    pub scales: FloatTensor<B>,
    pub hkl: FloatTensor<B>,
    pub mask: FloatTensor<B>,
}

impl<B, T> KernelInputs<B>
where
    B: Backend<FloatTensorPrimitive = T, IntTensorPrimitive = T>,
{
    /// The inputs in declaration order, on a backend whose float and int tensors are one type
    /// (the cube and fusion backends).
    pub fn into_array(self) -> [T; 7] {
        [
            self.params,
            self.counts,
            self.sources,
            self.orientations,
            self.scales,
            self.hkl,
            self.mask,
        ]
    }
}

/// What one render leaves on the device: `image` `[shots, spixels, fpixels]` (photons),
/// `partials` `[blocks, 4]` and `first_max` `[blocks]` (see
/// [`super::pixel::image_statistics`]), `first_out_of_range` `[1]` (i32::MAX when tricubic
/// interpolation never left the grid).
pub struct KernelOutputs<B: Backend> {
    pub image: FloatTensor<B>,
    pub partials: FloatTensor<B>,
    pub first_max: IntTensor<B>,
    pub first_out_of_range: IntTensor<B>,
}

impl<B, T> KernelOutputs<B>
where
    B: Backend<FloatTensorPrimitive = T, IntTensorPrimitive = T>,
{
    /// The outputs from an array in declaration order (see [`KernelInputs::into_array`]).
    pub fn from_array([image, partials, first_max, first_out_of_range]: [T; 4]) -> Self {
        Self {
            image,
            partials,
            first_max,
            first_out_of_range,
        }
    }
}

/// The sizes and switches of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelShape {
    pub switches: Switches,
    pub shots: usize,
    pub spixels: usize,
    pub fpixels: usize,
    /// Statistics blocks, all shots together.
    pub blocks: usize,
}

/// The sizes and switches of one launch of the adjoint kernels
/// ([`super::adjoint::pixel_vjp`], [`super::adjoint::pixel_derivatives`]): one shot; `width` =
/// [`super::layout::G_GLOBALS`] + 12 per orientation row; `derivatives`: the number of
/// derivative images (0 for the vector–Jacobian product).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VjpShape {
    pub switches: Switches,
    pub spixels: usize,
    pub fpixels: usize,
    pub width: usize,
    pub derivatives: usize,
}

/// How a backend renders images and their gradients: burn's kind of backend extension, the
/// one place where "kernel or tensor stages?" is decided.
///
/// The methods callers use are [`PixelKernel::render`], [`PixelKernel::vjp`],
/// [`PixelKernel::derivative_images`] and [`PixelKernel::render_params`]. Their default bodies
/// run the tensor stages (the reference, on any backend); the cube backends (burn-wgpu, fused or
/// not) override them with the one-kernel render and the adjoint kernels, falling back to the
/// defaults where the kernels do not cover a configuration or the [`RenderOptions`] ask for
/// the tensor stages. The `pixel_*` methods are the launches those overrides make.
pub trait PixelKernel: Backend {
    /// The images (photons) of `scene`, one shot or a batch of shots that batch together
    /// ([`Scene::batch`]) of `exp`, one per shot; progress reported through `opts`.
    fn render(exp: &Experiment, scene: &Scene, opts: &RenderOptions, device: &Self::Device) -> Result<Vec<Image>> {
        crate::render::render_by_stages::<Self>(exp, scene, opts, device)
    }

    /// [`PixelKernel::render`] with the amorphous background of `background` (`-stol`) added
    /// to every image, as the `nanobragg` program writes it. The default renders the
    /// background on its own and adds it ([`with_background`]); the CPU engine sums
    /// it in its per-pixel loop, sharing each sample's geometry.
    fn render_with_background(
        exp: &Experiment,
        scene: &Scene,
        opts: &RenderOptions,
        background: &BackgroundScene,
        device: &Self::Device,
    ) -> Result<Vec<Image>> {
        with_background(exp, background, Self::render(exp, scene, opts, device))
    }

    /// The image at `at`, the loss and the weights ∂L/∂I that `weigh` returns for its rendered
    /// pixels, and Σ_p w_p·∂I_p/∂θ for every parameter θ (the gradient of that loss).
    fn vjp(at: &At<'_>, weigh: &ChunkWeights<'_>, device: &Self::Device) -> Result<Vjp> {
        crate::gradients::vjp_by_stages::<Self>(at, weigh, device)
    }

    /// The image at `at` and the derivative images dI/dθ of `names`
    /// ([`crate::gradients::derivative::DERIVATIVES`], in their flags' units).
    fn derivative_images(at: &At<'_>, names: &[&str], device: &Self::Device) -> Result<(Image, Vec<DerivativeImage>)> {
        crate::gradients::derivative::derivative_images_by_stages::<Self>(at, names, device)
    }

    /// Whether [`PixelKernel::render_pixels`] runs a kernel here (else it returns `None`).
    fn has_pixel_kernel() -> bool {
        false
    }

    /// Whether [`PixelKernel::render_job`] renders here: the cube kernel, or burn-ndarray's
    /// native loop.
    fn renders_jobs() -> bool {
        Self::has_pixel_kernel()
    }

    /// The image `[spixels, fpixels]` (photons) of the one-shot `job` of `exp` on `device`,
    /// untracked, and the pixel after which it switched to nearest neighbour
    /// ([`PixelJob::switch_pixel`], also set in `job` for its adjoint): by the kernel (f32), or
    /// the native loop in the backend's precision on `opts.threads` workers. `None` where this
    /// backend renders no jobs or the launch does not fit.
    fn render_job(
        job: &mut PixelJob,
        exp: &Experiment,
        opts: &RenderOptions,
        device: &Self::Device,
    ) -> Result<Option<KernelImage<Self>>> {
        let _ = (job, exp, opts, device);
        Ok(None)
    }

    /// The image of the one-shot `job` of `exp`, read back, with C's tricubic
    /// fall-back, where the render found one, set in `job`
    /// ([`PixelJob::switch_to_nearest_after`]) for its adjoint: by the kernel (with C's
    /// statistics) or the native loop. `None` where this backend renders no jobs or the launch
    /// does not fit.
    fn host_image(
        job: &mut PixelJob,
        exp: &Experiment,
        opts: &RenderOptions,
        device: &Self::Device,
    ) -> Result<Option<HostImage>> {
        let _ = (job, exp, opts, device);
        Ok(None)
    }

    /// Σ_p w_p·∂I_p/∂z of the one-shot `job` of `exp` in the vector–Jacobian layout
    /// ([`super::layout`]'s `G_*` slots, then 12 per orientation row) for the weights
    /// `weights` `[spixels, fpixels]` (∂L/∂I), with the structure-factor grid's gradient where
    /// `grid`: by the adjoint kernels (f32) or the native loop's reverse pass (f64). `None`
    /// where this backend has neither.
    fn job_vjp(
        job: &PixelJob,
        exp: &Experiment,
        weights: Tensor<Self, 2>,
        grid: bool,
        opts: &RenderOptions,
        device: &Self::Device,
    ) -> Result<Option<JobSums>> {
        let _ = (job, exp, weights, grid, opts, device);
        Ok(None)
    }

    /// The derivative images `[n, spixels·fpixels]` of the one-shot `job` of `exp` for the
    /// tangents `tangents` `[n, width]` (t_k = ∂z/∂θ_k in the vector–Jacobian layout): by the
    /// derivative-image kernel (f32) or the native loop's reverse pass, pixel by pixel (f64).
    /// `None` where this backend has neither.
    fn job_derivatives(
        job: &PixelJob,
        exp: &Experiment,
        tangents: &[f64],
        n: usize,
        opts: &RenderOptions,
        device: &Self::Device,
    ) -> Result<Option<Vec<f64>>> {
        let _ = (job, exp, tangents, n, opts, device);
        Ok(None)
    }

    /// Launch the render and the statistics; `None` where this backend has no kernel (the
    /// caller renders with the tensor stages).
    fn render_pixels(inputs: KernelInputs<Self>, shape: KernelShape) -> Option<KernelOutputs<Self>> {
        let _ = (inputs, shape);
        None
    }

    /// Σ_p w_p·∂I_p/∂z `[width]` (the [`super::layout`] `G_*` slots, then 12 per orientation
    /// row) for weights `weights` `[spixels, fpixels]` (∂L/∂I, f32), by the vector–Jacobian
    /// kernel and its reduction (two launches); `None` where this backend has no kernel.
    fn pixel_vjp(inputs: KernelInputs<Self>, weights: FloatTensor<Self>, shape: VjpShape) -> Option<FloatTensor<Self>> {
        let _ = (inputs, weights, shape);
        None
    }

    /// The derivative images `[derivatives, spixels·fpixels]` dI_p/dθ_k for the tangents
    /// `tangents` `[derivatives, width]` (t_k = ∂z/∂θ_k in the vector–Jacobian layout), by one
    /// launch of [`super::adjoint::pixel_derivatives`]; `None` where this backend has no
    /// kernel.
    fn pixel_derivatives(
        inputs: KernelInputs<Self>,
        tangents: FloatTensor<Self>,
        shape: VjpShape,
    ) -> Option<FloatTensor<Self>> {
        let _ = (inputs, tangents, shape);
        None
    }

    /// The structure-factor grid's Σ_p w_p·∂I_p/∂F_node as 64-bit fixed-point sums `[2·nodes]`
    /// (i32 words, low then high, per node) in units of 1/`params[GRID_SCALE]`, for weights
    /// `weights` `[spixels, fpixels]` (f32), by one launch of
    /// [`super::scatter::pixel_grid_vjp`]; `None` where this backend has no kernel.
    fn pixel_grid_vjp(
        inputs: KernelInputs<Self>,
        weights: FloatTensor<Self>,
        shape: VjpShape,
        nodes: usize,
    ) -> Option<IntTensor<Self>> {
        let _ = (inputs, weights, shape, nodes);
        None
    }

    /// The images `[spixels, fpixels]` (photons) of `scenes` at `params` by the kernel,
    /// [`crate::Simulator::forward`]'s fast path: the parameters' values are read back and the
    /// scenes evaluated from them on the host ([`super::images_at`]). On an autodiff backend
    /// each image is one operation of the parameters' graph whose backward pass is the
    /// vector–Jacobian kernel, or the tensor stages' product on the host where the kernel does
    /// not cover the image ([`super::autodiff`]). `None` where this
    /// backend has no kernel (the caller renders with the tensor stages).
    fn render_params<S: Scenes>(scenes: &Arc<S>, params: &Params<Self>) -> Result<Option<Vec<Tensor<Self, 2>>>> {
        let _ = (scenes, params);
        Ok(None)
    }
}
