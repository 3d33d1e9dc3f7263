//! What `nonBragg` decides on the host before its loop, in C's order and arithmetic: the
//! detector's size, pivot and orientation, the sample's amount, the sources, the F curve.

use super::flags::{NonBraggArgs, Pivot, RTD};
use super::Out;
use crate::base::cfmt::{fmt_g, fmt_g_precision};
use crate::base::error::{Error, Result};
use crate::base::vec3::{cross, dot, rotate_axis, rotate_xyz, scale, unitize, Vec3};
use crate::experiment::sampling::{phi_sweep, spread_sweep, Sweep};
use crate::experiment::sources::divergence_grid;
use crate::experiment::{AVOGADRO, R_E_SQR};
use crate::io::stol::read_stol;
use crate::physics::amorphous::StolCurve;
use crate::render::amorphous::{BackgroundScene, BackgroundSource};

/// The resolved run: the scene the loop reads and what the log and header report.
pub(super) struct Setup {
    pub scene: BackgroundScene,
    pub detsize: (f64, f64),
    /// Direct-beam spot and closest point on the detector (m).
    pub beam_center: (f64, f64),
    pub close: (f64, f64),
    pub sample: Vec3,
    pub density: f64,
    pub polar_axis: Vec3,
    pub hdiv: Sweep,
    pub vdiv: Sweep,
    pub dispersion: Sweep,
    /// Accepted divergence points; −1 with a `-sourcefile`, as C prints it.
    pub divsteps: i64,
    /// Wavelength (m), spindle start and range (rad) and 2θ (rad), for the header.
    pub lambda: f64,
    pub phi: f64,
    pub osc: f64,
    pub twotheta: f64,
}

impl Setup {
    /// Whether pixel `j` (fast-major) is in the rendered region.
    pub fn in_roi(&self, j: usize) -> bool {
        self.scene.in_roi(j % self.scene.width, j / self.scene.width)
    }

    /// The SMV header C's `nonBragg` writes (lengths in mm, wavelength in Å, angles in degrees).
    pub fn header_text(&self) -> String {
        let (g, s) = (fmt_g, &self.scene);
        format!(
            "{{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\n\
             SIZE1={};\nSIZE2={};\nPIXEL_SIZE={};\nDISTANCE={};\nWAVELENGTH={};\n\
             BEAM_CENTER_X={};\nBEAM_CENTER_Y={};\nORGX={};\nORGY={};\nCLOSE_DISTANCE={};\n\
             PHI={};\nOSC_START={};\nOSC_RANGE={};\nTWOTHETA={};\nDETECTOR_SN=000;\nBEAMLINE=fake;\n}}\x0c",
            s.width,
            s.height,
            g(s.pixel * 1000.0),
            g(s.distance * 1000.0),
            g(self.lambda * 1e10),
            g(self.beam_center.0 * 1000.0),
            g((self.detsize.1 - self.beam_center.1) * 1000.0),
            g(self.close.0 / s.pixel),
            g(self.close.1 / s.pixel),
            g(s.close_distance * 1000.0),
            g(self.phi * RTD),
            g(self.phi * RTD),
            g(self.osc * RTD),
            g(self.twotheta * RTD),
        )
    }
}

/// The detector after C's pivot: axes, origin, beam spot, closest point, distances.
struct Detector {
    fdet: Vec3,
    sdet: Vec3,
    odet: Vec3,
    pix0: Vec3,
    beam: Vec3,
    beam_center: (f64, f64),
    close: (f64, f64),
    distance: f64,
    close_distance: f64,
}

/// Resolves the run as C does, printing C's lines on the way.
pub(super) fn resolve(a: &NonBraggArgs, con: &mut Out) -> Result<Setup> {
    let mut detsize = a.detsize;
    if a.pixels.0 > 0 {
        detsize.0 = a.pixel * a.pixels.0 as f64;
    }
    if a.pixels.1 > 0 {
        detsize.1 = a.pixel * a.pixels.1 as f64;
    }
    let (width, height) = ((detsize.0 / a.pixel).ceil(), (detsize.1 / a.pixel).ceil());
    if !(width >= 1.0 && height >= 1.0 && width * height <= (1u64 << 32) as f64) {
        return Err(Error::flag(
            "-detsize",
            format!("gives a {width} x {height} pixel detector"),
        ));
    }
    let (width, height) = (width as usize, height as usize);
    let roi = a.roi.unwrap_or((-1, -1, -1, -1));
    let roi = (
        if roi.0 < 0 { 0 } else { roi.0 },
        if roi.1 < 0 { width as i64 } else { roi.1 },
        if roi.2 < 0 { 0 } else { roi.2 },
        if roi.3 < 0 { height as i64 } else { roi.3 },
    );
    let (fluence, sample, density, molecules) = sample(a, con)?;
    let hdiv = spread_sweep(a.hdiv.2, a.hdiv.0, a.hdiv.1);
    let vdiv = spread_sweep(a.vdiv.2, a.vdiv.0, a.vdiv.1);
    let dispersion = spread_sweep(a.dispsteps, Some(a.dispersion), None);
    let det = detector(a, detsize, con)?;
    let (path, units) = a.stol.clone().expect("checked by the caller");
    writeln!(con, "reading {}", path.display())?;
    let curve = StolCurve::new(&read_stol(&path)?, units);
    let polar_axis = unitize(a.polar_axis).0;
    let (sources, divsteps) = sources(a, det.beam, polar_axis, hdiv, vdiv, dispersion, con)?;
    let oversample = if a.oversample <= 0 { 1 } else { a.oversample as usize };
    let phi = phi_sweep(a.phisteps, a.osc, a.phistep);
    let scene = BackgroundScene {
        width,
        height,
        roi,
        pixel: a.pixel,
        oversample,
        fdet: det.fdet,
        sdet: det.sdet,
        odet: det.odet,
        pix0: det.pix0,
        beam: det.beam,
        distance: det.distance,
        close_distance: det.close_distance,
        curved: a.curved,
        point_pixel: a.point_pixel,
        fmap: a.fmap,
        sources,
        polarization: (!a.nopolar).then_some((a.kahn, polar_axis)),
        curve,
        r_e_sqr: R_E_SQR,
        fluence,
        molecules,
    };
    Ok(Setup {
        scene,
        detsize,
        beam_center: det.beam_center,
        close: det.close,
        sample,
        density,
        polar_axis,
        hdiv,
        vdiv,
        dispersion,
        divsteps,
        lambda: a.lambda,
        phi: a.phi,
        osc: phi.range,
        twotheta: a.twotheta,
    })
}

/// Fluence (photons/m²), the sample's size after the beam clips it (m), its density (g/m³)
/// and the molecules in the beam, with C's warnings.
fn sample(a: &NonBraggArgs, con: &mut Out) -> Result<(f64, Vec3, f64, f64)> {
    let mut fluence = a.fluence;
    if a.flux != 0.0 && a.exposure > 0.0 && a.beamsize >= 0.0 {
        fluence = a.flux * a.exposure / a.beamsize / a.beamsize;
    }
    let mut sample = a.sample;
    for (k, word) in [(1, "high"), (2, "wide")] {
        if a.beamsize < sample[k] {
            writeln!(
                con,
                "WARNING: clipping sample ({} m {word}) with beam ({} m)",
                fmt_g(sample[k]),
                fmt_g(a.beamsize)
            )?;
            sample[k] = a.beamsize;
        }
    }
    let volume = sample[0] * sample[1] * sample[2];
    let mut density = a.density;
    if a.molecules != 0.0 {
        density = a.molecules / volume / AVOGADRO * a.molecular_weight;
    }
    let molecules = volume * density * AVOGADRO / a.molecular_weight;
    if !(fluence * molecules).is_finite() {
        return Err(Error::flag("-fluence", "fluence times molecules is not finite"));
    }
    Ok((fluence, sample, density, molecules))
}

/// C's detector set-up: defaults for the beam spot and closest point, the pivot, the
/// rotations, then where the beam spot and closest point ended up.
fn detector(a: &NonBraggArgs, detsize: (f64, f64), con: &mut Out) -> Result<Detector> {
    let px = a.pixel;
    let mut close = (
        a.org.0.map(|o| o * px).or(a.close.0).unwrap_or((detsize.0 - px) / 2.0),
        a.org.1.map(|o| o * px).or(a.close.1).unwrap_or((detsize.1 + px) / 2.0),
    );
    let mut beam_center = (a.beam_center.0.unwrap_or(close.0), a.beam_center.1.unwrap_or(close.1));
    let beam = unit(a.beam, "-beam_vector")?;
    let fdet = unit(a.fdet, "-fdet_vector")?;
    let sdet = unit(a.sdet, "-sdet_vector")?;
    let odet = unit(cross(fdet, sdet), "-fdet_vector and -sdet_vector")?;
    let [rx, ry, rz] = a.rot;
    let mut ratio = dot(beam, rotate_xyz(odet, rx, ry, rz));
    if ratio == 0.0 {
        ratio = f64::MIN_POSITIVE;
    }
    let close_distance = a.close_distance.unwrap_or(ratio * a.distance);
    let distance = close_distance / ratio;
    let turn = |v: Vec3| rotate_axis(rotate_xyz(v, rx, ry, rz), a.twotheta_axis, a.twotheta);
    let mut pix0 = [0.0; 3];
    if a.pivot == Pivot::Sample {
        writeln!(con, "pivoting detector around sample")?;
        pix0 = std::array::from_fn(|i| -close.0 * fdet[i] - close.1 * sdet[i] + close_distance * odet[i]);
        pix0 = turn(pix0);
    }
    let (fdet, sdet, odet) = (turn(fdet), turn(sdet), turn(odet));
    if a.pivot == Pivot::Beam {
        writeln!(con, "pivoting detector around direct beam spot")?;
        pix0 = std::array::from_fn(|i| -beam_center.0 * fdet[i] - beam_center.1 * sdet[i] + distance * beam[i]);
    }
    close = (-dot(pix0, fdet), -dot(pix0, sdet));
    let close_distance = dot(pix0, odet);
    let spot: Vec3 = std::array::from_fn(|i| close_distance / ratio * beam[i] - pix0[i]);
    beam_center = (dot(fdet, spot), dot(sdet, spot));
    Ok(Detector {
        fdet,
        sdet,
        odet,
        pix0,
        beam,
        beam_center,
        close,
        distance: close_distance / ratio,
        close_distance,
    })
}

/// A unit vector along `v`; a zero vector is an error naming `flag`.
fn unit(v: Vec3, flag: &str) -> Result<Vec3> {
    match unitize(v) {
        (u, m) if m > 0.0 && m.is_finite() => Ok(u),
        _ => Err(Error::flag(flag, "gives a zero vector")),
    }
}

/// The sources: a `-sourcefile`'s rows, or C's divergence grid × dispersion, printed as C
/// prints them (positions in m, weight, wavelength in m). Also the accepted divergence points.
fn sources(
    a: &NonBraggArgs,
    beam: Vec3,
    polar: Vec3,
    hdiv: Sweep,
    vdiv: Sweep,
    dispersion: Sweep,
    con: &mut Out,
) -> Result<(Vec<BackgroundSource>, i64)> {
    let mut listed: Vec<(Vec3, f64, f64)> = Vec::new();
    let mut divsteps = -1;
    if let Some(path) = &a.sourcefile {
        for row in crate::io::sourcefile::read_sourcefile(path)? {
            let pos = [
                row.x.unwrap_or(-a.source_distance * beam[0]),
                row.y.unwrap_or(-a.source_distance * beam[1]),
                row.z.unwrap_or(-a.source_distance * beam[2]),
            ];
            listed.push((pos, row.weight.unwrap_or(1.0), row.lambda.unwrap_or(a.lambda)));
        }
    } else {
        let grid = divergence_grid(hdiv, vdiv, a.round_div);
        for &(h, v) in &grid {
            writeln!(con, "divergence deviation: {} {}", fmt_g(h), fmt_g(v))?;
        }
        divsteps = grid.len() as i64;
        let lambdas: Vec<f64> = (0..dispersion.count)
            .map(|t| a.lambda * (1.0 + dispersion.step * t as f64 - dispersion.range / 2.0))
            .collect();
        for (t, l) in lambdas.iter().enumerate() {
            writeln!(con, "lambda{t} = {}", fmt_g_precision(*l, 15))?;
        }
        let vert = unitize(cross(beam, polar)).0;
        for (h, v) in grid {
            let pos = rotate_axis(rotate_axis(scale(beam, -a.source_distance), polar, v), vert, h);
            listed.extend(lambdas.iter().map(|&l| (pos, 1.0, l)));
        }
    }
    writeln!(con, "  created a total of {} sources:", listed.len())?;
    let g = fmt_g;
    for (p, w, l) in &listed {
        writeln!(con, "{} {} {}   {} {}", g(p[0]), g(p[1]), g(p[2]), g(*w), g(*l))?;
    }
    let sources = listed
        .into_iter()
        .map(|(p, weight, lambda)| BackgroundSource {
            incident: unitize(scale(p, -1.0)).0,
            lambda,
            weight,
        })
        .collect::<Vec<_>>();
    if sources.is_empty() {
        return Err(Error::Config("no sources: the divergence settings leave none".into()));
    }
    Ok((sources, divsteps))
}
