//! The engine's computations at a point of parameter space ([`At`]: a configuration with some
//! parameters replaced by host values), for callers that pick the engine at run time and never
//! name a backend type: the Python package, a C or FFI binding.
//!
//! Each method runs one generic task through [`Engine::run`]. They live in the library so that
//! their instantiations for the four engines' backends are compiled once, with the library: a
//! release build does not share generic instantiations between crates, and a caller's own
//! [`crate::engine::BackendTask`] compiles the whole render again for every backend.

use crate::base::error::{Error, Result};
use crate::engine::{to_host, BackendTask, Engine, Simulator};
use crate::gradients::At;
use crate::kernel::PixelKernel;
use crate::refine::gradcheck::{gradcheck, GradcheckOptions, GradcheckReport, ImageLoss};
use crate::refine::loss::Loss;
use crate::refine::objective::{render_params, ImageObjective, Objective};
use crate::refine::response::{DetectorResponse, LabelSplit, PsfResponse};
use crate::refine::selection::Selection;
use crate::render::Image;
use burn::backend::Autodiff;

/// Every present parameter's values, `(name, values)` in [`crate::scene::params::PARAMETERS`]
/// order and units.
pub type ParameterValues = Vec<(&'static str, Vec<f64>)>;

/// A loss of the image against observed counts, over the named components
/// ([`Engine::loss_and_gradient_at`]).
#[derive(Debug, Clone, Copy)]
pub struct LossRequest<'a> {
    /// The components, as [`LabelSplit`] reads them: the simulator's ([`Selection::named`])
    /// and the detector response's (`psf_fwhm`, `background_scale`).
    pub labels: &'a [&'a str],
    /// The components' values (flags' units, [`Selection::read`]); `None`: those at the point.
    pub x: Option<&'a [f64]>,
    /// Observed counts, photons per pixel, `[slow, fast]` fast-major.
    pub observed: &'a [f32],
    /// `true` where a pixel counts; `None`: every pixel.
    pub mask: Option<&'a [bool]>,
    pub loss: Loss,
    /// The background at scale 1 (photons per pixel) added before the flags' PSF.
    pub background: Option<&'a [f64]>,
}

impl Engine {
    /// The image at the point `at` (a forward pass with `at.opts` as this engine adapts them,
    /// [`Engine::options`]; the configuration's own values render as the binary does through
    /// [`Engine::render`]).
    pub fn render_at(&self, at: &At<'_>) -> Result<Image> {
        struct Task<'a>(At<'a>);
        impl BackendTask for Task<'_> {
            type Output = Image;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Image> {
                let params = self.0.params::<B>(device)?;
                let At { cfg, exp, opts, .. } = self.0;
                render_params(cfg, exp, &params, opts, device)
            }
        }
        let opts = self.options(at.opts);
        self.run(Task(At { opts: &opts, ..*at }))
    }

    /// The image at the point `at` in this engine's own precision, not rounded to f32
    /// ([`Simulator::forward`]; `[slow, fast]` fast-major).
    pub fn image_values_at(&self, at: &At<'_>) -> Result<Vec<f64>> {
        struct Task<'a>(At<'a>);
        impl BackendTask for Task<'_> {
            type Output = Vec<f64>;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Vec<f64>> {
                let mut sim = Simulator::<B>::from_experiment(self.0.cfg, self.0.exp.clone(), device)?;
                sim.params = self.0.params::<B>(device)?;
                to_host(sim.forward())
            }
        }
        self.run(Task(*at))
    }

    /// Every present parameter's values at the point `at` ([`Params::values`]); fails naming
    /// a replaced parameter that is unknown or has the wrong number of components.
    pub fn values_at(&self, at: &At<'_>) -> Result<ParameterValues> {
        struct Task<'a>(At<'a>);
        impl BackendTask for Task<'_> {
            type Output = ParameterValues;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<ParameterValues> {
                self.0.all_values::<B>(device)
            }
        }
        self.run(Task(*at))
    }

    /// The vector of the components `labels` at the point `at` ([`Selection::read`], the
    /// flags' units), the detector response's among them: its PSF at the flags' and a
    /// background at scale 1.
    pub fn read_vector_at(&self, at: &At<'_>, labels: &[&str]) -> Result<Vec<f64>> {
        struct Task<'a> {
            at: At<'a>,
            labels: &'a [&'a str],
        }
        impl BackendTask for Task<'_> {
            type Output = Vec<f64>;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Vec<f64>> {
                let params = self.at.params::<B>(device)?;
                let split = LabelSplit::new(self.labels);
                let selection = Selection::named(&split.simulator, &params)?;
                let (cfg, exp) = (self.at.cfg, self.at.exp);
                let response = DetectorResponse {
                    psf: PsfResponse::from_config(cfg, exp, &[]),
                    background: Some(Vec::new()),
                    ..DetectorResponse::default()
                }
                .refining(&split.response)?;
                let mut x = selection.read(&params)?;
                x.extend(response.read());
                Ok(split.from_objective(&x))
            }
        }
        self.run(Task { at: *at, labels })
    }

    /// Every parameter's values after writing `x` into the simulator's components `labels`
    /// at the point `at` ([`Selection::write`]); a detector response component is an error.
    pub fn write_vector_at(&self, at: &At<'_>, labels: &[&str], x: &[f64]) -> Result<ParameterValues> {
        struct Task<'a> {
            at: At<'a>,
            labels: &'a [&'a str],
            x: &'a [f64],
        }
        impl BackendTask for Task<'_> {
            type Output = ParameterValues;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<ParameterValues> {
                let params = self.at.params::<B>(device)?;
                let split = LabelSplit::new(self.labels);
                if let Some(c) = split.response.first() {
                    return Err(Error::Config(format!(
                        "{}: a detector response component, not a simulator parameter (give it to loss_and_gradient)",
                        c.label()
                    )));
                }
                let selection = Selection::named(&split.simulator, &params)?;
                selection.write(&params, self.x)?.values()
            }
        }
        self.run(Task { at: *at, labels, x })
    }

    /// `(f, ∂f/∂x)`: the loss of the image at the point `at` against `request.observed`, and
    /// its gradient over the components `request.labels`
    /// ([`ImageObjective::value_grad`] on this engine's autodiff backend, with the flags'
    /// detector response).
    pub fn loss_and_gradient_at(&self, at: &At<'_>, request: &LossRequest<'_>) -> Result<(f64, Vec<f64>)> {
        struct Task<'a> {
            at: At<'a>,
            request: LossRequest<'a>,
        }
        impl BackendTask for Task<'_> {
            type Output = (f64, Vec<f64>);
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output> {
                loss_and_gradient::<B>(&self.at, &self.request, device)
            }
        }
        let opts = self.options(at.opts);
        self.run(Task {
            at: At { opts: &opts, ..*at },
            request: *request,
        })
    }

    /// [`gradcheck`] of the simulator at the point `at`, on this engine's autodiff backend.
    pub fn gradcheck_at(
        &self,
        at: &At<'_>,
        loss: Option<&mut ImageLoss<'_>>,
        options: &GradcheckOptions,
    ) -> Result<GradcheckReport> {
        struct Task<'a, 'l, 'f> {
            at: At<'a>,
            loss: Option<&'l mut ImageLoss<'f>>,
            options: &'a GradcheckOptions,
        }
        impl BackendTask for Task<'_, '_, '_> {
            type Output = GradcheckReport;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<GradcheckReport> {
                let mut sim = Simulator::<Autodiff<B>>::from_experiment(self.at.cfg, self.at.exp.clone(), device)?;
                sim.params = self.at.params::<Autodiff<B>>(device)?;
                gradcheck(&sim, self.loss, self.options)
            }
        }
        self.run(Task { at: *at, loss, options })
    }
}

/// [`Engine::loss_and_gradient_at`] on backend `B` (`opts`: the engine's).
fn loss_and_gradient<B: PixelKernel>(
    at: &At<'_>,
    request: &LossRequest<'_>,
    device: &B::Device,
) -> Result<(f64, Vec<f64>)> {
    let base = at.params::<Autodiff<B>>(device)?;
    let At { cfg, exp, opts, .. } = *at;
    let split = LabelSplit::new(request.labels);
    let selection = Selection::named(&split.simulator, &base)?;
    let mut response = DetectorResponse::from_config(cfg, exp, request.observed)?;
    if let Some(b) = request.background {
        response.background = Some(b.to_vec());
    }
    let response = response.refining(&split.response)?;
    let x = match request.x {
        Some(x) => split.to_objective(x),
        None => [selection.read(&base)?, response.read()].concat(),
    };
    let mut objective = ImageObjective::new(cfg, exp, selection, request.observed, request.loss, device);
    objective.base = base;
    objective.mask = request.mask;
    objective.options = opts.clone();
    objective.response = response;
    let (f, g) = objective.value_grad(&x)?;
    Ok((f, split.from_objective(&g)))
}
