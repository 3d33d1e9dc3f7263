//! `nanobragg.read_image`: an SMV, miniCBF or NeXus image read by the library's readers, as
//! numpy photons (counts less the ADC offset, over the gain) and its header.

use crate::arrays;
use crate::errors::{detached, value_error};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Read the SMV, miniCBF or NeXus NXmx image at `path` (told apart by its first bytes):
/// returns `(pixels, header)`. `pixels` is float64 `(slow, fast)` (`(frames, slow, fast)` for
/// a NeXus stack of several frames), photons per pixel: `(counts − adc) / gain`. `adc` is the
/// ADC offset in ADU (nanoBragg's `-adc`: 40 for its noise images, 0 or the flag's for
/// `-intfile`; headers do not record it), `gain` the ADU per photon. `header` is a dict of
/// the file's header values as text (SMV `KEY=value;`, CBF `# Key value` and MIME lines,
/// NeXus beam and detector values with units), plus `format` ('smv', 'cbf' or 'nexus'),
/// `adc_offset` and `gain` as given. The GIL is released while it reads.
#[pyfunction]
#[pyo3(signature = (path, adc=0.0, gain=1.0))]
pub fn read_image<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    adc: f64,
    gain: f64,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    if !(gain > 0.0 && gain.is_finite() && adc.is_finite()) {
        return Err(value_error(format!(
            "read_image: gain {gain} must be > 0 and adc {adc} finite"
        )));
    }
    let image = detached(py, || nanobragg::io::read_image(&path))?;
    let shape: Vec<usize> = match image.frames {
        1 => vec![image.spixels, image.fpixels],
        n => vec![n, image.spixels, image.fpixels],
    };
    let pixels = arrays::image(py, image.photons(adc, gain), &shape)?.into_any();
    let header = PyDict::new(py);
    for (k, v) in &image.header {
        header.set_item(k, v)?;
    }
    header.set_item("format", image.format.name())?;
    header.set_item("adc_offset", adc)?;
    header.set_item("gain", gain)?;
    Ok((pixels, header))
}
