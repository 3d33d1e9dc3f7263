//! The computations behind the `Simulator` methods, each generic over the backend and run on
//! the engine the caller picks ([`nanobragg::engine::BackendTask`]), at the configuration's
//! parameters with some replaced by host values (`Params::at`).

use burn::backend::Autodiff;
use burn::module::Module;
use nanobragg::config::SimConfig;
use nanobragg::engine::BackendTask;
use nanobragg::refine::gradcheck::ImageLoss;
use nanobragg::refine::objective::render_params;
use nanobragg::refine::{DetectorResponse, ImageObjective, LabelSplit, Loss, Objective, PsfResponse, Selection};
use nanobragg::render::{Image, RenderOptions};
use nanobragg::{gradcheck, Experiment, GradcheckOptions, GradcheckReport, Params, PixelKernel, Result, Simulator};

/// Parameter values that replace the configuration's: `(PARAMETERS name, values)`.
pub type Values = [(String, Vec<f64>)];

/// What every task needs: the configuration, its experiment, the replaced values and the
/// engine's render options.
pub struct At<'a> {
    pub cfg: &'a SimConfig,
    pub exp: &'a Experiment,
    pub values: &'a Values,
    pub opts: RenderOptions,
}

/// The image at the parameters (a forward pass; the configuration's own values render exactly
/// as the binary does through `Engine::render` instead).
pub struct RenderAt<'a>(pub At<'a>);

impl BackendTask for RenderAt<'_> {
    type Output = Image;
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Image> {
        let At { cfg, exp, values, opts } = self.0;
        let params = Params::<B>::at(cfg, exp, values, device)?.no_grad();
        render_params(cfg, exp, &params, &opts, device)
    }
}

/// Every present parameter's values (`Params::values`).
pub struct ValuesAt<'a>(pub At<'a>);

impl BackendTask for ValuesAt<'_> {
    type Output = Vec<(&'static str, Vec<f64>)>;
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output> {
        let At { cfg, exp, values, .. } = self.0;
        Params::<B>::at(cfg, exp, values, device)?.values()
    }
}

/// A selection of components (`refine::Selection`, the flags' units) at the parameters: read
/// its vector `x`, or write `x` and return every parameter's values.
pub struct VectorAt<'a> {
    pub at: At<'a>,
    pub labels: &'a [&'a str],
    /// `None`: read; `Some(x)`: write.
    pub x: Option<&'a [f64]>,
}

impl BackendTask for VectorAt<'_> {
    type Output = (Vec<f64>, Vec<(&'static str, Vec<f64>)>);
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output> {
        let At { cfg, exp, values, .. } = self.at;
        let params = Params::<B>::at(cfg, exp, values, device)?.no_grad();
        let split = LabelSplit::new(self.labels);
        let selection = Selection::named(&split.simulator, &params)?;
        match self.x {
            None => {
                // the response's components at the flags' PSF and a background at scale 1
                let response = DetectorResponse {
                    psf: PsfResponse::from_config(cfg, exp, &[]),
                    background: Some(Vec::new()),
                    ..DetectorResponse::default()
                }
                .refining(&split.response)?;
                let mut x = selection.read(&params)?;
                x.extend(response.read());
                Ok((split.from_objective(&x), Vec::new()))
            }
            Some(_) if !split.response.is_empty() => Err(nanobragg::Error::Config(format!(
                "{}: a detector response component, not a simulator parameter (give it to loss_and_gradient)",
                split.response[0].label()
            ))),
            Some(x) => Ok((x.to_vec(), selection.write(&params, x)?.values()?)),
        }
    }
}

/// A loss of the image against an observed one and its gradient over a selection of
/// components (`refine::ImageObjective::value_grad`).
pub struct LossAt<'a> {
    pub at: At<'a>,
    pub labels: &'a [&'a str],
    /// `None`: the selection's values at the parameters.
    pub x: Option<&'a [f64]>,
    pub observed: &'a [f32],
    pub mask: Option<&'a [bool]>,
    pub loss: Loss,
    /// The background at scale 1 (photons per pixel) added before the flags' PSF.
    pub background: Option<&'a [f64]>,
}

impl BackendTask for LossAt<'_> {
    type Output = (f64, Vec<f64>);
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output> {
        let At { cfg, exp, values, opts } = self.at;
        let base = Params::<Autodiff<B>>::at(cfg, exp, values, device)?.no_grad();
        let split = LabelSplit::new(self.labels);
        let selection = Selection::named(&split.simulator, &base)?;
        let mut response = DetectorResponse::from_config(cfg, exp, self.observed)?;
        if let Some(b) = self.background {
            response.background = Some(b.to_vec());
        }
        let response = response.refining(&split.response)?;
        let x = match self.x {
            Some(x) => split.to_objective(x),
            None => [selection.read(&base)?, response.read()].concat(),
        };
        let mut objective = ImageObjective::new(cfg, exp, selection, self.observed, self.loss, device);
        objective.base = base;
        objective.mask = self.mask;
        objective.options = opts;
        objective.response = response;
        let (f, g) = objective.value_grad(&x)?;
        Ok((f, split.from_objective(&g)))
    }
}

/// The image at the parameters in the engine's own precision, not rounded to f32 (the
/// `Simulator`'s forward pass, `[slow, fast]` fast-major).
pub struct ImageValuesAt<'a>(pub At<'a>);

impl BackendTask for ImageValuesAt<'_> {
    type Output = Vec<f64>;
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Vec<f64>> {
        let At { cfg, exp, values, .. } = self.0;
        let mut sim = Simulator::<B>::from_experiment(cfg, exp.clone(), device)?;
        sim.params = Params::<B>::at(cfg, exp, values, device)?.no_grad();
        nanobragg::engine::to_host(sim.forward())
    }
}

/// `nanobragg::gradcheck` of the simulator at the parameters, on the engine's autodiff backend.
pub struct GradcheckAt<'a, 'l> {
    pub at: At<'a>,
    pub loss: Option<&'l mut ImageLoss<'l>>,
    pub options: &'a GradcheckOptions,
}

impl BackendTask for GradcheckAt<'_, '_> {
    type Output = GradcheckReport;
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<GradcheckReport> {
        let At { cfg, exp, values, .. } = self.at;
        let mut sim = Simulator::<Autodiff<B>>::from_experiment(cfg, exp.clone(), device)?;
        sim.params = Params::<Autodiff<B>>::at(cfg, exp, values, device)?.no_grad();
        gradcheck(&sim, self.loss, self.options)
    }
}
