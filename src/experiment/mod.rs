//! Host-side setup: everything the C program resolves before its pixel loop, in its order.
//!
//! [`Experiment::new`] turns a [`SimConfig`] (what the user asked for) into resolved, derived
//! quantities in f64: detector geometry, sampling counts, crystal vectors, sources, mosaic
//! rotations, structure factors. Nothing here is differentiated; the physics stages take it
//! from here as tensors.

pub mod args;
pub(crate) mod crystal;
pub(crate) mod detector;
pub mod panels;
pub(crate) mod pixels;
mod resolve;
pub(crate) mod resources;
pub(crate) mod sampling;
pub(crate) mod sources;

use crate::base::error::{Error, Result};
use crate::base::vec3::{norm, Mat3};
use crate::config::{CrystalShape, HklSource, Roi, SimConfig};
use crate::io::hkl::HklGrid;
pub use crystal::CrystalLattice;
pub use detector::DetectorGeometry;
pub use pixels::{ActivePixels, Membership, RoiRect, Span, Spans};
pub use sampling::Sweep;
pub use sources::Source;

/// Classical electron radius squared (m²).
pub const R_E_SQR: f64 = 7.94079248018965e-30;
/// Avogadro's number (1/mol).
pub const AVOGADRO: f64 = 6.02214179e23;
/// Forward structure factor and molar mass (g/mol) of water, for the background.
pub const WATER_F: f64 = 2.57;
pub const WATER_MW: f64 = 18.0;
/// The water background I_bg per unit fluence and cubic metre of water:
/// F_w²·r_e²·10⁶·N_A/M_w (C's formula; I_bg = this · fluence · water size³).
pub const WATER_BACKGROUND: f64 = WATER_F * WATER_F * R_E_SQR * 1e6 * AVOGADRO / WATER_MW;

/// Structure factors: a dense HKL grid (if any) and the value outside it.
#[derive(Debug, Clone, PartialEq)]
pub struct StructureFactors {
    pub grid: Option<HklGrid>,
    pub default_f: f64,
    /// Tricubic interpolation (C's rules applied; off when there is no grid).
    pub interpolate: bool,
}

/// Sensor layers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sensor {
    /// Total thickness (m) and layer step (m).
    pub thickness: f64,
    pub layers: usize,
    pub step: f64,
    /// Attenuation coefficient (1/m).
    pub mu: f64,
}

/// Everything resolved on the host, ready for the physics stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub detector: DetectorGeometry,
    pub sensor: Sensor,
    /// Sub-pixels per axis, and the automatic recommendation.
    pub oversample: usize,
    pub recommended_oversample: usize,
    pub oversample_thick: bool,
    pub oversample_polar: bool,
    pub oversample_omega: bool,
    /// Inclusive pixel bounds (fast = x, slow = y).
    pub roi: Roi,
    /// Mask (fast-major), 0 = skip.
    pub mask: Option<Vec<u16>>,
    pub lattice: CrystalLattice,
    /// Unit cells along a, b, c.
    pub n_cells: [f64; 3],
    pub shape: CrystalShape,
    pub fudge: f64,
    /// Spindle start and step (rad), step count, oscillation (rad).
    pub phi0: f64,
    pub phi: Sweep,
    /// Mosaic spread (rad) and one rotation per domain (domain 0 is the identity).
    pub mosaic_spread: f64,
    pub mosaic_umats: Vec<Mat3>,
    pub sources: Vec<Source>,
    pub hdiv: Sweep,
    pub vdiv: Sweep,
    pub disp: Sweep,
    pub lambda0: f64,
    pub structure_factors: StructureFactors,
    /// Kahn factor, and whether polarization is off.
    pub polarization: f64,
    pub nopolar: bool,
    pub fluence: f64,
    pub flux: f64,
    pub exposure: f64,
    pub beamsize: f64,
    /// Resolution cut (m), 0 = off.
    pub dmin: f64,
    pub water_size: f64,
    /// Water background added to every pixel's accumulator (photons/sr before scaling).
    pub i_bg: f64,
    /// sources · domains · φ steps · oversample².
    pub steps: usize,
    /// Warnings C would print.
    pub warnings: Vec<String>,
}

impl Experiment {
    /// Resolve a configuration. `structure_factors` loads the HKL file or `Fdump.bin`.
    pub fn new(cfg: &SimConfig) -> Result<Self> {
        let sf = load_structure_factors(cfg)?;
        Self::with_structure_factors(cfg, sf)
    }

    /// Resolve a configuration with an already-loaded HKL grid (or none).
    pub fn with_structure_factors(cfg: &SimConfig, grid: Option<HklGrid>) -> Result<Self> {
        let mut warnings = Vec::new();
        let (beam_cfg, xtal_cfg, samp) = (&cfg.beam, &cfg.crystal, &cfg.sampling);
        let lambda0 = beam_cfg.lambda0;
        let has_data = resolve::check_structure_factors(lambda0, xtal_cfg.default_f, grid.as_ref())?;
        let beam = resolve::beam_on_sample(beam_cfg, xtal_cfg, &mut warnings)?;
        let detector = DetectorGeometry::new(&cfg.detector)?;
        let roi = resolve_roi(cfg, &detector, &mut warnings)?;
        let mask = resolve::mask(cfg, &detector)?;

        // sampling
        let phi = sampling::phi_sweep(xtal_cfg.phisteps, xtal_cfg.osc, xtal_cfg.phistep);
        let hdiv = sampling::spread_sweep(beam_cfg.hdivsteps, beam_cfg.hdivrange, beam_cfg.hdivstep);
        let vdiv = sampling::spread_sweep(beam_cfg.vdivsteps, beam_cfg.vdivrange, beam_cfg.vdivstep);
        let disp = sampling::spread_sweep(beam_cfg.dispsteps, Some(beam_cfg.dispersion), None);
        let sensor = resolve::sensor(&cfg.detector, &mut warnings);
        let (domains, mosaic_spread) = resolve::mosaic(xtal_cfg, &mut warnings)?;

        // interpolation: C decides from the N given on the command line, before N is final
        let interpolate = match xtal_cfg.interpolate {
            Some(on) => on,
            None => xtal_cfg.na <= 2.0 || xtal_cfg.nb <= 2.0 || xtal_cfg.nc <= 2.0,
        } && has_data;

        let lattice = CrystalLattice::new(xtal_cfg, lambda0)?;
        let n_cells = resolve::unit_cells(xtal_cfg, &lattice, &beam);
        let (oversample, recommended) =
            resolve::oversampling(samp.oversample, &lattice, n_cells, lambda0, &detector, &mut warnings);

        let divergence_points = hdiv.count.saturating_mul(vdiv.count);
        resources::check(&resources::Demand {
            pixels: detector.pixels(),
            sources: match &beam_cfg.sources {
                Some(rows) => rows.len(),
                None => divergence_points.saturating_mul(disp.count),
            },
            source_file: beam_cfg.sources.is_some(),
            divergence_points,
            wavelengths: disp.count,
            phi_steps: phi.count,
            domains,
            oversample,
            oversample_given: samp.oversample.is_some_and(|n| n > 0),
            layers: sensor.layers,
            all_orientations: samp.oversample_thick || samp.oversample_polar || samp.oversample_omega || interpolate,
            threads: crate::base::threads::default_count(),
        })?;

        let sources = resolve::sources(beam_cfg, &detector, hdiv, vdiv, disp)?;
        check_wavelengths(&sources, lambda0, beam_cfg.sources.is_some(), &lattice)?;
        let mosaic_umats = resolve::mosaic_rotations(mosaic_spread, domains, xtal_cfg.mosaic_seed)?;

        let water_size = samp.water_size;
        let i_bg = beam.fluence * water_size.powi(3) * WATER_BACKGROUND;
        check_intensity_factors(beam.fluence, i_bg, xtal_cfg.default_f, grid.as_ref())?;
        resolve::check_cell_count(n_cells)?;
        // representable: resources::check bounded every factor
        let steps = [domains, phi.count, oversample, oversample]
            .iter()
            .fold(sources.len(), |acc, &n| acc.saturating_mul(n));

        Ok(Self {
            detector,
            sensor,
            oversample,
            recommended_oversample: recommended,
            oversample_thick: samp.oversample_thick,
            oversample_polar: samp.oversample_polar,
            oversample_omega: samp.oversample_omega,
            roi,
            mask,
            lattice,
            n_cells,
            shape: xtal_cfg.shape,
            fudge: xtal_cfg.fudge,
            phi0: xtal_cfg.phi0,
            phi,
            mosaic_spread,
            mosaic_umats,
            sources,
            hdiv,
            vdiv,
            disp,
            lambda0,
            structure_factors: StructureFactors {
                grid,
                default_f: xtal_cfg.default_f,
                interpolate,
            },
            polarization: beam_cfg.polarization,
            nopolar: beam_cfg.nopolar,
            fluence: beam.fluence,
            flux: beam.flux,
            exposure: beam_cfg.exposure,
            beamsize: beam_cfg.beamsize,
            dmin: samp.dmin,
            water_size,
            i_bg,
            steps,
            warnings,
        })
    }

    /// Whether `other` can be rendered in one batch with this experiment
    /// ([`crate::scene::Scene::batch`]): everything equal but the crystal's orientation (misset
    /// or matrix, φ start, mosaic domains) and the fluence, with the same number of orientations,
    /// and neither order-dependent rule of C in play (`-oversample_thick/polar/omega` running
    /// products, tricubic interpolation's switch to nearest neighbour), which the batch would
    /// apply across shots.
    pub fn batches_with(&self, other: &Experiment) -> bool {
        if self.oversample_thick
            || self.oversample_polar
            || self.oversample_omega
            || self.structure_factors.interpolate
            || self.mosaic_umats.len() != other.mosaic_umats.len()
        {
            return false;
        }
        let mut same = other.clone();
        let (mine, theirs) = (&self.lattice, &mut same.lattice);
        (theirs.a, theirs.b, theirs.c, theirs.misset) = (mine.a, mine.b, mine.c, mine.misset);
        // the reciprocal vectors enter the Gaussian and top-hat spot shapes only
        if matches!(self.shape, CrystalShape::Square | CrystalShape::Round) {
            (theirs.a_star, theirs.b_star, theirs.c_star) = (mine.a_star, mine.b_star, mine.c_star);
        }
        same.phi0 = self.phi0;
        same.mosaic_umats.clone_from(&self.mosaic_umats);
        (same.fluence, same.flux, same.exposure, same.beamsize) =
            (self.fluence, self.flux, self.exposure, self.beamsize);
        same.warnings.clone_from(&self.warnings);
        *self == same
    }

    /// The pixels that are rendered (inside the ROI, not masked), in C's order, as indices
    /// `slow·fpixels + fast`; walked without listing them.
    pub fn active_pixels(&self) -> ActivePixels<'_> {
        let d = &self.detector;
        ActivePixels::new(d.fpixels, d.spixels, &self.roi, self.mask.as_deref())
    }

    /// Where the samples of the ROI lie (see [`crate::physics::detector::sample_coordinates`]).
    pub fn sample_grid(&self) -> crate::physics::detector::SampleGrid {
        let rect = self.active_pixels().rect();
        crate::physics::detector::SampleGrid {
            first_row: rect.rows.start,
            first_col: rect.cols.start,
            width: rect.cols.len(),
            oversample: self.oversample,
            subpixel: self.detector.pixel_size / self.oversample as f64,
            layers: self.sensor.layers,
            layer_step: self.sensor.step,
        }
    }

    /// 1 for each ROI position (row by row) that is rendered, 0 where masked; `None` without a
    /// mask.
    pub fn rendered_positions(&self) -> Option<Vec<f64>> {
        let mask = self.mask.as_deref()?;
        let rect = self.active_pixels().rect();
        Some(
            (0..rect.len())
                .map(|k| f64::from(u8::from(mask[rect.index(k)] != 0)))
                .collect(),
        )
    }

    /// Spindle angle of step `i` (rad).
    pub fn phi_at(&self, i: usize) -> f64 {
        self.phi0 + self.phi.step * i as f64
    }
}

/// The largest oversampling chosen automatically (sub-pixels per axis). C's choice,
/// 3 × crystal size / (λ·distance/pixel), grows without bound with the crystal: a 0.5 mm
/// crystal asks for 2420² sub-pixels per pixel, hours for a tiny detector. Beyond this the
/// run warns and uses this many; `-oversample N` gives any count.
pub const MAX_AUTO_OVERSAMPLE: usize = 32;

/// The flags that set the number of unit cells, for naming in errors.
pub const N_FLAGS: &str = "-N (or -Na, -Nb, -Nc, -samplesize, -sample_x, -sample_y, -sample_z)";

/// The flag that sets the mosaic domains, both spellings, for naming in errors.
pub const MOSAIC_DOMAINS_FLAGS: &str = "-mosaic_dom (or -mosaic_domains)";

/// The flags that set the divergence grid, for naming in errors.
pub const DIVERGENCE_FLAGS: &str =
    "-divergence (or -hdivrange, -vdivrange, -hdivstep, -vdivstep, -divsteps, -hdivsteps, -vdivsteps)";

/// The largest Miller index accepted (in size), 2·|a|/λ at most: far beyond C's `int` (whose
/// cast is undefined there; out of the grid here) and still a finite single-precision number
/// with room to spare, so every engine computes the same indices.
pub const MAX_MILLER_INDEX: f64 = 1e36;

/// Refuses sources whose wavelength is not a positive number (a `-dispersion` above 200 %
/// sweeps through 0), or so short for the cell that the Miller indices (up to 2·|a|/λ)
/// exceed [`MAX_MILLER_INDEX`].
fn check_wavelengths(sources: &[Source], lambda0: f64, from_file: bool, lattice: &CrystalLattice) -> Result<()> {
    let g = crate::base::cfmt::fmt_g;
    let shortest = sources.iter().map(|s| s.lambda).fold(f64::INFINITY, f64::min);
    let spread_flag = if from_file { "-sourcefile" } else { "-dispersion" };
    if !(shortest > 0.0 && shortest.is_finite()) {
        return Err(Error::flag(
            spread_flag,
            format!(
                "the wavelengths reach {} Å: every wavelength must be positive",
                g(shortest * 1e10)
            ),
        ));
    }
    let longest_axis = [lattice.a, lattice.b, lattice.c]
        .map(norm)
        .into_iter()
        .fold(0.0, f64::max);
    let index = 2.0 * longest_axis / shortest;
    if index.is_nan() || index > MAX_MILLER_INDEX {
        let flag = match (shortest < 0.5 * lambda0, longest_axis > 1e-6) {
            (true, _) => spread_flag,
            (false, true) => "-cell (or -mat)",
            (false, false) => "-lambda (or -energy)",
        };
        return Err(Error::flag(
            flag,
            format!(
                "a wavelength of {} Å with a cell axis of {} Å gives Miller indices up to {}, beyond {}",
                g(shortest * 1e10),
                g(longest_axis * 1e10),
                g(index),
                g(MAX_MILLER_INDEX)
            ),
        ));
    }
    Ok(())
}

/// Refuses a factor of the intensity that is not a finite number even in double precision
/// (C renders ∞ and NaN from it): the fluence `-flux`·`-exposure`/`-beamsize`², the water
/// background `i_bg` (photons/sr per unit r_e², from `-water`), and F² of `-default_F` or of
/// the structure-factor grid.
fn check_intensity_factors(fluence: f64, i_bg: f64, default_f: f64, grid: Option<&HklGrid>) -> Result<()> {
    let g = crate::base::cfmt::fmt_g;
    if !(R_E_SQR * fluence).is_finite() {
        return Err(Error::flag(
            "-flux",
            "-flux × -exposure / -beamsize² gives an infinite fluence",
        ));
    }
    if !i_bg.is_finite() {
        return Err(Error::flag(
            "-water",
            "the water background (fluence × water size³) is infinite",
        ));
    }
    if !(default_f * default_f).is_finite() {
        return Err(Error::flag(
            "-default_F",
            format!("F² = {}² overflows double precision", g(default_f)),
        ));
    }
    if let Some(f) = grid.and_then(|g| g.values.iter().find(|f| !(*f * *f).is_finite())) {
        return Err(Error::flag(
            "-hkl (or ./Fdump.bin)",
            format!(
                "a structure factor of {} overflows double precision when squared",
                g(*f)
            ),
        ));
    }
    Ok(())
}

fn resolve_roi(cfg: &SimConfig, det: &DetectorGeometry, warnings: &mut Vec<String>) -> Result<Roi> {
    let full = Roi {
        xmin: 0,
        xmax: det.fpixels as i64,
        ymin: 0,
        ymax: det.spixels as i64,
    };
    let Some(r) = cfg.detector.roi else {
        return Ok(full);
    };
    // C replaces negative bounds by the defaults
    let roi = Roi {
        xmin: if r.xmin < 0 { full.xmin } else { r.xmin },
        xmax: if r.xmax < 0 { full.xmax } else { r.xmax },
        ymin: if r.ymin < 0 { full.ymin } else { r.ymin },
        ymax: if r.ymax < 0 { full.ymax } else { r.ymax },
    };
    if roi.xmin > roi.xmax || roi.ymin > roi.ymax {
        return Err(Error::flag(
            "-roi",
            format!("empty region {} {} {} {}", r.xmin, r.xmax, r.ymin, r.ymax),
        ));
    }
    if roi.xmin >= full.xmax || roi.ymin >= full.ymax {
        warnings.push(format!(
            "-roi {} {} {} {} lies entirely outside the {}x{} detector: no pixel is rendered",
            r.xmin, r.xmax, r.ymin, r.ymax, det.fpixels, det.spixels
        ));
    }
    Ok(roi)
}

/// Load the structure factors named by the configuration: the HKL file, or `Fdump.bin` in the
/// working directory when no file is given (as C), or nothing.
pub fn load_structure_factors(cfg: &SimConfig) -> Result<Option<HklGrid>> {
    match &cfg.crystal.hkl {
        HklSource::File(path) => crate::io::hkl::read_hkl(path, cfg.crystal.default_f).map(Some),
        HklSource::FdumpIfPresent => {
            let p = std::path::Path::new("Fdump.bin");
            if p.exists() {
                crate::io::fdump::read_fdump(p).map(Some)
            } else {
                Ok(None)
            }
        }
        HklSource::None => Ok(None),
    }
}
