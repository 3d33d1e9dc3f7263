//! Losses of a model image against an observed one, with their gradient ∂L/∂I per pixel (the
//! weights [`crate::gradients::image_vjp`] takes).
//!
//! Images are fast-major `[pixels]` arrays in photons (the model `I`, the observed counts `k`);
//! an optional mask (`true` = use the pixel) drops pixels from the sum, their weight is 0.

use crate::base::error::{Error, Result};

/// A loss of the model image `I` given observed counts `k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// Poisson negative log-likelihood with the model as the expected counts, written as half
    /// the deviance so that a perfect model scores 0:
    /// `L = Σ_p I_p − k_p − k_p·ln(I_p/k_p)` (the `k ln k − k` and `ln k!` constants dropped),
    /// `∂L/∂I = 1 − k/I`.
    ///
    /// Below `floor` photons (where `ln I` and `k/I` blow up; the model of a pixel with counts
    /// should never be 0, but a trial step may make it so) the term continues as its
    /// second-order Taylor expansion at `floor`, so value and gradient stay finite (and
    /// continuous) down to and below `I = 0`.
    Poisson { floor: f64 },
    /// Least squares `L = ½ Σ_p w_p (I_p − k_p)²`, `∂L/∂I = w (I − k)`, with `w = 1` or, with
    /// `poisson_weights`, the inverse Poisson variance `w = 1/max(k, 1)`.
    LeastSquares { poisson_weights: bool },
}

impl Default for Loss {
    fn default() -> Self {
        Loss::Poisson { floor: 1e-3 }
    }
}

/// A loss value and its gradient per pixel.
#[derive(Debug, Clone, PartialEq)]
pub struct LossValue {
    /// The loss (f64 sum over the used pixels).
    pub value: f64,
    /// `∂L/∂I_p` per pixel, fast-major, 0 for masked pixels (f32: the weights of
    /// [`crate::gradients::image_vjp`]).
    pub grad: Vec<f32>,
}

/// One Poisson term `I − k − k ln(I/k)` and its derivative, continued quadratically below `floor`.
pub fn poisson_term(model: f64, counts: f64, floor: f64) -> (f64, f64) {
    if counts <= 0.0 {
        return (model, 1.0);
    }
    let i = model.max(floor);
    let value = i - counts - counts * (i / counts).ln();
    let d1 = 1.0 - counts / i;
    if model >= floor {
        (value, d1)
    } else {
        let d2 = counts / (i * i);
        let t = model - floor;
        (value + d1 * t + 0.5 * d2 * t * t, d1 + d2 * t)
    }
}

impl Loss {
    /// One pixel's term and its derivative `∂L/∂I` (model `i`, counts `k`; photons).
    pub fn term(&self, i: f64, k: f64) -> (f64, f64) {
        match *self {
            Loss::Poisson { floor } => poisson_term(i, k, floor),
            Loss::LeastSquares { poisson_weights } => {
                let w = if poisson_weights { 1.0 / k.max(1.0) } else { 1.0 };
                (0.5 * w * (i - k) * (i - k), w * (i - k))
            }
        }
    }

    /// A chunk's loss and weights ∂L/∂I (see [`crate::gradients::ChunkWeights`]): `pixels`
    /// index `observed` (and `mask`, `true` = used; masked pixels weigh 0), `values` are the
    /// model's intensities there.
    pub fn chunk_terms(
        &self,
        pixels: &[u32],
        values: &[f64],
        observed: &[f32],
        mask: Option<&[bool]>,
    ) -> (f64, Vec<f64>) {
        let mut total = 0.0;
        let weights = pixels
            .iter()
            .zip(values)
            .map(|(&p, &i)| {
                let p = p as usize;
                if mask.is_some_and(|m| !m[p]) {
                    return 0.0;
                }
                let (v, g) = self.term(i, observed[p] as f64);
                total += v;
                g
            })
            .collect();
        (total, weights)
    }

    /// Checks the loss's settings.
    pub fn validate(&self) -> Result<()> {
        if let Loss::Poisson { floor } = self {
            if floor.is_nan() || *floor <= 0.0 {
                return Err(Error::Config(format!("Poisson loss: floor {floor} must be > 0")));
            }
        }
        Ok(())
    }

    /// The loss of `model` against `observed` over the pixels `mask` keeps (all when `None`).
    pub fn evaluate(&self, model: &[f32], observed: &[f32], mask: Option<&[bool]>) -> Result<LossValue> {
        if model.len() != observed.len() || mask.is_some_and(|m| m.len() != model.len()) {
            return Err(Error::Config(format!(
                "loss: model image has {} pixels, observed {}, mask {}",
                model.len(),
                observed.len(),
                mask.map_or("none".to_string(), |m| m.len().to_string())
            )));
        }
        self.validate()?;
        let mut value = 0.0;
        let mut grad = vec![0.0f32; model.len()];
        for (p, (&i, &k)) in model.iter().zip(observed).enumerate() {
            if mask.is_some_and(|m| !m[p]) {
                continue;
            }
            let (v, g) = self.term(i as f64, k as f64);
            value += v;
            grad[p] = g as f32;
        }
        Ok(LossValue { value, grad })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn images() -> (Vec<f32>, Vec<f32>) {
        let model: Vec<f32> = (0..40).map(|i| 0.3 + (i as f32 * 0.77).sin().abs() * 50.0).collect();
        let observed: Vec<f32> = (0..40).map(|i| ((i * 37) % 61) as f32).collect();
        (model, observed)
    }

    /// ∂L/∂I_p against central differences of the f64 loss for every pixel and every loss.
    #[test]
    fn gradients_match_central_differences() {
        let (model, observed) = images();
        for loss in [
            Loss::Poisson { floor: 1e-3 },
            Loss::Poisson { floor: 5.0 }, // several pixels in the quadratic continuation
            Loss::LeastSquares { poisson_weights: false },
            Loss::LeastSquares { poisson_weights: true },
        ] {
            let lv = loss.evaluate(&model, &observed, None).unwrap();
            for p in 0..model.len() {
                let term = |i: f64| match loss {
                    Loss::Poisson { floor } => poisson_term(i, observed[p] as f64, floor).0,
                    Loss::LeastSquares { poisson_weights } => {
                        let k = observed[p] as f64;
                        let w = if poisson_weights { 1.0 / k.max(1.0) } else { 1.0 };
                        0.5 * w * (i - k).powi(2)
                    }
                };
                let (i, h) = (model[p] as f64, 1e-5);
                let fd = (term(i + h) - term(i - h)) / (2.0 * h);
                let g = lv.grad[p] as f64;
                assert!(
                    (g - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                    "{loss:?} pixel {p}: {g} vs {fd}"
                );
            }
        }
    }

    /// Closed forms: the Poisson loss equals Σ (log k! − log P(k | I)) − Σ (log k! − log P(k | k)),
    /// i.e. the negative log-likelihood up to the saturated model's; least squares ½Σ(I − k)².
    #[test]
    fn values_match_closed_forms() {
        let (model, observed) = images();
        let nll = |i: f64, k: f64| -> f64 {
            // −ln P(k | λ = i) = i − k ln i + ln k!
            let lnfact: f64 = (1..=k as u64).map(|j| (j as f64).ln()).sum();
            i - if k > 0.0 { k * i.ln() } else { 0.0 } + lnfact
        };
        let want: f64 = model
            .iter()
            .zip(&observed)
            .map(|(&i, &k)| nll(i as f64, k as f64) - nll(k as f64, k as f64))
            .sum();
        let got = Loss::Poisson { floor: 1e-3 }
            .evaluate(&model, &observed, None)
            .unwrap()
            .value;
        assert!((got - want).abs() < 1e-9 * want.abs(), "{got} vs {want}");
        let ls: f64 = model
            .iter()
            .zip(&observed)
            .map(|(&i, &k)| 0.5 * (i as f64 - k as f64).powi(2))
            .sum();
        let got = Loss::LeastSquares { poisson_weights: false }
            .evaluate(&model, &observed, None)
            .unwrap()
            .value;
        assert!((got - ls).abs() < 1e-9 * ls);
    }

    /// The Poisson loss is minimal (0, gradient 0) at I = k; finite with finite gradient at
    /// I = 0 and below; masked pixels contribute nothing.
    #[test]
    fn poisson_limits_and_mask() {
        let (v, g) = poisson_term(7.0, 7.0, 1e-3);
        assert!(v.abs() < 1e-12 && g.abs() < 1e-12);
        for i in [0.0, -1.0, 1e-9, 1e-3] {
            let (v, g) = poisson_term(i, 7.0, 1e-3);
            assert!(v.is_finite() && g.is_finite() && g < 0.0, "{i}: {v} {g}");
        }
        // value and slope continuous at the floor
        let (a, ga) = poisson_term(1e-3 * (1.0 - 1e-9), 7.0, 1e-3);
        let (b, gb) = poisson_term(1e-3, 7.0, 1e-3);
        assert!((a - b).abs() < 1e-6 && (ga - gb).abs() < 1e-3 * gb.abs());
        assert_eq!(poisson_term(0.0, 0.0, 1e-3), (0.0, 1.0));
        let (model, observed) = images();
        let mask: Vec<bool> = (0..model.len()).map(|p| p % 3 != 0).collect();
        let full = Loss::default().evaluate(&model, &observed, None).unwrap();
        let masked = Loss::default().evaluate(&model, &observed, Some(&mask)).unwrap();
        let want: f64 = (0..model.len())
            .filter(|p| mask[*p])
            .map(|p| poisson_term(model[p] as f64, observed[p] as f64, 1e-3).0)
            .sum();
        assert!((masked.value - want).abs() < 1e-9 * want && masked.value < full.value);
        assert!((0..model.len()).all(|p| mask[p] || masked.grad[p] == 0.0));
        assert!(Loss::default().evaluate(&model, &observed[1..], None).is_err());
        assert!(Loss::Poisson { floor: 0.0 }.evaluate(&model, &observed, None).is_err());
    }
}
