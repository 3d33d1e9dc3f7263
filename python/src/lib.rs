//! The Python package `nanobragg`: the library's simulator, gradients, derivative images,
//! losses and writers from Python, over numpy arrays (docs/python.md).
//!
//! One file per concept: [`errors`] (Rust errors and panics as Python exceptions, the GIL
//! released around the work), [`flags`] (flags and keyword overrides to a configuration),
//! [`arrays`] (images to and from numpy), [`tasks`] (the generic computations, run on an
//! engine), [`simulator`] (the `Simulator` class), [`writers`] (SMV, CBF, NeXus files).

use pyo3::prelude::*;

mod arrays;
mod errors;
mod flags;
mod simulator;
mod tasks;
mod writers;

/// Run the `nanobragg` program's whole command line in this process (`argv` without the program
/// name): the same log on standard output, the same files, and its exit status (0, or 9 after
/// printing `nanobragg: error: …` to standard error). The GIL is released while it runs.
#[pyfunction]
fn main(py: Python<'_>, argv: flags::Flags) -> PyResult<u8> {
    let args = argv.into_vec();
    errors::detached(py, move || Ok(nanobragg::cli::program::main(&args)))
}

/// The usage text of the command line: every flag with its values and units.
#[pyfunction]
fn usage() -> &'static str {
    nanobragg::cli::usage()
}

#[pymodule(name = "nanobragg")]
fn nanobragg_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(usage, m)?)?;
    m.add_class::<simulator::Simulator>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
