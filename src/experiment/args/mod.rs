//! The C-compatible command line: turns nanoBragg's single-dash argument list into a
//! [`SimConfig`] (SI units) plus the port's own [`RunOptions`].
//!
//! Every flag, alias, unit and side effect follows the C program (see
//! `shared/reference/physics.md` §2), with these deliberate differences:
//!
//! * Flags are matched against an explicit table of spellings (`flags::FLAGS`) instead of C's
//!   substring search. Unknown flags are an error ([`Error::UnknownFlag`]) rather than ignored,
//!   and stray values (too many after a flag) are an error naming that flag.
//! * Values are taken positionally: the tokens after a flag are always its values, so negative
//!   numbers (`-phi -5`, `-misset -10 20 30`) work and are never read as flags.
//! * Missing and malformed values are errors naming the flag and the offending text, where C
//!   would silently ignore the flag or read 0 via `atof`/`atoi`. Numbers must be finite; counts
//!   read with C's `atoi` accept an integer or a finite decimal, truncated toward zero (so
//!   `1e3` gives 1000 where `atoi` gives 1). Some values must be positive: `-pixel`,
//!   `-lambda`, `-energy`, `-distance`, `-close_distance`, `-detsize*`, the first `-cell`
//!   length; pixel counts must not be negative; `-detector_abs` must be positive, 0 or `inf`;
//!   seeds must fit C's `int`; direction vectors must not be zero.
//! * `-N`, `-Na`, `-Nb`, `-Nc` must be at least 1 (C turns 0 or a negative count into 1).
//! * An output file that is also an input file is an error naming both flags.
//! * `-twotheta_axis x y z` no longer also sets 2θ = x degrees (C's substring match runs the
//!   `-twotheta` branch too). It keeps that branch's other side effect, pivot = SAMPLE.
//! * `-curved_det` works as the last argument (C ignores it there).
//! * An `-img` or `-mask` file that cannot be read is an error (C prints a message and goes on
//!   without it).
//! * Of several `-mat`, `-sourcefile` or `-hkl` flags only the last is used, as in C, and the
//!   files are read after all flags are parsed.
//!
//! * `-cell` takes 1 to 6 numbers; C's defaults for the missing or ≤ 0 ones (b = c = a,
//!   angles 90°) are filled in here, so `crystal.cell` is always complete.
//!
//! Nothing else here resolves defaults or checks that a run is possible (e.g. "needs -cell or -mat",
//! auto-selected step counts, N clamping): that is [`crate::experiment`]'s job.

pub(crate) mod flags;
mod sections;
mod usage;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::config::engine::{EngineKind, Precision};
use crate::config::SimConfig;
use flags::{Arity, Opt};
use sections::apply;

/// Degrees to radians, computed as C does (it divides by `RTD = 180·(1/π)`).
const RTD: f64 = 180.0 * std::f64::consts::FRAC_1_PI;

/// Options of this port that are not part of the C program's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// `-engine cpu|wgpu` (default cpu).
    pub engine: EngineKind,
    /// `-precision f64|f32`; `None`: the engine's own (f64 on the CPU, f32 on wgpu).
    pub precision: Option<Precision>,
    /// `-fusion on|off`: one kernel or loop per image, or the tensor stages op by op; `None`:
    /// `NANOBRAGG_FUSION`, else on.
    pub fusion: Option<bool>,
    /// `-memory_mb N`: cap on the working memory of one pixel chunk, in bytes.
    pub memory_budget_bytes: Option<usize>,
    /// `-nthreads N`: threads a run may keep busy; `None`: the environment's or the cores
    /// ([`crate::base::threads::resolve`]).
    pub threads: Option<usize>,
    /// `-allow_nonfinite`: NaN pixels are a warning instead of an error.
    pub allow_nonfinite: bool,
    /// `-gpu N|NAME`: the adapter of the wgpu engine, an index in [`crate::gpu_adapters`] or
    /// a part of its name; `None`: burn-wgpu's default adapter.
    pub gpu: Option<String>,
}

impl RunOptions {
    /// The threads this run may keep busy (`-nthreads`, else `OMP_NUM_THREADS`, else
    /// `RAYON_NUM_THREADS`, else the cores), applied to the process-wide pools: call once,
    /// before rendering (see [`crate::base::threads`]).
    pub fn apply_threads(&self) -> Result<usize> {
        let threads = crate::base::threads::resolve(self.threads)?;
        crate::base::threads::apply_process_wide(threads);
        Ok(threads)
    }
}

/// Result of [`parse_args`].
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Run a simulation with this configuration.
    Run(Box<SimConfig>, RunOptions),
    /// `-h`, `-help` or `--help`: print [`usage`].
    Help,
}

/// The usage text: every flag with its values and units.
pub fn usage() -> &'static str {
    usage::USAGE
}

/// Parses a C-style argument list (`args` excludes the program name).
///
/// Order of work, as C: the headers of `-mask FILE` and then `-img FILE` (so `-img` wins) seed
/// the geometry, then every flag is applied in argv order (later flags win, and override the
/// headers). `-mat` and `-sourcefile` files are read here; the `-hkl` path is only recorded.
/// Relative paths are taken relative to the current directory and stored as given.
pub fn parse_args<S: AsRef<str>>(args: &[S]) -> Result<Parsed> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let items = match tokenize(&args)? {
        Some(items) => items,
        None => return Ok(Parsed::Help),
    };

    let mut st = State::new();

    // Pre-scan: the last -mask and the last -img (C keeps the last of each).
    let last_value = |opt: Opt| {
        items
            .iter()
            .rev()
            .find(|it| it.opt == opt)
            .map(|it| PathBuf::from(it.values[0]))
    };
    if let Some(mask) = last_value(Opt::Mask) {
        let (header, pixels) = crate::io::smv::read_smv_u16(&mask)?;
        let (w, h) = apply_header(&mut st.cfg, &header, &mask, true)?;
        let n = w * h;
        if pixels.len() < n {
            return Err(Error::parse(
                &mask,
                None,
                format!("mask holds {} pixels but its header says {w}×{h}", pixels.len()),
            ));
        }
        let mut pixels = pixels;
        pixels.truncate(n);
        st.cfg.detector.mask = Some(pixels);
    }
    if let Some(img) = last_value(Opt::Img) {
        let header = crate::io::smv::read_smv_header(&img)?;
        apply_header(&mut st.cfg, &header, &img, false)?;
    }
    st.mask = last_value(Opt::Mask);
    st.img = last_value(Opt::Img);
    read_panels(&mut st.cfg, &items)?;

    for it in &items {
        apply(&mut st, it)?;
    }
    st.finish()
}

/// `-geom FILE` or `-detector_expt FILE` (one of them, the last given): the detector's panels,
/// read before the other flags like the `-img` header, so the file's wavelength is a default
/// that `-lambda` and `-energy` override.
fn read_panels(cfg: &mut SimConfig, items: &[Item<'_>]) -> Result<()> {
    let given: Vec<&Item<'_>> = items
        .iter()
        .filter(|it| matches!(it.opt, Opt::Geom | Opt::DetectorExpt))
        .collect();
    let groups = items.iter().rfind(|it| it.opt == Opt::PanelGroups);
    let Some(last) = given.last() else {
        return match groups {
            Some(g) => Err(Error::flag(
                g.flag,
                "moves groups of the panels of -geom or -detector_expt: give one",
            )),
            None => Ok(()),
        };
    };
    if let Some(other) = given.iter().find(|it| it.opt != last.opt) {
        return Err(Error::flag(
            last.flag,
            format!("cannot be combined with {}: give the detector once", other.flag),
        ));
    }
    let path = PathBuf::from(last.values[0]);
    let layout = match last.opt {
        Opt::Geom => crate::io::panels::geom::read_geom(&path)?,
        _ => crate::io::panels::expt::read_expt(&path)?,
    };
    if let Some(lambda) = layout.beam.wavelength {
        cfg.beam.lambda0 = lambda;
    }
    if let Some(g) = groups {
        layout.grouping(g.values[0])?;
        cfg.detector.panel_groups = Some(g.values[0].to_string());
    }
    cfg.detector.panels = Some(layout);
    Ok(())
}

/// Applies more flags on top of an already parsed configuration, exactly as if they had been
/// appended to the argument list that produced `cfg` and `opts` (later flags win, with the same
/// units, side effects and validation). Used by shot lists, which re-parse only a shot's few
/// overrides instead of the whole command line.
///
/// `-img` and `-mask` are refused here (their headers are applied before all other flags, so
/// appending them would not be equivalent), and so is `-h`.
pub fn apply_args<S: AsRef<str>>(cfg: &SimConfig, opts: RunOptions, args: &[S]) -> Result<(SimConfig, RunOptions)> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let items = tokenize(&args)?.ok_or_else(|| Error::flag("-h", "not allowed here"))?;
    let mut st = State::from_config(cfg.clone(), opts);
    for it in &items {
        if matches!(
            it.opt,
            Opt::Img | Opt::Mask | Opt::Geom | Opt::DetectorExpt | Opt::PanelGroups
        ) {
            return Err(Error::flag(
                it.flag,
                "cannot be applied on top of a parsed configuration",
            ));
        }
        apply(&mut st, it)?;
    }
    match st.finish()? {
        Parsed::Run(cfg, opts) => Ok((*cfg, opts)),
        Parsed::Help => unreachable!("finish never asks for help"),
    }
}

/// One flag occurrence with its value tokens.
#[derive(Debug)]
struct Item<'a> {
    flag: &'a str,
    opt: Opt,
    values: Vec<&'a str>,
}

/// Splits argv into flags and their values. Returns `None` when a help flag is met.
fn tokenize<'a>(args: &[&'a str]) -> Result<Option<Vec<Item<'a>>>> {
    let mut items: Vec<Item<'a>> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let tok = args[i];
        let opt = match flags::lookup(tok) {
            Some(opt) => opt,
            None => {
                // A number or a word where a flag should be: too many values for the flag
                // before it. Anything else that starts with '-' is an unknown flag.
                let looks_like_value = !tok.starts_with('-') || tok.trim().parse::<f64>().is_ok();
                return Err(match items.last() {
                    Some(prev) if looks_like_value => Error::flag(
                        prev.flag,
                        format!("unexpected extra value '{tok}' (expected a flag here)"),
                    ),
                    _ => Error::UnknownFlag(tok.to_string()),
                });
            }
        };
        if opt == Opt::Help {
            return Ok(None);
        }
        let rest = &args[i + 1..];
        let n = match opt.arity() {
            Arity::Fixed(n) => n,
            Arity::Misset => {
                if rest.first().is_some_and(|v| v.contains("rand")) {
                    1
                } else {
                    3
                }
            }
            Arity::Cell => {
                // Up to six values; C stops at the next token that starts with '-', but a
                // negative number is still a value here (setup treats ≤ 0 like a missing one).
                let n = rest
                    .iter()
                    .take(6)
                    .take_while(|v| !v.starts_with('-') || v.trim().parse::<f64>().is_ok())
                    .count();
                n.max(1)
            }
        };
        if rest.len() < n {
            return Err(missing(tok, n, rest.len(), None));
        }
        let values = &rest[..n];
        if let Some((k, v)) = values.iter().enumerate().find(|(_, v)| flags::lookup(v).is_some()) {
            return Err(missing(tok, n, k, Some(v)));
        }
        items.push(Item {
            flag: tok,
            opt,
            values: values.to_vec(),
        });
        i += 1 + n;
    }
    Ok(Some(items))
}

/// The error for a flag with fewer values than it needs.
fn missing(flag: &str, needed: usize, found: usize, next_flag: Option<&str>) -> Error {
    let what = if needed == 1 {
        "a value".to_string()
    } else {
        format!("{needed} values")
    };
    let found = match next_flag {
        Some(f) => format!("found {found} before the flag '{f}'"),
        None if found == 0 => "found none".to_string(),
        None => format!("found only {found}"),
    };
    Error::flag(flag, format!("expects {what}, {found}"))
}

/// Parser state: the configuration plus C's flags that only decide the output names at the end.
struct State {
    cfg: SimConfig,
    opts: RunOptions,
    noisefile: PathBuf,
    write_noise: bool,
    pgmfile: PathBuf,
    write_pgm: bool,
    matfile: Option<PathBuf>,
    sourcefile: Option<PathBuf>,
    /// The `-img` and `-mask` files read (the last of each).
    img: Option<PathBuf>,
    mask: Option<PathBuf>,
}

impl State {
    fn new() -> Self {
        Self::from_config(SimConfig::default(), RunOptions::default())
    }

    /// The parser state after the flags that produced `cfg` and `opts`.
    fn from_config(cfg: SimConfig, opts: RunOptions) -> Self {
        let noisefile = cfg
            .output
            .noisefile
            .clone()
            .unwrap_or_else(|| PathBuf::from("noiseimage.img"));
        let pgmfile = cfg.output.pgmfile.clone().unwrap_or_else(|| PathBuf::from("image.pgm"));
        Self {
            write_noise: cfg.output.noisefile.is_some(),
            write_pgm: cfg.output.pgmfile.is_some(),
            cfg,
            opts,
            noisefile,
            pgmfile,
            matfile: None,
            sourcefile: None,
            img: None,
            mask: None,
        }
    }

    fn finish(mut self) -> Result<Parsed> {
        self.cfg.output.noisefile = self.write_noise.then_some(self.noisefile);
        self.cfg.output.pgmfile = self.write_pgm.then_some(self.pgmfile);
        if let Some(path) = &self.matfile {
            self.cfg.crystal.matrix = Some(crate::io::matrix::read_matrix(path)?);
        }
        if let Some(path) = &self.sourcefile {
            self.cfg.beam.sources = Some(crate::io::sourcefile::read_sourcefile(path)?);
        }
        let inputs = [
            ("-mat", &self.matfile),
            ("-sourcefile", &self.sourcefile),
            ("-img", &self.img),
            ("-mask", &self.mask),
        ];
        check_outputs_spare_inputs(&self.cfg, &inputs)?;
        Ok(Parsed::Run(Box::new(self.cfg), self.opts))
    }
}

/// Refuses an output file of `cfg` that is one of the input files: the structure factors
/// (`-hkl`, or `./Fdump.bin` read without it) or `files` (flag, path if given).
fn check_outputs_spare_inputs(cfg: &SimConfig, files: &[(&str, &Option<PathBuf>)]) -> Result<()> {
    let hkl = match &cfg.crystal.hkl {
        crate::config::HklSource::File(p) => Some(("-hkl", p.clone())),
        crate::config::HklSource::FdumpIfPresent => {
            Some(("./Fdump.bin (read without -hkl)", PathBuf::from("Fdump.bin")))
        }
        crate::config::HklSource::None => None,
    };
    let inputs: Vec<(&str, PathBuf)> = hkl
        .into_iter()
        .chain(
            files
                .iter()
                .filter_map(|(flag, p)| p.as_ref().map(|p| (*flag, p.clone()))),
        )
        .collect();
    let out = &cfg.output;
    let outputs = [
        Some(("-floatfile", &out.floatfile)),
        Some(("-intfile", &out.intfile)),
        out.noisefile.as_ref().map(|p| ("-noisefile", p)),
        out.pgmfile.as_ref().map(|p| ("-pgmfile", p)),
        out.pngfile.as_ref().map(|p| ("-pngfile", p)),
        out.npyfile.as_ref().map(|p| ("-npyfile", p)),
        out.cbffile.as_ref().map(|p| ("-cbffile", p)),
        out.cbf_noisefile.as_ref().map(|p| ("-cbf_noisefile", p)),
        out.nexusfile.as_ref().map(|p| ("-nexusfile", p)),
    ]
    .into_iter()
    .flatten()
    .chain(out.derivatives.iter().map(|(_, p)| ("-derivative", p)));
    for (out_flag, out_path) in outputs {
        for (in_flag, in_path) in &inputs {
            if same_file(out_path, in_path) {
                return Err(Error::flag(
                    out_flag,
                    format!(
                        "'{}' is also the input file of {in_flag}; refusing to overwrite it",
                        out_path.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether two paths name the same existing regular file (links and `..` resolved). A path
/// that does not exist yet cannot be an input.
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if !(ma.is_file() && mb.is_file()) {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (ma.dev(), ma.ino()) == (mb.dev(), mb.ino())
    }
    #[cfg(not(unix))]
    {
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Applies an SMV header (`-mask` or `-img`) as C does, in its order of keys. Returns the pixel
/// counts (fast, slow) it set.
///
/// Keys are looked up with C's `ValueOf` (last substring match, so `DISTANCE` may pick up
/// `CLOSE_DISTANCE`). For a mask, `BEAM_CENTER_Y` is flipped: Ybeam = detsize_s − value.
/// `TWOTHETA` is deliberately not applied: C reads it into a scratch variable that nothing
/// uses, and the port reproduces that.
fn apply_header(
    cfg: &mut SimConfig,
    header: &crate::io::smv::SmvHeader,
    path: &Path,
    is_mask: bool,
) -> Result<(usize, usize)> {
    let bad = |key: &str, v: f64, need: &str| Error::parse(path, None, format!("header {key}={v}: {need}"));
    let finite = |key: &str| -> Result<Option<f64>> {
        match header.value_of(key) {
            Some(v) if !v.is_finite() => Err(bad(key, v, "expected a finite number")),
            other => Ok(other),
        }
    };
    let positive = |key: &str| -> Result<Option<f64>> {
        match finite(key)? {
            Some(v) if v <= 0.0 => Err(bad(key, v, "must be > 0")),
            other => Ok(other),
        }
    };

    // C casts SIZE1/SIZE2 to int and falls back on DETECTOR_DIMENSIONS when SIZE1 is 0.
    let count = |key: &str| -> Result<i64> { Ok(finite(key)?.map_or(0, |v| v.trunc() as i64)) };
    let (mut w, mut h) = (count("SIZE1")?, count("SIZE2")?);
    if w == 0 {
        w = count("DETECTOR_DIMENSIONS")?;
        h = w;
    }
    if w <= 0 || h <= 0 {
        return Err(Error::parse(
            path,
            None,
            format!("header gives no valid pixel counts (SIZE1={w}, SIZE2={h})"),
        ));
    }
    if w.checked_mul(h).is_none_or(|n| n > i64::from(u32::MAX)) {
        return Err(Error::parse(
            path,
            None,
            format!("header gives {w}x{h} pixels, more than {} in all", u32::MAX),
        ));
    }
    let (w, h) = (w as usize, h as usize);

    let det = &mut cfg.detector;
    det.fpixels = Some(w);
    det.spixels = Some(h);
    if let Some(v) = positive("PIXEL_SIZE")? {
        det.pixel_size = v / 1000.0;
    }
    det.detsize_f = det.pixel_size * w as f64;
    det.detsize_s = det.pixel_size * h as f64;
    if let Some(v) = positive("DISTANCE")? {
        det.distance = v / 1000.0;
    }
    if let Some(v) = positive("CLOSE_DISTANCE")? {
        det.close_distance = Some(v / 1000.0);
    }
    if let Some(v) = positive("WAVELENGTH")? {
        cfg.beam.lambda0 = v / 1e10;
    }
    if let Some(v) = finite("BEAM_CENTER_X")? {
        det.xbeam = Some(v / 1000.0);
    }
    if let Some(v) = finite("BEAM_CENTER_Y")? {
        det.ybeam = Some(if is_mask {
            det.detsize_s - v / 1000.0
        } else {
            v / 1000.0
        });
    }
    if let Some(v) = finite("ORGX")? {
        det.orgx = Some(v);
    }
    if let Some(v) = finite("ORGY")? {
        det.orgy = Some(v);
    }
    if let Some(v) = finite("PHI")? {
        cfg.crystal.phi0 = v / RTD;
    }
    if let Some(v) = finite("OSC_RANGE")? {
        cfg.crystal.osc = Some(v / RTD);
    }
    Ok((w, h))
}

/// Value parsers; every error names the flag and the offending text.
struct Values<'a, 'b> {
    flag: &'a str,
    values: &'b [&'a str],
}

impl Values<'_, '_> {
    fn text(&self, k: usize) -> &str {
        self.values[k]
    }

    fn err(&self, msg: impl Into<String>) -> Error {
        Error::flag(self.flag, msg)
    }

    /// A finite number (C's `atof`, strictly).
    fn num(&self, k: usize) -> Result<f64> {
        let t = self.values[k];
        match t.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => Err(self.err(format!("'{t}' is not a finite number"))),
            Err(_) => Err(self.err(format!("expected a number, got '{t}'"))),
        }
    }

    /// A number > 0.
    fn positive(&self, k: usize) -> Result<f64> {
        let v = self.num(k)?;
        if v > 0.0 {
            Ok(v)
        } else {
            Err(self.err(format!("must be > 0, got '{}'", self.values[k])))
        }
    }

    /// An integer (C's `atoi`): an integer or a finite decimal truncated toward zero.
    fn int(&self, k: usize) -> Result<i64> {
        let t = self.values[k].trim();
        if let Ok(v) = t.parse::<i64>() {
            return Ok(v);
        }
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v.trunc().abs() < 9.2e18 => Ok(v.trunc() as i64),
            Ok(_) => Err(self.err(format!("'{}' is not a usable integer", self.values[k]))),
            Err(_) => Err(self.err(format!("expected an integer, got '{}'", self.values[k]))),
        }
    }

    /// A number of unit cells: an integer ≥ 1 (C silently turns 0 or a negative N into 1).
    fn cell_count(&self) -> Result<f64> {
        let n = self.int(0)?;
        if n >= 1 {
            Ok(n as f64)
        } else {
            Err(self.err(format!(
                "the number of unit cells must be at least 1, got '{}'",
                self.values[0]
            )))
        }
    }

    /// An integer in C's `int` range (seeds).
    fn int32(&self, k: usize) -> Result<i64> {
        let v = self.int(k)?;
        if i32::try_from(v).is_ok() {
            Ok(v)
        } else {
            Err(self.err(format!("'{}' does not fit a 32-bit integer", self.values[k])))
        }
    }

    /// A pixel count: ≥ 0, where 0 means "not given" as in C.
    fn pixel_count(&self, k: usize) -> Result<Option<usize>> {
        let v = self.int(k)?;
        match usize::try_from(v) {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(self.err(format!("pixel count must not be negative, got '{}'", self.values[k]))),
        }
    }

    /// Three finite numbers.
    fn vec3(&self) -> Result<Vec3> {
        Ok([self.num(0)?, self.num(1)?, self.num(2)?])
    }

    /// A direction: three finite numbers, not all zero (setup normalises it).
    fn direction(&self) -> Result<Vec3> {
        let v = self.vec3()?;
        if v.iter().all(|&x| x == 0.0) {
            Err(self.err("the vector must not be zero"))
        } else {
            Ok(v)
        }
    }

    /// A file name (stored as given).
    fn path(&self) -> PathBuf {
        PathBuf::from(self.values[0])
    }
}
