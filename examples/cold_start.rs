//! Cold start: the first render of an engine in a process (kernel compilation, autotuning,
//! device start) against warm repeats, and what a new configuration costs afterwards.
//!
//! `cargo run --release --example cold_start -- [ENGINE] [N]`
//!
//! ENGINE is an [`Engine`] id (`cpu`, `cpu-f32`, `wgpu`, `wgpu-nofusion`); without one, each
//! engine runs in its own fresh process (the CPU precisions cannot share one, and each engine
//! should start cold). N is the detector size of the default configuration (512).
//! Prints one line per step: milliseconds and what the step shows.

use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::{Experiment, RenderOptions, SimConfig};
use std::time::Instant;

fn config(flags: &str) -> nanobragg::Result<(SimConfig, Experiment)> {
    let args: Vec<&str> = flags.split_whitespace().collect();
    let Parsed::Run(cfg, _) = parse_args(&args)? else {
        unreachable!("no -h given")
    };
    let exp = Experiment::new(&cfg)?;
    Ok((*cfg, exp))
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn steps(engine: Engine, n: usize) -> nanobragg::Result<()> {
    let opts = RenderOptions::default();
    let t = Instant::now();
    let device = engine.probe()?;
    println!(
        "{:<15} probe                         {:>9.1} ms  {device}",
        engine.id(),
        ms(t)
    );
    let base = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
    let (_, light) = config(&format!("{base} -detpixels {n}"))?;
    let (_, bigger) = config(&format!("{base} -detpixels {}", 2 * n))?;
    let heavy_flags = format!("{base} -detpixels {n} -mosaic 0.5 -mosaic_dom 10 -phisteps 5 -osc 0.5 -oversample 2");
    let (_, heavy) = config(&heavy_flags)?;
    let grad_flags = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 -distance 80 \
        -pixel 0.4 -detpixels 64 -mosaic 0.5 -mosaic_dom 3 -phi 5 -osc 2 -phisteps 2 -polar 0.8 -oversample 1";
    let (gcfg, gexp) = config(grad_flags)?;
    let step = |what: &str, f: &mut dyn FnMut() -> nanobragg::Result<()>| -> nanobragg::Result<()> {
        let t = Instant::now();
        f()?;
        println!("{:<15} {what:<29} {:>9.1} ms", engine.id(), ms(t));
        Ok(())
    };
    let render = |exp: &Experiment, e: Engine| e.render(exp, &opts).map(|_| ());
    step(&format!("{n}² first render"), &mut || render(&light, engine))?;
    step(&format!("{n}² second render"), &mut || render(&light, engine))?;
    // an Engine is a plain value: a new one shares the process's device and kernel cache
    let again: Engine = engine.id().parse()?;
    step(&format!("{n}² new Engine value"), &mut || render(&light, again))?;
    step(&format!("{}² first (new size)", 2 * n), &mut || {
        render(&bigger, engine)
    })?;
    step(&format!("{}² second", 2 * n), &mut || render(&bigger, engine))?;
    step(&format!("{n}² heavy first"), &mut || render(&heavy, engine))?;
    step(&format!("{n}² heavy second"), &mut || render(&heavy, engine))?;
    let vjp = || engine.image_vjp(&gcfg, &gexp, None, &opts).map(|_| ());
    step("64² gradient first", &mut || vjp())?;
    step("64² gradient second", &mut || vjp())?;
    Ok(())
}

fn main() -> nanobragg::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(512);
    match args.first() {
        Some(id) => steps(id.parse()?, n),
        None => {
            let exe = std::env::current_exe().map_err(|e| nanobragg::Error::io("current_exe", e))?;
            for engine in Engine::ALL {
                let status = std::process::Command::new(&exe)
                    .args([engine.id(), &n.to_string()])
                    .status()
                    .map_err(|e| nanobragg::Error::io(&exe, e))?;
                if !status.success() {
                    eprintln!("{}: {status}", engine.id());
                }
            }
            Ok(())
        }
    }
}
