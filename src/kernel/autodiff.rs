//! The one-kernel render on an autodiff backend: each image is one operation of the caller's
//! graph whose parents are the parameter tensors.
//!
//! * **Forward:** the parameters' values are read back, the scene is evaluated from them on the
//!   host in f64 (whatever the CPU device's default dtype) and the inner backend's kernel or
//!   native loop renders it ([`super::images_at`]). The device
//!   runs the kernel alone: no graph from the parameters to the scene is built there.
//! * **Backward:** w = ∂L/∂I stays on the device. The inner backend's vector–Jacobian product
//!   of the forward pass's job ([`PixelKernel::job_vjp`]: the adjoint kernels on a GPU,
//!   [`super::adjoint`] and [`super::scatter`]; the native loop's reverse pass on the CPU,
//!   [`super::native::vjp`]) gives g_z = Σ_p w_p·∂I_p/∂z for the scene's variables z (and,
//!   where the structure-factor grid's values are parameters, their gradient). Meanwhile the
//!   host thread builds the scene graph again from the values on `Autodiff<NdArray<f64>>` in
//!   f64, and (∂z/∂θ)ᵀ·g_z follows over it. (Where the forward pass's jobs were too large to
//!   keep, [`KEPT_JOBS_SHARE`], the job is made again from that graph first.) Where the kernels do not cover the image ([`super::vjp::kernel_covers`]),
//!   w is read back and the tensor stages take the product on the host over the worker pool
//!   ([`scene_graph_vjp`]), in the CPU device's float dtype (f64 unless the process renders in
//!   f32). Each parameter's gradient is registered
//!   on its tensor, so it flows on into the caller's graph.
//!
//! The image is the kernel's or the loop's; its gradients are the kernel's adjoint (equal to
//! the tensor stages' to f32 precision, `src/tests/kernel_vjp.rs`), the loop's
//! reverse pass (to f64 rounding, `src/tests/native_vjp.rs`) or the tensor stages'
//! own. The
//! fall-back runs autodiff of its own, on worker threads, inside the caller's backward pass:
//! the vendored burn-autodiff runs no step under a lock (`vendor/README.md`).

use super::backend::PixelKernel;
use super::job::PixelJob;
use super::launch::{images_at, RenderedJob};
use super::vjp::{grid_is_parameter, kernel_covers, row_incidents, KernelScene, SceneVariables};
use crate::base::error::Result;
use crate::diff::host::{f64_options, Host};
use crate::gradients::{scene_graph_vjp, ParamGradient};
use crate::render::scenes::Scenes;
use crate::render::RenderOptions;
use crate::scene::params::{Params, PARAMETERS};
use crate::scene::to_host;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::ndarray::NdArrayDevice;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use std::marker::PhantomData;
use std::sync::Arc;

/// The parameter slots, in [`PARAMETERS`] order: the parents of each image's operation.
const SLOTS: usize = PARAMETERS.len();

/// The images of one [`render_params`] keep their forward-pass jobs (their scenes,
/// structure-factor grids and masks) for their backward steps where the jobs take at most this
/// share of the memory budget (`RenderOptions::memory_budget`, the smallest of the images');
/// beyond it each backward step makes its job again.
pub const KEPT_JOBS_SHARE: usize = 4;

/// Parameter values by name, as [`Params::values`] lists them.
type Values = Vec<(&'static str, Vec<f64>)>;

/// Images `[spixels, fpixels]` on a backend's graph.
type Images<B, C> = Vec<Tensor<Autodiff<B, C>, 2>>;

/// The images `[spixels, fpixels]` of `scenes` at `params` by `B`'s kernel, each on the
/// parameters' graph; `None` where `B` has no kernel or a launch does not fit.
pub fn render_params<B: PixelKernel, C: CheckpointStrategy, S: Scenes>(
    scenes: &Arc<S>,
    params: &Params<Autodiff<B, C>>,
) -> Result<Option<Images<B, C>>> {
    // no readback where there is no kernel or native loop
    if !B::renders_jobs() {
        return Ok(None);
    }
    let values = params.values()?;
    let device = params.cell.val().device();
    let Some(images) = images_at::<B, S>(&**scenes, &values, &device)? else {
        return Ok(None);
    };
    let tensors = params.tensors();
    let present: [bool; SLOTS] = std::array::from_fn(|k| tensors[k].1.is_some());
    // an absent parameter's slot holds the cell's node (always present) and is skipped by the
    // backward step
    let parents = std::array::from_fn::<_, SLOTS, _>(|k| {
        let t = tensors[k].1.clone().unwrap_or_else(|| params.cell.val());
        t.into_primitive().tensor().node
    });
    let values = Arc::new(values);
    let budget = scenes
        .images()
        .iter()
        .map(|(setup, _)| setup.options.memory_budget)
        .min();
    let keep = images.iter().map(|(_, job)| job.bytes()).sum::<usize>() <= budget.unwrap_or(0) / KEPT_JOBS_SHARE;
    let on_graph = |(image, ((pixels, switch_pixel), job)): (usize, RenderedJob<B>)| {
        let pixels = pixels.into_primitive().tensor();
        let step = ParamsBackward::<S, C>(PhantomData);
        let out = match <ParamsBackward<S, C> as Backward<B, SLOTS>>::prepare::<C>(step, parents.clone())
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(
                ImageVjp {
                    scenes: scenes.clone(),
                    values: values.clone(),
                    image,
                    switch_pixel,
                    job: keep.then(|| Arc::new(job)),
                    present,
                },
                pixels,
            ),
            OpsKind::UnTracked(prep) => prep.finish(pixels),
        };
        Tensor::from_primitive(TensorPrimitive::Float(out))
    };
    Ok(Some(images.into_iter().enumerate().map(on_graph).collect()))
}

/// The backward step of one image of [`render_params`].
#[derive(Debug)]
struct ParamsBackward<S, C>(PhantomData<fn() -> (S, C)>);

/// What the backward step differentiates: the image `image` of `scenes` at the parameter
/// `values`, whose render switched to nearest neighbour after `switch_pixel` (C's tricubic
/// fall-back, `i32::MAX`: never), `job` the render's job where it was kept
/// ([`KEPT_JOBS_SHARE`]); `present[k]`: whether slot k of [`PARAMETERS`] is a parameter of the
/// simulator.
#[derive(Debug)]
struct ImageVjp<S> {
    scenes: Arc<S>,
    values: Arc<Values>,
    image: usize,
    switch_pixel: i32,
    job: Option<Arc<PixelJob>>,
    present: [bool; SLOTS],
}

impl<S> Clone for ImageVjp<S> {
    fn clone(&self) -> Self {
        Self {
            scenes: self.scenes.clone(),
            values: self.values.clone(),
            job: self.job.clone(),
            ..*self
        }
    }
}

impl<B: PixelKernel, C: CheckpointStrategy, S: Scenes> Backward<B, SLOTS> for ParamsBackward<S, C> {
    type State = ImageVjp<S>;

    fn backward(self, ops: Ops<Self::State, SLOTS>, grads: &mut Gradients, _: &mut Checkpointer) {
        let cotangent = grads.consume::<B>(&ops.node);
        if ops.parents.iter().all(Option::is_none) {
            return;
        }
        let device = B::float_device(&cotangent);
        // a backward step has no way to report an error; a readback cannot fail on a live
        // device, and the values were read from these very parameters
        let gradients = ops
            .state
            .gradients::<B>(cotangent)
            .expect("the vector–Jacobian product of the kernel's or the loop's image");
        let slots = ops.parents.iter().zip(ops.state.present).zip(PARAMETERS);
        for ((parent, present), (name, _)) in slots {
            let (Some(parent), true) = (parent, present) else {
                continue;
            };
            let g = gradients.iter().find(|g| g.name == name).map(|g| g.values.clone());
            let g = g.expect("a gradient for every present parameter");
            let n = g.len();
            let g = Tensor::<B, 1>::from_data(TensorData::new(g, [n]), &device);
            grads.register::<B>(parent.id, g.into_primitive().tensor());
        }
    }
}

/// How a backward pass on the host runs: the CPU engine's chunking, on the simulator's worker
/// count and within its memory budget.
fn backward_options(setup: &crate::render::scenes::Setup) -> RenderOptions {
    RenderOptions {
        memory_budget: setup.options.memory_budget,
        threads: setup.options.threads,
        ..RenderOptions::default()
    }
}

impl<S: Scenes> ImageVjp<S> {
    /// Σ_p w_p·∂I_p/∂θ for every parameter, w = ∂L/∂I `[spixels, fpixels]` the cotangent: by
    /// the inner backend's vector–Jacobian product (the kernels' or the native loop's) where
    /// it covers the image (and the image's options allow it, `RenderOptions::adjoint_kernel`),
    /// else by the tensor stages on the host.
    fn gradients<B: PixelKernel>(&self, cotangent: FloatTensor<B>) -> Result<Vec<ParamGradient>> {
        let (setup, host) = self.scenes.images()[self.image];
        let w = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(cotangent));
        if setup.options.adjoint_kernel && B::renders_jobs() {
            if let Some(g) = self.kernel_gradients(w.clone())? {
                return Ok(g);
            }
        }
        // the tensor stages make their constants in the CPU device's float dtype: so are the
        // parameters
        let device = NdArrayDevice::Cpu;
        let params = Params::<Autodiff<Host>>::from_values(&self.values, &device)?;
        let graph = self.scenes.scene(&params, self.image);
        let w = to_host(w)?;
        // the weights of a chunk's rendered pixels (indices fast-major over the detector)
        let weigh = |pixels: &[u32], _: &[f64]| (0.0, pixels.iter().map(|&p| w[p as usize]).collect());
        crate::base::workers::tune_process();
        let vjp = scene_graph_vjp(
            &setup.exp,
            host,
            &params,
            graph,
            &weigh,
            &backward_options(setup),
            &device,
        )?;
        Ok(vjp.gradients)
    }

    /// Σ_p w_p·∂I_p/∂θ by the vector–Jacobian kernel on `B`'s device, then (∂z/∂θ)ᵀ·g_z over
    /// the small scene graph on the host, in f64 whatever the CPU device's default dtype; `None`
    /// where the kernels do not cover the image ([`super::vjp::kernel_covers`]).
    fn kernel_gradients<B: PixelKernel>(&self, w: Tensor<B, 2>) -> Result<Option<Vec<ParamGradient>>> {
        if let Some(job) = &self.job {
            return self.kept_job_gradients(job, w);
        }
        let (setup, host) = self.scenes.images()[self.image];
        // the small scene graph where burn-ndarray's operations run in place
        let (params, scene) = crate::base::workers::on_host(|| {
            let params = Params::<Autodiff<Host>>::from_values(&self.values, f64_options())?;
            let graph = self.scenes.scene(&params, self.image);
            KernelScene::new(&setup.exp, host, &params, graph).map(|scene| (params, scene))
        })?;
        match scene {
            Some(mut scene) => {
                // the forward pass's render found C's tricubic fall-back pixel
                scene.job.switch_to_nearest_after(self.switch_pixel);
                scene.fall_back_known = true;
                let device = w.device();
                scene.gradients::<B>(&setup.exp, &params, w, &backward_options(setup), &device)
            }
            None => Ok(None),
        }
    }

    /// [`Self::kernel_gradients`] from the forward pass's `job` (its fall-back pixel set): its
    /// vector–Jacobian product on the calling thread (the workers' chunks, or the device's
    /// launches) while the host thread builds the scene graph.
    fn kept_job_gradients<B: PixelKernel>(
        &self,
        job: &PixelJob,
        w: Tensor<B, 2>,
    ) -> Result<Option<Vec<ParamGradient>>> {
        if !kernel_covers(job) {
            return Ok(None);
        }
        let (setup, _) = self.scenes.images()[self.image];
        let grid_parameter = PARAMETERS
            .iter()
            .zip(self.present)
            .any(|((name, _), p)| p && *name == "structure_factors");
        let grid = grid_is_parameter(grid_parameter, job);
        let device = w.device();
        let opts = backward_options(setup);
        let (graph, sums) = crate::base::workers::on_host_beside(
            || {
                let params = Params::<Autodiff<Host>>::from_values(&self.values, f64_options())?;
                let graph = self.scenes.scene(&params, self.image);
                Ok::<_, crate::base::error::Error>((SceneVariables::new(graph), params))
            },
            || B::job_vjp(job, &setup.exp, w, grid, &opts, &device),
        );
        let (variables, params) = graph?;
        let Some(out) = sums? else {
            return Ok(None);
        };
        variables
            .gradients(&setup.exp, &params, out, &row_incidents(job))
            .map(Some)
    }
}

/// An autodiff backend has no kernel of its own for [`PixelKernel::render_pixels`] (the
/// engines render with it only for gradients, through the tensor stages); a simulator's
/// parameters render with the inner backend's kernel, the backward pass taking the inner
/// backend's vector–Jacobian kernel (the tensor stages' product on the host where it does not
/// cover the image).
impl<B: PixelKernel, C: CheckpointStrategy> PixelKernel for Autodiff<B, C> {
    fn render_params<S: Scenes>(scenes: &Arc<S>, params: &Params<Self>) -> Result<Option<Vec<Tensor<Self, 2>>>> {
        render_params::<B, C, S>(scenes, params)
    }
}
