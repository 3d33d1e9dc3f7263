//! Derivative images (f64, CPU) against central finite differences of the float images the
//! command line renders, the flags moved in their own units: cosine ≥ 0.999 and norms within
//! 2 %, for every derivative name, on configurations with everything switched on.

use super::common;

use common::f64_device as dev;

use burn::backend::ndarray::NdArray;
use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use nanobragg::config::SimConfig;
use nanobragg::engine::render::render;
use nanobragg::experiment::Experiment;
use nanobragg::gradients::derivative::derivative_images;
use nanobragg::render::{render_scene, RenderOptions};
use nanobragg::scene::params::Params;
use nanobragg::scene::Scene;

type B = NdArray<f64>;
type Ad = Autodiff<B>;

/// A configuration as flag → values, so a derivative's flag can be moved.
type Flags = Vec<(&'static str, Vec<f64>)>;

fn base() -> Flags {
    vec![
        ("-cell", vec![70.0, 80.0, 90.0, 80.0, 85.0, 95.0]),
        ("-misset", vec![10.0, 20.0, 30.0]),
        ("-lambda", vec![1.5]),
        ("-dispersion", vec![2.0]),
        ("-dispsteps", vec![3.0]),
        ("-Na", vec![4.0]),
        ("-Nb", vec![3.0]),
        ("-Nc", vec![5.0]),
        ("-default_F", vec![100.0]),
        ("-distance", vec![80.0]),
        ("-Xbeam", vec![4.9]),
        ("-Ybeam", vec![5.3]),
        ("-pixel", vec![0.4]),
        ("-detpixels", vec![24.0]),
        ("-detector_rotx", vec![2.0]),
        ("-detector_roty", vec![1.0]),
        ("-detector_rotz", vec![-1.5]),
        ("-twotheta", vec![3.0]),
        ("-mosaic", vec![0.5]),
        ("-mosaic_dom", vec![3.0]),
        ("-phi", vec![5.0]),
        ("-osc", vec![2.0]),
        ("-phisteps", vec![2.0]),
        ("-polar", vec![0.8]),
        ("-fluence", vec![1e24]),
        ("-water", vec![0.5]),
        ("-detector_thick", vec![100.0]),
        ("-detector_abs", vec![300.0]),
        ("-thicksteps", vec![2.0]),
        ("-oversample", vec![2.0]),
    ]
}

/// Which flag value each derivative moves, and a step in the flag's unit.
fn flag_of(name: &str) -> (&'static str, usize, f64) {
    match name {
        "distance" => ("-distance", 0, 1e-3),
        "close_distance" => ("-close_distance", 0, 1e-3),
        "Xbeam" => ("-Xbeam", 0, 1e-4),
        "Ybeam" => ("-Ybeam", 0, 1e-4),
        "cell_a" => ("-cell", 0, 1e-4),
        "cell_b" => ("-cell", 1, 1e-4),
        "cell_c" => ("-cell", 2, 1e-4),
        "cell_alpha" => ("-cell", 3, 1e-4),
        "cell_beta" => ("-cell", 4, 1e-4),
        "cell_gamma" => ("-cell", 5, 1e-4),
        "misset_x" => ("-misset", 0, 1e-4),
        "misset_y" => ("-misset", 1, 1e-4),
        "misset_z" => ("-misset", 2, 1e-4),
        "phi" => ("-phi", 0, 1e-4),
        "phistep" => ("-phistep", 0, 1e-4),
        "lambda" => ("-lambda", 0, 1e-6),
        "dispersion" => ("-dispersion", 0, 1e-3),
        "Na" => ("-Na", 0, 1e-4),
        "Nb" => ("-Nb", 0, 1e-4),
        "Nc" => ("-Nc", 0, 1e-4),
        "mosaic" => ("-mosaic", 0, 1e-4),
        "detector_rotx" => ("-detector_rotx", 0, 1e-4),
        "detector_roty" => ("-detector_roty", 0, 1e-4),
        "detector_rotz" => ("-detector_rotz", 0, 1e-4),
        "twotheta" => ("-twotheta", 0, 1e-4),
        "polar" => ("-polar", 0, 1e-3),
        "fluence" => ("-fluence", 0, 1e20),
        "default_F" => ("-default_F", 0, 1e-2),
        "water" => ("-water", 0, 1e-3),
        other => panic!("{other}"),
    }
}

fn configure(flags: &Flags, extra: &[&str]) -> (SimConfig, Experiment) {
    let mut args: Vec<String> = vec![];
    for (flag, values) in flags {
        args.push(flag.to_string());
        args.extend(values.iter().map(|v| format!("{v:e}")));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    common::experiment(&args, None)
}

/// The float image with `name`'s flag moved by `delta` (flag units).
fn image_with(flags: &Flags, extra: &[&str], name: &str, delta: f64) -> Vec<f64> {
    let (flag, i, _) = flag_of(name);
    let mut flags = flags.clone();
    match flags.iter_mut().find(|(f, _)| *f == flag) {
        Some((_, v)) => v[i] += delta,
        None => panic!("{flag} is not in the configuration"),
    }
    let (_, exp) = configure(&flags, extra);
    let img = render::<B>(&exp, &RenderOptions::default(), &dev()).unwrap();
    img.data.iter().map(|&v| v as f64).collect()
}

/// The image with parameter component `param[i]` moved by `delta` (parameter units), for the
/// N, which the command line reads as integers (C's `atoi`): no finite difference of the
/// flag exists, so the difference is taken in the differentiable scene's render.
fn image_with_param(cfg: &SimConfig, exp: &Experiment, param: &str, i: usize, delta: f64) -> Vec<f64> {
    let params = Params::<B>::new(cfg, exp, &dev());
    let mut v = params
        .get(param)
        .unwrap()
        .into_data()
        .convert::<f64>()
        .to_vec::<f64>()
        .unwrap();
    v[i] += delta;
    let n = v.len();
    let params = params
        .replace(param, Tensor::from_data(TensorData::new(v, [n]), &dev()))
        .unwrap();
    let scene = Scene::new(exp);
    let img = render_scene(exp, &scene, &RenderOptions::default(), &dev(), &|| {
        params.scene(cfg, exp, &dev())
    })
    .unwrap();
    img.data.iter().map(|&v| v as f64).collect()
}

fn check(flags: &Flags, extra: &[&str], names: &[&str]) {
    let (cfg, exp) = configure(flags, extra);
    let (image, derivs) = derivative_images::<Ad>(&cfg, &exp, names, &RenderOptions::default(), &dev()).unwrap();
    // the probed render is the image itself
    let host = render::<B>(&exp, &RenderOptions::default(), &dev()).unwrap();
    let max = host.data.iter().cloned().fold(0.0f32, f32::max);
    assert!(max > 0.0);
    for (a, b) in image.data.iter().zip(&host.data) {
        assert!((a - b).abs() <= 1e-6 * max, "image {a} vs {b}");
    }
    for d in &derivs {
        let (_, _, h) = flag_of(d.spec.name);
        // N is read as integers, and -osc sets the φ step only with -phisteps: these two
        // move the parameter itself (by h flag units)
        let (up, down) = if d.spec.param == "n_cells" || d.spec.name == "phistep" {
            let (c, step) = (d.spec.index, h * d.spec.per_unit);
            (
                image_with_param(&cfg, &exp, d.spec.param, c, step),
                image_with_param(&cfg, &exp, d.spec.param, c, -step),
            )
        } else {
            (
                image_with(flags, extra, d.spec.name, h),
                image_with(flags, extra, d.spec.name, -h),
            )
        };
        let fd: Vec<f64> = up.iter().zip(&down).map(|(u, l)| (u - l) / (2.0 * h)).collect();
        let ad: Vec<f64> = d.data.iter().map(|&v| v as f64).collect();
        let dot: f64 = fd.iter().zip(&ad).map(|(a, b)| a * b).sum();
        let (nf, na) = (
            fd.iter().map(|v| v * v).sum::<f64>().sqrt(),
            ad.iter().map(|v| v * v).sum::<f64>().sqrt(),
        );
        assert!(nf > 0.0, "{}: the flag does not change the image", d.spec.name);
        let cosine = dot / (nf * na);
        assert!(
            cosine >= 0.999 && (na / nf - 1.0).abs() <= 0.02,
            "{} {extra:?}: cosine {cosine}, norm ratio {}",
            d.spec.name,
            na / nf
        );
    }
}

const ALL: [&str; 28] = [
    "distance",
    "Xbeam",
    "Ybeam",
    "cell_a",
    "cell_b",
    "cell_c",
    "cell_alpha",
    "cell_beta",
    "cell_gamma",
    "misset_x",
    "misset_y",
    "misset_z",
    "phi",
    "phistep",
    "lambda",
    "dispersion",
    "Na",
    "Nb",
    "Nc",
    "mosaic",
    "detector_rotx",
    "detector_roty",
    "detector_rotz",
    "twotheta",
    "polar",
    "fluence",
    "default_F",
    "water",
];

#[test]
fn every_derivative_matches_finite_differences_of_the_float_image() {
    check(&base(), &[], &ALL);
}

#[test]
fn round_crystal_sample_pivot_and_close_distance() {
    let mut flags = base();
    flags.push(("-close_distance", vec![78.0]));
    check(
        &flags,
        &["-round_xtal", "-pivot", "sample", "-mosflm"],
        &[
            "close_distance",
            "Xbeam",
            "cell_b",
            "misset_z",
            "Nc",
            "twotheta",
            "mosaic",
        ],
    );
}

#[test]
fn unknown_or_absent_parameters_are_errors() {
    let (cfg, exp) = configure(&base(), &[]);
    let opts = RenderOptions::default();
    let err = derivative_images::<Ad>(&cfg, &exp, &["cell_d"], &opts, &dev()).unwrap_err();
    assert!(err.to_string().contains("-derivative") && err.to_string().contains("cell_d"));
    // no -close_distance given: it is not a parameter of this configuration
    let err = derivative_images::<Ad>(&cfg, &exp, &["close_distance"], &opts, &dev()).unwrap_err();
    assert!(err.to_string().contains("close_distance"), "{err}");
}
