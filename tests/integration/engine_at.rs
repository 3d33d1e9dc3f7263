//! The engine's non-generic methods at a point of parameter space (`nanobragg::refine::at`, what
//! the Python package calls): a point moved through the flags' units renders the image of the
//! flags that say the same, and the loss's gradient equals central differences of the loss.

use crate::common::{f64_device, setup};
use nanobragg::engine::Engine;
use nanobragg::gradients::At;
use nanobragg::refine::{Loss, LossRequest};
use nanobragg::RenderOptions;

const SCENE: &str = "-default_F 100 -cell 70 80 90 85 95 100 -misset 10 20 30 -lambda 1.2 -N 5 \
    -distance 80 -pixel 0.3 -detpixels 20 -twotheta 3 -oversample 1";

/// 81 mm and an X beam centre 0.4 mm off the default (3 mm, half the detector).
const MOVED: [f64; 2] = [81.0, 3.4];

#[test]
fn a_point_moved_in_the_flags_units_renders_as_those_flags() {
    let _ = f64_device();
    let engine = Engine::default();
    let (cfg, exp) = setup(SCENE);
    let opts = RenderOptions::default();
    let labels = ["distance", "Xbeam"];
    let values = engine
        .write_vector_at(&At::own(&cfg, &exp, &opts), &labels, &MOVED)
        .unwrap();
    let distance = values.iter().find(|(n, _)| *n == "distance").unwrap();
    assert!((distance.1[0] - 0.081).abs() < 1e-15, "{distance:?}");
    let values: Vec<(String, Vec<f64>)> = values.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    let moved = At {
        values: &values,
        ..At::own(&cfg, &exp, &opts)
    };
    let x = engine.read_vector_at(&moved, &labels).unwrap();
    assert!(x.iter().zip(MOVED).all(|(a, b)| (a - b).abs() < 1e-9), "{x:?}");

    let image = engine.render_at(&moved).unwrap();
    let (cfg2, exp2) = setup(&format!("{SCENE} -distance 81 -Xbeam 3.4"));
    let flags = engine.render(&exp2, &opts).unwrap();
    assert_eq!(cfg2.detector.spixels, cfg.detector.spixels);
    let peak = flags.data.iter().fold(0f32, |m, &v| m.max(v));
    assert!(peak > 0.0);
    for (p, (a, b)) in image.data.iter().zip(&flags.data).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 * peak,
            "pixel {p}: {a} at the point, {b} from the flags"
        );
    }
    // the same image in f64, from the simulator's forward pass
    let values_f64 = engine.image_values_at(&moved).unwrap();
    for (p, (a, b)) in values_f64.iter().zip(&flags.data).enumerate() {
        assert!(
            (a - *b as f64).abs() <= 1e-5 * peak as f64,
            "pixel {p}: {a} against {b}"
        );
    }
}

#[test]
fn the_loss_gradient_at_a_point_equals_central_differences() {
    let _ = f64_device();
    let engine = Engine::default();
    let (cfg, exp) = setup(SCENE);
    let opts = RenderOptions::default();
    let own = At::own(&cfg, &exp, &opts);
    // the observation: the image at the moved point, so the loss is not at its minimum at own
    let labels = ["distance", "Xbeam"];
    let values: Vec<(String, Vec<f64>)> = engine
        .write_vector_at(&own, &labels, &MOVED)
        .unwrap()
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let observed = engine.render_at(&At { values: &values, ..own }).unwrap().data;
    let loss_at = |x: Option<&[f64]>| {
        let request = LossRequest {
            labels: &labels,
            x,
            observed: &observed,
            mask: None,
            loss: Loss::LeastSquares { poisson_weights: false },
            background: None,
        };
        engine.loss_and_gradient_at(&own, &request).unwrap()
    };
    let x0 = engine.read_vector_at(&own, &labels).unwrap();
    assert!((x0[0] - 80.0).abs() < 1e-9, "{x0:?}");
    let (f, g) = loss_at(None);
    assert!(f > 0.0 && g.len() == 2);
    let h = [1e-4, 1e-4];
    for i in 0..2 {
        let step = |s: f64| {
            let mut x = x0.clone();
            x[i] += s * h[i];
            loss_at(Some(&x)).0
        };
        let central = (step(1.0) - step(-1.0)) / (2.0 * h[i]);
        assert!(
            (g[i] - central).abs() <= 1e-5 * central.abs().max(1e-12 * f),
            "{}: analytic {} against central {central}",
            labels[i],
            g[i]
        );
        assert!(central.abs() > 0.0, "{}: the loss depends on it", labels[i]);
    }
}
