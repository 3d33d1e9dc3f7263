//! Peak memory of whole `nanobragg` runs against the documented bound:
//!
//!   peak RSS ≤ baseline + image + chunk budget
//!
//! where the image is the f32 float image (4 bytes a pixel), the chunk budget is `-memory_mb`
//! (shared by all worker threads) and the baseline is the peak of the same run on a 16²
//! detector (code, libraries, thread stacks, allocator arenas).
//!
//! `cargo bench --bench memory` measures three series and prints one JSON object a run (also
//! written to `target/bench-memory.json`); it exits non-zero when a run exceeds the bound:
//! - `classic`: the light configuration at 2048², 4096² and 8192² (`NANOBRAGG_MEMORY_SIZES=1024,2048`
//!   to choose) with every output a classic run writes by default (float, int, noise, PGM);
//! - `output`: each output file alone at 2048² (`NANOBRAGG_MEMORY_OUTPUT_SIZE`): float, int,
//!   noise, PGM, NumPy, miniCBF (counts and noise), NeXus (counts, and the noise image);
//! - `panels`: a Jungfrau-16M-sized detector (`examples/panels/jungfrau16m_geom.py`, 32
//!   modules of 1024 × 512, 67 MB of f32) with `-floatfile`, then with `-nexusfile` added.

use std::process::Command;

const LIGHT: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
const BUDGET_MB: f64 = 32.0;

/// Peak resident memory (bytes) and wall time (s) of one run of the binary with `args` in `dir`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn peak_of(dir: &std::path::Path, args: &[String]) -> (f64, f64) {
    let started = std::time::Instant::now();
    // reaped below by wait4, which also gives its resource usage
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(args)
        .args(["-memory_mb", &BUDGET_MB.to_string(), "-seed", "1", "-noprogress"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the nanobragg binary runs");
    let mut status = 0;
    // SAFETY: rusage is plain data, filled in by wait4 for the child just spawned
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "nanobragg failed: {args:?}"
    );
    // ru_maxrss is in KiB on Linux
    (usage.ru_maxrss as f64 * 1024.0, started.elapsed().as_secs_f64())
}

/// `LIGHT` on an `n`² detector with `outputs`.
fn light(n: usize, outputs: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = LIGHT.split_whitespace().map(String::from).collect();
    args.extend(["-detpixels".to_string(), n.to_string()]);
    args.extend(outputs.iter().map(|s| s.to_string()));
    args
}

/// The classic outputs: every file a run writes by default.
const CLASSIC: &[&str] = &[
    "-floatfile",
    "f.bin",
    "-intfile",
    "i.img",
    "-noisefile",
    "n.img",
    "-pgmfile",
    "p.pgm",
];

/// Each output alone, beside what every run writes (`intimage.img`, and the noise image unless
/// `-nonoise`): `-nonoise` wherever the noise image is not what is measured.
const OUTPUTS: &[(&str, &[&str])] = &[
    ("float", &["-nonoise", "-floatfile", "f.bin"]),
    ("int", &["-nonoise", "-intfile", "i.img"]),
    ("noise", &["-noisefile", "n.img"]),
    ("pgm", &["-nonoise", "-pgmfile", "p.pgm"]),
    ("npy", &["-nonoise", "-npyfile", "f.npy"]),
    ("cbf", &["-nonoise", "-cbffile", "i.cbf"]),
    ("cbf_noise", &["-cbf_noisefile", "n.cbf"]),
    ("nexus", &["-nonoise", "-nexusfile", "i.nxs"]),
    ("nexus_noise", &["-noisefile", "n.img", "-nexusfile", "n.nxs"]),
];

/// One measured run as a JSON line; `over` is set when it exceeds the bound.
struct Report {
    lines: Vec<String>,
    over: bool,
}

impl Report {
    fn add(&mut self, series: &str, label: &str, pixels: usize, baseline: f64, (peak, seconds): (f64, f64)) {
        let mb = 1e6;
        let image = 4.0 * pixels as f64;
        let bound = baseline + image + BUDGET_MB * mb;
        self.over |= peak > bound;
        let line = format!(
            "{{\"series\": \"{series}\", \"run\": \"{label}\", \"pixels\": {pixels}, \"budget_mb\": {BUDGET_MB}, \
             \"baseline_mb\": {:.1}, \"image_mb\": {:.1}, \"peak_rss_mb\": {:.1}, \"bound_mb\": {:.1}, \
             \"bytes_per_pixel_above_baseline\": {:.2}, \"within_bound\": {}, \"seconds\": {seconds:.1}}}",
            baseline / mb,
            image / mb,
            peak / mb,
            bound / mb,
            (peak - baseline) / pixels as f64,
            peak <= bound
        );
        println!("{line}");
        self.lines.push(line);
    }
}

fn env_sizes(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|s| {
            s.split(',')
                .map(|v| v.trim().parse().expect("sizes are integers"))
                .collect()
        })
        .unwrap_or_else(|| default.to_vec())
}

/// The Jungfrau-16M-sized geometry file, written into `dir` by the example script.
fn jungfrau_geom(dir: &std::path::Path) -> std::path::PathBuf {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/panels/jungfrau16m_geom.py");
    let out = Command::new("python3").arg(script).output().expect("python3 runs");
    assert!(out.status.success(), "jungfrau16m_geom.py failed");
    let path = dir.join("jf16m.geom");
    std::fs::write(&path, out.stdout).expect("the geometry file is written");
    path
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let run = |args: Vec<String>| peak_of(dir.path(), &args);
    let mut report = Report {
        lines: Vec::new(),
        over: false,
    };
    let (baseline, _) = run(light(16, CLASSIC));
    for n in env_sizes("NANOBRAGG_MEMORY_SIZES", &[2048, 4096, 8192]) {
        report.add(
            "classic",
            "float+int+noise+pgm",
            n * n,
            baseline,
            run(light(n, CLASSIC)),
        );
    }
    let n = env_sizes("NANOBRAGG_MEMORY_OUTPUT_SIZE", &[2048])[0];
    for (label, outputs) in OUTPUTS {
        let (baseline, _) = run(light(16, outputs));
        report.add("output", label, n * n, baseline, run(light(n, outputs)));
    }
    let geom = jungfrau_geom(dir.path()).display().to_string();
    let crystal = "-default_F 100 -cell 79 79 38 90 90 90 -N 10 -lambda 1.0 -oversample 1 -nonoise";
    for (label, outputs) in [
        ("float", "-floatfile jf.bin"),
        ("float+nexus", "-floatfile jf.bin -nexusfile jf.nxs"),
    ] {
        let args = format!("-geom {geom} {crystal} {outputs}");
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        report.add("panels", label, 32 * 1024 * 512, baseline, run(args));
    }
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-memory.json");
    std::fs::write(&out, report.lines.join("\n") + "\n").expect("target/ is writable");
    if report.over {
        eprintln!("peak memory above the bound (see {})", out.display());
        std::process::exit(1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    eprintln!("the memory benchmark reads wait4's rusage: Linux (glibc) only");
}
