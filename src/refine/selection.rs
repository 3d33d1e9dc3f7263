//! Which parameter components are refined, and the units the optimiser sees them in.
//!
//! The optimiser works on a vector `x` with one entry per selected component,
//! `x_i = scale_i · value_i` where `value_i` is the component in [`Params`] units (Å, rad, m,
//! photons/m²) and `scale_i` converts it to a well-conditioned unit, by default the CLI flag's
//! (Å, degrees, mm; fluence relative to its starting value). Gradients convert the other way:
//! `∂L/∂x_i = (∂L/∂value_i) / scale_i`.
//!
//! Components that must stay positive (mosaic spread, fluence, water size) are refined as logarithms,
//! `x_i = ln(scale_i · value_i)`, `∂L/∂x_i = value_i · ∂L/∂value_i`: a step cannot cross 0, and
//! the sign of the mosaic spread (a degeneracy: the domains rotated the other way, compensated
//! by the misset) is excluded.

use crate::base::error::{Error, Result};
use crate::gradients::ParamGradient;
use crate::scene::params::Params;
use burn::tensor::{backend::Backend, Tensor, TensorData};

/// One refined component: `params.<param>[index]`, seen by the optimiser as `scale · value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// The CLI-style name shown in tables (`cell_a`, `misset_x`, `distance`, `Xbeam`...).
    pub label: String,
    /// The [`crate::scene::params::PARAMETERS`] name of the tensor, and the component in it.
    pub param: &'static str,
    pub index: usize,
    /// `x = scale · value`.
    pub scale: f64,
    /// The unit of `scale · value` (for printing).
    pub unit: &'static str,
    /// Refine `ln(scale · value)` instead of `scale · value` (positive quantities).
    pub log: bool,
    /// An optional Gaussian prior on `x`: (mean, σ) in `x` units, adding `½((x − mean)/σ)²` to
    /// the loss (a restraint for parameters the image alone determines poorly).
    pub prior: Option<(f64, f64)>,
}

impl Component {
    /// The component named like the CLI flag, as `-derivative` names it: one entry of
    /// [`crate::config::components::COMPONENTS`] (`cell_a` in Å, `misset_x` in degrees, `distance` in
    /// mm, `dispersion` in %...), seen in its flag's unit; the fluence relative to
    /// `fluence_ref`. The positive ones (`mosaic`, `fluence`, `water`) are refined as
    /// logarithms.
    pub fn named(label: &str, fluence_ref: f64) -> Result<Self> {
        let c = crate::config::components::find(label, "refine")?;
        // the fluence is refined relative to its starting value, everything else in its
        // flag's unit
        let (scale, unit) = match c.param {
            "fluence" if !(fluence_ref > 0.0 && fluence_ref.is_finite()) => {
                return Err(Error::Config(format!(
                    "refine fluence: reference fluence {fluence_ref} must be > 0"
                )))
            }
            "fluence" => (1.0 / fluence_ref, "×"),
            _ => (1.0 / c.per_unit, c.unit),
        };
        Ok(Self {
            label: label.to_string(),
            param: c.param,
            index: c.index,
            scale,
            unit,
            log: c.positive,
            prior: None,
        })
    }

    /// `x` for a value in display units (`scale · value`).
    pub fn x_from_display(&self, v: f64) -> f64 {
        if self.log {
            v.ln()
        } else {
            v
        }
    }

    /// The value in display units (`scale · value`: Å, °, mm...) at `x`.
    pub fn display(&self, x: f64) -> f64 {
        if self.log {
            x.exp()
        } else {
            x
        }
    }

    /// The same component with a Gaussian prior (mean, σ) in `x` units.
    pub fn with_prior(mut self, mean: f64, sigma: f64) -> Self {
        self.prior = Some((mean, sigma));
        self
    }
}

/// The refined components, in optimiser order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    pub components: Vec<Component>,
}

fn host<B: Backend>(t: &Tensor<B, 1>) -> Result<Vec<f64>> {
    crate::scene::to_host(t.clone())
}

impl Selection {
    /// Components by CLI name (see [`Component::named`]), the fluence relative to `params`'.
    pub fn named<B: Backend>(labels: &[&str], params: &Params<B>) -> Result<Self> {
        let fluence = host(&params.fluence)?[0];
        let components = labels
            .iter()
            .map(|l| Component::named(l, fluence))
            .collect::<Result<Vec<_>>>()?;
        let s = Self { components };
        s.read(params)?; // checks that every component exists
        Ok(s)
    }

    /// Values in display units (Å, °, mm, relative fluence) at `x`.
    pub fn display(&self, x: &[f64]) -> Vec<f64> {
        self.components.iter().zip(x).map(|(c, &xi)| c.display(xi)).collect()
    }

    /// `x` for values in display units.
    pub fn x_from_display(&self, v: &[f64]) -> Vec<f64> {
        self.components
            .iter()
            .zip(v)
            .map(|(c, &vi)| c.x_from_display(vi))
            .collect()
    }

    /// Number of refined components.
    pub fn len(&self) -> usize {
        self.components.len()
    }

    /// True when nothing is refined.
    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }

    /// `x` at `params`.
    pub fn read<B: Backend>(&self, params: &Params<B>) -> Result<Vec<f64>> {
        let tensors = params.tensors();
        self.components
            .iter()
            .map(|c| {
                let t = tensors
                    .iter()
                    .find(|(n, _)| *n == c.param)
                    .and_then(|(_, t)| t.as_ref())
                    .ok_or_else(|| {
                        Error::Config(format!("refine {}: the configuration has no {}", c.label, c.param))
                    })?;
                let v = host(t)?.get(c.index).map(|v| v * c.scale).ok_or_else(|| {
                    Error::Config(format!("refine {}: {} has no component {}", c.label, c.param, c.index))
                })?;
                if c.log && (v.is_nan() || v <= 0.0) {
                    return Err(Error::Config(format!(
                        "refine {}: refined as a logarithm, its starting value {v} must be > 0",
                        c.label
                    )));
                }
                Ok(c.x_from_display(v))
            })
            .collect()
    }

    /// `params` with the selected components set from `x` (new leaf tensors; the others are
    /// shared with `params`).
    pub fn write<B: Backend>(&self, params: &Params<B>, x: &[f64]) -> Result<Params<B>> {
        if x.len() != self.len() {
            return Err(Error::Config(format!(
                "refine: {} values for {} components",
                x.len(),
                self.len()
            )));
        }
        let mut out = params.clone();
        for (c, &xi) in self.components.iter().zip(x) {
            let slot = out
                .get(c.param)
                .ok_or_else(|| Error::Config(format!("refine {}: the configuration has no {}", c.label, c.param)))?;
            let mut v = host(&slot)?;
            let n = v.len();
            *v.get_mut(c.index).ok_or_else(|| {
                Error::Config(format!("refine {}: {} has no component {}", c.label, c.param, c.index))
            })? = c.display(xi) / c.scale;
            out = out.replace(c.param, Tensor::from_data(TensorData::new(v, [n]), &slot.device()))?;
        }
        Ok(out)
    }

    /// `∂L/∂x` at `x` from the per-tensor gradients of [`crate::gradients::image_vjp`].
    pub fn gradient(&self, grads: &[ParamGradient], x: &[f64]) -> Result<Vec<f64>> {
        self.components
            .iter()
            .zip(x)
            .map(|(c, &xi)| {
                grads
                    .iter()
                    .find(|g| g.name == c.param)
                    .and_then(|g| g.values.get(c.index))
                    .map(|g| {
                        if c.log {
                            g * c.display(xi) / c.scale
                        } else {
                            g / c.scale
                        }
                    })
                    .ok_or_else(|| Error::Config(format!("refine {}: no gradient for {}", c.label, c.param)))
            })
            .collect()
    }

    /// The priors' loss `Σ ½((x − mean)/σ)²` and its gradient.
    pub fn prior(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let mut value = 0.0;
        let grad = self
            .components
            .iter()
            .zip(x)
            .map(|(c, &xi)| match c.prior {
                Some((m, s)) => {
                    value += 0.5 * ((xi - m) / s).powi(2);
                    (xi - m) / (s * s)
                }
                None => 0.0,
            })
            .collect();
        (value, grad)
    }
}
