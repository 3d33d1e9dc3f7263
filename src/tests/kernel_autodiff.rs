//! `Simulator::forward` on wgpu renders with the one kernel from the scene evaluated on the host
//! (`src/kernel/autodiff.rs`), and its backward pass is the vector–Jacobian kernel (or the
//! tensor stages' product on the host, with `RenderOptions::adjoint_kernel` off):
//!
//! * at parameters moved away from the configuration's values, the kernel's image equals the
//!   tensor stages' on the same backend (every scene variable reaches the kernel);
//! * the gradients of a weighted loss through the kernel equal the CPU `Simulator`'s (f64),
//!   for every parameter, to f32 precision (`common::assert_gradients_agree`);
//! * the forward pass and a gradient step launch a handful of kernels whatever the image (the
//!   tensor stages launch per chunk).
//!
//! On llvmpipe without a GPU (CI); skips with a message when no wgpu adapter exists, unless
//! `NANOBRAGG_REQUIRE_WGPU=1`.
#![cfg(feature = "gpu")]

use super::common;
use common::host;

use burn::backend::wgpu::WgpuDevice;
use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use nanobragg::engine::{Engine, WgpuFused};
use nanobragg::render::RenderOptions;
use nanobragg::{Params, Simulator};
use std::ffi::OsStr;
use std::path::Path;

type Ad = Autodiff<WgpuFused>;

const FUSED: Engine = Engine::Wgpu { fusion: true };

/// A tricubic grid that falls back part-way (structure factors and default_F are
/// parameters), and mosaic, φ, polarization, a rotated detector and water.
fn configurations(hkl: &Path) -> Vec<(&'static str, String)> {
    vec![
        (
            "tricubic falling back",
            format!(
                "-hkl {} -cell 60 60 60 90 90 90 -misset 5 3 2 -lambda 1.5 -N 2 -distance 120 \
                 -pixel 0.4 -detpixels 24 -interpolate -oversample 1",
                hkl.display()
            ),
        ),
        (
            "mosaic, phi, polarization, water",
            "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 -distance 80 \
             -pixel 0.4 -detpixels 24 -detector_rotx 2 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 -phi 5 \
             -osc 2 -phisteps 2 -polar 0.8 -water 50 -oversample 2"
                .into(),
        ),
    ]
}

/// The simulator of `flags` on the fused wgpu backend under autodiff, and the same with the
/// tensor stages (`pixel_kernel` off).
fn kernel_and_stages(flags: &str) -> (Simulator<Ad>, Simulator<Ad>) {
    let args: Vec<&str> = flags.split_whitespace().collect();
    let sim = Simulator::<Ad>::from_args(&args, &WgpuDevice::default()).unwrap();
    let options = RenderOptions {
        pixel_kernel: false,
        max_chunk_elements: sim.setup().options.max_chunk_elements,
        threads: 1,
        ..RenderOptions::default()
    };
    let stages = sim.clone().with_options(options);
    (sim, stages)
}

/// Every parameter moved off the configuration's value (×1.03, or +0.002 from 0; water is
/// left at 0 where it is off), each a fresh leaf.
fn moved(params: &Params<Ad>) -> Params<Ad> {
    let mut out = params.clone();
    for (name, t) in params.tensors() {
        let Some(t) = t else { continue };
        let v: Vec<f64> = host(t)
            .into_iter()
            .map(|x| match (x, name) {
                (0.0, "water_size" | "dispersion") => 0.0,
                (0.0, _) => 0.002,
                (x, _) => 1.03 * x,
            })
            .collect();
        let n = v.len();
        let leaf = Tensor::<Ad, 1>::from_data(TensorData::new(v, [n]), &WgpuDevice::default()).require_grad();
        out = out.replace(name, leaf).unwrap();
    }
    out
}

/// Σ w·I with weights that vary along both axes (a transposed image would give another sum).
fn weighted_sum(image: Tensor<Ad, 2>) -> Tensor<Ad, 1> {
    let [s, f] = image.dims();
    let w: Vec<f64> = (0..s * f).map(|i| 1.0 + ((i * 7919) % 13) as f64 / 13.0).collect();
    let w = Tensor::<Ad, 2>::from_data(TensorData::new(w, [s, f]), &image.device());
    (image * w).sum()
}

/// max |a − b| / max |b|.
fn relative_max_difference(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().map(|v| v.abs()).fold(0.0, f64::max).max(1e-300);
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale
}

#[test]
fn simulator_forward_by_kernel_equals_the_tensor_stages_at_moved_parameters() {
    if !common::engine_available(FUSED) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in configurations(&common::small_hkl_grid(dir.path())) {
        let (sim, stages) = kernel_and_stages(&flags);
        for (label, params) in [("configured", sim.params.clone()), ("moved", moved(&sim.params))] {
            let by_kernel = host(sim.forward_with(&params));
            let by_stages = host(stages.forward_with(&params));
            let worst = relative_max_difference(&by_kernel, &by_stages);
            println!("{name}, {label} parameters: kernel vs tensor stages max |Δ|/max = {worst:.1e}");
            assert!(by_stages.iter().any(|&v| v > 0.0), "{name}: blank image");
            assert!(
                worst <= 1e-4,
                "{name}, {label}: kernel and tensor stages differ by {worst:.1e}"
            );
        }
        // and the moved parameters do move the image
        let configured = host(sim.forward());
        let moved_image = host(sim.forward_with(&moved(&sim.params)));
        assert!(relative_max_difference(&moved_image, &configured) > 1e-2, "{name}");
    }
}

/// The CPU's f64 simulator of `flags` at parameter `values` (a wgpu simulator's: f32 values),
/// each a fresh leaf.
fn on_cpu(flags: &str, values: &[(&str, Vec<f64>)]) -> (Simulator<Cpu>, Params<Cpu>) {
    let args: Vec<&str> = flags.split_whitespace().collect();
    let sim = Simulator::<Cpu>::from_args(&args, &Default::default()).unwrap();
    let mut at = sim.params.clone();
    for (name, v) in values {
        let v = v.clone();
        let n = v.len();
        let leaf = Tensor::<Cpu, 1>::from_data(TensorData::new(v, [n]), &Default::default()).require_grad();
        at = at.replace(name, leaf).unwrap();
    }
    (sim, at)
}

type Cpu = Autodiff<burn::backend::NdArray<f64>>;

/// Σ w·I on the CPU, with [`weighted_sum`]'s weights as the device holds them (f32).
fn weighted_sum_cpu(image: Tensor<Cpu, 2>) -> Tensor<Cpu, 1> {
    let [s, f] = image.dims();
    let w: Vec<f64> = (0..s * f)
        .map(|i| (1.0 + ((i * 7919) % 13) as f64 / 13.0) as f32 as f64)
        .collect();
    (image * Tensor::<Cpu, 2>::from_data(TensorData::new(w, [s, f]), &Default::default())).sum()
}

/// The kernel's backward pass (the vector–Jacobian kernel, and for the tricubic grid's values
/// the scatter kernel): its gradients equal the CPU `Simulator`'s (f64) at the same moved
/// parameters and weights, to f32 precision.
#[test]
fn simulator_gradients_through_the_kernel_equal_the_cpu_tensor_stages() {
    if !common::engine_available(FUSED) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in configurations(&common::small_hkl_grid(dir.path())) {
        let (sim, _) = kernel_and_stages(&flags);
        let params = moved(&sim.params);
        let grads = weighted_sum(sim.forward_with(&params)).backward();
        let (cpu, at) = on_cpu(&flags, &params.values().unwrap());
        let cpu_grads = weighted_sum_cpu(cpu.forward_with(&at)).backward();
        // the one-readback read of every gradient: the per-tensor reads below, in order
        let mut read = params.gradients(&grads).unwrap().into_iter();
        let mut reached = 0;
        for ((param, k), (_, c)) in params.tensors().into_iter().zip(at.tensors()) {
            let (Some(k), Some(c)) = (k, c) else { continue };
            match (k.grad(&grads).map(host), c.grad(&cpu_grads).map(host)) {
                (Some(k), Some(c)) => {
                    assert_eq!(
                        read.next(),
                        Some((param, k.clone())),
                        "{name}: Params::gradients of {param}"
                    );
                    reached += c.iter().any(|&g| g != 0.0) as usize;
                    common::assert_gradients_agree(&format!("{name}: ∂L/∂{param}"), &k, &c);
                }
                (None, None) => {}
                (k, c) => panic!("{name}: ∂L/∂{param} reached one path only: kernel {k:?}, cpu {c:?}"),
            }
        }
        assert_eq!(
            read.next(),
            None,
            "{name}: Params::gradients read a gradient the tensors lack"
        );
        assert!(reached >= 10, "{name}: only {reached} parameters have a gradient");
    }
}

const CHILD_PIXELS: &str = "NANOBRAGG_TEST_KERNEL_AUTODIFF_PIXELS";
const CHILD_STAGES: &str = "NANOBRAGG_TEST_KERNEL_AUTODIFF_STAGES";

/// In a child process: one forward pass of a simulator on `Autodiff<Wgpu>`.
fn forward_in_child() {
    let pixels = std::env::var(CHILD_PIXELS).unwrap();
    let flags = format!(
        "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1 \
         -detpixels {pixels}"
    );
    let (sim, stages) = kernel_and_stages(&flags);
    let sim = if std::env::var(CHILD_STAGES).is_ok_and(|v| v == "1") {
        stages
    } else {
        sim
    };
    let image = host(sim.forward());
    assert!(image.iter().any(|&v| v > 0.0));
}

/// The kernels a child process launches running this module's test `test` with `envs` set
/// (where `log` is the profile log); `None` in the child itself, after it ran `body`.
///
/// Each count is of a child process whose twin ran just before without the profiler: cubecl
/// autotunes matmuls and reductions the first time a process meets a shape, launching every
/// candidate, and keeps the choices in its on-disk cache (`target/autotune`), which the twin
/// fills. The profile log is written at exit, so the steady state cannot be counted within one
/// process. The count includes the child's whole process: the simulator's set-up uploads its
/// parameters (no launch), and whatever the body runs.
fn launches_in_child(test: &str, envs: &[(&str, &OsStr)], log: &Path, body: fn()) -> Option<usize> {
    let profiled = [
        ("CUBECL_DEBUG_OPTION", "profile".as_ref()),
        ("CUBECL_DEBUG_LOG", log.as_os_str()),
    ];
    for envs in [envs.to_vec(), [envs, profiled.as_slice()].concat()] {
        if common::own_process_with(module_path!(), test, &envs) {
            body();
            return None;
        }
    }
    Some(common::launches_in_profile_log(&std::fs::read_to_string(log).unwrap()))
}

#[test]
fn simulator_forward_launches_do_not_grow_with_the_image() {
    let in_child = std::env::var(CHILD_PIXELS).is_ok();
    if !in_child && !common::engine_available(FUSED) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut launches = Vec::new();
    for (pixels, stages) in [("32", "0"), ("256", "0"), ("256", "1")] {
        let log = dir.path().join(format!("{pixels}_{stages}.log"));
        let child = [(CHILD_PIXELS, pixels.as_ref()), (CHILD_STAGES, stages.as_ref())];
        let test = "simulator_forward_launches_do_not_grow_with_the_image";
        match launches_in_child(test, &child, &log, forward_in_child) {
            Some(n) => launches.push(n),
            None => return,
        }
    }
    println!(
        "forward launches: kernel 32² {}, kernel 256² {}, tensor stages 256² {}",
        launches[0], launches[1], launches[2]
    );
    // The kernel's forward pass evaluates the scene on the host: the device runs the render
    // and its statistics, whatever the image. The tensor stages launch per chunk (3459 at 256²
    // on llvmpipe).
    assert!(
        launches[0] <= FORWARD_LAUNCHES && launches[1] <= FORWARD_LAUNCHES,
        "the kernel's forward pass launches {} kernels at 32², {} at 256² (at most {FORWARD_LAUNCHES})",
        launches[0],
        launches[1]
    );
    assert!(
        2 * launches[1] < launches[2],
        "the kernel's forward pass launches {} kernels, the tensor stages {}",
        launches[1],
        launches[2]
    );
}

/// The most kernels a child's forward pass may launch: the render and its statistics (2), and
/// a few more to spare for the backend's own copies.
const FORWARD_LAUNCHES: usize = 6;

/// The most kernels a child's gradient step may launch: the forward pass (render and
/// statistics), the loss Σ w·I and its backward pass, and the image's own backward step (the
/// vector–Jacobian kernel and the sum of its partials).
const STEP_LAUNCHES: usize = 12;

const CHILD_HEAVY: &str = "NANOBRAGG_TEST_KERNEL_AUTODIFF_HEAVY";

/// In a child process: one gradient step of a simulator on `Autodiff<Wgpu>` (forward, Σ w·I,
/// backward, every parameter's gradient read back), light, heavy (mosaic domains, φ steps,
/// oversampling) or the tricubic grid that falls back part-way.
fn gradient_step_in_child() {
    let pixels = std::env::var(CHILD_PIXELS).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let flags = match std::env::var(CHILD_HEAVY).unwrap_or_default().as_str() {
        "tricubic" => configurations(&common::small_hkl_grid(dir.path()))[0].1.clone(),
        heavy => {
            let sampling = match heavy {
                "1" => "-mosaic 0.5 -mosaic_dom 10 -phisteps 5 -osc 0.5 -oversample 2",
                _ => "-oversample 1",
            };
            format!(
                "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.3 -N 6 -distance 90 \
                 -pixel 0.15 -detector_rotx 1 -twotheta 2 -detpixels {pixels} {sampling}"
            )
        }
    };
    let (sim, _) = kernel_and_stages(&flags);
    let grads = weighted_sum(sim.forward()).backward();
    // every gradient read back in one wait, as a refinement step would
    let gradients = sim.params.gradients(&grads).unwrap();
    let reached = gradients.iter().filter(|(_, g)| g.iter().any(|&v| v != 0.0)).count();
    assert!(reached >= 10, "only {reached} parameters have a gradient");
}

/// A gradient step launches a handful of kernels in steady state, whatever the image's size,
/// mosaic domains and φ steps: the scene is evaluated on the host, the image's
/// vector–Jacobian product by its kernel. With a tricubic grid that falls back part-way, the
/// backward step takes C's fall-back pixel from the forward pass's render (no second render),
/// and the grid's scatter adds one launch.
#[test]
fn simulator_gradient_step_launches_a_handful_of_kernels() {
    let in_child = std::env::var(CHILD_PIXELS).is_ok();
    if !in_child && !common::engine_available(FUSED) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut launches = Vec::new();
    for (pixels, heavy) in [("32", "0"), ("256", "0"), ("32", "1"), ("24", "tricubic")] {
        let log = dir.path().join(format!("{pixels}_{heavy}.log"));
        let child = [(CHILD_PIXELS, pixels.as_ref()), (CHILD_HEAVY, heavy.as_ref())];
        let test = "simulator_gradient_step_launches_a_handful_of_kernels";
        match launches_in_child(test, &child, &log, gradient_step_in_child) {
            Some(n) => launches.push(n),
            None => return,
        }
        // the backward step ran the vector–Jacobian kernel, not the host's tensor stages
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains("pixel_vjp") && text.contains("sum_partials"),
            "{pixels}² (heavy {heavy}): the gradient step did not launch the vector–Jacobian kernel"
        );
        if heavy == "tricubic" {
            // the forward pass renders twice (C's fall-back: the pixels from the switch on
            // again); the backward step takes the switch from it and renders nothing
            let renders = text
                .lines()
                .filter(|l| l.starts_with("| ") && l.contains("| RenderPixels |"))
                .count();
            assert_eq!(renders, 2, "the tricubic gradient step rendered {renders} times");
            assert!(text.contains("PixelGridVjp"), "the grid's scatter did not run");
        }
    }
    println!(
        "gradient-step launches: light 32² {}, light 256² {}, heavy 32² {}, tricubic falling back {}",
        launches[0], launches[1], launches[2], launches[3]
    );
    // the tricubic step adds the fall-back's second render and statistics, and the scatter
    let most = [STEP_LAUNCHES, STEP_LAUNCHES, STEP_LAUNCHES, STEP_LAUNCHES + 3];
    assert!(
        launches.iter().zip(most).all(|(&n, most)| n <= most),
        "a gradient step launches {launches:?} kernels (at most {most:?})"
    );
}

/// A gradient step at 512² on several workers returns, with the CPU's gradients. Its
/// simulator takes its gradients by the tensor stages (`RenderOptions::adjoint_kernel` off),
/// so its backward pass runs them on the host on worker threads (the process's count:
/// `OMP_NUM_THREADS`, else the cores; 2 in CI), each differentiating a graph of its own while
/// the outer backward pass is still running: with the outer pass holding its graph's lock
/// through its steps (burn-autodiff 0.21.0), a worker could wait on that lock forever; the
/// vendored burn-autodiff runs steps with no lock held (`vendor/README.md`). A watchdog turns
/// a hang into a failure.
#[test]
fn simulator_gradient_step_at_512_on_several_workers_returns_the_cpu_gradients() {
    if !common::engine_available(FUSED) {
        return;
    }
    const LIMIT: std::time::Duration = std::time::Duration::from_secs(1200);
    let flags = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.3 -N 6 -distance 90 \
                 -pixel 0.15 -detector_rotx 1 -twotheta 2 -oversample 1 -mosaic 0.3 -mosaic_dom 5 -detpixels 512";
    let args: Vec<&str> = flags.split_whitespace().collect();
    let (done, finished) = std::sync::mpsc::channel();
    let args_wgpu: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        let args: Vec<&str> = args_wgpu.iter().map(String::as_str).collect();
        let sim = Simulator::<Ad>::from_args(&args, &WgpuDevice::default()).unwrap();
        let options = RenderOptions {
            adjoint_kernel: false,
            ..sim.setup().options.clone()
        };
        let sim = sim.with_options(options);
        let grads = weighted_sum(sim.forward()).backward();
        let values = sim.params.values().unwrap();
        let by_name: Vec<(&str, Option<Vec<f64>>)> = sim
            .params
            .tensors()
            .into_iter()
            .filter_map(|(n, t)| t.map(|t| (n, t.grad(&grads).map(host))))
            .collect();
        done.send((by_name, values)).ok();
    });
    let started = std::time::Instant::now();
    let (on_wgpu, values) = finished
        .recv_timeout(LIMIT)
        .unwrap_or_else(|_| panic!("the 512² gradient step on wgpu did not return in {LIMIT:?}"));
    println!("512² gradient step on wgpu: {:.1?}", started.elapsed());

    // at the wgpu parameters' values (f32): the gradient of a sharp spot moves with them
    let (cpu, at) = on_cpu(flags, &values);
    let grads = weighted_sum_cpu(cpu.forward_with(&at)).backward();
    let mut reached = 0;
    for ((param, k), (_, t)) in on_wgpu
        .iter()
        .zip(at.tensors().into_iter().filter(|(_, t)| t.is_some()))
    {
        let c = t.unwrap().grad(&grads).map(host);
        match (k, c) {
            (Some(k), Some(c)) => {
                reached += c.iter().any(|&g| g != 0.0) as usize;
                common::assert_gradients_agree(&format!("∂L/∂{param}"), k, &c);
            }
            (None, None) => {}
            (k, c) => panic!("∂L/∂{param} reached one engine only: wgpu {k:?}, cpu {c:?}"),
        }
    }
    assert!(reached >= 10, "only {reached} parameters have a gradient");
}
