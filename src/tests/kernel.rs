//! The one-kernel render (`src/kernel/`, issue 23) held against C, against the tensor stages
//! and against itself:
//!
//! * every golden case through the kernel (fusion's custom op and the cube backend directly)
//!   against C's image and against the tensor stages on the same wgpu device;
//! * random configurations against the cpu f64 engine (a property test);
//! * the f32 stress cases of `fixtures/kernel_stress.txt` against the cpu f64 engine;
//! * C's tricubic fall-back, batched shots, and the kernel launches of a whole process.
//!
//! On llvmpipe without a GPU (CI); skips with a message when no wgpu adapter exists, unless
//! `NANOBRAGG_REQUIRE_WGPU=1`.

use super::common;

use nanobragg::engine::render::render;
use nanobragg::engine::{BackendTask, Engine, Precision};
use nanobragg::experiment::Experiment;
use nanobragg::kernel;
use nanobragg::render::{Image, RenderOptions};
use nanobragg::scene::Scene;
use nanobragg::PixelKernel;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const FUSED: Engine = Engine::Wgpu { fusion: true };
const UNFUSED: Engine = Engine::Wgpu { fusion: false };
/// The tensor stages on the CPU in f64, the reference the kernels are held against.
const CPU: Engine = Engine::Cpu {
    precision: Precision::F64,
    fusion: false,
};

/// The kernel's images of one experiment on an engine's backend (`None`: the backend has no
/// kernel), and, with `stages`, the tensor stages' image on the same backend.
struct KernelAndStages<'a> {
    exp: &'a Experiment,
    engine: Engine,
    stages: bool,
}

impl BackendTask for KernelAndStages<'_> {
    type Output = (Option<Image>, Option<Image>);
    fn run<B: PixelKernel>(self, device: &B::Device) -> nanobragg::Result<Self::Output> {
        let by_kernel =
            kernel::launch::render::<B>(self.exp, &Scene::new(self.exp), device)?.map(|mut v| v.swap_remove(0));
        if !self.stages {
            return Ok((by_kernel, None));
        }
        let stages = RenderOptions {
            pixel_kernel: false,
            ..self.engine.options(&RenderOptions::default())
        };
        Ok((by_kernel, Some(render::<B>(self.exp, &stages, device)?)))
    }
}

fn kernel_and_stages(exp: &Experiment, engine: Engine) -> (Image, Image) {
    let (k, s) = engine
        .run(KernelAndStages {
            exp,
            engine,
            stages: true,
        })
        .unwrap();
    (k.expect("the wgpu backends have the kernel"), s.unwrap())
}

/// The kernel's image of `exp` on `engine`, without the tensor stages'.
fn kernel_only(exp: &Experiment, engine: Engine) -> Image {
    let (k, _) = engine
        .run(KernelAndStages {
            exp,
            engine,
            stages: false,
        })
        .unwrap();
    k.expect("the wgpu backends have the kernel")
}

/// max |a − b| / max |b|.
fn relative_max_difference(a: &[f32], b: &[f32]) -> f64 {
    let scale = b.iter().map(|v| v.abs() as f64).fold(0.0, f64::max).max(1e-30);
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0.0, f64::max)
        / scale
}

fn experiment_of(args: &[String]) -> Experiment {
    common::experiment(args, None).1
}

#[test]
fn golden_cases_through_the_kernel_match_c_and_the_tensor_stages() {
    let Some(dir) = common::golden_dir() else { return };
    if !common::engine_available(FUSED) {
        return;
    }
    let mut failures = Vec::new();
    for case in common::cases(&dir) {
        let exp = nanobragg::experiment::args::parse_args(&case.args)
            .map(|p| match p {
                nanobragg::experiment::args::Parsed::Run(mut cfg, _) => {
                    if cfg.crystal.hkl == nanobragg::config::HklSource::FdumpIfPresent {
                        cfg.crystal.hkl = nanobragg::config::HklSource::None;
                    }
                    Experiment::new(&cfg).unwrap()
                }
                _ => panic!("{}: no run", case.name),
            })
            .unwrap();
        let (fused, stages) = kernel_and_stages(&exp, FUSED);
        let unfused = kernel_only(&exp, UNFUSED);
        let corr = common::correlation(&fused.data, &case.image);
        let ratio = common::sum_ratio(&fused.data, &case.image);
        let vs_stages = relative_max_difference(&fused.data, &stages.data);
        let vs_c = relative_max_difference(&fused.data, &case.image);
        let stages_vs_c = relative_max_difference(&stages.data, &case.image);
        println!(
            "{:<34} corr {corr:.8} sum {ratio:.6} kernel−stages {vs_stages:.1e} kernel−C {vs_c:.1e} stages−C {stages_vs_c:.1e}",
            case.name
        );
        if !(corr >= 0.999 && (ratio - 1.0).abs() <= 1e-2) {
            failures.push(format!("{}: corr {corr}, sum ratio {ratio}", case.name));
        }
        // the tensor stages in f32 within 1e-4 of the maximum; where they are themselves
        // further from C than that (the running products of -oversample_* in f32), the kernel
        // must be within 1e-4 of C instead
        if !(vs_stages <= 1e-4 || (vs_c <= 1e-4 && vs_c < stages_vs_c)) {
            failures.push(format!(
                "{}: kernel−stages {vs_stages:.2e}, kernel−C {vs_c:.2e}, stages−C {stages_vs_c:.2e}",
                case.name
            ));
        }
        // fusion's custom op runs the cube backend's kernel: the same image, bit for bit
        if fused.data != unfused.data || fused.statistics != unfused.statistics {
            failures.push(format!("{}: fused and unfused kernels differ", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The kernel's image of `exp` on the fused engine against the cpu f64 engine: finite, corr ≥
/// `corr_min`, sums within 1 %; also the fall-back flag and Σω.
fn assert_matches_cpu(name: &str, exp: &Experiment, corr_min: f64) -> Result<(), String> {
    let kernel = kernel_only(exp, FUSED);
    let reference = CPU.render(exp, &RenderOptions::default()).unwrap();
    let finite = kernel.data.iter().all(|v| v.is_finite());
    let corr = common::correlation(&kernel.data, &reference.data);
    let ratio = common::sum_ratio(&kernel.data, &reference.data);
    let omega = kernel.omega_sum / reference.omega_sum;
    println!(
        "{name:<20} finite {finite} corr {corr:.8} sum {ratio:.6} Σω {omega:.7} fell back {}",
        kernel.interpolation_fell_back
    );
    let blank = reference.data.iter().all(|&v| v == 0.0);
    if !finite
        || blank
        || corr.is_nan()
        || corr < corr_min
        || (ratio - 1.0).abs() > 1e-2
        || (omega - 1.0).abs() > 1e-5
        || kernel.interpolation_fell_back != reference.interpolation_fell_back
    {
        return Err(format!(
            "{name}: finite {finite}, blank reference {blank}, corr {corr}, sum ratio {ratio}, Σω ratio {omega}, \
             fell back {} vs {}",
            kernel.interpolation_fell_back, reference.interpolation_fell_back
        ));
    }
    Ok(())
}

#[test]
fn f32_stress_cases_are_finite_and_match_cpu_f64() {
    if !common::engine_available(FUSED) {
        return;
    }
    common::f64_device();
    let listing = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/kernel_stress.txt")).unwrap();
    let mut failures = Vec::new();
    for line in listing.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let (name, flags) = line.split_once(':').unwrap();
        let args: Vec<String> = flags.split_whitespace().map(String::from).collect();
        if let Err(e) = assert_matches_cpu(name, &experiment_of(&args), 0.999) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tricubic_fall_back_switches_at_cs_pixel() {
    if !common::engine_available(FUSED) {
        return;
    }
    common::f64_device();
    let dir = tempfile::tempdir().unwrap();
    let hkl = common::small_hkl_grid(dir.path());
    // the direct beam at the first pixel: C's loop starts inside the grid and leaves it a few
    // pixels along the first row
    let flags = "-cell 60 60 60 90 90 90 -lambda 1.5 -N 2 -distance 120 -pixel 0.4 -detpixels 48 -interpolate \
                 -oversample 1 -mosflm -Xbeam 0.2 -Ybeam 0.2";
    let args: Vec<&str> = flags.split_whitespace().collect();
    let exp = common::experiment(&args, Some(&hkl)).1;
    assert_matches_cpu("tricubic fall-back", &exp, 0.9999).unwrap();
    let kernel = kernel_only(&exp, FUSED);
    let reference = CPU.render(&exp, &RenderOptions::default()).unwrap();
    assert!(
        reference.interpolation_fell_back,
        "the case is meant to fall back part-way"
    );
    // interpolated and nearest-neighbour pixels differ by far more than f32 rounding: a switch
    // at another pixel would show here
    let worst = relative_max_difference(&kernel.data, &reference.data);
    assert!(worst <= 1e-4, "max |kernel − cpu| / max = {worst:e}");
}

#[test]
fn batched_shots_through_the_kernel_equal_single_renders() {
    if !common::engine_available(FUSED) {
        return;
    }
    let base = "-default_F 100 -cell 70 80 90 80 85 95 -lambda 1.5 -N 4 -distance 80 -pixel 0.4 -detpixels 32 \
                -mosaic 0.5 -mosaic_dom 3 -osc 2 -phisteps 2 -oversample 2 -hdivrange 0.3 -hdivsteps 2";
    let shots: Vec<Experiment> = ["-misset 10 20 30", "-misset -40 5 12 -fluence 3e23", "-misset 3 -60 80"]
        .iter()
        .map(|s| common::setup(&format!("{base} {s} -mosaic_seed 5")).1)
        .collect();
    assert!(shots.iter().all(|s| shots[0].batches_with(s)));
    let batch = FUSED.render_batch(&shots, &RenderOptions::default()).unwrap();
    for (i, (b, exp)) in batch.iter().zip(&shots).enumerate() {
        let single = FUSED.render(exp, &RenderOptions::default()).unwrap();
        assert!(single.data.iter().any(|&v| v > 0.0), "shot {i} is blank");
        assert_eq!(b.data, single.data, "shot {i}: pixels");
        assert_eq!(b.statistics, single.statistics, "shot {i}: statistics");
    }
    assert_ne!(batch[0].data, batch[2].data, "the shots differ");
}

/// C flags of a random configuration ([`common::pixel_loop_configuration`]), N whole from 3 to 8.
fn configuration() -> impl Strategy<Value = String> {
    common::pixel_loop_configuration((3.0f64..8.0).prop_map(|n| format!("{n:.0}")), 1..4)
}

#[test]
fn random_configurations_through_the_kernel_match_cpu_f64() {
    if !common::engine_available(FUSED) {
        return;
    }
    common::f64_device();
    // a fixed seed: the same 12 configurations every run
    let config = Config {
        cases: 12,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    runner
        .run(&configuration(), |flags| {
            let (_, exp) = common::setup(&flags);
            assert_matches_cpu("random", &exp, 0.999).map_err(|e| TestCaseError::fail(format!("{flags}: {e}")))
        })
        .unwrap();
}
