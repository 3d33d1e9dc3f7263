//! The polarization factor (Kahn's; the tensor stages' `physics::polarization`), with its
//! adjoint.

use super::detector::{push_direction, Ray};
use super::vectors::{cross, dot, load3, Vec3};
use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use cubecl::prelude::*;

/// Kahn's factor ½(1 + cos²2θ − K·cos 2ψ·sin²2θ), cos 2ψ = (e² − b²)/(e² + b²) (1 along the
/// beam) with e, b the projections of d on E_in, B_in; sin²2θ = |d × i|².
#[cube]
pub(crate) fn kahn_factor(sources: &Array<f32>, row: usize, d: Vec3, kahn: f32) -> f32 {
    let incident = load3(sources, row + INCIDENT);
    let cos2t = dot(d, incident);
    let across = cross(d, incident);
    let sin2 = dot(across, across);
    let e = dot(d, load3(sources, row + E_IN));
    let b = dot(d, load3(sources, row + B_IN));
    let denom = e * e + b * b;
    let mut cos_two_psi = 1.0;
    if denom != 0.0 {
        cos_two_psi = (e * e - b * b) / denom;
    }
    0.5 * (1.0 + cos2t * cos2t - kahn * cos_two_psi * sin2)
}

/// The adjoint of [`kahn_factor`] of source row `row` at `ray` for cotangent `g`: K and
/// the direction. sin²2θ = |d × i|² as the forward kernel (1 − cos²2θ loses its digits at
/// small angles in f32, and ∂/∂K sums it with both signs of cos 2ψ over the detector); the
/// part of ∂/∂d along i enters as its component across d, (d × i) × d, for the same reason.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn kahn_factor_adjoint(
    sources: &Array<f32>,
    params: &Array<f32>,
    acc: &mut Array<f32>,
    row: usize,
    ray: Ray,
    g: f32,
    #[comptime] sw: Switches,
) {
    let d = ray.d;
    let incident = load3(sources, row + INCIDENT);
    let e_in = load3(sources, row + E_IN);
    let b_in = load3(sources, row + B_IN);
    let kahn = params[KAHN];
    let cos2t = dot(d, incident);
    let across = cross(d, incident);
    let sin2 = dot(across, across);
    let e = dot(d, e_in);
    let b = dot(d, b_in);
    let denom = e * e + b * b;
    let mut cos_two_psi = 1.0;
    let mut d_e = 0.0;
    let mut d_b = 0.0;
    if denom != 0.0 {
        cos_two_psi = (e * e - b * b) / denom;
        d_e = 4.0 * e * b * b / (denom * denom);
        d_b = -4.0 * b * e * e / (denom * denom);
    }
    acc[G_KAHN] += g * (-0.5 * cos_two_psi * sin2);
    // ∂P/∂d = cos2θ·(1 + K·cos2ψ)·i − ½K·sin²2θ·(∂cos2ψ/∂e·E + ∂cos2ψ/∂b·B), with sin²2θ as
    // 1 − cos²2θ (its gradient along d is projected away anyway)
    let along_i = g * cos2t * (1.0 + kahn * cos_two_psi);
    let i_across_d = cross(across, d);
    let frame = -0.5 * g * kahn * sin2;
    let g_d = Vec3 {
        x: along_i * i_across_d.x + frame * (d_e * e_in.x + d_b * b_in.x),
        y: along_i * i_across_d.y + frame * (d_e * e_in.y + d_b * b_in.y),
        z: along_i * i_across_d.z + frame * (d_e * e_in.z + d_b * b_in.z),
    };
    push_direction(params, acc, ray, g_d, sw.curved);
}
