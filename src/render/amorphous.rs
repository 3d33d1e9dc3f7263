//! The amorphous background image (the C suite's `nonBragg`): photons per pixel scattered by a
//! material without long-range order, from its F(sinθ/λ) curve.
//!
//! [`render_background`] is C's loop in f64 on every core, pixel for pixel the C program's
//! image; [`background_samples`] is the same physics as tensor stages, differentiable in the
//! detector geometry (through the sample positions and the close distance), the material's
//! amount and the curve's scale.

use crate::base::error::Result;
use crate::base::vec3::{cross, dot, rotate_axis, scale, unitize, Vec3};
use crate::config::AmorphousConfig;
use crate::experiment::{Experiment, AVOGADRO, R_E_SQR};
use crate::physics::amorphous::{StolCubics, StolCurve};
use crate::render::Image;
use rayon::prelude::*;

/// nonBragg's sample width and height before the beam clips them (m).
pub const NONBRAGG_SAMPLE_SIZE: f64 = 1e-4;

/// One source of the background: unit incident direction, wavelength (m) and weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackgroundSource {
    pub incident: Vec3,
    pub lambda: f64,
    pub weight: f64,
}

/// Everything C's `nonBragg` loop reads, resolved on the host. Lengths in m, angles in rad.
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundScene {
    /// Detector size (pixels).
    pub width: usize,
    pub height: usize,
    /// Rendered pixels, inclusive: fast `roi.0..=roi.1`, slow `roi.2..=roi.3`; others stay 0.
    pub roi: (i64, i64, i64, i64),
    /// Pixel size (m) and sub-pixels per side.
    pub pixel: f64,
    pub oversample: usize,
    /// Detector fast, slow and normal axes, and the lab position of pixel (0, 0)'s corner (m).
    pub fdet: Vec3,
    pub sdet: Vec3,
    pub odet: Vec3,
    pub pix0: Vec3,
    /// Beam direction, for the curved detector.
    pub beam: Vec3,
    /// Sample to beam spot (m) and to the detector plane (m).
    pub distance: f64,
    pub close_distance: f64,
    /// `-curved_det`, `-point_pixel`, `-Fmap`.
    pub curved: bool,
    pub point_pixel: bool,
    pub fmap: bool,
    pub sources: Vec<BackgroundSource>,
    /// Kahn factor and E-vector axis; `None` with `-nopolar`.
    pub polarization: Option<(f64, Vec3)>,
    pub curve: StolCurve,
    /// Thomson cross section r_e² (m²), fluence (photons/m²) and molecules in the beam: the
    /// photons per electron² are their product, taken in C's order.
    pub r_e_sqr: f64,
    pub fluence: f64,
    pub molecules: f64,
}

impl BackgroundScene {
    /// Samples per pixel: sources × oversample².
    pub fn steps(&self) -> usize {
        self.sources.len() * self.oversample * self.oversample
    }

    /// Photons per electron² per steradian of the whole exposure: r_e²·fluence·molecules (in
    /// that order). C multiplies them into each pixel's sum one by one instead; the pixel
    /// that follows C's order (`pixel`, behind [`render_background`]) keeps doing so.
    pub fn photons_per_electron_sqr(&self) -> f64 {
        self.r_e_sqr * self.fluence * self.molecules
    }

    /// Whether pixel (fast, slow) is rendered.
    pub fn in_roi(&self, fast: usize, slow: usize) -> bool {
        let (f, s) = (fast as i64, slow as i64);
        !(f < self.roi.0 || f > self.roi.1 || s < self.roi.2 || s > self.roi.3)
    }

    /// Lab position of the sample at detector coordinates (Fdet, Sdet) (m), as C builds it.
    fn position(&self, fdet: f64, sdet: f64) -> Vec3 {
        let p: Vec3 =
            std::array::from_fn(|i| fdet * self.fdet[i] + sdet * self.sdet[i] + 0.0 * self.odet[i] + self.pix0[i]);
        if !self.curved {
            return p;
        }
        let v = scale(self.beam, self.distance);
        let v = rotate_axis(v, self.sdet, p[1] / self.distance);
        rotate_axis(v, self.fdet, p[2] / self.distance)
    }

    /// Solid angle (sr) at air path `r` (m): C uses the whole pixel's size for every sub-pixel.
    fn omega(&self, r: f64) -> f64 {
        match self.point_pixel {
            true => 1.0 / r / r,
            false => self.pixel * self.pixel / r / r * self.close_distance / r,
        }
    }
}

impl BackgroundScene {
    /// The amorphous sample of `amorphous` in `exp`'s beam and on its detector: nanobragg's
    /// geometry, ROI, sources (weighted equally, as nanobragg weighs them), fluence and
    /// polarization, the table's curve, and nonBragg's sample (`thickness` along the beam,
    /// 0.1 mm across clipped by the beam). `None` without a table.
    pub fn of_experiment(exp: &Experiment, amorphous: &AmorphousConfig) -> Result<Option<Self>> {
        let Some((path, units)) = &amorphous.table else {
            return Ok(None);
        };
        let curve = StolCurve::new(&crate::io::stol::read_stol(path)?, *units);
        let d = &exp.detector;
        let across = NONBRAGG_SAMPLE_SIZE.min(exp.beamsize);
        let volume = amorphous.thickness * across * across;
        let molecules = match amorphous.molecules {
            0.0 => volume * amorphous.density * AVOGADRO / amorphous.molecular_weight,
            n => n,
        };
        let sources = exp
            .sources
            .iter()
            .map(|s| BackgroundSource {
                incident: s.incident,
                lambda: s.lambda,
                weight: 1.0,
            })
            .collect();
        Ok(Some(Self {
            width: d.fpixels,
            height: d.spixels,
            roi: (exp.roi.xmin, exp.roi.xmax, exp.roi.ymin, exp.roi.ymax),
            pixel: d.pixel_size,
            oversample: exp.oversample.max(1),
            fdet: d.fdet,
            sdet: d.sdet,
            odet: d.odet,
            pix0: d.pix0,
            beam: d.beam,
            distance: d.distance,
            close_distance: d.close_distance,
            curved: d.curved,
            point_pixel: d.point_pixel,
            fmap: false,
            sources,
            polarization: (!exp.nopolar).then_some((exp.polarization, unitize(d.polar).0)),
            curve,
            r_e_sqr: R_E_SQR,
            fluence: exp.fluence,
            molecules,
        }))
    }
}

/// One source as [`render_background_fast`] uses it: 1/λ, and the E-vector frame of the
/// polarization factor.
struct FastSource {
    incident: Vec3,
    inv_lambda: f64,
    weight: f64,
    /// `(e_in, b_in)`: the incident E-vector nearest the polarization axis and its normal.
    frame: (Vec3, Vec3),
}

/// Pixels of a row that [`render_background_fast`] renders together, one per lane: its loops
/// over lanes compile to vector instructions (square roots and divisions of several pixels at
/// once), each pixel's sum still taken in C's order.
const LANES: usize = 8;

/// One value per pixel of a lane group.
type Lanes = [f64; LANES];

/// The image of [`render_background`], its arithmetic rearranged for speed: pixels in groups
/// of [`LANES`], reciprocals instead of C's divisions, the interpolation's denominators folded
/// into the table ([`StolCubics`]), each source's polarization frame computed once, cos 2ψ
/// without trigonometry. The same samples, sources and physics; each pixel within a few units
/// in the last place of f64 before its rounding to f32 (a unit test compares the two).
pub fn render_background_fast(scene: &BackgroundScene) -> Vec<f32> {
    let cubics = StolCubics::new(&scene.curve);
    let axis = scene.polarization.map_or([0.0, 0.0, 1.0], |p| p.1);
    let sources: Vec<FastSource> = scene
        .sources
        .iter()
        .map(|s| {
            let b_in = unitize(cross(axis, s.incident)).0;
            let e_in = unitize(cross(s.incident, b_in)).0;
            FastSource {
                incident: s.incident,
                inv_lambda: 1.0 / s.lambda,
                weight: s.weight,
                frame: (e_in, b_in),
            }
        })
        .collect();
    let w = scene.width;
    let mut pixels = vec![0.0f32; w * scene.height];
    pixels.par_chunks_mut(w.max(1)).enumerate().for_each(|(slow, row)| {
        for (group, out) in row.chunks_mut(LANES).enumerate() {
            let first = group * LANES;
            if !(first..first + out.len()).any(|fast| scene.in_roi(fast, slow)) {
                continue;
            }
            let values = pixel_group(scene, &cubics, &sources, first, slow);
            for (lane, value) in out.iter_mut().enumerate() {
                if scene.in_roi(first + lane, slow) {
                    *value = values[lane];
                }
            }
        }
    });
    pixels
}

/// Pixels `first..first + LANES` of row `slow` of [`render_background_fast`] (photons, or the
/// last F with `-Fmap`); lanes past the row's end are computed and dropped by the caller.
fn pixel_group(
    scene: &BackgroundScene,
    cubics: &StolCubics,
    sources: &[FastSource],
    first: usize,
    slow: usize,
) -> [f32; LANES] {
    let os = scene.oversample;
    let sub = scene.pixel / os as f64;
    let (mut intensity, mut last_f) = ([0.0f64; LANES], [0.0f64; LANES]);
    for sub_s in 0..os {
        let sdet = sub * (slow * os + sub_s) as f64 + sub / 2.0;
        for sub_f in 0..os {
            let fdet: Lanes = std::array::from_fn(|l| sub * ((first + l) * os + sub_f) as f64 + sub / 2.0);
            let (d, omega) = directions(scene, &fdet, sdet);
            for src in sources {
                let f = source_f(cubics, src, &d);
                let polar = match scene.polarization {
                    Some((kahn, _)) => polarization_lanes(kahn, src, &d),
                    None => [1.0; LANES],
                };
                for l in 0..LANES {
                    // sign(F)·F² as C takes it: |F|·F is the same product, bit for bit
                    intensity[l] += f[l].abs() * f[l] * polar[l] * omega[l] * src.weight;
                }
                last_f = f;
            }
        }
    }
    let photons = scene.photons_per_electron_sqr();
    let steps = scene.steps() as f64;
    std::array::from_fn(|l| match scene.fmap {
        true => last_f[l] as f32,
        false => (intensity[l] * photons / steps) as f32,
    })
}

/// Unit diffracted directions (x, y, z lanes) and solid angles (sr) of the samples at detector
/// coordinates (`fdet[l]`, `sdet`) (m).
fn directions(scene: &BackgroundScene, fdet: &Lanes, sdet: f64) -> ([Lanes; 3], Lanes) {
    let mut p = [[0.0; LANES]; 3];
    for l in 0..LANES {
        let position = scene.position(fdet[l], sdet);
        (p[0][l], p[1][l], p[2][l]) = (position[0], position[1], position[2]);
    }
    let mut inv_r = [0.0; LANES];
    for l in 0..LANES {
        inv_r[l] = 1.0 / (p[0][l] * p[0][l] + p[1][l] * p[1][l] + p[2][l] * p[2][l]).sqrt();
    }
    let mut omega = [0.0; LANES];
    if scene.point_pixel {
        for l in 0..LANES {
            omega[l] = inv_r[l] * inv_r[l];
        }
    } else {
        let area = scene.pixel * scene.pixel * scene.close_distance;
        for l in 0..LANES {
            omega[l] = area * inv_r[l] * inv_r[l] * inv_r[l];
        }
    }
    let d = std::array::from_fn(|i| std::array::from_fn(|l| p[i][l] * inv_r[l]));
    (d, omega)
}

/// F (electrons) of source `src` at the diffracted directions `d`: sinθ/λ = |d − s₀|/2λ,
/// interpolated in the table.
fn source_f(cubics: &StolCubics, src: &FastSource, d: &[Lanes; 3]) -> Lanes {
    let mut stol = [0.0; LANES];
    for l in 0..LANES {
        let q: Vec3 = std::array::from_fn(|i| (d[i][l] - src.incident[i]) * src.inv_lambda);
        stol[l] = 0.5 * (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]).sqrt();
    }
    cubics.f_lanes(&stol)
}

/// [`polarization_factor`] of each lane's direction, with the source's frame given: with
/// (x, y) the direction's components along the frame's E-vector and its normal, x² + y² is
/// sin²2θ, so cos 2ψ·sin²2θ = x² − y² for ψ = atan2(y, x) (and 0 where both vanish, as C's
/// atan2(0, 0) = 0 gives with sin²2θ = 0).
fn polarization_lanes(kahn: f64, src: &FastSource, d: &[Lanes; 3]) -> Lanes {
    let mut polar = [0.0; LANES];
    let ((e, b), s) = (src.frame, src.incident);
    for l in 0..LANES {
        let cos2 = s[0] * d[0][l] + s[1] * d[1][l] + s[2] * d[2][l];
        let (x, y) = (
            d[0][l] * e[0] + d[1][l] * e[1] + d[2][l] * e[2],
            d[0][l] * b[0] + d[1][l] * b[1] + d[2][l] * b[2],
        );
        polar[l] = 0.5 * (1.0 + cos2 * cos2 - kahn * (x * x - y * y));
    }
    polar
}

/// `image` of `exp` with the amorphous background of `scene` added (photons per pixel, in f32
/// as C's float images would be added; masked pixels and those outside the ROI stay as they
/// are).
pub fn add_amorphous_background(exp: &Experiment, scene: &BackgroundScene, image: &mut Image) {
    add_background_image(exp, &render_background_fast(scene), image);
}

/// `background` (photons per pixel, the detector's shape) added to `image`'s active pixels.
fn add_background_image(exp: &Experiment, background: &[f32], image: &mut Image) {
    let w = image.fpixels.max(1);
    let active = exp.active_pixels();
    let rows = image.data.par_chunks_mut(w).zip(background.par_chunks(w));
    rows.enumerate().for_each(|(slow, (out, row))| {
        for ((v, b), inside) in out.iter_mut().zip(row).zip(active.membership_from(slow * w)) {
            if inside {
                *v += b;
            }
        }
    });
    // the statistics C prints are of the image written
    image.statistics = None;
}

/// `images` of `exp`, each with the amorphous background of `scene` added
/// ([`add_amorphous_background`]; the background rendered once).
pub fn with_background(exp: &Experiment, scene: &BackgroundScene, images: Result<Vec<Image>>) -> Result<Vec<Image>> {
    let mut images = images?;
    let background = render_background_fast(scene);
    for image in &mut images {
        add_background_image(exp, &background, image);
    }
    Ok(images)
}

/// C's `polarization_factor`: ½(1 + cos²2θ − K·cos 2ψ·sin²2θ) for unit `incident` and
/// `diffracted`, ψ measured from the E-vector nearest `axis`.
pub fn polarization_factor(kahn: f64, incident: Vec3, diffracted: Vec3, axis: Vec3) -> f64 {
    let cos2 = dot(incident, diffracted);
    let (cos2_sqr, mut psi) = (cos2 * cos2, 0.0);
    let sin2_sqr = 1.0 - cos2_sqr;
    if kahn != 0.0 {
        let b_in = unitize(cross(axis, incident)).0;
        let e_in = unitize(cross(incident, b_in)).0;
        psi = -dot(diffracted, b_in).atan2(dot(diffracted, e_in));
    }
    0.5 * (1.0 + cos2_sqr - kahn * (2.0 * psi).cos() * sin2_sqr)
}

/// The rendered image and what C reports about it.
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundImage {
    /// Photons per pixel, fast-major, `width·height`.
    pub pixels: Vec<f32>,
    /// Σ ω over every rendered sample (sr).
    pub omega_sum: f64,
    /// Detector coordinates (Fdet, Sdet) (m) of the last sample of each pixel, for C's
    /// "max_I at" line.
    pub last_sample: Vec<(f64, f64)>,
}

/// C's `nonBragg` loop: each pixel of the ROI, its sub-pixels and sources, in C's order and
/// arithmetic, rows spread over rayon's threads (each pixel's sum is C's whatever the count).
pub fn render_background(scene: &BackgroundScene) -> BackgroundImage {
    let w = scene.width;
    let mut pixels = vec![0.0f32; w * scene.height];
    let mut rows: Vec<(f64, Vec<(f64, f64)>)> = Vec::new();
    pixels
        .par_chunks_mut(w.max(1))
        .enumerate()
        .map(|(slow, row)| {
            let (mut omega_sum, mut hint) = (0.0, 1);
            let mut last = vec![(0.0, 0.0); row.len()];
            for (fast, out) in row.iter_mut().enumerate() {
                if scene.in_roi(fast, slow) {
                    let (value, omega, at) = pixel(scene, fast, slow, &mut hint);
                    (*out, last[fast]) = (value, at);
                    omega_sum += omega;
                }
            }
            (omega_sum, last)
        })
        .collect_into_vec(&mut rows);
    BackgroundImage {
        pixels,
        omega_sum: rows.iter().map(|r| r.0).sum(),
        last_sample: rows.into_iter().flat_map(|r| r.1).collect(),
    }
}

/// One pixel: its value (photons, or F with `-Fmap`), its Σω and its last sample's (Fdet, Sdet).
/// `hint` is the table interval of the sample before, where the search starts.
fn pixel(scene: &BackgroundScene, fast: usize, slow: usize, hint: &mut usize) -> (f32, f64, (f64, f64)) {
    let os = scene.oversample;
    let sub = scene.pixel / os as f64;
    let (mut intensity, mut omega_sum, mut last_f, mut at) = (0.0f64, 0.0f64, 0.0f64, (0.0, 0.0));
    for sub_s in 0..os {
        for sub_f in 0..os {
            let fdet = sub * (fast * os + sub_f) as f64 + sub / 2.0;
            let sdet = sub * (slow * os + sub_s) as f64 + sub / 2.0;
            at = (fdet, sdet);
            let (diffracted, airpath) = unitize(scene.position(fdet, sdet));
            let omega = scene.omega(airpath);
            omega_sum += omega;
            for src in &scene.sources {
                let q: Vec3 = std::array::from_fn(|i| (diffracted[i] - src.incident[i]) / src.lambda);
                let s = 0.5 * dot(q, q).sqrt();
                let f = scene.curve.f_near(s, hint);
                let sign = if f < 0.0 { -1.0 } else { 1.0 };
                let polar = match scene.polarization {
                    Some((kahn, axis)) => polarization_factor(kahn, src.incident, diffracted, axis),
                    None => 1.0,
                };
                intensity += sign * f * f * polar * omega * src.weight * 1.0;
                last_f = f;
            }
        }
    }
    let value = match scene.fmap {
        true => last_f as f32,
        false => (intensity * scene.r_e_sqr * scene.fluence * scene.molecules / scene.steps() as f64) as f32,
    };
    (value, omega_sum, at)
}

#[cfg(test)]
mod tests;
