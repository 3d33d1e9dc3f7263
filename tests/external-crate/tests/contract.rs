//! The embedding contract, exercised from another crate with nothing but nanobragg's public
//! API: `Simulator::from_args`, `forward`, `forward_with`, `Module::num_params`,
//! `params.<field>.grad(&grads)`, `Params::replace` and one burn optimizer step.
//!
//! References are independent of the library: the `nanobragg` binary's `-floatfile` (another
//! process) and central finite
//! differences.

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{backend::Backend, DType, Tensor, TensorData};
use nanobragg::{Params, Simulator};
use std::path::PathBuf;

type Cpu = NdArray<f64>;
type AdCpu = Autodiff<Cpu>;

/// A triclinic, misset, mosaic crystal with two φ steps on a rotated 20×16 detector.
const FLAGS: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 \
    -distance 80 -pixel 0.4 -detpixels_f 20 -detpixels_s 16 -detector_rotx 2 -twotheta 3 -mosaic 0.5 \
    -mosaic_dom 3 -phi 5 -osc 2 -phisteps 2 -polar 0.8 -oversample 1";
const SLOW: usize = 16;
const FAST: usize = 20;

fn args(flags: &str) -> Vec<&str> {
    flags.split_whitespace().collect()
}

/// The CPU device, with f64 as its float type (set once, before any tensor).
fn cpu() -> NdArrayDevice {
    static INIT: std::sync::Once = std::sync::Once::new();
    let device = NdArrayDevice::Cpu;
    INIT.call_once(|| {
        burn::tensor::set_default_dtypes::<Cpu>(&device, DType::F64, DType::I64).expect("f64 on the CPU")
    });
    device
}

fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

/// `NANOBRAGG_BIN`, else `nanobragg` in the profile directory this test was built into
/// (`target/release/deps/contract-…` → `target/release/nanobragg`), where `cargo test` at
/// nanobragg's root builds it.
fn binary() -> PathBuf {
    let beside = || {
        let exe = std::env::current_exe().unwrap();
        exe.parent().and_then(|deps| deps.parent()).unwrap().join("nanobragg")
    };
    let path = std::env::var_os("NANOBRAGG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(beside);
    assert!(
        path.is_file(),
        "the nanobragg binary is not at {} (run `cargo test` at nanobragg's root, or set \
         NANOBRAGG_BIN)",
        path.display()
    );
    path
}

/// The binary's `-floatfile` for `flags`: f32, slow-major.
fn cli_float_image(flags: &str) -> Vec<f32> {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(binary())
        .args(args(flags))
        .args(["-floatfile", "float.bin", "-nonoise", "-nopgm", "-noprogress"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(dir.path().join("float.bin"))
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Σ w·I with fixed uneven weights.
fn weighted_sum<B: Backend>(image: Tensor<B, 2>) -> Tensor<B, 1> {
    let [s, f] = image.dims();
    let w: Vec<f64> = (0..s * f).map(|i| 1.0 + ((i * 7919) % 13) as f64 / 13.0).collect();
    (image.clone() * Tensor::<B, 2>::from_data(TensorData::new(w, [s, f]), &image.device())).sum()
}

#[test]
fn forward_equals_the_binarys_float_image() {
    let want = cli_float_image(FLAGS);
    assert_eq!(want.len(), SLOW * FAST);
    let max = want.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
    assert!(max > 0.0, "the binary's image is blank");
    let plain = Simulator::<Cpu>::from_args(&args(FLAGS), &cpu()).unwrap().forward();
    let tracked = Simulator::<AdCpu>::from_args(&args(FLAGS), &cpu()).unwrap().forward();
    for (label, image) in [("NdArray<f64>", plain), ("Autodiff<NdArray<f64>>", tracked.inner())] {
        assert_eq!(image.dims(), [SLOW, FAST], "{label}");
        let worst = host(image)
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - *b as f64).abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-6 * max,
            "{label}: max |Δ| {worst:e} against the binary (max {max:e})"
        );
    }
}

/// 28 scalars: cell 6, misset 3, φ 2, mosaic 1, distance 1, beam centre 2, detector rotations
/// 3, 2θ 1, λ 1, fluence 1, N 3, K 1, water 1, default_F 1, dispersion 1.
#[test]
fn num_params_counts_the_continuous_parameters() {
    let sim = Simulator::<Cpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    assert_eq!(sim.num_params(), 28);
}

/// ∂(Σ w·I)/∂ distance, cell a, β and misset y from `backward` equal central differences of
/// `forward_with` on parameters made by `Params::replace`.
#[test]
fn gradients_equal_central_differences() {
    let sim = Simulator::<AdCpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    let grads = weighted_sum(sim.forward()).backward();
    let plain = Simulator::<Cpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    let checks: [(&str, usize, f64, Option<Tensor<Cpu, 1>>); 4] = [
        ("distance", 0, 1e-6, sim.params.distance.grad(&grads)),
        ("cell", 0, 1e-4, sim.params.cell.grad(&grads)),
        ("cell", 4, 1e-6, sim.params.cell.grad(&grads)),
        ("misset", 1, 1e-6, sim.params.misset.grad(&grads)),
    ];
    for (name, i, h, grad) in checks {
        let ad = host(grad.unwrap_or_else(|| panic!("no gradient reached {name}")))[i];
        let x = host(plain.params.get(name).unwrap());
        let loss_at = |delta: f64| {
            let mut v = x.clone();
            v[i] += delta;
            let t = Tensor::<Cpu, 1>::from_data(TensorData::new(v, [x.len()]), &cpu());
            let params: Params<Cpu> = plain.params.clone().replace(name, t).unwrap();
            host(weighted_sum(plain.forward_with(&params)))[0]
        };
        let fd = (loss_at(h) - loss_at(-h)) / (2.0 * h);
        assert!(
            (ad - fd).abs() <= 1e-5 * fd.abs().max(ad.abs()) && fd != 0.0,
            "{name}[{i}]: autodiff {ad:e}, central difference {fd:e}"
        );
    }
}

/// One Adam step on the squared error to an image at a 1 mm longer distance moves the distance
/// towards it and lowers the loss.
#[test]
fn an_optimizer_step_moves_the_distance_towards_the_target() {
    let target = Simulator::<Cpu>::from_args(&args(&FLAGS.replace("-distance 80", "-distance 81")), &cpu())
        .unwrap()
        .forward();
    let target = Tensor::<AdCpu, 2>::from_inner(target);
    let mut sim = Simulator::<AdCpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    sim.params = sim.params.no_grad();
    sim.params.distance = sim.params.distance.clone().map(|t| t.require_grad());
    let loss = |sim: &Simulator<AdCpu>| (sim.forward() - target.clone()).powi_scalar(2).mean();
    let before = host(loss(&sim).inner())[0];
    let grads = GradientsParams::from_grads(loss(&sim).backward(), &sim);
    let mut optim = AdamConfig::new().init::<AdCpu, Simulator<AdCpu>>();
    sim = optim.step(1e-4, sim, grads);
    let distance = host(sim.params.distance.val().inner())[0];
    let after = host(loss(&sim).inner())[0];
    assert!(
        distance > 0.08 && distance <= 0.0811,
        "distance after one step: {distance} m"
    );
    assert!(after < before, "loss {before:e} → {after:e}");
}
