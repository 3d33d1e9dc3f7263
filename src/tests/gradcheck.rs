//! Gradcheck (f64, CPU): for every continuous parameter, the autodiff vector–Jacobian product
//! of the image against central finite differences of the same rendered values, on small
//! images of non-trivial configurations; gradients of unused parameters exactly zero; values
//! and gradients finite at the singular points of the formulas.

use super::common;

use common::f64_device as dev;
use common::host;

use burn::backend::ndarray::NdArray;
use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use nanobragg::config::SimConfig;
use nanobragg::experiment::{Experiment, Span};
use nanobragg::gradients::{image_vjp, ParamGradient};
use nanobragg::render::{chunk_intensity, RenderOptions};
use nanobragg::scene::params::Params;
use nanobragg::scene::Scene;
use std::io::Write;

type B = NdArray<f64>;
type Ad = Autodiff<B>;

/// A triclinic, misset crystal with 3 mosaic domains and 2 φ steps, on a detector rotated
/// about x and y and swung by 2θ, with Kahn polarization.
const BASE: &str = "-cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 -distance 80 \
    -pixel 0.4 -detpixels 24 -detector_rotx 2 -detector_roty 1 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 \
    -phi 5 -osc 2 -phisteps 2 -polar 0.8 -oversample 1";

/// An HKL table over −8…8 on every axis with smooth, non-constant F.
fn hkl_file() -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    for h in -8..=8 {
        for k in -8..=8 {
            for l in -8..=8 {
                let v = 50.0 + 20.0 * ((h * 3 + k * 5 + l * 7) as f64 * 0.37).sin();
                writeln!(f, "{h} {k} {l} {v:.3}").unwrap();
            }
        }
    }
    f.flush().unwrap();
    f
}

/// `params` with component `i` of `name` moved by `delta`.
fn perturbed(params: &Params<B>, name: &str, i: usize, delta: f64) -> Params<B> {
    let mut v = host(params.get(name).unwrap());
    v[i] += delta;
    let n = v.len();
    params
        .clone()
        .replace(name, Tensor::from_data(TensorData::new(v, [n]), &dev()))
        .unwrap()
}

/// Fixed, non-uniform weights: a generic direction in image space.
fn weights(n: usize) -> Vec<f32> {
    (0..n).map(|i| 1.0 + ((i * 7919) % 13) as f32 / 13.0).collect()
}

/// Σ w·I in f64 straight from the stages (the image itself is stored as f32).
fn weighted_sum(cfg: &SimConfig, exp: &Experiment, p: &Params<B>, w: &[f32]) -> f64 {
    let scene = Scene::new(exp);
    // the whole ROI as one span; masked positions come back as 0
    let rect = exp.active_pixels().rect();
    let span = Span {
        start: 0,
        len: rect.len(),
    };
    let st = p.scene(cfg, exp, &dev());
    let tri = exp.structure_factors.interpolate;
    let out = chunk_intensity(exp, &scene, &st, span, tri, scene.orientations, &dev());
    let v = out.intensity.into_data().convert::<f64>().to_vec::<f64>().unwrap();
    (0..rect.len()).zip(v).map(|(k, x)| x * w[rect.index(k)] as f64).sum()
}

fn autodiff(cfg: &SimConfig, exp: &Experiment, w: &[f32]) -> Vec<ParamGradient> {
    let d = dev();
    let ad_params = Params::<Ad>::new(cfg, exp, &d).map_tensors(|t| t.require_grad());
    image_vjp(cfg, exp, &ad_params, Some(w), &RenderOptions::default(), &d)
        .unwrap()
        .1
}

/// Compare every component (for the F grid: the `max_grid` with the largest gradients) with
/// central differences. Returns the names checked.
fn gradcheck(args: &str, hkl: Option<&std::path::Path>, max_grid: usize) -> Vec<&'static str> {
    let (cfg, exp) = common::experiment(&args.split_whitespace().collect::<Vec<_>>(), hkl);
    let params = Params::<B>::new(&cfg, &exp, &dev());
    let w = weights(exp.detector.pixels());
    let loss0 = weighted_sum(&cfg, &exp, &params, &w);
    assert!(loss0 > 0.0, "{args}: blank image");
    let grads = autodiff(&cfg, &exp, &w);
    let mut checked = vec![];
    for g in &grads {
        let values = host(params.get(g.name).unwrap());
        let mut components: Vec<usize> = (0..values.len()).collect();
        if g.name == "structure_factors" {
            components.sort_by(|&a, &b| g.values[b].abs().total_cmp(&g.values[a].abs()));
            components.truncate(max_grid);
        }
        for i in components {
            let (ad, x) = (g.values[i], values[i]);
            if g.name == "water_size" && x == 0.0 {
                // I_bg ∝ (water size)³: the analytic derivative at 0 is 0 (central
                // differences only see the cubic, c·h²)
                assert_eq!(ad, 0.0, "{args}: water_size at 0");
                continue;
            }
            // relative steps; an absolute 1e-7 (rad, fraction) for values that are 0
            let h = if x != 0.0 { 1e-6 * x.abs() } else { 1e-7 };
            let up = weighted_sum(&cfg, &exp, &perturbed(&params, g.name, i, h), &w);
            let down = weighted_sum(&cfg, &exp, &perturbed(&params, g.name, i, -h), &w);
            let fd = (up - down) / (2.0 * h);
            // Tolerance: 1e-5 of the gradient plus the rounding error of the quotient. With
            // h = 1e-6·|x| the truncation error ~h²·|f'''|/6 is far below 1e-5; the rounding
            // error is ~ε_L·|L|/h, where ε_L, the relative rounding of L (a sum of ~10^4 f64
            // terms), is bounded here by 1e-13. It matters for parameters that change L
            // little (K; the φ step under a water background).
            let tolerance = 1e-5 * fd.abs().max(ad.abs()) + 1e-13 * loss0 / h;
            assert!(
                (ad - fd).abs() <= tolerance,
                "{args}: {}[{i}]: autodiff {ad:e}, finite difference {fd:e}",
                g.name
            );
        }
        checked.push(g.name);
    }
    checked
}

#[test]
fn every_parameter_with_absorption_water_and_dispersion() {
    let args = format!(
        "{BASE} -default_F 100 -detector_thick 100 -detector_abs 300 -thicksteps 2 -water 0.5 \
         -dispersion 0.02 -dispsteps 3"
    );
    let checked = gradcheck(&args, None, 0);
    for name in [
        "cell",
        "misset",
        "phi",
        "mosaic_spread",
        "distance",
        "beam_center",
        "detector_rotation",
        "twotheta",
        "lambda0",
        "fluence",
        "n_cells",
        "polarization",
        "water_size",
        "default_f",
        "dispersion",
    ] {
        assert!(checked.contains(&name), "{name} not checked");
    }
}

#[test]
fn structure_factor_grid_and_default_f() {
    let f = hkl_file();
    // reflections beyond ±8 take default_F
    let checked = gradcheck(&format!("{BASE} -default_F 30 -round_xtal"), Some(f.path()), 12);
    assert!(checked.contains(&"structure_factors") && checked.contains(&"default_f"));
}

#[test]
fn gaussian_shape_sample_pivot_and_close_distance() {
    let checked = gradcheck(
        &format!("{BASE} -default_F 100 -gauss_xtal -pivot sample -close_distance 75"),
        None,
        0,
    );
    assert!(checked.contains(&"close_distance"));
}

#[test]
fn curved_detector() {
    gradcheck(&format!("{BASE} -default_F 100 -curved_det"), None, 0);
}

#[test]
fn unused_parameters_have_exactly_zero_gradient() {
    // no polarization, no water, one wavelength, XDS beam centre from ORGX/ORGY
    let (cfg, exp) = common::setup(&format!("{BASE} -default_F 100 -nopolar -xds -ORGX 10 -ORGY 14"));
    let grads = autodiff(&cfg, &exp, &weights(exp.detector.pixels()));
    let get = |name: &str| grads.iter().find(|g| g.name == name).unwrap().values.clone();
    for name in ["polarization", "water_size", "dispersion", "beam_center"] {
        assert!(get(name).iter().all(|&v| v == 0.0), "{name}: {:?}", get(name));
    }
    // ...and the used ones are not
    for name in ["cell", "distance", "n_cells", "fluence", "default_f"] {
        assert!(get(name).iter().any(|&v| v != 0.0), "{name}: {:?}", get(name));
    }
    assert!(grads
        .iter()
        .all(|g| g.name != "close_distance" && g.name != "structure_factors"));
}

#[test]
fn finite_at_the_beam_centre_integer_hkl_single_cells_and_zero_spreads() {
    // 21 pixels of 0.1 mm: the direct beam hits the centre of pixel (10, 10), where
    // h = k = l = 0 exactly (zero scattering angle); Na = 1; no mosaic spread, no dispersion
    for shape in ["", " -round_xtal", " -gauss_xtal", " -tophat_spots"] {
        let args = format!(
            "-default_F 100 -cell 100 100 100 90 90 90 -lambda 1 -Na 1 -Nb 3 -Nc 5 -distance 100 \
             -pixel 0.1 -detpixels 21 -mosaic 0 -dispersion 0 -polar 0.5 -oversample 1{shape}"
        );
        let (cfg, exp) = common::setup(&args);
        let w = weights(exp.detector.pixels());
        let params = Params::<B>::new(&cfg, &exp, &dev());
        let value = weighted_sum(&cfg, &exp, &params, &w);
        assert!(value.is_finite() && value > 0.0, "{shape}: {value}");
        for g in autodiff(&cfg, &exp, &w) {
            assert!(
                g.values.iter().all(|v| v.is_finite()),
                "{shape}: {} = {:?}",
                g.name,
                g.values
            );
        }
    }
}
