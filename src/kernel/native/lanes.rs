//! The reverse pass's lattice factor over [`LANES`] orientation rows at once.
//!
//! One term's lattice-sum partials ([`adjoint::sincg`]) are a long chain of dependent
//! operations (a sine and a cosine polynomial, a division, Chebyshev's recurrence), and one
//! term of the reverse pass is too large for the processor to start the next term's chain
//! while it waits. Here each step runs across the lanes before the next step, so `LANES`
//! independent chains overlap (and the compiler may pack them into vector registers). Every
//! lane computes exactly [`adjoint::sincg`]'s and [`adjoint::lattice_factor`]'s operations in
//! their order: the same bits (tested).

use super::adjoint::{self, LatticePartials};
use super::inputs::{Params, Row, V3};
use super::pixel::miller_index;
use super::real::{taylor_tail, Real};
use crate::base::series::{COS_TAYLOR, SINCG_EPS, SIN_TAYLOR};
use crate::kernel::job::Switches;
use std::f64::consts::PI;

/// Orientation rows evaluated together.
pub const LANES: usize = 4;

/// `g(l)` of each of `L` lanes in order, always inlined (as [`std::array::from_fn`]), so that
/// a step across the lanes compiles with its caller's vector instructions. One loop over all
/// `L` lanes (not a first lane apart): the compiler makes it whole vectors.
#[inline(always)]
pub fn each<T: Copy + Default, const L: usize>(mut g: impl FnMut(usize) -> T) -> [T; L] {
    let mut lanes = [T::default(); L];
    for (l, lane) in lanes.iter_mut().enumerate() {
        *lane = g(l);
    }
    lanes
}

/// The Miller indices of direction `d` in each of `rows` (at most [`LANES`]); lanes past the
/// rows repeat the last row.
#[inline]
pub fn miller_indices(rows: &[Row<f64>], d: V3<f64>) -> [V3<f64>; LANES] {
    std::array::from_fn(|l| miller_index(&rows[l.min(rows.len() - 1)], d))
}

/// [`adjoint::lattice_factor`] of the first `rows` lanes' (h, k, l): SQUARE across the lanes
/// step by step when every lane holds a row, else (and for the other shapes) one lane at a
/// time; lanes past `rows` are left at zero.
#[inline]
pub fn lattice_factors(
    p: &Params<f64>,
    hkl: &[V3<f64>; LANES],
    rows: usize,
    sw: &Switches,
) -> [LatticePartials; LANES] {
    if !sw.square || rows < LANES {
        return std::array::from_fn(|l| match l < rows {
            true => adjoint::lattice_factor(p, hkl[l], sw),
            false => LatticePartials::default(),
        });
    }
    let [a, b, c] = [0, 1, 2].map(|v| sincg(hkl.map(|q| q[v]), p.n[v]));
    std::array::from_fn(|l| LatticePartials {
        value: a.0[l] * b.0[l] * c.0[l],
        d_hkl: [
            a.1[l] * b.0[l] * c.0[l],
            a.0[l] * b.1[l] * c.0[l],
            a.0[l] * b.0[l] * c.1[l],
        ],
        d_n: [
            a.2[l] * b.0[l] * c.0[l],
            a.0[l] * b.2[l] * c.0[l],
            a.0[l] * b.0[l] * c.2[l],
        ],
        ..LatticePartials::default()
    })
}

/// [`adjoint::sincg`] of each of `L` lanes' `h` for one N: (value, ∂/∂h, ∂/∂N) per lane.
#[inline(always)]
pub fn sincg<const L: usize>(h: [f64; L], n: f64) -> ([f64; L], [f64; L], [f64; L]) {
    if !super::pixel::on_recurrence(n) {
        return sincg_by_sines(h, n);
    }
    let delta: [f64; L] = each(|l| h[l] - Real::floor(h[l] + 0.5));
    let x: [f64; L] = each(|l| delta[l] * PI);
    let x2: [f64; L] = each(|l| x[l] * x[l]);
    // sin_pi_small and cos_pi_small, lane by lane (each lane's sum is short chains of
    // independent products: the compiler packs the lanes into vectors)
    let sin_sum: [f64; L] = each(|l| taylor_tail(&SIN_TAYLOR, x2[l]));
    let cos_sum: [f64; L] = each(|l| taylor_tail(&COS_TAYLOR, x2[l]));
    let sin_x: [f64; L] = each(|l| x[l] + x[l] * x2[l] * sin_sum[l]);
    let cos_x: [f64; L] = each(|l| cos_sum[l] * x2[l] + COS_TAYLOR[0]);
    let over_sin: [f64; L] = each(|l| 1.0 / sin_x[l]);
    let (below, at) = chebyshev_u(cos_x, n as usize);
    let cos_nx: [f64; L] = each(|l| at[l] - cos_x[l] * below[l]);
    // both partials in every lane, then N, 0 and 1 chosen at a node: a select between values
    // already computed keeps the lanes in vectors, where a partial computed inside the choice
    // becomes a branch per lane, in scalar code
    let d_h: [f64; L] = each(|l| PI * (n * cos_nx[l] - below[l] * cos_x[l]) * over_sin[l]);
    let d_n: [f64; L] = each(|l| x[l] * cos_nx[l] * over_sin[l]);
    let node: [bool; L] = each(|l| delta[l].abs() < SINCG_EPS);
    (
        each(|l| if node[l] { n } else { below[l] }),
        each(|l| if node[l] { 0.0 } else { d_h[l] }),
        each(|l| if node[l] { 1.0 } else { d_n[l] }),
    )
}

/// [`adjoint::sincg`] of each lane, by the platform's sines (N off Chebyshev's recurrence).
/// Out of line: inlined, its lane-by-lane results would meet the recurrence's in the caller,
/// and the compiler would then pack neither path's lanes into whole vectors.
#[inline(never)]
fn sincg_by_sines<const L: usize>(h: [f64; L], n: f64) -> ([f64; L], [f64; L], [f64; L]) {
    let one: [(f64, f64, f64); L] = each(|l| adjoint::sincg(h[l], n));
    (each(|l| one[l].0), each(|l| one[l].1), each(|l| one[l].2))
}

/// (U_{k−1}(c), U_k(c)) per lane (k ≥ 0): [`super::pixel::chebyshev_u`]'s operations in its
/// order, each step across the lanes.
#[inline(always)]
pub fn chebyshev_u<F: Real, const L: usize>(c: [F; L], k: usize) -> ([F; L], [F; L]) {
    let two_c: [F; L] = each(|l| c[l] + c[l]);
    let (mut below, mut at) = ([F::ZERO; L], [F::ONE; L]);
    for _ in 0..k {
        for l in 0..L {
            (below[l], at[l]) = (at[l], two_c[l] * at[l] - below[l]);
        }
    }
    (below, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane's partials are the scalar helper's, bit for bit: at and near nodes, for whole
    /// N on the recurrence and fractional N on the platform's sines.
    #[test]
    fn lanes_are_the_scalar_sincg_bits() {
        let hs = [
            [0.3, 7.123, -2.49, 4.0003],
            [2.0, -3.0, 0.5, -0.5],
            [1e-12, 5.0 + 1e-11, 0.25, 12.75],
        ];
        for n in [1.0, 2.0, 5.0, 7.0, 32.0, 2.5, 40.0] {
            for h in hs {
                let lanes = sincg(h, n);
                for (l, &h) in h.iter().enumerate() {
                    let one = adjoint::sincg(h, n);
                    let got = (lanes.0[l], lanes.1[l], lanes.2[l]);
                    assert_eq!(got.0.to_bits(), one.0.to_bits(), "value at h {h} N {n}");
                    assert_eq!(got.1.to_bits(), one.1.to_bits(), "∂/∂h at h {h} N {n}");
                    assert_eq!(got.2.to_bits(), one.2.to_bits(), "∂/∂N at h {h} N {n}");
                }
            }
        }
    }
}
