//! Images to and from numpy: an image leaves as a numpy array that owns the engine's host
//! buffer (no copy); arrays come in as float32 views (converted only when their dtype differs).

use crate::errors::value_error;
use numpy::ndarray::{Array, IxDyn};
use numpy::{AllowTypeChange, IntoPyArray, PyArrayDyn, PyArrayLikeDyn};
use pyo3::prelude::*;

/// `data` (slow-major rows of `fast` pixels, stacked panels first) as a numpy array of `shape`,
/// owning `data`.
pub fn image<'py, T: numpy::Element>(
    py: Python<'py>,
    data: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    Array::from_shape_vec(IxDyn(shape), data)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| value_error(format!("image of shape {shape:?}: {e}")))
}

/// Values as a 1-D float64 numpy array.
pub fn vector<'py>(py: Python<'py>, values: Vec<f64>) -> Bound<'py, numpy::PyArray1<f64>> {
    values.into_pyarray(py)
}

/// An array-like of `what` with exactly `expected` elements, flattened C order, as f32.
pub fn pixels<T: numpy::Element + Copy>(
    what: &str,
    a: &PyArrayLikeDyn<'_, T, AllowTypeChange>,
    expected: usize,
) -> PyResult<Vec<T>> {
    let view = a.as_array();
    if view.len() != expected {
        return Err(value_error(format!(
            "{what}: {} values for {expected} pixels (shape {:?})",
            view.len(),
            view.shape()
        )));
    }
    Ok(view.iter().copied().collect())
}
