//! Gradcheck: a simulator's analytic gradient of a loss against central differences of the
//! same loss, component by component, in the spirit of `torch.autograd.gradcheck`.
//!
//! The components are named and scaled as refinement sees them ([`Selection`]): each in its
//! command-line flag's unit (mm, °, Å, cells, …), the positive ones (`mosaic`, `fluence`,
//! `water`) as logarithms. The analytic side is the simulator's own backward pass
//! ([`Simulator::forward_with`] on its autodiff backend), so a wrong partial anywhere in the
//! render, the scene or the parameters' chain rule shows up here; the numeric side renders the
//! image twice per component, at `x ± h`, and differentiates the loss's value only.
//!
//! ```no_run
//! use burn::backend::{ndarray::NdArrayDevice, Autodiff, NdArray};
//! use nanobragg::{gradcheck, GradcheckOptions, Simulator};
//!
//! let sim = Simulator::<Autodiff<NdArray<f64>>>::from_args(
//!     &["-default_F", "100", "-cell", "70", "80", "90", "85", "95", "100", "-lambda", "1",
//!       "-N", "6", "-distance", "80", "-pixel", "0.2", "-detpixels", "32"],
//!     &NdArrayDevice::Cpu,
//! )?;
//! let options = GradcheckOptions::components(&["distance", "Xbeam", "cell_a", "misset_z"]);
//! let report = gradcheck(&sim, None, &options)?; // loss: Σ w·I with fixed weights
//! println!("{report}");
//! assert!(report.passed());
//! # Ok::<(), nanobragg::Error>(())
//! ```

use super::selection::Selection;
use crate::base::error::{Error, Result};
use crate::config::components::COMPONENTS;
use crate::engine::simulator::Simulator;
use crate::gradients::ParamGradient;
use crate::kernel::PixelKernel;
use crate::scene::params::Params;
use crate::scene::to_host;
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use std::fmt;

/// A loss of the image: given the image (photons per pixel, fast-major, `slow·fpixels + fast`),
/// its value and ∂L/∂I per pixel (the same length).
pub type ImageLoss<'a> = dyn FnMut(&[f64]) -> Result<(f64, Vec<f64>)> + 'a;

/// What [`gradcheck`] checks, and how closely.
#[derive(Debug, Clone, PartialEq)]
pub struct GradcheckOptions {
    /// The components, named as `-derivative` names them (`distance`, `Xbeam`, `cell_a`,
    /// `misset_x`, `Na`, `lambda`, …; `docs/gradients.md`). Empty: every component the
    /// simulator's configuration has.
    pub components: Vec<String>,
    /// Central-difference steps for named components, in the component's unit (its flag's unit;
    /// for `mosaic`, `fluence` and `water` a step of the logarithm).
    pub steps: Vec<(String, f64)>,
    /// The step of every other component: `relative_step · max(|x|, 1)`.
    pub relative_step: f64,
    /// A component passes when |analytic − numeric| ≤ `atol` + `rtol`·max(|analytic|,
    /// |numeric|) + `loss_rounding`·|L|/h.
    pub rtol: f64,
    /// Absolute tolerance, in the loss's unit per the component's unit.
    pub atol: f64,
    /// The relative rounding error of the loss's value (f64: a sum of many terms, ~10⁻¹³), so
    /// that the quotient's rounding error, `loss_rounding`·|L|/h, is allowed for components that
    /// change the loss little.
    pub loss_rounding: f64,
}

impl Default for GradcheckOptions {
    /// Every component, steps of 10⁻⁵ relative, `rtol` 10⁻⁴, `atol` 10⁻⁸, `loss_rounding`
    /// 10⁻¹³: for an f64 backend.
    fn default() -> Self {
        Self {
            components: Vec::new(),
            steps: Vec::new(),
            relative_step: 1e-5,
            rtol: 1e-4,
            atol: 1e-8,
            loss_rounding: 1e-13,
        }
    }
}

impl GradcheckOptions {
    /// The defaults, checking the named components only.
    pub fn components(names: &[&str]) -> Self {
        Self {
            components: names.iter().map(|s| s.to_string()).collect(),
            ..Self::default()
        }
    }
}

/// One component's check.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentCheck {
    /// The component's name (`distance`, `cell_a`, …).
    pub name: String,
    /// The unit of `x` (`mm`, `°`, `Å`, …; `ln` components say so).
    pub unit: String,
    /// The component's value (its unit).
    pub x: f64,
    /// The central-difference step (its unit).
    pub step: f64,
    /// ∂L/∂x from the backward pass.
    pub analytic: f64,
    /// (L(x + h) − L(x − h)) / 2h.
    pub numeric: f64,
    /// |analytic − numeric| / max(|analytic|, |numeric|); 0 when both are 0.
    pub relative_error: f64,
    pub passed: bool,
}

/// The result of [`gradcheck`]: the loss at the simulator's parameters and a check per
/// component. `Display` prints it as a table.
#[derive(Debug, Clone, PartialEq)]
pub struct GradcheckReport {
    pub loss: f64,
    pub checks: Vec<ComponentCheck>,
}

impl GradcheckReport {
    /// Whether every component passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The components that failed.
    pub fn failures(&self) -> impl Iterator<Item = &ComponentCheck> {
        self.checks.iter().filter(|c| !c.passed)
    }
}

impl fmt::Display for GradcheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "gradcheck: loss {:.9e}", self.loss)?;
        writeln!(
            f,
            "{:<14} {:>9} {:>14} {:>10} {:>16} {:>16} {:>10}  ok",
            "component", "unit", "x", "step", "analytic", "numeric", "rel. err"
        )?;
        for c in &self.checks {
            writeln!(
                f,
                "{:<14} {:>9} {:>14.6e} {:>10.3e} {:>16.9e} {:>16.9e} {:>10.2e}  {}",
                c.name,
                c.unit,
                c.x,
                c.step,
                c.analytic,
                c.numeric,
                c.relative_error,
                if c.passed { "yes" } else { "NO" }
            )?;
        }
        write!(f, "{}", if self.passed() { "passed" } else { "FAILED" })
    }
}

/// Fixed weights in [1, 2) for `n` pixels, different from pixel to pixel: the default loss
/// Σ_p w_p·I_p of [`gradcheck`] (a generic direction in image space, so that a wrong partial
/// cannot hide in a symmetric sum).
pub fn gradcheck_weights(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + ((i * 7919) % 13) as f64 / 13.0).collect()
}

/// Compare the analytic gradient of `loss` (of the simulator's image) with central
/// differences, for the components `options` names, at the simulator's parameters.
/// `loss = None` is Σ_p w_p·I_p with [`gradcheck_weights`].
///
/// Use an f64 backend (`Autodiff<NdArray<f64>>`): in f32 the differences drown in rounding.
/// Errors: an unknown component or one this configuration does not have, or a loss whose
/// gradient does not have one value per pixel.
pub fn gradcheck<B>(
    sim: &Simulator<B>,
    loss: Option<&mut ImageLoss<'_>>,
    options: &GradcheckOptions,
) -> Result<GradcheckReport>
where
    B: AutodiffBackend + PixelKernel,
{
    let base = sim.params.clone().no_grad();
    let selection = selection(&base, &options.components)?;
    let mut linear = linear_loss(gradcheck_weights(sim.setup().exp.detector.pixels()));
    let loss: &mut ImageLoss<'_> = match loss {
        Some(l) => l,
        None => &mut linear,
    };
    let x = selection.read(&base)?;
    let (value, analytic) = analytic_gradient(sim, &base, &selection, &x, loss)?;
    let checks = selection
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let step = step_of(options, &c.label, x[i]);
            let numeric = central_difference(sim, &base, &selection, &x, i, step, loss)?;
            Ok(check(c, (x[i], step), (analytic[i], numeric), value, options))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(GradcheckReport { loss: value, checks })
}

/// The linear loss Σ_p w_p·I_p.
fn linear_loss(weights: Vec<f64>) -> impl FnMut(&[f64]) -> Result<(f64, Vec<f64>)> {
    move |image: &[f64]| Ok((image.iter().zip(&weights).map(|(i, w)| i * w).sum(), weights.clone()))
}

/// The selection of the named components, or of every one the parameters have (and refinement
/// can step: not the logarithm of a 0, no water or no mosaic spread).
fn selection<B: AutodiffBackend>(params: &Params<B>, names: &[String]) -> Result<Selection> {
    if !names.is_empty() {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Selection::named(&names, params);
    }
    let present: Vec<&str> = COMPONENTS
        .iter()
        .map(|c| c.name)
        .filter(|name| Selection::named(&[name], params).is_ok())
        .collect();
    Selection::named(&present, params)
}

fn step_of(options: &GradcheckOptions, name: &str, x: f64) -> f64 {
    options
        .steps
        .iter()
        .find(|(n, _)| n == name)
        .map_or(options.relative_step * x.abs().max(1.0), |&(_, h)| h)
}

/// The check of component `c` at `(x, step)`: `(analytic, numeric)` for a loss of `value`.
fn check(
    c: &super::selection::Component,
    (x, step): (f64, f64),
    (analytic, numeric): (f64, f64),
    value: f64,
    o: &GradcheckOptions,
) -> ComponentCheck {
    let scale = analytic.abs().max(numeric.abs());
    let diff = (analytic - numeric).abs();
    let tolerance = o.atol + o.rtol * scale + o.loss_rounding * value.abs() / step;
    ComponentCheck {
        name: c.label.clone(),
        unit: if c.log {
            format!("ln {}", c.unit)
        } else {
            c.unit.to_string()
        },
        x,
        step,
        analytic,
        numeric,
        relative_error: if scale > 0.0 { diff / scale } else { 0.0 },
        passed: diff <= tolerance,
    }
}

/// The loss of the image at `params`.
fn loss_at<B: AutodiffBackend + PixelKernel>(
    sim: &Simulator<B>,
    params: &Params<B>,
    loss: &mut ImageLoss<'_>,
) -> Result<(Tensor<B, 2>, f64, Vec<f64>)> {
    let image = sim.forward_with(params);
    let values = to_host(image.clone())?;
    let (value, grad) = loss(&values)?;
    if grad.len() != values.len() {
        return Err(Error::Config(format!(
            "gradcheck: the loss's gradient has {} values for {} pixels",
            grad.len(),
            values.len()
        )));
    }
    Ok((image, value, grad))
}

/// L at `x` and ∂L/∂x by the simulator's backward pass: Σ_p (∂L/∂I_p)·I_p differentiated.
fn analytic_gradient<B: AutodiffBackend + PixelKernel>(
    sim: &Simulator<B>,
    base: &Params<B>,
    selection: &Selection,
    x: &[f64],
    loss: &mut ImageLoss<'_>,
) -> Result<(f64, Vec<f64>)> {
    let params = selection.write(base, x)?.map_tensors(|t| t.require_grad());
    let (image, value, dl_di) = loss_at(sim, &params, loss)?;
    let dims = image.dims();
    let weights = Tensor::<B, 2>::from_data(TensorData::new(dl_di, dims), &image.device());
    let grads = (image * weights).sum().backward();
    let gradients = params
        .values()?
        .into_iter()
        .map(|(name, v)| {
            // a parameter the image does not depend on has no gradient: 0
            let values = match params.get(name).and_then(|t| t.grad(&grads)) {
                Some(g) => to_host(g)?,
                None => vec![0.0; v.len()],
            };
            Ok(ParamGradient { name, values })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((value, selection.gradient(&gradients, x)?))
}

/// (L(x + h·e_i) − L(x − h·e_i)) / 2h.
fn central_difference<B: AutodiffBackend + PixelKernel>(
    sim: &Simulator<B>,
    base: &Params<B>,
    selection: &Selection,
    x: &[f64],
    i: usize,
    h: f64,
    loss: &mut ImageLoss<'_>,
) -> Result<f64> {
    let mut at = |sign: f64| -> Result<f64> {
        let mut moved = x.to_vec();
        moved[i] += sign * h;
        let params = selection.write(base, &moved)?;
        Ok(loss_at(sim, &params, loss)?.1)
    };
    Ok((at(1.0)? - at(-1.0)?) / (2.0 * h))
}
