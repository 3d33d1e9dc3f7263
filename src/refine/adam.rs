//! burn's Adam (`burn::optim::Adam`, through its per-tensor [`SimpleOptimizer`] step) on the
//! refined components.

use super::objective::Objective;
use super::optimizer::{norm, Iteration, Optimizer, Outcome};
use crate::base::error::Result;
use crate::scene::to_host;
use burn::optim::{AdamConfig, SimpleOptimizer};
use burn::tensor::{backend::Backend, Tensor, TensorData};

/// Adam with a learning rate in `x` units per iteration (Adam's step per component is about
/// `lr` whatever the gradient's size, so with CLI units `lr = 0.01` moves by ~0.01 Å, °, mm),
/// decaying geometrically by `lr_decay` per iteration. It runs `iterations` steps and returns
/// the best point seen. The optimiser state lives in tensors of backend `B`.
#[derive(Debug, Clone)]
pub struct Adam<B: Backend> {
    pub config: AdamConfig,
    pub lr: f64,
    pub lr_decay: f64,
    pub iterations: usize,
    pub device: B::Device,
}

impl<B: Backend> Adam<B> {
    /// Adam with burn's default β₁ = 0.9, β₂ = 0.999 and ε = 1e-8 (relative to gradients in
    /// loss units per x unit).
    pub fn new(lr: f64, iterations: usize, device: &B::Device) -> Self {
        Self {
            config: AdamConfig::new().with_epsilon(1e-8),
            lr,
            lr_decay: 1.0,
            iterations,
            device: device.clone(),
        }
    }
}

impl<B: Backend> Optimizer for Adam<B> {
    fn minimize(
        &mut self,
        f: &mut dyn Objective,
        x0: &[f64],
        log: &mut dyn FnMut(&Iteration, &[f64]),
    ) -> Result<Outcome> {
        let adam = self.config.build();
        let n = x0.len();
        let tensor = |v: Vec<f64>| Tensor::<B, 1>::from_data(TensorData::new(v, [n]), &self.device);
        let mut x = tensor(x0.to_vec());
        let mut state = None;
        let mut history = Vec::new();
        let (mut best_x, mut best) = (x0.to_vec(), f64::INFINITY);
        let mut lr = self.lr;
        let mut prev = x0.to_vec();
        for iter in 0..=self.iterations {
            let xv = to_host(x.clone())?;
            let (loss, grad) = f.value_grad(&xv)?;
            let step = norm(&xv.iter().zip(&prev).map(|(a, b)| a - b).collect::<Vec<_>>());
            let it = Iteration {
                iter,
                loss,
                grad_norm: norm(&grad),
                step,
                evaluations: iter + 1,
            };
            log(&it, &xv);
            history.push(it);
            if loss < best {
                best = loss;
                best_x = xv.clone();
            }
            if iter == self.iterations || !loss.is_finite() {
                break;
            }
            let (next, s) = adam.step(lr, x, tensor(grad), state);
            x = next;
            state = s;
            lr *= self.lr_decay;
            prev = xv;
        }
        Ok(Outcome {
            x: best_x,
            loss: best,
            history,
            converged: false,
        })
    }
}
