//! The function an optimiser minimises: the loss of the simulated image against an observed
//! one, as a function of the selected parameter components `x` (see [`super::selection`]).

use super::loss::Loss;
use super::response::DetectorResponse;
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
///
/// `x` holds the selection's components, then the response's refined ones
/// ([`DetectorResponse::refined`]); the model compared with `observed` is the simulated image
/// passed through [`ImageObjective::response`] (by default none: the image itself).
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
    /// The detector's PSF and background between the simulated photons and the counts.
    pub response: DetectorResponse,
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
            response: DetectorResponse::default(),
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

    /// `x` split into the selection's components and the response's (an `x` of the
    /// selection's length alone: the response at its starting values).
    pub fn split<'x>(&self, x: &'x [f64]) -> (&'x [f64], Vec<f64>) {
        let n = self.selection.len();
        match x.len() > n {
            true => (&x[..n], x[n..].to_vec()),
            false => (x, self.response.read()),
        }
    }

    /// The parameters at `x` (no gradient tracking).
    pub fn params(&self, x: &[f64]) -> Result<Params<B>> {
        self.selection.write(&self.base, self.split(x).0)
    }

    /// The image simulated at `x` (photons, before the detector's response).
    pub fn image(&mut self, x: &[f64]) -> Result<Image> {
        let params = self.params(x)?;
        self.forward_passes += 1;
        render_params(self.cfg, self.exp, &params, &self.options, &self.device)
    }

    /// The expected counts at `x`: the image passed through the detector's response.
    pub fn model(&mut self, x: &[f64]) -> Result<Vec<f64>> {
        let image = self.image(x)?;
        let dims = [image.spixels, image.fpixels];
        self.response
            .model::<B>(&image.data, dims, &self.split(x).1, &self.device)
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

impl<B: AutodiffBackend> ImageObjective<'_, B>
where
    B::InnerBackend: PixelKernel,
{
    fn check_dim(&self, x: &[f64]) -> Result<()> {
        match x.len() == self.dim() {
            true => Ok(()),
            false => Err(Error::Config(format!(
                "refine: {} values for {} components",
                x.len(),
                self.dim()
            ))),
        }
    }

    /// The loss through the detector's response and `∂L/∂x`: a forward render, the response's
    /// gradient (`∂L/∂I` per pixel and the response's components), then one vector–Jacobian
    /// pass with the weights `∂L/∂I` for the simulator's components (none if none refined).
    fn response_value_grad(&mut self, xs: &[f64], xr: &[f64]) -> Result<(f64, Vec<f64>)> {
        let image = self.image(xs)?;
        let dims = [image.spixels, image.fpixels];
        let (value, weights, gr) = self.response.loss_vjp::<B>(
            &image.data,
            dims,
            xr,
            &self.loss,
            self.observed,
            self.mask,
            &self.device,
        )?;
        let mut g = Vec::with_capacity(self.dim());
        if !self.selection.is_empty() {
            let values = replacements(self.params(xs)?.values()?);
            let at = At {
                cfg: self.cfg,
                exp: self.exp,
                values: &values,
                opts: &self.options,
            };
            let weigh = |pixels: &[u32], _: &[f64]| (0.0, pixels.iter().map(|&p| weights[p as usize]).collect());
            let vjp = B::InnerBackend::vjp(&at, &weigh, &self.device)?;
            self.gradient_passes += 1;
            g = self.selection.gradient(&vjp.gradients, xs)?;
        }
        g.extend(gr);
        Ok((value, g))
    }
}

impl<B: AutodiffBackend> Objective for ImageObjective<'_, B>
where
    B::InnerBackend: PixelKernel,
{
    fn dim(&self) -> usize {
        self.selection.len() + self.response.refined.len()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64> {
        self.check_dim(x)?;
        let prior = self.selection.prior(self.split(x).0).0;
        if self.response.is_identity() {
            let image = self.image(x)?;
            let l = self.loss.evaluate(&image.data, self.observed, self.mask)?;
            return Ok(l.value + prior);
        }
        let model = self.model(x)?;
        Ok(super::response::terms(&self.loss, &model, self.observed, self.mask)?.0 + prior)
    }

    fn value_grad(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        self.check_dim(x)?;
        let (xs, xr) = self.split(x);
        let (value, mut g) = match self.response.is_identity() {
            true => {
                let (value, grads) = self.loss_vjp(xs)?;
                (value, self.selection.gradient(&grads, xs)?)
            }
            false => self.response_value_grad(xs, &xr)?,
        };
        let (pv, pg) = self.selection.prior(xs);
        g.iter_mut().zip(pg).for_each(|(a, b)| *a += b);
        Ok((value + pv, g))
    }
}
