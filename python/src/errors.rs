//! Rust errors as Python exceptions, and the GIL released around long calls.
//!
//! Bad input (an unknown or malformed flag, a wrong size, a parameter the configuration does
//! not have) is a `ValueError` carrying the binary's own message, which names the flag; a file
//! that cannot be read or written an `OSError`; an engine that cannot start or failed a
//! `RuntimeError`. A panic inside the library is caught and raised as `RuntimeError`, so a
//! bug never takes the interpreter down.

use nanobragg::Error;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The Python exception for a library error (its message is the binary's, without the
/// `nanobragg: error: ` prefix).
pub fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::Io { .. } => PyOSError::new_err(message),
        Error::Engine { .. } | Error::Shot { .. } => PyRuntimeError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// A `ValueError` with `message`.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// Run `f` with the GIL released (other Python threads run meanwhile), its error and any panic
/// turned into Python exceptions.
pub fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> nanobragg::Result<T> + Send) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(result) => result.map_err(to_py),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!("nanobragg panicked: {what}")))
        }
    }
}
