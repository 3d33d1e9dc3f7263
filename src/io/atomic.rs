//! Atomic file replacement: outputs are either fully written or not there at all.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically.
///
/// The bytes go into a temporary file created in the destination's directory, which is then
/// renamed over `path`; a crash or error never leaves a half-written output behind, and an
/// existing file at `path` is only replaced once the new content is complete.
///
/// Differences from C's `fopen(path, "wb")`: on Unix the file is created with mode 0666 minus
/// the umask, as `fopen` would, but a symbolic link at `path` is replaced by a regular file
/// rather than written through. Errors name `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_inner(path, bytes, false)
}

/// [`write_atomic`], durably: the content is flushed to the storage device (`fsync`) before
/// the rename, and the directory after it, so that once this returns the file survives a power
/// loss as well as a crash of the process. Used for manifests, whose lines must never
/// outlive the files they describe.
pub fn write_atomic_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_inner(path, bytes, true)?;
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

fn write_atomic_inner(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".nanobragg-tmp-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io(path, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(path, e))?;
    tmp.flush().map_err(|e| Error::io(path, e))?;
    if sync {
        tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::write_atomic;
    use crate::error::Error;

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.bin");
        write_atomic(&p, b"first version, longer").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.bin")]);
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
        let n = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(n, 1, "temporary file must be cleaned up");
    }
}
