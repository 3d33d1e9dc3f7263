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

#[cfg(test)]
mod tests {
    //! The kernel's Kahn factor on the wgpu device (llvmpipe without a GPU) against the tensor
    //! stage `physics::polarization::kahn_factor` in f64, for directions all around the sample
    //! (along the beam included) and K from −1 to 1.
    use super::*;
    use crate::diff::testing::{dev, B};
    use crate::kernel::testing::launch_with_params;
    use crate::physics::polarization as stage;
    use burn::tensor::{Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;

    #[cube(launch)]
    fn kahn_of_directions(sources: &Array<f32>, directions: &Array<f32>, output: &mut Array<f32>) {
        let i = ABSOLUTE_POS;
        if i < output.len() {
            let d = load3(directions, i * 3);
            output[i] = kahn_factor(sources, 0, d, sources[SOURCE_WIDTH]);
        }
    }

    /// Unit directions from a fixed-seed generator, and the beam's own direction.
    fn directions(incident: [f64; 3]) -> Vec<[f64; 3]> {
        let mut state = 2024u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let mut out = vec![incident];
        while out.len() < 4000 {
            let v = [next(), next(), next()];
            let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            if n > 0.1 && n <= 1.0 {
                out.push([v[0] / n, v[1] / n, v[2] / n]);
            }
        }
        // rounded to f32 first: the reference sees the kernel's inputs
        out.iter().map(|v| v.map(|x| f64::from(x as f32))).collect()
    }

    #[test]
    fn kahn_factor_matches_the_tensor_stage() {
        // a tilted beam with its E and B axes (unit, perpendicular)
        let s = 0.6f64;
        let incident = [0.8, s, 0.0];
        let e_in = [-s, 0.8, 0.0];
        let b_in = [0.0, 0.0, 1.0];
        let dirs = directions(incident);
        let flat: Vec<f32> = dirs.iter().flatten().map(|&x| x as f32).collect();
        let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let column = |v: [f64; 3]| {
            let values: Vec<f64> = dirs.iter().map(|&d| dot(d, v)).collect();
            Tensor::<B, 2>::from_data(TensorData::new(values, [dirs.len(), 1]), &dev())
        };
        for kahn in [0.0f64, 0.5, 1.0, -1.0] {
            let mut sources = vec![0.0f32; SOURCE_WIDTH + 1];
            for k in 0..3 {
                sources[INCIDENT + k] = incident[k] as f32;
                sources[E_IN + k] = e_in[k] as f32;
                sources[B_IN + k] = b_in[k] as f32;
            }
            sources[SOURCE_WIDTH] = kahn as f32;
            let Some(got) = launch_with_params(&sources, &flat, dirs.len(), dirs.len(), |c, count, dim, p, i, o| {
                kahn_of_directions::launch::<WgpuRuntime>(c, count, dim, p, i, o)
            }) else {
                return;
            };
            let want = stage::kahn_factor(column(incident), column(e_in), column(b_in), kahn);
            let want: Vec<f64> = want.into_data().convert::<f64>().to_vec().unwrap();
            let worst = got
                .iter()
                .zip(&want)
                .map(|(&g, &w)| (f64::from(g) - w).abs())
                .fold(0.0, f64::max);
            // P ∈ [0, 1]: a few f32 roundings of products of unit vectors
            assert!(worst <= 2e-6, "K = {kahn}: worst |kernel − stage| {worst:e}");
            assert!((f64::from(got[0]) - 1.0).abs() <= 1e-6, "along the beam P = {}", got[0]);
        }
    }
}
