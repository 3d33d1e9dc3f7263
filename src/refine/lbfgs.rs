//! Limited-memory BFGS on the gradients of an [`Objective`], with a backtracking (Armijo)
//! line search.
//!
//! Each trial point of the line search is evaluated with its gradient (one forward + backward
//! pass): the full quasi-Newton step is usually accepted, and its gradient is then the next
//! iteration's. Steps are capped per component (`max_step`, in `x` units) so that a poorly
//! conditioned start cannot jump to a far minimum; with CLI units a cap of 1 means 1 Å, 1°, 1 mm.

use super::objective::Objective;
use super::optimizer::{norm, Iteration, Optimizer, Outcome};
use crate::base::error::Result;
use std::collections::VecDeque;

/// L-BFGS settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Lbfgs {
    /// Number of (s, y) pairs kept.
    pub memory: usize,
    pub max_iterations: usize,
    /// Largest |Δx_i| of one step (x units).
    pub max_step: f64,
    /// Largest |Δx_i| of the first (steepest-descent) step.
    pub initial_step: f64,
    /// Armijo sufficient-decrease constant.
    pub c1: f64,
    /// Most trial points per line search.
    pub max_trials: usize,
    /// Stop when the loss decreased by less than `f_tol` (absolute, loss units) in
    /// `patience` consecutive iterations...
    pub f_tol: f64,
    pub patience: usize,
    /// ... or when max |∂L/∂x_i| < `g_tol`.
    pub g_tol: f64,
}

impl Default for Lbfgs {
    fn default() -> Self {
        Self {
            memory: 10,
            max_iterations: 100,
            max_step: 1.0,
            initial_step: 0.05,
            c1: 1e-4,
            max_trials: 12,
            f_tol: 1e-3,
            patience: 3,
            g_tol: 1e-8,
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, a| m.max(a.abs()))
}

/// The two-loop recursion: −H·g for the inverse Hessian approximation of the pairs (s, y).
pub fn two_loop(g: &[f64], pairs: &VecDeque<(Vec<f64>, Vec<f64>)>) -> Vec<f64> {
    let mut q = g.to_vec();
    let mut alphas = Vec::with_capacity(pairs.len());
    for (s, y) in pairs.iter().rev() {
        let rho = 1.0 / dot(y, s);
        let a = rho * dot(s, &q);
        q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
        alphas.push((a, rho));
    }
    if let Some((s, y)) = pairs.back() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|qi| *qi *= gamma);
    }
    for ((s, y), (a, rho)) in pairs.iter().zip(alphas.into_iter().rev()) {
        let b = rho * dot(y, &q);
        q.iter_mut().zip(s).for_each(|(qi, si)| *qi += (a - b) * si);
    }
    q.iter().map(|v| -v).collect()
}

impl Optimizer for Lbfgs {
    fn minimize(
        &mut self,
        f: &mut dyn Objective,
        x0: &[f64],
        log: &mut dyn FnMut(&Iteration, &[f64]),
    ) -> Result<Outcome> {
        let mut x = x0.to_vec();
        let (mut fx, mut g) = f.value_grad(&x)?;
        let mut evaluations = 1;
        let mut history = vec![Iteration {
            iter: 0,
            loss: fx,
            grad_norm: norm(&g),
            step: 0.0,
            evaluations,
        }];
        log(&history[0], &x);
        let mut pairs: VecDeque<(Vec<f64>, Vec<f64>)> = VecDeque::new();
        let mut stalled = 0;
        let mut converged = false;
        for iter in 1..=self.max_iterations {
            if max_abs(&g) < self.g_tol {
                converged = true;
                break;
            }
            let steepest = |g: &[f64], cap: f64| -> Vec<f64> {
                let m = max_abs(g);
                g.iter().map(|v| -v * cap / m).collect()
            };
            let mut d = if pairs.is_empty() {
                steepest(&g, self.initial_step)
            } else {
                two_loop(&g, &pairs)
            };
            let dg = dot(&d, &g);
            if dg.is_nan() || dg >= 0.0 {
                // not a descent direction: forget the curvature pairs
                pairs.clear();
                d = steepest(&g, self.initial_step);
            }
            let m = max_abs(&d);
            if m > self.max_step {
                d.iter_mut().for_each(|v| *v *= self.max_step / m);
            }
            let slope = dot(&d, &g);
            // backtracking with a safeguarded quadratic interpolation
            let mut t = 1.0;
            let mut accepted = None;
            for _ in 0..self.max_trials {
                let xt: Vec<f64> = x.iter().zip(&d).map(|(a, b)| a + t * b).collect();
                let (ft, gt) = f.value_grad(&xt)?;
                evaluations += 1;
                if ft.is_finite() && ft <= fx + self.c1 * t * slope {
                    accepted = Some((xt, ft, gt));
                    break;
                }
                let tq = if ft.is_finite() {
                    -slope * t * t / (2.0 * (ft - fx - slope * t))
                } else {
                    0.1 * t
                };
                t = tq.clamp(0.1 * t, 0.5 * t);
            }
            let Some((xt, ft, gt)) = accepted else {
                if pairs.is_empty() {
                    // no decrease even along the gradient: at the noise floor of the loss
                    converged = true;
                    break;
                }
                pairs.clear();
                continue;
            };
            let s: Vec<f64> = xt.iter().zip(&x).map(|(a, b)| a - b).collect();
            let y: Vec<f64> = gt.iter().zip(&g).map(|(a, b)| a - b).collect();
            if dot(&s, &y) > 1e-12 * norm(&s) * norm(&y) {
                pairs.push_back((s.clone(), y));
                if pairs.len() > self.memory {
                    pairs.pop_front();
                }
            }
            let decrease = fx - ft;
            x = xt;
            fx = ft;
            g = gt;
            let it = Iteration {
                iter,
                loss: fx,
                grad_norm: norm(&g),
                step: norm(&s),
                evaluations,
            };
            log(&it, &x);
            history.push(it);
            stalled = if decrease < self.f_tol { stalled + 1 } else { 0 };
            if stalled >= self.patience {
                converged = true;
                break;
            }
        }
        Ok(Outcome {
            x,
            loss: fx,
            history,
            converged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::testing::{dev, B};
    use crate::refine::adam::Adam;

    /// The Rosenbrock function, a classic badly conditioned valley.
    struct Rosenbrock(usize);
    impl Objective for Rosenbrock {
        fn dim(&self) -> usize {
            2
        }
        fn value(&mut self, x: &[f64]) -> Result<f64> {
            Ok(self.value_grad(x)?.0)
        }
        fn value_grad(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
            self.0 += 1;
            let (a, b) = (x[0], x[1]);
            let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
            let g = vec![-2.0 * (1.0 - a) - 400.0 * a * (b - a * a), 200.0 * (b - a * a)];
            Ok((f, g))
        }
    }

    #[test]
    fn lbfgs_minimises_rosenbrock() {
        let mut opt = Lbfgs {
            max_iterations: 200,
            f_tol: 1e-14,
            g_tol: 1e-9,
            ..Default::default()
        };
        let mut f = Rosenbrock(0);
        let out = opt.minimize(&mut f, &[-1.2, 1.0], &mut |_, _| {}).unwrap();
        assert!(
            (out.x[0] - 1.0).abs() < 1e-5 && (out.x[1] - 1.0).abs() < 1e-5,
            "{:?}",
            out.x
        );
        assert!(out.history.windows(2).all(|w| w[1].loss <= w[0].loss));
    }

    /// A convex quadratic with condition number 100: L-BFGS is exact in a few steps; two-loop
    /// with one pair along an eigenvector reproduces the inverse Hessian there.
    #[test]
    fn two_loop_on_a_quadratic() {
        let s = vec![1.0, 0.0];
        let y = vec![100.0, 0.0]; // H = diag(100, 1)
        let pairs = VecDeque::from([(s, y)]);
        let d = two_loop(&[100.0, 0.0], &pairs);
        assert!((d[0] + 1.0).abs() < 1e-12 && d[1].abs() < 1e-12);
    }

    #[test]
    fn burn_adam_minimises_a_quadratic() {
        struct Quad;
        impl Objective for Quad {
            fn dim(&self) -> usize {
                2
            }
            fn value(&mut self, x: &[f64]) -> Result<f64> {
                Ok(self.value_grad(x)?.0)
            }
            fn value_grad(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
                Ok((
                    (x[0] - 3.0).powi(2) + 10.0 * (x[1] + 1.0).powi(2),
                    vec![2.0 * (x[0] - 3.0), 20.0 * (x[1] + 1.0)],
                ))
            }
        }
        // the lib's unit tests share one f64 device (one precision per test binary)
        let mut adam = Adam::<B>::new(0.1, 400, &dev());
        adam.lr_decay = 0.99;
        let out = adam.minimize(&mut Quad, &[0.0, 0.0], &mut |_, _| {}).unwrap();
        assert!(
            (out.x[0] - 3.0).abs() < 1e-2 && (out.x[1] + 1.0).abs() < 1e-2,
            "{:?}",
            out.x
        );
    }
}
