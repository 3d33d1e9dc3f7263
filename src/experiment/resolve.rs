//! The steps of [`super::Experiment::with_structure_factors`], in C's order: each resolves one
//! part of the configuration, pushing the warnings C would print and failing with the flag
//! that made the part impossible.

use super::crystal::CrystalLattice;
use super::detector::DetectorGeometry;
use super::sampling::{self, Sweep};
use super::sources::{self, Source};
use super::{Sensor, DIVERGENCE_FLAGS, MAX_AUTO_OVERSAMPLE, MOSAIC_DOMAINS_FLAGS, N_FLAGS};
use crate::base::cfmt::fmt_g;
use crate::base::error::{Error, Result};
use crate::base::vec3::{norm, Mat3};
use crate::config::{BeamConfig, CrystalConfig, DetectorConfig, SimConfig};
use crate::io::hkl::HklGrid;

/// The wavelength is usable and there are structure factors: from the grid, or `-default_F`.
/// Whether the grid has data.
pub(super) fn check_structure_factors(lambda0: f64, default_f: f64, grid: Option<&HklGrid>) -> Result<bool> {
    if !(lambda0 > 0.0 && lambda0.is_finite()) {
        return Err(Error::flag("-lambda", "wavelength must be positive"));
    }
    let has_data = grid.is_some_and(|g| g.entries > 0);
    if !has_data && default_f == 0.0 {
        return Err(Error::Config(
            "no structure factors: give -hkl FILE, keep an Fdump.bin in the working directory, or set -default_F"
                .into(),
        ));
    }
    Ok(has_data)
}

/// The beam where it meets the sample: the fluence (photons/m², from `-flux` where given),
/// the flux (photons/s) and the sample's height and width (m) clipped by the beam.
pub(super) struct BeamOnSample {
    pub fluence: f64,
    pub flux: f64,
    pub sample_y: f64,
    pub sample_z: f64,
}

/// C's fluence from flux, exposure and beam size, and the sample clipped by the beam.
pub(super) fn beam_on_sample(
    beam: &BeamConfig,
    xtal: &CrystalConfig,
    warnings: &mut Vec<String>,
) -> Result<BeamOnSample> {
    let mut fluence = beam.fluence;
    let (flux, exposure, beamsize) = (beam.flux, beam.exposure, beam.beamsize);
    if flux != 0.0 && exposure > 0.0 && beamsize >= 0.0 {
        if beamsize == 0.0 {
            return Err(Error::flag(
                "-beamsize",
                "a zero beam size with -flux gives an infinite fluence",
            ));
        }
        fluence = flux * exposure / (beamsize * beamsize);
    }
    let (mut sample_y, mut sample_z) = (xtal.sample_y, xtal.sample_z);
    if beamsize >= 0.0 {
        if beamsize < sample_y {
            warnings.push(format!("clipping sample ({sample_y} m high) with beam ({beamsize} m)"));
            sample_y = beamsize;
        }
        if beamsize < sample_z {
            warnings.push(format!("clipping sample ({sample_z} m wide) with beam ({beamsize} m)"));
            sample_z = beamsize;
        }
    }
    let flux = if exposure > 0.0 {
        fluence / exposure * beamsize * beamsize
    } else {
        flux
    };
    Ok(BeamOnSample {
        fluence,
        flux,
        sample_y,
        sample_z,
    })
}

/// The `-mask`, which must have one value per pixel of `detector`.
pub(super) fn mask(cfg: &SimConfig, detector: &DetectorGeometry) -> Result<Option<Vec<u16>>> {
    match &cfg.detector.mask {
        Some(m) if m.len() != detector.pixels() => Err(Error::flag(
            "-mask",
            format!("mask has {} pixels but the detector has {}", m.len(), detector.pixels()),
        )),
        m => Ok(m.clone()),
    }
}

/// The sensor's layers and attenuation: C sets the attenuation depth to the thickness where
/// `-detector_abs` is not given.
pub(super) fn sensor(det: &DetectorConfig, warnings: &mut Vec<String>) -> Sensor {
    let thick = sampling::thickness_sweep(det.thicksteps, det.thickness, det.thickstep);
    let mut mu = det.mu.unwrap_or(-1.0);
    if thick.range > 0.0 && mu < 0.0 {
        mu = 1.0 / thick.range;
        warnings.push(format!("setting detector attenuation depth to {mu} m"));
    }
    Sensor {
        thickness: thick.range,
        layers: thick.count,
        step: thick.step,
        mu,
    }
}

/// The mosaic domains' count and spread (rad).
pub(super) fn mosaic(xtal: &CrystalConfig, warnings: &mut Vec<String>) -> Result<(usize, f64)> {
    if let Some(spread) = xtal.mosaic_spread {
        // C draws the domains with the spread as a float: beyond its range every rotation is NaN
        if spread > 0.0 && !(spread as f32).is_finite() {
            return Err(Error::flag(
                "-mosaic",
                format!(
                    "a spread of {} degrees overflows the single precision C draws domains in",
                    fmt_g(spread.to_degrees())
                ),
            ));
        }
    }
    let (domains, spread, warning) = sampling::mosaic_domains(xtal.mosaic_domains, xtal.mosaic_spread);
    warnings.extend(warning.map(String::from));
    Ok((domains, spread))
}

/// The unit cells along a, b and c: from the sample's size where given (clipped by the beam),
/// else `-N`; at least 1.
pub(super) fn unit_cells(xtal: &CrystalConfig, lattice: &CrystalLattice, beam: &BeamOnSample) -> [f64; 3] {
    let n_from = |size: f64, n: f64, v: &[f64; 3]| {
        let n = if size > 0.0 { (size / norm(*v)).ceil() } else { n };
        if n <= 1.0 {
            1.0
        } else {
            n
        }
    };
    [
        n_from(xtal.sample_x, xtal.na, &lattice.a),
        n_from(beam.sample_y, xtal.nb, &lattice.b),
        n_from(beam.sample_z, xtal.nc, &lattice.c),
    ]
}

/// The sub-pixel steps per pixel edge and the count C recommends: `-oversample` where given,
/// else C's choice (3 × the crystal's largest dimension over the reciprocal pixel size), capped
/// at [`MAX_AUTO_OVERSAMPLE`].
pub(super) fn oversampling(
    given: Option<i64>,
    lattice: &CrystalLattice,
    n_cells: [f64; 3],
    lambda0: f64,
    detector: &DetectorGeometry,
    warnings: &mut Vec<String>,
) -> (usize, usize) {
    let xtal_max = [
        norm(lattice.a) * n_cells[0],
        norm(lattice.b) * n_cells[1],
        norm(lattice.c) * n_cells[2],
    ]
    .into_iter()
    .fold(0.0, f64::max);
    let reciprocal_pixel = lambda0 * detector.distance / detector.pixel_size;
    // C stores this in an int: a non-finite value (beam parallel to the detector, distance 0)
    // becomes negative there and falls back to 1
    let ratio = (3.0 * xtal_max / reciprocal_pixel).ceil();
    let recommended = if ratio.is_finite() && ratio >= 1.0 && ratio <= i32::MAX as f64 {
        ratio as usize
    } else {
        1
    };
    let oversample = match given {
        Some(n) if n > 0 => n as usize,
        _ => recommended.min(MAX_AUTO_OVERSAMPLE),
    };
    let sizes = (fmt_g(xtal_max * 1e10), fmt_g(reciprocal_pixel * 1e10));
    if oversample < recommended && given.is_none_or(|n| n <= 0) {
        warnings.push(format!(
            "maximum dimension of sample is {} A but reciprocal pixel size is {} A: C would oversample {recommended}x{recommended}; automatic oversampling stops at {MAX_AUTO_OVERSAMPLE} (give -oversample {recommended} for C's choice)",
            sizes.0, sizes.1
        ));
    } else if oversample < recommended {
        warnings.push(format!(
            "maximum dimension of sample is {} A but reciprocal pixel size is {} A: recommend -oversample {recommended}",
            sizes.0, sizes.1
        ));
    }
    (oversample, recommended)
}

/// The beam's sources: the `-sourcefile` rows, else C's grid of divergence and dispersion.
pub(super) fn sources(
    beam: &BeamConfig,
    detector: &DetectorGeometry,
    hdiv: Sweep,
    vdiv: Sweep,
    disp: Sweep,
) -> Result<Vec<Source>> {
    let lambda0 = beam.lambda0;
    let sources = match &beam.sources {
        Some(rows) => sources::from_rows(rows, detector.beam, lambda0)?,
        None => sources::generate(detector.beam, detector.polar, lambda0, hdiv, vdiv, beam.round_div, disp),
    };
    if sources.is_empty() {
        return Err(Error::flag(
            DIVERGENCE_FLAGS,
            "no source survives the elliptical trimming of the divergence grid (-square_div keeps its corners)",
        ));
    }
    Ok(sources)
}

/// The mosaic domains' rotations, drawn as C draws them.
pub(super) fn mosaic_rotations(spread: f64, domains: usize, seed: i64) -> Result<Vec<Mat3>> {
    if Vec::<Mat3>::new().try_reserve_exact(domains).is_err() {
        return Err(Error::flag(
            MOSAIC_DOMAINS_FLAGS,
            format!("cannot allocate {domains} mosaic domains"),
        ));
    }
    Ok(crate::diff::mosaic::mosaic_matrices(spread, domains, seed))
}

/// The lattice factor's peak (Na·Nb·Nc)² must be a finite number.
pub(super) fn check_cell_count(n_cells: [f64; 3]) -> Result<()> {
    let cells: f64 = n_cells.iter().product();
    if (cells * cells).is_finite() {
        return Ok(());
    }
    Err(Error::flag(
        N_FLAGS,
        format!(
            "{} x {} x {} unit cells: the lattice factor's peak (Na·Nb·Nc)² overflows double precision",
            fmt_g(n_cells[0]),
            fmt_g(n_cells[1]),
            fmt_g(n_cells[2])
        ),
    ))
}
