//! Gradients (f64, CPU): the differentiable scene reproduces the host render (the gradient
//! checks themselves are in `gradcheck.rs`).

use super::common;
use common::setup;

use common::f64_device as dev;

use burn::backend::ndarray::NdArray;
use nanobragg::config::SimConfig;
use nanobragg::engine::render::render;
use nanobragg::experiment::Experiment;
use nanobragg::render::{render_scene, RenderOptions};
use nanobragg::scene::params::Params;
use nanobragg::scene::Scene;

type B = NdArray<f64>;

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

/// C switches tricubic interpolation off for good at the first out-of-range point, in its loop
/// order. A grid of h, k, l ∈ −3..3 is too small for this detector, so the run falls back. The
/// reference is the whole ROI evaluated as one span (C's order by construction); the render on
/// two threads in many spans, the vector–Jacobian product and the derivative images must all
/// give its values.
#[test]
fn interpolation_falls_back_alike_in_render_vjp_and_derivatives() {
    use burn::backend::Autodiff;
    use nanobragg::experiment::Span;
    use nanobragg::gradients::derivative::derivative_images;
    use nanobragg::gradients::image_vjp;
    use nanobragg::render::chunk_intensity;
    type Ad = Autodiff<B>;

    let dir = tempfile::tempdir().unwrap();
    let hkl = common::small_hkl_grid(dir.path());
    let args = format!(
        "-hkl {} -cell 60 60 60 90 90 90 -lambda 1.5 -N 2 -distance 120 -pixel 0.4 -detpixels 40 \
         -interpolate -oversample 1",
        hkl.display()
    );
    let (cfg, exp) = common::experiment(&args.split_whitespace().collect::<Vec<_>>(), Some(&hkl));
    assert!(exp.structure_factors.interpolate);

    let scene = Scene::new(&exp);
    let whole = Span {
        start: 0,
        len: exp.active_pixels().rect().len(),
    };
    let st = nanobragg::scene::SceneTensors::<B>::new(&scene, &exp, &dev());
    let reference = chunk_intensity(&exp, &scene, &st, whole, true, scene.orientations, &dev());
    assert!(reference.out_of_range, "the grid must be too small for this test");
    let reference: Vec<f64> = reference.intensity.into_data().convert::<f64>().to_vec().unwrap();
    let max = reference.iter().cloned().fold(0.0, f64::max);
    let same = |what: &str, image: &nanobragg::Image| {
        assert!(image.interpolation_fell_back, "{what}: no fallback reported");
        for (i, (&a, &b)) in image.data.iter().zip(&reference).enumerate() {
            assert!((a as f64 - b).abs() <= 1e-6 * max, "{what}: pixel {i}: {a} vs {b}");
        }
    };
    let many = RenderOptions {
        threads: 2,
        max_chunk_elements: Some(16),
        ..Default::default()
    };
    same("render", &render::<B>(&exp, &many, &dev()).unwrap());
    let params = Params::<Ad>::new(&cfg, &exp, &dev());
    same("vjp", &image_vjp(&cfg, &exp, &params, None, &many, &dev()).unwrap().0);
    same(
        "derivatives",
        &derivative_images::<Ad>(&cfg, &exp, &["distance"], &many, &dev())
            .unwrap()
            .0,
    );
}

/// The vector–Jacobian product's sums (gradients, Σω) run in span order, whichever of the two
/// workers finishes a span first: repeated runs over many small spans give the same bits.
#[test]
fn vjp_sums_are_the_same_every_run() {
    use nanobragg::gradients::image_vjp;
    type Ad = burn::backend::Autodiff<B>;
    let (cfg, exp) = setup(CONFIG);
    let params = Params::<Ad>::new(&cfg, &exp, &dev());
    let many = RenderOptions {
        threads: 2,
        max_chunk_elements: Some(64),
        ..Default::default()
    };
    let run = || {
        let (image, grads) = image_vjp(&cfg, &exp, &params, None, &many, &dev()).unwrap();
        let bits: Vec<u64> = grads
            .iter()
            .flat_map(|g| g.values.iter().map(|v| v.to_bits()))
            .collect();
        (image.omega_sum.to_bits(), bits)
    };
    let first = run();
    assert!(first.1.iter().any(|&b| f64::from_bits(b) != 0.0), "no gradient at all");
    for _ in 0..4 {
        assert_eq!(run(), first, "a repeated run summed differently");
    }
}
