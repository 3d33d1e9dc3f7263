//! Gradients (f64, CPU): the differentiable scene reproduces the host render, and autodiff
//! vector–Jacobian products agree with central finite differences of the rendered image.

mod common;

use common::f64_device as dev;

use burn::backend::ndarray::NdArray;
use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use nanobragg::cli::{parse_args, Parsed};
use nanobragg::config::{HklSource, SimConfig};
use nanobragg::gradient::image_vjp;
use nanobragg::params::Params;
use nanobragg::scene::Scene;
use nanobragg::setup::Experiment;
use nanobragg::simulate::{chunk_intensity, render, render_scene, RenderOptions};

type B = NdArray<f64>;
type Ad = Autodiff<B>;

fn setup(args: &str) -> (SimConfig, Experiment) {
    let args: Vec<&str> = args.split_whitespace().collect();
    let Parsed::Run(mut cfg, _) = parse_args(&args).unwrap() else {
        panic!()
    };
    cfg.crystal.hkl = HklSource::None;
    let exp = Experiment::new(&cfg).unwrap();
    (*cfg, exp)
}

/// A triclinic, misset, mosaic crystal on a rotated detector with polarization.
const CONFIG: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 -distance 80 \
    -pixel 0.4 -detpixels 24 -detector_rotx 2 -detector_roty 1 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 \
    -phi 5 -osc 2 -phisteps 2 -polar 0.8 -oversample 1";

fn render_at(cfg: &SimConfig, exp: &Experiment, params: &Params<B>) -> Vec<f32> {
    let scene = Scene::new(exp);
    let opts = RenderOptions {
        threads: 1,
        ..Default::default()
    };
    render_scene(exp, &scene, &opts, &dev(), &|| params.scene(cfg, exp, &dev()))
        .unwrap()
        .data
}

#[test]
fn differentiable_scene_reproduces_the_host_render() {
    for extra in [
        "",
        " -xds -ORGX 10 -ORGY 14",
        " -dials",
        " -adxv -Xbeam 3 -Ybeam 5",
        " -pivot sample -close_distance 70 -fdet_vector 0 0 1",
    ] {
        let (cfg, exp) = setup(&format!("{CONFIG}{extra}"));
        let host = render::<B>(&exp, &RenderOptions::default(), &dev()).unwrap().data;
        let params = Params::<B>::new(&cfg, &exp, &dev());
        let diff = render_at(&cfg, &exp, &params);
        let max = host.iter().cloned().fold(0.0f32, f32::max) as f64;
        for (a, b) in host.iter().zip(&diff) {
            assert!(((a - b).abs() as f64) < 1e-6 * max, "{extra}: {a} vs {b}");
        }
    }
}

/// Replace component `i` of parameter `name` by `value`.
fn perturbed(params: &Params<B>, name: &str, i: usize, delta: f64) -> Params<B> {
    let bump = |t: Tensor<B, 1>| {
        let mut v = t.into_data().convert::<f64>().to_vec::<f64>().unwrap();
        v[i] += delta;
        let n = v.len();
        Tensor::<B, 1>::from_data(TensorData::new(v, [n]), &dev())
    };
    let mut p = params.clone();
    match name {
        "cell" => p.cell = bump(p.cell),
        "misset" => p.misset = bump(p.misset),
        "phi" => p.phi = bump(p.phi),
        "mosaic_spread" => p.mosaic_spread = bump(p.mosaic_spread),
        "distance" => p.distance = bump(p.distance),
        "beam_center" => p.beam_center = bump(p.beam_center),
        "detector_rotation" => p.detector_rotation = bump(p.detector_rotation),
        "twotheta" => p.twotheta = bump(p.twotheta),
        "lambda0" => p.lambda0 = bump(p.lambda0),
        "fluence" => p.fluence = bump(p.fluence),
        other => panic!("{other}"),
    }
    p
}

fn value_of(params: &Params<B>, name: &str, i: usize) -> f64 {
    let (_, t) = params.tensors().into_iter().find(|(n, _)| *n == name).unwrap();
    t.unwrap().into_data().convert::<f64>().to_vec::<f64>().unwrap()[i]
}

#[test]
fn autodiff_matches_central_differences() {
    let (cfg, exp) = setup(CONFIG);
    let d = dev();
    let params = Params::<B>::new(&cfg, &exp, &d);
    let n = exp.detector.pixels();
    // fixed, non-uniform weights: a generic direction in image space
    let weights: Vec<f32> = (0..n).map(|i| 1.0 + ((i * 7919) % 13) as f32 / 13.0).collect();
    let ad_params = Params::<Ad>::new(&cfg, &exp, &d).map(|t| t.require_grad());
    let (_, grads) = image_vjp(&cfg, &exp, &ad_params, Some(&weights), &RenderOptions::default(), &d).unwrap();
    // the weighted sum in f64, straight from the stages (the image itself is stored as f32)
    let scene = Scene::new(&exp);
    let pixels = exp.active_pixels();
    let loss = |p: &Params<B>| -> f64 {
        let st = p.scene(&cfg, &exp, &d);
        let out = chunk_intensity(&exp, &scene, &st, &pixels, false, scene.orientations, &d);
        let v = out.intensity.into_data().convert::<f64>().to_vec::<f64>().unwrap();
        pixels.iter().zip(v).map(|(&i, x)| x * weights[i as usize] as f64).sum()
    };
    for g in &grads {
        for (i, &ad) in g.values.iter().enumerate() {
            let x = value_of(&params, g.name, i);
            // relative steps; an absolute 1e-7 rad for angles that are 0
            let h = if x != 0.0 { 1e-6 * x.abs() } else { 1e-7 };
            let fd = (loss(&perturbed(&params, g.name, i, h)) - loss(&perturbed(&params, g.name, i, -h))) / (2.0 * h);
            // tolerance 1e-5 of the gradient: central differences with h = 1e-6·|x| carry a
            // truncation error ~h²·|f'''| and a rounding error ~1e-16·|L|/h, both far below it
            let scale = fd.abs().max(ad.abs()).max(1e-12 * loss(&params) / x.abs().max(1e-3));
            assert!(
                (ad - fd).abs() <= 1e-5 * scale,
                "{}[{i}]: autodiff {ad:e}, finite difference {fd:e}",
                g.name
            );
        }
    }
}
