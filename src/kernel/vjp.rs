//! The vector–Jacobian kernel from the host: which jobs it covers, its launch
//! ([`PixelKernel::pixel_vjp`], [`super::adjoint`]) and its sums as gradients of the scene's
//! variables ([`SceneTensors::variables`]), which the small host product (∂z/∂θ)ᵀ·g_z turns
//! into the parameters' gradients (`gradients::scene_to_params`).

use super::backend::{KernelInputs, PixelKernel, VjpShape};
use super::job::{HostImage, JobSums, PixelJob};
use super::launch::{read_ints, readback, runs_on, upload, upload_floats};
use super::layout as at;
use crate::base::error::Result;
use crate::config::SimConfig;
use crate::diff::host::{f64_options, Host};
use crate::experiment::{Experiment, R_E_SQR};
use crate::gradients::derivative::{self, DerivativeImage};
use crate::gradients::{scene_to_params, At, ChunkWeights, ParamGradient, Vjp};
use crate::render::{Image, RenderOptions};
use crate::scene::params::Params;
use crate::scene::{tensor2, to_host, Scene, SceneTensors};
use burn::backend::ndarray::NdArrayDevice;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Int, Tensor, TensorData, TensorPrimitive};

/// Whether the adjoint kernels cover `job`: one shot (the kernels launch one image).
pub fn kernel_covers(job: &PixelJob) -> bool {
    job.shots == 1
}

/// The adjoint kernels' launch shape for `job` (of `exp`) with `derivatives` derivative images
/// (0: the vector–Jacobian product or the grid's scatter).
fn vjp_shape(job: &PixelJob, exp: &Experiment, derivatives: usize) -> VjpShape {
    let d = &exp.detector;
    VjpShape {
        switches: job.switches.vjp_rows(),
        spixels: d.spixels,
        fpixels: d.fpixels,
        width: at::G_GLOBALS + job.orientations.len(),
        derivatives,
    }
}

/// The grid's gradient from the scatter kernel's words `[2·nodes]` (low, high per node, as
/// read back) in units of 2^−`exponent` ([`super::scatter`]).
pub fn fixed_point_values(words: &[i64], exponent: i32) -> Vec<f64> {
    let unit = 2f64.powi(-exponent);
    words
        .chunks_exact(2)
        .map(|w| {
            let bits = (w[1] as u32 as u64) << 32 | w[0] as u32 as u64;
            bits as i64 as f64 * unit
        })
        .collect()
}

/// The exponent e of the scatter's fixed-point unit 2^−e for parts whose absolute values sum
/// to at most `bound` (> 0): Σ|parts|·2^e ≤ 2^61, a 4× margin below i64's range for the f32
/// bound's rounding; e within f32's normal exponents.
pub fn fixed_point_exponent(bound: f64) -> i32 {
    (61 - bound.log2().ceil() as i32).clamp(-120, 120)
}

/// The structure-factor grid's Σ_p w_p·∂I_p/∂F_node for `job` (`inputs`: its arrays on
/// `device`) by the scatter kernel, at the unit the bound Σ|parts| in the vector–Jacobian
/// `sums` sets; NaN where the bound is not finite, 0 where it is 0. `None` where `B` has no
/// kernel.
fn grid_gradient<B: PixelKernel>(
    job: &PixelJob,
    exp: &Experiment,
    inputs: KernelInputs<B>,
    sums: &[f64],
    weights: Tensor<B, 2>,
    device: &B::Device,
) -> Result<Option<Vec<f64>>> {
    let nodes = job.hkl.len();
    let bound = sums[at::G_GRID_BOUND];
    if bound == 0.0 || !bound.is_finite() {
        return Ok(Some(vec![if bound == 0.0 { 0.0 } else { f64::NAN }; nodes]));
    }
    let exponent = fixed_point_exponent(bound);
    let mut params = job.params.clone();
    params[at::GRID_SCALE] = 2f64.powi(exponent);
    let shape = vjp_shape(job, exp, 0);
    let inputs = KernelInputs {
        params: upload_floats::<B>(&params, device),
        ..inputs
    };
    let Some(words) = B::pixel_grid_vjp(inputs, weights.into_primitive().tensor(), shape, nodes) else {
        return Ok(None);
    };
    let words = read_ints::<B>(Tensor::<B, 1, Int>::from_primitive(words))?;
    Ok(Some(fixed_point_values(&words, exponent)))
}

/// Σ_p w_p·∂I_p/∂z by the kernel for `job` (of `exp`; `inputs`: its arrays on the device),
/// `weights` = ∂L/∂I `[spixels, fpixels]` (f32): `[G_GLOBALS + 12·C]` in the
/// [`super::layout`] `G_*` slots, then the 12 numbers of each orientation row; `None` where
/// `B` has no kernel.
pub fn kernel_sums<B: PixelKernel>(
    job: &PixelJob,
    exp: &Experiment,
    inputs: KernelInputs<B>,
    weights: Tensor<B, 2>,
) -> Result<Option<Vec<f32>>> {
    let shape = vjp_shape(job, exp, 0);
    let Some(sums) = B::pixel_vjp(inputs, weights.into_primitive().tensor(), shape) else {
        return Ok(None);
    };
    let sums = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(sums));
    sums.into_data().into_vec::<f32>().map(Some).map_err(readback)
}

/// [`PixelKernel::job_vjp`]'s default: the vector–Jacobian kernel's sums for `job` (and the
/// scatter kernel's grid gradient where `grid`), in f64; `None` where `B` has no kernel.
pub(crate) fn kernel_job_vjp<B: PixelKernel>(
    job: &PixelJob,
    exp: &Experiment,
    weights: Tensor<B, 2>,
    grid: bool,
    device: &B::Device,
) -> Result<Option<JobSums>> {
    let inputs = upload::<B>(job, device);
    let Some(sums) = kernel_sums::<B>(job, exp, inputs.clone(), weights.clone())? else {
        return Ok(None);
    };
    let sums: Vec<f64> = sums.into_iter().map(f64::from).collect();
    let grid = match grid {
        true => grid_gradient::<B>(job, exp, inputs, &sums, weights, device)?,
        false => None,
    };
    Ok(Some(JobSums { sums, grid }))
}

/// [`PixelKernel::job_derivatives`]'s default: the derivative-image kernel's images `[n,
/// pixels]` for the tangents `[n, width]` (rounded to f32); `None` where `B` has no kernel.
pub(crate) fn kernel_job_derivatives<B: PixelKernel>(
    job: &PixelJob,
    exp: &Experiment,
    tangents: &[f64],
    n: usize,
    device: &B::Device,
) -> Result<Option<Vec<f64>>> {
    let shape = vjp_shape(job, exp, n);
    let t: Vec<f32> = tangents.iter().map(|&v| v as f32).collect();
    let tangents = Tensor::<B, 2>::from_data(TensorData::new(t, [n, shape.width]), (device, DType::F32));
    let inputs = upload::<B>(job, device);
    let Some(out) = B::pixel_derivatives(inputs, tangents.into_primitive().tensor(), shape) else {
        return Ok(None);
    };
    let out = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(out));
    let data = out.into_data().into_vec::<f32>().map_err(readback)?;
    Ok(Some(data.into_iter().map(f64::from).collect()))
}

/// The kernel's sums as Σ_p w_p·∂I_p/∂z for each of `base`'s [`SceneTensors::variables`] z,
/// in their order, with the structure-factor grid's gradient `grid` where the scatter kernel
/// gave it (0 for 1/λ, which the kernel has no gradient of, and for a grid without `grid`).
pub fn scene_variable_gradients<B: Backend>(
    exp: &Experiment,
    base: &SceneTensors<B>,
    sums: &[f64],
    incidents: &[[f64; 3]],
    grid: Option<Vec<f64>>,
    device: &B::Device,
) -> Result<Vec<Vec<f64>>> {
    let g = |from: usize, n: usize| sums[from..from + n].to_vec();
    // the sums in the scene's dtype
    let like = (device, base.coef.dtype());
    let zeros = base.variables().into_iter().map(|t| t.zeros_like()).collect();
    let mut grad = base.clone().with_variables(zeros);
    let (coef, offset) = orientation_gradients(&sums[at::G_GLOBALS..], incidents);
    let c = offset.len() / 3;
    grad.coef = tensor2(coef, [3, 3 * c], like);
    grad.offset = tensor2(offset, [1, 3 * c], like);
    let basis = [g(at::G_FDET, 3), g(at::G_SDET, 3), g(at::G_ODET, 3)].concat();
    grad.basis = tensor2(basis, [3, 3], like);
    grad.pix0 = tensor2(g(at::G_PIX0, 3), [1, 3], like);
    grad.odet_col = tensor2(g(at::G_ODET_COL, 3), [3, 1], like);
    grad.close_distance = tensor2(g(at::G_CLOSE_DISTANCE, 1), [1, 1], like);
    grad.fdet = tensor2(g(at::G_CURVED_FDET, 3), [1, 3], like);
    grad.sdet = tensor2(g(at::G_CURVED_SDET, 3), [1, 3], like);
    grad.distance = tensor2(g(at::G_DISTANCE, 1), [1, 1], like);
    // scale = r_e²·fluence/steps
    let fluence = sums[at::G_SCALE] * R_E_SQR / exp.steps as f64;
    grad.fluence = tensor2(vec![fluence], [1, 1], like);
    let one = |slot: usize| tensor2(g(slot, 1), [1, 1], like);
    if let Some(l) = &mut grad.lattice {
        l.n = tensor2(g(at::G_N_CELLS, 3), [1, 3], like);
        l.recip = tensor2(g(at::G_RECIP, 9), [1, 9], like);
    }
    if grad.kahn.is_some() {
        grad.kahn = Some(one(at::G_KAHN));
    }
    // the job's default_F: the grid's when it has one (`PixelJob::of_scene_tensors`)
    match grad.hkl.as_mut().and_then(|h| h.default_f_tensor.as_mut()) {
        Some(f) => *f = one(at::G_DEFAULT_F),
        None if grad.default_f.is_some() => grad.default_f = Some(one(at::G_DEFAULT_F)),
        None => {}
    }
    if grad.i_bg.is_some() {
        grad.i_bg = Some(one(at::G_I_BG));
    }
    if let (Some(h), Some(grid)) = (grad.hkl.as_mut(), grid) {
        let n = grid.len();
        h.values = Tensor::from_data(TensorData::new(grid, [n]), like);
    }
    grad.variables().into_iter().map(to_host).collect()
}

/// The orientation rows' sums in the scene's layouts: `coef` `[3, 3C]` (axis, then vector,
/// then row) and `offset` `[1, 3C]`. The kernel sums Σ (d − i)·∂L/∂h for a/λ (`incidents`:
/// each row's i, as the kernel read it) and −Σ ∂L/∂h for the offsets a·i/λ; a/λ's own sum is
/// Σ d·∂L/∂h = the first plus i·Σ ∂L/∂h. (Near the direct beam d ≈ i: summed apart in f32,
/// Σ d·∂L/∂h and i·Σ ∂L/∂h would cancel to their rounding.)
fn orientation_gradients(rows: &[f64], incidents: &[[f64; 3]]) -> (Vec<f64>, Vec<f64>) {
    let c = rows.len() / at::ORIENTATION_WIDTH;
    let mut coef = vec![0.0; 9 * c];
    let mut offset = vec![0.0; 3 * c];
    for ((ci, row), i) in rows.chunks_exact(at::ORIENTATION_WIDTH).enumerate().zip(incidents) {
        for v in 0..3 {
            let off = row[at::OFFSET + v];
            for axis in 0..3 {
                coef[axis * 3 * c + v * c + ci] = row[3 * v + axis] - i[axis] * off;
            }
            offset[v * c + ci] = off;
        }
    }
    (coef, offset)
}

/// The incident direction (unit, as the kernel reads it in f32) of each orientation row's
/// source.
pub(crate) fn row_incidents(job: &PixelJob) -> Vec<[f64; 3]> {
    let c = job.counts[at::PER_SHOT] as usize;
    let per_source = c / job.counts[at::SOURCES].max(1) as usize;
    (0..c)
        .map(|o| {
            let r = (o / per_source.max(1)) * at::SOURCE_WIDTH + at::INCIDENT;
            [job.sources[r], job.sources[r + 1], job.sources[r + 2]]
        })
        .collect()
}

/// The image of `exp` at the configuration's parameters and Σ_p w_p·∂I_p/∂θ for every
/// parameter of [`Params::new`], by the kernels on `device` ([`weighted_vjp`] with the
/// weights `weights`, fast-major over the detector; `None` = all ones):
/// [`crate::gradients::image_vjp`]'s fast path on a GPU. `None` where [`weighted_vjp`] is.
#[cfg(test)]
pub fn image_vjp<B: PixelKernel>(
    cfg: &SimConfig,
    exp: &Experiment,
    weights: Option<&[f32]>,
    device: &B::Device,
) -> Result<Option<(Image, Vec<ParamGradient>)>> {
    let weigh = crate::gradients::fixed_weights(exp, weights)?;
    let opts = RenderOptions::default();
    let vjp = weighted_vjp::<B>(&At::own(cfg, exp, &opts), &weigh, device)?;
    Ok(vjp.map(|v| (v.image, v.gradients)))
}

/// Whether `B` renders jobs and `exp` renders in one launch on it. (The scene and its Jacobian
/// are evaluated on the host in f64 whatever the CPU device's default dtype: [`f64_options`].)
fn host_ready<B: PixelKernel>(exp: &Experiment) -> bool {
    let fits = !B::has_pixel_kernel() || runs_on::<B>(exp, 1);
    B::renders_jobs() && fits
}

/// A scene graph's variables z (on the graph over the parameters) and their values detached:
/// what turns the sums of a job's vector–Jacobian product into the parameters' gradients.
pub(crate) struct SceneVariables {
    z: Vec<Tensor<Autodiff<Host>, 1>>,
    base: SceneTensors<Autodiff<Host>>,
}

impl SceneVariables {
    /// The variables of the scene `graph`.
    pub(crate) fn new(graph: SceneTensors<Autodiff<Host>>) -> Self {
        let z = graph.variables();
        let base = graph.with_variables(z.iter().map(|t| t.clone().detach()).collect());
        Self { z, base }
    }

    /// Σ_p w_p·∂I_p/∂θ for every parameter of `params` (the graph's) from `out`, the
    /// vector–Jacobian product of the graph's job (`incidents`: its rows' incident directions,
    /// [`row_incidents`]): (∂z/∂θ)ᵀ·g_z, on the host thread where burn-ndarray's operations run
    /// in place.
    pub(crate) fn gradients(
        self,
        exp: &Experiment,
        params: &Params<Autodiff<Host>>,
        out: JobSums,
        incidents: &[[f64; 3]],
    ) -> Result<Vec<ParamGradient>> {
        let cpu = NdArrayDevice::Cpu;
        let (base, z) = (&self.base, self.z);
        crate::base::workers::on_host(|| {
            let g = scene_variable_gradients(exp, base, &out.sums, incidents, out.grid, &cpu)?;
            scene_to_params(params, z, g, &cpu)
        })
    }
}

/// A scene graph on the host as the adjoint kernels take it: its variables and the kernels'
/// job at their values.
pub(crate) struct KernelScene {
    variables: SceneVariables,
    pub job: PixelJob,
    /// Whether the structure-factor grid's values are parameters (the scatter kernel's).
    grid: bool,
    /// Whether `job` knows C's tricubic fall-back pixel (a render found it).
    pub fall_back_known: bool,
}

impl KernelScene {
    /// The scene `graph` of `exp` built from `params` (`host`: [`Scene::new`] of `exp`);
    /// `None` where the kernels do not cover it ([`kernel_covers`]).
    pub(crate) fn new(
        exp: &Experiment,
        host: &Scene,
        params: &Params<Autodiff<Host>>,
        graph: SceneTensors<Autodiff<Host>>,
    ) -> Result<Option<Self>> {
        let variables = SceneVariables::new(graph);
        let job = PixelJob::of_scene_tensors(exp, host, &variables.base)?;
        let grid = grid_is_parameter(params.structure_factors.is_some(), &job);
        let covered = kernel_covers(&job);
        Ok(covered.then_some(Self {
            variables,
            job,
            grid,
            fall_back_known: false,
        }))
    }

    /// Σ_p w_p·∂I_p/∂θ for every parameter of `params` (the graph's), `w` = ∂L/∂I `[spixels,
    /// fpixels]` on `device`: the vector–Jacobian kernel (and the grid's scatter kernel where
    /// its values are parameters), then (∂z/∂θ)ᵀ·g_z on the host. With tricubic structure
    /// factors a render first finds C's fall-back pixel where no render of this job has.
    pub(crate) fn gradients<B: PixelKernel>(
        mut self,
        exp: &Experiment,
        params: &Params<Autodiff<Host>>,
        w: Tensor<B, 2>,
        opts: &RenderOptions,
        device: &B::Device,
    ) -> Result<Option<Vec<ParamGradient>>> {
        if self.job.switches.tricubic
            && !self.fall_back_known
            && B::host_image(&mut self.job, exp, opts, device)?.is_none()
        {
            return Ok(None);
        }
        let Some(out) = B::job_vjp(&self.job, exp, w, self.grid, opts, device)? else {
            return Ok(None);
        };
        let incidents = row_incidents(&self.job);
        self.variables.gradients(exp, params, out, &incidents).map(Some)
    }
}

/// Whether the vector–Jacobian product of `job` takes the structure-factor grid's gradient:
/// where the grid's values are parameters (`parameter`) and the job reads the grid.
pub(crate) fn grid_is_parameter(parameter: bool, job: &PixelJob) -> bool {
    parameter && (job.switches.nearest || job.switches.tricubic)
}

/// The image of `exp` and the derivative images `names` ([`crate::gradients::derivative::DERIVATIVES`],
/// in their flags' units) by the kernel on `device`: the scene's Jacobian columns for the
/// names on the host in f64 ([`crate::gradients::derivative`]'s first step), then one launch of the
/// derivative-image kernel ([`PixelKernel::pixel_derivatives`]). `None` where `B` has no
/// kernel, a launch does not fit or the kernel does not cover the configuration
/// ([`kernel_covers`]).
pub fn derivative_images<B: PixelKernel>(
    cfg: &SimConfig,
    exp: &Experiment,
    names: &[&str],
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<Option<(Image, Vec<DerivativeImage>)>> {
    if !host_ready::<B>(exp) {
        return Ok(None);
    }
    let specs = names.iter().map(|n| derivative::find(n)).collect::<Result<Vec<_>>>()?;
    // explicit f64: a default-dtype tensor would fix the CPU device's dtype in a wgpu process
    let params = Params::<Host>::new(cfg, exp, f64_options());
    if let Some(s) = specs.iter().find(|s| params.get(s.param).is_none()) {
        return Err(derivative::missing(s));
    }
    let host = Scene::new(exp);
    let mut job = PixelJob::new(exp, &host);
    if !kernel_covers(&job) {
        return Ok(None);
    }
    let n = specs.len();
    // the small scene graphs where burn-ndarray's operations run in place
    let jac = crate::base::workers::on_host(|| derivative::scene_jacobian_by_differences(cfg, exp, &specs, n))?;
    let width = at::G_GLOBALS + job.orientations.len();
    let tangents = kernel_tangents(exp, &jac, n, &row_incidents(&job), width);
    // the render (which finds C's tricubic fall-back pixel for the job)
    let Some(rendered) = B::host_image(&mut job, exp, opts, device)? else {
        return Ok(None);
    };
    let Some(data) = B::job_derivatives(&job, exp, &tangents, n, opts, device)? else {
        return Ok(None);
    };
    let derivatives = specs
        .iter()
        .zip(data.chunks(exp.detector.pixels().max(1)))
        .map(|(s, image)| DerivativeImage {
            spec: **s,
            data: image.iter().map(|&v| (v * s.per_unit) as f32).collect(),
        })
        .collect();
    Ok(Some((rendered.image, derivatives)))
}

/// The Jacobian columns ∂z/∂θ_i of the derivative module's scene vector (component-major
/// `[m, n]`, [`gradients::derivative::layout`] order) as the kernel's tangents `[n, width]`, in the
/// vector–Jacobian layout. The kernel's a/λ slots hold Σ (d − i)·∂L/∂h ([`orientation_gradients`]), so an
/// offset's tangent there is ∂(a·i/λ)/∂θ − i·∂(a/λ)/∂θ.
fn kernel_tangents(exp: &Experiment, jac: &[f64], n: usize, incidents: &[[f64; 3]], width: usize) -> Vec<f64> {
    let c = incidents.len();
    let mut rows = std::collections::HashMap::new();
    let mut row = 0;
    for (name, len) in derivative::layout(c) {
        rows.insert(name, row);
        row += len;
    }
    let column = |name: &str, k: usize, i: usize| jac[(rows[name] + k) * n + i];
    let mut t = vec![0.0f64; n * width];
    for (i, ti) in t.chunks_mut(width).enumerate() {
        let mut copy = |slot: usize, name: &str, len: usize| {
            for k in 0..len {
                ti[slot + k] = column(name, k, i);
            }
        };
        copy(at::G_FDET, "basis", 9);
        copy(at::G_PIX0, "pix0", 3);
        copy(at::G_ODET_COL, "odet", 3);
        copy(at::G_CLOSE_DISTANCE, "close_distance", 1);
        copy(at::G_CURVED_FDET, "fdet", 3);
        copy(at::G_CURVED_SDET, "sdet", 3);
        copy(at::G_DISTANCE, "distance", 1);
        copy(at::G_N_CELLS, "n_cells", 3);
        copy(at::G_RECIP, "recip", 9);
        copy(at::G_KAHN, "kahn", 1);
        copy(at::G_DEFAULT_F, "default_f", 1);
        copy(at::G_I_BG, "i_bg", 1);
        ti[at::G_SCALE] = column("fluence", 0, i) * R_E_SQR / exp.steps as f64;
        for (ci, incident) in incidents.iter().enumerate() {
            let o = at::G_GLOBALS + ci * at::ORIENTATION_WIDTH;
            for v in 0..3 {
                let mut offset = column("offset", v * c + ci, i);
                for axis in 0..3 {
                    let coef = column("coef", axis * 3 * c + v * c + ci, i);
                    ti[o + 3 * v + axis] = coef;
                    offset -= incident[axis] * coef;
                }
                ti[o + at::OFFSET + v] = offset;
            }
        }
    }
    t
}

/// The image at `at`, the loss contributions and the weights `weigh` returns for its rendered
/// pixels (one call, every rendered pixel), and Σ_p w_p·∂I_p/∂θ for every parameter, by the
/// kernels on `device`: the render, then the vector–Jacobian kernel with those weights
/// ([`PixelKernel::vjp`] on a cube backend). The scene and its graph are evaluated on the host
/// in f64 whatever the CPU device's default dtype. `None` where `B` has no kernel, a launch
/// does not fit or the kernel does not cover the configuration ([`kernel_covers`]).
pub fn weighted_vjp<B: PixelKernel>(at: &At<'_>, weigh: &ChunkWeights<'_>, device: &B::Device) -> Result<Option<Vjp>> {
    let (cfg, exp) = (at.cfg, at.exp);
    if !host_ready::<B>(exp) {
        return Ok(None);
    }
    // the small scene graph where burn-ndarray's operations run in place
    let (params, scene) = crate::base::workers::on_host(|| {
        let cpu = NdArrayDevice::Cpu;
        let params = Params::<Autodiff<Host>>::from_values(&at.all_values::<Host>(f64_options())?, f64_options())?;
        let graph = params.scene(cfg, exp, &cpu);
        KernelScene::new(exp, &Scene::new(exp), &params, graph).map(|scene| (params, scene))
    })?;
    let Some(mut scene) = scene else {
        return Ok(None);
    };
    let Some(HostImage { image, photons }) = B::host_image(&mut scene.job, exp, at.opts, device)? else {
        return Ok(None);
    };
    scene.fall_back_known = true;
    let (pixels, rendered): (Vec<u32>, Vec<f64>) = exp.active_pixels().iter().map(|p| (p as u32, photons[p])).unzip();
    drop(photons);
    let (loss, w) = weigh(&pixels, &rendered);
    drop(rendered);
    // the weights of every pixel, in place when every pixel is rendered
    let weights = match pixels.len() == image.data.len() && w.len() == pixels.len() {
        true => w,
        false => {
            let mut weights = vec![0.0f64; image.data.len()];
            for (&p, w) in pixels.iter().zip(w) {
                weights[p as usize] = w;
            }
            weights
        }
    };
    drop(pixels);
    let d = &exp.detector;
    let shape = [d.spixels, d.fpixels];
    // the kernels read f32 weights; the native loop f64
    let w = match B::has_pixel_kernel() {
        true => {
            let weights: Vec<f32> = weights.into_iter().map(|v| v as f32).collect();
            Tensor::<B, 2>::from_data(TensorData::new(weights, shape), (device, DType::F32))
        }
        false => Tensor::<B, 2>::from_data(TensorData::new(weights, shape), (device, DType::F64)),
    };
    let gradients = scene.gradients::<B>(exp, &params, w, at.opts, device)?;
    Ok(gradients.map(|gradients| Vjp { image, loss, gradients }))
}

#[cfg(test)]
mod tests {
    use super::{fixed_point_exponent, fixed_point_values};

    /// Words as the scatter kernel leaves them (low, high; i32 read back as i64) for the sum of
    /// `parts` in units 2^−e: the two's-complement words of Σ round(part·2^e).
    fn words(parts: &[f64], e: i32) -> Vec<i64> {
        let total: i64 = parts.iter().map(|p| (p * 2f64.powi(e)).round() as i64).sum();
        let bits = total as u64;
        vec![(bits as u32) as i32 as i64, ((bits >> 32) as u32) as i32 as i64]
    }

    #[test]
    fn fixed_point_sums_come_back_within_their_rounding() {
        for parts in [vec![1.5e-3, -2.25e-7, 4.0], vec![-3.0e5, 1.0e-2], vec![-7.0e-12]] {
            let bound: f64 = parts.iter().map(|p: &f64| p.abs()).sum();
            let e = fixed_point_exponent(bound);
            assert!(bound * 2f64.powi(e) <= 2f64.powi(61));
            assert!(bound * 2f64.powi(e) > 2f64.powi(59));
            let got = fixed_point_values(&words(&parts, e), e)[0];
            let want: f64 = parts.iter().sum();
            let unit = 2f64.powi(-e);
            assert!((got - want).abs() <= parts.len() as f64 * unit, "{got} against {want}");
        }
    }

    /// The vector–Jacobian kernel against itself with other image rows a thread.
    #[cfg(feature = "gpu")]
    mod image_rows {
        use super::super::kernel_sums;
        use crate::kernel::{job::PixelJob, launch::upload};
        use crate::scene::Scene;
        use burn::tensor::{DType, Tensor, TensorData};

        /// The kernel's sums with `rows` image rows a thread, for `flags` (a 61×45 image, which
        /// no row block divides) and weights in [½, 1½]; `None` without a wgpu adapter.
        fn sums_with_rows(flags: &str, rows: &[usize]) -> Option<Vec<Vec<f32>>> {
            if !crate::kernel::testing::wgpu_or_skip() {
                return None;
            }
            type B = crate::base::gpu::WgpuUnfused;
            let device = Default::default();
            let args = format!("{flags} -detpixels_f 45 -detpixels_s 61 -pixel 0.4");
            let crate::experiment::args::Parsed::Run(cfg, _) =
                crate::experiment::args::parse_args(&args.split_whitespace().collect::<Vec<_>>()).expect("valid flags")
            else {
                panic!("no run: {args}")
            };
            let exp = crate::experiment::Experiment::new(&cfg).expect("a valid experiment");
            let mut job = PixelJob::new(&exp, &Scene::new(&exp));
            let n = exp.detector.pixels();
            let weights: Vec<f32> = (0..n).map(|p| 0.5 + ((p * 7919) % 1000) as f32 / 1000.0).collect();
            let mut out = Vec::new();
            for &r in rows {
                job.switches.image_rows = r;
                let w = Tensor::from_data(
                    TensorData::new(weights.clone(), [exp.detector.spixels, exp.detector.fpixels]),
                    (&device, DType::F32),
                );
                let sums = kernel_sums::<B>(&job, &exp, upload::<B>(&job, &device), w).expect("the kernel's sums");
                out.push(sums.expect("the wgpu backend has the kernel"));
            }
            Some(out)
        }

        /// One pixel a thread (`kernel::adjoint::pixel_path`), a GPU's 4 image rows and a
        /// CPU adapter's 32 give the same sums up to f32 rounding in another order, with one
        /// orientation batch and with several (mosaic domains and φ steps, a partial last batch).
        #[test]
        fn the_sums_do_not_depend_on_the_image_rows_a_thread_takes() {
            let light = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100";
            for flags in [
                light.to_string(),
                format!("{light} -mosaic 0.5 -mosaic_dom 3 -phisteps 2 -osc 0.5 -oversample 2"),
            ] {
                let Some(sums) = sums_with_rows(&flags, &[1, 4, 32]) else {
                    return;
                };
                let norm = sums[0].iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
                let mut worst = 0.0f64;
                for other in &sums[1..] {
                    for (k, (&a, &b)) in other.iter().zip(&sums[0]).enumerate() {
                        let err = (a as f64 - b as f64).abs();
                        worst = worst.max(err / (b as f64).abs().max(1e-30));
                        assert!(
                            err <= 1e-4 * (b as f64).abs() + 1e-7 * norm,
                            "{flags}: slot {k}: {a} against one pixel a thread's {b}"
                        );
                    }
                }
                eprintln!("{flags}: worst relative difference {worst:.2e}");
            }
        }
    }
}
