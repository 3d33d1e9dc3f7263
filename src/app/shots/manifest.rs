//! The manifest: one JSON line per finished shot, appended (and flushed to disk) only after
//! the shot's files are in place. See `docs/many-shots.md` for the schema.
//!
//! Reading is tolerant: a torn last line (a process killed while appending) is dropped, and so
//! is any other line that does not parse; the shots they described are then simply redone.

use crate::base::error::{Error, Result};
use crate::io::atomic::write_atomic_synced;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Version of the manifest line format.
pub const MANIFEST_VERSION: u32 = 1;

/// One output file of a shot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// `float`, `int`, `noise`, `pgm`, `png` or `npy`.
    pub kind: String,
    /// Relative to the manifest's directory (absolute when the file lies outside it).
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 of the content, lower-case hex.
    pub sha256: String,
}

/// The fields of a manifest line that resuming and merging rely on; the line's other fields
/// (`args`, `params`, `stats`, timings) are for people and downstream tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryHead {
    pub version: u32,
    /// 0-based shot index in the list.
    pub index: usize,
    /// Number of shots in the whole list (all shards).
    pub total: usize,
    /// `I/N` of the process that rendered it.
    pub shard: String,
    /// SHA-256 of the base flags: equal for every shot of one run, across all its shards.
    pub run_sha256: String,
    /// SHA-256 of the base flags plus this shot's flags: a shot is only reused by a re-run
    /// whose flags give the same value.
    pub shot_sha256: String,
    pub files: Vec<FileRecord>,
}

/// A line read back from a manifest.
#[derive(Debug, Clone)]
pub struct Record {
    /// 1-based line number.
    pub line: usize,
    /// The line as written (without its newline).
    pub raw: String,
    pub head: EntryHead,
}

/// A manifest read back.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub records: Vec<Record>,
    /// Lines that did not parse: (1-based line, why). A torn last line is one of these.
    pub bad_lines: Vec<(usize, String)>,
    /// The last line was not complete (no newline at the end of the file).
    pub torn_tail: bool,
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a manifest; `Ok(None)` when it does not exist.
pub fn read_manifest(path: &Path) -> Result<Option<Loaded>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut loaded = Loaded {
        torn_tail: !text.is_empty() && !text.ends_with('\n'),
        ..Default::default()
    };
    for (k, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<EntryHead>(raw) {
            Ok(head) => loaded.records.push(Record {
                line: k + 1,
                raw: raw.to_string(),
                head,
            }),
            Err(e) => loaded.bad_lines.push((k + 1, e.to_string())),
        }
    }
    Ok(Some(loaded))
}

/// Where a file of a manifest line lies: its `path`, relative to the manifest's directory.
pub fn resolve(manifest: &Path, file: &FileRecord) -> PathBuf {
    let p = Path::new(&file.path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        manifest_dir(manifest).join(p)
    }
}

/// The directory a manifest's relative paths start from.
pub fn manifest_dir(manifest: &Path) -> PathBuf {
    match manifest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// How `file` is named in a manifest at `manifest`: relative to its directory when inside it,
/// else absolute.
pub fn relative_name(manifest: &Path, file: &Path) -> String {
    let dir = manifest_dir(manifest);
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    if let (Some(d), Some(f)) = (canon(&dir), canon(file)) {
        if let Ok(rel) = f.strip_prefix(&d) {
            return rel.to_string_lossy().into_owned();
        }
        return f.to_string_lossy().into_owned();
    }
    file.to_string_lossy().into_owned()
}

/// Checks that every file of a line exists with the recorded size and SHA-256; the error says
/// which file and what differs.
pub fn verify_files(manifest: &Path, head: &EntryHead) -> std::result::Result<(), String> {
    for f in &head.files {
        let p = resolve(manifest, f);
        // the size first: a path that is no regular file of that size (a device such as
        // /dev/zero, a huge file) is never read
        let meta = std::fs::metadata(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", p.display()));
        }
        if meta.len() != f.bytes {
            return Err(format!(
                "{}: {} bytes, manifest says {}",
                p.display(),
                meta.len(),
                f.bytes
            ));
        }
        let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        if bytes.len() as u64 != f.bytes {
            return Err(format!(
                "{}: {} bytes, manifest says {}",
                p.display(),
                bytes.len(),
                f.bytes
            ));
        }
        let h = sha256_hex(&bytes);
        if h != f.sha256 {
            return Err(format!("{}: SHA-256 {h}, manifest says {}", p.display(), f.sha256));
        }
    }
    Ok(())
}

/// Replaces a manifest's content by `lines` (each without its newline), atomically and durably.
pub fn rewrite(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = String::new();
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    write_atomic_synced(path, text.as_bytes())
}

/// An open manifest that lines are appended to.
pub struct Appender {
    path: PathBuf,
    file: std::fs::File,
}

impl Appender {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: &Path) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one line (the JSON of `entry`) with a single write, then flushes it to the
    /// storage device. A process killed during the write leaves at most a torn last line,
    /// which [`read_manifest`] reports and resuming drops.
    pub fn append<T: Serialize>(&mut self, entry: &T) -> Result<()> {
        let mut line = serde_json::to_string(entry).map_err(|e| Error::parse(&self.path, None, e.to_string()))?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_answer() {
        // FIPS 180-2 test vector
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    fn head(index: usize) -> EntryHead {
        EntryHead {
            version: MANIFEST_VERSION,
            index,
            total: 3,
            shard: "0/1".into(),
            run_sha256: "r".into(),
            shot_sha256: format!("s{index}"),
            files: vec![],
        }
    }

    #[test]
    fn torn_last_line_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.jsonl");
        let mut a = Appender::open(&p).unwrap();
        a.append(&head(0)).unwrap();
        a.append(&head(1)).unwrap();
        drop(a);
        let full = std::fs::read_to_string(&p).unwrap();
        let line = serde_json::to_string(&head(2)).unwrap();
        std::fs::write(&p, format!("{full}{}", &line[..line.len() / 2])).unwrap();
        let l = read_manifest(&p).unwrap().unwrap();
        assert_eq!(l.records.iter().map(|r| r.head.index).collect::<Vec<_>>(), [0, 1]);
        assert!(l.torn_tail);
        assert_eq!(l.bad_lines.len(), 1);
        assert_eq!(l.bad_lines[0].0, 3);
        assert!(read_manifest(&dir.path().join("none")).unwrap().is_none());
    }

    #[test]
    fn verify_detects_changed_files() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("manifest.jsonl");
        std::fs::write(dir.path().join("a.bin"), b"abc").unwrap();
        let mut h = head(0);
        h.files.push(FileRecord {
            kind: "float".into(),
            path: relative_name(&m, &dir.path().join("a.bin")),
            bytes: 3,
            sha256: sha256_hex(b"abc"),
        });
        assert_eq!(h.files[0].path, "a.bin");
        assert!(verify_files(&m, &h).is_ok());
        std::fs::write(dir.path().join("a.bin"), b"abd").unwrap();
        assert!(verify_files(&m, &h).unwrap_err().contains("SHA-256"));
        std::fs::write(dir.path().join("a.bin"), b"ab").unwrap();
        assert!(verify_files(&m, &h).unwrap_err().contains("bytes"));
        std::fs::remove_file(dir.path().join("a.bin")).unwrap();
        assert!(verify_files(&m, &h).is_err());
    }
}
