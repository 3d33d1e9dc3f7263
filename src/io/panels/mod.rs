//! The readers of a detector of P flat panels, as a DIALS experiment list (`-detector_expt`)
//! or a CrystFEL geometry file (`-geom`) describes it, and what a run does with the panels:
//! one CUSTOM detector each ([`custom`]), their groups ([`groups`]) and motions ([`motion`]).
//! The panels themselves are data ([`crate::config::panel_layout`]).
//!
//! Each file has its own lab frame. [`PanelLayout::in_run_frame`] moves the panels, rigidly,
//! into the frame of the run: the file's beam (propagation direction) onto the run's beam
//! vector b, the file's polarization E-vector onto the run's polarization vector p. The
//! crystal, the spindle and every other vector of the run keep their meaning, so `-mat`,
//! `-misset` and `-spindle_axis` read as they do with one panel.

pub mod expt;
pub mod geom;
pub mod groups;

use crate::base::vec3::{cross, dot, norm, scale, Vec3};
pub use crate::config::panel_layout::{FileBeam, Panel, PanelLayout, PixelRect};

/// What makes a panel impossible to render, by the property of the file that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PanelFault {
    /// The fast and slow axes are parallel.
    Axes,
    /// The pixel size is 0, or beyond any detector's.
    PixelSize,
    /// More pixels than a detector may have.
    PixelCount,
    /// The panel's plane passes through the sample.
    Origin,
    /// The beam runs parallel to the panel's plane.
    Beam,
}

/// The fault of a panel, if any, with a message: fast and slow axes parallel, a pixel size
/// outside [`MIN_DETECTOR_LENGTH`, `MAX_DETECTOR_LENGTH`] (as for `-pixel`), more than 2³²−1
/// pixels, its plane through the sample (nearer than [`MIN_DETECTOR_LENGTH`]: every solid
/// angle 0), or the beam (`beam`, unit) parallel to its plane, where C divides by the beam's
/// component along the normal to place the panel's beam spot.
///
/// [`MIN_DETECTOR_LENGTH`]: crate::experiment::detector::MIN_DETECTOR_LENGTH
/// [`MAX_DETECTOR_LENGTH`]: crate::experiment::detector::MAX_DETECTOR_LENGTH
pub(crate) fn panel_fault(p: &Panel, beam: Vec3) -> Option<(PanelFault, String)> {
    use crate::config::panel_layout::{MAX_DETECTOR_LENGTH, MIN_AXIS_SINE, MIN_DETECTOR_LENGTH};
    let mm = |x: f64| crate::base::cfmt::fmt_g(x * 1e3);
    if norm(cross(p.fast, p.slow)) < MIN_AXIS_SINE {
        return Some((
            PanelFault::Axes,
            "the fast and slow axes are parallel: the pixels have no area".into(),
        ));
    }
    if !(MIN_DETECTOR_LENGTH..=MAX_DETECTOR_LENGTH).contains(&p.pixel_size) {
        return Some((
            PanelFault::PixelSize,
            format!(
                "a pixel size of {} mm is not physical (at least {} mm, at most {} mm)",
                mm(p.pixel_size),
                mm(MIN_DETECTOR_LENGTH),
                mm(MAX_DETECTOR_LENGTH)
            ),
        ));
    }
    if p.fpixels.checked_mul(p.spixels).is_none_or(|n| n > u32::MAX as usize) {
        return Some((
            PanelFault::PixelCount,
            format!("{} x {} pixels is more than 2³²−1", p.fpixels, p.spixels),
        ));
    }
    let normal = p.normal();
    let close = dot(p.origin, normal).abs();
    if !close.is_finite() || close < MIN_DETECTOR_LENGTH {
        return Some((
            PanelFault::Origin,
            format!(
                "the panel's plane passes through the sample ({} mm from it): no pixel sees it",
                mm(close)
            ),
        ));
    }
    if close > MAX_DETECTOR_LENGTH * dot(beam, normal).abs() {
        return Some((
            PanelFault::Beam,
            "the beam runs parallel to the panel's plane: C divides by the beam's component along its normal to find its beam spot".into(),
        ));
    }
    None
}

/// `v` as a unit vector, or `None` when it has no direction.
pub(crate) fn unit(v: Vec3) -> Option<Vec3> {
    let n = norm(v);
    (n > 0.0 && n.is_finite()).then(|| scale(v, 1.0 / n))
}

/// A polarization E-vector for a beam along `direction` when a file names none: the given
/// `hint` made perpendicular to the beam (Gram–Schmidt), else any perpendicular.
pub(crate) fn perpendicular(direction: Vec3, hint: Vec3) -> Vec3 {
    let along = dot(hint, direction);
    let p = std::array::from_fn(|k| hint[k] - along * direction[k]);
    unit(p).unwrap_or_else(|| {
        let other = if direction[0].abs() < 0.9 {
            [1.0, 0.0, 0.0]
        } else {
            [0.0, 1.0, 0.0]
        };
        perpendicular(direction, other)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::base::vec3::mat_vec;

    /// One 4 × 3 panel at 0.1 m along the file's beam (+z), with a bad region.
    pub(crate) fn layout() -> PanelLayout {
        PanelLayout {
            panels: vec![Panel {
                name: "p0".into(),
                fast: [1.0, 0.0, 0.0],
                slow: [0.0, -1.0, 0.0],
                origin: [-0.01, 0.02, 0.1],
                pixel_size: 1e-4,
                fpixels: 4,
                spixels: 3,
                thickness: None,
                mu: None,
                bad: vec![PixelRect {
                    f0: 1,
                    f1: 2,
                    s0: 2,
                    s1: 2,
                }],
            }],
            groupings: Vec::new(),
            beam: FileBeam {
                direction: [0.0, 0.0, 1.0],
                polarization: [1.0, 0.0, 0.0],
                wavelength: None,
            },
        }
    }

    #[test]
    fn frame_rotation_is_proper_and_maps_beam_and_polarization() {
        let l = layout();
        let (b, p) = ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
        let r = l.frame_rotation(b, p);
        let apply = |v: Vec3| mat_vec(&r, v);
        let close = |a: Vec3, c: Vec3| (0..3).all(|k| (a[k] - c[k]).abs() < 1e-15);
        assert!(close(apply(l.beam.direction), b));
        assert!(close(apply(l.beam.polarization), p));
        let det = dot(r[0], cross(r[1], r[2]));
        assert!((det - 1.0).abs() < 1e-15, "det {det}");
        // distances from the sample are kept
        let moved = l.in_run_frame(b, p);
        let (a, c) = (l.panels[0].pixel_centre(3, 2), moved.panels[0].pixel_centre(3, 2));
        assert!((norm(a) - norm(c)).abs() < 1e-15);
        assert!(close(apply(a), c));
    }

    #[test]
    fn normal_faces_away_from_the_sample_and_mask_follows_bad_regions() {
        let l = layout();
        // fast × slow = x × −y = −z, towards the sample at z = 0.1: flipped
        assert_eq!(l.panels[0].normal(), [0.0, 0.0, -1.0]);
        assert_eq!(l.panels[0].facing_away(), [0.0, 0.0, 1.0]);
        let m = l.panels[0].mask().unwrap();
        assert_eq!(m, vec![1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1]);
        assert_eq!(perpendicular([0.0, 0.0, 1.0], [1.0, 0.0, 0.5]), [1.0, 0.0, 0.0]);
    }
}
