//! The render's own geometry ([`Experiment`]) as the writer's inputs: the detector, beam and
//! goniometer the image was rendered with, never a second derivation (issue 24).

use crate::base::error::Error;
use crate::base::vec3::Vec3;
use crate::experiment::Experiment;
use crate::io::nexus::frame::{rotate_axis, unrotate_xyz};
use crate::io::nexus::{NxBeam, NxDetector, NxError, NxGoniometer, NxmxWriter};
use crate::render::output::CBF_FALLBACK_EXPOSURE_S;
use std::path::Path;

impl From<NxError> for Error {
    fn from(e: NxError) -> Self {
        Error::Io {
            path: e.path,
            source: std::io::Error::other(e.msg),
        }
    }
}

/// The detector's rotated basis vector `v` back in the convention's unrotated frame: 2θ undone,
/// then the x/y/z rotations.
fn unrotated(exp: &Experiment, v: Vec3) -> Vec3 {
    let d = &exp.detector;
    let v = rotate_axis(v, d.twotheta_axis, -d.twotheta);
    unrotate_xyz(v, d.rotx, d.roty, d.rotz)
}

/// The detector as rendered: pixel grid, unrotated basis, rotations, pix0 (lab frame, m, rad).
pub fn nx_detector(exp: &Experiment) -> NxDetector {
    let d = &exp.detector;
    NxDetector {
        fpixels: d.fpixels,
        spixels: d.spixels,
        pixel_size: d.pixel_size,
        fdet0: unrotated(exp, d.fdet),
        sdet0: unrotated(exp, d.sdet),
        odet0: unrotated(exp, d.odet),
        rotx: d.rotx,
        roty: d.roty,
        rotz: d.rotz,
        twotheta: d.twotheta,
        twotheta_axis: d.twotheta_axis,
        pix0: d.pix0,
        sensor_thickness: exp.sensor.thickness,
        // the C program models a silicon sensor (its default -detector_abs)
        sensor_material: "Si".into(),
        distance: d.distance,
        beam_center_fast: d.fbeam,
        beam_center_slow: d.sbeam,
    }
}

/// The beam: direction, the sources' distinct wavelengths weighted by how many sources carry
/// each (every source has the same weight, as in C), the polarization E-vector, the flux.
pub fn nx_beam(exp: &Experiment) -> NxBeam {
    let mut wavelengths: Vec<(f64, usize)> = Vec::new();
    for s in &exp.sources {
        match wavelengths.iter_mut().find(|(l, _)| *l == s.lambda) {
            Some((_, n)) => *n += 1,
            None => wavelengths.push((s.lambda, 1)),
        }
    }
    let total = exp.sources.len().max(1) as f64;
    NxBeam {
        direction: exp.detector.beam,
        wavelengths_m: wavelengths.iter().map(|(l, _)| *l).collect(),
        weights: wavelengths.iter().map(|(_, n)| *n as f64 / total).collect(),
        polarization: exp.detector.polar,
        flux: (exp.flux > 0.0 && exp.flux.is_finite()).then_some(exp.flux),
    }
}

/// The spindle, φ start and oscillation (°), exposure (s; 1 s when not positive, as the CBF).
pub fn nx_goniometer(exp: &Experiment) -> NxGoniometer {
    let exposure = if exp.exposure > 0.0 && exp.exposure.is_finite() {
        exp.exposure
    } else {
        CBF_FALLBACK_EXPOSURE_S
    };
    NxGoniometer {
        spindle: exp.detector.spindle,
        phi_start_deg: exp.phi0.to_degrees(),
        osc_deg: exp.phi.range.to_degrees(),
        exposure_s: exposure,
    }
}

/// A stack writer for shots rendered with `exp`'s detector and beam, at `path` from the start
/// (readable while written and after a crash).
pub fn create_stack(path: &Path, exp: &Experiment) -> Result<NxmxWriter, Error> {
    Ok(NxmxWriter::create(
        path,
        &nx_detector(exp),
        &nx_beam(exp),
        &nx_goniometer(exp),
    )?)
}

/// One image as an NXmx file: int32 `counts` (as they come, `[slow][fast]`, written band by
/// band) and the float `photons`, written under a temporary name and renamed when complete.
pub fn write_nexus_image(
    path: &Path,
    exp: &Experiment,
    counts: impl IntoIterator<Item = i32>,
    photons: &[f32],
) -> Result<(), Error> {
    let mut w = NxmxWriter::create_atomic(path, &nx_detector(exp), &nx_beam(exp), &nx_goniometer(exp))?;
    w.append_shot_from(counts, photons.iter().copied(), exp.phi0.to_degrees())?;
    Ok(w.finish()?)
}

/// One image of a detector of several panels as an NXmx file: a module per panel (`panels`,
/// each rendered with its own experiment, share the beam and the crystal; each comes with its
/// float photons), stacked `[panels, slow, fast]`. `counts` are the panels' int32 counts one
/// panel after the other, as they come: they are written band by band, never held whole.
/// Written under a temporary name and renamed when complete.
pub fn write_nexus_panels(
    path: &Path,
    panels: &[(&Experiment, &[f32])],
    counts: impl IntoIterator<Item = i32>,
) -> Result<(), Error> {
    let Some(&(first, _)) = panels.first() else {
        return Err(Error::Config(format!("{}: no panels to write", path.display())));
    };
    let modules: Vec<NxDetector> = panels.iter().map(|(exp, _)| nx_detector(exp)).collect();
    let mut w = NxmxWriter::create_atomic_modules(path, &modules, &nx_beam(first), &nx_goniometer(first))?;
    let photons = panels.iter().flat_map(|(_, p)| p.iter().copied());
    w.append_shot_from(counts, photons, first.phi0.to_degrees())?;
    Ok(w.finish()?)
}
