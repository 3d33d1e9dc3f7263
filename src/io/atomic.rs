//! Writing output files: regular files are replaced atomically, anything else (a device, a
//! FIFO) is written in place, so outputs are either complete or untouched and a device node is
//! never replaced by a file.

use crate::base::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Symbolic links followed before giving up (Linux's own limit).
const MAX_LINK_HOPS: usize = 40;

/// Writes `bytes` to `path`, the way C's `fopen(path, "wb")` + `fwrite` would end up, but
/// never leaving a half-written regular file behind.
///
/// * A regular file, or a path where nothing exists yet, is written to a hidden temporary file
///   (`.nanobragg-tmp-*`) in the destination's directory, which is then renamed over it: a crash
///   or an error leaves the old file (or nothing) in place. A replaced file keeps its
///   permissions; a new one gets 0666 minus the umask, as `fopen` gives.
/// * A symbolic link is followed (to any depth, also when it dangles): its final target is
///   written by these rules, and the link itself stays a link.
/// * Anything else that exists (a character or block device such as `/dev/null` or
///   `/dev/full`, a FIFO, a socket) is opened for writing and written in place, without
///   truncation. Write errors (e.g. `ENOSPC` on `/dev/full`) are reported.
/// * A directory is an error.
///
/// Temporary files are listed in a process-wide registry while they exist, so that
/// [`remove_temporary_files`] can delete them when the process is interrupted. Errors name
/// `path` as given.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, &mut |w| w.write_all(bytes))
}

/// The content of a file being written: a function that writes it, in order, into the writer
/// it is given (buffered). Lets a large output be produced piece by piece, so that writing it
/// needs no second copy in memory.
pub type Content<'a> = &'a mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>;

/// [`write_atomic`], with the content produced by `fill` as it is written.
pub fn write_atomic_with(path: &Path, fill: Content<'_>) -> Result<()> {
    write_atomic_inner(path, fill, false)
}

/// [`write_atomic`], durably: the content is flushed to the storage device (`fsync`) before
/// the rename, and the directory after it, so that once this returns the file survives a power
/// loss as well as a crash of the process. Used for manifests, whose lines must never outlive
/// the files they describe.
pub fn write_atomic_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_inner(path, &mut |w| w.write_all(bytes), true)?;
    sync_parent_dir(path)
}

/// Flushes the directory entry changes (creations, renames) of `path`'s directory to the
/// storage device. A no-op where directories cannot be opened (not Unix).
pub fn sync_parent_dir(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// [`write_atomic`]; `sync`: flush the content to the device before the rename.
fn write_atomic_inner(path: &Path, fill: Content<'_>, sync: bool) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            let target = if is_symlink(path) {
                std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?
            } else {
                path.to_path_buf()
            };
            replace(&TEMPORARIES, path, &target, fill, Some(meta.permissions()), sync)
        }
        Ok(_) => write_in_place(path, fill),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let target = final_link_target(path)?;
            replace(&TEMPORARIES, path, &target, fill, None, sync)
        }
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Deletes every temporary file [`write_atomic`] has not finished yet, and makes later attempts
/// to create one fail. For a signal handler that is about to end the process. Returns how many
/// files were removed.
pub fn remove_temporary_files() -> usize {
    TEMPORARIES.remove_all()
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The path a chain of symbolic links ends at (`path` itself when it is not a link); the end
/// does not exist. Relative link contents are taken relative to the link's directory.
fn final_link_target(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&p).map_err(|e| Error::io(path, e))?;
                p = match p.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::io(
        path,
        std::io::Error::other(format!("more than {MAX_LINK_HOPS} levels of symbolic links")),
    ))
}

/// Writes `values`, each as its little-endian bytes, through `w`, a block at a time; fails with
/// `InvalidInput` unless there are exactly `expected` of them (nothing is then left behind:
/// the error discards the temporary file).
pub fn write_values<const N: usize>(
    w: &mut dyn Write,
    values: impl IntoIterator<Item = [u8; N]>,
    expected: usize,
) -> std::io::Result<()> {
    let mut block = vec![0u8; BUFFER_BYTES / N * N];
    let per_block = block.len() / N;
    let mut values = values.into_iter();
    let mut count = 0usize;
    loop {
        // the slots first, so that no value is drawn without a slot for it
        let mut filled = 0;
        for (slot, v) in block.chunks_exact_mut(N).zip(values.by_ref()) {
            slot.copy_from_slice(&v);
            filled += 1;
        }
        count += filled;
        if count > expected {
            break;
        }
        w.write_all(&block[..filled * N])?;
        if filled < per_block {
            break;
        }
    }
    if count != expected {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("image has {} pixels, expected {expected}", count + values.count()),
        ));
    }
    Ok(())
}

/// Bytes buffered between the content and the file.
const BUFFER_BYTES: usize = 1 << 16;

/// Opens an existing non-regular file for writing and writes the content into it.
fn write_in_place(path: &Path, fill: Content<'_>) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let mut w = std::io::BufWriter::with_capacity(BUFFER_BYTES, f);
    fill(&mut w).and_then(|()| w.flush()).map_err(|e| Error::io(path, e))
}

/// Writes the content to a temporary file beside `target`, then renames it over `target`.
/// `perms`: the permissions of the file being replaced, if any. Errors name `shown`.
fn replace(
    registry: &TempRegistry,
    shown: &Path,
    target: &Path,
    fill: Content<'_>,
    perms: Option<std::fs::Permissions>,
    sync: bool,
) -> Result<()> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let (tmp, registered) = registry.create_in(dir).map_err(|e| Error::io(shown, e))?;
    // the file is renamed, or deleted on error, inside; only then is it unregistered
    let written = fill_and_rename(tmp, target, fill, perms, sync).map_err(|e| Error::io(shown, e));
    drop(registered);
    written
}

fn fill_and_rename(
    mut tmp: tempfile::NamedTempFile,
    target: &Path,
    fill: Content<'_>,
    perms: Option<std::fs::Permissions>,
    sync: bool,
) -> std::io::Result<()> {
    if let Some(perms) = perms {
        tmp.as_file().set_permissions(perms)?;
    }
    let mut w = std::io::BufWriter::with_capacity(BUFFER_BYTES, tmp.as_file_mut());
    fill(&mut w)?;
    w.flush()?;
    drop(w);
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

/// The temporary files of this process.
static TEMPORARIES: TempRegistry = TempRegistry::new();

/// A list of temporary files that exist right now, for removal on an interrupt.
///
/// Files are created while the list is locked, so after [`TempRegistry::remove_all`] no file
/// that was or will be created is left behind.
struct TempRegistry {
    state: Mutex<RegistryState>,
}

#[derive(Default)]
struct RegistryState {
    paths: Vec<PathBuf>,
    /// Set by `remove_all`: the process is ending, no new temporary files.
    closed: bool,
}

/// Unregisters its path when dropped (after the file itself was renamed or deleted).
struct Registered<'a> {
    registry: &'a TempRegistry,
    path: PathBuf,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut st = self.registry.lock();
        if let Some(i) = st.paths.iter().position(|p| *p == self.path) {
            st.paths.swap_remove(i);
        }
    }
}

impl TempRegistry {
    const fn new() -> Self {
        Self {
            state: Mutex::new(RegistryState {
                paths: Vec::new(),
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates a hidden temporary file in `dir` and registers it. Drop the returned guard only
    /// after the file was renamed or deleted.
    fn create_in(&self, dir: &Path) -> std::io::Result<(tempfile::NamedTempFile, Registered<'_>)> {
        let mut st = self.lock();
        if st.closed {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the program is being interrupted",
            ));
        }
        let mut builder = tempfile::Builder::new();
        builder.prefix(".nanobragg-tmp-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder.tempfile_in(dir)?;
        // an absolute path, so removal does not depend on the working directory
        let path = std::path::absolute(tmp.path()).unwrap_or_else(|_| tmp.path().to_path_buf());
        st.paths.push(path.clone());
        Ok((tmp, Registered { registry: self, path }))
    }

    /// Deletes every registered file and refuses new ones; returns how many were deleted.
    fn remove_all(&self) -> usize {
        let mut st = self.lock();
        st.closed = true;
        st.paths.drain(..).filter(|p| std::fs::remove_file(p).is_ok()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::{replace, write_atomic, TempRegistry};
    use crate::base::error::Error;
    use std::path::Path;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// `write_values` writes every value's bytes in order whether the count ends inside a
    /// block, on a block's edge or is zero, and refuses a count other than the one expected.
    #[test]
    fn write_values_writes_each_value_once_in_order_and_checks_the_count() {
        let per_block = super::BUFFER_BYTES / 4;
        for n in [0, 1, per_block - 1, per_block, per_block + 1, 3 * per_block + 5] {
            let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
            let mut written = Vec::new();
            super::write_values(&mut written, values.iter().map(|v| v.to_le_bytes()), n).unwrap();
            let expected: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert!(written == expected, "{n} values");
            for wrong in [n + 1, n.saturating_sub(1)].into_iter().filter(|&w| w != n) {
                let e =
                    super::write_values(&mut Vec::new(), values.iter().map(|v| v.to_le_bytes()), wrong).unwrap_err();
                assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
                assert!(
                    e.to_string()
                        .contains(&format!("image has {n} pixels, expected {wrong}")),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.bin");
        write_atomic(&p, b"first version, longer").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        // No temporary files are left behind.
        assert_eq!(names(dir.path()), vec!["out.bin"]);
    }

    #[cfg(unix)]
    #[test]
    fn file_is_not_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.bin");
        write_atomic(&p, b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        // Owner read/write always; not restricted to 0600 like a default temporary file unless the
        // umask says so (the usual umask 022 gives 0644).
        assert_eq!(mode & 0o600, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.bin");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"new").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn missing_directory_names_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no_such_dir").join("out.bin");
        let err = write_atomic(&p, b"x").unwrap_err();
        assert!(matches!(err, Error::Io { ref path, .. } if *path == p));
        assert!(err.to_string().contains("out.bin"));
    }

    #[test]
    fn directory_target_fails_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a_dir");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"k").unwrap();
        assert!(write_atomic(&target, b"x").is_err());
        assert_eq!(names(dir.path()), vec!["a_dir"]);
        assert_eq!(names(&target), vec!["keep"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_is_followed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let target = sub.join("real.bin");
        std::fs::write(&target, b"old contents").unwrap();
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink("sub/real.bin", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // the temporary file was made beside the target, and is gone
        assert_eq!(names(&sub), vec!["real.bin"]);
        assert_eq!(names(dir.path()), vec!["link.bin", "sub"]);
    }

    #[cfg(unix)]
    #[test]
    fn dangling_symlink_creates_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink("made.bin", &link).unwrap();
        write_atomic(&link, b"abc").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(dir.path().join("made.bin")).unwrap(), b"abc");
    }

    /// A character device node `name` (Linux major, minor) in `dir`, made with `mknod`; `None`
    /// (after a skip message) where that is not permitted. Tests use their own nodes so that a
    /// regression cannot replace the machine's /dev/null, even as root.
    #[cfg(target_os = "linux")]
    fn char_device(dir: &Path, name: &str, major: u32, minor: u32) -> Option<std::path::PathBuf> {
        let p = dir.join(name);
        let made = std::process::Command::new("mknod")
            .args(["-m", "666"])
            .arg(&p)
            .args(["c", &major.to_string(), &minor.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if made {
            Some(p)
        } else {
            eprintln!("SKIP: mknod is not permitted here");
            None
        }
    }

    #[cfg(target_os = "linux")]
    fn is_char_device(p: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn device_nodes_are_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let Some(null) = char_device(dir.path(), "null", 1, 3) else {
            return;
        };
        write_atomic(&null, b"discarded").unwrap();
        assert!(is_char_device(&null), "the null device was replaced");
        // through a symbolic link too: the link is followed to the device
        let link = dir.path().join("to_null");
        std::os::unix::fs::symlink(&null, &link).unwrap();
        write_atomic(&link, b"discarded").unwrap();
        assert!(is_char_device(&null));
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(names(dir.path()), vec!["null", "to_null"]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn full_device_reports_no_space() {
        let dir = tempfile::tempdir().unwrap();
        let Some(full) = char_device(dir.path(), "full", 1, 7) else {
            return;
        };
        let err = write_atomic(&full, b"x").unwrap_err();
        match &err {
            Error::Io { path, source } => {
                assert_eq!(*path, full);
                assert_eq!(source.raw_os_error(), Some(28), "{err}");
            }
            other => panic!("{other}"),
        }
        assert!(is_char_device(&full));
    }

    #[cfg(unix)]
    #[test]
    fn fifo_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIP: mkfifo not available");
            return;
        }
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn registry_removes_unfinished_temporaries_and_closes() {
        let dir = tempfile::tempdir().unwrap();
        let reg = TempRegistry::new();
        let (tmp, guard) = reg.create_in(dir.path()).unwrap();
        let path = tmp.path().to_path_buf();
        // as if the process were interrupted mid-write: the file must not survive the handler
        std::mem::forget(tmp);
        assert!(path.exists());
        assert_eq!(reg.remove_all(), 1);
        assert!(!path.exists());
        drop(guard);
        // no temporary file can be created once the process is ending
        let err = replace(
            &reg,
            Path::new("x"),
            &dir.path().join("x"),
            &mut |w| w.write_all(b"x"),
            None,
            false,
        )
        .unwrap_err();
        assert!(err.to_string().contains("interrupted"), "{err}");
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn registry_forgets_finished_files() {
        let dir = tempfile::tempdir().unwrap();
        let reg = TempRegistry::new();
        replace(
            &reg,
            Path::new("a"),
            &dir.path().join("a"),
            &mut |w| w.write_all(b"a"),
            None,
            false,
        )
        .unwrap();
        assert!(reg.lock().paths.is_empty());
        assert_eq!(reg.remove_all(), 0);
        assert_eq!(names(dir.path()), vec!["a"]);
    }
}
