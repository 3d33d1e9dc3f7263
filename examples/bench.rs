//! Benchmark command: cold and warm renders per engine, forward and forward+backward, against
//! the C program when `NB_C_BIN` names it. Writes JSON and a markdown table.
//!
//! ```text
//! cargo build --release            # the nanobragg binary, timed as a process beside C
//! NB_C_BIN=/path/to/nanoBragg_omp cargo run --release --example bench -- \
//!     --sizes 512,1024 --engines cpu,cpu-f32 --configs light,heavy --reps 3 --out target/bench
//! ```
//!
//! Options: `--sizes` (detector edge, pixels; default 512,1024), `--engines` (cpu, cpu-f32,
//! cpu-nofusion, cpu-f32-nofusion, wgpu, wgpu-nofusion; default cpu),
//! `--configs` (light, heavy; default both), `--modes` (fwd, fwdbwd, deriv, sim, sim-stages,
//! bg; default fwd and fwdbwd: `fwdbwd` is the engine's vector–Jacobian product
//! (`Engine::image_vjp`), `deriv` its derivative images of distance, Xbeam, misset_x and cell_a
//! (`Engine::derivatives`, K = 4), `sim` a
//! `Simulator<Autodiff<B>>` gradient step (forward pass, the backward pass of its sum, every
//! gradient read back; the simulator is built in the first step and kept), by kernel where the backend has one, `sim-stages` the same with the
//! tensor stages, `bg` the render with the amorphous background of
//! `-stol fixtures/stol/water.stol` as the `nanobragg` program renders it
//! (`Engine::render_with_background`; the table is read and the background's scene set up
//! once, before the first render, as the experiment is, and timed apart as `table_s`): its
//! warm time less mode `fwd`'s, over `fwd`'s, is the background's share of a render),
//! `--grad-sizes` (largest size with a backward mode; default 512), `--reps` (renders per case, the
//! first is the cold one; default 3), `--threads` (worker threads, and OMP_NUM_THREADS of C;
//! default: available cores), `--out` (directory of `bench.json` and `bench.md`).
//!
//! Every (engine, config, size, mode) case runs in a child process of its own (the bench
//! re-executes itself with `--child`): the float dtype of a burn device is fixed per process,
//! and a case's peak memory is then its process's peak RSS. "cold" is the first render in a
//! fresh process (backend start-up, scene upload, first allocations), "warm" the best of the
//! following ones. C and the `nanobragg` binary are timed as whole processes with the same
//! flags (`-floatfile` to a temporary directory), interleaved, first run = cold, best of the
//! rest = warm; `C/ours` divides C's warm process time by ours. For the wgpu engines a further
//! child counts the kernel launches of a cold and a warm render (mode `fwd`), product (`fwdbwd`),
//! set of derivative images (`deriv`) or gradient step (mode `sim`) from cubecl's profile log (`CUBECL_DEBUG_OPTION=profile`), the GPU cost one
//! can measure without a GPU.

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::DType;
use burn::tensor::ElementConversion;
use nanobragg::config::{AmorphousConfig, StolUnits};
use nanobragg::engine::{Engine, Precision};
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::render::amorphous::BackgroundScene;
use nanobragg::{Experiment, PixelKernel, RenderOptions, SimConfig, Simulator};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const LIGHT: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
const HEAVY: &str = "-mosaic 0.5 -mosaic_dom 10 -phisteps 5 -osc 0.5 -oversample 2";

/// The derivative images of mode `deriv` (K = 4).
const DERIVATIVES: [&str; 4] = ["distance", "Xbeam", "misset_x", "cell_a"];

/// The engines: name → (extra CLI flags of the `nanobragg` binary, runner in this process).
/// Each runs with its [`Engine::options`] (wgpu: one worker, large chunks), as the binary does.
fn engine(name: &str) -> Option<(&'static str, Runner)> {
    const CPU: Engine = Engine::Cpu {
        precision: Precision::F64,
        fusion: true,
    };
    const CPU_F32: Engine = Engine::Cpu {
        precision: Precision::F32,
        fusion: true,
    };
    const CPU_STAGES: Engine = Engine::Cpu {
        precision: Precision::F64,
        fusion: false,
    };
    const CPU_F32_STAGES: Engine = Engine::Cpu {
        precision: Precision::F32,
        fusion: false,
    };
    Some(match name {
        "cpu" => ("", |job| {
            run::<NdArray<f64>>(job, &CPU, &NdArrayDevice::Cpu, DType::F64)
        }),
        "cpu-f32" => ("-precision f32", |job| {
            run::<NdArray<f32>>(job, &CPU_F32, &NdArrayDevice::Cpu, DType::F32)
        }),
        "cpu-nofusion" => ("-fusion off", |job| {
            run::<NdArray<f64>>(job, &CPU_STAGES, &NdArrayDevice::Cpu, DType::F64)
        }),
        "cpu-f32-nofusion" => ("-precision f32 -fusion off", |job| {
            run::<NdArray<f32>>(job, &CPU_F32_STAGES, &NdArrayDevice::Cpu, DType::F32)
        }),
        #[cfg(feature = "gpu")]
        "wgpu" => ("-engine wgpu -fusion on", |job| {
            let e = Engine::Wgpu { fusion: true };
            e.probe().map_err(|e| e.to_string())?;
            run::<nanobragg::engine::WgpuFused>(job, &e, &Default::default(), DType::F32)
        }),
        #[cfg(feature = "gpu")]
        "wgpu-nofusion" => ("-engine wgpu -fusion off", |job| {
            let e = Engine::Wgpu { fusion: false };
            e.probe().map_err(|e| e.to_string())?;
            run::<nanobragg::engine::WgpuUnfused>(job, &e, &Default::default(), DType::F32)
        }),
        _ => return None,
    })
}

type Runner = fn(&Job) -> Result<Value, String>;

/// One case, run in a child process.
struct Job {
    cfg: SimConfig,
    exp: Experiment,
    mode: String,
    reps: usize,
    threads: usize,
}

/// The simulator of a gradient mode: by kernel (`kernel`, where the backend has one) or by
/// the tensor stages.
fn simulator<B: PixelKernel>(job: &Job, kernel: bool, device: &B::Device) -> Result<Simulator<Autodiff<B>>, String> {
    let sim = Simulator::<Autodiff<B>>::new(&job.cfg, device).map_err(|e| e.to_string())?;
    let options = RenderOptions {
        pixel_kernel: kernel,
        threads: job.threads,
        ..sim.setup().options.clone()
    };
    Ok(sim.with_options(options))
}

/// One gradient step of `sim`: forward pass, the backward pass of its sum, every gradient read
/// back, as a refinement step would; the image's sum.
fn simulator_step<B: PixelKernel>(sim: &Simulator<Autodiff<B>>) -> Result<f64, String> {
    let total = sim.forward().sum();
    let grads = total.backward();
    let gradients = sim.params.gradients(&grads).map_err(|e| e.to_string())?;
    if !gradients.iter().any(|(name, _)| *name == "distance") {
        return Err("no gradient reached the distance".into());
    }
    Ok(total.into_scalar().elem::<f64>())
}

fn run<B: nanobragg::PixelKernel>(
    job: &Job,
    engine: &Engine,
    device: &B::Device,
    dtype: DType,
) -> Result<Value, String> {
    burn::tensor::set_default_dtypes::<B>(device, dtype, DType::I64).map_err(|e| format!("{e:?}"))?;
    nanobragg::engine::tune_process();
    let opts = engine.options(&RenderOptions {
        threads: job.threads,
        ..RenderOptions::default()
    });
    let mut times = Vec::new();
    let mut launches = Vec::new();
    let mut total = 0.0;
    // the simulator of the gradient modes, built in the first (cold) step and kept, as a
    // refinement loop keeps it
    let mut sim = None;
    // the background of mode `bg`, read and set up once, as a run of renders keeps it, and
    // the seconds that took
    let (background, table_s) = match job.mode.as_str() {
        "bg" => {
            let t = Instant::now();
            let background = water_background(job)?;
            (Some(background), Some(t.elapsed().as_secs_f64()))
        }
        _ => (None, None),
    };
    for _ in 0..job.reps {
        let t = Instant::now();
        let image = match job.mode.as_str() {
            "fwdbwd" => {
                engine
                    .image_vjp(&job.cfg, &job.exp, None, &opts)
                    .map_err(|e| e.to_string())?
                    .0
            }
            "deriv" => {
                let images = engine
                    .derivatives(&job.cfg, &job.exp, &DERIVATIVES, &opts)
                    .map_err(|e| e.to_string())?;
                times.push(t.elapsed().as_secs_f64());
                total = images.iter().flat_map(|d| &d.data).map(|&v| v as f64).sum();
                if let Some(log) = std::env::var_os(COUNT_LAUNCHES) {
                    launches.push(kernel_launches(Path::new(&log)));
                }
                continue;
            }
            "sim" | "sim-stages" => {
                if sim.is_none() {
                    sim = Some(simulator::<B>(job, job.mode == "sim", device)?);
                }
                total = simulator_step::<B>(sim.as_ref().expect("built above"))?;
                times.push(t.elapsed().as_secs_f64());
                if let Some(log) = std::env::var_os(COUNT_LAUNCHES) {
                    launches.push(kernel_launches(Path::new(&log)));
                }
                continue;
            }
            "bg" => {
                let background = background.as_ref().expect("set up above");
                engine
                    .render_with_background(&job.exp, &opts, background)
                    .map_err(|e| e.to_string())?
            }
            _ => nanobragg::render::<B>(&job.exp, &opts, device).map_err(|e| e.to_string())?,
        };
        times.push(t.elapsed().as_secs_f64());
        total = image.data.iter().map(|&v| v as f64).sum::<f64>();
        if let Some(log) = std::env::var_os(COUNT_LAUNCHES) {
            launches.push(kernel_launches(Path::new(&log)));
        }
    }
    // launches of each render and their summed kernel times (ms): the log's new lines
    let mut seen = 0;
    let (launches, kernel_ms): (Vec<usize>, Vec<f64>) = launches
        .iter()
        .map(|all: &Vec<f64>| {
            let new = &all[seen.min(all.len())..];
            seen = all.len();
            (new.len(), new.iter().sum::<f64>() * 1e3)
        })
        .unzip();
    Ok(json!({
        "cold_s": times[0],
        "warm_s": best(&times[1..]),
        "times_s": times,
        "peak_mb": peak_rss_mb(),
        "image_sum": total,
        "launches": launches,
        "kernel_ms": kernel_ms,
        "table_s": table_s,
    }))
}

/// Mode `bg`: the amorphous background of `fixtures/stol/water.stol` as `nanobragg -stol`
/// adds it to the job's image (the table read and the scene set up here, once per run of
/// renders; the background rendered with each image by `Engine::render_with_background`).
fn water_background(job: &Job) -> Result<BackgroundScene, String> {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/stol/water.stol");
    let amorphous = AmorphousConfig {
        table: Some((table, StolUnits::Stol)),
        ..AmorphousConfig::default()
    };
    BackgroundScene::of_experiment(&job.exp, &amorphous)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "no background without a table".to_string())
}

/// Environment variable naming cubecl's profile log (`CUBECL_DEBUG_LOG`) in a child that counts
/// kernel launches per render (`CUBECL_DEBUG_OPTION=profile` syncs after every launch, so
/// those children are not timed).
const COUNT_LAUNCHES: &str = "NB_COUNT_LAUNCHES";

/// The kernel launches logged so far, as the time each took (s): the profile log's lines
/// `| <time> | <kernel> | …`.
fn kernel_launches(log: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("| ")?.split(' ').next().and_then(duration_s))
        .collect()
}

/// `746.88565ms`, `12.5µs`, `3ns`, `1.2s` in seconds.
fn duration_s(t: &str) -> Option<f64> {
    let (number, scale) = [("ms", 1e-3), ("µs", 1e-6), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)]
        .iter()
        .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n, *scale)))?;
    number.parse::<f64>().ok().map(|v| v * scale)
}

/// Kernel launches per render (mode `fwd`) or gradient step (mode `sim`) of a wgpu engine,
/// counted in a child of its own with cubecl's profiler on: `{"launches": [cold, warm],
/// "kernel_ms": [cold, warm]}` (the kernels' own times as the profiler measured them,
/// synchronised launch by launch).
fn count_launches(me: &Path, engine: &str, config: &str, size: usize, mode: &str) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let log = dir.path().join("launches.log");
    let v = child_case(
        Command::new(me)
            .args(["--child", engine, config, &size.to_string(), mode, "2", "1"])
            .env("CUBECL_DEBUG_OPTION", "profile")
            .env("CUBECL_DEBUG_LOG", &log)
            .env(COUNT_LAUNCHES, &log),
        &format!("counting launches of {engine} {config} {size}"),
    )?;
    Ok(json!({"launches": v["launches"], "kernel_ms": v["kernel_ms"]}))
}

/// Run a `--child` case and read the JSON it prints; `what` names it in errors.
fn child_case(cmd: &mut Command, what: &str) -> Result<Value, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("{what} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

fn best(t: &[f64]) -> Option<f64> {
    t.iter().cloned().reduce(f64::min)
}

/// This process's peak resident memory (MB), from /proc (Linux).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn flags(config: &str, size: usize) -> Result<String, String> {
    match config {
        "light" => Ok(format!("{LIGHT} -detpixels {size}")),
        "heavy" => Ok(format!("{LIGHT} {HEAVY} -detpixels {size}")),
        _ => Err(format!("--configs: unknown configuration '{config}' (light, heavy)")),
    }
}

/// Wall time (s) and peak RSS (MB) of one run of a program.
fn time_process(program: &Path, args: &[String], dir: &Path, threads: usize) -> Result<(f64, Option<f64>), String> {
    let t = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("OMP_NUM_THREADS", threads.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let (ok, rss) = wait_with_rss(&mut child)?;
    let wall = t.elapsed().as_secs_f64();
    if !ok {
        return Err(format!("{} {} failed", program.display(), args.join(" ")));
    }
    Ok((wall, rss))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn wait_with_rss(child: &mut std::process::Child) -> Result<(bool, Option<f64>), String> {
    let mut status = 0;
    // SAFETY: plain wait4 on our own child with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    if pid < 0 {
        return Err("wait4 failed".into());
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Ok((ok, Some(usage.ru_maxrss as f64 / 1024.0)))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn wait_with_rss(child: &mut std::process::Child) -> Result<(bool, Option<f64>), String> {
    let s = child.wait().map_err(|e| e.to_string())?;
    Ok((s.success(), None))
}

/// Cold (first) and warm (best of the rest) process times of C and of our binary,
/// interleaved so both see the same machine load.
fn time_processes(
    programs: &[(&str, PathBuf, Vec<String>)],
    reps: usize,
    threads: usize,
) -> Result<Vec<(String, Value)>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); programs.len()];
    let mut peaks: Vec<Option<f64>> = vec![None; programs.len()];
    for _ in 0..reps {
        for (i, (_, program, args)) in programs.iter().enumerate() {
            let (t, rss) = time_process(program, args, dir.path(), threads)?;
            times[i].push(t);
            peaks[i] = match (peaks[i], rss) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    Ok(programs
        .iter()
        .zip(times.iter().zip(peaks))
        .map(|((name, _, _), (t, peak))| {
            (
                name.to_string(),
                json!({"cold_s": t[0], "warm_s": best(&t[1..]), "times_s": t, "peak_mb": peak}),
            )
        })
        .collect())
}

struct Args {
    sizes: Vec<usize>,
    engines: Vec<String>,
    configs: Vec<String>,
    modes: Vec<String>,
    grad_sizes: usize,
    reps: usize,
    threads: usize,
    out: PathBuf,
}

fn list(v: &str) -> Vec<String> {
    v.split(',').filter(|s| !s.is_empty()).map(String::from).collect()
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        sizes: vec![512, 1024],
        engines: vec!["cpu".into()],
        configs: vec!["light".into(), "heavy".into()],
        modes: vec!["fwd".into(), "fwdbwd".into()],
        grad_sizes: 512,
        reps: 3,
        threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        out: PathBuf::from("target/bench"),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag}: missing value"))?;
        let num = |v: &str| v.parse::<usize>().map_err(|_| format!("{flag}: '{v}' is not a count"));
        match flag.as_str() {
            "--sizes" => a.sizes = list(value).iter().map(|v| num(v)).collect::<Result<_, _>>()?,
            "--engines" => a.engines = list(value),
            "--configs" => a.configs = list(value),
            "--modes" => a.modes = list(value),
            "--grad-sizes" => a.grad_sizes = num(value)?,
            "--reps" => a.reps = num(value)?.max(2),
            "--threads" => a.threads = num(value)?.max(1),
            "--out" => a.out = PathBuf::from(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    for e in &a.engines {
        engine(e).ok_or_else(|| {
            format!(
                "--engines: unknown engine '{e}' (cpu, cpu-f32, cpu-nofusion, cpu-f32-nofusion, wgpu, wgpu-nofusion)"
            )
        })?;
    }
    for m in &a.modes {
        if !["fwd", "fwdbwd", "deriv", "sim", "sim-stages", "bg"].contains(&m.as_str()) {
            return Err(format!(
                "--modes: unknown mode '{m}' (fwd, fwdbwd, deriv, sim, sim-stages, bg)"
            ));
        }
    }
    for c in &a.configs {
        flags(c, 1)?;
    }
    Ok(a)
}

fn experiment(config: &str, size: usize) -> Result<(SimConfig, Experiment), String> {
    let f = flags(config, size)?;
    let words: Vec<&str> = f.split_whitespace().collect();
    let Ok(Parsed::Run(cfg, _)) = parse_args(&words) else {
        return Err(format!("bad benchmark flags: {f}"));
    };
    let exp = Experiment::new(&cfg).map_err(|e| e.to_string())?;
    Ok((*cfg, exp))
}

/// `--child ENGINE CONFIG SIZE MODE REPS THREADS`: run one case, print its JSON.
fn child(args: &[String]) -> Result<(), String> {
    let [engine_name, config, size, mode, reps, threads] = args else {
        return Err("--child ENGINE CONFIG SIZE MODE REPS THREADS".into());
    };
    let size: usize = size.parse().map_err(|_| "size")?;
    let (cfg, exp) = experiment(config, size)?;
    let (_, runner) = engine(engine_name).ok_or("engine")?;
    let job = Job {
        cfg,
        exp,
        mode: mode.clone(),
        reps: reps.parse().map_err(|_| "reps")?,
        threads: threads.parse().map_err(|_| "threads")?,
    };
    println!("{}", runner(&job)?);
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cpu}, {cores} cores available, load average at start {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    )
}

fn secs(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |s| format!("{s:.3}"))
}

/// "cold, warm" launch counts, and the warm render's kernel time, of a row that counted them.
fn launches_cell(v: &Value) -> String {
    let list = |key: &str| v[key].as_array().cloned().unwrap_or_default();
    let counts = list("launches")
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    match list("kernel_ms").last().and_then(Value::as_f64) {
        Some(ms) => format!("{counts} | {ms:.3}"),
        None => format!("{counts} | "),
    }
}

fn mb(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |s| format!("{s:.0}"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..])
    } else {
        parse(&args).and_then(|a| bench(&a))
    };
    if let Err(e) = result {
        eprintln!("bench: error: {e}");
        std::process::exit(2);
    }
}

fn bench(a: &Args) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/release/examples/bench → target/release/nanobragg
    let ours_bin = std::env::var_os("NB_BIN").map(PathBuf::from).unwrap_or_else(|| {
        me.parent()
            .and_then(Path::parent)
            .map(|d| d.join("nanobragg"))
            .unwrap_or_default()
    });
    let c_bin = std::env::var_os("NB_C_BIN").map(PathBuf::from);
    if !ours_bin.is_file() {
        eprintln!(
            "note: {} not found (cargo build --release): our process times are skipped",
            ours_bin.display()
        );
    }
    let machine = machine();
    let mut rows: Vec<Value> = Vec::new();
    for config in &a.configs {
        for &size in &a.sizes {
            let f = flags(config, size)?;
            let base: Vec<String> = f.split_whitespace().map(String::from).collect();
            // whole processes: C and our binary per engine, same flags
            let mut programs = Vec::new();
            if let Some(c) = &c_bin {
                let mut args = base.clone();
                args.extend(["-floatfile".into(), "c.bin".into()]);
                programs.push(("C", c.clone(), args));
            }
            if ours_bin.is_file() {
                for e in &a.engines {
                    let (cli, _) = engine(e).expect("checked");
                    let mut args = base.clone();
                    args.extend(cli.split_whitespace().map(String::from));
                    args.extend(["-floatfile".into(), "ours.bin".into()]);
                    let name: &str = e.as_str();
                    programs.push((name, ours_bin.clone(), args));
                }
            }
            let processes = time_processes(&programs, a.reps, a.threads)?;
            let c_warm = processes
                .iter()
                .find(|(n, _)| n == "C")
                .and_then(|(_, v)| v["warm_s"].as_f64());
            for (name, v) in &processes {
                let ratio = match (c_warm, v["warm_s"].as_f64()) {
                    (Some(c), Some(o)) if name != "C" => json!(c / o),
                    _ => Value::Null,
                };
                let row = json!({"config": config, "size": size, "engine": name, "what": "process",
                    "mode": "fwd", "cold_s": v["cold_s"], "warm_s": v["warm_s"], "times_s": v["times_s"],
                    "peak_mb": v["peak_mb"], "c_over_ours": ratio});
                eprintln!("{row}");
                rows.push(row);
            }
            // in-process renders, one child per case
            for e in &a.engines {
                for mode in &a.modes {
                    if !["fwd", "bg"].contains(&mode.as_str()) && size > a.grad_sizes {
                        continue;
                    }
                    let v = child_case(
                        Command::new(&me)
                            .args(["--child", e, config, &size.to_string(), mode])
                            .args([a.reps.to_string(), a.threads.to_string()]),
                        &format!("case {e} {config} {size} {mode}"),
                    )?;
                    let ratio = match (c_warm, v["warm_s"].as_f64()) {
                        (Some(c), Some(o)) if mode != "bg" => json!(c / o),
                        _ => Value::Null,
                    };
                    let launches = match (e.starts_with("wgpu"), mode.as_str()) {
                        (true, "fwd" | "fwdbwd" | "deriv" | "sim") => count_launches(&me, e, config, size, mode)?,
                        _ => Value::Null,
                    };
                    let row = json!({"config": config, "size": size, "engine": e, "what": "render",
                        "mode": mode, "cold_s": v["cold_s"], "warm_s": v["warm_s"], "times_s": v["times_s"],
                        "peak_mb": v["peak_mb"], "c_over_ours": ratio, "launches": launches, "table_s": v["table_s"]});
                    eprintln!("{row}");
                    rows.push(row);
                }
            }
        }
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let doc = json!({"machine": machine, "threads": a.threads, "reps": a.reps,
        "c_bin": c_bin.map(|p| p.display().to_string()), "rows": rows});
    let json_path = a.out.join("bench.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc).expect("JSON"))
        .map_err(|e| format!("{}: {e}", json_path.display()))?;
    let mut md = format!(
        "Machine: {machine}; {} worker threads (C: OMP_NUM_THREADS={}); {} runs per case.\n\n",
        a.threads, a.threads, a.reps
    );
    md.push_str(
        "| config | size | engine | timed | mode | cold s | warm s | peak MB | C/ours (warm) | launches (cold, warm) | kernel ms (warm) |\n",
    );
    md.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &rows {
        md.push_str(&format!(
            "| {} | {}² | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r["config"].as_str().unwrap_or(""),
            r["size"],
            r["engine"].as_str().unwrap_or(""),
            r["what"].as_str().unwrap_or(""),
            r["mode"].as_str().unwrap_or(""),
            secs(&r["cold_s"]),
            secs(&r["warm_s"]),
            mb(&r["peak_mb"]),
            r["c_over_ours"].as_f64().map_or("".into(), |x| format!("{x:.2}")),
            launches_cell(&r["launches"]),
        ));
    }
    let md_path = a.out.join("bench.md");
    std::fs::write(&md_path, &md).map_err(|e| format!("{}: {e}", md_path.display()))?;
    println!("{md}");
    eprintln!("wrote {} and {}", json_path.display(), md_path.display());
    Ok(())
}
