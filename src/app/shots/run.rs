//! A shot run: validate every shot, skip the ones a previous run finished, render the rest one
//! after another (each render uses all worker threads) while a writer thread writes the previous
//! shot's files and manifest line.

use super::args::{ShotOptions, ShotSource};
use super::list::{random_shots, read_shot_list, validate, Shot};
use super::manifest::{
    manifest_dir, read_manifest, relative_name, rewrite, sha256_hex, verify_files, Appender, FileRecord,
    MANIFEST_VERSION,
};
use super::nexus::{NexusShot, NexusStacks, StackGeometry};
use super::output::{write_panel_shot, write_shot};
use crate::base::error::{Error, Result};
use crate::config::{HklSource, Misset, SimConfig};
use crate::experiment::args::{parse_args, usage, Parsed, RunOptions};
use crate::experiment::{load_structure_factors, Experiment};
use crate::io::atomic::sync_parent_dir;
use crate::io::hkl::HklGrid;
use crate::render::{Image, RenderOptions};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What one finished shot run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Shots in the list, in this shard, skipped as already done, rendered now.
    pub total: usize,
    pub in_shard: usize,
    pub skipped: usize,
    pub rendered: usize,
    /// Wall-clock seconds of the rendering loop (after validation and resume checks).
    pub seconds: f64,
}

/// The manifest's default name: `manifest.jsonl`, or `manifest.shard-I-of-N.jsonl` for a
/// shard, in the prefix's directory.
pub fn default_manifest(opts: &ShotOptions) -> PathBuf {
    let name = if opts.shard.is_all() {
        "manifest.jsonl".to_string()
    } else {
        format!("manifest.shard-{}-of-{}.jsonl", opts.shard.index, opts.shard.count)
    };
    prefix_dir(&opts.prefix).join(name)
}

/// The directory of `{prefix}000000.bin`.
fn prefix_dir(prefix: &str) -> PathBuf {
    let probe = PathBuf::from(format!("{prefix}0"));
    match probe.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// SHA-256 of a JSON value's text.
fn fingerprint(v: &Value) -> String {
    sha256_hex(v.to_string().as_bytes())
}

/// Runs the shots of `opts` on top of the base flags `base_args` (the command line without the
/// shot flags) and prints a line per shot and a summary.
pub fn run(base_args: &[String], opts: &ShotOptions) -> Result<Summary> {
    let (base, run_opts) = match parse_args(base_args)? {
        Parsed::Help => {
            print!("{}", usage());
            return Ok(Summary {
                total: 0,
                in_shard: 0,
                skipped: 0,
                rendered: 0,
                seconds: 0.0,
            });
        }
        Parsed::Run(cfg, o) => (*cfg, o),
    };
    check_supported(&base)?;
    let shots = read_shots(opts, &base, &run_opts)?;
    let manifest = output_places(opts)?;
    let run_sha = fingerprint(&json!(base_args));
    let mine: Vec<&Shot> = shots.iter().filter(|s| opts.shard.contains(s.index)).collect();
    let prints: HashMap<usize, String> = mine
        .iter()
        .map(|s| {
            let fp = fingerprint(&json!({"base": base_args, "args": s.args, "mat": s.matrix}));
            (s.index, fp)
        })
        .collect();
    let done = resume(&manifest, &prints)?;
    let todo: Vec<&Shot> = mine.iter().copied().filter(|s| !done.contains(&s.index)).collect();
    println!(
        "{} shots in the list, {} in shard {}, {} already done, {} to render; manifest {}",
        shots.len(),
        mine.len(),
        opts.shard,
        mine.len() - todo.len(),
        todo.len(),
        manifest.display()
    );
    let renderer = start_renderer(&base, &run_opts)?;
    let ctx = Context {
        prefix: &opts.prefix,
        manifest: &manifest,
        total: shots.len(),
        shard: opts.shard.to_string(),
        run_sha: &run_sha,
        prints: &prints,
    };
    let start = Instant::now();
    let stacks = base
        .output
        .nexusfile
        .as_ref()
        .map(|_| NexusStacks::new(&opts.prefix, &opts.shard, &manifest));
    let lines = std::sync::Mutex::new(ManifestLines::new(Appender::open(&manifest)?, stacks));
    let writers = opts
        .writers
        .unwrap_or_else(|| crate::base::threads::default_writers(renderer.threads))
        .max(1);
    let shot_run = ShotRun {
        base: &base,
        run_opts: &run_opts,
        renderer: &renderer,
        batch: opts.batch.max(1),
    };
    let rendered = render_and_write(&ctx, &shot_run, &todo, writers, &lines)?;
    lines
        .into_inner()
        .map_err(|_| Error::Config("a writer thread panicked".into()))?
        .close()?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "rendered {rendered} shots in {seconds:.2} s ({:.2} shots/s); {} skipped as done",
        rendered as f64 / seconds.max(1e-9),
        mine.len() - todo.len()
    );
    Ok(Summary {
        total: shots.len(),
        in_shard: mine.len(),
        skipped: mine.len() - todo.len(),
        rendered,
        seconds,
    })
}

/// Every shot of the list or the random draw, each checked before anything is rendered.
fn read_shots(opts: &ShotOptions, base: &SimConfig, run_opts: &RunOptions) -> Result<Vec<Shot>> {
    let base_seed = base.output.seed.unwrap_or(0);
    match &opts.source {
        ShotSource::File(path) => read_shot_list(path, base_seed, base, run_opts.clone()),
        ShotSource::Random(n) => {
            let shots = random_shots(*n, base_seed);
            validate(&shots, base, run_opts.clone())?;
            Ok(shots)
        }
    }
}

/// The manifest's path, once the directories of the images and of the manifest are known to
/// exist.
fn output_places(opts: &ShotOptions) -> Result<PathBuf> {
    let dir = prefix_dir(&opts.prefix);
    if !dir.is_dir() {
        return Err(Error::io(
            &dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "directory of -prefix does not exist"),
        ));
    }
    let manifest = opts.manifest.clone().unwrap_or_else(|| default_manifest(opts));
    if !manifest_dir(&manifest).is_dir() {
        return Err(Error::io(
            &manifest,
            std::io::Error::new(std::io::ErrorKind::NotFound, "directory does not exist"),
        ));
    }
    Ok(manifest)
}

/// The engine every shot renders on, with its worker threads and render options.
struct Renderer {
    threads: usize,
    engine: crate::engine::Engine,
    options: RenderOptions,
}

/// Starts the engine (before any pool or adapter starts: llvmpipe reads its thread count when
/// it loads) and caches the structure factors as a classic run does.
fn start_renderer(base: &SimConfig, run_opts: &RunOptions) -> Result<Renderer> {
    let threads = run_opts.apply_threads()?;
    let engine = run_opts.engine()?;
    let device = engine.probe()?;
    if engine != crate::engine::Engine::default() {
        println!("engine: {} on {device}", engine.name());
    }
    if let (HklSource::File(_), Some(grid)) = (&base.crystal.hkl, load_structure_factors(base)?) {
        // as a classic run: cache the structure factors for runs without -hkl
        crate::io::fdump::write_fdump(Path::new("Fdump.bin"), &grid)?;
    }
    let mut options = RenderOptions {
        threads,
        ..RenderOptions::default()
    };
    if let Some(b) = run_opts.memory_budget_bytes {
        options.memory_budget = b;
    }
    Ok(Renderer {
        threads,
        engine,
        options,
    })
}

/// What the render loop needs about the run.
struct ShotRun<'a> {
    base: &'a SimConfig,
    run_opts: &'a RunOptions,
    renderer: &'a Renderer,
    /// Shots per batch (≥ 1).
    batch: usize,
}

/// The writers take finished shots as they come, their manifest lines going in in render
/// order, while this thread renders the shots of `todo`; the number of shots written.
fn render_and_write(
    ctx: &Context,
    run: &ShotRun,
    todo: &[&Shot],
    writers: usize,
    lines: &std::sync::Mutex<ManifestLines>,
) -> Result<usize> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Rendered>(writers);
    let rx = std::sync::Mutex::new(rx);
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| -> Result<usize> {
        // named, so a profiler (or a test counting busy threads) tells them apart
        let spawn = |i: usize| std::thread::Builder::new().name(format!("shot-writer-{i}"));
        let pool = (0..writers)
            .map(|i| spawn(i).spawn_scoped(s, || write_shots(ctx, &rx, lines, &failed)))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| Error::Config(format!("cannot start a shot writer thread: {e}")))?;
        let failure = render_shots(run, todo, &tx, &failed).err();
        drop(tx);
        let mut written = 0;
        let mut error = None;
        for w in pool {
            match w.join() {
                Ok(Ok(n)) => written += n,
                Ok(Err(e)) => error = error.or(Some(e)),
                Err(_) => error = error.or(Some(Error::Config("a writer thread panicked".into()))),
            }
        }
        match (failure, error) {
            (Some(e), _) | (None, Some(e)) => Err(e),
            (None, None) => Ok(written),
        }
    })
}

/// A writer thread: writes the rendered shots it receives and appends their manifest lines
/// until the channel closes or a writer fails; the number of shots it wrote.
fn write_shots(
    ctx: &Context,
    rx: &std::sync::Mutex<std::sync::mpsc::Receiver<Rendered>>,
    lines: &std::sync::Mutex<ManifestLines>,
    failed: &std::sync::atomic::AtomicBool,
) -> Result<usize> {
    let mut n = 0;
    while !failed.load(std::sync::atomic::Ordering::Relaxed) {
        let Ok(r) = rx.lock().map_err(|_| ()).and_then(|rx| rx.recv().map_err(|_| ())) else {
            break;
        };
        let done = write_one(ctx, r).and_then(|done| {
            lines
                .lock()
                .map_err(|_| Error::Config("a writer thread panicked".into()))?
                .finish(done)
        });
        if let Err(e) = done {
            failed.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(e);
        }
        n += 1;
    }
    Ok(n)
}

/// Renders the shots of `todo` in order, consecutive shots that batch together in one graph,
/// and sends them to the writers. Stops at the first shot that fails (its error) or when the
/// writers fail (`Ok`: their error is reported by the writers).
fn render_shots(
    run: &ShotRun,
    todo: &[&Shot],
    tx: &std::sync::mpsc::SyncSender<Rendered>,
    failed: &std::sync::atomic::AtomicBool,
) -> Result<()> {
    let mut groups = Groups {
        run,
        todo,
        next: 0,
        ahead: None,
        grids: Vec::new(),
        warned: BTreeSet::new(),
    };
    let mut seq = 0;
    while !failed.load(std::sync::atomic::Ordering::Relaxed) {
        let t0 = Instant::now();
        let Some(group) = groups.next_group()? else {
            break;
        };
        let r = &run.renderer;
        let images =
            render_group(&group, &r.engine, &r.options, run.run_opts.allow_nonfinite).map_err(|e| match e {
                // a shot's own error (its image is not finite) names it already
                e @ Error::Shot { .. } => e,
                e => shot_failure(&group[0].shot, e),
            })?;
        // each shot is charged an equal share of its batch's time
        let render_seconds = t0.elapsed().as_secs_f64() / group.len() as f64;
        let batch = group.len();
        for (p, (exps, images)) in group.into_iter().zip(images) {
            let msg = Rendered {
                seq,
                shot: p.shot,
                cfg: p.cfg,
                exps,
                images,
                render_seconds,
                batch,
            };
            if tx.send(msg).is_err() {
                return Ok(()); // the writers failed; the error is reported by them
            }
            seq += 1;
        }
    }
    Ok(())
}

/// A shot's error, naming it.
fn shot_failure(shot: &Shot, e: Error) -> Error {
    Error::Shot {
        index: shot.index,
        line: shot.line(),
        source: Box::new(e),
    }
}

/// The shots still to render, taken in groups that batch together.
struct Groups<'a> {
    run: &'a ShotRun<'a>,
    todo: &'a [&'a Shot],
    next: usize,
    /// A prepared shot that did not batch with the last group: it starts the next one.
    ahead: Option<Prepared>,
    /// Structure factors by source and default_F, read once each.
    grids: Vec<((HklSource, u64), Option<HklGrid>)>,
    /// C's warnings printed so far.
    warned: BTreeSet<String>,
}

impl Groups<'_> {
    /// The next group of at most `batch` consecutive shots that batch together (`None` when
    /// every shot is taken). A shot that fails to resolve ends the group before it, and is the
    /// error when it would start a group.
    fn next_group(&mut self) -> Result<Option<Vec<Prepared>>> {
        let mut group: Vec<Prepared> = Vec::new();
        while self.next < self.todo.len() && group.len() < self.run.batch {
            let shot = self.todo[self.next];
            let next = match self.ahead.take() {
                Some(p) => p,
                None => match prepare(
                    shot,
                    self.run.base,
                    self.run.run_opts.clone(),
                    &mut self.grids,
                    &mut self.warned,
                ) {
                    Ok(p) => p,
                    // the shots before it are rendered first
                    Err(_) if !group.is_empty() => break,
                    Err(e) => return Err(shot_failure(shot, e)),
                },
            };
            // a shot list cannot move the panels: the first panel's experiment decides
            if group.first().is_some_and(|first| !first.exp.batches_with(&next.exp)) {
                self.ahead = Some(next);
                break;
            }
            group.push(next);
            self.next += 1;
        }
        Ok((!group.is_empty()).then_some(group))
    }
}

/// Flags a shot run cannot honour.
fn check_supported(base: &SimConfig) -> Result<()> {
    let out = &base.output;
    let refuse = |flag: &str| Err(Error::flag(flag, "not supported with -shots/-shots_random"));
    if !out.derivatives.is_empty() {
        return refuse("-derivative");
    }
    if out.trace_pixel.is_some() {
        return refuse("-trace_pixel");
    }
    if base.crystal.amorphous.table.is_some() {
        return refuse("-stol");
    }
    if out.printout || out.printout_pixel.is_some() {
        return refuse("-printout");
    }
    if base.crystal.misset == Misset::Random && base.crystal.misset_seed.is_none() {
        return Err(Error::flag(
            "-misset",
            "'random' in the base flags of a shot run needs -misset_seed (every shard must draw the same); \
             for one random orientation per shot use -shots_random N or \"misset\": \"random\" in the shot list",
        ));
    }
    Ok(())
}

/// A shot ready to be written.
struct Rendered {
    /// Its place in the run's render order (0, 1, …).
    seq: usize,
    shot: Shot,
    cfg: SimConfig,
    /// One experiment and image per panel (one for a flat detector).
    exps: Vec<Experiment>,
    images: Vec<Image>,
    /// The shot's share of its batch's rendering time (s), and the batch's size.
    render_seconds: f64,
    batch: usize,
}

/// What the writer needs about the run.
struct Context<'a> {
    prefix: &'a str,
    manifest: &'a Path,
    total: usize,
    shard: String,
    run_sha: &'a str,
    prints: &'a HashMap<usize, String>,
}

/// A shot's configuration and resolved experiment, ready to render. With a detector of
/// several panels (`-geom`, `-detector_expt`), `exp` is the first panel's and `panels` holds
/// every panel's configuration (its CUSTOM detector, as a classic run renders it); their
/// experiments are made one panel at a time as they render ([`render_group`]), so a batch holds
/// one copy of the structure factors, not one per panel.
struct Prepared {
    shot: Shot,
    cfg: SimConfig,
    exp: Experiment,
    panels: Vec<SimConfig>,
}

impl Prepared {
    /// The number of images the shot renders: its panels, or 1.
    fn images(&self) -> usize {
        self.panels.len().max(1)
    }

    /// The experiment of panel `k` (of the flat detector for `k` = 0 without panels).
    fn panel(&self, k: usize) -> Result<Experiment> {
        match self.panels.get(k) {
            Some(pc) => Experiment::with_structure_factors(pc, self.exp.structure_factors.grid.clone()),
            None => Ok(self.exp.clone()),
        }
    }
}

/// Resolves a shot (structure factors are read once per source and default_F) and prints C's
/// warnings the first time they come up.
fn prepare(
    shot: &Shot,
    base: &SimConfig,
    run_opts: RunOptions,
    grids: &mut Vec<((HklSource, u64), Option<HklGrid>)>,
    warned: &mut BTreeSet<String>,
) -> Result<Prepared> {
    let (cfg, _) = shot.configure(base, run_opts)?;
    let key = (cfg.crystal.hkl.clone(), cfg.crystal.default_f.to_bits());
    let grid = match grids.iter().find(|(k, _)| *k == key) {
        Some((_, g)) => g.clone(),
        None => {
            let g = load_structure_factors(&cfg)?;
            grids.push((key, g.clone()));
            g
        }
    };
    let panels = match &cfg.detector.panels {
        Some(layout) => crate::experiment::panels::custom::panel_configs(&cfg, layout, "-geom/-detector_expt")?,
        None => Vec::new(),
    };
    let exp = Experiment::with_structure_factors(panels.first().unwrap_or(&cfg), grid)?;
    for w in &exp.warnings {
        if warned.insert(w.clone()) {
            println!("WARNING: {w}");
        }
    }
    Ok(Prepared {
        shot: shot.clone(),
        cfg,
        exp,
        panels,
    })
}

/// The experiments and images of a group of shots that batch together, `[shot][panel]`,
/// rendered panel by panel (the experiments without their structure factors, which the writers
/// do not need). An image that is not finite is the shot's error unless `allow_nonfinite`
/// ([`crate::render::finite::check_image`]).
fn render_group(
    group: &[Prepared],
    engine: &crate::engine::Engine,
    opts: &RenderOptions,
    allow_nonfinite: bool,
) -> Result<Vec<(Vec<Experiment>, Vec<Image>)>> {
    let mut out: Vec<(Vec<Experiment>, Vec<Image>)> = group.iter().map(|_| Default::default()).collect();
    for k in 0..group[0].images() {
        let exps = group.iter().map(|p| p.panel(k)).collect::<Result<Vec<_>>>()?;
        let images = match exps.as_slice() {
            [one] => vec![engine.render(one, opts)?],
            _ => engine.render_batch(&exps, opts)?,
        };
        for (((shot, mut exp), image), p) in out.iter_mut().zip(exps).zip(images).zip(group) {
            let checked =
                crate::render::finite::check_image(&exp, &image, allow_nonfinite).map_err(|e| Error::Shot {
                    index: p.shot.index,
                    line: p.shot.line(),
                    source: Box::new(e),
                })?;
            if let Some(warning) = checked {
                println!("WARNING: shot {:06}: {warning}", p.shot.index);
            }
            exp.structure_factors.grid = None;
            shot.0.push(exp);
            shot.1.push(image);
        }
    }
    Ok(out)
}

/// A shot whose files are written: its place in the render order, its manifest line, the line
/// to print once that is appended, and what goes into the NeXus stack.
struct Finished {
    seq: usize,
    index: usize,
    line: Value,
    message: String,
    nexus: Option<NexusShot>,
}

/// Writes a shot's files and flushes them to disk.
fn write_one(ctx: &Context, r: Rendered) -> Result<Finished> {
    let t0 = Instant::now();
    let shot_err = |e: Error| Error::Shot {
        index: r.shot.index,
        line: r.shot.line(),
        source: Box::new(e),
    };
    let written = match &r.cfg.detector.panels {
        Some(layout) => {
            let names = layout.file_names();
            let panels: Vec<(&str, &Experiment, &Image)> = names
                .iter()
                .zip(&r.exps)
                .zip(&r.images)
                .map(|((n, e), i)| (n.as_str(), e, i))
                .collect();
            write_panel_shot(ctx.prefix, r.shot.index, &r.cfg.output, &panels)
        }
        None => write_shot(ctx.prefix, r.shot.index, &r.cfg.output, &r.exps[0], &r.images[0]),
    };
    let (files, stats, nexus_counts) = written.map_err(shot_err)?;
    let mut records = Vec::with_capacity(files.len());
    for (kind, path) in &files {
        let mut f = std::fs::File::open(path).map_err(|e| shot_err(Error::io(path, e)))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(|e| shot_err(Error::io(path, e)))?;
        f.sync_all().map_err(|e| shot_err(Error::io(path, e)))?;
        records.push(FileRecord {
            kind: kind.to_string(),
            path: relative_name(ctx.manifest, path),
            bytes: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
        });
    }
    if let Some((_, first)) = files.first() {
        sync_parent_dir(first).map_err(shot_err)?;
    }
    let write_seconds = t0.elapsed().as_secs_f64();
    let overrides: serde_json::Map<String, Value> = r.shot.overrides.iter().cloned().collect();
    let line = json!({
        "version": MANIFEST_VERSION,
        "index": r.shot.index,
        "total": ctx.total,
        "shard": ctx.shard,
        "line": r.shot.line(),
        "run_sha256": ctx.run_sha,
        "shot_sha256": ctx.prints[&r.shot.index],
        "overrides": overrides,
        "args": r.shot.args,
        "params": effective_params(&r.cfg, &r.exps[0]),
        "stats": stats,
        "files": records,
        "render_seconds": r.render_seconds,
        "render_batch": r.batch,
        "write_seconds": write_seconds,
        "seconds": r.render_seconds + write_seconds,
    });
    let message = format!(
        "shot {:06}: max_I = {:.6e}  mean = {:.6e}  ({:.3} s render, {:.3} s write)",
        r.shot.index,
        stats["max_I"].as_f64().unwrap_or(f64::NAN),
        stats["mean"].as_f64().unwrap_or(f64::NAN),
        r.render_seconds,
        write_seconds
    );
    let nexus = nexus_counts.map(|counts| NexusShot {
        geometry: StackGeometry::of_panels(&r.exps),
        counts,
        photons: r.images.into_iter().flat_map(|i| i.data).collect(),
    });
    Ok(Finished {
        seq: r.seq,
        index: r.shot.index,
        line,
        message,
        nexus,
    })
}

/// Manifest lines appended in render order, whichever writer finishes first: a line waits
/// until the lines of every shot rendered before it are in. A shot goes into the NeXus stack
/// just before its line, so the stack holds every shot the manifest lists.
struct ManifestLines {
    appender: Appender,
    nexus: Option<NexusStacks>,
    order: crate::render::drive::InOrder<Finished>,
}

impl ManifestLines {
    fn new(appender: Appender, nexus: Option<NexusStacks>) -> Self {
        Self {
            appender,
            nexus,
            order: Default::default(),
        }
    }

    /// A shot's files are in place: append its line, and those of later shots that were
    /// waiting for it, printing each shot's message.
    fn finish(&mut self, done: Finished) -> Result<()> {
        let mut ready = Vec::new();
        self.order.push(done.seq, done, |d| ready.push(d));
        for mut done in ready {
            if let (Some(stacks), Some(shot)) = (self.nexus.as_mut(), done.nexus.take()) {
                let entry = stacks.append(shot).map_err(|e| Error::Shot {
                    index: done.index,
                    line: None,
                    source: Box::new(e),
                })?;
                if let Value::Object(m) = &mut done.line {
                    m.insert("nexus".into(), entry);
                }
            }
            self.appender.append(&done.line)?;
            println!("{}", done.message);
        }
        Ok(())
    }

    /// Closes the NeXus stack cleanly.
    fn close(self) -> Result<()> {
        self.nexus.map_or(Ok(()), NexusStacks::finish)
    }
}

/// The shot's resolved parameters, in the command line's units.
fn effective_params(cfg: &SimConfig, exp: &Experiment) -> Value {
    let d = &exp.detector;
    let mm = |m: f64| m * 1e3;
    let deg = f64::to_degrees;
    json!({
        "lambda_A": exp.lambda0 * 1e10,
        "distance_mm": mm(d.distance),
        "close_distance_mm": mm(d.close_distance),
        "Xbeam_mm": mm(d.xbeam),
        "Ybeam_mm": mm(d.ybeam),
        "detector_rot_deg": [deg(d.rotx), deg(d.roty), deg(d.rotz)],
        "twotheta_deg": deg(d.twotheta),
        "pixels": [d.fpixels, d.spixels],
        "pixel_mm": mm(d.pixel_size),
        "phi_deg": deg(exp.phi0),
        "osc_deg": deg(exp.phi.range),
        "phisteps": exp.phi.count,
        "misset_deg": exp.lattice.misset.map(|m| m.map(deg)),
        "cell": exp.lattice.cell_parameters(),
        "N": exp.n_cells,
        "mosaic_deg": deg(exp.mosaic_spread),
        "mosaic_domains": exp.mosaic_umats.len(),
        "mosaic_seed": cfg.crystal.mosaic_seed,
        "seed": cfg.output.seed,
        "fluence": exp.fluence,
        "dispersion_pct": cfg.beam.dispersion * 100.0,
        "default_F": exp.structure_factors.default_f,
    })
}

/// Reads the manifest of an earlier run (if any) and returns the shots of `prints` it finished:
/// lines whose shot fingerprint matches and whose files exist with the recorded size and
/// SHA-256. When anything is dropped (a torn or unreadable line, a stale or duplicate line, a
/// line whose files are gone or changed), the manifest is rewritten atomically with the lines
/// kept; lines of shots not in `prints` (another shard's) are kept as they are.
fn resume(manifest: &Path, prints: &HashMap<usize, String>) -> Result<BTreeSet<usize>> {
    let mut done = BTreeSet::new();
    let Some(loaded) = read_manifest(manifest)? else {
        return Ok(done);
    };
    let mut dirty = loaded.torn_tail || !loaded.bad_lines.is_empty();
    for (line, why) in &loaded.bad_lines {
        println!(
            "manifest {}:{line}: dropped an unreadable line ({why})",
            manifest.display()
        );
    }
    let mut keep = Vec::new();
    for rec in loaded.records {
        let idx = rec.head.index;
        match prints.get(&idx) {
            None => keep.push(rec.raw),
            Some(_) if done.contains(&idx) => dirty = true,
            Some(fp) if *fp != rec.head.shot_sha256 => {
                println!("shot {idx:06}: flags changed since it was rendered; redoing it");
                dirty = true;
            }
            Some(_) => match verify_files(manifest, &rec.head) {
                Ok(()) => {
                    done.insert(idx);
                    keep.push(rec.raw);
                }
                Err(why) => {
                    println!("shot {idx:06}: {why}; redoing it");
                    dirty = true;
                }
            },
        }
    }
    if dirty {
        rewrite(manifest, &keep)?;
    }
    Ok(done)
}
