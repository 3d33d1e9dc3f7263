//! The crystal lattice as tensors: [`CrystalLattice::new`] from the cell parameters and the
//! misset angles, so that gradients reach the cell and the orientation.
//!
//! Parameter → geometry map (units):
//! `cell` `[6]` = (a, b, c in Å; α, β, γ in rad) → reciprocal vectors in C's default orientation
//! (Å⁻¹) and the volume V (Å³) → (optionally replaced by the `-mat` reciprocal vectors) →
//! rotated by the misset `[3]` (rad, Rz·Ry·Rx) → direct vectors from cross products (rescaled
//! to the user cell's lengths a/V, b/V, c/V when a cell is given) → regenerated reciprocal
//! vectors (Å⁻¹) and direct vectors × 1e-10 (m).
//!
//! [`CrystalLattice::new`]: crate::experiment::crystal::CrystalLattice::new

use super::rotation::rotation_xyz;
use super::{components, const_vec3, cross3, dot3, mat_vec3, norm3};
use crate::base::trig::{cos, sin};
use crate::base::vec3::Vec3;
use burn::tensor::{backend::Backend, Tensor};

/// Direct and reciprocal vectors of the lattice at φ = 0, no mosaic rotation.
#[derive(Debug, Clone)]
pub struct LatticeTensors<B: Backend> {
    /// Direct vectors a, b, c, `[3]` each (m).
    pub a: Tensor<B, 1>,
    pub b: Tensor<B, 1>,
    pub c: Tensor<B, 1>,
    /// Reciprocal vectors a*, b*, c*, `[3]` each (Å⁻¹), misset applied.
    pub a_star: Tensor<B, 1>,
    pub b_star: Tensor<B, 1>,
    pub c_star: Tensor<B, 1>,
    /// Cell volume V = 1/V*, `[1]` (Å³): the cell's when one is given, else that of the
    /// matrix's reciprocal vectors.
    pub volume: Tensor<B, 1>,
}

/// Reciprocal vectors a*, b*, c* (`[3]` each, Å⁻¹) of the cell `[6]` (a, b, c in Å; α, β, γ in
/// rad) in C's default orientation (a* along x, b* in the xy plane), and the volume V (`[1]`,
/// Å³), as C computes them.
///
/// C's clamps are left out, all inactive for a cell that exists (angles in (0, π) with
/// α + β + γ < 2π and each angle below the sum of the other two), which the host setup checks
/// before (`experiment::crystal::cell_problem`): V ≤ 0 → MIN_POSITIVE, non-positive reciprocal
/// lengths → |x|, cos α*, cos β*, cos γ* with x² > 1 → 1 and sin γ* clamped to [−1, 1].
pub fn reciprocal_from_cell<B: Backend>(cell: Tensor<B, 1>) -> ([Tensor<B, 1>; 3], Tensor<B, 1>) {
    let [a, b, c] = components(&cell.clone().narrow(0, 0, 3));
    let (device, dtype) = (cell.device(), cell.dtype());
    let angles = cell.narrow(0, 3, 3);
    let [alpha, beta, gamma] = components(&angles);
    let [sin_a, sin_b, sin_g] = components(&sin(angles.clone()));
    let [cos_a, cos_b, cos_g] = components(&cos(angles.clone()));

    let s = angles.sum() / 2.0;
    let skew = (sin(s.clone()) * sin(s.clone() - alpha) * sin(s.clone() - beta) * sin(s - gamma)).abs();
    let abc = a.clone() * b.clone() * c.clone();
    let volume = abc.clone() * 2.0 * skew.sqrt();
    let v_inv = volume.clone().recip();

    let a_s = b.clone() * c.clone() * sin_a.clone() * v_inv.clone();
    let b_s = c.clone() * a.clone() * sin_b.clone() * v_inv.clone();
    let c_s = a * b * sin_g.clone() * v_inv.clone();
    let cos_as = (cos_b.clone() * cos_g.clone() - cos_a.clone()) / (sin_b.clone() * sin_g.clone());
    let cos_bs = (cos_g.clone() * cos_a.clone() - cos_b.clone()) / (sin_g * sin_a.clone());
    let cos_gs = (cos_a * cos_b - cos_g) / (sin_a * sin_b);
    let sin_gs = c * v_inv / (a_s.clone() * b_s.clone());

    let zero = Tensor::<B, 1>::zeros([1], (&device, dtype));
    let a_star = Tensor::cat(vec![a_s.clone(), zero.clone(), zero.clone()], 0);
    let b_star = Tensor::cat(vec![b_s.clone() * cos_gs.clone(), b_s * sin_gs.clone(), zero], 0);
    let c_star = Tensor::cat(
        vec![
            c_s.clone() * cos_bs.clone(),
            c_s.clone() * (cos_as - cos_bs * cos_gs) / sin_gs.clone(),
            c_s * volume.clone() / (abc * sin_gs),
        ],
        0,
    );
    ([a_star, b_star, c_star], volume)
}

/// The lattice of [`CrystalLattice::new`] as tensors.
///
/// * `cell` `[6]`: a, b, c (Å), α, β, γ (rad), C's defaults already applied (b = c = a, 90°).
///   Used only when `use_cell` is true.
/// * `misset` `[3]` (rad, about x, y, z): rotates the reciprocal vectors; zeros for none. A
///   random misset is drawn by the host and arrives here as its angles.
/// * `matrix`: the `-mat` reciprocal vectors a*, b*, c* as constants (Å⁻¹, the file's columns
///   already × 1e-10/λ₀); they replace the cell's.
/// * `use_cell`: whether a cell was given; then the direct vectors are rescaled to the cell's
///   lengths and V* = 1/V (the cell's volume), as C does, even with `-mat`.
///
/// C's clamps are left out: those of [`reciprocal_from_cell`], and the guard of a zero cross
/// product in rescaling (it cannot be zero for a cell with a volume; the host setup refuses a
/// singular `-mat`).
///
/// # Panics
/// If neither a cell (`use_cell`) nor a matrix is given (the host reports that as a
/// configuration error before this point).
///
/// [`CrystalLattice::new`]: crate::experiment::crystal::CrystalLattice::new
pub fn lattice<B: Backend>(
    cell: Tensor<B, 1>,
    misset: Tensor<B, 1>,
    matrix: Option<[Vec3; 3]>,
    use_cell: bool,
) -> LatticeTensors<B> {
    assert!(
        use_cell || matrix.is_some(),
        "a unit cell is required: give -cell or -mat"
    );
    let from_cell = use_cell.then(|| reciprocal_from_cell(cell.clone()));
    let recip = match (matrix, &from_cell) {
        (Some(m), _) => m.map(|v| const_vec3(v, &misset)),
        (None, Some((r, _))) => r.clone(),
        (None, None) => unreachable!("checked above"),
    };
    let u = rotation_xyz(misset);
    let [a_s, b_s, c_s] = recip.map(|v| mat_vec3(u.clone(), v));

    let mut bc = cross3(&b_s, &c_s);
    let mut ca = cross3(&c_s, &a_s);
    let mut ab = cross3(&a_s, &b_s);
    let v_star = match &from_cell {
        Some((_, volume)) => {
            let [la, lb, lc] = components(&cell.narrow(0, 0, 3));
            bc = rescale(bc, la / volume.clone());
            ca = rescale(ca, lb / volume.clone());
            ab = rescale(ab, lc / volume.clone());
            volume.clone().recip()
        }
        None => dot3(a_s, bc.clone()),
    };
    let v_cell = v_star.clone().recip();
    let a = bc * v_cell.clone();
    let b = ca * v_cell.clone();
    let c = ab * v_cell.clone();
    LatticeTensors {
        volume: v_cell,
        a_star: cross3(&b, &c) * v_star.clone(),
        b_star: cross3(&c, &a) * v_star.clone(),
        c_star: cross3(&a, &b) * v_star,
        a: a * 1e-10,
        b: b * 1e-10,
        c: c * 1e-10,
    }
}

/// `v` `[3]` rescaled to the length `len` `[1]` (`base::vec3::rescale` without its zero guard).
fn rescale<B: Backend>(v: Tensor<B, 1>, len: Tensor<B, 1>) -> Tensor<B, 1> {
    let n = norm3(&v);
    v * (len / n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::testing::{ad_gradient, fd_gradient, grad_err, host, max_rel, t1, uniform, Ad, B};
    use burn::backend::ndarray::NdArrayDevice;

    const LAMBDA0: f64 = 1.2e-10;

    /// The reciprocal vectors (columns) of a MOSFLM matrix at [`LAMBDA0`].
    fn columns(m: [[f64; 3]; 3]) -> [Vec3; 3] {
        crate::experiment::crystal::matrix_reciprocal(&m, LAMBDA0)
    }

    /// The six vectors (direct in Å, reciprocal in Å⁻¹) of [`lattice`] in f64.
    fn vectors(cell: Option<[f64; 6]>, matrix: Option<[[f64; 3]; 3]>, misset: [f64; 3]) -> [Vec3; 6] {
        let cell_v = cell.unwrap_or([0.0; 6]);
        let l = lattice(t1::<B>(&cell_v), t1::<B>(&misset), matrix.map(columns), cell.is_some());
        let v = |t: Tensor<B, 1>, k: f64| {
            let h = host(t);
            [h[0] * k, h[1] * k, h[2] * k]
        };
        [
            v(l.a, 1e10),
            v(l.b, 1e10),
            v(l.c, 1e10),
            v(l.a_star, 1.0),
            v(l.b_star, 1.0),
            v(l.c_star, 1.0),
        ]
    }

    /// Largest deviation of `got` from `want`, relative to each vector's length.
    fn worst(got: &[Vec3], want: &[Vec3]) -> f64 {
        got.iter()
            .zip(want)
            .map(|(g, w)| max_rel(g, w, w.iter().map(|x| x * x).sum::<f64>().sqrt()))
            .fold(0.0, f64::max)
    }

    /// A MOSFLM-style matrix (Å⁻¹·λ) of some rotated triclinic cell.
    fn some_matrix(seed: u64) -> [[f64; 3]; 3] {
        let r = uniform(9, -1.0, 1.0, seed);
        let lam = LAMBDA0 * 1e10;
        [
            [0.012 * lam + 0.002 * r[0] * lam, 0.003 * r[1] * lam, 0.002 * r[2] * lam],
            [0.001 * r[3] * lam, 0.011 * lam + 0.002 * r[4] * lam, 0.003 * r[5] * lam],
            [0.002 * r[6] * lam, 0.001 * r[7] * lam, 0.010 * lam + 0.002 * r[8] * lam],
        ]
    }

    /// Independent checks of the one lattice geometry (C's printed vectors are checked in
    /// tests/integration/geometry.rs): the cell's lengths, C's default orientation (a* along x,
    /// b* in the xy plane), the misset as the host's x-y-z rotation of the unrotated lattice, and a
    /// `-mat` matrix's columns coming back as the reciprocal vectors.
    #[test]
    fn lattice_has_the_cell_orientation_and_misset() {
        let deg = |x: f64| x.to_radians();
        let mut err = 0.0f64;
        for k in 0..6 {
            let r = uniform(3, -3.1, 3.1, 10 + k);
            let misset = [r[0], r[1], r[2]];
            let l = uniform(3, 30.0, 150.0, 20 + k);
            let ang = uniform(3, 60.0, 120.0, 30 + k);
            let triclinic = [l[0], l[1], l[2], deg(ang[0]), deg(ang[1]), deg(ang[2])];
            let m = some_matrix(40 + k);
            for cell in [[l[0], l[0], l[0], deg(90.0), deg(90.0), deg(90.0)], triclinic] {
                let v0 = vectors(Some(cell), None, [0.0; 3]);
                for (i, len) in cell[..3].iter().enumerate() {
                    let n = v0[i].iter().map(|x| x * x).sum::<f64>().sqrt();
                    err = err.max((n - len).abs() / len);
                }
                err = err.max((v0[3][1].abs() + v0[3][2].abs() + v0[4][2].abs()) / v0[3][0]);
                let turned = v0.map(|v| crate::base::vec3::rotate_xyz(v, misset[0], misset[1], misset[2]));
                err = err.max(worst(&vectors(Some(cell), None, misset), &turned));
            }
            err = err.max(worst(&vectors(None, Some(m), [0.0; 3])[3..], &columns(m)));
        }
        assert!(err < 1e-13, "lattice deviates by {err:e}");
    }

    /// Σ over the six vectors of v·wᵥ (direct vectors in Å so that all terms are O(1)).
    fn weighted_sum<K: Backend<Device = NdArrayDevice>>(lat: LatticeTensors<K>, w: &[f64]) -> Tensor<K, 1> {
        let vs = [
            lat.a * 1e10,
            lat.b * 1e10,
            lat.c * 1e10,
            lat.a_star * 100.0,
            lat.b_star * 100.0,
            lat.c_star * 100.0,
        ];
        vs.into_iter()
            .enumerate()
            .map(|(i, v)| (v * t1::<K>(&w[3 * i..3 * i + 3])).sum())
            .reduce(|x, y| x + y)
            .unwrap()
    }

    #[test]
    fn lattice_gradients_match_finite_differences() {
        let w = uniform(18, -1.0, 1.0, 50);
        let m = columns(some_matrix(60));
        // x = [cell (6), misset (3)]
        let x = [70.0, 80.0, 90.0, 1.31, 1.48, 1.66, 0.1, -0.2, 0.3];
        for (matrix, use_cell) in [(None, true), (Some(m), true), (Some(m), false)] {
            let wh = w.clone();
            let f_host = move |x: &[f64]| -> f64 {
                let lat = lattice(t1::<B>(&x[0..6]), t1::<B>(&x[6..9]), matrix, use_cell);
                host(weighted_sum(lat, &wh))[0]
            };
            let wa = w.clone();
            let f_ad = move |x: Tensor<Ad, 1>| {
                let lat = lattice(x.clone().narrow(0, 0, 6), x.narrow(0, 6, 3), matrix, use_cell);
                weighted_sum(lat, &wa)
            };
            let ad = ad_gradient(&f_ad, &x);
            let fd = fd_gradient(&f_host, &x, 1e-6, 1.0);
            let scale = fd.iter().fold(0.0f64, |s, g| s.max(g.abs()));
            let err = grad_err(&ad, &fd, scale);
            assert!(
                err < 1e-7,
                "lattice gradient error {err:e} (mat {matrix:?}, cell {use_cell}): {ad:?} vs {fd:?}"
            );
            println!(
                "lattice gradient (mat {}, cell {use_cell}): error {err:e}",
                matrix.is_some()
            );
            if !use_cell {
                assert!(ad[0..6].iter().all(|&g| g == 0.0), "the cell is unused with -mat alone");
            }
        }
    }
}
