//! The embedding contract (`docs/embedding.md`): `Simulator::from_args`, `forward`,
//! `forward_with`, `Params::replace`, `num_params`, gradients on the caller's graph and a burn
//! optimizer step, on every backend this binary may hold (f64 CPU, its autodiff, and both wgpu
//! backends with and without autodiff; NdArray<f32> is in `embedding_f32.rs`, since burn fixes
//! a device's float dtype per process).
//!
//! References are independent of the code under test: the `nanobragg` binary's `-floatfile`
//! (another process, another driver), C's golden image, and central finite differences.

use super::common;
use common::host;

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{backend::Backend, Tensor, TensorData};
use nanobragg::engine::Engine;
use nanobragg::{Params, PixelKernel, Simulator};

type Cpu = NdArray<f64>;
type AdCpu = Autodiff<Cpu>;

/// A triclinic, misset, mosaic crystal with two φ steps on a rotated detector.
const FLAGS: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 \
    -distance 80 -pixel 0.4 -detpixels 24 -detector_rotx 2 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 \
    -phi 5 -osc 2 -phisteps 2 -polar 0.8 -oversample 1";
/// The same with a region of interest (pixels outside it are 0).
const FLAGS_ROI: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 \
    -distance 80 -pixel 0.4 -detpixels 24 -roi 3 17 5 20 -oversample 2";

fn args(flags: &str) -> Vec<&str> {
    flags.split_whitespace().collect()
}

fn cpu() -> NdArrayDevice {
    common::f64_device()
}

/// `forward()` on `B` equals the binary's float image: to f32 rounding (`tol` 1e-6 of the
/// maximum) for f64 backends, to f32 arithmetic (1e-4) for f32 ones; zeros outside the ROI.
fn forward_matches_cli<B: PixelKernel>(device: &B::Device, tol: f64, label: &str) {
    for flags in [FLAGS, FLAGS_ROI] {
        let sim = Simulator::<B>::from_args(&args(flags), device).unwrap();
        let image = sim.forward();
        let exp = &sim.setup().exp;
        assert_eq!(image.dims(), [exp.detector.spixels, exp.detector.fpixels], "{label}");
        let stats = sim.statistics(image.clone()).unwrap();
        let got = host(image);
        let want = common::program_float_image(&args(flags));
        let max = want.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
        assert!(max > 0.0, "{label}: the reference image is blank");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - *b as f64).abs())
            .fold(0.0, f64::max)
            / max;
        println!("{label}: forward vs -floatfile max |Δ|/max = {worst:.1e}");
        // the statistics reduced on the device: the maximum is the binary's
        assert!(
            (stats.max_i - max).abs() <= tol * max,
            "{label}: statistics' max_I {} against the float image's {max}",
            stats.max_i
        );
        assert!(
            worst <= tol,
            "{label} ({flags}): forward differs from -floatfile by {worst:.1e} of the maximum"
        );
    }
}

#[test]
fn forward_equals_the_float_image_on_cpu_f64_and_its_autodiff() {
    forward_matches_cli::<Cpu>(&cpu(), 1e-6, "NdArray<f64>");
    forward_matches_cli::<AdCpu>(&cpu(), 1e-6, "Autodiff<NdArray<f64>>");
}

#[cfg(feature = "gpu")]
#[test]
fn forward_equals_the_float_image_on_wgpu_with_and_without_fusion_and_autodiff() {
    use nanobragg::engine::{WgpuFused, WgpuUnfused};
    if !common::engine_available(Engine::Wgpu { fusion: true }) {
        return;
    }
    let device = burn::backend::wgpu::WgpuDevice::default();
    forward_matches_cli::<WgpuFused>(&device, 1e-4, "Wgpu (fused)");
    forward_matches_cli::<Autodiff<WgpuFused>>(&device, 1e-4, "Autodiff<Wgpu> (fused)");
    forward_matches_cli::<WgpuUnfused>(&device, 1e-4, "Wgpu (unfused)");
    forward_matches_cli::<Autodiff<WgpuUnfused>>(&device, 1e-4, "Autodiff<Wgpu> (unfused)");
}

/// The forward pass equals C's own image for a golden case (corr and sum as the parity tests).
#[test]
fn forward_matches_a_golden_c_image() {
    let Some(dir) = common::golden_dir() else { return };
    let case = common::cases(&dir)
        .into_iter()
        .find(|c| c.name == "triclinic_misset_256")
        .expect("golden case triclinic_misset_256");
    let flags: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let sim = Simulator::<Cpu>::from_args(&flags, &cpu()).unwrap();
    let got: Vec<f32> = host(sim.forward()).into_iter().map(|v| v as f32).collect();
    let corr = common::correlation(&got, &case.image);
    let ratio = common::sum_ratio(&got, &case.image);
    assert!(
        corr >= 0.9999 && (ratio - 1.0).abs() <= 1e-3,
        "corr {corr}, sum ratio {ratio}"
    );
}

/// Σ w·I, the loss of the gradient checks.
fn weighted_sum<B: Backend>(image: Tensor<B, 2>) -> Tensor<B, 1> {
    let [s, f] = image.dims();
    let w: Vec<f64> = (0..s * f).map(|i| 1.0 + ((i * 7919) % 13) as f64 / 13.0).collect();
    let w = Tensor::<B, 2>::from_data(TensorData::new(w, [s, f]), &image.device());
    (image * w).sum()
}

/// `loss.backward()` reaches every `Param`: the autodiff gradients of Σ w·I with respect to
/// the distance, cell a, α, misset and λ equal central differences of `forward_with` on the
/// plain f64 backend, at relative 1e-5.
#[test]
fn autodiff_gradients_equal_central_differences() {
    let sim = Simulator::<AdCpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    let grads = weighted_sum(sim.forward()).backward();
    let plain = Simulator::<Cpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    for (name, component, h) in [
        ("distance", 0, 1e-6),
        ("cell", 0, 1e-4),
        ("cell", 3, 1e-6),
        ("misset", 1, 1e-6),
        ("lambda0", 0, 1e-16),
    ] {
        let ad = sim.params.get(name).unwrap();
        let g = match name {
            "distance" => sim.params.distance.grad(&grads),
            "cell" => sim.params.cell.grad(&grads),
            "misset" => sim.params.misset.grad(&grads),
            _ => sim.params.lambda0.grad(&grads),
        }
        .unwrap_or_else(|| panic!("no gradient reached {name}"));
        let g = host(g)[component];
        let x = host(ad);
        let at = |delta: f64| {
            let mut v = x.clone();
            v[component] += delta;
            let t = Tensor::<Cpu, 1>::from_data(TensorData::new(v, [x.len()]), &cpu());
            let p = plain.params.clone().replace(name, t).unwrap();
            host(weighted_sum(plain.forward_with(&p)))[0]
        };
        let fd = (at(h) - at(-h)) / (2.0 * h);
        println!("∂L/∂{name}[{component}]: autodiff {g:.9e}, central difference {fd:.9e}");
        assert!(
            (g - fd).abs() <= 1e-5 * fd.abs().max(g.abs()),
            "{name}[{component}]: autodiff {g:e}, central difference {fd:e}"
        );
    }
}

/// `forward_with` renders from tensors the caller built: a distance computed as 0.08·x from
/// the caller's own leaf x gets ∂L/∂x = 0.08·∂L/∂distance, and the module's own parameter
/// gets no gradient.
#[test]
fn forward_with_puts_the_image_on_the_callers_graph() {
    let sim = Simulator::<AdCpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    let x = Tensor::<AdCpu, 1>::from_data(TensorData::new(vec![1.0], [1]), &cpu()).require_grad();
    let params = sim.params.clone().replace("distance", x.clone() * 0.08).unwrap();
    let grads = weighted_sum(sim.forward_with(&params)).backward();
    let dx = host(x.grad(&grads).expect("gradient reaches the caller's leaf"))[0];
    assert!(
        sim.params.distance.grad(&grads).is_none(),
        "the replaced parameter is not used"
    );
    let grads = weighted_sum(sim.forward()).backward();
    let dd = host(sim.params.distance.grad(&grads).unwrap())[0];
    assert!(
        (dx - 0.08 * dd).abs() <= 1e-9 * dx.abs(),
        "∂L/∂x {dx}, 0.08·∂L/∂distance {}",
        0.08 * dd
    );
}

/// Every continuous parameter is a `Param` burn sees: 28 scalars without an HKL grid and
/// without `-close_distance` (cell 6, misset 3, φ 2, mosaic 1, distance 1, beam centre 2,
/// detector rotations 3, 2θ 1, λ 1, fluence 1, N 3, K 1, water 1, default_F 1, dispersion 1);
/// `-close_distance` adds one.
#[test]
fn num_params_counts_every_continuous_parameter() {
    let sim = Simulator::<Cpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    assert_eq!(sim.num_params(), 28);
    let close = format!("{FLAGS} -close_distance 79");
    let sim = Simulator::<Cpu>::from_args(&args(&close), &cpu()).unwrap();
    assert_eq!(sim.num_params(), 29);
}

/// A burn optimizer steps the module: Adam on the MSE to an image rendered at a distance
/// 2 mm longer brings the distance most of the way there in a few steps.
#[test]
fn adam_steps_the_simulator_towards_a_target() {
    let target_flags = FLAGS.replace("-distance 80", "-distance 82");
    let target = Simulator::<Cpu>::from_args(&args(&target_flags), &cpu())
        .unwrap()
        .forward();
    let target = Tensor::<AdCpu, 2>::from_inner(target);
    let mut sim = Simulator::<AdCpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    // only the distance moves: the other parameters are constants here
    sim.params = sim.params.no_grad();
    sim.params.distance = sim.params.distance.clone().map(|t| t.require_grad());
    let mut optim = AdamConfig::new().init::<AdCpu, Simulator<AdCpu>>();
    let start = host(sim.params.distance.val())[0];
    for _ in 0..20 {
        let loss = (sim.forward() - target.clone()).powi_scalar(2).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &sim);
        sim = optim.step(2e-4, sim, grads);
    }
    let end = host(sim.params.distance.val())[0];
    println!("distance: {start} m → {end} m (target 0.082 m)");
    assert!((end - 0.082).abs() < 0.5 * (start - 0.082).abs(), "{start} → {end}");
}

/// Params::replace rejects unknown names and wrong lengths.
#[test]
fn replace_checks_name_and_length() {
    let sim = Simulator::<Cpu>::from_args(&args(FLAGS), &cpu()).unwrap();
    let t = Tensor::<Cpu, 1>::from_data(TensorData::new(vec![1.0, 2.0], [2]), &cpu());
    assert!(sim.params.clone().replace("distance", t.clone()).is_err());
    assert!(sim.params.clone().replace("no_such_parameter", t).is_err());
    let _: &Params<Cpu> = &sim.params;
}
