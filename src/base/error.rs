//! The crate's error type: every failure names the flag, file or line it came from.

use std::path::PathBuf;

/// Errors from parsing, reading inputs, setting up or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag the C program does not know.
    #[error("unknown flag '{0}' (see -h for the list of flags)")]
    UnknownFlag(String),
    /// A flag whose value is missing, malformed or out of range.
    #[error("flag {flag}: {message}")]
    Flag { flag: String, message: String },
    /// A malformed input file; `line` is 1-based when known.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// A file that cannot be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A configuration that cannot be simulated (e.g. no cell, nothing to render).
    #[error("{0}")]
    Config(String),
    /// A compute engine that cannot start or failed.
    #[error("engine {engine}: {message}")]
    Engine { engine: String, message: String },
    /// A failure while rendering or writing one shot of a shot list (`-shots`, `-shots_random`).
    #[error("shot {index}{}: {source}", line.map(|l| format!(" (shot list line {l})")).unwrap_or_default())]
    Shot {
        index: usize,
        line: Option<usize>,
        #[source]
        source: Box<Error>,
    },
    /// Several independent errors found in one pass (e.g. every bad line of a shot list); the
    /// message lists them one per line.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Multiple(Vec<Error>),
}

impl Error {
    /// Shorthand for [`Error::Flag`].
    pub fn flag(flag: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Flag {
            flag: flag.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Parse`].
    pub fn parse(path: impl Into<PathBuf>, line: Option<usize>, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// The text of a panic payload.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic without a message".into()
    }
}
