//! Image products the C program derives from the float image: statistics, the integer SMV
//! image, the Poisson noise image and the PGM preview (physics reference §14, §17).

use crate::error::{Error, Result};
use crate::io::smv::SmvFields;
use crate::noise::PoissonNoise;
use crate::scene::to_host;
use crate::setup::{ActivePixels, Experiment};
use crate::simulate::Image;
use burn::tensor::{backend::Backend, Int, Tensor};

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

/// The pixels of the ROI, masked ones included (the images C derives ignore the mask).
fn roi(exp: &Experiment) -> ActivePixels<'static> {
    let d = &exp.detector;
    ActivePixels::new(d.fpixels, d.spixels, &exp.roi, None)
}

impl Statistics {
    /// Compute the statistics as C does.
    pub fn new(exp: &Experiment, image: &Image) -> Self {
        let d = &exp.detector;
        let os = exp.oversample;
        let sub = d.pixel_size / os as f64;
        let (mut sum, mut sumsq, mut n, mut max_i, mut max_at) = (0.0, 0.0, 0usize, 0.0f64, (0.0, 0.0));
        for idx in exp.active_pixels().iter() {
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
        for idx in roi(exp).iter() {
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

    /// The statistics of an image rendered with the engine's device: those it reduced there
    /// ([`Image::statistics`]), else [`Statistics::new`] over the host copy.
    pub fn of(exp: &Experiment, image: &Image) -> Self {
        image.statistics.clone().unwrap_or_else(|| Self::new(exp, image))
    }

    /// The same statistics reduced on the image's device: `image` `[spixels, fpixels]`
    /// (photons, 0 outside the ROI and in masked pixels, as rendered); two readbacks of a few
    /// scalars, never the image. Sums run pairwise in the backend's float type (f32 on wgpu)
    /// and are finished in f64 on the host; the maximum and its position are exact (the first
    /// in C's loop order among equal values).
    pub fn of_tensor<B: Backend>(exp: &Experiment, image: Tensor<B, 2>) -> Result<Self> {
        let active = exp.active_pixels();
        let rect = active.rect();
        let m = rect.len();
        // rendered pixels: the ROI less the mask (masked ones are 0 in the image)
        let rendered = active.count();
        if m == 0 {
            return Ok(Self {
                max_i: 0.0,
                max_at: (0.0, 0.0),
                mean: 0.0,
                rms: 0.0,
                rmsd: 0.0,
                rendered,
            });
        }
        let device = image.device();
        // the ROI (masked pixels included, as 0) row by row: C's loop order
        let roi = image.slice([rect.rows.clone(), rect.cols.clone()]).reshape([m]);
        let max = roi.clone().max();
        // the first position holding the maximum
        let at_max = roi.clone().equal(max.clone().expand([m]));
        let positions = Tensor::<B, 1, Int>::arange(0..m as i64, &device);
        let first = positions.mask_fill(at_max.bool_not(), m as i64).min();
        // Σv, Σv² and Σ(v − c)² about a shift c near the mean, summed pairwise on the device
        // and finished in f64 here: C sums in double, and f32 sums carried in one kernel lose
        // digits C prints
        let shift = roi.clone().sum() / rendered.max(1) as f64;
        let terms = Tensor::stack::<2>(
            vec![
                roi.clone(),
                roi.clone().powi_scalar(2),
                (roi - shift.clone().expand([m])).powi_scalar(2),
            ],
            0,
        );
        let partials = pairwise_partials(terms, PARTIALS);
        let columns = partials.dims()[1];
        let values = to_host(Tensor::cat(vec![partials.reshape([3 * columns]), max, shift], 0))?;
        let total = |k: usize| values[k * columns..(k + 1) * columns].iter().sum::<f64>();
        let (sum, sumsq, about_shift) = (total(0), total(1), total(2));
        let (max, c) = (values[3 * columns], values[3 * columns + 1]);
        let mean = sum / rendered.max(1) as f64;
        // Σ(v − mean)² over the ROI from the sums about c (C: about the mean of rendered pixels)
        let d = mean - c;
        let deviation = (about_shift - 2.0 * d * (sum - m as f64 * c) + m as f64 * d * d).max(0.0);
        let first = first
            .into_data()
            .convert::<i64>()
            .to_vec::<i64>()
            .map_err(|e| Error::Engine {
                engine: "statistics".into(),
                message: format!("reading back the maximum's position: {e:?}"),
            })?[0] as usize;
        let os = exp.oversample;
        let sub = exp.detector.pixel_size / os as f64;
        let last = |p: usize| sub * (p * os + os - 1) as f64 + sub / 2.0;
        // C's running maximum starts at 0 and moves only on a larger value
        let (max_i, max_at) = if max > 0.0 {
            let (row, col) = (first / rect.cols.len(), first % rect.cols.len());
            (max, (last(rect.cols.start + col), last(rect.rows.start + row)))
        } else {
            (0.0, (0.0, 0.0))
        };
        Ok(Self {
            max_i,
            max_at,
            mean,
            rms: (sumsq / (rendered.max(2) - 1) as f64).sqrt(),
            rmsd: (deviation / (m.max(2) - 1) as f64).sqrt(),
            rendered,
        })
    }
}

/// Partial sums left for the host by [`pairwise_partials`].
const PARTIALS: usize = 1024;

/// Sums along dim 1 of `[k, n]` down to `[k, ≤ target]` partial sums by pairwise halving (the
/// two halves added, a zero column padding an odd count): every partial sum adds its terms in
/// a balanced tree, so its rounding error grows with log₂ n, not n.
fn pairwise_partials<B: Backend>(mut t: Tensor<B, 2>, target: usize) -> Tensor<B, 2> {
    loop {
        let [k, n] = t.dims();
        if n <= target.max(1) {
            return t;
        }
        if n % 2 == 1 {
            let zeros = Tensor::zeros([k, 1], &t.device());
            t = Tensor::cat(vec![t, zeros], 1);
        }
        let half = n.div_ceil(2);
        t = t.clone().slice([0..k, 0..half]) + t.slice([0..k, half..2 * half]);
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

/// The noiseless integer image, pixel by pixel in file order: ROI pixels get
/// round-half-up(value·scale + adc) clipped to [0, 65535]; pixels outside the ROI are 0.
pub fn int_pixels<'a>(exp: &Experiment, image: &'a Image, scale: f64, adc: f64) -> impl Iterator<Item = u16> + 'a {
    let roi = roi(exp);
    image.data.iter().enumerate().map(move |(i, &x)| {
        if !roi.contains(i) {
            return 0;
        }
        let v = (x as f64 * scale + adc).clamp(0.0, 65535.0);
        ((v + 0.5) as f32).floor() as u16
    })
}

/// The PGM scale: the user's, else 250/(5·rmsd), else the int scale.
pub fn pgm_scale(user: Option<f64>, int_scale: f64, stats: &Statistics) -> f64 {
    match user {
        Some(s) if s > 0.0 => s,
        _ if stats.rmsd > 0.0 => 250.0 / (5.0 * stats.rmsd),
        _ => int_scale,
    }
}

/// PGM bytes, pixel by pixel in file order: min(255, value·scale) truncated; 0 outside the ROI.
pub fn pgm_pixels<'a>(exp: &Experiment, image: &'a Image, scale: f64) -> impl Iterator<Item = u8> + 'a {
    let roi = roi(exp);
    image.data.iter().enumerate().map(move |(i, &x)| {
        if roi.contains(i) {
            (x as f64 * scale).min(255.0) as u8
        } else {
            0
        }
    })
}

/// The Poisson noise image with C's generator, pixel by pixel in file order (which is C's order
/// of drawing): for each ROI pixel a deviate of its photons, plus adc, clipped at 65535 (an
/// overload) and truncated; 0 outside the ROI. Counts photons and overloads as it goes.
///
/// Non-finite pixels (which C cannot handle: its sampler never returns for NaN) draw no random
/// number and add no photons: +∞ gives 65535 and counts as an overload, NaN gives 0 (as in the
/// int image), −∞ gives adc (a deviate of 0, like any negative mean).
pub struct NoisePixels<'a> {
    noise: PoissonNoise,
    data: std::iter::Enumerate<std::slice::Iter<'a, f32>>,
    roi: ActivePixels<'static>,
    adc: f64,
    /// Photons drawn so far (finite deviates).
    pub photons: f64,
    /// Pixels clipped at 65535 so far.
    pub overloads: usize,
}

impl<'a> NoisePixels<'a> {
    pub fn new(exp: &Experiment, image: &'a Image, seed: i64, adc: f64) -> Self {
        Self {
            noise: PoissonNoise::new(seed),
            data: image.data.iter().enumerate(),
            roi: roi(exp),
            adc,
            photons: 0.0,
            overloads: 0,
        }
    }
}

impl Iterator for NoisePixels<'_> {
    type Item = u16;

    fn next(&mut self) -> Option<u16> {
        let (i, &x) = self.data.next()?;
        if !self.roi.contains(i) {
            return Some(0);
        }
        let n = self.noise.poisson(x) as f64;
        if n.is_finite() {
            self.photons += n;
        }
        let mut v = n + self.adc;
        if v > 65535.0 {
            v = 65535.0;
            self.overloads += 1;
        }
        // a NaN deviate becomes 0 here (Rust's float-to-int cast), as in the int image
        Some(v as u16)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.data.size_hint()
    }
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
            statistics: None,
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
        let mut pixels = NoisePixels::new(&exp, &img, 1, 40.0);
        let noisy: Vec<u16> = pixels.by_ref().collect();
        assert_eq!(&noisy[..3], &[0, 65535, 40]);
        assert_eq!(pixels.overloads, 1);
        // only the finite pixel adds photons
        assert_eq!(pixels.photons, noisy[3] as f64 - 40.0);
    }
}
