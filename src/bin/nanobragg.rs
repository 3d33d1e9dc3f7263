//! `nanobragg`: drop-in replacement for the C nanoBragg program.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nanobragg::cli::{parse_args, usage, Parsed, RunOptions};
use nanobragg::config::{HklSource, Pivot, SimConfig};
use nanobragg::engine::Engine;
use nanobragg::io::cfmt::fmt_g;
use nanobragg::io::{
    fdump::write_fdump, npy::write_npy_f32, pgm::write_pgm, png::write_png_preview, raw::write_float_image,
    smv::write_smv,
};
use nanobragg::output::{int_image, int_scale, noise_image, pgm_image, pgm_scale, smv_fields, Statistics};
use nanobragg::setup::{crystal::time_seed, load_structure_factors, Experiment};
use nanobragg::simulate::{Image, Progress, RenderOptions};
use nanobragg::trace::trace_pixel;
use nanobragg::{Error, Result};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// C exits with 9 on bad input; so do we, for every error.
const EXIT_ERROR: u8 = 9;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nanobragg: error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    // -shots FILE / -shots_random N: many shots on top of the other flags (docs/many-shots.md)
    if let Some((base, shot_opts)) = nanobragg::shots::split_args(args)? {
        nanobragg::shots::run(&base, &shot_opts)?;
        return Ok(());
    }
    let (cfg, run_opts) = match parse_args(args)? {
        Parsed::Help => {
            print!("{}", usage());
            return Ok(());
        }
        Parsed::Run(cfg, opts) => (*cfg, opts),
    };
    let engine = run_opts.engine()?;
    check_output_dirs(&cfg)?;
    let grid = load_structure_factors(&cfg)?;
    let exp = Experiment::with_structure_factors(&cfg, grid)?;
    if let (HklSource::File(_), Some(grid)) = (&cfg.crystal.hkl, &exp.structure_factors.grid) {
        // as C: cache the structure factors for runs without -hkl
        write_fdump(std::path::Path::new("Fdump.bin"), grid)?;
    }
    for w in &exp.warnings {
        println!("WARNING: {w}");
    }
    print_setup(&exp);
    // an engine that cannot start fails here, before anything is rendered
    let device = engine.probe()?;
    if engine != Engine::default() {
        println!("engine: {} on {device}", engine.name());
    }
    let image = engine.render(&exp, &render_options(&cfg, &run_opts))?;
    let non_finite = image.data.iter().filter(|v| !v.is_finite()).count();
    if non_finite > 0 {
        println!("WARNING: {non_finite} pixels overflowed to infinity (as C: e.g. -point_pixel with -oversample_omega multiplies the running sum by 1/R² per term)");
    }
    if image.interpolation_fell_back {
        println!("WARNING: out of range for three point interpolation: nearest neighbour used from there on");
    }
    if cfg.output.printout && cfg.output.printout_pixel.is_none() {
        print_pixels(&exp, &image);
    }
    print_traces(&cfg, &exp);
    write_outputs(&cfg, &exp, &image)?;
    write_derivatives(&cfg, &exp, &run_opts)
}

/// `-derivative NAME FILE`: exact per-pixel derivatives, raw f32 like `-floatfile`.
fn write_derivatives(cfg: &SimConfig, exp: &Experiment, run_opts: &RunOptions) -> Result<()> {
    let wanted = &cfg.output.derivatives;
    if wanted.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = wanted.iter().map(|(n, _)| n.as_str()).collect();
    let opts = RenderOptions {
        progress: None,
        ..render_options(cfg, run_opts)
    };
    let images = run_opts.engine()?.derivatives(cfg, exp, &names, &opts)?;
    for ((_, path), d) in wanted.iter().zip(images) {
        write_float_image(path, &d.data)?;
        println!(
            "writing {} as {} 4-byte floats: d(pixel value)/d({}) per {}",
            path.display(),
            d.data.len(),
            d.spec.name,
            d.spec.unit
        );
    }
    Ok(())
}

/// `-printout` alone: every rendered pixel's value, as C lists them.
fn print_pixels(exp: &Experiment, image: &Image) {
    for idx in exp.active_pixels() {
        let idx = idx as usize;
        let (s, f) = (idx / image.fpixels, idx % image.fpixels);
        println!("{f:4} {s:4} : I = {}", fmt_g(image.data[idx] as f64));
    }
}

/// `-trace_pixel s f` and `-printout_pixel f s`: C's per-pixel trace of intermediate values.
fn print_traces(cfg: &SimConfig, exp: &Experiment) {
    let out = &cfg.output;
    let wanted = out
        .trace_pixel
        .map(|(s, f)| (f, s))
        .into_iter()
        .chain(out.printout_pixel);
    for (f, s) in wanted {
        let traced = usize::try_from(f)
            .ok()
            .zip(usize::try_from(s).ok())
            .and_then(|(f, s)| trace_pixel(exp, f, s));
        match traced {
            Some(t) => {
                println!("TRACE: pixel fast={f} slow={s}");
                for line in t.lines {
                    println!("TRACE: {line}");
                }
            }
            None => println!("WARNING: pixel fast={f} slow={s} is not on the detector; nothing to trace"),
        }
    }
}

fn write_outputs(cfg: &SimConfig, exp: &Experiment, image: &Image) -> Result<()> {
    let out = &cfg.output;
    let sr = image.omega_sum / exp.steps as f64;
    let g = fmt_g;
    println!(
        "solid angle subtended by detector = {} steradian ( {}% sphere)",
        g(sr),
        g(100.0 * sr / 4.0 / std::f64::consts::PI)
    );
    let stats = Statistics::new(exp, image);
    write_float_image(&out.floatfile, &image.data)?;
    println!(
        "writing {} as {} 4-byte floats",
        out.floatfile.display(),
        image.data.len()
    );
    println!(
        "max_I = {}  at {} {}",
        g(stats.max_i),
        g(stats.max_at.0),
        g(stats.max_at.1)
    );
    println!("mean= {} rms= {} rmsd= {}", g(stats.mean), g(stats.rms), g(stats.rmsd));
    let scale = int_scale(out.scale, &stats);
    println!("intfile_scale = {}", g(scale));
    let fields = smv_fields(exp);
    write_smv(&out.intfile, &fields, &int_image(exp, image, scale, out.adc))?;
    println!("writing {} as 2-byte integers", out.intfile.display());
    if let Some(pgm) = &out.pgmfile {
        let s = pgm_scale(out.pgmscale, scale, &stats);
        println!("pgm_scale = {}", g(s));
        write_pgm(pgm, image.fpixels, image.spixels, s, &pgm_image(exp, image, s))?;
        println!("writing {} as 1-byte integers", pgm.display());
    }
    if let Some(png) = &out.pngfile {
        write_png_preview(png, image.fpixels, image.spixels, &image.data)?;
        println!("writing {} as a log-scaled PNG preview", png.display());
    }
    if let Some(npy) = &out.npyfile {
        write_npy_f32(npy, &[image.spixels, image.fpixels], &image.data)?;
        println!(
            "writing {} as a [{}, {}] float32 NumPy array",
            npy.display(),
            image.spixels,
            image.fpixels
        );
    }
    if let Some(noisefile) = &out.noisefile {
        let seed = out.seed.unwrap_or_else(time_seed);
        let (noisy, photons, overloads) = noise_image(exp, image, seed, out.adc);
        println!("{photons:.0} photons on noise image ({overloads} overloads)");
        write_smv(noisefile, &fields, &noisy)?;
        println!("writing {} as 2-byte integers", noisefile.display());
    }
    Ok(())
}

/// Fail before a long render if an output file's directory does not exist.
fn check_output_dirs(cfg: &SimConfig) -> Result<()> {
    let out = &cfg.output;
    let files = [
        Some(&out.floatfile),
        Some(&out.intfile),
        out.pgmfile.as_ref(),
        out.noisefile.as_ref(),
        out.pngfile.as_ref(),
        out.npyfile.as_ref(),
    ];
    let derivatives = out.derivatives.iter().map(|(_, p)| Some(p));
    for path in files.into_iter().chain(derivatives).flatten() {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "directory does not exist"),
            ));
        }
    }
    Ok(())
}

fn render_options(cfg: &SimConfig, opts: &RunOptions) -> RenderOptions {
    let mut r = RenderOptions::default();
    if let Some(b) = opts.memory_budget_bytes {
        r.memory_budget = b;
    }
    if cfg.output.progress && std::io::stderr().is_terminal() {
        r.progress = Some(progress_bar());
    }
    r
}

/// A progress bar on stderr that appears once a render has run for a second.
fn progress_bar() -> Progress {
    let start = Instant::now();
    let bar: Mutex<Option<ProgressBar>> = Mutex::new(None);
    Arc::new(move |done, total| {
        if start.elapsed() < Duration::from_secs(1) && done < total {
            return;
        }
        let mut bar = bar.lock().unwrap_or_else(|e| e.into_inner());
        let b = bar.get_or_insert_with(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{bar:40} {percent:>3}% {pos}/{len} pixels, {eta} left") {
                b.set_style(style);
            }
            b
        });
        b.set_position(done as u64);
        if done >= total {
            b.finish_and_clear();
        }
    })
}

fn print_setup(exp: &Experiment) {
    let d = &exp.detector;
    let g = fmt_g;
    let around = if d.pivot == Pivot::Beam {
        "direct beam spot"
    } else {
        "sample"
    };
    println!(
        "{:?} convention selected, pivoting detector around {around}",
        d.convention
    );
    println!(
        "DETECTOR_PIX0_VECTOR {} {} {}",
        g(d.pix0[0]),
        g(d.pix0[1]),
        g(d.pix0[2])
    );
    let [a, b, c, al, be, ga] = exp.lattice.cell_parameters().map(g);
    println!("Unit Cell: {a} {b} {c} {al} {be} {ga}");
    if let Some(m) = exp.lattice.misset {
        println!(
            "misset angles: {} {} {} deg",
            g(m[0].to_degrees()),
            g(m[1].to_degrees()),
            g(m[2].to_degrees())
        );
    }
    let [na, nb, nc] = exp.n_cells;
    println!(
        "  {} sources, {} mosaic domains, {} phi steps",
        exp.sources.len(),
        exp.mosaic_umats.len(),
        exp.phi.count
    );
    println!("  xtal: {na}x{nb}x{nc} cells");
    println!(
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        g(d.distance),
        g(d.detsize_f),
        g(d.detsize_s),
        g(d.pixel_size),
        d.fpixels,
        d.spixels
    );
    println!("  Xbeam={} Ybeam={}", g(d.xbeam), g(d.ybeam));
    println!("  Fbeam={} Sbeam={}", g(d.fbeam), g(d.sbeam));
    println!("  Fclose={} Sclose={}", g(d.fclose), g(d.sclose));
    println!("  {}x{} pixel oversample steps", exp.oversample, exp.oversample);
}
