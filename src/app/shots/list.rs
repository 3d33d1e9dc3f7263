//! Shot lists: `-shots FILE` (JSON Lines) and `-shots_random N`.
//!
//! Each non-blank line of a shot list that does not start with `#` is one shot: a JSON object
//! whose keys are flag names without the dash (any spelling the command line accepts, e.g.
//! `lambda` or `wavelength`) and whose values are that flag's values, in the flag's units:
//!
//! ```text
//! {"misset": [10, 20, 30], "lambda": 1.1, "distance": 120, "seed": 5}
//! {"misset": "random", "fluence": 2e24, "N": 8, "cell": [78, 78, 38, 90, 90, 90]}
//! {"mat": [-0.0123, 0.0045, 0.0, 0.0031, 0.0132, 0.0, 0.0, 0.0, 0.0126]}
//! ```
//!
//! A shot is rendered as if its flags were appended to the base command line, so later keys
//! win over base flags and have their side effects (e.g. `close_distance` pivots about the
//! sample). A number is one value, an array several (`cell`: 1 to 6, direction vectors: 3),
//! `misset` is 3 angles (deg) or `"random"` (a uniformly random orientation drawn from the
//! base `-seed` and the shot index), `detector_abs` a number or `"inf"`, and `mat` is an
//! orientation matrix inline: 9 numbers in the order of a `-mat` file (rows a*x b*x c*x,
//! a*y …, i.e. reciprocal vectors in Å⁻¹ times λ in Å). Shot indices count shot lines from 0.

use super::random::{derived_seed, random_misset_degrees};
use crate::base::error::{Error, Result};
use crate::config::SimConfig;
use crate::experiment::args::flags::{lookup, Opt};
use crate::experiment::args::{apply_args, RunOptions};
use crate::experiment::crystal::CrystalLattice;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// At most this many line errors are listed; the rest are counted.
const MAX_LISTED_ERRORS: usize = 20;

/// One shot: its index, where it came from and the flags it adds to the base flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Shot {
    /// 0-based index in the list; names the output files and derives the shot's seeds.
    pub index: usize,
    /// The shot list and 1-based line it came from (`None` for `-shots_random`).
    pub origin: Option<(PathBuf, usize)>,
    /// The line's keys and values, as given, in order.
    pub overrides: Vec<(String, Value)>,
    /// The flags appended to the base flags: the overrides with `"random"` resolved to angles,
    /// plus `-seed` (derived from the base seed and the index) unless the line gives one.
    pub args: Vec<String>,
    /// `mat` given inline (same layout and units as a `-mat` file).
    pub matrix: Option<[[f64; 3]; 3]>,
}

impl Shot {
    /// The 1-based line of the shot list, if any.
    pub fn line(&self) -> Option<usize> {
        self.origin.as_ref().map(|(_, l)| *l)
    }

    /// The shot's configuration: `base` with the shot's flags applied (as if appended to the
    /// base command line) and its inline matrix, checked down to the unit cell. Errors name
    /// the shot list, the line and the key (or the shot index for `-shots_random`).
    pub fn configure(&self, base: &SimConfig, opts: RunOptions) -> Result<(SimConfig, RunOptions)> {
        let (mut cfg, opts) = apply_args(base, opts, &self.args).map_err(|e| match e {
            Error::Flag { flag, message } => self.error(flag.trim_start_matches('-'), message),
            other => self.error_any(other),
        })?;
        if let Some(m) = self.matrix {
            cfg.crystal.matrix = Some(m);
        }
        // a detector of panels: the flags that would move or crop one panel are refused here,
        // before anything renders
        if let Some(layout) = &cfg.detector.panels {
            crate::experiment::panels::custom::panel_configs(&cfg, layout, "-geom/-detector_expt").map_err(
                |e| match e {
                    Error::Flag { flag, message } => self.error(flag.trim_start_matches('-'), message),
                    other => self.error_any(other),
                },
            )?;
        }
        if let Err(e) = CrystalLattice::new(&cfg.crystal, cfg.beam.lambda0) {
            let key = [
                "cell",
                "mat",
                "matrix",
                "misset",
                "lambda",
                "wavelength",
                "wave",
                "energy",
            ]
            .into_iter()
            .find(|k| self.overrides.iter().any(|(o, _)| o == k))
            .unwrap_or("cell");
            return Err(self.error(key, e.to_string()));
        }
        Ok((cfg, opts))
    }

    fn error(&self, key: &str, message: impl Into<String>) -> Error {
        let message = message.into();
        match &self.origin {
            Some((path, line)) => Error::parse(path, Some(*line), format!("key '{key}': {message}")),
            None => Error::Shot {
                index: self.index,
                line: None,
                source: Box::new(Error::Config(format!("{key}: {message}"))),
            },
        }
    }

    fn error_any(&self, e: Error) -> Error {
        match &self.origin {
            Some((path, line)) => Error::parse(path, Some(*line), e.to_string()),
            None => Error::Shot {
                index: self.index,
                line: None,
                source: Box::new(e),
            },
        }
    }
}

/// The values a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One finite number.
    Number,
    /// One integer.
    Integer,
    /// An array of `min..=max` numbers.
    Numbers { min: usize, max: usize },
    /// 3 angles, or "random".
    Misset,
    /// A number or "inf".
    Depth,
}

/// The kind of values a flag takes in a shot line; `None`: it cannot be set per shot.
fn kind_of(opt: Opt) -> Option<Kind> {
    use Opt::*;
    Some(match opt {
        Pixel | Detsize | DetsizeF | DetsizeS | Distance | CloseDistance | RotX | RotY | RotZ | Twotheta | Xbeam
        | Ybeam | Xclose | Yclose | Orgx | Orgy | Lambda | Energy | Dispersion | Divergence | Hdivrange | Vdivrange
        | Hdivstep | Vdivstep | Polar | Fluence | Flux | Exposure | Beamsize | Water | SampleSize | SampleX
        | SampleY | SampleZ | Fudge | Mosaic | Phi | Osc | Phistep | Dmin | DetectorThick | Scale | Adc | Pgmscale
        | DefaultF => Kind::Number,
        N | Na | Nb | Nc | Dispsteps | Hdivsteps | Vdivsteps | Divsteps | MosaicDomains | Phisteps | Oversample
        | Thicksteps | Seed | MosaicSeed | MissetSeed => Kind::Integer,
        Cell => Kind::Numbers { min: 1, max: 6 },
        TwothetaAxis | FdetVector | SdetVector | OdetVector | BeamVector | PolarVector | SpindleAxis => {
            Kind::Numbers { min: 3, max: 3 }
        }
        Misset => Kind::Misset,
        DetectorAbs => Kind::Depth,
        _ => return None,
    })
}

/// A short rendering of a JSON value for messages.
fn describe(v: &Value) -> String {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let mut text = v.to_string();
    if text.chars().count() > 40 {
        text = text.chars().take(37).collect::<String>() + "...";
    }
    format!("{kind} ({text})")
}

/// A finite JSON number as the text the command line would get (shortest round-trip form).
fn number(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => Some(n.to_string()),
        _ => None,
    }
}

/// The numbers of an array of `min..=max` numbers.
fn numbers(v: &Value, min: usize, max: usize) -> std::result::Result<Vec<String>, String> {
    let want = if min == max {
        format!("an array of {min} numbers")
    } else {
        format!("an array of {min} to {max} numbers")
    };
    match v {
        Value::Array(a) if (min..=max).contains(&a.len()) => a
            .iter()
            .enumerate()
            .map(|(k, x)| number(x).ok_or_else(|| format!("expected {want}, element {k} is {}", describe(x))))
            .collect(),
        _ => Err(format!("expected {want}, got {}", describe(v))),
    }
}

/// Builds a shot from a line's keys and values. `base_seed` derives the shot's noise seed and
/// random orientation. Errors are (key, message).
fn build_shot(
    index: usize,
    origin: Option<(PathBuf, usize)>,
    overrides: Vec<(String, Value)>,
    base_seed: i64,
) -> std::result::Result<Shot, (String, String)> {
    let mut args = Vec::new();
    let mut matrix = None;
    let mut has_seed = false;
    let mut seen: Vec<&str> = Vec::new();
    for (key, value) in &overrides {
        let err = |m: String| (key.clone(), m);
        if seen.contains(&key.as_str()) {
            return Err(err("given twice on this line".into()));
        }
        seen.push(key);
        if key == "mat" || key == "matrix" {
            let flat: Vec<String> = match value {
                Value::Array(rows) if rows.len() == 3 && rows.iter().all(Value::is_array) => {
                    let mut all = Vec::new();
                    for r in rows {
                        all.extend(numbers(r, 3, 3).map_err(|m| err(format!("{m} in a row of 3 rows")))?);
                    }
                    all
                }
                _ => numbers(value, 9, 9).map_err(err)?,
            };
            let mut m = [[0.0f64; 3]; 3];
            for (k, t) in flat.iter().enumerate() {
                m[k / 3][k % 3] = t.parse().map_err(|_| err(format!("'{t}' is not a number")))?;
            }
            let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
                - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
            if !(det.is_finite() && det != 0.0) {
                return Err(err(
                    "the matrix is singular (its reciprocal vectors span no volume)".into()
                ));
            }
            matrix = Some(m);
            continue;
        }
        let flag = format!("-{key}");
        let Some(opt) = lookup(&flag) else {
            return Err(err("unknown key (keys are flag names without the dash, see -h)".into()));
        };
        let Some(kind) = kind_of(opt) else {
            return Err(err(
                "cannot be set per shot (only numeric parameters, seeds, cell, misset, mat and direction vectors can)"
                    .into(),
            ));
        };
        let values: Vec<String> = match kind {
            Kind::Number => {
                vec![number(value).ok_or_else(|| err(format!("expected a number, got {}", describe(value))))?]
            }
            Kind::Integer => match value {
                Value::Number(n) if n.as_i64().is_some() => vec![n.to_string()],
                _ => return Err(err(format!("expected an integer, got {}", describe(value)))),
            },
            Kind::Numbers { min, max } => numbers(value, min, max).map_err(err)?,
            Kind::Misset => match value {
                Value::String(s) if s == "random" => random_misset_degrees(base_seed, index as u64)
                    .iter()
                    .map(|a| a.to_string())
                    .collect(),
                Value::Array(_) => numbers(value, 3, 3).map_err(err)?,
                _ => {
                    return Err(err(format!(
                        "expected an array of 3 angles (deg) or \"random\", got {}",
                        describe(value)
                    )))
                }
            },
            Kind::Depth => match value {
                Value::String(s) if s == "inf" => vec![s.clone()],
                _ => vec![number(value)
                    .ok_or_else(|| err(format!("expected a depth in µm or \"inf\", got {}", describe(value))))?],
            },
        };
        has_seed |= opt == Opt::Seed;
        args.push(flag);
        args.extend(values);
    }
    if !has_seed {
        args.push("-seed".into());
        args.push(derived_seed(base_seed, index as u64).to_string());
    }
    Ok(Shot {
        index,
        origin,
        overrides,
        args,
        matrix,
    })
}

/// A JSON object's members in the order written (duplicates kept, so they can be reported).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    out.push(entry);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses a shot list's text (read from `path`, named in errors): the shots of the good lines
/// and an error for each bad one (naming `path:line` and the key). `base_seed` is the base
/// `-seed` (0 when none is given).
fn parse_lines(path: &Path, text: &str, base_seed: i64) -> (Vec<Shot>, Vec<(usize, Error)>) {
    let mut shots = Vec::new();
    let mut errors = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let index = shots.len() + errors.len();
        let members = match serde_json::from_str::<Members>(t) {
            Ok(m) => m.0,
            Err(e) => {
                errors.push((line, Error::parse(path, Some(line), format!("not a JSON object: {e}"))));
                continue;
            }
        };
        match build_shot(index, Some((path.to_path_buf(), line)), members, base_seed) {
            Ok(s) => shots.push(s),
            Err((key, message)) => {
                errors.push((line, Error::parse(path, Some(line), format!("key '{key}': {message}"))))
            }
        }
    }
    (shots, errors)
}

/// Parses a shot list's text (syntax, keys and value types; see [`check_shot_list`] for the
/// values themselves). All bad lines are reported together.
pub fn parse_shot_list(path: &Path, text: &str, base_seed: i64) -> Result<Vec<Shot>> {
    let (shots, errors) = parse_lines(path, text, base_seed);
    finish(path, shots, errors)
}

/// Parses a shot list and checks every shot's values against the base configuration, as the
/// command line would check them. Every line is checked before any shot is used; all bad
/// lines are reported together, in line order, each naming `path:line` and the key.
pub fn check_shot_list(
    path: &Path,
    text: &str,
    base_seed: i64,
    base: &SimConfig,
    opts: RunOptions,
) -> Result<Vec<Shot>> {
    let (shots, mut errors) = parse_lines(path, text, base_seed);
    for s in &shots {
        if let Err(e) = s.configure(base, opts.clone()) {
            errors.push((s.line().unwrap_or(0), e));
        }
    }
    errors.sort_by_key(|(l, _)| *l);
    finish(path, shots, errors)
}

fn finish(path: &Path, shots: Vec<Shot>, errors: Vec<(usize, Error)>) -> Result<Vec<Shot>> {
    if !errors.is_empty() {
        return Err(collect(errors.into_iter().map(|(_, e)| e).collect()));
    }
    if shots.is_empty() {
        return Err(Error::parse(path, None, "the shot list has no shots"));
    }
    Ok(shots)
}

/// Reads `-shots FILE` and checks it (see [`check_shot_list`]).
pub fn read_shot_list(path: &Path, base_seed: i64, base: &SimConfig, opts: RunOptions) -> Result<Vec<Shot>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    check_shot_list(path, &text, base_seed, base, opts)
}

/// `-shots_random N`: N shots, each in a uniformly random orientation drawn from the base seed
/// and its index, each with its own derived noise seed.
pub fn random_shots(count: usize, base_seed: i64) -> Vec<Shot> {
    (0..count)
        .map(|index| {
            let overrides = vec![("misset".to_string(), Value::String("random".into()))];
            build_shot(index, None, overrides, base_seed).expect("a random misset is always valid")
        })
        .collect()
}

/// Checks every shot's configuration against the base; all errors together.
pub fn validate(shots: &[Shot], base: &SimConfig, opts: RunOptions) -> Result<()> {
    let errors: Vec<Error> = shots
        .iter()
        .filter_map(|s| s.configure(base, opts.clone()).err())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(collect(errors))
    }
}

/// One error, or the first [`MAX_LISTED_ERRORS`] of several plus a count of the rest.
fn collect(mut errors: Vec<Error>) -> Error {
    if errors.len() == 1 {
        return errors.remove(0);
    }
    let more = errors.len().saturating_sub(MAX_LISTED_ERRORS);
    errors.truncate(MAX_LISTED_ERRORS);
    if more > 0 {
        errors.push(Error::Config(format!("... and {more} more errors")));
    }
    Error::Multiple(errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> SimConfig {
        match crate::experiment::args::parse_args(&["-cell", "100", "100", "100", "90", "90", "90", "-default_F", "1"])
            .unwrap()
        {
            crate::experiment::args::Parsed::Run(c, _) => *c,
            _ => unreachable!(),
        }
    }

    fn parse(text: &str) -> Result<Vec<Shot>> {
        parse_shot_list(Path::new("s.jsonl"), text, 0)
    }

    #[test]
    fn keys_become_flags_in_order() {
        let shots = parse("# comment\n\n{\"lambda\": 1.5, \"misset\": [1, 2, 3.5], \"cell\": [50, 60], \"seed\": 9}\n")
            .unwrap();
        assert_eq!(shots.len(), 1);
        assert_eq!(shots[0].line(), Some(3));
        assert_eq!(
            shots[0].args,
            ["-lambda", "1.5", "-misset", "1", "2", "3.5", "-cell", "50", "60", "-seed", "9"]
        );
    }

    #[test]
    fn shot_equals_the_same_flags_on_the_command_line() {
        let base_args = [
            "-cell",
            "100",
            "100",
            "100",
            "90",
            "90",
            "90",
            "-default_F",
            "1",
            "-distance",
            "80",
        ];
        let (base, opts) = match crate::experiment::args::parse_args(&base_args).unwrap() {
            crate::experiment::args::Parsed::Run(c, o) => (*c, o),
            _ => unreachable!(),
        };
        let shots = parse("{\"close_distance\": 90, \"phi\": -5, \"energy\": 9000, \"N\": 7}").unwrap();
        let (cfg, _) = shots[0].configure(&base, opts).unwrap();
        let mut all: Vec<&str> = base_args.to_vec();
        all.extend(shots[0].args.iter().map(String::as_str));
        let want = match crate::experiment::args::parse_args(&all).unwrap() {
            crate::experiment::args::Parsed::Run(c, _) => *c,
            _ => unreachable!(),
        };
        assert_eq!(cfg, want);
        assert_eq!(cfg.detector.pivot, crate::config::Pivot::Sample);
    }

    #[test]
    fn inline_matrix_matches_file_layout() {
        let shots =
            parse("{\"mat\": [1, 2, 3, 4, 5, 6, 7, 8, 10]}\n{\"mat\": [[1, 2, 3], [4, 5, 6], [7, 8, 10]]}").unwrap();
        let want = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]];
        assert_eq!(shots[0].matrix, Some(want));
        assert_eq!(shots[1].matrix, Some(want));
        assert_eq!(shots[1].index, 1);
    }

    #[test]
    fn every_bad_line_is_reported_with_line_and_key() {
        let text = "{\"phi\": 1}\n{\"bogus\": 1}\n{\"lambda\": \"x\"}\n{\"N\": 2.5}\n{\"hkl\": \"a.hkl\"}\nnot json\n{\"phi\": 1, \"phi\": 2}\n";
        let e = parse(text).unwrap_err().to_string();
        for want in [
            "s.jsonl:2: key 'bogus'",
            "s.jsonl:3: key 'lambda'",
            "s.jsonl:4: key 'N'",
            "s.jsonl:5: key 'hkl'",
            "s.jsonl:6: not a JSON object",
            "s.jsonl:7: key 'phi': given twice",
        ] {
            assert!(e.contains(want), "missing {want:?} in\n{e}");
        }
        assert!(!e.contains(":1:"), "{e}");
    }

    #[test]
    fn range_errors_come_from_the_flag_parser() {
        let shots = parse("{\"lambda\": -1}\n{\"seed\": 5000000000}\n{\"cell\": [0]}").unwrap();
        let e = validate(&shots, &base(), RunOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.jsonl:1: key 'lambda': must be > 0"), "{e}");
        assert!(e.contains("s.jsonl:2: key 'seed'"), "{e}");
        assert!(e.contains("s.jsonl:3: key 'cell'"), "{e}");
        // a singular inline matrix is refused when the line is read
        let e = parse("{}\n{\"mat\": [1, 0, 0, 0, 1, 0, 2, 0, 0]}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.jsonl:2: key 'mat': the matrix is singular"), "{e}");
    }

    #[test]
    fn random_shots_are_reproducible() {
        let a = random_shots(5, 42);
        assert_eq!(a, random_shots(5, 42));
        assert_ne!(a[0].args, random_shots(5, 43)[0].args);
        assert_eq!(a[3].args[0], "-misset");
        assert_eq!(a[3].args[4], "-seed");
        // "random" on a line gives the same orientation as -shots_random for that index
        let file = parse_shot_list(Path::new("s"), "{}\n{}\n{\"misset\": \"random\"}", 42).unwrap();
        assert_eq!(file[2].args, a[2].args);
    }
}
