//! The vector–Jacobian kernel (`src/kernel/adjoint/`) against the tensor stages in f64:
//! `Engine::image_vjp` on the fused wgpu engine runs it wherever it covers the configuration
//! (`kernel::vjp::kernel_covers`), and its gradients of Σ w·I must equal the CPU f64 engine's
//! for every parameter (‖Δ‖/‖ref‖ ≤ 1e-2, cosine ≥ 0.9999: `common::assert_gradients_agree`).
//! The configurations span what the kernel covers: the four spot shapes, the detector
//! conventions and pivots, mosaic domains and φ steps, sources (divergence, dispersion),
//! polarization, `-dmin`, absorption layers, point pixels, ROI, water, oversampling and the
//! `-oversample_*` products (within one batch of orientation rows and over several).
//! A property test holds the same on random configurations inside the coverage; repeated
//! products return the same bits.
//!
//! On llvmpipe without a GPU (CI); skips with a message when no wgpu adapter exists, unless
//! `NANOBRAGG_REQUIRE_WGPU=1`.
#![cfg(feature = "gpu")]

use super::common;
use common::setup_as_given as setup;

use burn::backend::wgpu::WgpuDevice;
use nanobragg::config::HklSource;
use nanobragg::engine::{Engine, Precision, WgpuFused};
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::gradients::ParamGradient;
use nanobragg::render::RenderOptions;
use proptest::prelude::*;

const FUSED: Engine = Engine::Wgpu { fusion: true };
/// The tensor stages on the CPU in f64, the reference the kernels are held against.
const CPU: Engine = Engine::Cpu {
    precision: Precision::F64,
    fusion: false,
};

use common::adjoint_cases::{covered_configuration, grid_configurations, weights, BASE, CONFIGURATIONS};

/// Σ w·I's gradients by the kernel (checked to be the kernel's: `kernel::vjp::image_vjp`
/// answers for the configuration) and by the CPU f64 engine.
fn kernel_and_reference(flags: &str) -> (Vec<ParamGradient>, Vec<ParamGradient>) {
    let (cfg, exp) = setup(flags);
    let w = weights(exp.detector.pixels());
    let by_kernel = nanobragg::kernel::vjp::image_vjp::<WgpuFused>(&cfg, &exp, Some(&w), &WgpuDevice::default())
        .unwrap()
        .unwrap_or_else(|| panic!("{flags}: the kernel does not cover this configuration"));
    let by_engine = FUSED
        .image_vjp(&cfg, &exp, Some(&w), &RenderOptions::default())
        .unwrap();
    assert_eq!(
        by_engine.1, by_kernel.1,
        "{flags}: Engine::image_vjp did not take the kernel"
    );
    let (_, reference) = CPU.image_vjp(&cfg, &exp, Some(&w), &RenderOptions::default()).unwrap();
    (by_kernel.1, reference)
}

#[test]
fn kernel_gradients_equal_the_tensor_stages_in_f64() {
    if !common::engine_available(FUSED) {
        return;
    }
    for (name, extra) in CONFIGURATIONS {
        let flags = format!("{BASE} {extra}");
        assert_kernel_gradients_agree(name, &flags);
    }
}

/// With a structure-factor grid whose values are parameters (nearest neighbour and tricubic,
/// C's fall-back included), every parameter's gradient by the kernels (the grid's by the
/// scatter kernel) equals the CPU f64 engine's.
#[test]
fn kernel_gradients_with_structure_factor_grids_equal_the_tensor_stages_in_f64() {
    if !common::engine_available(FUSED) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in grid_configurations(&common::small_hkl_grid(dir.path())) {
        assert_kernel_gradients_agree(name, &flags);
    }
}

/// Every parameter's gradient of Σ w·I by the kernels equals the CPU f64 engine's, and at
/// least 10 parameters (8 for TOPHAT spots) have one.
fn assert_kernel_gradients_agree(name: &str, flags: &str) {
    let (by_kernel, reference) = kernel_and_reference(flags);
    assert_eq!(by_kernel.len(), reference.len());
    let mut reached = 0;
    for (k, c) in by_kernel.iter().zip(&reference) {
        assert_eq!(k.name, c.name);
        reached += c.values.iter().any(|&g| g != 0.0) as usize;
        common::assert_gradients_agree(&format!("{name}: ∂L/∂{}", k.name), &k.values, &c.values);
    }
    // TOPHAT spots are flat: the crystal's orientation moves no intensity
    let least = if name.starts_with("tophat") { 8 } else { 10 };
    assert!(reached >= least, "{name}: only {reached} parameters have a gradient");
}

/// The partials are summed in a fixed order (per workgroup in thread order, then the
/// workgroups in order), the grid's gradient as integers: 20 products give the same bits.
#[test]
fn kernel_gradients_repeat_bit_for_bit() {
    if !common::engine_available(FUSED) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let grids = grid_configurations(&common::small_hkl_grid(dir.path()));
    for flags in [
        format!("{BASE} {}", CONFIGURATIONS[1].1),
        grids[2].1.clone(),
        grids[4].1.clone(),
    ] {
        assert_products_repeat(&flags);
    }
}

/// 20 vector–Jacobian products of `flags` by the kernels give the same bits.
fn assert_products_repeat(flags: &str) {
    let (cfg, exp) = setup(flags);
    let w = weights(exp.detector.pixels());
    let product = || {
        nanobragg::kernel::vjp::image_vjp::<WgpuFused>(&cfg, &exp, Some(&w), &WgpuDevice::default())
            .unwrap()
            .unwrap()
            .1
    };
    let first = product();
    for round in 1..20 {
        assert_eq!(product(), first, "round {round}");
    }
}

/// With `RenderOptions::adjoint_kernel` off, `Engine::image_vjp` on the fused engine takes the
/// tensor stages' gradients (on the device): not the kernel's bits, the CPU f64 engine's
/// values to f32 precision.
#[test]
fn without_the_adjoint_kernel_the_tensor_stages_take_the_gradients() {
    if !common::engine_available(FUSED) {
        return;
    }
    let flags = format!("{BASE} {}", CONFIGURATIONS[1].1);
    let (by_kernel, reference) = kernel_and_reference(&flags);
    let (cfg, exp) = setup(&flags);
    let w = weights(exp.detector.pixels());
    let options = RenderOptions {
        adjoint_kernel: false,
        ..RenderOptions::default()
    };
    let (_, by_stages) = FUSED.image_vjp(&cfg, &exp, Some(&w), &options).unwrap();
    assert_ne!(by_stages, by_kernel, "the option did not leave the kernel");
    for (g, c) in by_stages.iter().zip(&reference) {
        assert_eq!(g.name, c.name);
        common::assert_gradients_agree(&format!("tensor stages: ∂L/∂{}", g.name), &g.values, &c.values);
    }
}

/// Derivative images by the kernel (`Engine::derivatives` on the fused engine) against the CPU
/// f64 engine's: correlation ≥ 0.999 and max |Δ| ≤ 1e-3 of the reference's maximum, for
/// every name on configurations across the kernel's coverage.
#[test]
fn kernel_derivative_images_equal_the_tensor_stages_in_f64() {
    if !common::engine_available(FUSED) {
        return;
    }
    let common_names = [
        "distance",
        "Xbeam",
        "Ybeam",
        "cell_a",
        "cell_gamma",
        "misset_y",
        "phi",
        "lambda",
        "Na",
        "fluence",
        "default_F",
        "detector_roty",
        "twotheta",
    ];
    let cases: [(&str, &[&str]); 7] = [
        (CONFIGURATIONS[1].1, &["polar", "mosaic", "water", "cell_b", "Nc"]),
        (CONFIGURATIONS[3].1, &["cell_c", "Nb"]),
        (CONFIGURATIONS[5].1, &["polar", "detector_rotx"]),
        (CONFIGURATIONS[7].1, &["dispersion", "misset_z"]),
        (CONFIGURATIONS[11].1, &["polar", "detector_rotx"]),
        (CONFIGURATIONS[13].1, &["polar", "detector_rotx", "detector_rotz"]),
        (CONFIGURATIONS[14].1, &["polar", "mosaic", "detector_rotx"]),
    ];
    for (extra, more) in cases {
        let names: Vec<&str> = common_names.iter().chain(more).copied().collect();
        assert_derivatives_agree(&format!("{BASE} {extra}"), &names);
    }
    // tricubic structure factors, C's fall-back included
    let dir = tempfile::tempdir().unwrap();
    let grids = grid_configurations(&common::small_hkl_grid(dir.path()));
    for (_, flags) in &grids[1..3] {
        assert_derivatives_agree(flags, &common_names);
    }
}

/// Derivative images `names` of `flags` by the kernel against the CPU f64 engine's.
fn assert_derivatives_agree(flags: &str, names: &[&str]) {
    let extra = flags;
    let (cfg, exp) = setup(flags);
    let (_, by_kernel) = nanobragg::kernel::vjp::derivative_images::<WgpuFused>(
        &cfg,
        &exp,
        names,
        &RenderOptions::default(),
        &WgpuDevice::default(),
    )
    .unwrap()
    .unwrap_or_else(|| panic!("{flags}: the kernel does not cover this configuration"));
    let by_engine = FUSED.derivatives(&cfg, &exp, names, &RenderOptions::default()).unwrap();
    assert_eq!(
        by_engine, by_kernel,
        "{flags}: Engine::derivatives did not take the kernel"
    );
    let reference = CPU.derivatives(&cfg, &exp, names, &RenderOptions::default()).unwrap();
    for (k, c) in by_kernel.iter().zip(&reference) {
        assert_eq!(k.spec.name, c.spec.name);
        let (max, worst) = common::peak_and_worst(&k.data, &c.data);
        if max == 0.0 {
            assert!(
                worst == 0.0,
                "{extra}: d/d{} is 0 on the CPU, up to {worst:e} by the kernel",
                c.spec.name
            );
            continue;
        }
        let corr = common::correlation(&k.data, &c.data);
        println!(
            "{extra}: d/d{}: corr {corr:.6}, max |Δ|/max {:.1e}",
            c.spec.name,
            worst / max
        );
        assert!(
            corr >= 0.999 && worst <= 1e-3 * max,
            "{extra}: d/d{}: corr {corr}, max |Δ| {worst:e} of {max:e}",
            c.spec.name
        );
    }
}

proptest! {
    // a fixed seed: the same cases every run (a property test here must not flake)
    #![proptest_config(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6e62_0034),
        ..ProptestConfig::default()
    })]

    /// On random configurations inside the coverage, every parameter's gradient by the kernel
    /// equals the f64 tensor stages'.
    #[test]
    fn kernel_gradients_hold_on_random_configurations(flags in covered_configuration()) {
        if common::engine_available(FUSED) {
            let (by_kernel, reference) = kernel_and_reference(&flags);
            // XDS's and DIALS's 2θ moves no pixel (their frames are given): its gradient is a
            // sum of terms that cancel exactly, 0 in the reference and f32 noise here
            let frame_given = flags.contains("-xds") || flags.contains("-dials");
            for (k, c) in by_kernel.iter().zip(&reference) {
                if !(frame_given && k.name == "twotheta") {
                    common::assert_gradients_agree(&format!("{flags}: ∂L/∂{}", k.name), &k.values, &c.values);
                }
            }
        }
    }
}

/// The angular parameters (rad).
const ANGLES: [&str; 5] = ["misset", "phi", "mosaic_spread", "detector_rotation", "twotheta"];

/// Every golden case's configuration (C's flags, rendered on 16×16 pixels a quarter of the
/// detector off its centre through `-roi`, where the image has no mirror symmetry to cancel
/// gradients to their rounding): every parameter's gradient of Σ w·I on the fused wgpu
/// engine (the kernels where they cover the configuration, the tensor stages on the device
/// where they do not) equals the CPU f64 engine's.
#[test]
fn every_golden_configuration_has_the_f64_gradients_on_wgpu() {
    let Some(dir) = common::golden_dir() else { return };
    if !common::engine_available(FUSED) {
        return;
    }
    let mut by_kernel = 0;
    let mut failures = Vec::new();
    let cases = common::cases(&dir);
    for case in &cases {
        let (f, s) = (case.fpixels / 4, case.spixels / 3);
        let roi = format!("{} {} {} {}", f, f + 15, s, s + 15);
        let mut args: Vec<&str> = case.args.iter().map(String::as_str).collect();
        args.push("-roi");
        args.extend(roi.split_whitespace());
        let Parsed::Run(mut cfg, _) = parse_args(&args).unwrap() else {
            panic!("{}: a run", case.name)
        };
        if cfg.crystal.hkl == HklSource::FdumpIfPresent {
            cfg.crystal.hkl = HklSource::None;
        }
        let exp = Experiment::new(&cfg).unwrap();
        let w = weights(exp.detector.pixels());
        let kernel =
            nanobragg::kernel::vjp::image_vjp::<WgpuFused>(&cfg, &exp, Some(&w), &WgpuDevice::default()).unwrap();
        by_kernel += kernel.is_some() as usize;
        assert!(kernel.is_some(), "{}: outside the kernels' coverage", case.name);
        let (_, ours) = FUSED
            .image_vjp(&cfg, &exp, Some(&w), &RenderOptions::default())
            .unwrap();
        let (_, reference) = CPU.image_vjp(&cfg, &exp, Some(&w), &RenderOptions::default()).unwrap();
        // an angle that moves no pixel here (XDS's and DIALS's 2θ; φ about the spindle of an
        // aligned cubic cell with round or Gaussian spots) has a gradient that cancels to 0
        // in the reference, to f32 noise on the device: held to the noise of the largest
        // angular gradient (all per radian) instead
        let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let angular = |name: &str| ANGLES.contains(&name);
        let scale = reference
            .iter()
            .filter(|c| angular(c.name))
            .map(|c| norm(&c.values))
            .fold(0.0, f64::max);
        let path = if kernel.is_some() { "kernel" } else { "tensor stages" };
        for (k, c) in ours.iter().zip(&reference) {
            assert_eq!(k.name, c.name);
            let label = format!("{} ({path}): ∂L/∂{}", case.name, k.name);
            if angular(k.name) && norm(&c.values) <= 1e-9 * scale {
                println!("{label}: moves no pixel, got {:.1e} of {scale:.1e}", norm(&k.values));
                if norm(&k.values) > 1e-4 * scale {
                    failures.push(format!("{label}: {:?} where the reference is 0", k.values));
                }
                continue;
            }
            failures.extend(common::gradients_disagree(&label, &k.values, &c.values));
        }
    }
    println!("{by_kernel} of {} golden configurations by the kernel", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
