//! The flags of a shot run, taken out of the argument list before the C-compatible parser sees
//! the rest (the base flags shared by every shot).

use super::shard::Shard;
use crate::base::error::{Error, Result};
use std::path::PathBuf;

/// Where the shots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShotSource {
    /// `-shots FILE`: a JSON Lines shot list.
    File(PathBuf),
    /// `-shots_random N`: N shots in uniformly random orientations.
    Random(usize),
}

/// Bytes a listed random shot may take (its index, seeds and flag strings), generously.
const BYTES_PER_LISTED_SHOT: usize = 1024;

/// What `-shots`/`-shots_random`, `-prefix`, `-manifest` and `-shard` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShotOptions {
    pub source: ShotSource,
    /// Output names are `{prefix}{index:06}{suffix}` (default `shot_`, in the current directory).
    pub prefix: String,
    /// `-manifest FILE`; default: `manifest.jsonl` (unsharded) or `manifest.shard-I-of-N.jsonl`
    /// in the prefix's directory.
    pub manifest: Option<PathBuf>,
    /// `-shard I/N` (default: all shots).
    pub shard: Shard,
    /// `-shot_batch N`: at most N consecutive shots that differ only in orientation and
    /// fluence render in one batched graph (default [`DEFAULT_BATCH`]; 1 = one at a time).
    pub batch: usize,
    /// `-shot_writers N`: threads writing finished shots' files; `None`: the run's default
    /// ([`crate::base::threads::default_writers`]).
    pub writers: Option<usize>,
}

/// Shots per batched render when `-shot_batch` is not given (measured in docs/many-shots.md).
pub const DEFAULT_BATCH: usize = 8;

pub use crate::experiment::args::flags::SHOT_FLAGS;

/// Splits `args` into the base flags and the shot options. `Ok(None)` when neither `-shots`
/// nor `-shots_random` is given (then `-prefix`, `-manifest` and `-shard` are errors).
/// Of a repeated flag the last one counts, as for every other flag.
pub fn split_args<S: AsRef<str>>(args: &[S]) -> Result<Option<(Vec<String>, ShotOptions)>> {
    let mut base = Vec::new();
    let mut found: Vec<(&str, String)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let tok = args[i].as_ref();
        if let Some(&flag) = SHOT_FLAGS.iter().find(|&&f| f == tok) {
            let value = args
                .get(i + 1)
                .map(AsRef::as_ref)
                .filter(|v| !SHOT_FLAGS.contains(v) && crate::experiment::args::flags::lookup(v).is_none())
                .ok_or_else(|| Error::flag(flag, "expects a value, found none"))?;
            found.retain(|(f, _)| *f != flag);
            found.push((flag, value.to_string()));
            i += 2;
        } else {
            base.push(tok.to_string());
            i += 1;
        }
    }
    let get = |flag: &str| found.iter().find(|(f, _)| *f == flag).map(|(_, v)| v.clone());
    let source = match (get("-shots"), get("-shots_random")) {
        (Some(_), Some(_)) => {
            return Err(Error::flag(
                "-shots_random",
                "cannot be combined with -shots (give \"misset\": \"random\" per line instead)",
            ))
        }
        (Some(file), None) => ShotSource::File(PathBuf::from(file)),
        (None, Some(n)) => {
            let count = n.trim().parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                Error::flag(
                    "-shots_random",
                    format!("expected a positive number of shots, got '{n}'"),
                )
            })?;
            // each shot is listed (its flags, seeds and outputs) before any renders
            let listed = count.checked_mul(BYTES_PER_LISTED_SHOT);
            if !listed.is_some_and(crate::experiment::resources::can_allocate) {
                return Err(Error::flag(
                    "-shots_random",
                    format!("{count} shots: their list cannot be allocated"),
                ));
            }
            ShotSource::Random(count)
        }
        (None, None) => {
            if let Some((flag, _)) = found.first() {
                return Err(Error::flag(*flag, "only applies with -shots FILE or -shots_random N"));
            }
            return Ok(None);
        }
    };
    let shard = match get("-shard") {
        Some(s) => Shard::parse(&s)?,
        None => Shard::ALL,
    };
    let count = |flag: &str, what: &str| -> Result<Option<usize>> {
        get(flag)
            .map(|n| {
                n.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| Error::flag(flag, format!("expected a positive number of {what}, got '{n}'")))
            })
            .transpose()
    };
    let batch = count("-shot_batch", "shots")?.unwrap_or(DEFAULT_BATCH);
    let writers = count("-shot_writers", "threads")?;
    if let Some(n) = writers.filter(|&n| n > crate::base::threads::MAX_THREADS) {
        return Err(Error::flag(
            "-shot_writers",
            format!("{n} threads: at most {}", crate::base::threads::MAX_THREADS),
        ));
    }
    let prefix = get("-prefix").unwrap_or_else(|| "shot_".to_string());
    if prefix.is_empty() {
        return Err(Error::flag("-prefix", "must not be empty"));
    }
    Ok(Some((
        base,
        ShotOptions {
            source,
            prefix,
            manifest: get("-manifest").map(PathBuf::from),
            shard,
            batch,
            writers,
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> Result<Option<(Vec<String>, ShotOptions)>> {
        split_args(args)
    }

    #[test]
    fn takes_out_shot_flags_and_keeps_the_rest_in_order() {
        let (base, o) = split(&[
            "-N", "5", "-shots", "s.jsonl", "-lambda", "1", "-shard", "1/4", "-prefix", "out/x_",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(base, ["-N", "5", "-lambda", "1"]);
        assert_eq!(o.source, ShotSource::File("s.jsonl".into()));
        assert_eq!(o.shard, Shard { index: 1, count: 4 });
        assert_eq!(o.prefix, "out/x_");
        assert_eq!(o.manifest, None);
        assert_eq!(o.batch, DEFAULT_BATCH);
        let (_, o) = split(&["-shots_random", "3", "-shot_batch", "5"]).unwrap().unwrap();
        assert_eq!(o.batch, 5);
    }

    #[test]
    fn no_shot_flags_is_a_classic_run() {
        assert_eq!(split(&["-N", "5"]).unwrap(), None);
    }

    #[test]
    fn errors_name_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["-shots"], "-shots"),
            (&["-shots", "-N", "5"], "-shots"),
            (&["-shots_random", "0"], "-shots_random"),
            (&["-shots_random", "x"], "-shots_random"),
            (&["-shots", "a", "-shots_random", "3"], "-shots_random"),
            (&["-prefix", "p_"], "-prefix"),
            (&["-shard", "0/2"], "-shard"),
            (&["-shots_random", "3", "-shard", "2/2"], "-shard"),
            (&["-shots_random", "3", "-shot_batch", "0"], "-shot_batch"),
            (&["-shots_random", "3", "-shot_batch", "two"], "-shot_batch"),
            (&["-shot_batch", "4"], "-shot_batch"),
            (&["-shots_random", "3", "-shot_writers", "-1"], "-shot_writers"),
            (&["-shots_random", "3", "-shot_writers", "100000"], "-shot_writers"),
            (&["-shots_random", "1000000000000000"], "-shots_random"),
        ];
        for (args, flag) in cases {
            let e = split(args).unwrap_err().to_string();
            assert!(e.contains(flag), "{args:?}: {e}");
        }
    }
}
