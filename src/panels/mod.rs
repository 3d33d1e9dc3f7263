//! A detector of P flat panels, as a DIALS experiment list (`-detector_expt`) or a CrystFEL
//! geometry file (`-geom`) describes it (issue 25, first part: the files and the panels).
//!
//! Each file has its own lab frame. [`PanelLayout::in_run_frame`] moves the panels, rigidly,
//! into the frame of the run: the file's beam (propagation direction) onto the run's beam
//! vector b, the file's polarization E-vector onto the run's polarization vector p. The
//! crystal, the spindle and every other vector of the run keep their meaning, so `-mat`,
//! `-misset` and `-spindle_axis` read as they do with one panel.
//!
//! Units: metres, unit vectors; pixel indices count from 0 at the panel's first pixel.

pub mod custom;
pub mod expt;
pub mod geom;
pub mod groups;
pub mod motion;

use crate::config::Vec3;
use crate::geometry::{cross, dot, mat_vec, norm, scale, unitize, Mat3};
use serde::{Deserialize, Serialize};

/// One flat panel, in the lab frame of its file (or of the run, after
/// [`PanelLayout::in_run_frame`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    /// The panel's name in its file (CrystFEL's panel name, DIALS's `name`, else `panelN`).
    pub name: String,
    /// Unit directions of increasing fast and slow pixel index.
    pub fast: Vec3,
    pub slow: Vec3,
    /// Outer corner of the first pixel, (fast, slow) = (0, 0) (m).
    pub origin: Vec3,
    /// Pixel pitch, the same along fast and slow (m).
    pub pixel_size: f64,
    /// Pixels along fast and slow.
    pub fpixels: usize,
    pub spixels: usize,
    /// Sensor thickness (m) and attenuation coefficient (1/m), where the file gives them.
    pub thickness: Option<f64>,
    pub mu: Option<f64>,
    /// Pixels not to render, as inclusive rectangles of pixel indices.
    pub bad: Vec<PixelRect>,
}

/// An inclusive rectangle of a panel's pixels: fast `f0..=f1`, slow `s0..=s1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PixelRect {
    pub f0: usize,
    pub f1: usize,
    pub s0: usize,
    pub s1: usize,
}

impl PixelRect {
    /// Whether pixel (`f`, `s`) lies in the rectangle.
    pub fn contains(&self, f: usize, s: usize) -> bool {
        (self.f0..=self.f1).contains(&f) && (self.s0..=self.s1).contains(&s)
    }
}

/// The beam as a file gives it, in the file's lab frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileBeam {
    /// Unit direction of propagation (from the source through the sample).
    pub direction: Vec3,
    /// Unit polarization E-vector, perpendicular to `direction`.
    pub polarization: Vec3,
    /// Wavelength (m), where the file gives one.
    pub wavelength: Option<f64>,
}

/// The panels of one detector and the beam of its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelLayout {
    pub panels: Vec<Panel>,
    pub beam: FileBeam,
    /// The partitions of the panels into rigid groups that the file defines (CrystFEL's
    /// rigid-group collections, a DIALS hierarchy's levels); see [`groups`].
    #[serde(default)]
    pub groupings: Vec<groups::Grouping>,
}

impl Panel {
    /// The panel's normal, fast × slow (unit): the side the pixels face is not fixed by the
    /// file, so a renderer orients it away from the sample itself ([`Panel::facing_away`]).
    pub fn normal(&self) -> Vec3 {
        unitize(cross(self.fast, self.slow)).0
    }

    /// The normal oriented away from the sample (origin of the lab frame): fast × slow, or its
    /// opposite for a left-handed layout whose fast × slow points back to the sample (as
    /// simtbx flips it).
    pub fn facing_away(&self) -> Vec3 {
        let n = self.normal();
        if dot(n, self.origin) < 0.0 {
            scale(n, -1.0)
        } else {
            n
        }
    }

    /// Lab position of the centre of pixel (`f`, `s`) (m).
    pub fn pixel_centre(&self, f: usize, s: usize) -> Vec3 {
        self.at((f as f64 + 0.5) * self.pixel_size, (s as f64 + 0.5) * self.pixel_size)
    }

    /// The centre of the panel's face (m): the midpoint of its pixel area.
    pub fn centre(&self) -> Vec3 {
        self.at(
            self.fpixels as f64 * self.pixel_size / 2.0,
            self.spixels as f64 * self.pixel_size / 2.0,
        )
    }

    /// Lab position of the point `df` along fast and `ds` along slow from the origin (m).
    fn at(&self, df: f64, ds: f64) -> Vec3 {
        std::array::from_fn(|k| self.origin[k] + df * self.fast[k] + ds * self.slow[k])
    }

    /// Pixel mask, fast-major within a slow row (1 = render, 0 = bad), or `None` when every
    /// pixel renders.
    pub fn mask(&self) -> Option<Vec<u16>> {
        if self.bad.is_empty() {
            return None;
        }
        let mut m = vec![1u16; self.fpixels * self.spixels];
        for s in 0..self.spixels {
            for f in 0..self.fpixels {
                if self.bad.iter().any(|r| r.contains(f, s)) {
                    m[s * self.fpixels + f] = 0;
                }
            }
        }
        Some(m)
    }

    fn rotated(&self, r: &Mat3) -> Panel {
        Panel {
            fast: mat_vec(r, self.fast),
            slow: mat_vec(r, self.slow),
            origin: mat_vec(r, self.origin),
            ..self.clone()
        }
    }
}

impl PanelLayout {
    /// File-name parts for the panels (outputs `STEM_PANEL.EXT`): their names where those
    /// are distinct and safe in a file name, else `panelK`.
    pub fn file_names(&self) -> Vec<String> {
        let safe = |n: &str| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        };
        let names: Vec<&str> = self.panels.iter().map(|p| p.name.as_str()).collect();
        let distinct = names.iter().collect::<std::collections::BTreeSet<_>>().len() == names.len();
        if distinct && names.iter().all(|n| safe(n)) {
            names.iter().map(|n| n.to_string()).collect()
        } else {
            (0..names.len()).map(|k| format!("panel{k}")).collect()
        }
    }

    /// Number of pixels of all panels.
    pub fn pixels(&self) -> usize {
        self.panels.iter().map(|p| p.fpixels * p.spixels).sum()
    }

    /// The rotation (rows) that takes the file's frame to the run's: the file's beam direction
    /// to `beam`, its polarization to `polar` (both unit and perpendicular in each frame).
    pub fn frame_rotation(&self, beam: Vec3, polar: Vec3) -> Mat3 {
        let (fb, fp) = (self.beam.direction, self.beam.polarization);
        let from = [fb, fp, cross(fb, fp)];
        let to = [beam, polar, cross(beam, polar)];
        // R = Σ_k to_k ⊗ from_k, row i = Σ_k to_k[i]·from_k
        std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| to[k][i] * from[k][j]).sum()))
    }

    /// The layout moved rigidly into the run's frame ([`Self::frame_rotation`]); the beam becomes
    /// (`beam`, `polar`).
    pub fn in_run_frame(&self, beam: Vec3, polar: Vec3) -> PanelLayout {
        let r = self.frame_rotation(beam, polar);
        PanelLayout {
            panels: self.panels.iter().map(|p| p.rotated(&r)).collect(),
            groupings: self.groupings.iter().map(|g| g.rotated(&r)).collect(),
            beam: FileBeam {
                direction: beam,
                polarization: polar,
                wavelength: self.beam.wavelength,
            },
        }
    }
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
