//! The optimiser interface and its per-iteration log.

use super::objective::Objective;
use crate::base::error::Result;

/// One iteration's record.
#[derive(Debug, Clone, PartialEq)]
pub struct Iteration {
    /// 0 = the starting point.
    pub iter: usize,
    /// Loss at the iterate.
    pub loss: f64,
    /// Euclidean norm of ∂L/∂x at the iterate.
    pub grad_norm: f64,
    /// Length of the step that led here (x units; 0 for the start).
    pub step: f64,
    /// Objective evaluations so far (values and gradients).
    pub evaluations: usize,
}

/// The result of a minimisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The best point found and its loss.
    pub x: Vec<f64>,
    pub loss: f64,
    /// Every iteration, starting point included.
    pub history: Vec<Iteration>,
    /// Whether a convergence test (not the iteration limit) ended the run.
    pub converged: bool,
}

/// A minimiser of an [`Objective`]. `log` is called after every iteration (print the loss,
/// record the path...).
pub trait Optimizer {
    fn minimize(
        &mut self,
        f: &mut dyn Objective,
        x0: &[f64],
        log: &mut dyn FnMut(&Iteration, &[f64]),
    ) -> Result<Outcome>;
}

/// Euclidean norm.
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

/// A logger printing one line per iteration to stderr.
pub fn print_iteration(it: &Iteration, _x: &[f64]) {
    eprintln!(
        "iter {:4}  loss {:.8e}  |grad| {:.3e}  step {:.3e}  evals {}",
        it.iter, it.loss, it.grad_norm, it.step, it.evaluations
    );
}
