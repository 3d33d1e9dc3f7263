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
use std::sync::atomic::{AtomicUsize, Ordering};

/// Gradient of one parameter tensor (its [`crate::params::PARAMETERS`] name and components).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamGradient {
    pub name: &'static str,
    pub values: Vec<f64>,
}

/// One worker's share: (chunk index, pixel values) per chunk, Σω, gradient per parameter.
type WorkerOut = (Vec<(usize, Vec<f64>)>, f64, Vec<Vec<f64>>);

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
    crate::engine::tune_allocator();
    let scene = Scene::new(exp);
    let active = exp.active_pixels();
    let (per_chunk, block) = chunking(exp, &scene, active.len(), opts);
    let chunks: Vec<&[u32]> = active.chunks(per_chunk).collect();
    let names: Vec<&'static str> = params
        .tensors()
        .into_iter()
        .filter_map(|(name, t)| t.map(|_| name))
        .collect();
    let next = AtomicUsize::new(0);
    let threads = opts.threads.clamp(1, chunks.len().max(1));
    // Worker threads take chunks in turn, as the forward render does. Each differentiates with
    // respect to leaves of its own (detached copies of the parameters that require a
    // gradient): threads sharing leaves would have their graphs merged by burn's autodiff
    // under one lock. The gradients of the copies are those of the originals.
    let worker = || -> Result<WorkerOut> {
        let own = params.clone().map(|t| {
            if t.is_require_grad() {
                t.detach().require_grad()
            } else {
                t
            }
        });
        let leaves: Vec<_> = own.tensors().into_iter().filter_map(|(_, t)| t).collect();
        let mut grads: Vec<Vec<f64>> = leaves.iter().map(|t| vec![0.0; t.dims()[0]]).collect();
        let mut values = Vec::new();
        let mut omega_sum = 0.0;
        let constants = crate::scene::SceneTensors::<B>::constants(exp, device);
        loop {
            let j = next.fetch_add(1, Ordering::SeqCst);
            let Some(pixels) = chunks.get(j) else { break };
            // the graph is rebuilt per chunk (backward consumes it); the constants are uploaded once
            let st = own.scene_with(cfg, exp, &constants, device);
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
            values.push((j, to_host(out.intensity)?));
            let g = loss.backward();
            for (acc, t) in grads.iter_mut().zip(&leaves) {
                if let Some(gt) = t.grad(&g) {
                    for (a, x) in acc.iter_mut().zip(to_host(gt)?) {
                        *a += x;
                    }
                }
            }
        }
        Ok((values, omega_sum, grads))
    };
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no worker panicked"))
            .collect()
    });
    let mut data = vec![0.0f32; det.pixels()];
    let mut omega_sum = 0.0;
    let mut grads: Vec<ParamGradient> = names
        .iter()
        .zip(params.tensors().into_iter().filter_map(|(_, t)| t))
        .map(|(&name, t)| ParamGradient {
            name,
            values: vec![0.0; t.dims()[0]],
        })
        .collect();
    for result in results {
        let (values, w, g) = result?;
        for (j, v) in values {
            for (&i, x) in chunks[j].iter().zip(v) {
                data[i as usize] = x as f32;
            }
        }
        omega_sum += w;
        for (acc, gv) in grads.iter_mut().zip(g) {
            for (a, x) in acc.values.iter_mut().zip(gv) {
                *a += x;
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
