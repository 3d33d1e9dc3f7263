//! Host-side 3-vector maths in f64 (the same primitives the C program uses).
//!
//! Rotations are right-handed. [`rotate_xyz`] applies Rz·Ry·Rx and skips an axis whose angle is
//! exactly zero (as C does); [`rotate_axis`] is Rodrigues' formula about a unit axis.

/// A 3-vector in the lab frame.
pub type Vec3 = [f64; 3];

/// Dot product.
pub fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Cross product a × b.
pub fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Euclidean length.
pub fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

/// `s·a`.
pub fn scale(a: Vec3, s: f64) -> Vec3 {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// `a + b`.
pub fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// `a − b`.
pub fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Unit vector along `a` and the length of `a`; a zero vector stays zero (as C's `unitize`).
pub fn unitize(a: Vec3) -> (Vec3, f64) {
    let m = norm(a);
    if m != 0.0 {
        ([a[0] / m, a[1] / m, a[2] / m], m)
    } else {
        ([0.0; 3], 0.0)
    }
}

/// v' = Rz(rz)·Ry(ry)·Rx(rx)·v (rad); an axis with an angle of exactly 0 is skipped.
pub fn rotate_xyz(v: Vec3, rx: f64, ry: f64, rz: f64) -> Vec3 {
    let [mut x, mut y, mut z] = v;
    if rx != 0.0 {
        let (s, c) = rx.sin_cos();
        let (ny, nz) = (y * c - z * s, y * s + z * c);
        y = ny;
        z = nz;
    }
    if ry != 0.0 {
        let (s, c) = ry.sin_cos();
        let (nx, nz) = (x * c + z * s, -x * s + z * c);
        x = nx;
        z = nz;
    }
    if rz != 0.0 {
        let (s, c) = rz.sin_cos();
        let (nx, ny) = (x * c - y * s, x * s + y * c);
        x = nx;
        y = ny;
    }
    [x, y, z]
}

/// Rodrigues rotation of `v` by `phi` (rad) about the unit vector `axis`.
pub fn rotate_axis(v: Vec3, axis: Vec3, phi: f64) -> Vec3 {
    let (s, c) = phi.sin_cos();
    let d = dot(axis, v) * (1.0 - c);
    [
        axis[0] * d + v[0] * c + (-axis[2] * v[1] + axis[1] * v[2]) * s,
        axis[1] * d + v[1] * c + (axis[2] * v[0] - axis[0] * v[2]) * s,
        axis[2] * d + v[2] * c + (-axis[1] * v[0] + axis[0] * v[1]) * s,
    ]
}

/// A 3×3 matrix, row-major.
pub type Mat3 = [[f64; 3]; 3];

/// The identity matrix.
#[cfg(test)]
pub const IDENTITY: Mat3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

/// `M·v`.
pub fn mat_vec(m: &Mat3, v: Vec3) -> Vec3 {
    [dot(m[0], v), dot(m[1], v), dot(m[2], v)]
}

/// `A·B`.
#[cfg(test)]
pub fn mat_mul(a: &Mat3, b: &Mat3) -> Mat3 {
    let mut out = [[0.0; 3]; 3];
    for (i, row) in out.iter_mut().enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    out
}

/// Rotation matrix of Rodrigues' formula: `axis_rotation(u, φ)·v == rotate_axis(v, u, φ)`.
#[cfg(test)]
pub fn axis_rotation(axis: Vec3, phi: f64) -> Mat3 {
    let cols = [
        rotate_axis([1.0, 0.0, 0.0], axis, phi),
        rotate_axis([0.0, 1.0, 0.0], axis, phi),
        rotate_axis([0.0, 0.0, 1.0], axis, phi),
    ];
    let mut m = [[0.0; 3]; 3];
    for (j, col) in cols.iter().enumerate() {
        for i in 0..3 {
            m[i][j] = col[i];
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn rotate_xyz_matches_matrix_product() {
        // Rz(90°)·x = y; Rx(90°)·y = z; Ry(90°)·z = x
        let q = std::f64::consts::FRAC_PI_2;
        let v = rotate_xyz([1.0, 0.0, 0.0], 0.0, 0.0, q);
        assert_relative_eq!(v[1], 1.0, epsilon = 1e-15);
        let v = rotate_xyz([0.0, 1.0, 0.0], q, 0.0, 0.0);
        assert_relative_eq!(v[2], 1.0, epsilon = 1e-15);
        let v = rotate_xyz([0.0, 0.0, 1.0], 0.0, q, 0.0);
        assert_relative_eq!(v[0], 1.0, epsilon = 1e-15);
        // order: x first, then y, then z
        let a = rotate_xyz([0.3, -0.2, 0.9], 0.1, 0.2, 0.3);
        let b = rotate_xyz(
            rotate_xyz(rotate_xyz([0.3, -0.2, 0.9], 0.1, 0.0, 0.0), 0.0, 0.2, 0.0),
            0.0,
            0.0,
            0.3,
        );
        for i in 0..3 {
            assert_relative_eq!(a[i], b[i], epsilon = 1e-15);
        }
    }

    #[test]
    fn rodrigues_preserves_length_and_axis() {
        let (u, _) = unitize([1.0, 2.0, -0.5]);
        let v = [0.4, -1.0, 2.0];
        let r = rotate_axis(v, u, 0.7);
        assert_relative_eq!(norm(r), norm(v), epsilon = 1e-14);
        assert_relative_eq!(dot(r, u), dot(v, u), epsilon = 1e-14);
        let m = axis_rotation(u, 0.7);
        let r2 = mat_vec(&m, v);
        for i in 0..3 {
            assert_relative_eq!(r[i], r2[i], epsilon = 1e-14);
        }
        // right-handed: z about x by +90° gives -y
        let r = rotate_axis([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], std::f64::consts::FRAC_PI_2);
        assert_relative_eq!(r[1], -1.0, epsilon = 1e-15);
    }
}
