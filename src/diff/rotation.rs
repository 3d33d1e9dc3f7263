//! Rotation matrices as tensors: the x-y-z Euler rotation of [`crate::base::vec3::rotate_xyz`] and
//! Rodrigues' axis rotation of [`crate::base::vec3::axis_rotation`], single and batched.
//!
//! [`crate::base::vec3::rotate_xyz`]: crate::base::vec3::rotate_xyz
//! [`crate::base::vec3::axis_rotation`]: crate::base::vec3::axis_rotation

use super::components;
use crate::base::trig::{cos, sin};
use burn::tensor::{backend::Backend, Tensor};

/// The `[3, 3]` matrix `Rz(rz)·Ry(ry)·Rx(rx)` of `angles = [rx, ry, rz]` (`[3]`, rad, right-handed
/// about lab x, y, z), so that `M·v == crate::base::vec3::rotate_xyz(v, rx, ry, rz)`.
///
/// The host skips an axis whose angle is exactly 0; with sin 0 = 0 and cos 0 = 1 the matrix
/// gives the same values (and the gradient at 0 is the true one).
pub fn rotation_xyz<B: Backend>(angles: Tensor<B, 1>) -> Tensor<B, 2> {
    let [sx, sy, sz] = components(&sin(angles.clone()));
    let [cx, cy, cz] = components(&cos(angles));
    let entries = vec![
        // row x
        cy.clone() * cz.clone(),
        cz.clone() * sy.clone() * sx.clone() - sz.clone() * cx.clone(),
        cz.clone() * sy.clone() * cx.clone() + sz.clone() * sx.clone(),
        // row y
        cy.clone() * sz.clone(),
        sz.clone() * sy.clone() * sx.clone() + cz.clone() * cx.clone(),
        sz * sy.clone() * cx.clone() - cz * sx.clone(),
        // row z
        sy.neg(),
        cy.clone() * sx,
        cy * cx,
    ];
    Tensor::cat(entries, 0).reshape([3, 3])
}

/// Rodrigues' rotation by `angle` (`[1]`, rad, right-handed) about the unit vector `axis`
/// (`[3]`): the `[3, 3]` matrix `cos φ·I + sin φ·[u]ₓ + (1 − cos φ)·u uᵀ`, equal to
/// `crate::base::vec3::axis_rotation(axis, angle)`.
pub fn axis_rotation<B: Backend>(axis: Tensor<B, 1>, angle: Tensor<B, 1>) -> Tensor<B, 2> {
    axis_rotations(axis.reshape([1, 3]), angle).reshape([3, 3])
}

/// Batched [`axis_rotation`]: unit axes `[M, 3]` and angles `[M]` (rad) → `[M, 3, 3]`.
pub fn axis_rotations<B: Backend>(axes: Tensor<B, 2>, angles: Tensor<B, 1>) -> Tensor<B, 3> {
    let m = axes.dims()[0];
    let sin = sin(angles.clone()).reshape([m, 1, 1]);
    let cos = cos(angles).reshape([m, 1, 1]);
    let outer = axes.clone().unsqueeze_dim::<3>(2) * axes.clone().unsqueeze_dim::<3>(1);
    identities(&axes) * cos.clone() + skew_matrices(axes) * sin + outer * (cos.neg() + 1.0)
}

/// `[M, 3, 3]` copies of the identity, one per row of `axes` `[M, 3]` (on its device, in its
/// dtype).
fn identities<B: Backend>(axes: &Tensor<B, 2>) -> Tensor<B, 3> {
    let m = axes.dims()[0];
    let one = Tensor::<B, 2>::ones([m, 1], (&axes.device(), axes.dtype()));
    let zero = Tensor::<B, 2>::zeros([m, 1], (&axes.device(), axes.dtype()));
    let (o, z) = (one, zero);
    Tensor::cat(
        vec![
            o.clone(),
            z.clone(),
            z.clone(),
            z.clone(),
            o.clone(),
            z.clone(),
            z.clone(),
            z,
            o,
        ],
        1,
    )
    .reshape([m, 3, 3])
}

/// Cross-product matrices `[u]ₓ` (`[u]ₓ·v = u × v`) of the rows of `axes` `[M, 3]` → `[M, 3, 3]`.
fn skew_matrices<B: Backend>(axes: Tensor<B, 2>) -> Tensor<B, 3> {
    let m = axes.dims()[0];
    let col = |j: usize| axes.clone().slice([0..m, j..j + 1]);
    let (u0, u1, u2) = (col(0), col(1), col(2));
    let zero = Tensor::<B, 2>::zeros([m, 1], (&axes.device(), axes.dtype()));
    Tensor::cat(
        vec![
            zero.clone(),
            u2.clone().neg(),
            u1.clone(),
            u2,
            zero.clone(),
            u0.clone().neg(),
            u1.neg(),
            u0,
            zero,
        ],
        1,
    )
    .reshape([m, 3, 3])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::vec3::{mat_vec, unitize, Mat3};
    use crate::diff::testing::{ad_gradient, fd_gradient, grad_err, host, max_rel, t1, uniform, Ad, B};

    fn mat(v: &[f64]) -> Mat3 {
        [[v[0], v[1], v[2]], [v[3], v[4], v[5]], [v[6], v[7], v[8]]]
    }

    fn flat(m: &Mat3) -> Vec<f64> {
        m.iter().flatten().copied().collect()
    }

    #[test]
    fn rotation_xyz_matches_rotate_xyz() {
        let mut worst = 0.0f64;
        for k in 0..20 {
            let ang = uniform(3, -3.2, 3.2, 100 + k);
            let m = mat(&host(rotation_xyz(t1::<B>(&ang))));
            for v in [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.3, -0.7, 0.2]] {
                let want = crate::base::vec3::rotate_xyz(v, ang[0], ang[1], ang[2]);
                let got = mat_vec(&m, v);
                worst = worst.max(max_rel(&got, &want, 1.0));
            }
        }
        // zero angles (skipped by the host) give the identity
        let m = host(rotation_xyz(t1::<B>(&[0.0, 0.0, 0.0])));
        assert_eq!(m, flat(&crate::base::vec3::IDENTITY));
        assert!(worst < 1e-15, "rotation_xyz deviates by {worst:e}");
        println!("rotation_xyz: max deviation {worst:e}");
    }

    #[test]
    fn axis_rotation_matches_host() {
        let mut worst = 0.0f64;
        let axes: Vec<[f64; 3]> = (0..12)
            .map(|k| {
                let r = uniform(3, -1.0, 1.0, 200 + k);
                unitize([r[0], r[1], r[2]]).0
            })
            .collect();
        let angles = uniform(12, -3.2, 3.2, 300);
        for (u, &phi) in axes.iter().zip(&angles) {
            let got = host(axis_rotation(t1::<B>(u), t1::<B>(&[phi])));
            worst = worst.max(max_rel(&got, &flat(&crate::base::vec3::axis_rotation(*u, phi)), 1.0));
        }
        let flat_axes: Vec<f64> = axes.iter().flatten().copied().collect();
        let batch = axis_rotations(t1::<B>(&flat_axes).reshape([12, 3]), t1::<B>(&angles));
        assert_eq!(batch.dims(), [12, 3, 3]);
        let got = host(batch);
        for (k, (u, &phi)) in axes.iter().zip(&angles).enumerate() {
            let want = flat(&crate::base::vec3::axis_rotation(*u, phi));
            worst = worst.max(max_rel(&got[9 * k..9 * k + 9], &want, 1.0));
        }
        assert!(worst < 1e-15, "axis_rotation deviates by {worst:e}");
        println!("axis_rotation(s): max deviation {worst:e}");
    }

    #[test]
    fn rotation_gradients_match_finite_differences() {
        let w = uniform(9, -1.0, 1.0, 400);
        // f(angles) = Σ M ∘ W for rotation_xyz
        let wt = w.clone();
        let f_host = move |x: &[f64]| -> f64 {
            host(rotation_xyz(t1::<B>(x)) * t1::<B>(&wt).reshape([3, 3]))
                .iter()
                .sum()
        };
        let wt = w.clone();
        let f_ad = move |x: Tensor<Ad, 1>| (rotation_xyz(x) * t1::<Ad>(&wt).reshape([3, 3])).sum();
        let x = [0.3, -1.1, 2.0];
        let err = grad_err(&ad_gradient(&f_ad, &x), &fd_gradient(&f_host, &x, 1e-6, 1.0), 1.0);
        assert!(err < 1e-8, "rotation_xyz gradient error {err:e}");
        println!("rotation_xyz gradient: error {err:e}");

        // g(axis, angle) = Σ R ∘ W for axis_rotation, x = [u0, u1, u2, φ] (axis not renormalised)
        let wt = w.clone();
        let g_host = move |x: &[f64]| -> f64 {
            let r = axis_rotation(t1::<B>(&x[0..3]), t1::<B>(&x[3..4]));
            host(r * t1::<B>(&wt).reshape([3, 3])).iter().sum()
        };
        let g_ad = move |x: Tensor<Ad, 1>| {
            let r = axis_rotation(x.clone().narrow(0, 0, 3), x.narrow(0, 3, 1));
            (r * t1::<Ad>(&w).reshape([3, 3])).sum()
        };
        let x = [0.48, -0.6, 0.64, 0.7];
        let err = grad_err(&ad_gradient(&g_ad, &x), &fd_gradient(&g_host, &x, 1e-6, 1.0), 1.0);
        assert!(err < 1e-8, "axis_rotation gradient error {err:e}");
        println!("axis_rotation gradient: error {err:e}");
    }
}
