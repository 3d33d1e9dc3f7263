//! Mosaic domains as tensors: the random axes and cap factors are drawn on the host with C's
//! generator (they are not differentiable), the rotation angle `spread·scale` is a tensor, so
//! that gradients reach the mosaic spread.
//!
//! Parameter → geometry map: `spread` `[1]` (rad) → angles `spread·scaleₘ` → `Uₘ =
//! Rodrigues(axisₘ, spread·scaleₘ)` `[M, 3, 3]`, as [`rng::mosaic_rotation`] builds them.
//!
//! The one difference from the host: C (and [`rng::mosaic_rotation`]) computes the angle
//! `mosaicity·(1−r₃²)^(1/3)` in single precision (`mosaicity` is a C `float`), here it is the f64
//! product of the f64 spread and the f32 cap factor. The angles therefore differ by up to
//! ~2⁻²³ relative (about 1.2e-7·|angle|) and the matrix entries by at most that much absolute.
//!
//! [`rng::mosaic_rotation`]: crate::base::rng::mosaic_rotation

use super::host;
use super::rotation::axis_rotations;
use crate::base::rng::Ran1;
use crate::base::vec3::Mat3;
use crate::base::vec3::Vec3;
use burn::tensor::{backend::Backend, Tensor};

/// Mosaic rotation matrices `Uₘ` `[M, 3, 3]` about the unit `axes` `[M, 3]` by the angles
/// `spread·scales` (`spread` `[1]` in rad, `scales` `[M]` dimensionless cap factors
/// `(1−r₃²)^(1/3)` from [`mosaic_axes`]).
pub fn mosaic_rotations<B: Backend>(axes: Tensor<B, 2>, scales: Tensor<B, 1>, spread: Tensor<B, 1>) -> Tensor<B, 3> {
    axis_rotations(axes, scales * spread)
}

/// The `domains` mosaic rotation matrices `Uₘ` (row-major) of a spread of `spread` (rad), drawn
/// with `-mosaic_seed` `seed`: [`mosaic_rotations`] of [`mosaic_axes`], evaluated in f64 on the
/// host. Domain 0, and every domain when `spread` is not positive, is the identity.
pub fn mosaic_matrices(spread: f64, domains: usize, seed: i64) -> Vec<Mat3> {
    let (axes, scales) = mosaic_axes(spread > 0.0, domains, seed);
    let axes = host::matrix(axes.concat(), [domains, 3]);
    let u = mosaic_rotations(axes, host::vector(&scales), host::vector(&[spread]));
    host::values(u)
        .chunks_exact(9)
        .map(|m| [[m[0], m[1], m[2]], [m[3], m[4], m[5]], [m[6], m[7], m[8]]])
        .collect()
}

/// The axes (unit, lab frame) and cap factors of `domains` mosaic domains, drawn with C's
/// `ran1` seeded with `-seed` (`seed` = the user's `-mosaic_seed`), three deviates per domain in
/// C's order: r₁, r₂, r₃ ∈ (−1, 1); axis = (√(1−r₂²)·sin πr₁, √(1−r₂²)·cos πr₁, r₂);
/// factor = (1−r₃²)^(1/3) in single precision, as C.
///
/// Domain 0 is the unrotated crystal (factor 0, its draws are still consumed), and every domain
/// is unrotated (factor 0) unless `spread_is_positive`, as the host uses the identity then.
pub fn mosaic_axes(spread_is_positive: bool, domains: usize, seed: i64) -> (Vec<Vec3>, Vec<f64>) {
    let mut rng = Ran1::new(-seed);
    (0..domains)
        .map(|m| {
            let (axis, factor) = draw_domain(&mut rng);
            let rotated = spread_is_positive && m > 0;
            (axis, if rotated { factor } else { 0.0 })
        })
        .unzip()
}

/// One domain's axis and cap factor, consuming three deviates (as `rng::mosaic_rotation`).
fn draw_domain(rng: &mut Ran1) -> (Vec3, f64) {
    let r1 = 2.0 * rng.next_f32() as f64 - 1.0;
    let r2 = 2.0 * rng.next_f32() as f64 - 1.0;
    let r3 = 2.0 * rng.next_f32() as f64 - 1.0;
    let xyrad = (1.0 - r2 * r2).sqrt();
    let (s, c) = (std::f64::consts::PI * r1).sin_cos();
    let factor = ((1.0 - r3 * r3) as f32).powf((1.0f64 / 3.0) as f32) as f64;
    ([xyrad * s, xyrad * c, r2], factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::rng::mosaic_rotation;
    use crate::base::vec3::IDENTITY;
    use crate::diff::testing::{ad_gradient, fd_gradient, grad_err, host, t1, uniform, Ad, B};

    /// The host's mosaic matrices for `domains` domains (domain 0 the identity).
    fn host_umats(spread: f64, domains: usize, seed: i64) -> Vec<f64> {
        let mut rng = Ran1::new(-seed);
        (0..domains)
            .flat_map(|m| {
                let u = mosaic_rotation(spread, &mut rng);
                let u = if m == 0 || spread <= 0.0 { IDENTITY } else { u };
                u.into_iter().flatten()
            })
            .collect()
    }

    fn tensor_umats(spread: f64, domains: usize, seed: i64) -> Vec<f64> {
        let (axes, scales) = mosaic_axes(spread > 0.0, domains, seed);
        let flat: Vec<f64> = axes.iter().flatten().copied().collect();
        let u = mosaic_rotations(
            t1::<B>(&flat).reshape([domains, 3]),
            t1::<B>(&scales),
            t1::<B>(&[spread]),
        );
        assert_eq!(u.dims(), [domains, 3, 3]);
        host(u)
    }

    #[test]
    fn mosaic_rotations_match_host() {
        for (spread, seed) in [
            (0.5f64.to_radians(), 1234),
            (2f64.to_radians(), -77),
            (0.05, 9),
            (1.5, 42),
        ] {
            let (want, got) = (host_umats(spread, 40, seed), tensor_umats(spread, 40, seed));
            let err = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            // the host's angle is an f32 product: |Δangle| ≤ ~1.2e-7·spread
            assert!(err <= 1.2e-7 * spread, "spread {spread}: max |ΔU| = {err:e}");
            println!(
                "mosaic spread {spread}: max |ΔU| = {err:e} = {:.3e}·spread",
                err / spread
            );
            // the unrotated domain is exact
            assert_eq!(&got[0..9], &want[0..9]);
        }
        // with the host's own f32 angles the matrices agree to rounding: the axes are C's
        let (spread, seed) = (0.7, 4321);
        let (axes, factors) = mosaic_axes(true, 20, seed);
        let angles: Vec<f64> = factors.iter().map(|&f| ((spread as f32) * (f as f32)) as f64).collect();
        let flat: Vec<f64> = axes.iter().flatten().copied().collect();
        let got = host(mosaic_rotations(
            t1::<B>(&flat).reshape([20, 3]),
            t1::<B>(&angles),
            t1::<B>(&[1.0]),
        ));
        let want = host_umats(spread, 20, seed);
        let err = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(err < 1e-15, "with f32 angles: max |ΔU| = {err:e}");
        println!("mosaic with the host's f32 angles: max |ΔU| = {err:e}");
        // no spread: every domain is the identity
        assert_eq!(tensor_umats(0.0, 3, 5), host_umats(0.0, 3, 5));
    }

    #[test]
    fn mosaic_axes_are_unit_and_factors_bounded() {
        let (axes, scales) = mosaic_axes(true, 50, 31);
        for (a, s) in axes.iter().zip(&scales) {
            let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
            assert!((n - 1.0).abs() < 1e-14);
            assert!((0.0..=1.0).contains(s));
        }
        assert_eq!(scales[0], 0.0);
    }

    #[test]
    fn spread_gradient_matches_finite_differences() {
        let (axes, scales) = mosaic_axes(true, 6, 2024);
        let flat: Vec<f64> = axes.iter().flatten().copied().collect();
        let w = uniform(54, -1.0, 1.0, 7);
        let (fh, sh, wh) = (flat.clone(), scales.clone(), w.clone());
        let f_host = move |x: &[f64]| -> f64 {
            let u = mosaic_rotations(t1::<B>(&fh).reshape([6, 3]), t1::<B>(&sh), t1::<B>(x));
            host(u * t1::<B>(&wh).reshape([6, 3, 3])).iter().sum()
        };
        let f_ad = move |x: Tensor<Ad, 1>| {
            let u = mosaic_rotations(t1::<Ad>(&flat).reshape([6, 3]), t1::<Ad>(&scales), x);
            (u * t1::<Ad>(&w).reshape([6, 3, 3])).sum()
        };
        // step 1e-4 relative (2e-6 rad): f is O(1) but its slope small, so a 1e-6 step would
        // leave ~5e-8 of rounding in the difference quotient
        let x = [0.02];
        let (ad, fd) = (ad_gradient(&f_ad, &x), fd_gradient(&f_host, &x, 1e-4, 1.0));
        let err = grad_err(&ad, &fd, 1.0);
        assert!(err < 1e-8, "spread gradient error {err:e}: {ad:?} vs {fd:?}");
        println!("mosaic spread gradient: error {err:e}");
    }
}
