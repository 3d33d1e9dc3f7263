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
    use crate::kernel::adjoint::zero;
    use crate::kernel::testing::{launch_with_params, ray_from_pix0, store_globals, unit_directions};
    use crate::physics::polarization as stage;
    use burn::tensor::{Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;

    /// The air path of the adjoint test's rays (m): pix0 = R·d, the ray's detector
    /// coordinates 0.
    const R: f64 = 0.1;

    /// Each direction's adjoint of the Kahn factor for cotangent 1, into its own
    /// [`G_GLOBALS`] accumulators: `input` is the source row, K at [`SOURCE_WIDTH`], then the
    /// directions.
    #[cube(launch)]
    fn kahn_adjoint_of_directions(
        params: &Array<f32>,
        input: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] sw: Switches,
    ) {
        let i = ABSOLUTE_POS;
        if (i + 1) * G_GLOBALS <= output.len() {
            let mut acc = Array::<f32>::new(G_GLOBALS);
            zero(&mut acc, G_GLOBALS);
            let ray = ray_from_pix0(load3(input, SOURCE_WIDTH + 1 + 3 * i), params[PARAMS]);
            kahn_factor_adjoint(input, params, &mut acc, 0, ray, 1.0, sw);
            store_globals(&acc, output, i);
        }
    }

    #[cube(launch)]
    fn kahn_of_directions(sources: &Array<f32>, directions: &Array<f32>, output: &mut Array<f32>) {
        let i = ABSOLUTE_POS;
        if i < output.len() {
            let d = load3(directions, i * 3);
            output[i] = kahn_factor(sources, 0, d, sources[SOURCE_WIDTH]);
        }
    }

    /// The beam's own direction, then unit directions all around (f32 values).
    fn directions(incident: [f64; 3]) -> Vec<[f64; 3]> {
        let incident = incident.map(|x| f64::from(x as f32));
        std::iter::once(incident)
            .chain(unit_directions(2024))
            .take(4000)
            .collect()
    }

    /// A source row (the beam's direction, E_in, B_in), then K at [`SOURCE_WIDTH`].
    fn source_row([incident, e_in, b_in]: [[f64; 3]; 3], kahn: f64) -> Vec<f32> {
        let mut row = vec![0.0f32; SOURCE_WIDTH + 1];
        for k in 0..3 {
            row[INCIDENT + k] = incident[k] as f32;
            row[E_IN + k] = e_in[k] as f32;
            row[B_IN + k] = b_in[k] as f32;
        }
        row[SOURCE_WIDTH] = kahn as f32;
        row
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
            let sources = source_row([incident, e_in, b_in], kahn);
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

    /// The kernel's adjoint (the vector–Jacobian kernels') against burn-autodiff of the
    /// tensor stage in f64, with d = pix0/|pix0|: ∂P/∂K and ∂P/∂pix0 (the direction's
    /// cotangent pushed back to the detector), for directions all around the sample.
    #[test]
    fn kahn_adjoint_matches_autodiff_of_the_tensor_stage() {
        use crate::diff::testing::Ad;
        let s = 0.6f64;
        let (incident, e_in, b_in) = ([0.8, s, 0.0], [-s, 0.8, 0.0], [0.0, 0.0, 1.0]);
        // away from the beam axis, where cos 2ψ's 0/0 makes ∂/∂d undefined
        let dirs: Vec<[f64; 3]> = directions(incident).into_iter().skip(1).take(500).collect();
        let sw = Switches {
            polar: true,
            ..crate::kernel::native::pixel::tests_support::switches()
        };
        for kahn in [0.0f64, 0.5, 1.0, -1.0] {
            let mut params = vec![0.0f32; PARAMS + 1];
            params[KAHN] = kahn as f32;
            params[PARAMS] = R as f32;
            let mut input = source_row([incident, e_in, b_in], kahn);
            input.extend(dirs.iter().flatten().map(|&x| x as f32));
            let out = G_GLOBALS * dirs.len();
            let Some(got) = launch_with_params(&params, &input, out, dirs.len(), |c, count, dim, p, i, o| {
                kahn_adjoint_of_directions::launch::<WgpuRuntime>(c, count, dim, p, i, o, sw)
            }) else {
                return;
            };
            // the reference: P(d(pix0), K) on burn-autodiff, one row a direction
            let n = dirs.len();
            let pix0 = Tensor::<Ad, 2>::from_data(
                TensorData::new(dirs.iter().flatten().map(|&x| x * R).collect::<Vec<_>>(), [n, 3]),
                &dev(),
            )
            .require_grad();
            let k = Tensor::<Ad, 2>::from_data(TensorData::new(vec![kahn; n], [n, 1]), &dev()).require_grad();
            let d = pix0.clone() / pix0.clone().powi_scalar(2).sum_dim(1).sqrt();
            let along = |v: [f64; 3]| {
                let v = Tensor::<Ad, 2>::from_data(TensorData::new(v.to_vec(), [3, 1]), &dev());
                d.clone().matmul(v)
            };
            let p = stage::kahn_factor_tensor(along(incident), along(e_in), along(b_in), k.clone());
            let grads = p.sum().backward();
            let read =
                |t: Option<Tensor<B, 2>>| -> Vec<f64> { t.unwrap().into_data().convert::<f64>().to_vec().unwrap() };
            let (g_k, g_pix0) = (read(k.grad(&grads)), read(pix0.grad(&grads)));
            // P's slopes are O(1) in K and O(1/R) in pix0; f32 roundings of unit vectors
            for (i, acc) in got.chunks(G_GLOBALS).enumerate() {
                let err_k = (f64::from(acc[G_KAHN]) - g_k[i]).abs();
                assert!(
                    err_k <= 2e-6,
                    "K = {kahn}, direction {i}: ∂P/∂K {} vs {}",
                    acc[G_KAHN],
                    g_k[i]
                );
                for a in 0..3 {
                    let (g, w) = (f64::from(acc[G_PIX0 + a]), g_pix0[3 * i + a]);
                    assert!(
                        (g - w).abs() <= 2e-5 / R,
                        "K = {kahn}, direction {i}: ∂P/∂pix0[{a}] {g} vs {w}"
                    );
                }
            }
        }
    }
}
