//! Error type naming the file concerned.
use std::fmt;
use std::path::{Path, PathBuf};

/// An NXmx I/O or validation error, with the file path it concerns.
#[derive(Debug)]
pub struct NxError {
    pub path: PathBuf,
    pub msg: String,
}

impl NxError {
    /// Build an error for `path` with a message.
    pub fn new(path: &Path, msg: impl fmt::Display) -> Self {
        NxError {
            path: path.to_path_buf(),
            msg: msg.to_string(),
        }
    }
}

impl fmt::Display for NxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NeXus file {}: {}", self.path.display(), self.msg)
    }
}

impl std::error::Error for NxError {}
