//! Gradients of the image with respect to the continuous parameters.
//!
//! Reverse mode gives one scalar's gradient per pass, so the primitive is the
//! vector–Jacobian product Σ_p w_p·∂I_p/∂θ: with w = ∂L/∂I it is the gradient of any loss L of
//! the image (chain rule), with w = 1 the gradient of the total.
//!
//! The pass is split at the scene: the parameters θ enter the pixel stages only through the
//! scene z(θ) (detector frame, orientation coefficients, N, K, F grid… a few dozen numbers,
//! see [`SceneTensors::variables`]). So
//!
//! 1. z(θ) is built once, as a graph over the parameters;
//! 2. each chunk of pixels is differentiated with respect to fresh leaves holding z's values
//!    (forward, backward, accumulate g_z += Σ_p w_p·∂I_p/∂z), on worker threads, with memory
//!    bounded by the chunk;
//! 3. one backward pass of Σ_z g_z·z(θ) over the small scene graph gives Σ_p w_p·∂I_p/∂θ.
//!
//! The scene graph is built and differentiated once per call instead of once per chunk.

pub mod derivative;

use crate::base::error::{Error, Result};
use crate::config::SimConfig;
use crate::experiment::Experiment;
use crate::render::drive::{drive, Chunk, InOrder, Rendered};
use crate::render::{chunk_intensity, gradient_spans, Image, RenderOptions};
use crate::scene::params::Params;
use crate::scene::{tensor2, to_host, to_host_shared, Scene, SceneTensors};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, Tensor, TensorData};

/// Gradient of one parameter tensor (its [`crate::scene::params::PARAMETERS`] name and components).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamGradient {
    pub name: &'static str,
    pub values: Vec<f64>,
}

/// The weights of a chunk: given its rendered pixels' indices (fast-major over the detector)
/// and their intensities, a loss contribution and ∂L/∂I per pixel.
pub type ChunkWeights<'a> = dyn Fn(&[u32], &[f64]) -> (f64, Vec<f64>) + Sync + 'a;

/// The result of [`weighted_vjp`].
#[derive(Debug, Clone)]
pub struct Vjp {
    pub image: Image,
    /// Σ of the chunks' loss contributions.
    pub loss: f64,
    /// Σ_p w_p·∂I_p/∂θ for every parameter tensor that has one.
    pub gradients: Vec<ParamGradient>,
}

/// Where an image and its gradients are asked for: a configuration, its experiment, the
/// parameter values that replace the configuration's (`(PARAMETERS name, values)` in the
/// flags' units, as [`Params::at`] takes them; empty: the configuration's own) and how to
/// render.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub cfg: &'a SimConfig,
    pub exp: &'a Experiment,
    pub values: &'a [(String, Vec<f64>)],
    pub opts: &'a RenderOptions,
}

impl<'a> At<'a> {
    /// The configuration's own point: its parameters at the configuration's values.
    pub fn own(cfg: &'a SimConfig, exp: &'a Experiment, opts: &'a RenderOptions) -> Self {
        At {
            cfg,
            exp,
            values: &[],
            opts,
        }
    }
}

impl At<'_> {
    /// Every present parameter's values at this point, as [`Params::values`] lists them
    /// (computed on backend `B`, the parameters made as `options` says: [`Params::new`]).
    pub fn all_values<B: burn::tensor::backend::Backend>(
        &self,
        options: impl Into<burn::tensor::TensorCreationOptions<B>>,
    ) -> Result<Vec<(&'static str, Vec<f64>)>> {
        Params::<B>::at(self.cfg, self.exp, self.values, options)?.values()
    }

    /// The parameters at this point on backend `B`, constant (no gradient tracked:
    /// [`burn::module::Module::no_grad`]); fails as [`Params::at`] does.
    pub fn params<B: burn::tensor::backend::Backend>(&self, device: &B::Device) -> Result<Params<B>> {
        let params = Params::<B>::at(self.cfg, self.exp, self.values, device)?;
        Ok(burn::module::Module::no_grad(params))
    }
}

/// The parameter values `values` (as [`Params::values`] lists them) as replacements for
/// [`At::values`].
pub fn replacements(values: Vec<(&'static str, Vec<f64>)>) -> Vec<(String, Vec<f64>)> {
    values.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

/// The weights of [`image_vjp`] as a [`ChunkWeights`]: `weights` fast-major over the whole
/// detector (`None` = all ones), no loss; an error naming the counts where `weights` does not
/// cover the detector.
pub fn fixed_weights<'a>(exp: &Experiment, weights: Option<&'a [f32]>) -> Result<Box<ChunkWeights<'a>>> {
    let pixels = exp.detector.pixels();
    if let Some(w) = weights.filter(|w| w.len() != pixels) {
        return Err(Error::Config(format!("{} weights for {pixels} pixels", w.len())));
    }
    Ok(Box::new(move |chunk: &[u32], _: &[f64]| {
        let w = chunk.iter().map(|&i| weights.map_or(1.0, |w| w[i as usize] as f64));
        (0.0, w.collect())
    }))
}

/// [`crate::PixelKernel::vjp`]'s default: the image at `at` and the loss and Σ_p w_p·∂I_p/∂θ
/// with the weights `weigh` returns, by the tensor stages on `Autodiff<B>`
/// ([`weighted_vjp`]).
pub fn vjp_by_stages<B: burn::tensor::backend::Backend>(
    at: &At<'_>,
    weigh: &ChunkWeights<'_>,
    device: &B::Device,
) -> Result<Vjp> {
    let params = Params::<burn::backend::Autodiff<B>>::at(at.cfg, at.exp, at.values, device)?;
    weighted_vjp(at.cfg, at.exp, &params, weigh, at.opts, device)
}

/// The image at `params`, and Σ_p w_p·∂I_p/∂θ for every parameter θ (`weights` fast-major
/// over the whole detector; `None` = all ones), by the tensor stages.
pub fn image_vjp<B: AutodiffBackend>(
    cfg: &SimConfig,
    exp: &Experiment,
    params: &Params<B>,
    weights: Option<&[f32]>,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<(Image, Vec<ParamGradient>)> {
    let weigh = fixed_weights(exp, weights)?;
    let vjp = weighted_vjp(cfg, exp, params, &weigh, opts, device)?;
    Ok((vjp.image, vjp.gradients))
}

/// The image at `params`, Σ of the loss contributions `weigh` returns per chunk, and
/// Σ_p w_p·∂I_p/∂θ with the weights it returns (see the module documentation).
pub fn weighted_vjp<B: AutodiffBackend>(
    cfg: &SimConfig,
    exp: &Experiment,
    params: &Params<B>,
    weigh: &ChunkWeights<'_>,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<Vjp> {
    crate::base::workers::tune_process();
    // 0. leaves of this call's own holding the parameters' values: the caller's tensors (which
    //    a refinement loop keeps across calls, on many threads) never enter this call's graph,
    //    so it shares no node with another call's graph, and their gradients go nowhere
    let params = &params.clone().map_tensors(|t| match t.is_require_grad() {
        true => t.detach().require_grad(),
        false => t,
    });
    // 1. the scene as a graph over the parameters
    let scene_graph = params.scene(cfg, exp, device);
    scene_graph_vjp(exp, &Scene::new(exp), params, scene_graph, weigh, opts, device)
}

/// Steps 2 and 3 of [`weighted_vjp`] for a scene graph the caller built from `params` (a
/// simulator's panel, say): ∂/∂z span by span at the graph's values, then Σ_z g_z·z(θ)
/// differentiated over the graph. `host` is [`Scene::new`] of `exp`.
pub fn scene_graph_vjp<B: AutodiffBackend>(
    exp: &Experiment,
    host: &Scene,
    params: &Params<B>,
    scene_graph: SceneTensors<B>,
    weigh: &ChunkWeights<'_>,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<Vjp> {
    let z = scene_graph.variables();
    let values = z.iter().map(|t| t.clone().detach()).collect::<Vec<_>>();
    let base = scene_graph.with_variables(values);

    // 2. ∂/∂z, span by span
    let part = scene_vjp(exp, host, &base, weigh, opts, device)?;

    // 3. Σ_z g_z·z(θ) differentiated over the scene graph
    let gradients = scene_to_params(params, z, part.scene_grad, device)?;
    Ok(Vjp {
        image: part.image,
        loss: part.loss,
        gradients,
    })
}

/// The result of [`scene_vjp`].
#[derive(Debug, Clone)]
pub struct SceneVjp {
    pub image: Image,
    /// Σ of the chunks' loss contributions.
    pub loss: f64,
    /// Σ_p w_p·∂I_p/∂z for each of the scene's [`SceneTensors::variables`] z, in their order.
    pub scene_grad: Vec<Vec<f64>>,
}

/// The image of the untracked scene `base` (`host` its host layout: counts and chunking), and
/// Σ_p w_p·∂I_p/∂z for each of its [`SceneTensors::variables`] z, with the weights `weigh`
/// returns per chunk: spans on worker threads, each differentiated with respect to leaves of
/// its own holding z's values, the sums taken in span order.
pub fn scene_vjp<B: AutodiffBackend>(
    exp: &Experiment,
    host: &Scene,
    base: &SceneTensors<B>,
    weigh: &ChunkWeights<'_>,
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<SceneVjp> {
    let scene = host;
    let values = base.variables();
    let (spans, block) = gradient_spans(exp, scene, opts);
    let active = exp.active_pixels();
    let rect = spans.rect.clone();
    let work = |_: &mut (), chunk: Chunk| -> Result<Rendered<SpanGradient>> {
        let span = chunk.span;
        // detach() gives each leaf a node of its own: leaves sharing a node id would merge the
        // threads' graphs in burn's autodiff (and deadlock its locks)
        let leaves: Vec<Tensor<B, 1>> = values.iter().map(|t| t.clone().detach().require_grad()).collect();
        let st = base.clone().with_variables(leaves.clone());
        let out = chunk_intensity(exp, scene, &st, span, chunk.tricubic, block, device);
        let intensity = to_host_shared(out.intensity.clone())?;
        // the weights of the rendered pixels; 0 for masked positions
        let is_rendered: Vec<bool> = span.positions().map(|k| active.contains(rect.index(k))).collect();
        let (pixels, rendered): (Vec<u32>, Vec<f64>) = span
            .positions()
            .zip(&intensity)
            .zip(&is_rendered)
            .filter(|(_, &r)| r)
            .map(|((k, &v), _)| (rect.index(k) as u32, v))
            .unzip();
        let (loss, w) = weigh(&pixels, &rendered);
        let mut w = w.into_iter();
        let per_position: Vec<f64> = is_rendered
            .iter()
            .map(|&r| if r { w.next().unwrap_or(0.0) } else { 0.0 })
            .collect();
        let weighted = (out.intensity * tensor2::<B>(per_position, [span.len, 1], device)).sum();
        let grads = weighted.backward();
        let scene_grad = leaves
            .iter()
            .map(|leaf| match leaf.grad(&grads) {
                Some(g) => to_host(g),
                None => Ok(vec![0.0; leaf.dims()[0]]),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Rendered {
            value: SpanGradient {
                intensity,
                omega_sum: to_host(out.omega_sum)?[0],
                loss,
                scene_grad,
            },
            out_of_range: out.out_of_range,
        })
    };
    let det = &exp.detector;
    let mut image = Image {
        fpixels: det.fpixels,
        spixels: det.spixels,
        data: vec![0.0f32; det.pixels()],
        omega_sum: 0.0,
        interpolation_fell_back: false,
        statistics: None,
    };
    let mut loss = 0.0;
    let mut omega_sum = 0.0;
    let mut scene_grad: Vec<Vec<f64>> = values.iter().map(|t| vec![0.0; t.dims()[0]]).collect();
    // the sums run in span order whichever worker finishes first: the same numbers every run
    let mut in_order = InOrder::default();
    let fold = |chunk: Chunk, part: SpanGradient| {
        rect.store(&mut image.data, chunk.span, part.intensity);
        let share = (part.omega_sum, part.loss, part.scene_grad);
        in_order.push(chunk.index, share, |(omega, part_loss, part_grad)| {
            omega_sum += omega;
            loss += part_loss;
            for (acc, g) in scene_grad.iter_mut().zip(part_grad) {
                acc.iter_mut().zip(g).for_each(|(a, x)| *a += x);
            }
        });
    };
    let fell_back = drive(
        &spans,
        opts.threads,
        exp.structure_factors.interpolate,
        || (),
        work,
        fold,
        None,
    )?;
    image.interpolation_fell_back = fell_back;
    image.omega_sum = omega_sum;
    Ok(SceneVjp {
        image,
        loss,
        scene_grad,
    })
}

/// One span's share: its values (per ROI position), Σω, loss and ∂/∂z.
struct SpanGradient {
    intensity: Vec<f64>,
    omega_sum: f64,
    loss: f64,
    scene_grad: Vec<Vec<f64>>,
}

/// Σ_z g_z·∂z/∂θ for every parameter tensor θ that requires a gradient: one backward pass of
/// Σ_z g_z·z(θ) over the scene graph `z`.
pub(crate) fn scene_to_params<B: AutodiffBackend>(
    params: &Params<B>,
    z: Vec<Tensor<B, 1>>,
    g: Vec<Vec<f64>>,
    device: &B::Device,
) -> Result<Vec<ParamGradient>> {
    // one product and one sum over all of z: the backward pass hands each z exactly its g_z,
    // in three operations of the graph however many variables the scene has
    let total = (!z.is_empty()).then(|| {
        // the widest of their dtypes, so that each z's g_z is rounded to its own dtype only
        let wide = z.iter().any(|t| t.dtype() == DType::F64);
        let dtype = if wide { DType::F64 } else { z[0].dtype() };
        let z = z
            .into_iter()
            .map(|t| if t.dtype() == dtype { t } else { t.cast(dtype) });
        let g: Vec<f64> = g.concat();
        let n = g.len();
        (Tensor::cat(z.collect(), 0) * Tensor::from_data(TensorData::new(g, [n]), (device, dtype))).sum()
    });
    let grads = total.map(|t| t.backward());
    params
        .tensors()
        .into_iter()
        .filter_map(|(name, t)| t.map(|t| (name, t)))
        .map(|(name, t)| {
            let values = match grads.as_ref().and_then(|g| t.grad(g)) {
                Some(g) => to_host(g)?,
                None => vec![0.0; t.dims()[0]],
            };
            Ok(ParamGradient { name, values })
        })
        .collect()
}
