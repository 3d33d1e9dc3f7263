//! The steps of `noisify`'s chain, each a function of the image before it: photons, noise,
//! integer pixels. The PSF between the noise and the pixels is [`super::psf`].

use crate::experiment::R_E_SQR;
use crate::render::noise::Deviates;

/// C's default fluence (photons/m²): times the Thomson cross section r_e² it is the factor
/// that puts an input file on the photons/pixel scale, unity unless `-fluence` changes it.
pub const PHOTON_SCALE_FLUENCE: f64 = 125932015286227086360700780544.0;

/// The integer type of the pixels written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelBits {
    /// 16-bit unsigned pixels, saturating at 65535.
    U16,
    /// 32-bit unsigned pixels, saturating at 2³¹ − 1 as C's.
    U32,
}

impl PixelBits {
    /// The saturation value (ADU).
    pub fn max_adu(self) -> f64 {
        match self {
            PixelBits::U16 => 65535.0,
            PixelBits::U32 => 2147483647.0,
        }
    }
}

/// The detector and noise settings of `noisify`.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorModel {
    /// Factor on every input value before noise (`-scale`).
    pub photon_scale: f64,
    /// Incident fluence (photons/m²); C's default makes the input photons/pixel.
    pub fluence: f64,
    /// Relative rms of the source's 1/f flicker, one draw per pixel (`-flicker`).
    pub flicker: f64,
    /// Relative rms of each pixel's static calibration error (`-calibration`).
    pub calibration: f64,
    /// Gaussian read-out noise (ADU rms, `-readout`).
    pub readout_adu: f64,
    /// ADU per photon (`-gain`).
    pub gain: f64,
    /// ADU added to every pixel (`-adc`).
    pub adc_offset: f64,
}

impl Default for DetectorModel {
    /// C's defaults: unit scale and gain, 3 % calibration error, ADC offset 40, no flicker and
    /// no read-out noise.
    fn default() -> Self {
        Self {
            photon_scale: 1.0,
            fluence: PHOTON_SCALE_FLUENCE,
            flicker: 0.0,
            calibration: 0.03,
            readout_adu: 0.0,
            gain: 1.0,
            adc_offset: 40.0,
        }
    }
}

impl DetectorModel {
    /// Photons per input unit: fluence·r_e²·scale, in C's order.
    pub fn photons_per_unit(&self) -> f64 {
        self.fluence * R_E_SQR * self.photon_scale
    }
}

/// The input on the photons/pixel scale, as C's single-precision `photonimage`.
pub fn noiseless_photons(input: &[f32], model: &DetectorModel) -> Vec<f32> {
    let k = model.photons_per_unit();
    input.iter().map(|&v| (k * v as f64) as f32).collect()
}

/// The photons each pixel counts: flicker and calibration error scale its mean, then a
/// Poisson draw. `seed` and `calib_seed` are C's seed variables (−n for `-seed n`), drawn
/// through the one shared `deviates` as C's statics are. Returns the counts and their sum.
pub fn noisy_photons(
    photons: &[f32],
    model: &DetectorModel,
    deviates: &mut Deviates,
    seed: &mut i64,
    calib_seed: &mut i64,
) -> (Vec<f32>, f64) {
    let mut sum = 0.0;
    let counts = photons
        .iter()
        .map(|&mean| {
            let mut mean = mean as f64;
            if model.flicker > 0.0 {
                mean *= 1.0 + model.flicker * deviates.gaussian(seed) as f64;
            }
            if model.calibration > 0.0 {
                mean *= 1.0 + model.calibration * deviates.gaussian(calib_seed) as f64;
            }
            let n = deviates.poisson(mean as f32, seed);
            sum += n as f64;
            n
        })
        .collect();
    (counts, sum)
}

/// Integer pixels and what they hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts {
    /// The pixels (ADU), saturated at the type's maximum and floored at 0.
    pub adu: Vec<u32>,
    /// The 16-bit pixels C keeps beside them (the PGM preview is made from these).
    pub adu16: Vec<u16>,
    /// Pixels that saturated the written type.
    pub overloads: usize,
    /// Sum of the photons converted (before gain, offset and read-out noise).
    pub photons: f64,
}

/// Gain, ADC offset and read-out noise (drawn from `seed` when `readout` is set), then C's
/// truncation to integers. A negative value becomes 0 (C wraps it around: see
/// docs/differences.md).
pub fn adu_pixels(
    photons: &[f32],
    model: &DetectorModel,
    bits: PixelBits,
    readout: Option<(&mut Deviates, &mut i64)>,
) -> Counts {
    let mut readout = readout.filter(|_| model.readout_adu > 0.0);
    let mut counts = Counts {
        adu: Vec::with_capacity(photons.len()),
        adu16: Vec::with_capacity(photons.len()),
        overloads: 0,
        photons: 0.0,
    };
    for &p in photons {
        counts.photons += p as f64;
        let mut adu = p as f64 * model.gain + model.adc_offset;
        if let Some((deviates, seed)) = readout.as_mut() {
            adu += model.readout_adu * deviates.gaussian(seed) as f64;
        }
        let adu32 = adu.min(PixelBits::U32.max_adu());
        let adu16 = adu32.min(PixelBits::U16.max_adu());
        if adu > bits.max_adu() {
            counts.overloads += 1;
        }
        counts.adu.push(match bits {
            PixelBits::U16 => adu16.max(0.0) as u32,
            PixelBits::U32 => adu32.max(0.0) as u32,
        });
        counts.adu16.push(adu16.max(0.0) as u16);
    }
    counts
}
