//! The C suite's detector model from Python: `noisify_main` (the `noisify` program),
//! `add_noise` (its chain on a numpy image) and `apply_psf` (its point-spread function).

use crate::arrays;
use crate::errors::{detached, value_error};
use crate::flags;
use nanobragg::render::detector::{
    adu_pixels, apply_psf as psf_blur, noiseless_photons, noisy_photons, Counts, DetectorModel, PixelBits, Psf,
    PsfShape,
};
use nanobragg::render::noise::Deviates;
use numpy::{AllowTypeChange, PyArrayLikeDyn};
use pyo3::prelude::*;

/// Run the `noisify` program on `argv` (its flags, without the program name), as the binary
/// does: prints C's log, writes the images, returns the exit status (0, or 9 with the error on
/// stderr). The GIL is released while it runs.
#[pyfunction]
pub fn noisify_main(py: Python<'_>, argv: flags::Flags) -> PyResult<u8> {
    let args = argv.into_vec();
    detached(py, move || Ok(nanobragg::app::noisify::main(&args)))
}

/// A 2-D image's (slow, fast) size and its values.
fn image_2d(a: &PyArrayLikeDyn<'_, f32, AllowTypeChange>) -> PyResult<(usize, usize, Vec<f32>)> {
    let shape = a.as_array().shape().to_vec();
    let [slow, fast] = shape[..] else {
        return Err(value_error(format!(
            "image: expected a 2-D (slow, fast) array, got shape {shape:?}"
        )));
    };
    if a.as_array().iter().any(|v| !v.is_finite()) {
        return Err(value_error("image: every value must be finite"));
    }
    Ok((slow, fast, arrays::pixels("image", a, slow * fast)?))
}

fn psf_of(name: &str, fwhm: f64, radius: u32) -> PyResult<Psf> {
    let shape = match name {
        "gauss" | "gaussian" => PsfShape::Gauss,
        "fiber" => PsfShape::Fiber,
        _ => return Err(value_error(format!("psf: '{name}' is not 'gauss' or 'fiber'"))),
    };
    if !(fwhm > 0.0 && fwhm.is_finite()) {
        return Err(value_error(format!(
            "psf fwhm: {fwhm} pixels must be positive and finite"
        )));
    }
    Ok(Psf {
        shape,
        fwhm_px: fwhm,
        radius_px: radius,
    })
}

/// `image` (2-D, photons/pixel) blurred by a `psf` of `'gauss'` or `'fiber'` form and FWHM
/// `fwhm` (pixels), as `noisify` does: within `radius` pixels of each source (0: chosen per
/// pixel from its photon count), the photons beyond added back evenly. Returns float32 of the
/// same shape; the same for any thread count.
#[pyfunction]
#[pyo3(signature = (image, psf, fwhm, radius=0))]
pub fn apply_psf<'py>(
    py: Python<'py>,
    image: PyArrayLikeDyn<'py, f32, AllowTypeChange>,
    psf: &str,
    fwhm: f64,
    radius: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let (slow, fast, values) = image_2d(&image)?;
    let psf = psf_of(psf, fwhm, radius)?;
    let (out, _) = py.detach(|| psf_blur(&values, fast, slow, &psf));
    Ok(arrays::image(py, out, &[slow, fast])?.into_any())
}

/// The integer pixels of `c` in the type `bits` names, as a numpy array of `shape`.
fn counts_array<'py>(py: Python<'py>, c: Counts, bits: PixelBits, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    Ok(match bits {
        PixelBits::U16 => arrays::image(py, c.adu16, shape)?.into_any(),
        PixelBits::U32 => arrays::image(py, c.adu, shape)?.into_any(),
    })
}

/// `noisify`'s chain on `image` (2-D, photons/pixel, e.g. a render): returns `(ideal, noisy)`,
/// the integer images it writes as `-intfile` and `-noisefile`, uint16 (`bits=16`) or uint32
/// (`bits=32`). `seed` and `calib_seed` are `-seed` and `-calib_seed` (C's default calibration
/// seed when `None`); `scale`, `flicker`, `calibration`, `readout` (ADU), `gain` (ADU/photon),
/// `adc` (ADU) are its flags of the same names; `psf` (`'gauss'`, `'fiber'` or `None`) with
/// `psf_fwhm` and `psf_radius` in pixels. The same arguments give C's images bit for bit.
#[pyfunction]
#[pyo3(signature = (image, seed, calib_seed=None, scale=1.0, flicker=0.0, calibration=0.03, readout=0.0, gain=1.0, adc=40.0, psf=None, psf_fwhm=0.46, psf_radius=0, bits=16))]
#[allow(clippy::too_many_arguments)]
pub fn add_noise<'py>(
    py: Python<'py>,
    image: PyArrayLikeDyn<'py, f32, AllowTypeChange>,
    seed: i32,
    calib_seed: Option<i32>,
    scale: f64,
    flicker: f64,
    calibration: f64,
    readout: f64,
    gain: f64,
    adc: f64,
    psf: Option<&str>,
    psf_fwhm: f64,
    psf_radius: u32,
    bits: u32,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (slow, fast, values) = image_2d(&image)?;
    let bits = match bits {
        16 => PixelBits::U16,
        32 => PixelBits::U32,
        _ => return Err(value_error(format!("bits: {bits} is not 16 or 32"))),
    };
    for (name, v) in [
        ("scale", scale),
        ("flicker", flicker),
        ("calibration", calibration),
        ("readout", readout),
        ("gain", gain),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(value_error(format!("{name}: {v} must be finite and not negative")));
        }
    }
    let psf = psf.map(|p| psf_of(p, psf_fwhm, psf_radius)).transpose()?;
    let model = DetectorModel {
        photon_scale: scale,
        flicker,
        calibration,
        readout_adu: readout,
        gain,
        adc_offset: adc,
        ..DetectorModel::default()
    };
    let (ideal, noisy) = py.detach(|| {
        let photons = noiseless_photons(&values, &model);
        let ideal = adu_pixels(&photons, &model, bits, None);
        let mut deviates = Deviates::default();
        let (mut seed, mut calib) = (-(seed as i64), calib_seed.map_or(123456789, |s| -(s as i64)));
        let (mut counted, _) = noisy_photons(&photons, &model, &mut deviates, &mut seed, &mut calib);
        if let Some(psf) = psf {
            counted = psf_blur(&counted, fast, slow, &psf).0;
        }
        (
            ideal,
            adu_pixels(&counted, &model, bits, Some((&mut deviates, &mut seed))),
        )
    });
    Ok((
        counts_array(py, ideal, bits, &[slow, fast])?,
        counts_array(py, noisy, bits, &[slow, fast])?,
    ))
}
