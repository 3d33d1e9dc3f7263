//! Peak memory of a whole `nanobragg` run against its documented bound (issue 14, point 6):
//!
//!   peak RSS ≤ baseline + image + chunk budget
//!
//! where the image is the f32 float image (4 bytes a pixel), the chunk budget is `-memory_mb`
//! (shared by all worker threads)
//! and the baseline is the peak of the same run on a 16² detector (code, libraries, thread
//! stacks, allocator arenas). Every output a classic run writes by default is written (float,
//! int, noise and PGM images), so their writers are measured too.
//!
//! `cargo bench --bench memory` renders the light configuration at 2048², 4096² and 8192²
//! (`NANOBRAGG_MEMORY_SIZES=1024,2048` to choose), prints one JSON object per size and writes
//! them to `target/bench-memory.json`. Exits non-zero when a run exceeds the bound.

use std::process::Command;

const LIGHT: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
const BUDGET_MB: f64 = 32.0;

/// Peak resident memory (bytes) and wall time (s) of one run of the binary in a fresh directory.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn peak_of(pixels: usize) -> (f64, f64) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let started = std::time::Instant::now();
    // reaped below by wait4, which also gives its resource usage
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(LIGHT.split_whitespace())
        .args(["-detpixels", &pixels.to_string(), "-memory_mb", &BUDGET_MB.to_string()])
        .args(["-seed", "1", "-noprogress"])
        .args([
            "-floatfile",
            "f.bin",
            "-intfile",
            "i.img",
            "-noisefile",
            "n.img",
            "-pgmfile",
            "p.pgm",
        ])
        .current_dir(dir.path())
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
        "nanobragg failed at {pixels}²"
    );
    // ru_maxrss is in KiB on Linux
    (usage.ru_maxrss as f64 * 1024.0, started.elapsed().as_secs_f64())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    let sizes: Vec<usize> = std::env::var("NANOBRAGG_MEMORY_SIZES")
        .ok()
        .map(|s| {
            s.split(',')
                .map(|v| v.trim().parse().expect("sizes are integers"))
                .collect()
        })
        .unwrap_or_else(|| vec![2048, 4096, 8192]);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mb = 1e6;
    let (baseline, _) = peak_of(16);
    let mut lines = Vec::new();
    let mut over = false;
    for n in sizes {
        let (peak, seconds) = peak_of(n);
        let image = 4.0 * (n * n) as f64;
        let bound = baseline + image + BUDGET_MB * mb;
        over |= peak > bound;
        let line = format!(
            "{{\"pixels\": {n}, \"threads\": {threads}, \"budget_mb\": {BUDGET_MB}, \"baseline_mb\": {:.1}, \
             \"image_mb\": {:.1}, \"peak_rss_mb\": {:.1}, \"bound_mb\": {:.1}, \"bytes_per_pixel_above_baseline\": {:.2}, \
             \"within_bound\": {}, \"seconds\": {seconds:.1}}}",
            baseline / mb,
            image / mb,
            peak / mb,
            bound / mb,
            (peak - baseline) / (n * n) as f64,
            peak <= bound
        );
        println!("{line}");
        lines.push(line);
    }
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-memory.json");
    std::fs::write(&out, lines.join("\n") + "\n").expect("target/ is writable");
    if over {
        eprintln!("peak memory above the bound (see {})", out.display());
        std::process::exit(1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    eprintln!("the memory benchmark reads wait4's rusage: Linux (glibc) only");
}
