//! A rendered image and the statistics C prints about it: plain data every engine returns and
//! every output reads.

use crate::base::error::{Error, Result};
use crate::experiment::{ActivePixels, Experiment};
use crate::scene::to_host;
use burn::tensor::{backend::Backend, Int, Tensor};

/// A rendered image: photons per pixel, fast-major (`slow·fpixels + fast`), 0 outside the ROI
/// and in masked pixels, stored as f32 like C's float image.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub fpixels: usize,
    pub spixels: usize,
    pub data: Vec<f32>,
    /// Σω over all rendered samples, as C accumulates it for its solid-angle printout (sr).
    pub omega_sum: f64,
    /// Whether tricubic interpolation fell back to nearest neighbour (C's warning).
    pub interpolation_fell_back: bool,
    /// The statistics C prints, when the engine reduced them on its device (the engines that
    /// assemble the image there); `None`: computed from `data` on the host
    /// ([`Statistics::of`]).
    pub statistics: Option<Statistics>,
}

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
pub(crate) fn roi(exp: &Experiment) -> ActivePixels<'static> {
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
        // C's order, one pixel after another (the sums as C rounds them); `for_each` lets the
        // walk run as plain loops over rows
        exp.active_pixels().iter().for_each(|idx| {
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
        });
        let mean = sum / n.max(1) as f64;
        let rms = (sumsq / (n.max(2) - 1) as f64).sqrt();
        let (mut dev, mut m) = (0.0, 0usize);
        roi(exp).iter().for_each(|idx| {
            let t = image.data[idx] as f64 - mean;
            dev += t * t;
            m += 1;
        });
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
        // C's running maximum starts at 0 and moves only on a larger value
        let first_max = (max > 0.0).then_some((max, first));
        Ok(Self::from_sums(exp, sum, sumsq, deviation, first_max))
    }

    /// The statistics from sums over the ROI, in f64: Σv, Σv², Σ(v − mean)², and the largest
    /// value with the ROI position (row by row) of its first occurrence (`None` when no value
    /// is positive: C's running maximum starts at 0).
    pub(crate) fn from_sums(
        exp: &Experiment,
        sum: f64,
        sumsq: f64,
        deviation: f64,
        first_max: Option<(f64, usize)>,
    ) -> Self {
        let active = exp.active_pixels();
        let rect = active.rect();
        let (m, rendered) = (rect.len(), active.count());
        let os = exp.oversample;
        let sub = exp.detector.pixel_size / os as f64;
        let last = |p: usize| sub * (p * os + os - 1) as f64 + sub / 2.0;
        let (max_i, max_at) = first_max.map_or((0.0, (0.0, 0.0)), |(max, q)| {
            let (row, col) = (q / rect.cols.len(), q % rect.cols.len());
            (max, (last(rect.cols.start + col), last(rect.rows.start + row)))
        });
        Self {
            max_i,
            max_at,
            mean: sum / rendered.max(1) as f64,
            rms: (sumsq / (rendered.max(2) - 1) as f64).sqrt(),
            rmsd: (deviation / (m.max(2) - 1) as f64).sqrt(),
            rendered,
        }
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
