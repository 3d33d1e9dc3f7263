//! The lab → NeXus frame, and the inverse of the detector's rotations (the vector helpers and
//! the rotations themselves are the crate's own, [`crate::base::vec3`]).
pub use crate::base::vec3::{add, cross, dot, norm, rotate_axis, rotate_xyz, scale};

use super::Vec3;

/// Unit vector along `a`, or `None` for a (near-)zero vector.
pub fn unit(a: Vec3) -> Option<Vec3> {
    let n = norm(a);
    (n > 1e-300).then(|| scale(a, 1.0 / n))
}

/// Inverse of [`rotate_xyz`]: undo z, then y, then x.
pub fn unrotate_xyz(v: Vec3, rx: f64, ry: f64, rz: f64) -> Vec3 {
    let v = rotate_xyz(v, 0.0, 0.0, -rz);
    let v = rotate_xyz(v, 0.0, -ry, 0.0);
    rotate_xyz(v, -rx, 0.0, 0.0)
}

/// Rotation taking nanoBragg lab vectors into the NeXus (McStas) frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabToNexus {
    /// Rows: the NeXus X, Y, Z axes expressed in lab coordinates.
    pub rows: [Vec3; 3],
}

impl LabToNexus {
    /// Z = beam; X = unit(ŷ × Z) (x̂ instead of ŷ if the beam is along ŷ); Y = Z × X.
    pub fn from_beam(beam: Vec3) -> Result<Self, String> {
        let z = unit(beam).ok_or("beam direction is a zero vector")?;
        let up = if norm(cross([0.0, 1.0, 0.0], z)) < 1e-9 {
            [1.0, 0.0, 0.0]
        } else {
            [0.0, 1.0, 0.0]
        };
        let x = unit(cross(up, z)).ok_or("degenerate beam direction")?;
        let y = cross(z, x);
        Ok(LabToNexus { rows: [x, y, z] })
    }

    /// R·v.
    pub fn apply(&self, v: Vec3) -> Vec3 {
        [dot(self.rows[0], v), dot(self.rows[1], v), dot(self.rows[2], v)]
    }

    /// Determinant of R (+1 for a proper rotation).
    pub fn det(&self) -> f64 {
        dot(self.rows[0], cross(self.rows[1], self.rows[2]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_proper(beam: Vec3) {
        let r = LabToNexus::from_beam(beam).unwrap();
        assert!((r.det() - 1.0).abs() < 1e-12, "det {}", r.det());
        for i in 0..3 {
            for j in 0..3 {
                let d = dot(r.rows[i], r.rows[j]);
                assert!((d - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        let z = r.apply(unit(beam).unwrap());
        assert!(
            (z[0]).abs() < 1e-12 && (z[1]).abs() < 1e-12 && (z[2] - 1.0).abs() < 1e-12,
            "{z:?}"
        );
    }

    #[test]
    fn frame_is_proper_and_maps_beam_to_z() {
        for b in [
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.0, 1.0, 0.0],
            [0.0, -1.0, 0.0],
            [0.3, -0.2, 0.9],
        ] {
            check_proper(b);
        }
    }

    #[test]
    fn lab_up_stays_up() {
        // Beam along +x (MOSFLM): lab y must map to NeXus +y.
        let r = LabToNexus::from_beam([1.0, 0.0, 0.0]).unwrap();
        let y = r.apply([0.0, 1.0, 0.0]);
        assert!((y[1] - 1.0).abs() < 1e-12);
        let r = LabToNexus::from_beam([0.0, 0.0, 1.0]).unwrap();
        assert_eq!(r.apply([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn unrotate_inverts_rotate() {
        let v = [0.1, -0.2, 0.3];
        let w = unrotate_xyz(rotate_xyz(v, 0.05, -0.1, 0.2), 0.05, -0.1, 0.2);
        for k in 0..3 {
            assert!((v[k] - w[k]).abs() < 1e-15);
        }
    }

    #[test]
    fn rodrigues_matches_rotate_xyz() {
        let v = [0.1, -0.2, 0.3];
        let a = rotate_xyz(v, 0.0, 0.0, 0.7);
        let b = rotate_axis(v, [0.0, 0.0, 1.0], 0.7);
        for k in 0..3 {
            assert!((a[k] - b[k]).abs() < 1e-15);
        }
    }
}
