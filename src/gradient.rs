//! Gradients of the image with respect to the continuous parameters.
//!
//! Reverse mode gives one scalar's gradient per pass, so the primitive is the
//! vector–Jacobian product Σ_p w_p·∂I_p/∂θ: with w = ∂L/∂I it is the gradient of any loss L of
//! the image (chain rule), with w = 1 the gradient of the total. Chunks are differentiated one
//! at a time (forward, backward, accumulate), so memory stays bounded by the chunk size.

use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::params::Params;
use crate::scene::{tensor2, to_host, Scene};
use crate::setup::Experiment;
use crate::simulate::{chunk_intensity, chunking, Image, RenderOptions};
use burn::tensor::backend::AutodiffBackend;

/// Gradient of one parameter tensor (its [`crate::params::PARAMETERS`] name and components).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamGradient {
    pub name: &'static str,
    pub values: Vec<f64>,
}

/// The image at `params`, and Σ_p w_p·∂I_p/∂θ for every parameter θ (`weights` fast-major
/// over the whole detector; `None` = all ones).
pub fn image_vjp<B: AutodiffBackend>(
    cfg: &SimConfig,
    exp: &Experiment,
    params: &Params<B>,
    weights: Option<&[f32]>,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<(Image, Vec<ParamGradient>)> {
    let det = &exp.detector;
    if let Some(w) = weights {
        if w.len() != det.pixels() {
            return Err(Error::Config(format!(
                "{} weights for {} pixels",
                w.len(),
                det.pixels()
            )));
        }
    }
    let scene = Scene::new(exp);
    let active = exp.active_pixels();
    let (per_chunk, block) = chunking(exp, &scene, active.len(), opts);
    let mut data = vec![0.0f32; det.pixels()];
    let mut omega_sum = 0.0;
    let mut grads: Vec<ParamGradient> = params
        .tensors()
        .into_iter()
        .filter_map(|(name, t)| {
            t.map(|t| ParamGradient {
                name,
                values: vec![0.0; t.dims()[0]],
            })
        })
        .collect();
    let constants = crate::scene::SceneTensors::<B>::constants(exp, device);
    for pixels in active.chunks(per_chunk) {
        // the graph is rebuilt per chunk (backward consumes it); the constants are uploaded once
        let st = params.scene_with(cfg, exp, &constants, device);
        let out = chunk_intensity(
            exp,
            &scene,
            &st,
            pixels,
            exp.structure_factors.interpolate,
            block,
            device,
        );
        omega_sum += out.omega_sum;
        let w: Vec<f64> = pixels
            .iter()
            .map(|&i| weights.map_or(1.0, |w| w[i as usize] as f64))
            .collect();
        let loss = (out.intensity.clone() * tensor2::<B>(w, [pixels.len(), 1], device)).sum();
        let values = to_host(out.intensity)?;
        for (&i, v) in pixels.iter().zip(values) {
            data[i as usize] = v as f32;
        }
        let g = loss.backward();
        for (acc, (_, t)) in grads
            .iter_mut()
            .zip(params.tensors().into_iter().filter(|(_, t)| t.is_some()))
        {
            if let Some(gt) = t.and_then(|t| t.grad(&g)) {
                let gv = to_host(gt)?;
                for (a, x) in acc.values.iter_mut().zip(gv) {
                    *a += x;
                }
            }
        }
    }
    let image = Image {
        fpixels: det.fpixels,
        spixels: det.spixels,
        data,
        omega_sum,
        interpolation_fell_back: false,
    };
    Ok((image, grads))
}
