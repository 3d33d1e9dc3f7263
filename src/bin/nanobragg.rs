//! `nanobragg`: drop-in replacement for the C nanoBragg program.

use nanobragg::cli::{parse_args, usage, Parsed, RunOptions};
use nanobragg::config::HklSource;
use nanobragg::engine::{Engine, Precision};
use nanobragg::io::{fdump::write_fdump, raw::write_float_image};
use nanobragg::setup::{load_structure_factors, Experiment};
use nanobragg::simulate::{Image, RenderOptions};
use nanobragg::Result;
use std::process::ExitCode;

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
    let (cfg, run_opts) = match parse_args(args)? {
        Parsed::Help => {
            print!("{}", usage());
            return Ok(());
        }
        Parsed::Run(cfg, opts) => (*cfg, opts),
    };
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
    let image = engine(&run_opts).render(&exp, &render_options(&run_opts))?;
    print_statistics(&exp, &image);
    write_float_image(&cfg.output.floatfile, &image.data)?;
    println!(
        "wrote {} as {} 4-byte floats",
        cfg.output.floatfile.display(),
        image.data.len()
    );
    Ok(())
}

fn engine(opts: &RunOptions) -> Engine {
    let precision = if opts.precision_f32 {
        Precision::F32
    } else {
        Precision::F64
    };
    Engine::Cpu { precision }
}

fn render_options(opts: &RunOptions) -> RenderOptions {
    let mut r = RenderOptions::default();
    if let Some(b) = opts.memory_budget_bytes {
        r.memory_budget = b;
    }
    r
}

fn print_setup(exp: &Experiment) {
    let d = &exp.detector;
    println!("  {:?} convention, pivot {:?}", d.convention, d.pivot);
    println!("DETECTOR_PIX0_VECTOR {} {} {}", d.pix0[0], d.pix0[1], d.pix0[2]);
    println!(
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        d.distance, d.detsize_f, d.detsize_s, d.pixel_size, d.fpixels, d.spixels
    );
    println!(
        "  Fbeam={} Sbeam={}  Fclose={} Sclose={}",
        d.fbeam, d.sbeam, d.fclose, d.sclose
    );
    println!(
        "  {} sources, {} mosaic domains, {} phi steps, {}x{} pixel oversample steps",
        exp.sources.len(),
        exp.mosaic_umats.len(),
        exp.phi.count,
        exp.oversample,
        exp.oversample
    );
}

fn print_statistics(exp: &Experiment, image: &Image) {
    let active = exp.active_pixels();
    let n = active.len().max(1) as f64;
    let (mut sum, mut sumsq, mut max) = (0.0f64, 0.0f64, f64::MIN);
    for &i in &active {
        let v = image.data[i as usize] as f64;
        sum += v;
        sumsq += v * v;
        max = max.max(v);
    }
    let sr = image.omega_sum / exp.steps as f64;
    println!(
        "solid angle subtended by detector = {sr} steradian ( {}% sphere)",
        100.0 * sr / 4.0 / std::f64::consts::PI
    );
    println!("max_I = {max}");
    println!("mean= {} rms= {}", sum / n, (sumsq / (n - 1.0).max(1.0)).sqrt());
}
