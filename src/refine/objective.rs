//! The function an optimiser minimises: the loss of the simulated image against an observed
//! one, as a function of the selected parameter components `x` (see [`super::selection`]).

use super::loss::Loss;
use super::selection::Selection;
use crate::base::error::{Error, Result};
use crate::config::SimConfig;
use crate::experiment::Experiment;
use crate::gradients::{replacements, At};
use crate::kernel::PixelKernel;
use crate::render::{render_scene, Image, RenderOptions};
use crate::scene::params::Params;
use crate::scene::{Scene, SceneTensors};
use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};

/// A scalar function of `x` with its gradient.
///
/// Gradient methods (Adam, L-BFGS) need `value_grad`; a Jacobian method (Gauss–Newton,
/// Levenberg–Marquardt on derivative images) would add a `residuals_jacobian` method returning
/// per-pixel residuals and their `[pixels, x]` Jacobian, implemented by objectives that can.
pub trait Objective {
    /// Number of variables.
    fn dim(&self) -> usize;
    /// The loss at `x` (a forward pass only).
    fn value(&mut self, x: &[f64]) -> Result<f64>;
    /// The loss and `∂L/∂x` at `x`.
    fn value_grad(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)>;
}

/// Loss of the image simulated at `x` against `observed` (photons per pixel, fast-major over
/// the whole detector), plus the selection's priors.
pub struct ImageObjective<'a, B: AutodiffBackend> {
    pub cfg: &'a SimConfig,
    pub exp: &'a Experiment,
    /// Values of the components that are not refined.
    pub base: Params<B>,
    pub selection: Selection,
    pub observed: &'a [f32],
    /// `true` = use the pixel; `None` = all.
    pub mask: Option<&'a [bool]>,
    pub loss: Loss,
    pub options: RenderOptions,
    pub device: B::Device,
    /// Forward passes and forward+backward passes so far.
    pub forward_passes: usize,
    pub gradient_passes: usize,
}

impl<'a, B: AutodiffBackend> ImageObjective<'a, B> {
    /// An objective starting from the configuration's own parameter values, its gradients by
    /// the backend's adjoint kernels or native reverse pass where it has them
    /// (`RenderOptions::pixel_kernel` on; [`PixelKernel::vjp`]).
    pub fn new(
        cfg: &'a SimConfig,
        exp: &'a Experiment,
        selection: Selection,
        observed: &'a [f32],
        loss: Loss,
        device: &B::Device,
    ) -> Self {
        Self {
            cfg,
            exp,
            base: Params::new(cfg, exp, device).no_grad(),
            selection,
            observed,
            mask: None,
            loss,
            // the backend's kernels or native loop for the gradients, where it has them
            options: RenderOptions {
                pixel_kernel: true,
                ..RenderOptions::default()
            },
            device: device.clone(),
            forward_passes: 0,
            gradient_passes: 0,
        }
    }

    /// The parameters at `x` (no gradient tracking).
    pub fn params(&self, x: &[f64]) -> Result<Params<B>> {
        self.selection.write(&self.base, x)
    }

    /// The image simulated at `x`.
    pub fn image(&mut self, x: &[f64]) -> Result<Image> {
        let params = self.params(x)?;
        self.forward_passes += 1;
        render_params(self.cfg, self.exp, &params, &self.options, &self.device)
    }
}

/// The image of `exp` at `params` (a forward pass, no gradient), rendered as
/// [`render_scene`] renders, chunk by chunk.
pub fn render_params<B: Backend>(
    cfg: &SimConfig,
    exp: &Experiment,
    params: &Params<B>,
    options: &RenderOptions,
    device: &B::Device,
) -> Result<Image> {
    let constants = SceneTensors::<B>::constants(exp, device);
    render_scene(exp, &Scene::new(exp), options, device, &|| {
        params.scene_with(cfg, exp, &constants, device)
    })
}

impl<B: AutodiffBackend> ImageObjective<'_, B>
where
    B::InnerBackend: PixelKernel,
{
    /// The loss at `x` and its gradient for every parameter tensor, in one pass
    /// ([`PixelKernel::vjp`]: on a GPU the render and vector–Jacobian kernels where they cover
    /// the configuration; else chunk by chunk on worker threads, the chunk's intensities read
    /// back, the loss terms and their derivatives ∂L/∂I computed on the host, and Σ (∂L/∂I)·I
    /// differentiated in the same graph: the loss is a sum over pixels, so the chunk's weights
    /// depend on the chunk alone).
    pub fn loss_vjp(&mut self, x: &[f64]) -> Result<(f64, Vec<crate::gradients::ParamGradient>)> {
        self.loss.validate()?;
        let (exp, cfg, device) = (self.exp, self.cfg, &self.device);
        if self.observed.len() != exp.detector.pixels() || self.mask.is_some_and(|m| m.len() != self.observed.len()) {
            return Err(Error::Config(format!(
                "refine: observed image has {} pixels, the detector {}",
                self.observed.len(),
                exp.detector.pixels()
            )));
        }
        let values = replacements(self.params(x)?.values()?);
        let (loss, observed, mask) = (self.loss, self.observed, self.mask);
        let weigh = |pixels: &[u32], values: &[f64]| loss.chunk_terms(pixels, values, observed, mask);
        let at = At {
            cfg,
            exp,
            values: &values,
            opts: &self.options,
        };
        let vjp = B::InnerBackend::vjp(&at, &weigh, device)?;
        self.gradient_passes += 1;
        Ok((vjp.loss, vjp.gradients))
    }
}

impl<B: AutodiffBackend> Objective for ImageObjective<'_, B>
where
    B::InnerBackend: PixelKernel,
{
    fn dim(&self) -> usize {
        self.selection.len()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64> {
        let image = self.image(x)?;
        let l = self.loss.evaluate(&image.data, self.observed, self.mask)?;
        Ok(l.value + self.selection.prior(x).0)
    }

    fn value_grad(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        let (value, grads) = self.loss_vjp(x)?;
        let (pv, pg) = self.selection.prior(x);
        let g = self.selection.gradient(&grads, x)?;
        Ok((value + pv, g.iter().zip(pg).map(|(a, b)| a + b).collect()))
    }
}
