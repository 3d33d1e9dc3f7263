//! The f32 CPU engine's gradients and derivative images take the native passes: the scene,
//! its graph and its Jacobian are evaluated on the host in f64 although the process's CPU
//! device renders in f32 (burn fixes the device's default float dtype once per process), so
//! `cpu-f32` gives the f64 reverse and derivative passes' numbers.
//!
//! The test runs in a process of its own (`common::own_process_with`). The reference, computed
//! first in this (f64) process, is the f64 tensor stages' burn-autodiff: independent of the
//! native passes, hand-written reverse and forward mode pixel by pixel against autodiff of whole
//! tensors op by op.

use super::common;
use super::native_vjp::{assert_close, STAGES as F64_STAGES, TOLERANCE};
use common::adjoint_cases::{grid_configurations, weights, BASE, CONFIGURATIONS};
use common::setup_as_given as setup;

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::{DType, Tensor, TensorData};
use nanobragg::engine::{Engine, Precision};
use nanobragg::render::RenderOptions;

/// The reference file's path, handed to the child process.
const REFERENCE: &str = "NANOBRAGG_F32_REFERENCE";

/// The derivative images compared.
const NAMES: [&str; 7] = [
    "distance",
    "Xbeam",
    "cell_a",
    "misset_y",
    "lambda",
    "Na",
    "detector_roty",
];

/// Per configuration: its flags, Σ w·I's gradients by the f64 tensor stages (name, values)
/// and the derivative images [`NAMES`] by the f64 tensor stages.
type Reference = Vec<(String, Vec<(String, Vec<f64>)>, Vec<Vec<f32>>)>;

const F32_NATIVE: Engine = Engine::Cpu {
    precision: Precision::F32,
    fusion: true,
};

/// Mosaic domains, φ steps, polarization, water; the curved detector; and a tricubic
/// structure-factor grid whose values are parameters.
fn configurations(dir: &std::path::Path) -> Vec<String> {
    let grids = grid_configurations(&common::small_hkl_grid(dir));
    vec![
        format!("{BASE} {}", CONFIGURATIONS[1].1),
        format!("{BASE} {}", CONFIGURATIONS[13].1),
        grids[1].1.clone(),
    ]
}

#[test]
fn cpu_f32_gradients_and_derivative_images_are_the_f64_native_passes() {
    let name = "cpu_f32_gradients_and_derivative_images_are_the_f64_native_passes";
    match std::env::var(REFERENCE) {
        Ok(path) => check_in_f32(&std::fs::read_to_string(path).unwrap()),
        Err(_) => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("reference.json");
            std::fs::write(&path, serde_json::to_string(&reference(dir.path())).unwrap()).unwrap();
            common::own_process_with(module_path!(), name, &[(REFERENCE, path.as_os_str())]);
        }
    }
}

/// The f64 tensor stages' gradients and derivative images of every configuration.
fn reference(dir: &std::path::Path) -> Reference {
    let opts = RenderOptions::default();
    configurations(dir)
        .into_iter()
        .map(|flags| {
            let (cfg, exp) = setup(&flags);
            let w = weights(exp.detector.pixels());
            let gradients = F64_STAGES.image_vjp(&cfg, &exp, Some(&w), &opts).unwrap().1;
            let gradients = gradients.into_iter().map(|g| (g.name.to_string(), g.values)).collect();
            let images = F64_STAGES.derivatives(&cfg, &exp, &NAMES, &opts).unwrap();
            (flags, gradients, images.into_iter().map(|d| d.data).collect())
        })
        .collect()
}

/// In the f32 process: the engine's gradients are the native pass's (the kernel module's
/// product answers, with the same numbers) and equal the f64 stages' to f64 rounding; its
/// derivative images are the native pass's and equal the f64 stages' to f32 rounding.
fn check_in_f32(reference: &str) {
    let reference: Reference = serde_json::from_str(reference).unwrap();
    let opts = RenderOptions::default();
    for (flags, want_gradients, want_images) in &reference {
        let (cfg, exp) = setup(flags);
        let w = weights(exp.detector.pixels());
        let got = F32_NATIVE.image_vjp(&cfg, &exp, Some(&w), &opts).unwrap().1;
        assert_renders_in_f32();
        let direct = nanobragg::kernel::vjp::image_vjp::<NdArray<f32>>(&cfg, &exp, Some(&w), &NdArrayDevice::Cpu)
            .unwrap()
            .unwrap_or_else(|| panic!("{flags}: no native reverse pass in an f32 process"));
        assert_eq!(got, direct.1, "{flags}: Engine::image_vjp did not take the native pass");
        assert_eq!(got.len(), want_gradients.len(), "{flags}");
        for (g, (name, want)) in got.iter().zip(want_gradients) {
            assert_eq!(g.name, name.as_str());
            assert_close(&format!("{flags}: ∂L/∂{name}"), &g.values, want, TOLERANCE);
        }

        let images = F32_NATIVE.derivatives(&cfg, &exp, &NAMES, &opts).unwrap();
        let direct =
            nanobragg::kernel::vjp::derivative_images::<NdArray<f32>>(&cfg, &exp, &NAMES, &opts, &NdArrayDevice::Cpu)
                .unwrap()
                .unwrap_or_else(|| panic!("{flags}: no native derivative pass in an f32 process"));
        for ((got, direct), want) in images.iter().zip(&direct.1).zip(want_images) {
            let label = format!("{flags}: d/d{}", got.spec.name);
            assert_eq!(
                got.data, direct.data,
                "{label}: Engine::derivatives did not take the native pass"
            );
            let (peak, worst) = common::peak_and_worst(&got.data, want);
            println!("{label}: {worst:.2e} of a peak of {peak:.2e}");
            assert!(peak > 0.0, "{label}: a blank derivative image");
            assert!(
                worst <= 4.0 * f64::from(f32::EPSILON) * peak,
                "{label}: {worst:.2e} against a peak of {peak:.2e}"
            );
        }
    }
}

/// The CPU device's default float dtype is f32 here (the engine fixed it), so a tensor made
/// without an explicit dtype, even on `NdArray<f64>`, is f32: the host paths must not rely on it.
fn assert_renders_in_f32() {
    let t = Tensor::<NdArray<f64>, 1>::from_data(TensorData::from([1.0f64]), &NdArrayDevice::Cpu);
    assert_eq!(t.dtype(), DType::F32, "this process's CPU device is not f32");
}
