//! Derivative images: ∂(pixel value)/∂(parameter) for every pixel, exactly (no finite
//! differences), in the units of the parameter's command-line flag.
//!
//! Reverse mode gives one scalar's gradient per pass; a derivative image needs one number per
//! pixel. The method here is forward mode where it is cheap and reverse mode where it is exact:
//!
//! 1. **Scene tangents.** The scene (detector basis and origin, orientation coefficients,
//!    N, K, default_F, I_bg, fluence) is a small function z(θ) of the parameters. Its
//!    Jacobian columns t_i = ∂z/∂θ_i come from reverse passes over z's components (one small
//!    backward per component, once per call).
//! 2. **Per-pixel probes.** Each chunk adds ε_{p,i}·t_i to the scene values that pixel p's
//!    samples use, with ε `[P, n]` a zero leaf. Pixels use disjoint rows, so one backward pass
//!    of Σ_p I_p gives ∂I_p/∂ε_{p,i} = Σ_z (∂I_p/∂z)·t_i = dI_p/dθ_i for every pixel and every
//!    requested parameter at once.

use crate::base::error::{Error, Result};
use crate::config::components::{ParamComponent, COMPONENTS};
use crate::config::SimConfig;
use crate::experiment::Experiment;
use crate::render::drive::{drive, Chunk, Rendered};
use crate::render::{chunk_intensity_probed, derivative_spans, Image, RenderOptions};
use crate::scene::params::Params;
pub use crate::scene::probe::{Probe, SceneTangents};
use crate::scene::{tensor2, to_host, Scene, SceneTensors};
use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

/// A derivative image's name (as `-derivative NAME`), the parameter component it is taken
/// with respect to, and the flag's unit: an entry of [`crate::config::components::COMPONENTS`].
pub type DerivativeSpec = ParamComponent;

/// Every derivative image the CLI offers: every named parameter component.
pub const DERIVATIVES: &[DerivativeSpec] = &COMPONENTS;

/// The spec of derivative `name`, or an error listing the valid names.
pub fn find(name: &str) -> Result<&'static DerivativeSpec> {
    crate::config::components::find(name, "-derivative")
}

/// One derivative image: ∂I/∂(flag unit) per pixel, fast-major, 0 outside the ROI/mask.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivativeImage {
    pub spec: DerivativeSpec,
    pub data: Vec<f32>,
}

/// Sizes of the scene's components in [`scene_vector`] order.
pub(crate) fn layout(orientations: usize) -> [(&'static str, usize); 15] {
    let c = orientations;
    [
        ("basis", 9),
        ("pix0", 3),
        ("fdet", 3),
        ("sdet", 3),
        ("distance", 1),
        ("close_distance", 1),
        ("odet", 3),
        ("coef", 9 * c),
        ("offset", 3 * c),
        ("n_cells", 3),
        ("recip", 9),
        ("kahn", 1),
        ("default_f", 1),
        ("i_bg", 1),
        ("fluence", 1),
    ]
}

/// The differentiable scene's values as one vector, in [`layout`] order.
fn scene_vector<B: Backend>(st: &SceneTensors<B>) -> Tensor<B, 1> {
    let flat = |t: &Tensor<B, 2>| {
        let n: usize = t.dims().iter().product();
        t.clone().reshape([n])
    };
    let lattice = st.lattice.as_ref().expect("a differentiable scene has lattice tensors");
    let zero = || Tensor::<B, 1>::zeros([1], &st.coef.device());
    let scalar = |t: &Option<Tensor<B, 2>>| t.as_ref().map(flat).unwrap_or_else(zero);
    Tensor::cat(
        vec![
            flat(&st.basis),
            flat(&st.pix0),
            flat(&st.fdet),
            flat(&st.sdet),
            flat(&st.distance),
            flat(&st.close_distance),
            flat(&st.odet_col),
            flat(&st.coef),
            flat(&st.offset),
            flat(&lattice.n),
            flat(&lattice.recip),
            scalar(&st.kahn),
            scalar(&st.default_f),
            scalar(&st.i_bg),
            flat(&st.fluence),
        ],
        0,
    )
}

/// The Jacobian columns ∂z/∂θ_i of the scene vector for `specs` (row-major `[m, width]`; the
/// columns after the specs' stay 0), by one reverse pass per component of z.
pub(crate) fn scene_jacobian<AB: AutodiffBackend>(
    cfg: &SimConfig,
    exp: &Experiment,
    values: &[(String, Vec<f64>)],
    specs: &[&DerivativeSpec],
    width: usize,
    orientations: usize,
    device: &AB::Device,
) -> Result<Vec<f64>> {
    let constants = SceneTensors::<AB>::constants(exp, device);
    let n = width;
    let m: usize = layout(orientations).iter().map(|(_, k)| k).sum();
    let mut jac = vec![0.0; m * n];
    for j in 0..m {
        let params = Params::<AB>::at(cfg, exp, values, device)?.map_tensors(|t| t.require_grad());
        let z = scene_vector(&params.scene_with(cfg, exp, &constants, device));
        let grads = z.narrow(0, j, 1).sum().backward();
        for (i, s) in specs.iter().enumerate() {
            let leaf = params.get(s.param).ok_or_else(|| missing(s))?;
            if let Some(g) = leaf.grad(&grads) {
                jac[j * n + i] = to_host(g)?[s.index];
            }
        }
    }
    Ok(jac)
}

/// [`scene_jacobian`] by fourth-order central differences of the f64 host scene, for the
/// f32 kernels' tangents: ∂z/∂θ ≈ (8·(z(θ+h) − z(θ−h)) − (z(θ+2h) − z(θ−2h)))/(12h), h =
/// 1e-4·max(|θ|, one flag unit), in the parameter's own units. The scene map is smooth, so the error is
/// O(h⁴) plus rounding, about 1e-10 of the column: far below f32's resolution. Four scene
/// evaluations per column, where the reverse passes cost one backward per component of z
/// (hundreds with mosaic domains and φ steps).
pub(crate) fn scene_jacobian_by_differences(
    cfg: &SimConfig,
    exp: &Experiment,
    specs: &[&DerivativeSpec],
    width: usize,
) -> Result<Vec<f64>> {
    use crate::diff::host::{f64_options, Host};
    let cpu = burn::backend::ndarray::NdArrayDevice::Cpu;
    // in f64 whatever the CPU device's default dtype (an f32 process's too)
    let base = Params::<Host>::new(cfg, exp, f64_options()).values()?;
    let constants = SceneTensors::<Host>::constants(exp, f64_options());
    let scene_at = |values: &[(&'static str, Vec<f64>)]| -> Result<Vec<f64>> {
        let params = Params::<Host>::from_values(values, f64_options())?;
        to_host(scene_vector(&params.scene_with(cfg, exp, &constants, &cpu)))
    };
    let mut jac: Vec<f64> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let at = base.iter().position(|(n, _)| *n == s.param).ok_or_else(|| missing(s))?;
        let theta = base[at].1[s.index];
        let h = 1e-4 * theta.abs().max(s.per_unit);
        let moved = |k: f64| {
            let mut values = base.clone();
            values[at].1[s.index] = theta + k * h;
            scene_at(&values)
        };
        let (p1, m1, p2, m2) = (moved(1.0)?, moved(-1.0)?, moved(2.0)?, moved(-2.0)?);
        if jac.is_empty() {
            jac = vec![0.0; p1.len() * width];
        }
        for j in 0..p1.len() {
            jac[j * width + i] = (8.0 * (p1[j] - m1[j]) - (p2[j] - m2[j])) / (12.0 * h);
        }
    }
    Ok(jac)
}

/// Probe columns for `n` derivatives: `n` rounded up to an even number (the extra column has
/// zero tangents). burn 0.21's fused wgpu engine returns wrong ε gradients for an odd number
/// of probe columns ≥ 3 (measured: 3, 5, 7 wrong; 1, 2, 4, 6, 8 right; unfused and cpu always
/// right); see docs/engines.md.
fn probe_width(n: usize) -> usize {
    n.next_multiple_of(2)
}

pub(crate) fn missing(s: &DerivativeSpec) -> Error {
    Error::flag(
        "-derivative",
        format!("{}: this configuration has no {} parameter", s.name, s.param),
    )
}

/// Upload the Jacobian `[m, n]` as the stages' tangent tensors.
fn tangents<B: Backend>(jac: &[f64], n: usize, orientations: usize, device: &B::Device) -> SceneTangents<B> {
    let mut parts = std::collections::HashMap::new();
    let mut row = 0;
    for (name, len) in layout(orientations) {
        // component-major [len, n] → parameter-major [n, len]
        let mut t = vec![0.0; n * len];
        for k in 0..len {
            for i in 0..n {
                t[i * len + k] = jac[(row + k) * n + i];
            }
        }
        parts.insert(name, t);
        row += len;
    }
    let take = |name: &str, shape: [usize; 2]| tensor2::<B>(parts[name].clone(), shape, device);
    let c = orientations;
    SceneTangents {
        basis: take("basis", [3 * n, 3]),
        pix0: take("pix0", [n, 3]),
        fdet: take("fdet", [n, 3]),
        sdet: take("sdet", [n, 3]),
        distance: take("distance", [n, 1]),
        close_distance: take("close_distance", [n, 1]),
        odet: take("odet", [3 * n, 1]),
        coef: take("coef", [3 * n, 3 * c]),
        offset: take("offset", [n, 3 * c]),
        n_cells: take("n_cells", [n, 3]),
        recip: take("recip", [n, 9]),
        kahn: take("kahn", [n, 1]),
        default_f: take("default_f", [n, 1]),
        i_bg: take("i_bg", [n, 1]),
        fluence: take("fluence", [n, 1]),
    }
}

/// A span's values (photons), its derivative columns (row-major `[len, width]`) and Σω (sr).
type SpanDerivatives = (Vec<f64>, Vec<f64>, f64);

/// The image and the derivative images `names` (see [`DERIVATIVES`]), on backend `AB`.
///
/// The image is the differentiable scene's render (equal to [`crate::engine::render::render`] to
/// rounding). Memory is bounded by the chunk size times the number of derivatives.
pub fn derivative_images<AB: AutodiffBackend>(
    cfg: &SimConfig,
    exp: &Experiment,
    names: &[&str],
    opts: &RenderOptions,
    device: &AB::Device,
) -> Result<(Image, Vec<DerivativeImage>)> {
    derivative_images_at::<AB>(cfg, exp, &[], names, opts, device)
}

/// [`crate::PixelKernel::derivative_images`]'s default: the image and the derivative images
/// `names` at `at`, by the tensor stages on `Autodiff<B>` ([`derivative_images_at`]).
pub fn derivative_images_by_stages<B: burn::tensor::backend::Backend>(
    at: &crate::gradients::At<'_>,
    names: &[&str],
    device: &B::Device,
) -> Result<(Image, Vec<DerivativeImage>)> {
    derivative_images_at::<burn::backend::Autodiff<B>>(at.cfg, at.exp, at.values, names, at.opts, device)
}

/// [`derivative_images`] at the configuration's parameters with the named ones set to `values`
/// (see [`Params::at`]).
pub fn derivative_images_at<AB: AutodiffBackend>(
    cfg: &SimConfig,
    exp: &Experiment,
    values: &[(String, Vec<f64>)],
    names: &[&str],
    opts: &RenderOptions,
    device: &AB::Device,
) -> Result<(Image, Vec<DerivativeImage>)> {
    let specs = names.iter().map(|n| find(n)).collect::<Result<Vec<_>>>()?;
    let probe_params = Params::<AB>::at(cfg, exp, values, device)?.no_grad();
    if let Some(s) = specs.iter().find(|s| probe_params.get(s.param).is_none()) {
        return Err(missing(s));
    }
    let n = specs.len();
    let width = probe_width(n);
    let scene = Scene::new(exp);
    let jac = scene_jacobian::<AB>(cfg, exp, values, &specs, width, scene.orientations, device)?;
    let t = tangents::<AB>(&jac, width, scene.orientations, device);
    let st = probe_params.scene(cfg, exp, device);

    let det = &exp.detector;
    // more derivatives, more columns per intermediate: smaller spans keep memory bounded
    let (spans, block) = derivative_spans(exp, &scene, opts, 1 + n / 4);
    let rect = spans.rect.clone();
    let mut data = vec![0.0f32; det.pixels()];
    let mut images = vec![vec![0.0f32; det.pixels()]; n];
    // Σω per span, summed in span order at the end (the folds come in any order)
    let mut omegas = vec![0.0; spans.len()];
    let work = |_: &mut (), chunk: Chunk| -> Result<Rendered<SpanDerivatives>> {
        let p = chunk.span.len;
        let probe = Probe {
            epsilon: Tensor::<AB, 2>::zeros([p, width], device).require_grad(),
            tangents: t.clone(),
        };
        let out = chunk_intensity_probed(
            exp,
            &scene,
            &st,
            chunk.span,
            chunk.tricubic,
            block,
            device,
            Some(&probe),
        );
        let grads = out.intensity.clone().sum().backward();
        let values = to_host(out.intensity)?;
        let d = probe
            .epsilon
            .grad(&grads)
            .map(to_host)
            .transpose()?
            .unwrap_or_else(|| vec![0.0; p * width]);
        Ok(Rendered {
            value: (values, d, to_host(out.omega_sum)?[0]),
            out_of_range: out.out_of_range,
        })
    };
    let fold = |chunk: Chunk, (values, d, omega): SpanDerivatives| {
        rect.store(&mut data, chunk.span, values);
        for (i, (s, image)) in specs.iter().zip(&mut images).enumerate() {
            let column = d.iter().skip(i).step_by(width).map(|v| v * s.per_unit);
            rect.store(image, chunk.span, column);
        }
        omegas[chunk.index] = omega;
    };
    let fell_back = drive(
        &spans,
        opts.threads,
        exp.structure_factors.interpolate,
        || (),
        work,
        fold,
        opts.progress.as_ref(),
    )?;
    let image = Image {
        fpixels: det.fpixels,
        spixels: det.spixels,
        data,
        omega_sum: omegas.iter().sum(),
        interpolation_fell_back: fell_back,
        statistics: None,
    };
    let derivatives = specs
        .iter()
        .zip(images)
        .map(|(s, data)| DerivativeImage { spec: **s, data })
        .collect();
    Ok((image, derivatives))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::host::Host;
    use crate::experiment::args::{parse_args, Parsed};
    use burn::backend::Autodiff;

    /// The differences' columns equal the reverse passes' for every parameter component a
    /// configuration with mosaic domains, φ steps, a rotated detector, polarization and water
    /// has, to 1e-8 of each column's size.
    #[test]
    fn scene_differences_equal_the_reverse_passes() {
        let args = "-default_F 100 -cell 70 80 90 85 95 100 -misset 10 20 30 -lambda 1.3 -N 4 \
                    -distance 120 -pixel 0.2 -detpixels 8 -mosaic 0.5 -mosaic_dom 3 -phi 1 \
                    -phisteps 2 -osc 0.4 -detector_rotx 2 -detector_roty 3 -twotheta 4 -polar 0.7 \
                    -water 50 -gauss_xtal -fluence 1e24";
        let Parsed::Run(cfg, _) = parse_args(&args.split_whitespace().collect::<Vec<_>>()).unwrap() else {
            panic!("a run");
        };
        // the process's CPU device with the unit tests' dtypes (fixed once per process)
        let cpu = crate::diff::testing::dev();
        let exp = Experiment::new(&cfg).unwrap();
        let params = Params::<Host>::new(&cfg, &exp, &cpu);
        let specs: Vec<_> = DERIVATIVES.iter().filter(|s| params.get(s.param).is_some()).collect();
        assert!(specs.len() > 20, "only {} components", specs.len());
        let n = specs.len();
        let c = Scene::new(&exp).orientations;
        let exact = scene_jacobian::<Autodiff<Host>>(&cfg, &exp, &[], &specs, n, c, &cpu).unwrap();
        let ours = scene_jacobian_by_differences(&cfg, &exp, &specs, n).unwrap();
        assert_eq!(exact.len(), ours.len());
        for (i, s) in specs.iter().enumerate() {
            let column = |j: &[f64]| j.iter().skip(i).step_by(n).copied().collect::<Vec<_>>();
            let (e, o) = (column(&exact), column(&ours));
            let size = e.iter().map(|v| v * v).sum::<f64>().sqrt();
            let err = e.iter().zip(&o).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
            assert!(
                err <= 1e-8 * size.max(1e-300),
                "{}: |Δ| {err:e} of |∂z/∂θ| {size:e}",
                s.name
            );
        }
    }
}
