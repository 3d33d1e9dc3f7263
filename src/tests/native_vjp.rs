//! The CPU engine's gradients by the native loop's reverse pass (`kernel::native::vjp`)
//! against the tensor stages' burn-autodiff, both in f64: `Engine::image_vjp` and
//! `Engine::derivatives` on the CPU engine (native by default, the tensor stages with `-fusion
//! off`), and a `Simulator`'s backward pass, across what the adjoint covers (the
//! configurations the cube kernel's adjoint is held to, structure-factor grids included). The
//! two are independent: hand-written reverse mode pixel by pixel against autodiff of whole
//! tensors op by op. Their agreement with central differences is `gradcheck`'s (the default
//! engine). Also: repeated products and other thread counts give the same bits.

use super::common;
use common::adjoint_cases::{covered_configuration, grid_configurations, weights, BASE, CONFIGURATIONS};
use common::setup_as_given as setup;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Tensor, TensorData};
use nanobragg::engine::{Engine, Precision};
use nanobragg::gradients::ParamGradient;
use nanobragg::render::RenderOptions;
use nanobragg::Simulator;
use proptest::prelude::*;

const NATIVE: Engine = Engine::Cpu {
    precision: Precision::F64,
    fusion: true,
};
pub(super) const STAGES: Engine = Engine::Cpu {
    precision: Precision::F64,
    fusion: false,
};

/// ‖Δ‖/‖ref‖ the native gradients may differ from the tensor stages' by: f64 rounding in
/// another order of operations, amplified where a gradient is a sum of terms that cancel
/// (most agree within 1e-10; λ's under the `-oversample_*` products within 3e-9).
pub(super) const TOLERANCE: f64 = 1e-8;

/// ‖got − want‖ ≤ `tol`·‖want‖ (both 0 where the reference is).
pub(super) fn assert_close(label: &str, got: &[f64], want: &[f64], tol: f64) {
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    let (nd, nw) = (
        norm(&mut got.iter().zip(want).map(|(a, b)| a - b)),
        norm(&mut want.iter().copied()),
    );
    assert_eq!(got.len(), want.len(), "{label}");
    assert!(
        nd <= tol * nw,
        "{label}: ‖Δ‖/‖ref‖ = {:.2e}: {got:?} against {want:?}",
        nd / nw
    );
}

/// Σ w·I's gradients of `flags` by the native reverse pass (checked to be it:
/// `kernel::vjp::image_vjp` on burn-ndarray answers) and by the tensor stages.
fn native_and_stages(flags: &str, opts: &RenderOptions) -> (Vec<ParamGradient>, Vec<ParamGradient>) {
    let (cfg, exp) = setup(flags);
    let w = weights(exp.detector.pixels());
    let native = NATIVE.image_vjp(&cfg, &exp, Some(&w), opts).unwrap().1;
    let direct = nanobragg::kernel::vjp::image_vjp::<NdArray<f64>>(&cfg, &exp, Some(&w), &Default::default())
        .unwrap()
        .unwrap_or_else(|| panic!("{flags}: the native reverse pass does not cover this configuration"));
    assert_eq!(
        native, direct.1,
        "{flags}: Engine::image_vjp did not take the native pass"
    );
    let stages = STAGES.image_vjp(&cfg, &exp, Some(&w), opts).unwrap().1;
    (native, stages)
}

/// Every parameter's gradient by the native pass equals the tensor stages' to
/// [`TOLERANCE`], and at least 10 parameters (8 for TOPHAT spots) have one; the worst
/// relative difference is printed.
fn assert_native_gradients_agree(name: &str, flags: &str) {
    let (native, stages) = native_and_stages(flags, &RenderOptions::default());
    assert_eq!(native.len(), stages.len(), "{name}");
    let mut reached = 0;
    for (n, s) in native.iter().zip(&stages) {
        assert_eq!(n.name, s.name);
        reached += s.values.iter().any(|&g| g != 0.0) as usize;
        assert_close(&format!("{name}: ∂L/∂{}", n.name), &n.values, &s.values, TOLERANCE);
    }
    let least = if name.starts_with("tophat") { 8 } else { 10 };
    assert!(reached >= least, "{name}: only {reached} parameters have a gradient");
}

#[test]
fn native_gradients_equal_the_tensor_stages_in_f64() {
    for (name, extra) in CONFIGURATIONS {
        assert_native_gradients_agree(name, &format!("{BASE} {extra}"));
    }
}

/// With a structure-factor grid whose values are parameters (nearest neighbour and tricubic,
/// C's fall-back included): the grid's gradient too.
#[test]
fn native_gradients_with_structure_factor_grids_equal_the_tensor_stages_in_f64() {
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in grid_configurations(&common::small_hkl_grid(dir.path())) {
        assert_native_gradients_agree(name, &flags);
    }
}

proptest! {
    // a fixed seed: the same cases every run (a property test here must not flake)
    #![proptest_config(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6e62_0053),
        ..ProptestConfig::default()
    })]

    /// On random configurations inside the adjoint's coverage (shape, convention, cell,
    /// misset, N, λ, distance, detector rotations and 2θ, polarization, mosaic domains, φ
    /// steps, oversampling, sensor layers, water, the curved detector), every parameter's
    /// gradient by the native pass equals the tensor stages' to [`TOLERANCE`].
    #[test]
    fn native_gradients_hold_on_random_configurations(flags in covered_configuration()) {
        let (native, stages) = native_and_stages(&flags, &RenderOptions::default());
        // XDS's and DIALS's 2θ moves no pixel (their frames are given): its gradient is a sum
        // of terms that cancel exactly, rounding noise in both
        let frame_given = flags.contains("-xds") || flags.contains("-dials");
        for (n, s) in native.iter().zip(&stages) {
            if !(frame_given && n.name == "twotheta") {
                assert_close(&format!("{flags}: ∂L/∂{}", n.name), &n.values, &s.values, TOLERANCE);
            }
        }
    }
}

/// The chunks' sums are added in a fixed order set by the sizes, not the threads: 20 products,
/// and products on 1, 2 and 3 threads, give the same bits.
#[test]
fn native_gradients_repeat_bit_for_bit_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let grids = grid_configurations(&common::small_hkl_grid(dir.path()));
    for flags in [format!("{BASE} {}", CONFIGURATIONS[1].1), grids[2].1.clone()] {
        let on = |threads: usize| {
            let opts = RenderOptions {
                threads,
                ..RenderOptions::default()
            };
            let (cfg, exp) = setup(&flags);
            NATIVE
                .image_vjp(&cfg, &exp, Some(&weights(exp.detector.pixels())), &opts)
                .unwrap()
                .1
        };
        let first = on(2);
        for round in 1..20 {
            assert_eq!(on(2), first, "{flags}: round {round}");
        }
        assert_eq!(on(1), first, "{flags}: 1 thread");
        assert_eq!(on(3), first, "{flags}: 3 threads");
    }
}

/// Derivative images by the native pass against the tensor stages': each within f32 rounding
/// of its image's largest value (the images are f32, as `-derivative` writes them).
#[test]
fn native_derivative_images_equal_the_tensor_stages_in_f64() {
    let names = [
        "distance",
        "Xbeam",
        "cell_a",
        "cell_gamma",
        "misset_y",
        "phi",
        "lambda",
        "Na",
        "fluence",
        "default_F",
        "detector_roty",
    ];
    let dir = tempfile::tempdir().unwrap();
    let grids = grid_configurations(&common::small_hkl_grid(dir.path()));
    for flags in [
        format!("{BASE} {}", CONFIGURATIONS[1].1),
        format!("{BASE} {}", CONFIGURATIONS[11].1),
        format!("{BASE} {}", CONFIGURATIONS[13].1),
        grids[1].1.clone(),
    ] {
        let (cfg, exp) = setup(&flags);
        let opts = RenderOptions::default();
        let native = NATIVE.derivatives(&cfg, &exp, &names, &opts).unwrap();
        let stages = STAGES.derivatives(&cfg, &exp, &names, &opts).unwrap();
        for (n, s) in native.iter().zip(&stages) {
            let (peak, worst) = common::peak_and_worst(&n.data, &s.data);
            assert!(
                worst <= 4.0 * f64::from(f32::EPSILON) * peak,
                "{flags}: d/d{}: {worst:.2e} against a peak of {peak:.2e}",
                n.spec.name
            );
        }
    }
}

type Cpu = Autodiff<NdArray<f64>>;

/// Σ w·I on the CPU simulator's graph, w as [`weights`].
fn weighted_sum(image: Tensor<Cpu, 2>) -> Tensor<Cpu, 1> {
    let [s, f] = image.dims();
    let w: Vec<f64> = weights(s * f).into_iter().map(f64::from).collect();
    (image * Tensor::<Cpu, 2>::from_data(TensorData::new(w, [s, f]), &Default::default())).sum()
}

/// A `Simulator`'s gradients on burn-ndarray: its backward pass by the native reverse pass (the
/// default) equals the tensor stages' product (`adjoint_kernel` off), a render by the
/// tensor stages on the caller's graph (`pixel_kernel` off) and the native pass on a job made
/// again from the scene graph (a memory budget too small to keep the forward pass's job).
#[test]
fn simulator_backward_by_the_native_pass_equals_the_tensor_stages() {
    let dir = tempfile::tempdir().unwrap();
    let grids = grid_configurations(&common::small_hkl_grid(dir.path()));
    for flags in [format!("{BASE} {}", CONFIGURATIONS[1].1), grids[2].1.clone()] {
        let args: Vec<&str> = flags.split_whitespace().collect();
        let sim = Simulator::<Cpu>::from_args(&args, &Default::default()).unwrap();
        let gradients = |options: RenderOptions| {
            let sim = sim.clone().with_options(options);
            let grads = weighted_sum(sim.forward()).backward();
            sim.params.gradients(&grads).unwrap()
        };
        let base = sim.setup().options.clone();
        let native = gradients(base.clone());
        let stages_backward = gradients(RenderOptions {
            adjoint_kernel: false,
            ..base.clone()
        });
        let stages = gradients(RenderOptions {
            pixel_kernel: false,
            ..base.clone()
        });
        let job_again = gradients(RenderOptions {
            memory_budget: 1,
            ..base
        });
        assert_eq!(native.len(), stages.len());
        assert_eq!(native.len(), job_again.len());
        for ((n, a), ((_, b), (_, c))) in native.iter().zip(stages_backward.iter().zip(&stages)) {
            assert_close(&format!("{flags}: ∂L/∂{n} (stages' backward)"), a, b, TOLERANCE);
            assert_close(&format!("{flags}: ∂L/∂{n} (stages)"), a, c, TOLERANCE);
        }
        for ((n, a), (_, d)) in native.iter().zip(&job_again) {
            assert_close(&format!("{flags}: ∂L/∂{n} (job made again)"), a, d, TOLERANCE);
        }
    }
}

/// The native reverse pass against central differences of the native loop's f64 image
/// (`nanobragg::gradcheck` on a `Simulator`, whose backward pass it is), every component, on
/// the configurations with the most reverse-mode bookkeeping: the `-oversample_*` products
/// over sources and mosaic domains, the curved detector with absorption layers, and tricubic
/// structure factors with mosaic domains and φ steps.
#[test]
fn native_gradients_equal_central_differences() {
    let dir = tempfile::tempdir().unwrap();
    let grids = grid_configurations(&common::small_hkl_grid(dir.path()));
    let _ = common::f64_device();
    for flags in [
        format!("{BASE} {}", CONFIGURATIONS[15].1),
        format!("{BASE} {}", CONFIGURATIONS[13].1),
        grids[2].1.clone(),
    ] {
        let args: Vec<&str> = flags.split_whitespace().collect();
        let sim = Simulator::<Cpu>::from_args(&args, &Default::default()).unwrap();
        let report = nanobragg::gradcheck(&sim, None, &nanobragg::GradcheckOptions::default()).unwrap();
        assert!(report.passed(), "{flags}:\n{report}");
        assert!(report.checks.len() >= 10, "{flags}: {} components", report.checks.len());
    }
}
