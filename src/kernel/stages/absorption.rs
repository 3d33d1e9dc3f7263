//! The sensor's absorption (the tensor stages' `physics::detector::capture_fraction`): the
//! fraction of the photons a layer captures, with its adjoint.

use super::detector::{push_direction, Ray};
use super::vectors::{add3, dot, load3, scaled};
use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use cubecl::prelude::*;

/// Fraction absorbed in layer t: exp(−t·Δzμ/ρ) − exp(−(t+1)·Δzμ/ρ), parallax ρ = d·o.
#[cube]
pub(crate) fn capture_fraction(params: &Array<f32>, parallax: f32, layer: f32) -> f32 {
    let k = -params[STEP_MU] / parallax;
    (layer * k).exp() - ((layer + 1.0) * k).exp()
}

/// The adjoint of [`capture_fraction`] in layer `layer` at `ray` for cotangent `g`: the
/// parallax ρ = d·o reads o (the scene's `odet_col`) and d.
#[cube]
pub fn capture_fraction_adjoint(
    params: &Array<f32>,
    acc: &mut Array<f32>,
    ray: Ray,
    layer: f32,
    g: f32,
    #[comptime] sw: Switches,
) {
    let odet = load3(params, ODET);
    let parallax = dot(ray.d, odet);
    let step_mu = params[STEP_MU];
    let k = -step_mu / parallax;
    // C = e^{tk} − e^{(t+1)k}, ∂k/∂ρ = Δzμ/ρ²
    let dk = layer * (layer * k).exp() - (layer + 1.0) * ((layer + 1.0) * k).exp();
    let g_parallax = g * dk * step_mu / (parallax * parallax);
    add3(acc, G_ODET_COL, scaled(ray.d, g_parallax));
    push_direction(params, acc, ray, scaled(odet, g_parallax), sw.curved);
}
