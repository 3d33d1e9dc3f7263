//! The C suite's `nonBragg` from Python: `nonbragg_main` (the program), `nonbragg_image` (its
//! image as a numpy array, nothing written), `read_stol` (a `.stol` table) and
//! `stol_structure_factor` (the table's F where C's interpolation puts it).

use crate::arrays;
use crate::errors::{detached, value_error};
use crate::flags;
use nanobragg::app::nonbragg::StolCurve;
use nanobragg::io::stol::{read_stol as read_table, StolUnits};
use numpy::{AllowTypeChange, IntoPyArray, PyArrayLikeDyn};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// Run the `nonbragg` program on `argv` (its flags, without the program name), as the binary
/// does: prints C's log, writes the images, returns the exit status (0, or 9 with the error on
/// stderr). The GIL is released while it runs.
#[pyfunction]
pub fn nonbragg_main(py: Python<'_>, argv: flags::Flags) -> PyResult<u8> {
    let args = argv.into_vec();
    detached(py, move || Ok(nanobragg::app::nonbragg::main(&args)))
}

/// The image `nonbragg` renders for `argv` (its flags), as float32 `(slow, fast)` photons per
/// pixel, printing and writing nothing. Bad flags or tables raise `ValueError` naming them.
#[pyfunction]
pub fn nonbragg_image(py: Python<'_>, argv: flags::Flags) -> PyResult<Bound<'_, PyAny>> {
    let args = argv.into_vec();
    let (width, height, pixels) = detached(py, move || nanobragg::app::nonbragg::render_image(&args))?;
    Ok(arrays::image(py, pixels, &[height, width])?.into_any())
}

fn units_of(units: &str) -> PyResult<StolUnits> {
    match units {
        "stol" => Ok(StolUnits::Stol),
        "4stol" => Ok(StolUnits::FourStol),
        "Q" | "q" => Ok(StolUnits::Q),
        _ => Err(value_error(format!("units: '{units}' is not 'stol', '4stol' or 'Q'"))),
    }
}

/// The curve of a `.stol` file, its first column read in `units`.
fn curve_of(path: &Path, units: &str) -> PyResult<(nanobragg::io::stol::StolTable, StolCurve)> {
    let units = units_of(units)?;
    let table = read_table(path).map_err(|e| value_error(e.to_string()))?;
    let curve = StolCurve::new(&table, units);
    Ok((table, curve))
}

/// A `.stol` table as two float64 arrays `(stol, F)`: sinθ/λ in Å⁻¹ (the first column read as
/// sinθ/λ, 4·sinθ/λ or Q = 4π·sinθ/λ for `units` `'stol'`, `'4stol'`, `'Q'`) and F (electrons).
/// A malformed table raises `ValueError` naming the file and line.
#[pyfunction]
#[pyo3(signature = (path, units="stol"))]
pub fn read_stol<'py>(py: Python<'py>, path: PathBuf, units: &str) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let mult = units_of(units)?.to_stol_per_m() / 1e10;
    let (table, _) = curve_of(&path, units)?;
    let stol: Vec<f64> = table.x.iter().map(|x| x * mult).collect();
    Ok((stol.into_pyarray(py).into_any(), table.f.into_pyarray(py).into_any()))
}

/// F (electrons, float64, the shape of `stol`) of the table at `path` at each sinθ/λ of `stol`
/// (Å⁻¹), interpolated as `nonbragg` does: the cubic through the four nearest points, the end
/// values held by guard points beyond the table.
#[pyfunction]
#[pyo3(signature = (path, stol, units="stol"))]
pub fn stol_structure_factor<'py>(
    py: Python<'py>,
    path: PathBuf,
    stol: PyArrayLikeDyn<'py, f64, AllowTypeChange>,
    units: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let (_, curve) = curve_of(&path, units)?;
    let view = stol.as_array();
    if view.iter().any(|s| !s.is_finite()) {
        return Err(value_error("stol: every value must be finite"));
    }
    let f = view.mapv(|s| curve.f_at(s * 1e10));
    Ok(f.into_pyarray(py).into_any())
}
