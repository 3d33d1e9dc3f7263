//! Benchmark of the `noisify` program against the C suite's, as whole processes on the same
//! input: a rendered image tiled to the size asked, a fiber PSF with automatic radius and every
//! noise term, interleaved runs, the first cold and the best of the rest warm.
//!
//! ```text
//! cargo build --release --bin noisify
//! NB_C_NOISIFY=/path/to/noisify cargo run --release --example noisify_bench -- \
//!     --input float.bin --width 512 --tiles 4 --reps 3 --threads 2
//! ```
//!
//! `--input` is a square raw float image `--width` pixels wide (e.g. `nanobragg -floatfile`),
//! tiled `--tiles` × `--tiles` times; `--threads` sets `-nthreads` for ours and
//! `OMP_NUM_THREADS` for C (which has one thread). Prints a markdown table.

use std::process::Command;
use std::time::Instant;

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

/// The input tiled `tiles` × `tiles` times, written to `dir/tiled.bin`; its edge in pixels.
fn tiled(input: &str, width: usize, tiles: usize, dir: &std::path::Path) -> usize {
    let bytes = std::fs::read(input).expect("--input readable");
    assert_eq!(
        bytes.len(),
        width * width * 4,
        "--input must be --width × --width floats"
    );
    let row = width * 4;
    let mut out = Vec::with_capacity(bytes.len() * tiles * tiles);
    for _ in 0..tiles {
        for y in 0..width {
            for _ in 0..tiles {
                out.extend_from_slice(&bytes[y * row..(y + 1) * row]);
            }
        }
    }
    std::fs::write(dir.join("tiled.bin"), out).expect("tiled input written");
    width * tiles
}

/// Seconds of one run of `program` with the benchmark's flags.
fn time(program: &str, edge: usize, threads: &str, dir: &std::path::Path) -> f64 {
    let edge = edge.to_string();
    let mut cmd = Command::new(program);
    cmd.args([
        "-bin",
        "tiled.bin",
        "-detpixels",
        &edge,
        "-psf",
        "fiber",
        "-psf_fwhm",
        "100",
    ])
    .args(["-readout", "3", "-flicker", "0.02", "-seed", "7", "-nopgm"])
    // C's noisify ignores flags it does not know
    .args(["-nthreads", threads])
    .current_dir(dir)
    .env("OMP_NUM_THREADS", threads);
    let start = Instant::now();
    let out = cmd.output().expect("program runs");
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let input = arg(&args, "--input", "float.bin");
    let width: usize = arg(&args, "--width", "512").parse().expect("--width");
    let tiles: usize = arg(&args, "--tiles", "4").parse().expect("--tiles");
    let reps: usize = arg(&args, "--reps", "3").parse().expect("--reps");
    let threads = arg(&args, "--threads", "2");
    let dir = tempfile::tempdir().expect("temporary directory");
    let edge = tiled(&input, width, tiles, dir.path());
    let ours = std::env::current_dir().unwrap().join("target/release/noisify");
    let mut programs = vec![("ours", ours.to_string_lossy().into_owned())];
    if let Ok(c) = std::env::var("NB_C_NOISIFY") {
        programs.push(("C", c));
    }
    let mut times = vec![Vec::new(); programs.len()];
    for _ in 0..reps.max(2) {
        for (t, (_, program)) in times.iter_mut().zip(&programs) {
            t.push(time(program, edge, &threads, dir.path()));
        }
    }
    println!("| {edge}² fiber PSF, {threads} threads | cold (s) | warm (s) |");
    println!("|---|---|---|");
    for ((name, _), t) in programs.iter().zip(&times) {
        let warm = t[1..].iter().copied().fold(f64::INFINITY, f64::min);
        println!("| {name} | {:.2} | {warm:.2} |", t[0]);
    }
}
