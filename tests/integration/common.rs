//! Shared helpers for the integration tests: locating and reading the C program's golden
//! images, and comparing images.
#![allow(dead_code)]

use std::path::PathBuf;

/// The golden directory: `NANOBRAGG_GOLDEN_DIR`, else `../shared/golden` beside the crate.
/// `None` (with a message) when it is absent.
pub fn golden_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("NANOBRAGG_GOLDEN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/golden"));
    if dir.join("cases.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIP: golden images not found at {} (set NANOBRAGG_GOLDEN_DIR)",
            dir.display()
        );
        None
    }
}

/// One golden case.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub args: Vec<String>,
    pub fpixels: usize,
    pub spixels: usize,
    pub image: Vec<f32>,
    pub other_outputs: serde_json::Value,
    /// What the C program printed (its stdout).
    pub c_stdout: String,
}

/// All cases of `cases.json`, with file arguments made absolute.
pub fn cases(dir: &std::path::Path) -> Vec<Case> {
    let text = std::fs::read_to_string(dir.join("cases.json")).expect("cases.json readable");
    let json: serde_json::Value = serde_json::from_str(&text).expect("cases.json is JSON");
    json["cases"]
        .as_array()
        .expect("cases array")
        .iter()
        .map(|c| {
            let args = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    let a = a.as_str().unwrap();
                    if a.starts_with("inputs/") {
                        dir.join(a).to_string_lossy().into_owned()
                    } else {
                        a.to_string()
                    }
                })
                .collect();
            let bytes = std::fs::read(dir.join(c["float_image"].as_str().unwrap())).expect("float image");
            let image = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            Case {
                name: c["name"].as_str().unwrap().to_string(),
                args,
                fpixels: c["fpixels"].as_u64().unwrap() as usize,
                spixels: c["spixels"].as_u64().unwrap() as usize,
                image,
                other_outputs: c["other_outputs"].clone(),
                c_stdout: std::fs::read_to_string(dir.join(c["c_stdout"].as_str().unwrap())).expect("C's stdout"),
            }
        })
        .collect()
}

/// Pearson correlation of two images.
pub fn correlation(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len() as f64;
    let ma = a.iter().map(|&x| x as f64).sum::<f64>() / n;
    let mb = b.iter().map(|&x| x as f64).sum::<f64>() / n;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        let (dx, dy) = (x as f64 - ma, y as f64 - mb);
        sab += dx * dy;
        saa += dx * dx;
        sbb += dy * dy;
    }
    if saa == 0.0 && sbb == 0.0 {
        return 1.0;
    }
    sab / (saa * sbb).sqrt()
}

/// An image against its reference: (the reference's peak max |want|, the worst max |got − want|).
pub fn peak_and_worst(got: &[f32], want: &[f32]) -> (f64, f64) {
    assert_eq!(got.len(), want.len(), "images of different sizes");
    let peak = want.iter().fold(0.0f64, |m, &v| m.max(f64::from(v).abs()));
    let worst = got
        .iter()
        .zip(want)
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
        .fold(0.0, f64::max);
    (peak, worst)
}

/// A raw little-endian f32 file (`-floatfile`), read whole.
pub fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Σa / Σb.
pub fn sum_ratio(a: &[f32], b: &[f32]) -> f64 {
    let sa: f64 = a.iter().map(|&x| x as f64).sum();
    let sb: f64 = b.iter().map(|&x| x as f64).sum();
    if sb == 0.0 && sa == 0.0 {
        1.0
    } else {
        sa / sb
    }
}

/// The CPU device with f64 as its float dtype, set once per test binary (burn fixes a device's
/// dtype per process, so f64 tests must not share a binary with f32 ones). Another test may
/// have fixed it first (a simulator on wgpu evaluates its scene on the CPU in f64, the CPU
/// engines fix it too): it must then be f64.
pub fn f64_device() -> burn::backend::ndarray::NdArrayDevice {
    use burn::backend::ndarray::NdArray;
    use burn::tensor::{DType, Tensor, TensorData};
    static INIT: std::sync::Once = std::sync::Once::new();
    let d = burn::backend::ndarray::NdArrayDevice::Cpu;
    INIT.call_once(|| {
        if burn::tensor::set_default_dtypes::<NdArray<f64>>(&d, DType::F64, DType::I64).is_err() {
            let probe = Tensor::<NdArray<f64>, 1>::from_data(TensorData::new(vec![0.5f64], [1]), &d);
            assert_eq!(
                probe.dtype(),
                DType::F64,
                "the CPU device's float dtype was fixed before the f64 tests"
            );
        }
    });
    d
}

/// A tensor's values on the host, as f64 (any backend, any rank).
pub fn host<B: burn::tensor::backend::Backend, const D: usize>(t: burn::tensor::Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().expect("a float tensor")
}

/// The configuration and resolved experiment of C-style flags (`args`), with the structure
/// factors taken from `hkl` (a file) or, when `None`, from `-default_F` alone whatever the
/// flags say.
pub fn experiment<S: AsRef<str>>(
    args: &[S],
    hkl: Option<&std::path::Path>,
) -> (nanobragg::SimConfig, nanobragg::Experiment) {
    use nanobragg::config::HklSource;
    use nanobragg::experiment::args::{parse_args, Parsed};
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let Parsed::Run(mut cfg, _) = parse_args(&args).expect("valid flags") else {
        panic!("the flags ask for no run: {args:?}")
    };
    cfg.crystal.hkl = hkl.map_or(HklSource::None, |p| HklSource::File(p.to_path_buf()));
    let exp = nanobragg::Experiment::new(&cfg).expect("a valid experiment");
    (*cfg, exp)
}

/// Writes `small.hkl` in `dir`: structure factors for h, k, l ∈ −3..3 (F = 100 + 7h + 3k + l),
/// a grid too small for most detectors, so tricubic interpolation falls back to nearest
/// neighbour part-way through the image (C's rule); its path.
pub fn small_hkl_grid(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("small.hkl");
    let mut text = String::new();
    for h in -3i32..=3 {
        for k in -3i32..=3 {
            for l in -3i32..=3 {
                text += &format!("{h} {k} {l} {}\n", 100 + 7 * h + 3 * k + l);
            }
        }
    }
    std::fs::write(&path, text).expect("write the HKL grid");
    path
}

/// [`experiment`] of flags in one string, without an HKL file.
pub fn setup(flags: &str) -> (nanobragg::SimConfig, nanobragg::Experiment) {
    experiment(&flags.split_whitespace().collect::<Vec<_>>(), None)
}

/// The configuration and resolved experiment of C-style `flags` as given: an `-hkl` file is
/// read; without one, no `Fdump.bin` of the working directory is.
pub fn setup_as_given(flags: &str) -> (nanobragg::SimConfig, nanobragg::Experiment) {
    use nanobragg::config::HklSource;
    use nanobragg::experiment::args::{parse_args, Parsed};
    let args: Vec<&str> = flags.split_whitespace().collect();
    let Parsed::Run(mut cfg, _) = parse_args(&args).expect("valid flags") else {
        panic!("the flags ask for no run: {flags}")
    };
    if cfg.crystal.hkl == HklSource::FdumpIfPresent {
        cfg.crystal.hkl = HklSource::None;
    }
    let exp = nanobragg::Experiment::new(&cfg).expect("a valid experiment");
    (*cfg, exp)
}

/// Deterministic pseudo-random numbers in [lo, hi) (a 64-bit LCG; no external generator).
pub fn uniform(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((x >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// Whether `engine` can start here. When it cannot, the test skips with a message, unless
/// `NANOBRAGG_REQUIRE_WGPU=1` (CI) makes that a failure.
pub fn engine_available(engine: nanobragg::engine::Engine) -> bool {
    match engine.probe() {
        Ok(device) => {
            eprintln!("{}: {device}", engine.name());
            true
        }
        Err(e) => {
            let required = std::env::var("NANOBRAGG_REQUIRE_WGPU").is_ok_and(|v| v == "1");
            assert!(!required, "NANOBRAGG_REQUIRE_WGPU=1 but {e}");
            eprintln!("SKIP: {e} (set NANOBRAGG_REQUIRE_WGPU=1 to make this a failure)");
            false
        }
    }
}

/// Runs `cmd` (stdout and stderr captured) and kills it if it has not finished after
/// `timeout`; `None` then. For runs that used to hang.
pub fn output_within(mut cmd: std::process::Command, timeout: std::time::Duration) -> Option<std::process::Output> {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait works").is_some() {
            return Some(child.wait_with_output().expect("output readable"));
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A character device node `name` (Linux major, minor; e.g. 1 3 is /dev/null, 1 7 /dev/full)
/// made with `mknod` in `dir`, so a test never touches the machine's own devices. `None`, with a
/// skip message, where mknod is not permitted (not root, or a restricted container).
pub fn char_device(dir: &std::path::Path, name: &str, major: u32, minor: u32) -> Option<PathBuf> {
    let p = dir.join(name);
    let made = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&p)
        .args(["c", &major.to_string(), &minor.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("SKIP: mknod is not permitted here");
        return None;
    }
    Some(p)
}

/// Whether `p` is a character device (not following links).
#[cfg(unix)]
pub fn is_char_device(p: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

/// A command running `program args…` under `ulimit -v kib` (virtual memory, KiB), through `sh`,
/// so an allocation beyond it fails as on a machine that small.
pub fn under_ulimit_v(kib: u64, program: &str, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(args);
    cmd
}

/// The hidden temporary output files (`.nanobragg-tmp-*`) in `dir`.
pub fn temporaries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".nanobragg-tmp-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Every regular file of `dir` (not recursive) by name, with its bytes; names starting with
/// `skip_prefix` (e.g. "manifest") are left out.
pub fn files_in(dir: &std::path::Path, skip_prefix: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("directory readable")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            (!name.starts_with(skip_prefix)).then(|| (name, std::fs::read(&p).expect("file readable")))
        })
        .collect()
}

/// The lines of a JSON Lines file, parsed (panics on a line that is not JSON).
pub fn json_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: bad line {l:?}: {e}", path.display())))
        .collect()
}

/// One-sample Kolmogorov–Smirnov statistic of `samples` against the continuous CDF `cdf`.
pub fn ks_statistic(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut x = samples.to_vec();
    x.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = x.len() as f64;
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// The KS critical value at significance `alpha` for `n` samples (asymptotic:
/// sqrt(−ln(α/2)/2)/√n).
pub fn ks_critical(n: usize, alpha: f64) -> f64 {
    (-(alpha / 2.0).ln() / 2.0).sqrt() / (n as f64).sqrt()
}

/// A 100 Å cubic cell with N = 5 at 6.2 Å: the crystal of the issues' light configuration
/// (with [`LIGHT_CRYSTAL`]'s `-default_F 100`), small and fast to render.
pub const CUBIC_CELL: &str = "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5";

/// The light configuration's crystal: [`CUBIC_CELL`] with F = 100 everywhere.
pub const LIGHT_CRYSTAL: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5";

/// An argument list: each part split at whitespace, in order.
pub fn flags(parts: &[&'static str]) -> Vec<&'static str> {
    parts.iter().flat_map(|p| p.split_whitespace()).collect()
}

/// The environment variable that marks a child process started by [`own_process`]; its value
/// is the one test that child runs.
const OWN_PROCESS: &str = "NANOBRAGG_TEST_OWN_PROCESS";

/// Runs the calling test again in a process of its own and waits for it; `true` in that child
/// (where the caller runs its body), `false` in the parent once the child has passed.
///
/// burn fixes a device's float dtype for the whole process on first use, so a test that
/// renders on `NdArray<f32>` cannot share this binary's process with the f64 tests. `test` is
/// the test's path inside this binary (`module_path!()` without the crate, then the name).
/// The child runs only that test (`--exact`); its output is shown with the parent's.
pub fn own_process(module_path: &str, name: &str) -> bool {
    own_process_with(module_path, name, &[])
}

/// [`own_process`] with environment variables `envs` set in the child.
pub fn own_process_with(module_path: &str, name: &str, envs: &[(&str, &std::ffi::OsStr)]) -> bool {
    let module = module_path.split_once("::").map_or("", |(_, m)| m);
    let test = if module.is_empty() {
        name.to_string()
    } else {
        format!("{module}::{name}")
    };
    if std::env::var(OWN_PROCESS).is_ok_and(|t| t == test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, &test)
        .envs(envs.iter().copied())
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} failed in its own process");
    assert!(
        stdout.contains("1 passed"),
        "{test}: the child process ran no test (renamed?)"
    );
    false
}

/// The environment variable that makes the unit-test binary, run again by [`run_program`],
/// the `nanobragg` program: its value is the program's arguments as a JSON array.
pub const AS_PROGRAM: &str = "NANOBRAGG_TEST_AS_PROGRAM";

/// The `nanobragg` program run in `dir` with `args`, to its end. In the integration tests it is
/// the binary cargo built for them; the crate's unit-test binary, for which cargo builds none,
/// runs itself again as the program (`tests::program`, which calls the binary's
/// `nanobragg::app::program::main` in that child process).
pub fn run_program(dir: &std::path::Path, args: &[String]) -> std::process::Output {
    let mut cmd = match option_env!("CARGO_BIN_EXE_nanobragg") {
        Some(binary) => {
            let mut cmd = std::process::Command::new(binary);
            cmd.args(args);
            cmd
        }
        None => {
            let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary's path"));
            cmd.args([AS_PROGRAM_TEST, "--exact", "--nocapture", "--quiet", "--test-threads=1"])
                .env(AS_PROGRAM, serde_json::to_string(args).unwrap())
                .env_remove(OWN_PROCESS);
            cmd
        }
    };
    cmd.current_dir(dir).output().expect("the nanobragg program starts")
}

/// The program's `-floatfile` image for `args` (run in a temporary directory, without noise,
/// PGM or progress output), as f32, fast-major; the run must succeed.
pub fn program_float_image(args: &[&str]) -> Vec<f32> {
    let dir = tempfile::tempdir().unwrap();
    let extra = ["-floatfile", "float.bin", "-nonoise", "-nopgm", "-noprogress"];
    let args: Vec<String> = args.iter().chain(&extra).map(|a| a.to_string()).collect();
    let out = run_program(dir.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    read_f32(&dir.path().join("float.bin"))
}

/// The unit-test binary's test that becomes the program under [`AS_PROGRAM`].
const AS_PROGRAM_TEST: &str = "tests::program::the_test_binary_runs_as_the_program";

/// Kernel launches in a cubecl profile log (`CUBECL_DEBUG_OPTION=profile`,
/// `CUBECL_DEBUG_LOG=FILE`): one table row `| <time> | …` per launch.
pub fn launches_in_profile_log(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            l.strip_prefix("| ")
                .and_then(|r| r.split(' ').next())
                .is_some_and(|t| t.ends_with('s') && t.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count()
}

/// A gradient vector computed in f32 on a device (`got`) against the f64 reference
/// (`want`): ‖got − want‖/‖want‖ ≤ 1e-2 and, for vectors longer than 1, cosine ≥ 0.9999; a
/// zero reference wants an exact zero (the host's ∂z/∂θ, f64, holds such zeros exactly).
pub fn assert_gradients_agree(label: &str, got: &[f64], want: &[f64]) {
    if let Some(why) = gradients_disagree(label, got, want) {
        panic!("{why}");
    }
}

/// [`assert_gradients_agree`]'s test as a value: why the two disagree, `None` if they agree.
pub fn gradients_disagree(label: &str, got: &[f64], want: &[f64]) -> Option<String> {
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let (ng, nw) = (norm(got), norm(want));
    let diff: Vec<f64> = got.iter().zip(want).map(|(a, b)| a - b).collect();
    if nw == 0.0 {
        println!("{label}: reference 0, got ‖g‖ = {ng:.1e}");
        return (ng != 0.0).then(|| format!("{label}: {got:?} where the reference is 0"));
    }
    let relative = norm(&diff) / nw;
    let cosine = got.iter().zip(want).map(|(a, b)| a * b).sum::<f64>() / (ng * nw).max(1e-300);
    println!("{label}: ‖Δ‖/‖ref‖ = {relative:.1e}, cosine {cosine:.7}");
    if relative > 1e-2 {
        return Some(format!(
            "{label}: {got:?} against {want:?} (‖Δ‖/‖ref‖ = {relative:.1e})"
        ));
    }
    (want.len() > 1 && cosine < 0.9999).then(|| format!("{label}: {got:?} against {want:?} (cosine {cosine})"))
}

/// A property test's configuration with `cases` cases drawn from the fixed seed `seed` and no
/// saved failures: the same cases every run (a property test must not flake).
pub fn fixed_cases(cases: u32, seed: u64) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
        ..proptest::test_runner::Config::default()
    }
}

/// C flags of a random configuration of the per-pixel loops on a 24² detector: crystal shape,
/// polarization, resolution cut, water, detector form, sensor, sampling and its products, ROI,
/// sources and orientations, each drawn independently; N (`-N`) from `n`, sub-pixels per side
/// from `oversample`.
pub fn pixel_loop_configuration(
    n: impl proptest::strategy::Strategy<Value = String>,
    oversample: std::ops::Range<usize>,
) -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let shape = prop::sample::select(vec!["", "-round_xtal", "-gauss_xtal", "-tophat_spots"]);
    let polar = prop::sample::select(vec!["", "-nopolar", "-polar 0.6"]);
    let extras = prop::collection::vec(
        prop::sample::select(vec![
            "-dmin 8",
            "-water 50",
            "-curved_det",
            "-point_pixel",
            "-detector_thick 100 -detector_thicksteps 2 -detector_abs 300",
            "-oversample_omega",
            "-oversample_thick",
            "-oversample_polar",
            "-roi 3 20 5 17",
            "-divergence 1 -divsteps 2",
            "-dispersion 1 -dispsteps 2",
            "-mosaic 0.4 -mosaic_dom 3",
            "-phi 5 -osc 1 -phisteps 2",
            "-misset 5 10 15",
            "-twotheta 5",
        ]),
        0..5,
    );
    (shape, polar, extras, oversample, n).prop_map(|(shape, polar, extras, os, n)| {
        format!(
            "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N {n} -distance 100 -pixel 0.3 \
             -detpixels 24 -oversample {os} {shape} {polar} {}",
            extras.join(" ")
        )
    })
}

/// Configurations for the adjoints' tests (the cube kernel's and the native loop's) across
/// what they cover, on a small detector.
pub mod adjoint_cases {
    use proptest::prelude::*;

    /// The crystal and beam every configuration starts from (triclinic, misset).
    pub const BASE: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 -distance 80 \
        -pixel 0.4 -detpixels 24";

    /// What each configuration adds to [`BASE`].
    pub const CONFIGURATIONS: &[(&str, &str)] = &[
        (
            "square, rotated detector, 2θ",
            "-detector_rotx 2 -detector_roty 1 -detector_rotz 1 -twotheta 3 -oversample 1",
        ),
        (
            "mosaic, φ, polarization, water, oversample 2",
            "-mosaic 0.5 -mosaic_dom 3 -phi 5 -osc 2 -phisteps 2 -polar 0.8 -water 50 -oversample 2",
        ),
        ("round, fudge", "-round_xtal -fudge 0.7 -N 6 -oversample 1"),
        ("gauss, fudge", "-gauss_xtal -fudge 0.8 -N 6 -oversample 1"),
        ("tophat", "-tophat_spots -N 6 -oversample 1"),
        (
            "absorption layers",
            "-detector_abs 300 -detector_thick 100 -thicksteps 3 -oversample 1",
        ),
        (
            "nopolar, point pixel",
            "-nopolar -point_pixel -distance 60 -oversample 1",
        ),
        (
            "divergence, dispersion, dmin",
            "-divergence 0.5 -divsteps 3 -dispersion 2 -dispsteps 3 -dmin 4 -oversample 1",
        ),
        (
            "xds, sample pivot",
            "-xds -ORGX 10 -ORGY 13 -detector_rotx 3 -oversample 1",
        ),
        (
            "dials, roi, 22 rows (not a whole number of the kernel's row blocks)",
            "-dials -Xbeam 5 -Ybeam 4 -detpixels_s 22 -roi 3 20 2 21 -oversample 1",
        ),
        (
            "spindle, φ, flux",
            "-spindle_axis 0 1 0 -phi 30 -osc 2 -phisteps 3 -flux 1e12 -exposure 2 -beamsize 0.05 -oversample 1",
        ),
        (
            "oversample products, absorption layers",
            "-oversample 2 -oversample_omega -oversample_polar -oversample_thick -polar 0.7 -detector_abs 300 \
             -detector_thick 100 -thicksteps 2",
        ),
        (
            "oversample ω, mosaic",
            "-oversample 2 -oversample_omega -mosaic 0.5 -mosaic_dom 3 -polar 0.7",
        ),
        (
            "curved detector, polarization, absorption layers, oversample 2",
            "-curved_det -detector_rotx 2 -polar 0.8 -detector_abs 300 -detector_thick 100 -thicksteps 2 -oversample 2",
        ),
        (
            "oversample products over two batches of orientation rows, absorption layers",
            "-oversample 2 -oversample_polar -oversample_thick -polar 0.7 -detector_abs 300 -detector_thick 100 \
             -thicksteps 2 -mosaic 0.5 -mosaic_dom 3 -phi 5 -osc 2 -phisteps 2",
        ),
        (
            "oversample ω over two batches, sources",
            "-oversample 2 -oversample_omega -mosaic 0.5 -mosaic_dom 3 -dispersion 2 -dispsteps 2 -polar 0.7",
        ),
        (
            "tophat, oversample polar over three batches (skipped zero terms)",
            "-tophat_spots -N 6 -oversample 2 -oversample_polar -polar 0.7 -mosaic 0.8 -mosaic_dom 9",
        ),
    ];

    /// Configurations with a structure-factor grid (`-hkl`, [`super::small_hkl_grid`]: h, k, l ∈
    /// −3..3) whose values are parameters: nearest neighbour on [`BASE`]'s crystal, where spots
    /// leave the grid (default_F there); and tricubic on a cubic cell whose loop leaves the grid
    /// part-way through the image (C's fall-back to nearest neighbour from that pixel on), alone
    /// and with mosaic domains, φ steps and the curved detector; both with the `-oversample_*`
    /// products over more orientation rows than one batch.
    pub fn grid_configurations(hkl: &std::path::Path) -> Vec<(&'static str, String)> {
        let tricubic = format!(
            "-hkl {} -cell 60 60 60 90 90 90 -misset 5 3 2 -lambda 1.5 -N 2 -distance 120 -pixel 0.4 -detpixels 24 \
             -interpolate",
            hkl.display()
        );
        vec![
            ("nearest", format!("{BASE} -hkl {} -oversample 1", hkl.display())),
            ("tricubic falling back", format!("{tricubic} -oversample 1")),
            (
                "tricubic, mosaic, φ, curved detector",
                format!("{tricubic} -mosaic 0.5 -mosaic_dom 2 -phi 5 -osc 2 -phisteps 2 -curved_det -oversample 2"),
            ),
            (
                "nearest, oversample polar over two batches",
                format!(
                    "{BASE} -hkl {} -oversample 2 -oversample_polar -polar 0.7 -mosaic 0.5 -mosaic_dom 5",
                    hkl.display()
                ),
            ),
            (
                "tricubic, oversample thick over two batches",
                format!(
                    "{tricubic} -oversample 2 -oversample_thick -detector_abs 300 -detector_thick 100 -thicksteps 2 \
                     -mosaic 0.5 -mosaic_dom 3 -phi 5 -osc 2 -phisteps 2"
                ),
            ),
        ]
    }

    /// A random configuration inside the kernels' coverage: shape, convention, cell, misset, N,
    /// wavelength, distance, detector rotations and 2θ, polarization, mosaic domains, φ steps,
    /// oversampling, sensor layers, water and the curved detector.
    pub fn covered_configuration() -> impl Strategy<Value = String> {
        // (TOPHAT spots move intensity only through ω and the capture fraction: their geometric
        // gradients are sums that cancel to a few f32 ulps of their terms, which the fixed
        // configurations hold to the reference instead)
        let shape = proptest::sample::select(&["", "-round_xtal", "-gauss_xtal -fudge 0.8"][..]);
        let convention = proptest::sample::select(&["", "-xds", "-dials", "-mosflm", "-adxv", "-denzo"][..]);
        let cell = proptest::collection::vec(40.0..120.0f64, 3);
        let angles = proptest::collection::vec(80.0..100.0f64, 3);
        let misset = proptest::collection::vec(-40.0..40.0f64, 3);
        let rotations = proptest::collection::vec(-3.0..3.0f64, 4);
        let optics = (2u32..=8, 1.0..3.0f64, 60.0..150.0f64, proptest::option::of(0.0..1.0f64));
        let sampling = (
            1u32..=3,
            1u32..=2,
            1u32..=2,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        );
        (shape, convention, cell, angles, misset, rotations, optics, sampling).prop_map(
            |(
                shape,
                convention,
                cell,
                angles,
                misset,
                rot,
                (n, lambda, distance, polar),
                (doms, phis, os, thick, water, curved),
            )| {
                let polar = polar.map_or("-nopolar".to_string(), |k| format!("-polar {k:.3}"));
                format!(
                    "-default_F 100 -cell {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} -misset {:.2} {:.2} {:.2} -N {n} \
                     -lambda {lambda:.3} -distance {distance:.1} -pixel 0.5 -detpixels 16 {shape} {convention} \
                     -detector_rotx {:.2} -detector_roty {:.2} -detector_rotz {:.2} -twotheta {:.2} {polar} \
                     -mosaic 0.4 -mosaic_dom {doms} -phi 3 -osc 1 -phisteps {phis} -oversample {os} {} {} {}",
                    cell[0],
                    cell[1],
                    cell[2],
                    angles[0],
                    angles[1],
                    angles[2],
                    misset[0],
                    misset[1],
                    misset[2],
                    rot[0],
                    rot[1],
                    rot[2],
                    rot[3].abs() * 3.0,
                    if thick {
                        "-detector_abs 300 -detector_thick 50 -thicksteps 2"
                    } else {
                        ""
                    },
                    if water { "-water 20" } else { "" },
                    if curved { "-curved_det" } else { "" },
                )
            },
        )
    }

    /// Weights that vary along both axes (a transposed image would give another sum).
    pub fn weights(n: usize) -> Vec<f32> {
        (0..n).map(|i| 1.0 + ((i * 7919) % 13) as f32 / 13.0).collect()
    }
}

/// `(f(x + h·e_i) − f(x − h·e_i)) / 2h`: the central difference of `f` along component `i`.
pub fn central_difference(mut f: impl FnMut(&[f64]) -> f64, x: &[f64], i: usize, h: f64) -> f64 {
    let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
    xp[i] += h;
    xm[i] -= h;
    (f(&xp) - f(&xm)) / (2.0 * h)
}
