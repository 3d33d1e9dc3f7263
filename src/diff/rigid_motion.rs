//! A rigid motion of a detector panel group as tensors: the finite form of the panel motions
//! of [`crate::experiment::panels::motion`], so that a burn module can train them
//! ([`crate::PanelSimulator`]).
//!
//! Parameter → geometry map (units):
//! * `motion` `[6]` = (X, Y, Z, O, F, S): shifts X, Y, Z (m) along the `shift_axes` (the
//!   detector file's x, y, z, in the run's frame), rotations O, F, S (rad, right-handed) about
//!   the group's own unit axes (normal, fast, slow) through its `centre` (m).
//! * a point p moves to `R·(p − centre) + centre + X·x̂ + Y·ŷ + Z·ẑ`, a direction v to `R·v`,
//!   with `R = R_O(O)·R_F(F)·R_S(S)` about the fixed axes: the motion
//!   [`crate::io::panels::PanelLayout::moved`] applies to a layout on the host.
//! * a moved panel's detector recomputes `close_distance = pix0·odet`,
//!   `ratio = beam·odet` and `distance = close_distance/ratio` (m), as C's CUSTOM detector
//!   without rotations or 2θ would for the moved panel.

use super::detector::{nonzero, DetectorTensors};
use super::rotation::axis_rotation;
use super::{const_vec3, constant, dot3, elem, mat_vec3};
use crate::base::vec3::Vec3;
use burn::tensor::{backend::Backend, Tensor};

/// A rigid motion: rotation `R` about `centre`, then `translation`.
#[derive(Debug, Clone)]
pub struct RigidMotion<B: Backend> {
    /// `[3, 3]`, acting on column vectors.
    pub rotation: Tensor<B, 2>,
    /// `[3]` (m).
    pub centre: Tensor<B, 1>,
    /// `[3]` (m).
    pub translation: Tensor<B, 1>,
}

impl<B: Backend> RigidMotion<B> {
    /// The motion `motion` `[6]` (m, rad; see the module's documentation) of a group with
    /// rotation `centre` (m) and unit `axes` O, F, S, shifted along the unit `shift_axes`.
    /// Constants are made on the device and in the dtype of `motion`.
    pub fn new(motion: Tensor<B, 1>, centre: Vec3, axes: [Vec3; 3], shift_axes: [Vec3; 3]) -> Self {
        let axis = |k: usize| const_vec3(axes[k], &motion);
        let turn = |k: usize| axis_rotation(axis(k), elem(&motion, 3 + k));
        let rotation = turn(0).matmul(turn(1)).matmul(turn(2));
        // columns x̂, ŷ, ẑ
        let columns = constant((0..3).flat_map(|i| shift_axes.map(|a| a[i])).collect(), &motion).reshape([3, 3]);
        Self {
            rotation,
            centre: const_vec3(centre, &motion),
            translation: mat_vec3(columns, motion.narrow(0, 0, 3)),
        }
    }

    /// The point `p` `[3]` (m), moved.
    pub fn point(&self, p: Tensor<B, 1>) -> Tensor<B, 1> {
        mat_vec3(self.rotation.clone(), p - self.centre.clone()) + self.centre.clone() + self.translation.clone()
    }

    /// The direction `v` `[3]`, turned.
    pub fn direction(&self, v: Tensor<B, 1>) -> Tensor<B, 1> {
        mat_vec3(self.rotation.clone(), v)
    }

    /// A panel's detector `det`, moved; `beam` is the run's unit beam direction.
    pub fn detector(&self, det: DetectorTensors<B>, beam: Vec3) -> DetectorTensors<B> {
        let basis = [det.fdet, det.sdet, det.odet].map(|v| self.direction(v));
        let pix0 = self.point(det.pix0);
        let ratio = nonzero(dot3(const_vec3(beam, &pix0), basis[2].clone()));
        DetectorTensors::placed(basis, pix0, ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ad_gradient, fd_gradient, host, t1, B};
    use super::*;
    use crate::base::vec3::{add, axis_rotation as host_rotation, mat_vec, sub};

    const CENTRE: Vec3 = [0.02, -0.01, 0.1];
    const AXES: [Vec3; 3] = [[0.0, 0.0, 1.0], [0.6, 0.8, 0.0], [-0.8, 0.6, 0.0]];
    const SHIFT_AXES: [Vec3; 3] = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]];

    /// The host's composition, rotation by rotation about the fixed axes (S first).
    fn moved_on_host(m: &[f64; 6], p: Vec3) -> Vec3 {
        let turn = |k: usize, v: Vec3| mat_vec(&host_rotation(AXES[k], m[3 + k]), v);
        let r = turn(0, turn(1, turn(2, sub(p, CENTRE))));
        let shift: Vec3 = std::array::from_fn(|i| (0..3).map(|j| SHIFT_AXES[j][i] * m[j]).sum());
        add(add(r, CENTRE), shift)
    }

    #[test]
    fn a_point_moves_as_the_host_composes_the_rotations() {
        let m = [1e-3, -2e-3, 5e-4, 0.3, -0.2, 0.1];
        let p = [0.05, 0.03, 0.12];
        let got = host(RigidMotion::<B>::new(t1(&m), CENTRE, AXES, SHIFT_AXES).point(t1(&p)));
        let want = moved_on_host(&m, p);
        assert!((0..3).all(|i| (got[i] - want[i]).abs() < 1e-15), "{got:?} vs {want:?}");
    }

    #[test]
    fn the_moved_point_differentiates_as_its_differences() {
        let m = [1e-3, -2e-3, 5e-4, 0.3, -0.2, 0.1];
        for out in 0..3 {
            let f = |x: &[f64]| {
                let m: [f64; 6] = std::array::from_fn(|i| x[i]);
                moved_on_host(&m, [0.05, 0.03, 0.12])[out]
            };
            let ad = ad_gradient(
                &|x| {
                    let moved = RigidMotion::new(x, CENTRE, AXES, SHIFT_AXES).point(t1(&[0.05, 0.03, 0.12]));
                    elem(&moved, out)
                },
                &m,
            );
            let fd = fd_gradient(&f, &m, 1e-5, 1.0);
            assert!((0..6).all(|i| (ad[i] - fd[i]).abs() < 1e-7), "{out}: {ad:?} vs {fd:?}");
        }
    }
}
