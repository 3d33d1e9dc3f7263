//! Scattering geometry (the tensor stages' `physics::scattering`): the fractional Miller
//! indices of a direction and sin θ/λ, which `-dmin` compares with its limit.

use super::vectors::{dot, load3, scaled, sum3, Vec3};
use crate::kernel::layout::*;
use cubecl::prelude::*;

/// The fractional Miller index along axis `v` of orientation row `row`: d·(a/λ) − a·i/λ.
#[cube]
pub(crate) fn miller_index(orientations: &Array<f32>, row: usize, v: usize, d: Vec3) -> f32 {
    dot(d, load3(orientations, row + 3 * v)) - orientations[row + OFFSET + v]
}

/// sin θ/λ = |d − i|/(2λ) (m⁻¹): the difference of unit vectors, not √(2 − 2 cos 2θ), so small
/// angles keep their digits.
#[cube]
pub(crate) fn stol(d: Vec3, incident: Vec3, inv_lambda: f32) -> f32 {
    let q = sum3(d, scaled(incident, -1.0));
    0.5 * inv_lambda * (dot(q, q)).sqrt()
}

/// Whether source row `row` keeps the sample along `d` (`-dmin`).
#[cube]
pub(crate) fn kept(params: &Array<f32>, sources: &Array<f32>, row: usize, d: Vec3, #[comptime] dmin: bool) -> bool {
    let mut keep = true;
    if dmin {
        keep = stol(d, load3(sources, row + INCIDENT), sources[row + INV_LAMBDA]) <= params[STOL_MAX];
    }
    keep
}
