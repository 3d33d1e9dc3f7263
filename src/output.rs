//! Image products the C program derives from the float image: statistics, the integer SMV
//! image, the Poisson noise image and the PGM preview (physics reference §14, §17).

use crate::config::Roi;
use crate::io::smv::SmvFields;
use crate::noise::PoissonNoise;
use crate::setup::Experiment;
use crate::simulate::Image;

/// The statistics C prints after rendering.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistics {
    /// Largest rendered value and the (Fdet, Sdet) of its pixel's last sub-pixel (m).
    pub max_i: f64,
    pub max_at: (f64, f64),
    /// Mean and RMS over rendered pixels (ROI, unmasked).
    pub mean: f64,
    pub rms: f64,
    /// RMS deviation from the mean over all ROI pixels, masked ones included (as C).
    pub rmsd: f64,
    /// Number of rendered pixels.
    pub rendered: usize,
}

fn in_roi(roi: &Roi, f: usize, s: usize) -> bool {
    let (f, s) = (f as i64, s as i64);
    f >= roi.xmin && f <= roi.xmax && s >= roi.ymin && s <= roi.ymax
}

/// Pixels of the ROI in C's order (slow, then fast).
fn roi_pixels(exp: &Experiment) -> impl Iterator<Item = usize> + '_ {
    let d = &exp.detector;
    (0..d.spixels).flat_map(move |s| {
        (0..d.fpixels)
            .filter(move |&f| in_roi(&exp.roi, f, s))
            .map(move |f| s * d.fpixels + f)
    })
}

impl Statistics {
    /// Compute the statistics as C does.
    pub fn new(exp: &Experiment, image: &Image) -> Self {
        let d = &exp.detector;
        let os = exp.oversample;
        let sub = d.pixel_size / os as f64;
        let (mut sum, mut sumsq, mut n, mut max_i, mut max_at) = (0.0, 0.0, 0usize, 0.0f64, (0.0, 0.0));
        for idx in exp.active_pixels() {
            let idx = idx as usize;
            let v = image.data[idx] as f64;
            if v > max_i {
                max_i = v;
                let (s, f) = (idx / d.fpixels, idx % d.fpixels);
                let last = |p: usize| sub * (p * os + os - 1) as f64 + sub / 2.0;
                max_at = (last(f), last(s));
            }
            sum += v;
            sumsq += v * v;
            n += 1;
        }
        let mean = sum / n.max(1) as f64;
        let rms = (sumsq / (n.max(2) - 1) as f64).sqrt();
        let (mut dev, mut m) = (0.0, 0usize);
        for idx in roi_pixels(exp) {
            let t = image.data[idx] as f64 - mean;
            dev += t * t;
            m += 1;
        }
        let rmsd = (dev / (m.max(2) - 1) as f64).sqrt();
        Self {
            max_i,
            max_at,
            mean,
            rms,
            rmsd,
            rendered: n,
        }
    }
}

/// The int-image scale: the user's, or 55000/max (1 for a blank image).
pub fn int_scale(user: Option<f64>, stats: &Statistics) -> f64 {
    match user {
        Some(s) if s > 0.0 => s,
        _ if stats.max_i > 0.0 => 55000.0 / stats.max_i,
        _ => 1.0,
    }
}

/// The noiseless integer image: ROI pixels get round-half-up(value·scale + adc) clipped to
/// [0, 65535]; pixels outside the ROI are 0.
pub fn int_image(exp: &Experiment, image: &Image, scale: f64, adc: f64) -> Vec<u16> {
    let mut out = vec![0u16; image.data.len()];
    for idx in roi_pixels(exp) {
        let v = (image.data[idx] as f64 * scale + adc).clamp(0.0, 65535.0);
        out[idx] = ((v + 0.5) as f32).floor() as u16;
    }
    out
}

/// The PGM scale: the user's, else 250/(5·rmsd), else the int scale.
pub fn pgm_scale(user: Option<f64>, int_scale: f64, stats: &Statistics) -> f64 {
    match user {
        Some(s) if s > 0.0 => s,
        _ if stats.rmsd > 0.0 => 250.0 / (5.0 * stats.rmsd),
        _ => int_scale,
    }
}

/// PGM bytes: min(255, value·scale) truncated; 0 outside the ROI.
pub fn pgm_image(exp: &Experiment, image: &Image, scale: f64) -> Vec<u8> {
    let mut out = vec![0u8; image.data.len()];
    for idx in roi_pixels(exp) {
        out[idx] = (image.data[idx] as f64 * scale).min(255.0) as u8;
    }
    out
}

/// The Poisson noise image with C's generator: for each ROI pixel in order, a deviate of the
/// pixel's photons, plus adc, clipped at 65535 (an overload) and truncated. Returns the image,
/// the photon total and the overload count.
///
/// Non-finite pixels (which C cannot handle: its sampler never returns for NaN) draw no random
/// number and add no photons: +∞ gives 65535 and counts as an overload, NaN gives 0 (as in the
/// int image), −∞ gives adc (a deviate of 0, like any negative mean).
pub fn noise_image(exp: &Experiment, image: &Image, seed: i64, adc: f64) -> (Vec<u16>, f64, usize) {
    let mut noise = PoissonNoise::new(seed);
    let mut out = vec![0u16; image.data.len()];
    let (mut photons, mut overloads) = (0.0, 0usize);
    for idx in roi_pixels(exp) {
        let n = noise.poisson(image.data[idx]) as f64;
        if n.is_finite() {
            photons += n;
        }
        let mut v = n + adc;
        if v > 65535.0 {
            v = 65535.0;
            overloads += 1;
        }
        // a NaN deviate becomes 0 here (Rust's float-to-int cast), as in the int image
        out[idx] = v as u16;
    }
    (out, photons, overloads)
}

/// Where an image holds values that are not finite numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NonFinite {
    /// Pixels that are NaN, and the (slow, fast) position of the first in C's order.
    pub nan: usize,
    pub first_nan: Option<(usize, usize)>,
    /// Pixels that are ±∞ (an overflow of the f32 range), and the first one's (slow, fast).
    pub infinite: usize,
    pub first_infinite: Option<(usize, usize)>,
}

impl NonFinite {
    /// Scans an image (row-major, `fpixels` per row).
    pub fn scan(image: &Image) -> Self {
        let mut r = Self::default();
        let at = |idx: usize| (idx / image.fpixels.max(1), idx % image.fpixels.max(1));
        for (idx, v) in image.data.iter().enumerate() {
            if v.is_nan() {
                r.nan += 1;
                r.first_nan.get_or_insert(at(idx));
            } else if v.is_infinite() {
                r.infinite += 1;
                r.first_infinite.get_or_insert(at(idx));
            }
        }
        r
    }
}

/// SMV header values of an experiment, computed as C does.
pub fn smv_fields(exp: &Experiment) -> SmvFields {
    let d = &exp.detector;
    let px = d.pixel_size;
    let mm = 1000.0;
    SmvFields {
        fpixels: d.fpixels,
        spixels: d.spixels,
        pixel_size_mm: px * mm,
        distance_mm: d.distance * mm,
        wavelength_angstrom: exp.lambda0 * 1e10,
        beam_center_x_mm: d.xbeam * mm,
        beam_center_y_mm: d.ybeam * mm,
        adxv_center_x_mm: d.fbeam * mm,
        adxv_center_y_mm: (d.detsize_s - d.sbeam) * mm,
        mosflm_center_x_mm: (d.sbeam - 0.5 * px) * mm,
        mosflm_center_y_mm: (d.fbeam - 0.5 * px) * mm,
        denzo_x_beam_mm: d.sbeam * mm,
        denzo_y_beam_mm: d.fbeam * mm,
        dials_origin_mm: d.dials_origin,
        xds_orgx_px: d.orgx,
        xds_orgy_px: d.orgy,
        close_distance_mm: d.close_distance * mm,
        phi_deg: exp.phi0.to_degrees(),
        osc_start_deg: exp.phi0.to_degrees(),
        osc_range_deg: exp.phi.range.to_degrees(),
        twotheta_deg: d.twotheta.to_degrees(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;

    fn experiment(pixels: usize) -> Experiment {
        let mut cfg = SimConfig::default();
        cfg.crystal.cell = Some([
            1e-8,
            1e-8,
            1e-8,
            90f64.to_radians(),
            90f64.to_radians(),
            90f64.to_radians(),
        ]);
        cfg.crystal.default_f = 100.0;
        cfg.detector.fpixels = Some(pixels);
        cfg.detector.spixels = Some(pixels);
        Experiment::with_structure_factors(&cfg, None).unwrap()
    }

    fn image(data: Vec<f32>, fpixels: usize) -> Image {
        Image {
            fpixels,
            spixels: data.len() / fpixels,
            data,
            omega_sum: 0.0,
            interpolation_fell_back: false,
        }
    }

    #[test]
    fn non_finite_pixels_are_counted_and_located() {
        let mut data = vec![1.0f32; 12];
        data[5] = f32::NAN;
        data[7] = f32::INFINITY;
        data[9] = f32::NAN;
        data[10] = f32::NEG_INFINITY;
        let r = NonFinite::scan(&image(data, 4));
        assert_eq!((r.nan, r.first_nan), (2, Some((1, 1))));
        assert_eq!((r.infinite, r.first_infinite), (2, Some((1, 3))));
        assert_eq!(NonFinite::scan(&image(vec![0.0; 4], 2)), NonFinite::default());
    }

    #[test]
    fn noise_of_non_finite_pixels_is_defined() {
        let exp = experiment(2);
        let img = image(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 5.0], 2);
        let (noisy, photons, overloads) = noise_image(&exp, &img, 1, 40.0);
        assert_eq!(&noisy[..3], &[0, 65535, 40]);
        assert_eq!(overloads, 1);
        // only the finite pixel adds photons
        assert_eq!(photons, noisy[3] as f64 - 40.0);
    }
}
