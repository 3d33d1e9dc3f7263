//! Rigid motions of panel groups, diffBragg's panel parameters: each group of the chosen
//! grouping ([`super::groups`]) moves by
//!
//! * shifts `panel_X`, `panel_Y`, `panel_Z` along the detector file's own x, y, z axes (mm),
//!   so that a refined shift can be written back into the file, and
//! * rotations `panel_rot_O`, `panel_rot_F`, `panel_rot_S` about the group's own normal, fast
//!   and slow axes through its centre (degrees), right-handed.
//!
//! The motion of `[X, Y, Z, O, F, S]` moves a point p of the group to
//! R_O(O)·R_F(F)·R_S(S)·(p − c) + c + (X, Y, Z), c the group's centre.
//!
//! A group's axes are its DIALS hierarchy node's fast, slow and fast × slow where the file
//! gives them, else its first panel's fast, slow and outward normal; its centre is the mean of
//! its panels' centres.
//!
//! Each panel renders as the CUSTOM detector C would be given for it alone
//! ([`super::custom`]), whose continuous parameters are shifts along −fast, −slow and the
//! outward normal (`Xbeam`, `Ybeam`, `close_distance`, mm) and rotations about the lab axes
//! through the sample (`detector_rotx/y/z`, degrees). Every infinitesimal rigid motion of a
//! panel is a linear combination of these six, so a motion's derivative image is that
//! combination of the six derivative images ([`base_coefficients`]), exactly.

use crate::base::vec3::Vec3;
use crate::base::vec3::{add, cross, dot, rotate_axis, scale, unitize};
use crate::config::components::ParamComponent;
use crate::diff::host::{self, Host};
use crate::diff::rigid_motion::RigidMotion;
use crate::io::panels::groups::{Grouping, PanelGroup};
use crate::io::panels::{Panel, PanelLayout};

/// The motion parameters' names (as `-derivative NAME`) and units, in `[X, Y, Z, O, F, S]`
/// order.
pub const MOTIONS: [(&str, &str); 6] = [
    ("panel_X", "mm"),
    ("panel_Y", "mm"),
    ("panel_Z", "mm"),
    ("panel_rot_O", "°"),
    ("panel_rot_F", "°"),
    ("panel_rot_S", "°"),
];

/// The per-panel components the motions are combined from (`-derivative` names of a panel's
/// CUSTOM detector), in the order of [`base_coefficients`]' columns.
pub const BASE: [&str; 6] = [
    "Xbeam",
    "Ybeam",
    "close_distance",
    "detector_rotx",
    "detector_roty",
    "detector_rotz",
];

/// The motions as derivative specs (`-derivative NAME`), in [`MOTIONS`] order: not components
/// of [`crate::scene::params::Params`] but combinations of a panel's ([`base_coefficients`]).
pub const MOTION_SPECS: [ParamComponent; 6] = [
    motion_spec(0, 1e-3),
    motion_spec(1, 1e-3),
    motion_spec(2, 1e-3),
    motion_spec(3, DEG),
    motion_spec(4, DEG),
    motion_spec(5, DEG),
];

const DEG: f64 = std::f64::consts::PI / 180.0;

const fn motion_spec(m: usize, per_unit: f64) -> ParamComponent {
    ParamComponent {
        name: MOTIONS[m].0,
        param: "panel_motion",
        index: m,
        per_unit,
        unit: MOTIONS[m].1,
        positive: false,
    }
}

/// The index of motion `name` in [`MOTIONS`].
pub fn motion_index(name: &str) -> Option<usize> {
    MOTIONS.iter().position(|(n, _)| *n == name)
}

/// One motion per group: `[X, Y, Z]` in mm, `[O, F, S]` in degrees.
pub type Motion = [f64; 6];

/// A group's rotation centre (m) and its O, F, S axes (unit), in one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupFrame {
    pub centre: Vec3,
    pub axes: [Vec3; 3],
}

impl GroupFrame {
    /// The frame of `group`, of `layout`'s panels (in the layout's frame).
    pub fn of(group: &PanelGroup, layout: &PanelLayout) -> GroupFrame {
        let members: Vec<&Panel> = group.panels.iter().map(|&k| &layout.panels[k]).collect();
        let first = members[0];
        let axes = match group.axes {
            Some([f, s]) => [unitize(cross(f, s)).0, f, s],
            None => [first.facing_away(), first.fast, first.slow],
        };
        let sum = members.iter().fold([0.0; 3], |acc, p| add(acc, p.centre()));
        GroupFrame {
            centre: scale(sum, 1.0 / members.len() as f64),
            axes,
        }
    }

    /// `motion` as the one rigid motion of the geometry ([`RigidMotion`]), evaluated on the
    /// host in f64, shifts along `shift_axes`.
    fn rigid_motion(&self, motion: &Motion, shift_axes: [Vec3; 3]) -> RigidMotion<Host> {
        let si: Vec<f64> = motion.iter().zip(&MOTION_SPECS).map(|(v, m)| v * m.per_unit).collect();
        RigidMotion::new(host::vector(&si), self.centre, self.axes, shift_axes)
    }

    /// The axes each rotation angle turns about at `motion` (per degree of O, F, S): O, then
    /// F turned by R_O, then S turned by R_O·R_F, so that the angles' derivatives are
    /// rotations about these axes through the moved centre.
    pub fn rotation_axes(&self, motion: &Motion) -> [Vec3; 3] {
        let [o, f, s] = self.axes;
        let f1 = about(o, motion[3], f);
        let s1 = about(o, motion[3], about(f, motion[4], s));
        [o, f1, s1]
    }
}

/// `v` rotated by `deg` degrees about the unit `axis` (right-handed; Rodrigues).
fn about(axis: Vec3, deg: f64, v: Vec3) -> Vec3 {
    rotate_axis(v, axis, deg.to_radians())
}

/// The translation of `motion` (m).
fn shift(motion: &Motion, shift_axes: &[Vec3; 3]) -> Vec3 {
    (0..3).fold([0.0; 3], |acc, j| add(acc, scale(shift_axes[j], motion[j] * 1e-3)))
}

/// The file's x, y, z axes: the shift axes of a layout in the file's own frame.
pub const FILE_AXES: [Vec3; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

impl PanelLayout {
    /// The layout (in the file's frame) with each group of `grouping` moved by its motion
    /// (`motions[g]` for `grouping.groups[g]`), shifts along the file's axes.
    pub fn moved(&self, grouping: &Grouping, motions: &[Motion]) -> PanelLayout {
        let mut out = self.clone();
        for (group, motion) in grouping.groups.iter().zip(motions) {
            let rigid = GroupFrame::of(group, self).rigid_motion(motion, FILE_AXES);
            for &k in &group.panels {
                let p = &mut out.panels[k];
                p.origin = host::vec3(rigid.point(host::vector(&p.origin)));
                p.fast = host::vec3(rigid.direction(host::vector(&p.fast)));
                p.slow = host::vec3(rigid.direction(host::vector(&p.slow)));
            }
        }
        out
    }
}

/// The derivative of a panel's image with respect to its group's motion, as combinations of
/// the panel's [`BASE`] derivative images: row m holds the coefficients of ∂I/∂motion_m
/// (per mm or degree) in ∂I/∂base_b (per mm or degree).
///
/// `panel` is the panel as rendered and `frame` its group's frame at `motion`, both in the
/// run's frame; `shift_axes` are the file's x, y, z in the run's frame.
pub fn base_coefficients(panel: &Panel, frame: &GroupFrame, motion: &Motion, shift_axes: &[Vec3; 3]) -> [[f64; 6]; 6] {
    let centre = add(frame.centre, shift(motion, shift_axes));
    let normal = panel.facing_away();
    let in_panel_axes = panel_axes_inverse(panel.fast, panel.slow, normal);
    // a translation v (mm) as ∂I/∂v = −a·D_Xbeam − b·D_Ybeam + c·D_close_distance, with
    // v = a·fast + b·slow + c·normal
    let translation = |v: Vec3| -> [f64; 6] {
        let [a, b, c] = std::array::from_fn(|i| dot(in_panel_axes[i], v));
        [-a, -b, c, 0.0, 0.0, 0.0]
    };
    let mut rows = [[0.0; 6]; 6];
    for j in 0..3 {
        rows[j] = translation(shift_axes[j]);
    }
    // a rotation about u through the centre c, per degree: the rotation about u through the
    // sample (Σ_k u_k·D_rot_k) plus the translation (π/180)·(c × u) m
    for (m, u) in frame.rotation_axes(motion).into_iter().enumerate() {
        let mm = scale(cross(centre, u), 1e3 * std::f64::consts::PI / 180.0);
        let mut row = translation(mm);
        row[3..].copy_from_slice(&u);
        rows[3 + m] = row;
    }
    rows
}

/// Every panel's [`base_coefficients`] at no motion, for `layout` placed in a run's frame by
/// [`PanelLayout::frame_rotation`]`(beam, polar)`, its groups those of `grouping` (both in the
/// file's frame).
pub fn panel_coefficients(layout: &PanelLayout, grouping: &Grouping, beam: Vec3, polar: Vec3) -> Vec<[[f64; 6]; 6]> {
    let placed = layout.in_run_frame(beam, polar);
    let (frames, shift_axes) = run_frames(layout, grouping, beam, polar);
    let mut out = vec![[[0.0; 6]; 6]; layout.panels.len()];
    for (group, frame) in grouping.groups.iter().zip(&frames) {
        for &k in &group.panels {
            out[k] = base_coefficients(&placed.panels[k], frame, &[0.0; 6], &shift_axes);
        }
    }
    out
}

/// The frames of `grouping`'s groups at `layout` (both in the file's frame) and the file's x,
/// y, z axes, all in the run's frame that [`PanelLayout::frame_rotation`]`(beam, polar)`
/// places the file in: a group's own axes turn with its panels.
pub fn run_frames(layout: &PanelLayout, grouping: &Grouping, beam: Vec3, polar: Vec3) -> (Vec<GroupFrame>, [Vec3; 3]) {
    let r = layout.frame_rotation(beam, polar);
    let placed = layout.in_run_frame(beam, polar);
    let grouping = grouping.rotated(&r);
    let frames = grouping.groups.iter().map(|g| GroupFrame::of(g, &placed)).collect();
    (frames, std::array::from_fn(|j| std::array::from_fn(|i| r[i][j])))
}

/// Rows of the inverse of the matrix with columns `f`, `s`, `o` (the dual basis), so that
/// v = Σ (row_i · v)·column_i; the panel's fast and slow need not be orthogonal.
fn panel_axes_inverse(f: Vec3, s: Vec3, o: Vec3) -> [Vec3; 3] {
    let det = dot(f, cross(s, o));
    [
        scale(cross(s, o), 1.0 / det),
        scale(cross(o, f), 1.0 / det),
        scale(cross(f, s), 1.0 / det),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::vec3::mat_vec;

    #[test]
    fn rotation_is_right_handed_and_keeps_lengths() {
        let v = about([0.0, 0.0, 1.0], 90.0, [1.0, 0.0, 0.0]);
        assert!((v[0]).abs() < 1e-15 && (v[1] - 1.0).abs() < 1e-15 && v[2].abs() < 1e-15);
        let w = about(unitize([1.0, 2.0, 3.0]).0, 37.0, [0.3, -0.2, 0.9]);
        assert!((dot(w, w) - (0.09 + 0.04 + 0.81)).abs() < 1e-15);
    }

    /// A group's own axes (a DIALS hierarchy node's) turn into the run's frame with the
    /// panels: the rotation rows of the coefficients are the axes as the run sees them.
    #[test]
    fn group_axes_are_placed_in_the_run_frame() {
        let mut layout = crate::io::panels::tests::layout();
        let (f, s) = ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0]);
        layout.groupings = vec![Grouping {
            name: "level1".into(),
            groups: vec![PanelGroup {
                name: "node".into(),
                panels: vec![0],
                axes: Some([f, s]),
            }],
        }];
        let grouping = layout.grouping("level1").unwrap();
        let (beam, polar) = ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
        let r = layout.frame_rotation(beam, polar);
        let (frames, _) = run_frames(&layout, &grouping, beam, polar);
        let want = [mat_vec(&r, cross(f, s)), mat_vec(&r, f), mat_vec(&r, s)];
        let rows = panel_coefficients(&layout, &grouping, beam, polar)[0];
        for k in 0..3 {
            assert!(
                (0..3).all(|i| (frames[0].axes[k][i] - want[k][i]).abs() < 1e-15),
                "{k}: {:?}",
                frames[0].axes
            );
            assert!(
                (0..3).all(|i| (rows[3 + k][3 + i] - want[k][i]).abs() < 1e-15),
                "{k}: {:?}",
                rows[3 + k]
            );
        }
    }

    #[test]
    fn dual_basis_decomposes_a_skewed_frame() {
        let (f, s, o) = ([1.0, 0.0, 0.0], unitize([0.1, 1.0, 0.0]).0, [0.0, 0.0, 1.0]);
        let inv = panel_axes_inverse(f, s, o);
        let v = [0.3, -0.7, 2.0];
        let c: [f64; 3] = std::array::from_fn(|i| dot(inv[i], v));
        let back = add(add(scale(f, c[0]), scale(s, c[1])), scale(o, c[2]));
        assert!((0..3).all(|i| (back[i] - v[i]).abs() < 1e-14), "{back:?}");
    }
}
