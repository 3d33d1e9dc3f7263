//! A detector of P flat panels as data: each panel's axes, origin, pixel size and bad regions,
//! the beam of the file that describes them, and the file's groupings of the panels. The
//! readers (`crate::io::panels`) make it from a DIALS experiment list or a CrystFEL geometry file;
//! the configuration (`crate::config::DetectorConfig::panels`) holds it.
//!
//! Each file has its own lab frame. [`PanelLayout::in_run_frame`] moves the panels, rigidly,
//! into the frame of the run: the file's beam (propagation direction) onto the run's beam
//! vector b, the file's polarization E-vector onto the run's polarization vector p.
//!
//! Units: metres, unit vectors; pixel indices count from 0 at the panel's first pixel.

use crate::base::vec3::{cross, dot, mat_vec, scale, unitize, Mat3, Vec3};
use serde::{Deserialize, Serialize};

/// Largest pixel size or sample–detector distance accepted (m): 1 km. Far beyond any
/// detector, and small enough that squared positions and solid angles stay finite in single
/// precision, where larger values (e.g. `-pixel 1e300`) give NaN pixels.
pub const MAX_DETECTOR_LENGTH: f64 = 1e3;

/// Smallest pixel size or sample–detector distance accepted (m): 1 nm, far below any
/// detector's pixel, and large enough that squared lengths and solid angles stay normal
/// numbers in single precision. A detector plane nearer the sample than this passes through
/// it.
pub const MIN_DETECTOR_LENGTH: f64 = 1e-9;

/// The sine of the smallest angle accepted between the fast and slow axes, and between the
/// normal and the detector plane: below it the axes count as parallel.
pub const MIN_AXIS_SINE: f64 = 1e-6;

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
    /// rigid-group collections, a DIALS hierarchy's levels); see `crate::io::panels::groups`.
    #[serde(default)]
    pub groupings: Vec<Grouping>,
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
        let (nf, ns) = (self.fpixels, self.spixels);
        let mut m = vec![1u16; nf * ns];
        // each rectangle's rows, clipped to the panel (a pixel in several is cleared again)
        for r in &self.bad {
            if r.f0 >= nf || r.f0 > r.f1 || ns == 0 {
                continue;
            }
            let f1 = r.f1.min(nf - 1);
            for s in r.s0..=r.s1.min(ns - 1) {
                m[s * nf + r.f0..=s * nf + f1].fill(0);
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

/// Panels that move together, by index into the layout's panels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelGroup {
    pub name: String,
    pub panels: Vec<usize>,
    /// The group's own unit fast and slow axes, in the layout's frame, where the file gives
    /// them (a DIALS hierarchy node); else its first panel's.
    pub axes: Option<[Vec3; 2]>,
}

/// A named partition of the panels into groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grouping {
    pub name: String,
    pub groups: Vec<PanelGroup>,
}

impl Grouping {
    /// Every panel a group of its own (`panels`).
    pub fn each_panel(panels: &[Panel]) -> Grouping {
        Grouping {
            name: "panels".into(),
            groups: panels.iter().enumerate().map(|(k, p)| single(k, p)).collect(),
        }
    }

    /// The grouping with every group's axes turned by `r` (rows).
    pub(crate) fn rotated(&self, r: &Mat3) -> Grouping {
        let groups = self.groups.iter().map(|g| PanelGroup {
            axes: g.axes.map(|a| a.map(|v| mat_vec(r, v))),
            ..g.clone()
        });
        Grouping {
            name: self.name.clone(),
            groups: groups.collect(),
        }
    }

    /// The group of panel `k` (an index into [`Self::groups`]), if any.
    pub fn group_of(&self, k: usize) -> Option<usize> {
        self.groups.iter().position(|g| g.panels.contains(&k))
    }
}

/// Panel `k` as a group of its own.
pub(crate) fn single(k: usize, p: &Panel) -> PanelGroup {
    PanelGroup {
        name: p.name.clone(),
        panels: vec![k],
        axes: None,
    }
}
