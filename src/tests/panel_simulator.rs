//! `PanelSimulator`: every panel of a detector in one burn module whose panel-group motions
//! are trainable parameters (issue 25, part 3).
//!
//! References are independent of the module: the binary's `-floatfile` of `.expt` files that
//! the test moved with its own rotation code (`panels::moved_by`), the binary's exact
//! `-derivative panel_*` images (a different method: combinations of base derivative images),
//! and central differences.

use super::common::{self, host};
use super::panels::{fixture, four_tilted_config, moved_by, render_derivatives, render_panels, Ad};
use burn::module::Param;
use burn::module::{AutodiffModule, Module};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{backend::Backend, Tensor, TensorData};
use nanobragg::{PanelSimulator, Params, PixelKernel};

/// Pixels of one panel of `four_tilted.expt`.
const N: usize = 32 * 24;
/// A motion in the file's units: X, Y, Z (mm), O, F, S (degrees).
const MOTION: [f64; 6] = [0.03, -0.02, 0.01, 0.2, -0.15, 0.1];

/// The four-panel crystal run with `-panel_groups grouping`.
fn simulator<B: PixelKernel>(grouping: &str, device: &B::Device) -> PanelSimulator<B> {
    let (mut cfg, _) = four_tilted_config();
    cfg.detector.panel_groups = Some(grouping.into());
    PanelSimulator::new(&cfg, device).unwrap()
}

/// A motion in the module's units (m, rad).
fn si(m: [f64; 6]) -> [f64; 6] {
    std::array::from_fn(|i| if i < 3 { m[i] * 1e-3 } else { m[i].to_radians() })
}

/// `[groups·6]` motions, 0 but for `group`'s (file units).
fn motions<B: Backend>(groups: usize, group: usize, motion: [f64; 6], device: &B::Device) -> Tensor<B, 1> {
    let mut v = vec![0.0; groups * 6];
    v[group * 6..group * 6 + 6].copy_from_slice(&si(motion));
    Tensor::from_data(TensorData::new(v, [groups * 6]), device)
}

/// The module's parameters with `motions`.
fn at<B: PixelKernel>(sim: &PanelSimulator<B>, motions: Tensor<B, 1>) -> Params<B> {
    sim.params.clone().replace("panel_motions", motions).unwrap()
}

/// The module's motions parameter.
fn motion_param<B: Backend>(sim: &PanelSimulator<B>) -> &Param<Tensor<B, 1>> {
    sim.params
        .panel_motions
        .as_ref()
        .expect("a detector of panels has motions")
}

/// Every panel's image at `motions`, one after the other as `-floatfile`.
fn image<B: PixelKernel>(sim: &PanelSimulator<B>, motions: Tensor<B, 1>) -> Vec<f64> {
    sim.forward_with(&at(sim, motions)).into_iter().flat_map(host).collect()
}

/// max |a − b| over the maximum of `b`.
fn worst(a: &[f64], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let max = b.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
    assert!(max > 0.0, "blank reference");
    a.iter().zip(b).map(|(x, y)| (x - *y as f64).abs()).fold(0.0, f64::max) / max
}

/// The loss of the gradient checks: Σ w·I over every panel, w fixed in [0.5, 1.5).
fn weighted<B: Backend>(images: Vec<Tensor<B, 2>>) -> Tensor<B, 1> {
    let device = images[0].device();
    let w = common::uniform(4 * N, 0.5, 1.5, 7);
    let all = Tensor::cat(images.into_iter().map(|i| i.reshape([N])).collect(), 0);
    (all * Tensor::from_data(TensorData::new(w, [4 * N]), &device)).sum()
}

#[test]
fn panel_simulator_renders_moved_groups_as_the_binary_renders_moved_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let device = common::f64_device();
    let at_file = render_panels(d, "-detector_expt", &fixture("four_tilted.expt"), "");
    for (grouping, groups, group, members) in [("panels", 4, 1, vec![1]), ("all", 1, 0, vec![0, 1, 2, 3])] {
        let sim = simulator::<Ad>(grouping, &device);
        assert_eq!(motion_param(&sim).val().dims(), [groups * 6], "{grouping}");
        let here = image(&sim, motion_param(&sim).val());
        assert!(worst(&here, &at_file) <= 1e-6, "{grouping}: at the file's layout");
        std::fs::write(d.join("moved.expt"), moved_by(&members, MOTION)).unwrap();
        let want = render_panels(d, "-detector_expt", &d.join("moved.expt"), "");
        let got = image(&sim, motions(groups, group, MOTION, &device));
        let err = worst(&got, &want);
        println!("{grouping}: moved module vs moved file {err:.1e} of the maximum");
        assert!(
            err <= 1e-6,
            "{grouping}: the moved group differs by {err:.1e} of the maximum"
        );
        // the motion moved the spots: the moved image is far from the file's
        assert!(worst(&got, &at_file) > 1e-2, "{grouping}: the motion changed nothing");
    }
}

/// At the file's layout, ∂(Σ w·I)/∂motions equals Σ w·(the binary's `-derivative panel_*`
/// image) over the group's panels; away from it, central differences of the module's images.
#[test]
fn panel_simulator_motion_gradients_match_derivative_images_and_differences() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let device = common::f64_device();
    let names = nanobragg::experiment::panels::motion::MOTIONS.map(|(name, _)| name);
    let w = common::uniform(4 * N, 0.5, 1.5, 7);
    for (grouping, groups) in [("panels", 4), ("all", 1)] {
        let sim = simulator::<Ad>(grouping, &device);
        render_derivatives(d, &format!("-panel_groups {grouping}"), &names);
        let grads = weighted(sim.forward()).backward();
        let got = host(motion_param(&sim).grad(&grads).expect("the motions are parameters"));
        let scale = got.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
        for (m, name) in names.iter().enumerate() {
            let image = common::read_f32(&d.join(format!("d_{name}.bin")));
            let per_unit = if m < 3 { 1e-3 } else { 1f64.to_radians() };
            for g in 0..groups {
                let panels: Vec<usize> = if groups == 1 { (0..4).collect() } else { vec![g] };
                let pixels = panels.iter().flat_map(|&k| k * N..(k + 1) * N);
                let want: f64 = pixels.map(|p| w[p] * image[p] as f64).sum::<f64>() / per_unit;
                let have = got[g * 6 + m];
                assert!(
                    (have - want).abs() <= 1e-4 * want.abs() + 1e-6 * scale,
                    "{grouping} group {g} {name}: autodiff {have} vs derivative image {want}"
                );
            }
        }
        // away from the file: rotations composed, the centre shifted
        let x0 = motions::<Ad>(groups, groups - 1, MOTION, &device).require_grad();
        let grads = weighted(sim.forward_with(&at(&sim, x0.clone()))).backward();
        let got = host(x0.grad(&grads).unwrap());
        let base = host(x0.clone().inner());
        let loss = |x: &[f64]| {
            let t = Tensor::from_data(TensorData::new(x.to_vec(), [groups * 6]), &device);
            host(weighted(sim.forward_with(&at(&sim, t))))[0]
        };
        for i in (groups - 1) * 6..groups * 6 {
            let h = if i % 6 < 3 { 1e-6 } else { 1e-5 };
            let (mut xp, mut xm) = (base.clone(), base.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (loss(&xp) - loss(&xm)) / (2.0 * h);
            assert!(
                (got[i] - fd).abs() <= 1e-3 * fd.abs() + 1e-5 * scale,
                "{grouping} component {i}: autodiff {} vs central difference {fd}",
                got[i]
            );
        }
    }
}

/// A burn optimizer steps the module's motions: one Adam step on the squared error to an
/// image whose panel 1 is shifted along the file's y (the binary's image of the moved file;
/// the other panels the module's own) moves that group's Y the right way, no other group, and
/// (with the shared parameters fixed) nothing else.
#[test]
fn adam_steps_the_motions_towards_a_moved_panel() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let device = common::f64_device();
    let sim = simulator::<Ad>("panels", &device);
    // the first panel's own simulator has the same parameters, but no motions
    let (cfg, _) = four_tilted_config();
    let first = &nanobragg::Simulator::<Ad>::panels(&cfg, &device).unwrap()[0];
    assert_eq!(sim.num_params(), first.num_params() + 4 * 6);
    std::fs::write(d.join("moved.expt"), moved_by(&[1], [0.0, 0.03, 0.0, 0.0, 0.0, 0.0])).unwrap();
    let moved = render_panels(d, "-detector_expt", &d.join("moved.expt"), "");
    let mut target = image(&sim, motion_param(&sim).val());
    for (t, m) in target[N..2 * N].iter_mut().zip(&moved[N..2 * N]) {
        *t = f64::from(*m);
    }
    let target = Tensor::<Ad, 1>::from_data(TensorData::new(target, [4 * N]), &device);
    let loss_of = |sim: &PanelSimulator<Ad>| {
        let all = Tensor::cat(sim.forward().into_iter().map(|i| i.reshape([N])).collect(), 0);
        (all - target.clone()).powi_scalar(2).sum()
    };
    let before = host(loss_of(&sim))[0];
    let sim = sim.fix_shared();
    let grads = GradientsParams::from_grads(loss_of(&sim).backward(), &sim);
    let mut adam = AdamConfig::new().init::<Ad, PanelSimulator<Ad>>();
    let sim = adam.step(1e-5, sim, grads);
    let moved = host(motion_param(&sim).val());
    for (i, v) in moved.iter().enumerate() {
        if i == 6 + 1 {
            assert!((v - 1e-5).abs() < 1e-7, "Y of panel 1 stepped by {v} m, not 1e-5");
        } else if i / 6 != 1 {
            assert_eq!(*v, 0.0, "motion {i} of another group moved");
        }
    }
    assert_eq!(host(sim.params.lambda0.val()), host(first.params.lambda0.val()));
    assert_eq!(host(sim.params.cell.val()), host(first.params.cell.val()));
    let after = host(loss_of(&sim))[0];
    assert!(after < before, "the loss went from {before} to {after}");
    assert_eq!(motion_param(&sim.valid()).val().dims(), [4 * 6]);
}

/// On wgpu (the kernel forward, fused and not, and its autodiff), the moved module equals the
/// f64 CPU one to f32 precision, and its motion gradient to 2e-3.
#[cfg(feature = "gpu")]
#[test]
fn panel_simulator_on_wgpu_matches_the_cpu() {
    use nanobragg::engine::{Engine, WgpuFused, WgpuUnfused};
    if !common::engine_available(Engine::Wgpu { fusion: true }) {
        return;
    }
    let cpu = common::f64_device();
    let sim = simulator::<Ad>("all", &cpu);
    let x = motions::<Ad>(1, 0, MOTION, &cpu).require_grad();
    let want = image(&sim, x.clone().detach());
    let want_f32: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    let grads = weighted(sim.forward_with(&at(&sim, x.clone()))).backward();
    let want_grad = host(x.grad(&grads).unwrap());
    let gpu = burn::backend::wgpu::WgpuDevice::default();
    fn check<B: burn::tensor::backend::AutodiffBackend + PixelKernel>(
        gpu: &B::Device,
        want: &[f32],
        want_grad: &[f64],
        label: &str,
    ) {
        let sim = simulator::<B>("all", gpu);
        let x = motions::<B>(1, 0, MOTION, gpu).require_grad();
        let got = image(&sim, x.clone().detach());
        let err = worst(&got, want);
        assert!(err <= 1e-4, "{label}: image differs by {err:.1e} of the maximum");
        let grads = weighted(sim.forward_with(&at(&sim, x.clone()))).backward();
        let got = host(x.grad(&grads).unwrap());
        let scale = want_grad.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
        for (i, (a, b)) in got.iter().zip(want_grad).enumerate() {
            assert!(
                (a - b).abs() <= 2e-3 * scale,
                "{label}: ∂/∂motion {i} {a} vs the CPU's {b}"
            );
        }
    }
    check::<burn::backend::Autodiff<WgpuFused>>(&gpu, &want_f32, &want_grad, "Autodiff<Wgpu> (fused)");
    check::<burn::backend::Autodiff<WgpuUnfused>>(&gpu, &want_f32, &want_grad, "Autodiff<Wgpu> (unfused)");
}
