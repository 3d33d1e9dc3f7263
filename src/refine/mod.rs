//! Refinement: fit parameters of the simulation to an observed image.
//!
//! * [`loss`] — Poisson negative log-likelihood and least squares, with ∂L/∂I per pixel;
//! * [`selection`] — which parameter components are refined, in which units;
//! * [`objective`] — the loss as a function of the selected components, with its gradient
//!   from [`crate::gradients::image_vjp`];
//! * [`response`] — the detector's PSF and a scaled background between the simulated photons
//!   and the counts, with the PSF's FWHM and the background's scale refinable;
//! * [`panels`] — the same for a detector of many panels, with the rigid motions of panel
//!   groups among the variables;
//! * [`optimizer`], [`adam`], [`lbfgs`] — burn's Adam and a hand-written L-BFGS behind one
//!   interface, logging every iteration;
//! * [`gradcheck`] — the analytic gradient of a loss against central differences;
//! * [`at`] — the engine's renders, parameter values, losses and gradchecks at a point of
//!   parameter space, for callers that pick the engine at run time (the Python package).
//!
//! See `docs/refinement.md`.

pub mod adam;
pub mod at;
pub mod gradcheck;
pub mod lbfgs;
pub mod loss;
pub mod objective;
pub mod optimizer;
pub mod panels;
pub mod response;
pub mod selection;
pub mod uncertainty;

pub use adam::Adam;
pub use at::{LossRequest, ParameterValues};
pub use gradcheck::{gradcheck, ComponentCheck, GradcheckOptions, GradcheckReport};
pub use lbfgs::Lbfgs;
pub use loss::{Loss, LossValue};
pub use objective::{ImageObjective, Objective};
pub use optimizer::{Iteration, Optimizer, Outcome};
pub use panels::{MotionComponent, PanelObjective};
pub use response::{DetectorResponse, LabelSplit, PsfResponse, ResponseComponent};
pub use selection::{Component, Selection};
