//! SMV, CBF and NeXus files of an image, written as the binary writes them.

use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
