//! `nanobragg::gradcheck`, the user-facing gradient check: it passes on the simulator's real
//! gradients (every component of a non-trivial configuration, a linear and a non-linear loss)
//! and fails, naming the components, on a gradient corrupted by hand.

use burn::backend::ndarray::NdArrayDevice;
use burn::backend::{Autodiff, NdArray};
use nanobragg::{gradcheck, GradcheckOptions, Simulator};

type Ad = Autodiff<NdArray<f64>>;

/// A triclinic, misset crystal with mosaic domains, φ steps and a tilted detector.
const SCENE: &str = "-default_F 100 -cell 70 80 90 85 95 100 -misset 10 20 30 -lambda 1.2 -N 5 \
    -distance 80 -pixel 0.3 -detpixels 20 -detector_rotx 2 -twotheta 3 -mosaic 0.4 -mosaic_dom 2 \
    -phi 5 -osc 2 -phisteps 2 -oversample 1";

fn simulator() -> Simulator<Ad> {
    let _ = super::common::f64_device();
    let args: Vec<&str> = SCENE.split_whitespace().collect();
    Simulator::<Ad>::from_args(&args, &NdArrayDevice::Cpu).unwrap()
}

#[test]
fn passes_on_every_component_of_the_real_gradient() {
    let report = gradcheck(&simulator(), None, &GradcheckOptions::default()).unwrap();
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    for name in [
        "distance",
        "Xbeam",
        "cell_a",
        "cell_gamma",
        "misset_z",
        "lambda",
        "Na",
        "mosaic",
        "phi",
        "twotheta",
    ] {
        assert!(names.contains(&name), "{name} checked: {names:?}");
    }
    // the checks are not vacuous: the image depends on the geometry
    let distance = report.checks.iter().find(|c| c.name == "distance").unwrap();
    assert!(
        distance.analytic.abs() > 0.0 && distance.relative_error < 1e-4,
        "{distance:?}"
    );
}

#[test]
fn passes_for_a_nonlinear_loss_with_its_own_gradient() {
    // L = ½ Σ (I − k)², k a fixed "observation": ∂L/∂I = I − k
    let sim = simulator();
    let observed: Vec<f64> = (0..400).map(|i| 0.5 * (i % 7) as f64).collect();
    let mut loss = |image: &[f64]| {
        let r: Vec<f64> = image.iter().zip(&observed).map(|(i, k)| i - k).collect();
        Ok((0.5 * r.iter().map(|x| x * x).sum::<f64>(), r))
    };
    let options = GradcheckOptions::components(&["distance", "Ybeam", "cell_b", "misset_x", "Nc"]);
    let report = gradcheck(&sim, Some(&mut loss), &options).unwrap();
    assert!(report.passed(), "{report}");
}

#[test]
fn fails_on_a_gradient_corrupted_by_hand() {
    // the loss says ∂L/∂I is 1.02·w on every other pixel while its value is Σ w·I: the
    // analytic gradient is then wrong by ~1 %, which the central differences must catch
    let sim = simulator();
    let w = nanobragg::refine::gradcheck::gradcheck_weights(400);
    let mut corrupted = |image: &[f64]| {
        let value = image.iter().zip(&w).map(|(i, w)| i * w).sum();
        let grad = w
            .iter()
            .enumerate()
            .map(|(p, w)| if p % 2 == 0 { 1.02 * w } else { *w })
            .collect();
        Ok((value, grad))
    };
    let options = GradcheckOptions::components(&["distance", "cell_a", "misset_y"]);
    let report = gradcheck(&sim, Some(&mut corrupted), &options).unwrap();
    eprintln!("{report}");
    assert!(!report.passed(), "{report}");
    let failed: Vec<&str> = report.failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["distance", "cell_a", "misset_y"], "{report}");
    assert!(report.to_string().contains("FAILED"));
}

#[test]
fn unknown_components_and_wrong_gradient_lengths_are_errors() {
    let sim = simulator();
    let e = gradcheck(&sim, None, &GradcheckOptions::components(&["distanse"])).unwrap_err();
    assert!(e.to_string().contains("distanse"), "{e}");
    let mut short = |_: &[f64]| Ok((0.0, vec![1.0; 3]));
    let e = gradcheck(&sim, Some(&mut short), &GradcheckOptions::components(&["distance"])).unwrap_err();
    assert!(e.to_string().contains("3 values for 400 pixels"), "{e}");
}

#[test]
fn a_logarithm_of_zero_is_left_out_or_refused() {
    // no water: its component (refined as ln µm) cannot be stepped from 0
    let sim = simulator();
    let report = gradcheck(&sim, None, &GradcheckOptions::components(&["distance"])).unwrap();
    assert_eq!(report.checks.len(), 1);
    let e = gradcheck(&sim, None, &GradcheckOptions::components(&["water"])).unwrap_err();
    assert!(
        e.to_string().contains("water") && e.to_string().contains("must be > 0"),
        "{e}"
    );
}
