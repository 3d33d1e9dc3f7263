//! The detector's point-spread function, as C's `noisify` applies it: each pixel's photons
//! spread over its neighbours by the PSF integrated over each neighbour's area, within a radius
//! chosen per pixel so that at most a tenth of that pixel's photon noise falls outside; the
//! photons outside are added back evenly over the whole image.
//!
//! Offsets and widths are in pixels. The sums run in C's order (for each target pixel, the
//! source pixels in ascending index), in single precision as C's, so results are bit for bit
//! C's whatever the thread count: the image is split into bands of rows, and each band gathers
//! from every source that reaches it. The same PSF as a differentiable tensor stage (fixed
//! radius) is [`crate::physics::psf`].

use rayon::prelude::*;

pub use crate::physics::psf::{PsfShape, FIBER_G_PER_FWHM};

/// The share of a source pixel's photon noise (√N) allowed to fall outside its radius: C's
/// `photonloss_factor` of 10.
const PHOTON_LOSS_FACTOR: f64 = 10.0;

/// A PSF on the pixel grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Psf {
    /// Functional form.
    pub shape: PsfShape,
    /// Full width at half maximum (pixels).
    pub fwhm_px: f64,
    /// Rendering radius (pixels); 0 chooses it per pixel from its photon count.
    pub radius_px: u32,
}

/// What [`apply_psf`] decided, for the log C prints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsfReport {
    /// The largest input value (photons/pixel), when the radius is automatic.
    pub max_photons: Option<f64>,
    /// The radius chosen from `max_photons` (pixels), before the cap at the image's size, as C
    /// prints it.
    pub auto_radius: Option<f64>,
    /// The automatic radius found no photons at all: the output is all zero.
    pub no_photons: bool,
    /// Photons outside the rendering radii, added back evenly.
    pub lost_photons: f64,
}

/// ∫∫ of a unit-volume Gaussian of FWHM 1 from the origin to (x, y), C's `ngauss2D_integ`.
fn gauss_integral(x: f64, y: f64) -> f64 {
    let ln2 = std::f64::consts::LN_2;
    let ln16 = 4.0 * ln2;
    0.125 * (libm::erf(2.0 * x * ln2.sqrt()) * libm::erf(y * ln16.sqrt()) * (ln16 / ln2).sqrt())
}

/// ∫∫ of the unit-volume fiber PSF from the origin to (x, y), C's `fiber2D_integ`.
fn fiber_integral(x: f64, y: f64, g: f64) -> f64 {
    (x * y / (g * (g * g + x * x + y * y).sqrt())).atan() / 2.0 / std::f64::consts::PI
}

/// The integral of `f` over the square of half-side `half` centred on (x, y), from its
/// antiderivative at C's four corners.
fn over_pixel(f: impl Fn(f64, f64) -> f64, x: f64, y: f64, half: f64) -> f64 {
    f(x + half, y + half) - f(x + half, y - half) - f(x - half, y + half) + f(x - half, y - half)
}

impl Psf {
    /// `g` of the fiber form (pixels).
    fn g(&self) -> f64 {
        self.fwhm_px * FIBER_G_PER_FWHM
    }

    /// The fraction of a unit source that lands on the pixel at offset (dx, dy).
    pub fn pixel_fraction(&self, dx: i64, dy: i64) -> f64 {
        let (x, y) = (dx as f64, dy as f64);
        match self.shape {
            PsfShape::Gauss => {
                // C's ngauss2D_pixel(x/fwhm, y/fwhm, 1/fwhm): in units of the FWHM
                let w = self.fwhm_px;
                over_pixel(gauss_integral, x / w, y / w, 1.0 / w / 2.0)
            }
            PsfShape::Fiber => {
                let g = self.g();
                over_pixel(|x, y| fiber_integral(x, y, g), x, y, 1.0 / 2.0)
            }
        }
    }

    /// C's automatic radius for a pixel holding `photons`: where less than a tenth of its
    /// photon noise falls beyond (pixels, before any cap). `kernel_form` takes the Gaussian's
    /// root as C writes it for the whole image (`/log(4)/2`) rather than per pixel
    /// (`/log(16)`). A Gaussian pixel under 0.01 photons makes the root NaN, where C's radius
    /// is undefined: it gets the smallest radius, 1.
    fn auto_radius(&self, photons: f64, kernel_form: bool) -> f64 {
        let lost = photons.sqrt() / PHOTON_LOSS_FACTOR;
        let ln2 = std::f64::consts::LN_2;
        let reach = match (self.shape, kernel_form) {
            (PsfShape::Gauss, false) => (-(lost / photons).ln() / (4.0 * ln2)).sqrt() * self.fwhm_px,
            (PsfShape::Gauss, true) => (-(lost / photons).ln() / (2.0 * ln2) / 2.0).sqrt() * self.fwhm_px,
            (PsfShape::Fiber, _) => self.g() * (photons / lost),
        };
        let radius = 1.0 + reach.ceil();
        if radius.is_nan() {
            1.0
        } else {
            radius.max(1.0)
        }
    }

    /// C's automatic radius for an image whose brightest pixel holds `photons` (pixels, before
    /// the cap at the image's size): the radius `noisify` prints.
    pub fn image_radius(&self, photons: f64) -> f64 {
        self.auto_radius(photons, true)
    }

    /// Photons of a pixel holding `photons` that fall beyond `radius`.
    fn lost_beyond(&self, photons: f64, radius: u32) -> f64 {
        match self.shape {
            PsfShape::Gauss => {
                let r = radius as f64 / self.fwhm_px;
                photons * (-(4.0 * std::f64::consts::LN_2) * (r * r)).exp()
            }
            PsfShape::Fiber => {
                let g = self.g();
                let r2 = (radius as u64 * radius as u64) as f64;
                photons * g / (g * g + r2).sqrt()
            }
        }
    }
}

/// The PSF cached on a square of offsets, zero beyond its radius.
struct Kernel {
    radius: i64,
    values: Vec<f64>,
}

impl Kernel {
    fn new(psf: &Psf, radius: u32) -> Self {
        let r = radius as i64;
        let side = 2 * r + 1;
        let mut values = vec![0.0; (side * side) as usize];
        for dy in -r..=r {
            for dx in -r..=r {
                if dx * dx + dy * dy <= r * r {
                    values[((dy + r) * side + dx + r) as usize] = psf.pixel_fraction(dx, dy);
                }
            }
        }
        Self { radius: r, values }
    }

    fn at(&self, dx: i64, dy: i64) -> f64 {
        if dx.abs() > self.radius || dy.abs() > self.radius {
            return 0.0;
        }
        let side = 2 * self.radius + 1;
        self.values[((dy + self.radius) * side + dx + self.radius) as usize]
    }
}

/// Blurs `image` (`height × width`, fast-major, photons/pixel) by `psf`, as C's `apply_psf`.
///
/// Pixels ≤ 0 spread nothing. Photons that the PSF carries off the image are lost (C wraps
/// those beyond the right edge into the next row: see docs/differences.md).
pub fn apply_psf(image: &[f32], width: usize, height: usize, psf: &Psf) -> (Vec<f32>, PsfReport) {
    let mut report = PsfReport {
        max_photons: None,
        auto_radius: None,
        no_photons: false,
        lost_photons: 0.0,
    };
    let max_radius = width.max(height).min(u32::MAX as usize) as u32;
    let kernel_radius = if psf.radius_px == 0 {
        let max = image.iter().fold(0.0f64, |m, &v| m.max(v as f64));
        report.max_photons = Some(max);
        if max <= 0.0 {
            report.no_photons = true;
            return (vec![0.0; image.len()], report);
        }
        let r = psf.auto_radius(max, true);
        report.auto_radius = Some(r);
        r.min(max_radius as f64) as u32
    } else {
        psf.radius_px.min(max_radius)
    };
    let kernel = Kernel::new(psf, kernel_radius);
    let radii: Vec<u32> = image
        .iter()
        .map(|&v| match (v > 0.0, psf.radius_px) {
            (false, _) => 0,
            (true, 0) => psf.auto_radius(v as f64, false).min(max_radius as f64) as u32,
            (true, r) => r.min(max_radius),
        })
        .collect();
    // C's order: the lost photons of each source pixel in ascending index
    report.lost_photons = image
        .iter()
        .zip(&radii)
        .filter(|(_, &r)| r > 0)
        .map(|(&v, &r)| psf.lost_beyond(v as f64, r))
        .fold(0.0, |sum, lost| sum + lost);
    let mut out = vec![0.0f32; image.len()];
    if width > 0 {
        gather(image, &radii, width, &kernel, &mut out);
    }
    let each = report.lost_photons / image.len() as f64;
    for v in &mut out {
        *v = (*v as f64 + each) as f32;
    }
    (out, report)
}

/// Adds each source's spread to `out`, band of rows by band, sources in ascending index.
fn gather(image: &[f32], radii: &[u32], width: usize, kernel: &Kernel, out: &mut [f32]) {
    let height = image.len() / width;
    let reach = radii.iter().copied().max().unwrap_or(0) as usize;
    let bands = rayon::current_num_threads() * 4;
    let band_rows = height.div_ceil(bands).max(1);
    out.par_chunks_mut(band_rows * width).enumerate().for_each(|(b, band)| {
        let y_lo = b * band_rows;
        let y_hi = y_lo + band.len() / width;
        for y0 in y_lo.saturating_sub(reach)..(y_hi + reach).min(height) {
            for x0 in 0..width {
                let i = y0 * width + x0;
                if radii[i] > 0 {
                    let source = Source {
                        x: x0 as i64,
                        y: y0 as i64,
                        photons: image[i] as f64,
                        radius: radii[i] as i64,
                    };
                    source.spread_into(band, y_lo as i64, width as i64, kernel);
                }
            }
        }
    });
}

/// One source pixel of [`gather`].
struct Source {
    x: i64,
    y: i64,
    photons: f64,
    radius: i64,
}

impl Source {
    /// Adds this source's share to the rows of `band` (its first row is `y_lo`), in single
    /// precision as C's `outimage[j] += inimage[i]*kernel[k]`.
    fn spread_into(&self, band: &mut [f32], y_lo: i64, width: i64, kernel: &Kernel) {
        let r = self.radius;
        let y_hi = y_lo + band.len() as i64 / width;
        let (dy_lo, dy_hi) = ((-r).max(y_lo - self.y), r.min(y_hi - 1 - self.y));
        let (dx_lo, dx_hi) = ((-r).max(-self.x), r.min(width - 1 - self.x));
        for dy in dy_lo..=dy_hi {
            let row = ((self.y + dy - y_lo) * width + self.x) as usize;
            for dx in dx_lo..=dx_hi {
                if dx * dx + dy * dy > r * r {
                    continue;
                }
                let k = kernel.at(dx, dy);
                if k != 0.0 {
                    let o = &mut band[(row as i64 + dx) as usize];
                    *o = (*o as f64 + self.photons * k) as f32;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ∫∫ of `density` over the unit pixel centred on (x, y), by Gauss–Legendre on a grid.
    fn integrate(density: impl Fn(f64, f64) -> f64, x: f64, y: f64) -> f64 {
        // 10-point Gauss–Legendre on each of 8 × 8 sub-squares
        let nodes = [
            (-0.9739065285171717, 0.0666713443086881),
            (-0.8650633666889845, 0.1494513491505806),
            (-0.6794095682990244, 0.219086362515982),
            (-0.4333953941292472, 0.2692667193099963),
            (-0.1488743389816312, 0.2955242247147529),
            (0.1488743389816312, 0.2955242247147529),
            (0.4333953941292472, 0.2692667193099963),
            (0.6794095682990244, 0.219086362515982),
            (0.8650633666889845, 0.1494513491505806),
            (0.9739065285171717, 0.0666713443086881),
        ];
        let n = 8;
        let h = 1.0 / n as f64;
        let mut sum = 0.0;
        for i in 0..n {
            for j in 0..n {
                let (cx, cy) = (x - 0.5 + (i as f64 + 0.5) * h, y - 0.5 + (j as f64 + 0.5) * h);
                for (u, wu) in nodes {
                    for (v, wv) in nodes {
                        sum += wu * wv * density(cx + u * h / 2.0, cy + v * h / 2.0);
                    }
                }
            }
        }
        sum * h * h / 4.0
    }

    fn gauss(fwhm: f64) -> Psf {
        Psf {
            shape: PsfShape::Gauss,
            fwhm_px: fwhm,
            radius_px: 0,
        }
    }

    fn fiber(fwhm: f64) -> Psf {
        Psf {
            shape: PsfShape::Fiber,
            fwhm_px: fwhm,
            radius_px: 0,
        }
    }

    #[test]
    fn gaussian_pixel_fractions_are_its_integrals() {
        for fwhm in [0.7, 1.5, 4.0] {
            let ln16 = 16f64.ln();
            let density = |x: f64, y: f64| {
                ln16 / std::f64::consts::PI / (fwhm * fwhm) * (-ln16 * (x * x + y * y) / (fwhm * fwhm)).exp()
            };
            for (dx, dy) in [(0, 0), (1, 0), (2, -1), (-3, 2)] {
                let want = integrate(density, dx as f64, dy as f64);
                let got = gauss(fwhm).pixel_fraction(dx, dy);
                assert!((got - want).abs() < 1e-10, "fwhm {fwhm} ({dx},{dy}): {got} vs {want}");
            }
        }
    }

    #[test]
    fn fiber_pixel_fractions_are_its_integrals() {
        for fwhm in [0.46, 1.5, 4.0] {
            let g = fwhm * FIBER_G_PER_FWHM;
            let density = |x: f64, y: f64| g / (2.0 * std::f64::consts::PI) * (g * g + x * x + y * y).powf(-1.5);
            for (dx, dy) in [(0, 0), (1, 0), (2, -1), (-3, 2)] {
                let want = integrate(density, dx as f64, dy as f64);
                let got = fiber(fwhm).pixel_fraction(dx, dy);
                assert!(
                    (got - want).abs() < 1e-8 * want.max(1e-3),
                    "fwhm {fwhm} ({dx},{dy}): {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn fiber_width_is_its_full_width_at_half_maximum() {
        // g/(2π)·(g² + r²)^(−3/2) halves at r = g·√(2^(2/3) − 1)
        let want = 1.0 / (2.0 * (2f64.powf(2.0 / 3.0) - 1.0).sqrt());
        assert!((FIBER_G_PER_FWHM - want).abs() < 1e-14, "{FIBER_G_PER_FWHM} vs {want}");
    }

    /// A pseudo-random image with a few bright pixels, zeros and dim ones.
    fn image(width: usize, height: usize) -> Vec<f32> {
        let mut state = 12345u64;
        (0..width * height)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (state >> 33) as f32 / (1u64 << 31) as f32;
                match u {
                    u if u < 0.2 => 0.0,
                    u if u > 0.97 => (u * 3000.0).floor(),
                    u => (u * 20.0).floor(),
                }
            })
            .collect()
    }

    /// C's `apply_psf` as written (source pixels in ascending index, each spread over its disc),
    /// minus the wrap past the right edge: the order the banded gather must reproduce.
    fn scatter_in_c_order(img: &[f32], width: usize, psf: &Psf) -> Vec<f32> {
        let height = img.len() / width;
        let max_radius = width.max(height) as u32;
        let kernel_radius = match psf.radius_px {
            0 => psf
                .auto_radius(img.iter().fold(0.0f64, |m, &v| m.max(v as f64)), true)
                .min(max_radius as f64) as u32,
            r => r.min(max_radius),
        };
        let kernel = Kernel::new(psf, kernel_radius);
        let mut out = vec![0.0f32; img.len()];
        let mut lost = 0.0;
        for (i, &v) in img.iter().enumerate() {
            if v <= 0.0 {
                continue;
            }
            let r = match psf.radius_px {
                0 => psf.auto_radius(v as f64, false).min(max_radius as f64) as u32,
                r => r.min(max_radius),
            } as i64;
            lost += psf.lost_beyond(v as f64, r as u32);
            let (x0, y0) = ((i % width) as i64, (i / width) as i64);
            for dx in -r..=r {
                for dy in -r..=r {
                    let (x, y) = (x0 + dx, y0 + dy);
                    let k = kernel.at(dx, dy);
                    if k == 0.0
                        || dx * dx + dy * dy > r * r
                        || x < 0
                        || y < 0
                        || x >= width as i64
                        || y >= height as i64
                    {
                        continue;
                    }
                    let o = &mut out[(y * width as i64 + x) as usize];
                    *o = (*o as f64 + v as f64 * k) as f32;
                }
            }
        }
        let each = lost / img.len() as f64;
        out.iter().map(|&v| (v as f64 + each) as f32).collect()
    }

    #[test]
    fn banded_gather_is_c_order_on_any_thread_count() {
        let (width, height) = (37, 29);
        let img = image(width, height);
        for psf in [
            gauss(2.5),
            fiber(0.8),
            Psf {
                radius_px: 3,
                ..gauss(1.2)
            },
            Psf {
                radius_px: 6,
                ..fiber(1.0)
            },
        ] {
            let want = scatter_in_c_order(&img, width, &psf);
            for threads in [1, 2, 5] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let (got, _) = pool.install(|| apply_psf(&img, width, height, &psf));
                assert!(
                    got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{psf:?} on {threads} threads"
                );
            }
        }
    }

    #[test]
    fn a_lone_source_keeps_its_photons() {
        // far from the edges every photon lands on the disc or is added back as lost
        let (width, height) = (201, 201);
        for psf in [gauss(3.0), fiber(0.5)] {
            let mut img = vec![0.0f32; width * height];
            img[100 * width + 100] = 10000.0;
            let (out, report) = apply_psf(&img, width, height, &psf);
            let total: f64 = out.iter().map(|&v| v as f64).sum();
            assert!((total / 10000.0 - 1.0).abs() < 0.02, "{psf:?}: {total} ({report:?})");
            assert!(report.lost_photons > 0.0 && report.lost_photons < 1000.0, "{report:?}");
        }
    }

    #[test]
    fn an_image_without_photons_stays_dark() {
        let (out, report) = apply_psf(&[0.0, -1.0, 0.0, 0.0], 2, 2, &gauss(1.0));
        assert!(report.no_photons);
        assert_eq!(out, vec![0.0; 4]);
    }
}
