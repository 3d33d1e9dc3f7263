//! Benchmark of the amorphous background: our `nonbragg` against the C suite's `nonBragg`, and
//! against a light `nanobragg` render of the same detector, as whole processes: interleaved
//! runs, the first cold and the best of the rest warm.
//!
//! ```text
//! cargo build --release --bin nonbragg --bin nanobragg
//! NB_C_NONBRAGG=/path/to/nonBragg cargo run --release --example nonbragg_bench -- \
//!     --size 1024 --reps 3 --threads 2
//! ```
//!
//! The background is `fixtures/stol/water.stol` on the light scene's detector (`-lambda 6.2
//! -distance 100 -pixel 0.1 -detpixels SIZE`, one source); `--oversample` sets both programs'
//! sub-pixels. `--threads` sets `-nthreads` for ours (C's `nonBragg` has one thread). Only the
//! float image is written (`-nonoise`, and `-nopgm` where it is honoured). Prints a markdown
//! table. The last of ours renders the light scene with the background in the same run
//! (`nanobragg -stol`): its time less the light render's is the background's cost there, printed
//! after the table as a share of the light render.

use std::process::Command;
use std::time::Instant;

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

/// Seconds of one run of `program` with `flags`, in `dir`.
fn time(program: &str, flags: &[String], dir: &std::path::Path) -> f64 {
    let start = Instant::now();
    let out = Command::new(program)
        .args(flags)
        .current_dir(dir)
        .output()
        .expect("program runs");
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed().as_secs_f64()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size = arg(&args, "--size", "1024");
    let reps: usize = arg(&args, "--reps", "3").parse().expect("--reps");
    let threads = arg(&args, "--threads", "2");
    let oversample = arg(&args, "--oversample", "1");
    let root = std::env::current_dir().expect("working directory");
    let table = root.join("fixtures/stol/water.stol");
    let dir = tempfile::tempdir().expect("temporary directory");
    let detector = format!("-lambda 6.2 -distance 100 -pixel 0.1 -detpixels {size} -oversample {oversample}");
    let mut background = words(&format!(
        "-stol {} {detector} -nonoise -noprogress -seed 1",
        table.display()
    ));
    let mut ours_bg = background.clone();
    ours_bg.extend(words(&format!("-nopgm -nthreads {threads}")));
    let light = words(&format!(
        "-default_F 100 -cell 100 100 100 90 90 90 -N 5 {detector} -nonoise -nopgm -nthreads {threads}"
    ));
    let bin = |name: &str| root.join("target/release").join(name).to_string_lossy().into_owned();
    let mut light_with_water = light.clone();
    light_with_water.extend(words(&format!("-stol {}", table.display())));
    let mut runs = vec![
        ("nonbragg (ours)", bin("nonbragg"), ours_bg),
        ("nanobragg light render", bin("nanobragg"), light),
        (
            "nanobragg light render -stol (one run)",
            bin("nanobragg"),
            light_with_water,
        ),
    ];
    if let Ok(c) = std::env::var("NB_C_NONBRAGG") {
        background.extend(words("-floatfile floatimage.bin"));
        runs.push(("nonBragg (C, 1 thread)", c, background));
    }
    let mut times = vec![Vec::new(); runs.len()];
    for _ in 0..reps.max(2) {
        for (t, (_, program, flags)) in times.iter_mut().zip(&runs) {
            t.push(time(program, flags, dir.path()));
        }
    }
    println!("| {size}², oversample {oversample}, {threads} threads | cold (s) | warm (s) |");
    println!("|---|---|---|");
    let warm = |t: &[f64]| t[1..].iter().copied().fold(f64::INFINITY, f64::min);
    for ((name, _, _), t) in runs.iter().zip(&times) {
        println!("| {name} | {:.3} | {:.3} |", t[0], warm(t));
    }
    let (light, with_water) = (warm(&times[1]), warm(&times[2]));
    println!(
        "\nthe background in the same run adds {:.0} % to the light render (warm)",
        100.0 * (with_water - light) / light
    );
}
