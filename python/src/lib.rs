//! The Python package `nanobragg`: the library's simulator, gradients, derivative images,
//! losses and writers from Python, over numpy arrays (docs/python.md).
//!
//! One file per concept: [`errors`] (Rust errors and panics as Python exceptions, the GIL
//! released around the work), [`flags`] (flags and keyword overrides to a configuration),
//! [`arrays`] (images to and from numpy), [`simulator`] (the `Simulator` class, over the
//! library's non-generic engine methods, `nanobragg::refine::at`), [`writers`] (SMV, CBF, NeXus files),
//! [`images`] (reading them back), [`gradcheck`] (gradients against central differences).

use pyo3::prelude::*;

mod amorphous;
mod arrays;
mod detector;
mod errors;
mod flags;
mod gradcheck;
mod images;
mod simulator;
mod writers;

/// Run the `nanobragg` program's whole command line in this process (`argv` without the program
/// name): the same log on standard output, the same files, and its exit status (0, or 9 after
/// printing `nanobragg: error: …` to standard error). The GIL is released while it runs.
#[pyfunction]
fn main(py: Python<'_>, argv: flags::Flags) -> PyResult<u8> {
    let args = argv.into_vec();
    errors::detached(py, move || Ok(nanobragg::app::program::main(&args)))
}

/// The usage text of the command line: every flag with its values and units.
#[pyfunction]
fn usage() -> &'static str {
    nanobragg::experiment::args::usage()
}

/// The wgpu adapters this machine offers, in the order `select_gpu` and `-gpu N` count them:
/// a list of dicts (`index`, `name`, `device_type`, `backend`, `driver`).
#[pyfunction]
fn gpu_adapters(py: Python<'_>) -> PyResult<Vec<Bound<'_, pyo3::types::PyDict>>> {
    let adapters = nanobragg::gpu_adapters().map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
    adapters.iter().map(|a| adapter_dict(py, a)).collect()
}

/// Choose the wgpu engine's adapter for this process, before its first wgpu render: `choice`
/// an index in `gpu_adapters()` or a part of one adapter's name (any case). Returns the
/// adapter's dict. `ValueError` when none or several match, or another adapter is already in
/// use.
#[pyfunction]
fn select_gpu<'py>(py: Python<'py>, choice: &Bound<'py, PyAny>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let choice: String = match choice.extract::<usize>() {
        Ok(i) => i.to_string(),
        Err(_) => choice.extract()?,
    };
    let adapter = nanobragg::select_gpu(&choice).map_err(errors::value_error)?;
    adapter_dict(py, &adapter)
}

fn adapter_dict<'py>(py: Python<'py>, a: &nanobragg::Adapter) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item("index", a.index)?;
    d.set_item("name", &a.name)?;
    d.set_item("device_type", &a.device_type)?;
    d.set_item("backend", &a.backend)?;
    d.set_item("driver", &a.driver)?;
    Ok(d)
}

#[pymodule(name = "nanobragg")]
fn nanobragg_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(usage, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_adapters, m)?)?;
    m.add_function(wrap_pyfunction!(select_gpu, m)?)?;
    m.add_function(wrap_pyfunction!(images::read_image, m)?)?;
    m.add_function(wrap_pyfunction!(detector::noisify_main, m)?)?;
    m.add_function(wrap_pyfunction!(detector::add_noise, m)?)?;
    m.add_function(wrap_pyfunction!(detector::apply_psf, m)?)?;
    m.add_function(wrap_pyfunction!(amorphous::nonbragg_main, m)?)?;
    m.add_function(wrap_pyfunction!(amorphous::nonbragg_image, m)?)?;
    m.add_function(wrap_pyfunction!(amorphous::read_stol, m)?)?;
    m.add_function(wrap_pyfunction!(amorphous::stol_structure_factor, m)?)?;
    m.add_function(wrap_pyfunction!(gradcheck::gradcheck, m)?)?;
    m.add_class::<simulator::Simulator>()?;
    m.add_class::<gradcheck::Report>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
