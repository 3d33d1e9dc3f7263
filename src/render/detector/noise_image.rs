//! nanobragg's noise image through `noisify`'s detector model (`-flicker`, `-calibration`,
//! `-readout`, `-gain`, `-psf`, … on the command line): the same steps, seeds and random
//! streams as `noisify` run on nanobragg's float image, so both give the same pixels.

use super::{adu_pixels, apply_psf, noiseless_photons, noisy_photons, Counts, DetectorModel, PixelBits, Psf, PsfShape};
use crate::config::{DetectorNoiseConfig, PsfKind};
use crate::render::noise::Deviates;

/// `noisify`'s seed variable of the calibration error when `-calib_seed` is not given.
pub const DEFAULT_CALIB_SEED: i64 = 123456789;

/// The detector model of `cfg` with ADC offset `adc` (ADU), on nanobragg's photons/pixel.
pub fn detector_model(cfg: &DetectorNoiseConfig, adc: f64) -> DetectorModel {
    DetectorModel {
        flicker: cfg.flicker,
        calibration: cfg.calibration,
        readout_adu: cfg.readout,
        gain: cfg.gain,
        adc_offset: adc,
        ..DetectorModel::default()
    }
}

/// The 32-bit counts of a `width` × `height` image of photons/pixel with pixels `pixel` (m)
/// through the model of `cfg`: flicker, calibration error and Poisson noise from `-seed n`
/// (`seed` = n, C's variable −n), the PSF, gain, `adc` and read-out noise, saturating at
/// 2³¹ − 1. `counts.photons` holds the photons after the PSF.
pub fn detector_counts(
    image: &[f32],
    (width, height): (usize, usize),
    pixel: f64,
    cfg: &DetectorNoiseConfig,
    adc: f64,
    seed: i64,
) -> Counts {
    let model = detector_model(cfg, adc);
    let photons = noiseless_photons(image, &model);
    let mut deviates = Deviates::default();
    let mut seed = seed.wrapping_neg();
    let mut calib_seed = cfg.calib_seed.map_or(DEFAULT_CALIB_SEED, i64::wrapping_neg);
    let (mut counted, _) = noisy_photons(&photons, &model, &mut deviates, &mut seed, &mut calib_seed);
    if let Some(kind) = cfg.psf.filter(|_| cfg.psf_fwhm > 0.0) {
        let psf = Psf {
            shape: match kind {
                PsfKind::Gauss => PsfShape::Gauss,
                PsfKind::Fiber => PsfShape::Fiber,
            },
            fwhm_px: cfg.psf_fwhm / pixel,
            radius_px: cfg.psf_radius,
        };
        counted = apply_psf(&counted, width, height, &psf).0;
    }
    adu_pixels(&counted, &model, PixelBits::U32, Some((&mut deviates, &mut seed)))
}
