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

#[cfg(test)]
mod tests {
    //! The kernel's capture fraction and its adjoint on the wgpu device (llvmpipe without a
    //! GPU) against the tensor stage `physics::detector::capture_fraction_at` in f64 and
    //! burn-autodiff of it, for directions all around the detector normal, several layers
    //! and several Δzμ.
    use super::*;
    use crate::diff::testing::{dev, Ad, B};
    use crate::kernel::adjoint::zero;
    use crate::kernel::testing::{launch_with_params, ray_from_pix0, store_globals, unit_directions};
    use crate::physics::detector as stage;
    use burn::tensor::{Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;

    /// The air path of the rays (m): pix0 = R·d, the rays' detector coordinates 0.
    const R: f64 = 0.1;
    /// The detector normal o (unit): tilted from the beam axis.
    const NORMAL: [f64; 3] = [0.8, 0.0, 0.6];
    /// The layers t whose fractions are compared.
    const LAYERS: [f64; 3] = [0.0, 1.0, 4.0];

    /// Each direction's capture fraction in layer `input[0]`; the directions follow.
    #[cube(launch)]
    fn capture_of_directions(params: &Array<f32>, input: &Array<f32>, output: &mut Array<f32>) {
        let i = ABSOLUTE_POS;
        if i < output.len() {
            let d = load3(input, 1 + 3 * i);
            output[i] = capture_fraction(params, dot(d, load3(params, ODET)), input[0]);
        }
    }

    /// Each direction's adjoint of the capture fraction in layer `input[0]` for cotangent 1,
    /// into its own [`G_GLOBALS`] accumulators.
    #[cube(launch)]
    fn capture_adjoint_of_directions(
        params: &Array<f32>,
        input: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] sw: Switches,
    ) {
        let i = ABSOLUTE_POS;
        if (i + 1) * G_GLOBALS <= output.len() {
            let mut acc = Array::<f32>::new(G_GLOBALS);
            zero(&mut acc, G_GLOBALS);
            let ray = ray_from_pix0(load3(input, 1 + 3 * i), params[PARAMS]);
            capture_fraction_adjoint(params, &mut acc, ray, input[0], 1.0, sw);
            store_globals(&acc, output, i);
        }
    }

    /// The normal, then unit directions on the detector's side (d·o from 0.2 to 1; f32
    /// values).
    fn directions() -> Vec<[f64; 3]> {
        let facing = |d: &[f64; 3]| d[0] * NORMAL[0] + d[1] * NORMAL[1] + d[2] * NORMAL[2] >= 0.2;
        let normal = NORMAL.map(|x| f64::from(x as f32));
        std::iter::once(normal)
            .chain(unit_directions(1937).filter(facing))
            .take(500)
            .collect()
    }

    /// `params` with Δzμ = `step_mu`, the normal and R at [`PARAMS`].
    fn params(step_mu: f64) -> Vec<f32> {
        let mut p = vec![0.0f32; PARAMS + 1];
        p[STEP_MU] = step_mu as f32;
        (0..3).for_each(|k| p[ODET + k] = NORMAL[k] as f32);
        p[PARAMS] = R as f32;
        p
    }

    /// The test kernels' input: the layer t, then the directions.
    fn input(layer: f64, dirs: &[[f64; 3]]) -> Vec<f32> {
        std::iter::once(layer as f32)
            .chain(dirs.iter().flatten().map(|&x| x as f32))
            .collect()
    }

    #[test]
    fn capture_fraction_matches_the_tensor_stage() {
        let dirs = directions();
        let n = dirs.len();
        let parallax: Vec<f64> = dirs.iter().map(|d| (0..3).map(|k| d[k] * NORMAL[k]).sum()).collect();
        for step_mu in [0.05f64, 0.5, 3.0] {
            for layer in LAYERS {
                let Some(got) = launch_with_params(
                    &params(step_mu),
                    &input(layer, &dirs),
                    n,
                    n,
                    capture_of_directions::launch::<WgpuRuntime>,
                ) else {
                    return;
                };
                let column = |v: Vec<f64>| Tensor::<B, 2>::from_data(TensorData::new(v, [n, 1]), &dev());
                let want = stage::capture_fraction_at(column(parallax.clone()), column(vec![layer; n]), step_mu, 1.0);
                let want: Vec<f64> = want.into_data().convert::<f64>().to_vec().unwrap();
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    // a difference of two f32 exponentials in [0, 1]
                    assert!(
                        (f64::from(g) - w).abs() <= 2e-6 * (1.0 + step_mu),
                        "Δzμ {step_mu}, layer {layer}, direction {i}: {g} vs {w}"
                    );
                }
            }
        }
    }

    /// The adjoint against burn-autodiff of the tensor stage with d = pix0/|pix0| and
    /// ρ = d·o: ∂C/∂o (the scene's `odet_col`) and ∂C/∂pix0 (the direction's cotangent pushed
    /// back to the detector).
    #[test]
    fn capture_fraction_adjoint_matches_autodiff_of_the_tensor_stage() {
        let dirs = directions();
        let n = dirs.len();
        let sw = Switches {
            sensor: true,
            ..crate::kernel::native::pixel::tests_support::switches()
        };
        for step_mu in [0.05f64, 0.5, 3.0] {
            for layer in LAYERS {
                let out = G_GLOBALS * n;
                let Some(got) = launch_with_params(
                    &params(step_mu),
                    &input(layer, &dirs),
                    out,
                    n,
                    |c, count, dim, p, i, o| {
                        capture_adjoint_of_directions::launch::<WgpuRuntime>(c, count, dim, p, i, o, sw)
                    },
                ) else {
                    return;
                };
                let pix0 = Tensor::<Ad, 2>::from_data(
                    TensorData::new(dirs.iter().flatten().map(|&x| x * R).collect::<Vec<_>>(), [n, 3]),
                    &dev(),
                )
                .require_grad();
                let normal =
                    Tensor::<Ad, 2>::from_data(TensorData::new(NORMAL.to_vec(), [3, 1]), &dev()).require_grad();
                let d = pix0.clone() / pix0.clone().powi_scalar(2).sum_dim(1).sqrt();
                let layers = Tensor::<Ad, 2>::from_data(TensorData::new(vec![layer; n], [n, 1]), &dev());
                let c = stage::capture_fraction_at(d.matmul(normal.clone()), layers, step_mu, 1.0);
                let grads = c.sum().backward();
                let read =
                    |t: Option<Tensor<B, 2>>| -> Vec<f64> { t.unwrap().into_data().convert::<f64>().to_vec().unwrap() };
                let g_pix0 = read(pix0.grad(&grads));
                let mut g_normal = [0.0f64; 3];
                for (i, acc) in got.chunks(G_GLOBALS).enumerate() {
                    for a in 0..3 {
                        g_normal[a] += f64::from(acc[G_ODET_COL + a]);
                        let (g, w) = (f64::from(acc[G_PIX0 + a]), g_pix0[3 * i + a]);
                        // C's slope in ρ is at most about Δzμ·(t + 1)/ρ²; in pix0 that over R
                        let scale = step_mu * (layer + 1.0) * 25.0 / R;
                        assert!(
                            (g - w).abs() <= 2e-6 * scale,
                            "Δzμ {step_mu}, layer {layer}, direction {i}: ∂C/∂pix0[{a}] {g} vs {w}"
                        );
                    }
                }
                // o is one vector for every direction: the kernel's per-direction parts summed
                let want = read(normal.grad(&grads));
                for a in 0..3 {
                    let scale = n as f64 * step_mu * (layer + 1.0) * 25.0;
                    assert!(
                        (g_normal[a] - want[a]).abs() <= 2e-6 * scale,
                        "Δzμ {step_mu}, layer {layer}: Σ ∂C/∂o[{a}] {} vs {}",
                        g_normal[a],
                        want[a]
                    );
                }
            }
        }
    }
}
