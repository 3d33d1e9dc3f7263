//! `nanobragg-compare`: runs the C nanoBragg program and this port on the same flags and compares
//! their float images.
//!
//! ```text
//! nanobragg-compare [--c-bin PATH] [--out DIR] [--nanobragg PATH] -- <C flags...>
//! ```
//!
//! Each program runs in its own fresh temporary directory with the flags given plus
//! `-nonoise -nopgm -floatfile float.bin`; relative paths after the input-file flags (`-hkl`,
//! `-mat`, `-matrix`, `-sourcefile`, `-img`, `-mask`, `-stol`, `-4stol`, `-Q`) are resolved
//! against the caller's directory first. Both are timed (wall clock, process start to exit),
//! run one after the other. The output directory receives `c.png` and `nanobragg.png` (log
//! previews with one shared scale), `diff.png` (nanobragg − C: red positive, blue negative,
//! white zero), `c.npy` and `nanobragg.npy` (the images, shape `[slow, fast]`), `c.log` and
//! `nanobragg.log` (each program's stdout then stderr) and `summary.json`.
//!
//! The C program is `--c-bin`, else `$NB_C_BIN`, else `$NANOBRAGG_C_BIN` (the variable the
//! crate's C-comparison tests use).
//!
//! Exit status: 0 when both ran and were compared, 1 when a program is missing or failed or the
//! images cannot be compared, 2 for bad usage.

use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::DetectorGeometry;
use nanobragg::io::npy::write_npy_f32;
use nanobragg::io::png::{write_png_preview_scaled, write_png_rgb, LogScale};
use nanobragg::io::{read_float_image, write_atomic};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const USAGE: &str = "\
usage: nanobragg-compare [--c-bin PATH] [--out DIR] [--nanobragg PATH] -- <C flags...>

Runs the C nanoBragg program and nanobragg on the same flags, each in a fresh temporary
directory (with -nonoise -nopgm -floatfile added), and compares their float images.

  --c-bin PATH      the C program (default: $NB_C_BIN, else $NANOBRAGG_C_BIN)
  --nanobragg PATH  this port's binary (default: nanobragg next to this program)
  --out DIR         where to write c.png, nanobragg.png, diff.png, *.npy, *.log and
                    summary.json (default: ./compare_out)

Relative paths after -hkl -mat -matrix -sourcefile -img -mask -stol -4stol -Q are taken
relative to the current directory. The flags must name structure factors (-hkl or
-default_F): the runs start in empty directories, with no Fdump.bin to fall back on.
";

/// Flags whose value is an input file, resolved against the caller's directory.
const FILE_FLAGS: &[&str] = &[
    "-hkl",
    "-mat",
    "-matrix",
    "-sourcefile",
    "-img",
    "-mask",
    "-stol",
    "-4stol",
    "-Q",
];

/// Name of the float image inside each run directory.
const FLOAT_NAME: &str = "float.bin";

/// Failures: bad usage (exit 2) or anything else (exit 1), with the message to print.
enum Failure {
    Usage(String),
    Run(String),
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("nanobragg-compare: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(msg)) => {
            eprintln!("nanobragg-compare: error: {msg}");
            ExitCode::from(1)
        }
    }
}

/// The tool's own options.
struct Options {
    c_bin: PathBuf,
    nanobragg: PathBuf,
    out: PathBuf,
    flags: Vec<String>,
}

fn parse_options(args: &[OsString]) -> Result<Option<Options>, Failure> {
    let mut c_bin: Option<PathBuf> = None;
    let mut nanobragg: Option<PathBuf> = None;
    let mut out = PathBuf::from("compare_out");
    let mut i = 0;
    loop {
        let Some(arg) = args.get(i) else {
            return Err(Failure::Usage("missing '--' before the C flags".into()));
        };
        let arg = arg.to_string_lossy();
        if arg == "--" {
            i += 1;
            break;
        }
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(PathBuf::from(v))),
            _ => (arg.to_string(), None),
        };
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                match args.get(i) {
                    Some(v) => PathBuf::from(v),
                    None => return Err(Failure::Usage(format!("{name} needs a value"))),
                }
            }
        };
        match name.as_str() {
            "--c-bin" => c_bin = Some(value),
            "--nanobragg" => nanobragg = Some(value),
            "--out" => out = value,
            _ => return Err(Failure::Usage(format!("unknown option '{name}'"))),
        }
        i += 1;
    }
    let flags = args[i..]
        .iter()
        .map(|a| {
            a.to_str()
                .map(str::to_string)
                .ok_or_else(|| Failure::Usage(format!("argument {a:?} is not valid UTF-8")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if flags.is_empty() {
        return Err(Failure::Usage("no C flags after '--'".into()));
    }
    let from_env = || {
        ["NB_C_BIN", "NANOBRAGG_C_BIN"]
            .iter()
            .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
            .map(PathBuf::from)
    };
    let c_bin = match c_bin.or_else(from_env) {
        Some(p) => p,
        None => return Err(Failure::Usage("no C binary: pass --c-bin PATH or set NB_C_BIN".into())),
    };
    let nanobragg = match nanobragg {
        Some(p) => p,
        None => {
            let exe = std::env::current_exe()
                .map_err(|e| Failure::Run(format!("cannot locate this program to find nanobragg next to it: {e}")))?;
            exe.with_file_name(format!("nanobragg{}", std::env::consts::EXE_SUFFIX))
        }
    };
    Ok(Some(Options {
        c_bin,
        nanobragg,
        out,
        flags,
    }))
}

/// A program path as the child will see it: a relative path with a directory part is made
/// absolute (the child runs elsewhere); a bare name is left for the `PATH` search.
fn program_path(p: &Path, cwd: &Path) -> PathBuf {
    if p.is_relative() && p.components().count() > 1 {
        cwd.join(p)
    } else {
        p.to_path_buf()
    }
}

/// The flags with relative input-file paths made absolute against `cwd`.
fn resolve_file_flags(flags: &[String], cwd: &Path) -> Vec<String> {
    let mut out = flags.to_vec();
    for i in 0..out.len().saturating_sub(1) {
        if FILE_FLAGS.contains(&flags[i].as_str()) && Path::new(&flags[i + 1]).is_relative() {
            out[i + 1] = cwd.join(&flags[i + 1]).to_string_lossy().into_owned();
        }
    }
    out
}

/// One program's run.
struct RunResult {
    /// Exit code; `None` when killed by a signal.
    code: Option<i32>,
    /// Wall-clock time from start to exit (s).
    seconds: f64,
    /// Its float image, or what went wrong (failed, unreadable image, wrong size).
    image: Result<Vec<f32>, String>,
}

/// Runs `program` with `flags` in a fresh temporary directory, saves its output to `log`, and
/// reads its float image, which must hold `pixels` values. Only a program that cannot be started
/// at all (or an output that cannot be written) is an error here.
fn run_program(label: &str, program: &Path, flags: &[String], log: &Path, pixels: usize) -> Result<RunResult, Failure> {
    let dir = tempfile::Builder::new()
        .prefix("nanobragg-compare-")
        .tempdir()
        .map_err(|e| Failure::Run(format!("cannot create a temporary directory: {e}")))?;
    let start = Instant::now();
    let output = Command::new(program)
        .args(flags)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::Run(format!("{label} binary '{}' cannot be run: {e}", program.display())))?;
    let seconds = start.elapsed().as_secs_f64();
    let mut text = output.stdout.clone();
    text.extend_from_slice(&output.stderr);
    write_atomic(log, &text).map_err(|e| Failure::Run(e.to_string()))?;
    let image = if output.status.success() {
        match read_float_image(&dir.path().join(FLOAT_NAME), None) {
            Ok(img) if img.len() == pixels => Ok(img),
            Ok(img) => Err(format!(
                "{label} wrote {} pixels, expected {pixels} for these flags",
                img.len()
            )),
            Err(e) => Err(format!("{label} ran but its float image cannot be read: {e}")),
        }
    } else {
        let lines: Vec<&str> = std::str::from_utf8(&text)
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(5)..].join("\n    ");
        eprintln!(
            "nanobragg-compare: {label} failed ({}); last lines of its output:\n    {tail}",
            status_text(output.status.code())
        );
        Err(format!("{label} failed ({})", status_text(output.status.code())))
    };
    Ok(RunResult {
        code: output.status.code(),
        seconds,
        image,
    })
}

fn status_text(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".into(),
    }
}

/// Comparison statistics of two images of equal length (f64 accumulation).
#[derive(Debug, Clone, PartialEq)]
struct Stats {
    sum_c: f64,
    sum_nb: f64,
    max_c: f64,
    max_nb: f64,
    /// Pearson correlation; NaN when either image is constant.
    pearson: f64,
    rmse: f64,
    max_abs_diff: f64,
    /// Index of the largest |Δ| (first one).
    max_abs_diff_at: usize,
    nonfinite_c: usize,
    nonfinite_nb: usize,
}

fn stats(c: &[f32], nb: &[f32]) -> Stats {
    let n = c.len().max(1) as f64;
    let sum_c: f64 = c.iter().map(|&x| x as f64).sum();
    let sum_nb: f64 = nb.iter().map(|&x| x as f64).sum();
    let (mean_c, mean_nb) = (sum_c / n, sum_nb / n);
    let (mut cov, mut var_c, mut var_nb, mut sq) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let (mut max_abs, mut at) = (0.0f64, 0usize);
    for (i, (&a, &b)) in c.iter().zip(nb).enumerate() {
        let (a, b) = (a as f64, b as f64);
        let (da, db) = (a - mean_c, b - mean_nb);
        cov += da * db;
        var_c += da * da;
        var_nb += db * db;
        let d = b - a;
        sq += d * d;
        if d.abs() > max_abs || (d.is_nan() && !max_abs.is_nan()) {
            max_abs = d.abs();
            at = i;
        }
    }
    let fmax = |v: &[f32]| v.iter().map(|&x| x as f64).fold(f64::NEG_INFINITY, f64::max);
    Stats {
        sum_c,
        sum_nb,
        max_c: fmax(c),
        max_nb: fmax(nb),
        pearson: cov / (var_c * var_nb).sqrt(),
        rmse: (sq / n).sqrt(),
        max_abs_diff: max_abs,
        max_abs_diff_at: at,
        nonfinite_c: c.iter().filter(|x| !x.is_finite()).count(),
        nonfinite_nb: nb.iter().filter(|x| !x.is_finite()).count(),
    }
}

/// Symmetric colour scale of the difference image: the 99.9th percentile (nearest rank) of the
/// non-zero finite |nb − c| (photons); larger differences saturate. 0 when the images agree.
fn diff_scale(c: &[f32], nb: &[f32]) -> f64 {
    let mut d: Vec<f64> = c
        .iter()
        .zip(nb)
        .map(|(&a, &b)| (b as f64 - a as f64).abs())
        .filter(|d| d.is_finite() && *d > 0.0)
        .collect();
    if d.is_empty() {
        return 0.0;
    }
    let rank = ((0.999 * d.len() as f64).ceil() as usize).clamp(1, d.len()) - 1;
    *d.select_nth_unstable_by(rank, f64::total_cmp).1
}

/// RGB pixels of the difference nb − c: white where equal, towards red where nanobragg is
/// higher and towards blue where it is lower, full colour at ±`scale`; NaN is black.
fn diff_rgb(c: &[f32], nb: &[f32], scale: f64) -> Vec<u8> {
    let mut rgb = Vec::with_capacity(3 * c.len());
    for (&a, &b) in c.iter().zip(nb) {
        let d = b as f64 - a as f64;
        let px = if d.is_nan() {
            [0, 0, 0]
        } else if d == 0.0 || scale <= 0.0 {
            [255, 255, 255]
        } else {
            let fade = (255.0 * (1.0 - (d.abs() / scale).min(1.0))).round() as u8;
            if d > 0.0 {
                [255, fade, fade]
            } else {
                [fade, fade, 255]
            }
        };
        rgb.extend_from_slice(&px);
    }
    rgb
}

/// A JSON number, or null when not finite (JSON has no NaN or infinity).
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// The image size (fast, slow) from the flags (and any -img/-mask header), as nanobragg
/// resolves it.
fn image_size(flags: &[String]) -> Result<(usize, usize), Failure> {
    match parse_args(flags) {
        Ok(Parsed::Run(cfg, _)) => {
            let det = DetectorGeometry::new(&cfg.detector)
                .map_err(|e| Failure::Run(format!("nanobragg rejects these flags: {e}")))?;
            Ok((det.fpixels, det.spixels))
        }
        Ok(Parsed::Help) => Err(Failure::Usage("the C flags ask for help; nothing to compare".into())),
        Err(e) => Err(Failure::Run(format!("nanobragg rejects these flags: {e}"))),
    }
}

/// The previews (C's, ours, their difference) and both images as `.npy` in `out`.
fn write_images(
    out: &Path,
    (fpixels, spixels): (usize, usize),
    ci: &[f32],
    ni: &[f32],
    scale: &LogScale,
    dscale: f64,
) -> Result<(), Failure> {
    let io = |r: nanobragg::Result<()>| r.map_err(|e| Failure::Run(e.to_string()));
    io(write_png_preview_scaled(
        &out.join("c.png"),
        fpixels,
        spixels,
        ci,
        scale,
    ))?;
    io(write_png_preview_scaled(
        &out.join("nanobragg.png"),
        fpixels,
        spixels,
        ni,
        scale,
    ))?;
    io(write_png_rgb(
        &out.join("diff.png"),
        fpixels,
        spixels,
        &diff_rgb(ci, ni, dscale),
    ))?;
    io(write_npy_f32(&out.join("c.npy"), &[spixels, fpixels], ci))?;
    io(write_npy_f32(&out.join("nanobragg.npy"), &[spixels, fpixels], ni))?;

    Ok(())
}

/// The comparison on standard output.
fn print_report(out: &Path, (fpixels, spixels): (usize, usize), s: &Stats, (c_seconds, nb_seconds): (f64, f64)) {
    let (slow, fast) = (s.max_abs_diff_at / fpixels, s.max_abs_diff_at % fpixels);
    let sum_ratio = s.sum_nb / s.sum_c;
    let speed = if nb_seconds <= c_seconds {
        format!("nanobragg {:.2}x faster", c_seconds / nb_seconds)
    } else {
        format!("nanobragg {:.2}x slower", nb_seconds / c_seconds)
    };
    println!("compared {fpixels} x {spixels} pixels (fast x slow)");
    println!(
        "  runtime      C {:.3} s   nanobragg {:.3} s   ({speed})",
        c_seconds, nb_seconds
    );
    println!(
        "  sum          C {:.6e}   nanobragg {:.6e}   ratio {:.9}",
        s.sum_c, s.sum_nb, sum_ratio
    );
    println!("  max          C {:.6e}   nanobragg {:.6e}", s.max_c, s.max_nb);
    println!("  Pearson r    {:.12}", s.pearson);
    println!("  RMSE         {:.4e}", s.rmse);
    if s.max_abs_diff == 0.0 {
        println!("  max |diff|   0 (identical images)");
    } else {
        println!(
            "  max |diff|   {:.4e} at slow {slow}, fast {fast} ({:.3e} of C's max)",
            s.max_abs_diff,
            s.max_abs_diff / s.max_c
        );
    }
    if s.nonfinite_c + s.nonfinite_nb > 0 {
        println!(
            "  non-finite   C {} pixels, nanobragg {} pixels",
            s.nonfinite_c, s.nonfinite_nb
        );
    }
    println!(
        "  wrote c.png nanobragg.png diff.png c.npy nanobragg.npy summary.json to {}",
        out.display()
    );
}

fn run(args: &[OsString]) -> Result<(), Failure> {
    let Some(opts) = parse_options(args)? else {
        print!("{USAGE}");
        return Ok(());
    };
    let cwd = std::env::current_dir().map_err(|e| Failure::Run(format!("cannot read the current directory: {e}")))?;
    let c_bin = program_path(&opts.c_bin, &cwd);
    let nb_bin = program_path(&opts.nanobragg, &cwd);
    let resolved = resolve_file_flags(&opts.flags, &cwd);

    let (fpixels, spixels) = image_size(&resolved)?;
    let pixels = fpixels * spixels;

    let mut run_flags = resolved.clone();
    run_flags.extend(["-nonoise", "-nopgm", "-floatfile", FLOAT_NAME].map(String::from));

    let out = &opts.out;
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::Run(format!("cannot create output directory {}: {e}", out.display())))?;

    let c = run_program("C", &c_bin, &run_flags, &out.join("c.log"), pixels)?;
    let nb = run_program("nanobragg", &nb_bin, &run_flags, &out.join("nanobragg.log"), pixels)?;

    let mut summary = json!({
        "flags": opts.flags,
        "run_flags": run_flags,
        "c_bin": c_bin.to_string_lossy(),
        "nanobragg_bin": nb_bin.to_string_lossy(),
        "fpixels": fpixels,
        "spixels": spixels,
        "pixels": pixels,
        "exit_code": { "c": c.code, "nanobragg": nb.code },
        "runtime_s": { "c": c.seconds, "nanobragg": nb.seconds },
        "speed_ratio_c_over_nanobragg": num(c.seconds / nb.seconds),
    });
    let write_summary = |summary: &Value| {
        let text = serde_json::to_string_pretty(summary).unwrap_or_default() + "\n";
        write_atomic(&out.join("summary.json"), text.as_bytes()).map_err(|e| Failure::Run(e.to_string()))
    };

    let (ci, ni) = match (&c.image, &nb.image) {
        (Ok(ci), Ok(ni)) => (ci, ni),
        (ci, ni) => {
            let problems: Vec<&str> = [ci, ni]
                .into_iter()
                .filter_map(|r| r.as_ref().err())
                .map(String::as_str)
                .collect();
            let msg = format!("{}; see the logs in {}", problems.join(", "), out.display());
            summary["error"] = json!(msg);
            write_summary(&summary)?;
            return Err(Failure::Run(msg));
        }
    };

    let s = stats(ci, ni);
    let scale = LogScale::from_images(&[ci, ni]);
    let dscale = diff_scale(ci, ni);
    write_images(out, (fpixels, spixels), ci, ni, &scale, dscale)?;

    let (slow, fast) = (s.max_abs_diff_at / fpixels, s.max_abs_diff_at % fpixels);
    let sum_ratio = s.sum_nb / s.sum_c;
    let obj = summary.as_object_mut().expect("summary is an object");
    obj.insert("sum".into(), json!({ "c": num(s.sum_c), "nanobragg": num(s.sum_nb) }));
    obj.insert("sum_ratio_nanobragg_over_c".into(), num(sum_ratio));
    obj.insert("max".into(), json!({ "c": num(s.max_c), "nanobragg": num(s.max_nb) }));
    obj.insert("pearson_r".into(), num(s.pearson));
    obj.insert("rmse".into(), num(s.rmse));
    obj.insert("max_abs_diff".into(), num(s.max_abs_diff));
    obj.insert("max_abs_diff_at".into(), json!({ "slow": slow, "fast": fast }));
    obj.insert(
        "nonfinite_pixels".into(),
        json!({ "c": s.nonfinite_c, "nanobragg": s.nonfinite_nb }),
    );
    obj.insert(
        "preview".into(),
        json!({
            "log_s": scale.s,
            "log_top": scale.top,
            "diff_scale": dscale,
            "diff": "nanobragg - C: red > 0, blue < 0, white 0, full colour at +-diff_scale",
        }),
    );
    write_summary(&summary)?;

    print_report(out, (fpixels, spixels), &s, (c.seconds, nb.seconds));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        let c = [0.0f32, 1.0, 2.0, 3.0];
        let nb = [0.0f32, 1.0, 2.5, 3.0];
        let s = stats(&c, &nb);
        assert_eq!(s.sum_c, 6.0);
        assert_eq!(s.sum_nb, 6.5);
        assert_eq!(s.max_abs_diff, 0.5);
        assert_eq!(s.max_abs_diff_at, 2);
        assert!((s.rmse - 0.25).abs() < 1e-15);
        assert!(s.pearson > 0.98 && s.pearson < 1.0);
        let same = stats(&c, &c);
        assert!((same.pearson - 1.0).abs() < 1e-15);
        assert_eq!(same.rmse, 0.0);
        assert!(stats(&[1.0, 1.0], &[1.0, 1.0]).pearson.is_nan());
        let nan = stats(&[1.0, 2.0], &[1.0, f32::NAN]);
        assert_eq!(nan.nonfinite_nb, 1);
        assert_eq!(nan.max_abs_diff_at, 1);
    }

    #[test]
    fn difference_colours() {
        let c = [1.0f32, 1.0, 1.0, 1.0, 1.0];
        let nb = [1.0f32, 2.0, 0.0, 1.5, f32::NAN];
        let scale = diff_scale(&c, &nb);
        assert_eq!(scale, 1.0);
        let rgb = diff_rgb(&c, &nb, scale);
        assert_eq!(&rgb[0..3], &[255, 255, 255]);
        assert_eq!(&rgb[3..6], &[255, 0, 0]);
        assert_eq!(&rgb[6..9], &[0, 0, 255]);
        assert_eq!(&rgb[9..12], &[255, 128, 128]);
        assert_eq!(&rgb[12..15], &[0, 0, 0]);
        assert_eq!(diff_scale(&c, &c), 0.0);
        assert!(diff_rgb(&c, &c, 0.0).iter().all(|&b| b == 255));
    }

    #[test]
    fn file_flags_are_resolved() {
        let cwd = Path::new("/work/here");
        let flags: Vec<String> = ["-hkl", "p.hkl", "-mat", "/abs/a.mat", "-floatfile", "x.bin", "-mask"]
            .map(String::from)
            .to_vec();
        let r = resolve_file_flags(&flags, cwd);
        assert_eq!(r[1], "/work/here/p.hkl");
        assert_eq!(r[3], "/abs/a.mat");
        assert_eq!(r[5], "x.bin");
        assert_eq!(r[6], "-mask");
        assert_eq!(program_path(Path::new("nanoBragg"), cwd), Path::new("nanoBragg"));
        assert_eq!(
            program_path(Path::new("./bin/nb"), cwd),
            Path::new("/work/here/./bin/nb")
        );
    }

    #[test]
    fn option_parsing() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let o = parse_options(&a(&["--c-bin", "/c", "--out=o", "--nanobragg", "/n", "--", "-N", "5"]))
            .ok()
            .flatten()
            .unwrap();
        assert_eq!(o.c_bin, Path::new("/c"));
        assert_eq!(o.out, Path::new("o"));
        assert_eq!(o.nanobragg, Path::new("/n"));
        assert_eq!(o.flags, ["-N", "5"]);
        assert!(matches!(parse_options(&a(&["--help"])), Ok(None)));
        assert!(matches!(
            parse_options(&a(&["--c-bin", "/c", "-N", "5"])),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(
            parse_options(&a(&["--c-bin", "/c", "--"])),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(parse_options(&a(&["--c-bin"])), Err(Failure::Usage(_))));
        assert!(matches!(
            parse_options(&a(&["--bogus", "x", "--", "-N", "5"])),
            Err(Failure::Usage(_))
        ));
    }
}
