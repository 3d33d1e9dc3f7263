//! The `nanobragg` program's whole run, callable in-process: the binary's `main` and the
//! Python package's `nanobragg.main(argv)` both call [`main`], so they print, write and exit
//! alike.

use crate::app::console::Console;
use crate::base::cfmt::fmt_g;
use crate::config::{HklSource, OutputConfig, Pivot, SimConfig};
use crate::engine::Engine;
use crate::experiment::args::{parse_args, usage, Parsed, RunOptions};
use crate::experiment::panels::custom::{panel_configs, run_frame};
use crate::experiment::panels::motion::{motion_index, panel_coefficients, BASE, MOTION_SPECS};
use crate::experiment::{crystal::time_seed, load_structure_factors, Experiment};
use crate::gradients::derivative::DerivativeImage;
use crate::io::hkl::HklGrid;
use crate::io::panels::PanelLayout;
use crate::io::{
    cbf::write_cbf_from,
    fdump::write_fdump,
    npy::{write_npy_f32, write_npy_f32_parts},
    pgm::write_pgm,
    png::write_png_preview,
    raw::{write_float_image, write_float_parts},
    smv::{write_smv, SmvFields},
};
use crate::render::amorphous::BackgroundScene;
use crate::render::nexus::{write_nexus_image, write_nexus_panels};
use crate::render::output::{
    cbf_header, clip_to_u16, int_counts, int_pixels, int_scale, int_scale_of_max, pgm_pixels, pgm_scale, smv_fields,
    NoisePixels, Statistics,
};
use crate::render::trace::trace_pixel;
use crate::render::{Image, Progress, RenderOptions};
use crate::{Error, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::app::console::EXIT_ERROR;

/// Standard output, where C prints its log.
type Out = Console<std::io::Stdout>;

/// Run the program on `args` (without the program name): print C's log to standard output,
/// write the outputs, and return the exit status: 0, or [`EXIT_ERROR`] after printing
/// `nanobragg: error: …` to standard error.
pub fn main(args: &[String]) -> u8 {
    crate::app::console::exit_status("nanobragg", &mut Console::stdout(), |con| run(args, con))
}

fn run(args: &[String], con: &mut Out) -> Result<()> {
    // -shots FILE / -shots_random N: many shots on top of the other flags (docs/many-shots.md)
    if let Some((base, shot_opts)) = crate::app::shots::split_args(args)? {
        crate::app::shots::run(&base, &shot_opts)?;
        return Ok(());
    }
    let (cfg, run_opts) = match parse_args(args)? {
        Parsed::Help => {
            write!(con, "{}", usage())?;
            return Ok(());
        }
        Parsed::Run(cfg, opts) => (*cfg, opts),
    };
    // before any pool or adapter starts: llvmpipe reads its thread count when it loads
    let threads = run_opts.apply_threads()?;
    let engine = run_opts.engine()?;
    check_output_dirs(&cfg)?;
    let grid = load_structure_factors(&cfg)?;
    if let (HklSource::File(_), Some(grid)) = (&cfg.crystal.hkl, &grid) {
        // as C: cache the structure factors for runs without -hkl
        write_fdump(std::path::Path::new("Fdump.bin"), grid)?;
    }
    if let Some(layout) = &cfg.detector.panels {
        return run_panels(&cfg, layout, grid, &run_opts, threads, con);
    }
    let exp = Experiment::with_structure_factors(&cfg, grid)?;
    for w in &exp.warnings {
        writeln!(con, "WARNING: {w}")?;
    }
    print_setup(&exp, con)?;
    // the -stol table is read before anything is rendered
    let amorphous = BackgroundScene::of_experiment(&exp, &cfg.crystal.amorphous)?;
    // an engine that cannot start fails here, before anything is rendered
    let device = engine.probe()?;
    if engine != Engine::default() {
        writeln!(con, "engine: {} on {device}", engine.name())?;
    }
    let render = render_options(&cfg, &run_opts, threads);
    let image = match &amorphous {
        None => engine.render(&exp, &render)?,
        Some(scene) => {
            writeln!(
                con,
                "adding the amorphous background of {} molecules",
                fmt_g(scene.molecules)
            )?;
            engine.render_with_background(&exp, &render, scene)?
        }
    };
    check_finite(&exp, &image, run_opts.allow_nonfinite, con)?;
    // the derivatives too are checked before anything is written
    let derivatives = derivatives(&cfg, &exp, &render, &run_opts, con)?;
    if image.interpolation_fell_back {
        writeln!(
            con,
            "WARNING: out of range for three point interpolation: nearest neighbour used from there on"
        )?;
    }
    if cfg.output.printout && cfg.output.printout_pixel.is_none() {
        print_pixels(&exp, &image, con)?;
    }
    print_traces(&cfg, &exp, con)?;
    write_outputs(&cfg, &exp, &image, None, true, con)?;
    write_derivatives(&cfg, &derivatives, con)
}

/// A detector of several panels (`-geom`, `-detector_expt`): each panel rendered as its own
/// CUSTOM detector (`crate::experiment::panels::custom`), in the file's order. `-floatfile` and
/// `-npyfile` hold all panels, `[P, slow, fast]`; the other images are written per panel,
/// named `STEM_PANEL.EXT`, with one `-intfile` scale for all panels (from the brightest pixel
/// of the detector unless `-scale`), and panel k's noise drawn from seed `-seed` + k.
fn run_panels(
    cfg: &SimConfig,
    layout: &PanelLayout,
    grid: Option<HklGrid>,
    run_opts: &RunOptions,
    threads: usize,
    con: &mut Out,
) -> Result<()> {
    let out = &cfg.output;
    let refuse = |flag: &str| Err(Error::flag(flag, "not yet written for a detector of several panels"));
    if out.trace_pixel.is_some() {
        return refuse("-trace_pixel");
    }
    if cfg.crystal.amorphous.table.is_some() {
        return refuse("-stol");
    }
    let sizes = |p: &crate::io::panels::Panel| (p.fpixels, p.spixels);
    if out.nexusfile.is_some() && layout.panels.iter().any(|p| sizes(p) != sizes(&layout.panels[0])) {
        return Err(Error::flag(
            "-nexusfile",
            "stacks the panels' images [panels, slow, fast]: every panel needs the same size",
        ));
    }
    if out.printout || out.printout_pixel.is_some() {
        return refuse("-printout");
    }
    let configs = panel_configs(cfg, layout, "-geom/-detector_expt")?;
    let engine = run_opts.engine()?;
    let device = engine.probe()?;
    if engine != Engine::default() {
        writeln!(con, "engine: {} on {device}", engine.name())?;
    }
    let render = render_options(cfg, run_opts, threads);
    let names = layout.file_names();
    let grouping = layout.grouping(cfg.detector.panel_groups.as_deref().unwrap_or("panels"))?;
    let (beam, polar) = run_frame(cfg)?;
    let coefficients = panel_coefficients(layout, &grouping, beam, polar);
    let mut rendered = Vec::with_capacity(configs.len());
    let mut derivatives = Vec::with_capacity(configs.len());
    for (k, pc) in configs.iter().enumerate() {
        let exp = Experiment::with_structure_factors(pc, grid.clone())?;
        if k == 0 {
            print_setup(&exp, con)?;
        }
        let d = &exp.detector;
        writeln!(
            con,
            "panel {} ({}/{}): {}x{} pixels of {} m, pix0 {} {} {}",
            layout.panels[k].name,
            k + 1,
            configs.len(),
            d.fpixels,
            d.spixels,
            fmt_g(d.pixel_size),
            fmt_g(d.pix0[0]),
            fmt_g(d.pix0[1]),
            fmt_g(d.pix0[2])
        )?;
        let image = engine.render(&exp, &render)?;
        check_finite(&exp, &image, run_opts.allow_nonfinite, con)?;
        let images = panel_derivatives(pc, &exp, &coefficients[k], &render, &engine)?;
        check_derivatives(&images, run_opts.allow_nonfinite, con)?;
        derivatives.push(images);
        // the outputs need no structure factors: keep one copy of the grid, not one a panel
        let mut exp = exp;
        exp.structure_factors.grid = None;
        rendered.push((exp, image));
    }
    write_panel_images(cfg, &rendered, con)?;
    write_panel_derivatives(cfg, &derivatives, con)?;
    // each panel's statistics once: the detector's brightest pixel, then its own printout
    let stats: Vec<Statistics> = rendered.iter().map(|(exp, image)| Statistics::of(exp, image)).collect();
    let max_i = stats.iter().map(|s| s.max_i).fold(0.0, f64::max);
    let scale = int_scale_of_max(out.scale, max_i);
    let seed = out.seed.unwrap_or_else(time_seed);
    for (k, (((exp, image), name), stats)) in rendered.iter().zip(&names).zip(stats).enumerate() {
        writeln!(con, "panel {}:", layout.panels[k].name)?;
        let per_panel = panel_outputs(cfg, name, scale, seed.wrapping_add(k as i64));
        write_outputs(&per_panel, exp, image, Some(stats), false, con)?;
    }
    if let Some(nexus) = &out.nexusfile {
        write_panels_nexus(nexus, cfg, &rendered, scale, seed)?;
        writeln!(
            con,
            "writing {} as NeXus NXmx, one module per panel (4-byte integers and floats)",
            nexus.display()
        )?;
    }
    Ok(())
}

/// `-nexusfile` of a multi-panel run: one NXdetector_module per panel, the stacks
/// `[1, panels, slow, fast]`. The counts are each panel's noise image when noise is on (drawn
/// again from the panel's seed: the very counts of its `-noisefile`), else its `-intfile`
/// counts with the detector's scale.
fn write_panels_nexus(
    path: &std::path::Path,
    cfg: &SimConfig,
    rendered: &[(Experiment, Image)],
    scale: f64,
    seed: i64,
) -> Result<()> {
    let out = &cfg.output;
    let counts = rendered.iter().enumerate().flat_map(|(k, (exp, image))| {
        let counts: Box<dyn Iterator<Item = i32>> = match out.noisefile {
            Some(_) => Box::new(NoisePixels::for_output(exp, image, seed.wrapping_add(k as i64), out)),
            None => Box::new(int_counts(exp, image, scale, out.adc)),
        };
        counts
    });
    let panels: Vec<(&Experiment, &[f32])> = rendered
        .iter()
        .map(|(exp, image)| (exp, image.data.as_slice()))
        .collect();
    write_nexus_panels(path, &panels, counts)
}

/// `-derivative NAME FILE` for one panel, in the order asked: ∂pixel/∂NAME with NAME the
/// panel's own parameter where it is a detector one (its CUSTOM detector's `close_distance`,
/// `Xbeam` = `-Xclose`, `Ybeam` = `-Yclose`, `detector_rotx/y/z` about the lab axes through
/// the sample), its group's motion for `panel_*` (a combination of those, by `coefficients`:
/// `crate::experiment::panels::motion`), the run's otherwise. Empty when no derivative is asked for.
fn panel_derivatives(
    cfg: &SimConfig,
    exp: &Experiment,
    coefficients: &[[f64; 6]; 6],
    render: &RenderOptions,
    engine: &Engine,
) -> Result<Vec<DerivativeImage>> {
    let asked: Vec<&str> = cfg.output.derivatives.iter().map(|(n, _)| n.as_str()).collect();
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    // the motions' base images are rendered with the others, once each
    let mut names: Vec<&str> = asked.iter().copied().filter(|n| motion_index(n).is_none()).collect();
    if asked.iter().any(|n| motion_index(n).is_some()) {
        let missing: Vec<&str> = BASE.iter().copied().filter(|b| !names.contains(b)).collect();
        names.extend(missing);
    }
    let opts = RenderOptions {
        progress: None,
        ..render.clone()
    };
    let images = engine.derivatives(cfg, exp, &names, &opts)?;
    let image_of = |name: &str| &images[names.iter().position(|n| *n == name).expect("rendered")];
    let combine = |m: usize| {
        // the six base images, found once
        let base: Vec<&[f32]> = BASE.iter().map(|b| image_of(b).data.as_slice()).collect();
        DerivativeImage {
            spec: MOTION_SPECS[m],
            data: (0..exp.detector.pixels())
                .map(|p| (0..6).map(|b| coefficients[m][b] * base[b][p] as f64).sum::<f64>() as f32)
                .collect(),
        }
    };
    Ok(asked
        .iter()
        .map(|n| match motion_index(n) {
            Some(m) => combine(m),
            None => image_of(n).clone(),
        })
        .collect())
}

/// `-derivative NAME FILE` of a multi-panel run: every panel's derivative image, one after the
/// other (`[P, slow, fast]` raw f32, as `-floatfile`).
fn write_panel_derivatives(cfg: &SimConfig, per_panel: &[Vec<DerivativeImage>], con: &mut Out) -> Result<()> {
    for (j, (_, path)) in cfg.output.derivatives.iter().enumerate() {
        let parts: Vec<&[f32]> = per_panel.iter().map(|d| d[j].data.as_slice()).collect();
        write_float_parts(path, &parts)?;
        let spec = &per_panel[0][j].spec;
        writeln!(
            con,
            "writing {} as {} 4-byte floats: d(pixel value)/d({}) per {}, each panel's own",
            path.display(),
            parts.iter().map(|p| p.len()).sum::<usize>(),
            spec.name,
            spec.unit
        )?;
    }
    Ok(())
}

/// `-floatfile` (and `-npyfile`): every panel's float image, one after the other, streamed
/// from the panels' images (the detector's image is held once).
fn write_panel_images(cfg: &SimConfig, rendered: &[(Experiment, Image)], con: &mut Out) -> Result<()> {
    let out = &cfg.output;
    let parts: Vec<&[f32]> = rendered.iter().map(|(_, image)| image.data.as_slice()).collect();
    write_float_parts(&out.floatfile, &parts)?;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    writeln!(
        con,
        "writing {} as {total} 4-byte floats ({} panels)",
        out.floatfile.display(),
        rendered.len()
    )?;
    let (f, s) = (rendered[0].1.fpixels, rendered[0].1.spixels);
    if let Some(npy) = &out.npyfile {
        if rendered.iter().any(|(_, i)| (i.fpixels, i.spixels) != (f, s)) {
            return Err(Error::flag(
                "-npyfile",
                "the panels differ in size; one array [panels, slow, fast] needs panels of one size",
            ));
        }
        write_npy_f32_parts(npy, &[rendered.len(), s, f], &parts)?;
        writeln!(
            con,
            "writing {} as a [{}, {s}, {f}] float32 NumPy array",
            npy.display(),
            rendered.len()
        )?;
    }
    Ok(())
}

/// `path` with `_PANEL` before its extension.
fn with_panel(path: &std::path::Path, panel: &str) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}_{panel}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{panel}"),
    };
    path.with_file_name(name)
}

/// The outputs of one panel: every per-image file renamed for the panel, the detector's
/// `-intfile` scale, and the panel's noise seed; the float image and NumPy array are written
/// for all panels at once.
fn panel_outputs(cfg: &SimConfig, panel: &str, scale: f64, seed: i64) -> SimConfig {
    let out = &cfg.output;
    let rename = |p: &Option<std::path::PathBuf>| p.as_deref().map(|p| with_panel(p, panel));
    let mut c = cfg.clone();
    c.output.intfile = with_panel(&out.intfile, panel);
    c.output.noisefile = rename(&out.noisefile);
    c.output.pgmfile = rename(&out.pgmfile);
    c.output.pngfile = rename(&out.pngfile);
    c.output.cbffile = rename(&out.cbffile);
    c.output.cbf_noisefile = rename(&out.cbf_noisefile);
    c.output.npyfile = None;
    // one NeXus file holds every panel (`write_panels_nexus`)
    c.output.nexusfile = None;
    c.output.scale = Some(scale);
    c.output.seed = Some(seed);
    c
}

/// Refuses an image whose pixels are not all finite numbers, naming the flag behind them
/// (`nanobragg::render::finite`), before any file is written; with `-allow_nonfinite` a warning.
fn check_finite(exp: &Experiment, image: &Image, allow: bool, con: &mut Out) -> Result<()> {
    if let Some(warning) = crate::render::finite::check_image(exp, image, allow)? {
        writeln!(con, "WARNING: {warning}")?;
    }
    Ok(())
}

/// `-derivative NAME FILE`: exact per-pixel derivatives, checked to be finite; empty when
/// none is asked for.
fn derivatives(
    cfg: &SimConfig,
    exp: &Experiment,
    render: &RenderOptions,
    run_opts: &RunOptions,
    con: &mut Out,
) -> Result<Vec<DerivativeImage>> {
    let wanted = &cfg.output.derivatives;
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = wanted.iter().map(|(n, _)| n.as_str()).collect();
    if let Some(motion) = names.iter().find(|n| motion_index(n).is_some()) {
        return Err(Error::flag(
            "-derivative",
            format!("{motion} moves groups of the panels of -geom or -detector_expt; for one panel given by flags, use Xbeam, Ybeam, close_distance and detector_rotx/y/z"),
        ));
    }
    let opts = RenderOptions {
        progress: None,
        ..render.clone()
    };
    let images = run_opts.engine()?.derivatives(cfg, exp, &names, &opts)?;
    check_derivatives(&images, run_opts.allow_nonfinite, con)?;
    Ok(images)
}

/// Refuses derivative images that are not finite ([`crate::render::finite::check_derivative`]).
fn check_derivatives(images: &[DerivativeImage], allow: bool, con: &mut Out) -> Result<()> {
    for d in images {
        if let Some(warning) = crate::render::finite::check_derivative(d.spec.name, &d.data, allow)? {
            writeln!(con, "WARNING: {warning}")?;
        }
    }
    Ok(())
}

/// Writes the `-derivative NAME FILE` images, raw f32 like `-floatfile`, in the order asked.
fn write_derivatives(cfg: &SimConfig, images: &[DerivativeImage], con: &mut Out) -> Result<()> {
    for ((_, path), d) in cfg.output.derivatives.iter().zip(images) {
        write_float_image(path, &d.data)?;
        writeln!(
            con,
            "writing {} as {} 4-byte floats: d(pixel value)/d({}) per {}",
            path.display(),
            d.data.len(),
            d.spec.name,
            d.spec.unit
        )?;
    }
    Ok(())
}

/// `-printout` alone: every rendered pixel's value, as C lists them.
fn print_pixels(exp: &Experiment, image: &Image, con: &mut Out) -> Result<()> {
    for idx in exp.active_pixels().iter() {
        let (s, f) = (idx / image.fpixels, idx % image.fpixels);
        writeln!(con, "{f:4} {s:4} : I = {}", fmt_g(image.data[idx] as f64))?;
    }
    Ok(())
}

/// `-trace_pixel s f` and `-printout_pixel f s`: C's per-pixel trace of intermediate values.
fn print_traces(cfg: &SimConfig, exp: &Experiment, con: &mut Out) -> Result<()> {
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
                writeln!(con, "TRACE: pixel fast={f} slow={s}")?;
                for line in t.lines {
                    writeln!(con, "TRACE: {line}")?;
                }
            }
            None => writeln!(
                con,
                "WARNING: pixel fast={f} slow={s} is not on the detector; nothing to trace"
            )?,
        }
    }
    Ok(())
}

/// Every output of one image; `float` writes `-floatfile` (a multi-panel run writes it for all
/// panels at once). `stats`: the image's statistics, or `None` to reduce them while the float
/// image is written. The noise images, whose Poisson draws follow C's random stream one pixel
/// after another, are drawn and written on a thread of their own while this one writes the
/// other files; the console reports them in C's order. The first error in that order is
/// returned.
fn write_outputs(
    cfg: &SimConfig,
    exp: &Experiment,
    image: &Image,
    stats: Option<Statistics>,
    float: bool,
    con: &mut Out,
) -> Result<()> {
    let out = &cfg.output;
    let fields = smv_fields(exp);
    let seed = (out.noisefile.is_some() || out.cbf_noisefile.is_some()).then(|| out.seed.unwrap_or_else(time_seed));
    let stats = std::thread::scope(|scope| {
        let fields = &fields;
        let noise = seed.map(|seed| scope.spawn(move || write_noise_files(out, exp, image, fields, seed)));
        let stats = write_noiseless_outputs(cfg, exp, image, stats, float, fields, con)?;
        if let Some(noise) = noise {
            let drawn = noise.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            report_noise_files(out, drawn, con)?;
        }
        Ok::<_, Error>(stats)
    })?;
    if let Some(nexus) = &out.nexusfile {
        // the noise image's counts when noise is on (no -nonoise), drawn again from its seed
        match seed.filter(|_| out.noisefile.is_some()) {
            Some(seed) => write_nexus_image(nexus, exp, NoisePixels::for_output(exp, image, seed, out), &image.data)?,
            None => {
                let scale = int_scale(out.scale, &stats);
                write_nexus_image(nexus, exp, int_counts(exp, image, scale, out.adc), &image.data)?
            }
        }
        writeln!(
            con,
            "writing {} as NeXus NXmx (4-byte integers and floats)",
            nexus.display()
        )?;
    }
    Ok(())
}

/// The outputs before the noise images in C's order: the float, integer, miniCBF, PGM, PNG
/// and NumPy images, each reported on the console once written. `stats` as in
/// [`write_outputs`]; returns them.
fn write_noiseless_outputs(
    cfg: &SimConfig,
    exp: &Experiment,
    image: &Image,
    stats: Option<Statistics>,
    float: bool,
    fields: &SmvFields,
    con: &mut Out,
) -> Result<Statistics> {
    let out = &cfg.output;
    let sr = image.omega_sum / exp.steps as f64;
    let g = fmt_g;
    writeln!(
        con,
        "solid angle subtended by detector = {} steradian ( {}% sphere)",
        g(sr),
        g(100.0 * sr / 4.0 / std::f64::consts::PI)
    )?;
    let stats = write_float_image_beside(out, exp, image, stats, float, con)?;
    writeln!(
        con,
        "max_I = {}  at {} {}",
        g(stats.max_i),
        g(stats.max_at.0),
        g(stats.max_at.1)
    )?;
    writeln!(
        con,
        "mean= {} rms= {} rmsd= {}",
        g(stats.mean),
        g(stats.rms),
        g(stats.rmsd)
    )?;
    let scale = int_scale(out.scale, &stats);
    writeln!(con, "intfile_scale = {}", g(scale))?;
    write_smv(&out.intfile, fields, int_pixels(exp, image, scale, out.adc))?;
    writeln!(con, "writing {} as 2-byte integers", out.intfile.display())?;
    if let Some(cbf) = &out.cbffile {
        // the -intfile counts, not clipped at 65535
        let counts = int_counts(exp, image, scale, out.adc);
        write_cbf_from(cbf, &cbf_header(exp), counts, image.fpixels, image.spixels)?;
        writeln!(con, "writing {} as 4-byte integers (miniCBF)", cbf.display())?;
    }
    if let Some(pgm) = &out.pgmfile {
        let s = pgm_scale(out.pgmscale, scale, &stats);
        writeln!(con, "pgm_scale = {}", g(s))?;
        write_pgm(pgm, image.fpixels, image.spixels, s, pgm_pixels(exp, image, s))?;
        writeln!(con, "writing {} as 1-byte integers", pgm.display())?;
    }
    if let Some(png) = &out.pngfile {
        write_png_preview(png, image.fpixels, image.spixels, &image.data)?;
        writeln!(con, "writing {} as a log-scaled PNG preview", png.display())?;
    }
    if let Some(npy) = &out.npyfile {
        write_npy_f32(npy, &[image.spixels, image.fpixels], &image.data)?;
        writeln!(
            con,
            "writing {} as a [{}, {}] float32 NumPy array",
            npy.display(),
            image.spixels,
            image.fpixels
        )?;
    }
    Ok(stats)
}

/// `-floatfile` (when `float`), written on a thread of its own while this one reduces the
/// image's statistics (unless given), then reported; returns the statistics.
fn write_float_image_beside(
    out: &OutputConfig,
    exp: &Experiment,
    image: &Image,
    stats: Option<Statistics>,
    float: bool,
    con: &mut Out,
) -> Result<Statistics> {
    let (written, stats) = std::thread::scope(|scope| {
        let writer = float.then(|| scope.spawn(|| write_float_image(&out.floatfile, &image.data)));
        let stats = stats.unwrap_or_else(|| Statistics::of(exp, image));
        let written = writer.map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        (written, stats)
    });
    if let Some(written) = written {
        written?;
        writeln!(
            con,
            "writing {} as {} 4-byte floats",
            out.floatfile.display(),
            image.data.len()
        )?;
    }
    Ok(stats)
}

/// `-noisefile` and `-cbf_noisefile`: the noise image, drawn from `seed` for each file as it is
/// written (the same counts each time), so that no file needs it whole. Returns the photons and
/// overloads of the draw.
fn write_noise_files(
    out: &OutputConfig,
    exp: &Experiment,
    image: &Image,
    fields: &SmvFields,
    seed: i64,
) -> Result<(f64, usize)> {
    let draw = || NoisePixels::for_output(exp, image, seed, out);
    let mut drawn = None;
    if let Some(noisefile) = &out.noisefile {
        let mut noisy = draw();
        write_smv(noisefile, fields, noisy.by_ref().map(clip_to_u16))?;
        drawn = Some(noisy);
    }
    if let Some(cbf) = &out.cbf_noisefile {
        let mut noisy = draw();
        write_cbf_from(cbf, &cbf_header(exp), noisy.by_ref(), image.fpixels, image.spixels)?;
        drawn = Some(noisy);
    }
    Ok(drawn.map_or((0.0, 0), |noisy| (noisy.photons, noisy.overloads)))
}

/// The console lines of the noise images once written: their photons and overloads, then each
/// file.
fn report_noise_files(out: &OutputConfig, (photons, overloads): (f64, usize), con: &mut Out) -> Result<()> {
    writeln!(con, "{photons:.0} photons on noise image ({overloads} overloads)")?;
    if let Some(noisefile) = &out.noisefile {
        writeln!(con, "writing {} as 2-byte integers", noisefile.display())?;
    }
    if let Some(cbf) = &out.cbf_noisefile {
        writeln!(con, "writing {} as 4-byte integers (miniCBF)", cbf.display())?;
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
        out.cbffile.as_ref(),
        out.cbf_noisefile.as_ref(),
        out.nexusfile.as_ref(),
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

/// The render options of a run: its threads, `-memory_mb`, and a progress bar on a terminal
/// with `-progress`.
pub fn render_options(cfg: &SimConfig, opts: &RunOptions, threads: usize) -> RenderOptions {
    let mut r = RenderOptions {
        threads,
        ..RenderOptions::default()
    };
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

fn print_setup(exp: &Experiment, con: &mut Out) -> Result<()> {
    let d = &exp.detector;
    let g = fmt_g;
    let around = if d.pivot == Pivot::Beam {
        "direct beam spot"
    } else {
        "sample"
    };
    writeln!(
        con,
        "{:?} convention selected, pivoting detector around {around}",
        d.convention
    )?;
    writeln!(
        con,
        "DETECTOR_PIX0_VECTOR {} {} {}",
        g(d.pix0[0]),
        g(d.pix0[1]),
        g(d.pix0[2])
    )?;
    let [a, b, c, al, be, ga] = exp.lattice.cell_parameters().map(g);
    writeln!(con, "Unit Cell: {a} {b} {c} {al} {be} {ga}")?;
    if let Some(m) = exp.lattice.misset {
        writeln!(
            con,
            "misset angles: {} {} {} deg",
            g(m[0].to_degrees()),
            g(m[1].to_degrees()),
            g(m[2].to_degrees())
        )?;
    }
    let [na, nb, nc] = exp.n_cells;
    writeln!(
        con,
        "  {} sources, {} mosaic domains, {} phi steps",
        exp.sources.len(),
        exp.mosaic_umats.len(),
        exp.phi.count
    )?;
    writeln!(con, "  xtal: {na}x{nb}x{nc} cells")?;
    writeln!(
        con,
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        g(d.distance),
        g(d.detsize_f),
        g(d.detsize_s),
        g(d.pixel_size),
        d.fpixels,
        d.spixels
    )?;
    writeln!(con, "  Xbeam={} Ybeam={}", g(d.xbeam), g(d.ybeam))?;
    writeln!(con, "  Fbeam={} Sbeam={}", g(d.fbeam), g(d.sbeam))?;
    writeln!(con, "  Fclose={} Sclose={}", g(d.fclose), g(d.sclose))?;
    writeln!(con, "  {}x{} pixel oversample steps", exp.oversample, exp.oversample)
}
