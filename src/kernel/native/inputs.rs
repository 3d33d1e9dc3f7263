//! The job's flat arrays ([`crate::kernel::job::PixelJob`], laid out by [`crate::kernel::layout`])
//! unpacked into named fields in the loop's precision.

use super::real::Real;
use crate::kernel::job::{PixelJob, Switches};
use crate::kernel::layout as at;

/// A lab vector (m, unit, or Å⁻¹ as its field says).
pub type V3<F> = [F; 3];

/// The scalar parameters of one run.
#[derive(Debug, Clone, Copy)]
pub struct Params<F> {
    /// The detector frame: pix0 (m) and the unit rows f, s, o.
    pub pix0: V3<F>,
    pub fdet: V3<F>,
    pub sdet: V3<F>,
    pub odet: V3<F>,
    /// Sub-pixel size (m), sensor layer step Δz (m), close distance (m), pixel² (m²).
    pub subpixel: F,
    pub layer_step: F,
    pub close_distance: F,
    pub pixel_area: F,
    /// The beam direction (unit) and the distance (m), for the curved detector.
    pub beam: V3<F>,
    pub distance: F,
    /// Δz·μ (dimensionless).
    pub step_mu: F,
    /// 0.5/dmin (m⁻¹).
    pub stol_max: F,
    /// Kahn's polarization factor K.
    pub kahn: F,
    /// default_F (electrons) and the water background I_bg.
    pub default_f: F,
    pub i_bg: F,
    /// Na, Nb, Nc; the shape's fudge; a*, b*, c* (Å⁻¹), for GAUSS and TOPHAT.
    pub n: V3<F>,
    pub fudge: F,
    pub recip: [V3<F>; 3],
}

/// One source: incident direction (unit), 1/λ (m⁻¹), E_in and B_in (unit).
#[derive(Debug, Clone, Copy)]
pub struct Source<F> {
    pub incident: V3<F>,
    pub inv_lambda: F,
    pub e_in: V3<F>,
    pub b_in: V3<F>,
}

/// One orientation row: a/λ, b/λ, c/λ, and a·i/λ, b·i/λ, c·i/λ (the Miller index of a
/// diffracted direction d is d·(a/λ) − a·i/λ).
#[derive(Debug, Clone, Copy)]
pub struct Row<F> {
    pub axes: [V3<F>; 3],
    pub offset: V3<F>,
}

/// The structure-factor grid: first h, k, l and the extent along each; its values.
#[derive(Debug, Clone)]
pub struct Grid<F> {
    pub min: [i32; 3],
    pub count: [i32; 3],
    pub values: Vec<F>,
}

/// Everything the loop reads.
#[derive(Debug, Clone)]
pub struct Inputs<F> {
    pub sw: Switches,
    pub p: Params<F>,
    pub fpixels: usize,
    pub spixels: usize,
    /// ROI rows and columns (end exclusive).
    pub rows: std::ops::Range<usize>,
    pub cols: std::ops::Range<usize>,
    pub oversample: usize,
    pub layers: usize,
    pub sources: Vec<Source<F>>,
    /// Orientation rows per shot (sources × φ × mosaic), all shots back to back.
    pub per_shot: usize,
    pub orientations: Vec<Row<F>>,
    /// r_e²·fluence/steps per shot.
    pub scales: Vec<f64>,
    pub grid: Option<Grid<F>>,
    /// Whether each ROI position is rendered (`None`: all).
    pub mask: Option<Vec<bool>>,
    /// The amorphous background summed beside the Bragg term ([`super::render_with_background`]).
    pub background: Option<Background>,
}

/// The amorphous background (`-stol`) as the loop folds it in: per sample and source of the
/// first layer, sign(F)·F²·P·ω with F from the table at the sample's sinθ/λ, sharing the
/// sample's direction, solid angle and polarization factor with the Bragg term.
#[derive(Debug, Clone)]
pub struct Background {
    pub cubics: crate::physics::amorphous::StolCubics,
    /// r_e²·fluence·molecules/samples: photons per electron²·sr of one sample.
    pub photons_per_sample: f64,
}

impl<F: Real> Inputs<F> {
    /// The orientation rows of shot `shot` (sources × φ × mosaic).
    pub fn orientations_of(&self, shot: usize) -> &[Row<F>] {
        &self.orientations[shot * self.per_shot..(shot + 1) * self.per_shot]
    }

    pub fn new(job: &PixelJob) -> Self {
        let c = |i: usize| usize::try_from(job.counts[i]).unwrap_or(0);
        let grid_counts = [0, 1, 2].map(|a| job.counts[at::HKL_COUNT + a]);
        let has_grid = job.switches.nearest || job.switches.tricubic;
        Self {
            sw: job.switches,
            p: params(&job.params),
            fpixels: c(at::FPIXELS),
            spixels: c(at::SPIXELS),
            rows: c(at::ROW0)..c(at::ROW1),
            cols: c(at::COL0)..c(at::COL1),
            oversample: c(at::OVERSAMPLE),
            layers: c(at::LAYERS),
            sources: job.sources.chunks_exact(at::SOURCE_WIDTH).map(source).collect(),
            per_shot: c(at::PER_SHOT),
            orientations: job.orientations.chunks_exact(at::ORIENTATION_WIDTH).map(row).collect(),
            scales: job.scales.clone(),
            grid: has_grid.then(|| Grid {
                min: [0, 1, 2].map(|a| job.counts[at::HKL_MIN + a]),
                count: grid_counts,
                values: job.hkl.iter().map(|&v| F::of(v)).collect(),
            }),
            mask: job
                .switches
                .masked
                .then(|| job.mask.iter().map(|&v| v != 0.0).collect()),
            background: None,
        }
    }
}

fn v3<F: Real>(a: &[f64], at: usize) -> V3<F> {
    [F::of(a[at]), F::of(a[at + 1]), F::of(a[at + 2])]
}

fn params<F: Real>(p: &[f64]) -> Params<F> {
    let s = |i: usize| F::of(p[i]);
    Params {
        pix0: v3(p, at::PIX0),
        fdet: v3(p, at::FDET),
        sdet: v3(p, at::SDET),
        odet: v3(p, at::ODET),
        subpixel: s(at::SUBPIXEL),
        layer_step: s(at::LAYER_STEP),
        close_distance: s(at::CLOSE_DISTANCE),
        pixel_area: s(at::PIXEL_AREA),
        beam: v3(p, at::BEAM),
        distance: s(at::DISTANCE),
        step_mu: s(at::STEP_MU),
        stol_max: s(at::STOL_MAX),
        kahn: s(at::KAHN),
        default_f: s(at::DEFAULT_F),
        i_bg: s(at::I_BG),
        n: v3(p, at::N_CELLS),
        fudge: s(at::FUDGE),
        recip: [0, 1, 2].map(|v| v3(p, at::RECIP + 3 * v)),
    }
}

fn source<F: Real>(r: &[f64]) -> Source<F> {
    Source {
        incident: v3(r, at::INCIDENT),
        inv_lambda: F::of(r[at::INV_LAMBDA]),
        e_in: v3(r, at::E_IN),
        b_in: v3(r, at::B_IN),
    }
}

fn row<F: Real>(r: &[f64]) -> Row<F> {
    Row {
        axes: [0, 1, 2].map(|v| v3(r, 3 * v)),
        offset: v3(r, at::OFFSET),
    }
}
