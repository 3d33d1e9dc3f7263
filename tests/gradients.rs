//! Gradients (f64, CPU): the differentiable scene reproduces the host render (the gradient
//! checks themselves are in `gradcheck.rs`).

mod common;

use common::f64_device as dev;

use burn::backend::ndarray::NdArray;
use nanobragg::cli::{parse_args, Parsed};
use nanobragg::config::{HklSource, SimConfig};
use nanobragg::params::Params;
use nanobragg::scene::Scene;
use nanobragg::setup::Experiment;
use nanobragg::simulate::{render, render_scene, RenderOptions};

type B = NdArray<f64>;

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
        " -detector_thick 100 -detector_abs 300 -thicksteps 2 -water 0.5 -dispersion 0.02 -dispsteps 3",
        " -round_xtal -nopolar",
        " -gauss_xtal -polar 0",
        " -tophat_spots",
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
