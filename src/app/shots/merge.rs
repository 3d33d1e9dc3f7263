//! Merging and verifying the manifests of a sharded run (`nanobragg-manifest merge`).

use super::manifest::{read_manifest, relative_name, resolve, verify_files, Record};
use crate::base::error::{Error, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What merging found.
#[derive(Debug, Default)]
pub struct MergeReport {
    /// The manifests read.
    pub manifests: Vec<PathBuf>,
    /// Shots in the list (`total` of the lines; `None` when no line was read).
    pub total: Option<usize>,
    /// One line per shot index present (the first one met), with its manifest.
    pub shots: BTreeMap<usize, (PathBuf, Record)>,
    /// Indices in `0..total` with no line.
    pub missing: Vec<usize>,
    /// Indices with more than one line: (index, where each line is, as `manifest:line`).
    pub duplicates: Vec<(usize, Vec<String>)>,
    /// Files that are missing or differ from their line (size or SHA-256).
    pub mismatches: Vec<String>,
    /// Lines that do not parse (e.g. torn by a killed process), as `manifest:line: why`.
    pub bad_lines: Vec<String>,
    /// Lines that disagree with the others about the run (different base flags or list length).
    pub inconsistent: Vec<String>,
}

impl MergeReport {
    /// Number of problems of every kind.
    pub fn problems(&self) -> usize {
        self.missing.len()
            + self.duplicates.len()
            + self.mismatches.len()
            + self.bad_lines.len()
            + self.inconsistent.len()
    }
}

/// The manifests named by `paths`: a file is taken as it is, a directory contributes its
/// `manifest*.jsonl` files (sorted by name).
pub fn find_manifests(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Error::io(p, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    f.is_file() && name.starts_with("manifest") && name.ends_with(".jsonl")
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(Error::io(
                    p,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no manifest*.jsonl in this directory"),
                ));
            }
            out.extend(found);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(Error::io(
                p,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
            ));
        }
    }
    Ok(out)
}

/// Reads every manifest of `paths` (see [`find_manifests`]) and checks the union: every index
/// of the list present exactly once, every file there with its recorded size and (when
/// `hash` is set) SHA-256, and all lines from the same run.
pub fn merge(paths: &[PathBuf], hash: bool) -> Result<MergeReport> {
    let mut report = MergeReport {
        manifests: find_manifests(paths)?,
        ..Default::default()
    };
    let mut seen: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut run: Option<(String, String)> = None; // (run_sha256, where first seen)
    for m in report.manifests.clone() {
        let Some(loaded) = read_manifest(&m)? else { continue };
        for (line, why) in &loaded.bad_lines {
            report.bad_lines.push(format!("{}:{line}: {why}", m.display()));
        }
        for rec in loaded.records {
            let at = format!("{}:{}", m.display(), rec.line);
            let h = &rec.head;
            match &run {
                None => run = Some((h.run_sha256.clone(), at.clone())),
                Some((sha, first)) if *sha != h.run_sha256 => report.inconsistent.push(format!(
                    "{at}: run with other base flags than {first} (run_sha256 differs)"
                )),
                _ => {}
            }
            match report.total {
                None => report.total = Some(h.total),
                Some(t) if t != h.total => report
                    .inconsistent
                    .push(format!("{at}: a list of {} shots, others say {t}", h.total)),
                _ => {}
            }
            seen.entry(h.index).or_default().push(at.clone());
            if report.shots.contains_key(&h.index) {
                continue;
            }
            let check = if hash {
                verify_files(&m, h)
            } else {
                h.files.iter().try_for_each(|f| {
                    let p = resolve(&m, f);
                    match std::fs::metadata(&p) {
                        Ok(md) if md.len() == f.bytes => Ok(()),
                        Ok(md) => Err(format!(
                            "{}: {} bytes, manifest says {}",
                            p.display(),
                            md.len(),
                            f.bytes
                        )),
                        Err(e) => Err(format!("{}: {e}", p.display())),
                    }
                })
            };
            if let Err(why) = check {
                report.mismatches.push(format!("{at}: shot {}: {why}", h.index));
            }
            report.shots.insert(h.index, (m.clone(), rec));
        }
    }
    report.duplicates = seen.into_iter().filter(|(_, w)| w.len() > 1).collect();
    if let Some(t) = report.total {
        report.missing = (0..t).filter(|i| !report.shots.contains_key(i)).collect();
    }
    let beyond: Vec<usize> = report
        .shots
        .keys()
        .copied()
        .filter(|&i| report.total.is_some_and(|t| i >= t))
        .collect();
    for i in beyond {
        report.inconsistent.push(format!(
            "shot {i} is beyond the list's {} shots",
            report.total.unwrap_or(0)
        ));
    }
    Ok(report)
}

/// Writes the merged manifest to `out`: one line per shot, by index, with file paths made
/// relative to `out`'s directory (absolute when outside it).
pub fn write_merged(report: &MergeReport, out: &Path) -> Result<()> {
    let mut lines = Vec::with_capacity(report.shots.len());
    for (m, rec) in report.shots.values() {
        let mut v: Value =
            serde_json::from_str(&rec.raw).map_err(|e| Error::parse(m, Some(rec.line), e.to_string()))?;
        if let Some(files) = v.get_mut("files").and_then(Value::as_array_mut) {
            for (f, head) in files.iter_mut().zip(&rec.head.files) {
                let at = resolve(m, head);
                f["path"] = Value::String(relative_name(out, &at));
            }
        }
        lines.push(v.to_string());
    }
    super::manifest::rewrite(out, &lines)
}

/// Indices as ranges, e.g. `3, 7-9, 12`.
pub fn ranges(indices: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut k = 0;
    while k < indices.len() {
        let start = indices[k];
        let mut end = start;
        while k + 1 < indices.len() && indices[k + 1] == end + 1 {
            k += 1;
            end = indices[k];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        k += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn ranges_compress_runs() {
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[3, 7, 8, 9, 12]), "3, 7-9, 12");
        assert_eq!(ranges(&[0, 1]), "0-1");
    }
}
