//! Detector geometry: pixel counts, convention basis vectors, pivot, pix0 and the derived beam
//! centres, as the C program resolves them (physics reference §2.2, §3, §4).

use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::base::vec3::{cross, dot, norm, scale, sub, unitize};
pub use crate::config::panel_layout::{MAX_DETECTOR_LENGTH, MIN_AXIS_SINE, MIN_DETECTOR_LENGTH};
use crate::config::{Convention, DetectorConfig, Pivot};
use crate::diff::detector::{detector_in_frame, DetectorFrame, DetectorTensors};
use crate::diff::host;
use crate::diff::{const_scalar, const_vec3};
use burn::tensor::{backend::Backend, Tensor};

/// The resolved detector, lab frame, SI units (m, rad).
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorGeometry {
    pub convention: Convention,
    /// Pivot actually used (forced by the convention except for CUSTOM).
    pub pivot: Pivot,
    pub fpixels: usize,
    pub spixels: usize,
    /// Pixel pitch (m).
    pub pixel_size: f64,
    /// Detector size along fast / slow (m).
    pub detsize_f: f64,
    pub detsize_s: f64,
    /// Rotated unit basis: fast, slow, normal (away from the sample).
    pub fdet: Vec3,
    pub sdet: Vec3,
    pub odet: Vec3,
    /// Lab position of the corner of pixel (0,0) (m).
    pub pix0: Vec3,
    /// Beam propagation direction b (unit).
    pub beam: Vec3,
    /// Polarization E-vector p (unit).
    pub polar: Vec3,
    /// Spindle axis u (unit).
    pub spindle: Vec3,
    pub twotheta_axis: Vec3,
    /// b · R_xyz(o₀) (2θ excluded, as C).
    pub ratio: f64,
    /// Sample to beam spot along the beam, recomputed (m).
    pub distance: f64,
    /// Sample to detector plane (m).
    pub close_distance: f64,
    /// Beam-spot and near-point coordinates on the detector (m), recomputed.
    pub fbeam: f64,
    pub sbeam: f64,
    pub fclose: f64,
    pub sclose: f64,
    /// Convention-level beam centre and near point (m), as C keeps them (headers only).
    pub xbeam: f64,
    pub ybeam: f64,
    pub xclose: f64,
    pub yclose: f64,
    /// XDS origin (pixels).
    pub orgx: f64,
    pub orgy: f64,
    /// DIALS origin (mm).
    pub dials_origin: Vec3,
    pub rotx: f64,
    pub roty: f64,
    pub rotz: f64,
    pub twotheta: f64,
    /// The constants of the detector's tensor geometry ([`detector_in_frame`]).
    pub frame: DetectorFrame,
    pub curved: bool,
    pub point_pixel: bool,
}

/// Unrotated basis (b, f, s, o, 2θ axis, p, u) of a convention; CUSTOM takes the user's
/// vectors over its own initial defaults.
fn convention_basis(cfg: &DetectorConfig) -> [Vec3; 7] {
    let x = [1.0, 0.0, 0.0];
    let y = [0.0, 1.0, 0.0];
    let z = [0.0, 0.0, 1.0];
    let neg = |v: Vec3| scale(v, -1.0);
    match cfg.convention {
        Convention::Mosflm | Convention::Denzo => [x, z, neg(y), x, neg(z), z, z],
        Convention::Adxv => [z, x, neg(y), z, neg(x), x, x],
        Convention::Xds => [z, x, y, z, x, x, x],
        Convention::Dials => [z, x, y, z, y, y, y],
        Convention::Custom => {
            let c = &cfg.custom;
            [
                c.beam.unwrap_or(x),
                c.fdet.unwrap_or(z),
                c.sdet.unwrap_or(neg(y)),
                c.odet.unwrap_or(x),
                c.twotheta_axis.unwrap_or(y),
                c.polar.unwrap_or(z),
                c.spindle.unwrap_or(z),
            ]
        }
    }
}

/// `value` (m) of `flag` must be finite and between [`MIN_DETECTOR_LENGTH`] and
/// [`MAX_DETECTOR_LENGTH`] in size.
fn physical_length(flag: &str, what: &str, value: f64) -> Result<()> {
    let mm = |x: f64| crate::base::cfmt::fmt_g(x * 1e3);
    if value.is_finite() && (MIN_DETECTOR_LENGTH..=MAX_DETECTOR_LENGTH).contains(&value.abs()) {
        Ok(())
    } else {
        Err(Error::flag(
            flag,
            format!(
                "{what} of {} mm is not physical (at least {} mm, at most {} mm)",
                mm(value),
                mm(MIN_DETECTOR_LENGTH),
                mm(MAX_DETECTOR_LENGTH)
            ),
        ))
    }
}

/// The flags that turned the detector away from its convention's orientation, to name in an
/// error about its orientation (the convention's flag when none did).
fn turning_flags(cfg: &DetectorConfig) -> String {
    let c = &cfg.custom;
    let given = [
        ("-detector_rotx", cfg.rotx != 0.0),
        ("-detector_roty", cfg.roty != 0.0),
        ("-detector_rotz", cfg.rotz != 0.0),
        ("-twotheta", cfg.twotheta != 0.0),
        ("-fdet_vector", c.fdet.is_some()),
        ("-sdet_vector", c.sdet.is_some()),
        ("-odet_vector", c.odet.is_some()),
        ("-beam_vector", c.beam.is_some()),
        ("-twotheta_axis", c.twotheta_axis.is_some() && cfg.twotheta != 0.0),
    ];
    let flags: Vec<&str> = given.iter().filter(|(_, set)| *set).map(|(f, _)| *f).collect();
    if flags.is_empty() {
        format!("-{}", format!("{:?}", cfg.convention).to_ascii_lowercase())
    } else {
        flags.join(", ")
    }
}

/// Refuses a detector C cannot render: its plane through the sample (`close_distance` ≈ 0:
/// every solid angle 0), its pixels facing away from the sample (`close_distance` < 0:
/// negative solid angles), or the beam parallel to its plane, where C divides by
/// `ratio` = b·o to place the beam spot (`distance` = close_distance/ratio).
fn check_facing(cfg: &DetectorConfig, pivot: Pivot, close_distance: f64, distance: f64) -> Result<()> {
    let g = |x: f64| crate::base::cfmt::fmt_g(x * 1e3);
    let placed_by = match pivot {
        Pivot::Beam => "-distance",
        Pivot::Sample => "-close_distance",
    };
    if close_distance.is_nan() || close_distance.abs() < MIN_DETECTOR_LENGTH {
        return Err(Error::flag(
            format!("{placed_by}, {}", turning_flags(cfg)),
            format!(
                "the detector's plane passes through the sample ({} mm from it): no pixel sees it",
                g(close_distance)
            ),
        ));
    }
    if close_distance < 0.0 {
        return Err(Error::flag(
            turning_flags(cfg),
            format!(
                "the detector's pixels face away from the sample (its plane is {} mm behind its normal): every solid angle would be negative",
                g(-close_distance)
            ),
        ));
    }
    if !(distance.is_finite() && distance.abs() <= MAX_DETECTOR_LENGTH) {
        return Err(Error::flag(
            turning_flags(cfg),
            "the beam runs parallel to the detector's plane: C divides by the beam's component along its normal to find the beam spot",
        ));
    }
    Ok(())
}

fn unit_or_err(v: Vec3, flag: &str) -> Result<Vec3> {
    // scaled by its largest component first, so that 1e-300 or 1e300 components neither
    // underflow nor overflow the length
    let largest = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let (u, m) = unitize(scale(v, 1.0 / largest));
    if !(largest > 0.0 && largest.is_finite()) || m == 0.0 || !m.is_finite() {
        return Err(Error::flag(flag, "the vector must be non-zero and finite"));
    }
    Ok(u)
}

/// The pixel size and the distances are physical lengths ([`physical_length`]).
fn check_lengths(cfg: &DetectorConfig) -> Result<()> {
    let px = cfg.pixel_size;
    if !(px > 0.0 && px.is_finite()) {
        return Err(Error::flag("-pixel", "pixel size must be positive"));
    }
    physical_length("-pixel", "a pixel size", px)?;
    physical_length("-distance", "a distance", cfg.distance)?;
    if let Some(d) = cfg.close_distance {
        physical_length("-close_distance", "a distance", d)?;
    }
    Ok(())
}

/// The detector's size (m) along fast and slow and its pixel counts, as C derives them from
/// `-detpixels*` or `-detsize*`.
fn pixel_counts(cfg: &DetectorConfig) -> Result<(f64, f64, usize, usize)> {
    let px = cfg.pixel_size;
    let mut detsize_f = cfg.detsize_f;
    let mut detsize_s = cfg.detsize_s;
    if let Some(n) = cfg.fpixels.filter(|&n| n > 0) {
        detsize_f = px * n as f64;
    }
    if let Some(n) = cfg.spixels.filter(|&n| n > 0) {
        detsize_s = px * n as f64;
    }
    let fpixels = (detsize_f / px - 0.5).ceil();
    let spixels = (detsize_s / px - 0.5).ceil();
    if !(fpixels >= 1.0 && spixels >= 1.0) {
        return Err(Error::flag(
            "-detpixels (or -detpixels_f, -detpixels_s, -detsize, -detsize_f, -detsize_s)",
            "the detector has no pixels",
        ));
    }
    if fpixels * spixels > u32::MAX as f64 {
        return Err(Error::flag(
            "-detpixels (or -detpixels_f, -detpixels_s, -detsize, -detsize_f, -detsize_s)",
            format!("{fpixels}x{spixels} pixels is too many"),
        ));
    }
    Ok((detsize_f, detsize_s, fpixels as usize, spixels as usize))
}

/// The beam centre and near point (m) as given or by the convention's defaults, and the pivot.
struct BeamCentre {
    xbeam: f64,
    ybeam: f64,
    xclose: f64,
    yclose: f64,
    fclose: f64,
    sclose: f64,
    pivot: Pivot,
}

/// C's convention block: beam-centre defaults and the pivot (the beam spot on the detector
/// follows from them in the tensor geometry, [`crate::diff::detector`]).
fn beam_centre(cfg: &DetectorConfig, detsize_f: f64, detsize_s: f64) -> BeamCentre {
    let px = cfg.pixel_size;
    // near point and beam-centre defaults
    let mut fclose = cfg.orgx.map(|o| (o - 0.5) * px).unwrap_or(detsize_f / 2.0);
    let mut sclose = cfg.orgy.map(|o| (o - 0.5) * px).unwrap_or(detsize_s / 2.0);
    let xclose = cfg.xclose.unwrap_or(fclose);
    let yclose = cfg.yclose.unwrap_or(sclose);
    let (xbeam, ybeam, pivot);
    match cfg.convention {
        Convention::Adxv => {
            xbeam = cfg.xbeam.unwrap_or((detsize_f + px) / 2.0);
            ybeam = cfg.ybeam.unwrap_or((detsize_s - px) / 2.0);
            pivot = Pivot::Beam;
        }
        Convention::Mosflm | Convention::Denzo => {
            xbeam = cfg.xbeam.unwrap_or((detsize_s + px) / 2.0);
            ybeam = cfg.ybeam.unwrap_or((detsize_f + px) / 2.0);
            pivot = Pivot::Beam;
        }
        Convention::Xds | Convention::Dials => {
            xbeam = cfg.xbeam.unwrap_or(xclose);
            ybeam = cfg.ybeam.unwrap_or(yclose);
            pivot = Pivot::Sample;
        }
        Convention::Custom => {
            xbeam = cfg.xbeam.unwrap_or(xclose);
            ybeam = cfg.ybeam.unwrap_or(yclose);
            fclose = xbeam;
            sclose = ybeam;
            pivot = cfg.pivot;
        }
    }
    BeamCentre {
        xbeam,
        ybeam,
        xclose,
        yclose,
        fclose,
        sclose,
        pivot,
    }
}

/// The convention's unit vectors before the detector rotations: beam, fast, slow, normal,
/// polarization, spindle and 2θ axis.
struct Axes {
    beam: Vec3,
    f0: Vec3,
    s0: Vec3,
    o0: Vec3,
    polar: Vec3,
    spindle: Vec3,
    twotheta_axis: Vec3,
}

/// The convention's axes, each checked: non-zero, the fast and slow axes not parallel, the
/// normal out of the detector's plane.
fn axes(cfg: &DetectorConfig) -> Result<Axes> {
    let [b, f0, s0, o0, tt_axis, p, u] = convention_basis(cfg);
    let beam = unit_or_err(b, "-beam_vector")?;
    let f0 = unit_or_err(f0, "-fdet_vector")?;
    let s0 = unit_or_err(s0, "-sdet_vector")?;
    let (o_unit, o_len) = unitize(o0);
    // C rebuilds o = f × s when the given normal is not a unit vector
    let o0 = if o_len != 1.0 { unitize(cross(f0, s0)).0 } else { o_unit };
    if norm(cross(f0, s0)) < MIN_AXIS_SINE {
        return Err(Error::flag(
            "-fdet_vector, -sdet_vector",
            "the fast and slow axes are parallel: the pixels have no area",
        ));
    }
    if dot(o0, unitize(cross(f0, s0)).0).abs() < MIN_AXIS_SINE {
        let c = &cfg.custom;
        let given = [
            ("-fdet_vector", c.fdet),
            ("-sdet_vector", c.sdet),
            ("-odet_vector", c.odet),
        ];
        let flags: Vec<&str> = given.iter().filter(|(_, v)| v.is_some()).map(|(f, _)| *f).collect();
        return Err(Error::flag(
            flags.join(", "),
            "the normal lies in the detector's plane (perpendicular to fdet × sdet)",
        ));
    }
    let polar = unit_or_err(p, "-polar_vector")?;
    let spindle = unit_or_err(u, "-spindle_axis")?;
    // deliberate difference: C does not normalise the 2θ axis (see docs/differences.md)
    let twotheta_axis = unit_or_err(tt_axis, "-twotheta_axis")?;
    Ok(Axes {
        beam,
        f0,
        s0,
        o0,
        polar,
        spindle,
        twotheta_axis,
    })
}

impl DetectorGeometry {
    /// Resolve the detector from the user's configuration, in C's order.
    pub fn new(cfg: &DetectorConfig) -> Result<Self> {
        let px = cfg.pixel_size;
        check_lengths(cfg)?;
        let (detsize_f, detsize_s, fpixels, spixels) = pixel_counts(cfg)?;
        let BeamCentre {
            xbeam,
            ybeam,
            xclose,
            yclose,
            fclose,
            sclose,
            pivot,
        } = beam_centre(cfg, detsize_f, detsize_s);
        let Axes {
            beam,
            f0,
            s0,
            o0,
            polar,
            spindle,
            twotheta_axis,
        } = axes(cfg)?;

        let (rx, ry, rz, tt) = (cfg.rotx, cfg.roty, cfg.rotz, cfg.twotheta);
        let frame = DetectorFrame {
            convention: cfg.convention,
            pivot,
            pixel_size: px,
            detsize_s,
            f0,
            s0,
            o0,
            beam,
            twotheta_axis,
            fclose,
            sclose,
        };
        // the one detector geometry (crate::diff::detector), evaluated in f64
        let t = detector_in_frame(
            &frame,
            host::vector(&[cfg.distance]),
            cfg.close_distance.map(|d| host::vector(&[d])),
            host::vector(&[xbeam, ybeam]),
            host::vector(&[rx, ry, rz]),
            host::vector(&[tt]),
        );
        let (fdet, sdet, odet, pix0) = (
            host::vec3(t.fdet),
            host::vec3(t.sdet),
            host::vec3(t.odet),
            host::vec3(t.pix0),
        );
        let (ratio, close_distance) = (host::scalar(t.ratio), host::scalar(t.close_distance));
        let distance = host::scalar(t.distance);
        check_facing(cfg, pivot, close_distance, distance)?;

        // what C prints: the near point and beam spot recomputed from the result
        let fclose = -dot(pix0, fdet);
        let sclose = -dot(pix0, sdet);
        let spot = sub(scale(beam, close_distance / ratio), pix0);
        let dials_origin = [1000.0 * pix0[2], 1000.0 * pix0[1], -1000.0 * pix0[0]];
        Ok(Self {
            convention: cfg.convention,
            pivot,
            fpixels,
            spixels,
            pixel_size: px,
            detsize_f,
            detsize_s,
            fdet,
            sdet,
            odet,
            pix0,
            beam,
            polar,
            spindle,
            twotheta_axis,
            ratio,
            distance,
            close_distance,
            fbeam: dot(spot, fdet),
            sbeam: dot(spot, sdet),
            fclose,
            sclose,
            xbeam,
            ybeam,
            xclose,
            yclose,
            orgx: fclose / px + 0.5,
            orgy: sclose / px + 0.5,
            dials_origin,
            rotx: rx,
            roty: ry,
            rotz: rz,
            twotheta: tt,
            frame,
            curved: cfg.curved,
            point_pixel: cfg.point_pixel,
        })
    }

    /// Number of pixels.
    pub fn pixels(&self) -> usize {
        self.fpixels * self.spixels
    }
}

impl DetectorGeometry {
    /// This resolved detector as constant tensors, placed as `like`.
    pub fn tensors<B: Backend, const D: usize>(&self, like: &Tensor<B, D>) -> DetectorTensors<B> {
        let vec = |v: Vec3| const_vec3(v, like);
        let scalar = |x: f64| const_scalar(x, like);
        DetectorTensors {
            fdet: vec(self.fdet),
            sdet: vec(self.sdet),
            odet: vec(self.odet),
            pix0: vec(self.pix0),
            close_distance: scalar(self.close_distance),
            distance: scalar(self.distance),
            ratio: scalar(self.ratio),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vec3, b: Vec3) -> bool {
        (0..3).all(|i| (a[i] - b[i]).abs() < 1e-12)
    }

    #[test]
    fn mosflm_reference_pix0() {
        // AT-GEO-001: px 0.1 mm, distance 100 mm, Xbeam = Ybeam = 51.2 mm → pix0 = (0.1, 0.05125, −0.05125)
        let cfg = DetectorConfig {
            xbeam: Some(51.2e-3),
            ybeam: Some(51.2e-3),
            ..Default::default()
        };
        let d = DetectorGeometry::new(&cfg).unwrap();
        assert_eq!((d.fpixels, d.spixels), (1024, 1024));
        assert!(close(d.pix0, [0.1, 0.05125, -0.05125]), "{:?}", d.pix0);
        // default centre: pix0 = (0.1, 0.0513, −0.0513)
        let d = DetectorGeometry::new(&DetectorConfig::default()).unwrap();
        assert!(close(d.pix0, [0.1, 0.0513, -0.0513]), "{:?}", d.pix0);
    }

    #[test]
    fn xds_ignores_xbeam() {
        let cfg = DetectorConfig {
            convention: Convention::Xds,
            xbeam: Some(10e-3),
            ybeam: Some(20e-3),
            ..Default::default()
        };
        let d = DetectorGeometry::new(&cfg).unwrap();
        assert!(close(d.pix0, [-0.0512, -0.0512, 0.1]), "{:?}", d.pix0);
        assert_eq!(d.pivot, Pivot::Sample);
    }

    #[test]
    fn sixteen_pixel_header_values() {
        // reference §4.5: 16-pixel default detector
        let cfg = DetectorConfig {
            fpixels: Some(16),
            spixels: Some(16),
            ..Default::default()
        };
        let d = DetectorGeometry::new(&cfg).unwrap();
        assert!((d.xbeam - 0.85e-3).abs() < 1e-15);
        assert!((d.orgx - 9.5).abs() < 1e-9);
        assert!(
            close(d.dials_origin, [-0.9, 0.9, -100.0].map(|x| x)),
            "{:?}",
            d.dials_origin
        );
    }

    #[test]
    fn absurd_lengths_are_refused() {
        for (cfg, flag) in [
            (
                DetectorConfig {
                    pixel_size: 1e297,
                    fpixels: Some(1),
                    spixels: Some(1),
                    ..Default::default()
                },
                "-pixel",
            ),
            (
                DetectorConfig {
                    distance: 1e10,
                    ..Default::default()
                },
                "-distance",
            ),
            (
                DetectorConfig {
                    close_distance: Some(f64::INFINITY),
                    ..Default::default()
                },
                "-close_distance",
            ),
        ] {
            let e = DetectorGeometry::new(&cfg).unwrap_err();
            assert!(e.to_string().contains(flag), "{e}");
        }
    }

    #[test]
    fn twotheta_moves_reported_beam_centre() {
        // reference §4.5: MOSFLM, 64 px, -twotheta 10: Sbeam 3.3 mm → 3.564 mm
        let cfg = DetectorConfig {
            fpixels: Some(64),
            spixels: Some(64),
            twotheta: 10f64.to_radians(),
            pivot: Pivot::Sample,
            ..Default::default()
        };
        let d = DetectorGeometry::new(&cfg).unwrap();
        assert_eq!(d.pivot, Pivot::Beam);
        assert!((d.sbeam - 3.564e-3).abs() < 1e-6, "{}", d.sbeam);
    }
}
