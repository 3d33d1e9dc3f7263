//! The one-kernel render on an autodiff backend: the forward pass is the inner backend's kernel,
//! the backward pass recomputes the vector–Jacobian product through the tensor stages.
//!
//! The parameters reach the pixels only through the scene's few variables z
//! ([`SceneTensors::variables`]), so the kernel's image is one operation of the graph whose
//! single parent is z (concatenated). Its backward step receives ∂L/∂I and computes
//! g_z = Σ_p (∂L/∂I_p)·∂I_p/∂z with [`scene_vjp`]: the tensor stages at z's values, span by span,
//! each span differentiated on a graph of its own. The graph from the parameters to z then
//! carries g_z back to them as usual. The gradients are those of the tensor stages (the
//! reference); the image is the kernel's (equal to f32 precision, `tests/integration/kernel.rs`).
//!
//! A backward step that runs autodiff itself needs the vendored burn-autodiff's sweep to skip
//! locked graphs (`vendor/README.md`).

use super::job::PixelJob;
use super::{job_image, runs_on, PixelKernel};
use crate::error::Result;
use crate::gradient::scene_vjp;
use crate::scene::{to_host, Scene, SceneTensors};
use crate::simulator::Setup;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use std::marker::PhantomData;
use std::sync::Arc;

/// The image `[spixels, fpixels]` of the differentiable scene `st` by `B`'s kernel, on `st`'s
/// graph; `None` where `B` has no kernel.
pub fn render_scene<B: PixelKernel, C: CheckpointStrategy>(
    setup: &Arc<Setup>,
    host: &Scene,
    st: &SceneTensors<Autodiff<B, C>>,
) -> Result<Option<Tensor<Autodiff<B, C>, 2>>> {
    let exp = &setup.exp;
    if !runs_on::<B>(exp, 1) {
        return Ok(None);
    }
    let z = st.variables();
    // the scene at z's values, untracked: what the kernel renders now and the backward pass
    // differentiates later
    let base = st
        .clone()
        .with_variables(z.iter().map(|t| t.clone().detach()).collect());
    let job = PixelJob::of_scene_tensors(exp, host, &base)?;
    let image = job_image::<B>(job, exp, &st.coef.device())?.into_primitive().tensor();
    let z = Tensor::cat(z, 0).into_primitive().tensor();
    let step = RecomputeBackward::<C>(PhantomData);
    let out = match <RecomputeBackward<C> as Backward<B, 1>>::prepare::<C>(step, [z.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(
            Recompute {
                setup: setup.clone(),
                host: Arc::new(host.clone()),
                base,
            },
            image,
        ),
        OpsKind::UnTracked(prep) => prep.finish(image),
    };
    Ok(Some(Tensor::from_primitive(TensorPrimitive::Float(out))))
}

/// The backward step of [`render_scene`].
#[derive(Debug)]
struct RecomputeBackward<C>(PhantomData<fn() -> C>);

/// What the backward step recomputes from: the setup, its host scene and the scene at the
/// forward pass's values (untracked).
#[derive(Debug, Clone)]
struct Recompute<B: PixelKernel, C: CheckpointStrategy> {
    setup: Arc<Setup>,
    host: Arc<Scene>,
    base: SceneTensors<Autodiff<B, C>>,
}

impl<B: PixelKernel, C: CheckpointStrategy> Backward<B, 1> for RecomputeBackward<C> {
    type State = Recompute<B, C>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [z] = ops.parents;
        let cotangent = grads.consume::<B>(&ops.node);
        let Some(z) = z else {
            return;
        };
        // a backward step has no way to report an error; a readback cannot fail on a live
        // device
        let g_z = ops
            .state
            .scene_gradient(cotangent)
            .expect("the tensor stages' vector–Jacobian product of the kernel's image");
        grads.register::<B>(z.id, g_z);
    }
}

impl<B: PixelKernel, C: CheckpointStrategy> Recompute<B, C> {
    /// g_z = Σ_p w_p·∂I_p/∂z `[Σ|z|]` (z concatenated) for the weights w = ∂L/∂I
    /// `[spixels, fpixels]`, through the tensor stages.
    fn scene_gradient(&self, cotangent: FloatTensor<B>) -> Result<FloatTensor<B>> {
        let w = to_host(Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(cotangent)))?;
        // the weights of a chunk's rendered pixels (indices fast-major over the detector)
        let weigh = |pixels: &[u32], _: &[f64]| (0.0, pixels.iter().map(|&p| w[p as usize]).collect());
        let device = self.base.coef.device();
        let Setup { exp, options, .. } = &*self.setup;
        let vjp = scene_vjp::<Autodiff<B, C>>(exp, &self.host, &self.base, &weigh, options, &device)?;
        let g_z = vjp.scene_grad.concat();
        let n = g_z.len();
        Ok(Tensor::<B, 1>::from_data(TensorData::new(g_z, [n]), &device)
            .into_primitive()
            .tensor())
    }
}
