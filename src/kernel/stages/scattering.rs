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

#[cfg(test)]
mod tests {
    //! The kernel's fractional Miller indices and sin θ/λ on the wgpu device (llvmpipe without
    //! a GPU) against the tensor stages `physics::scattering::{miller_indices, stol}` in f64,
    //! for directions all over the sphere and a triclinic orientation row.
    use super::*;
    use crate::diff::testing::{dev, B};
    use crate::kernel::testing::{launch_with_params, unit_directions};
    use crate::physics::scattering as stage;
    use burn::tensor::{Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;

    /// One orientation row: a/λ, b/λ, c/λ (per unit direction) and the offsets a·i/λ, b·i/λ,
    /// c·i/λ, as a triclinic cell of about 60–90 Å at λ = 1.3 Å would have them.
    const ROW: [f64; ORIENTATION_WIDTH] = [46.1, -12.3, 8.7, 5.2, 58.9, -20.4, -9.8, 14.6, 66.0, 46.1, 5.2, -9.8];
    /// The incident direction i (the lab x axis turned a little; normalised in [`incident`])
    /// and 1/λ (m⁻¹).
    const TOWARDS: [f64; 3] = [0.998, 0.0447, -0.0447];
    const ONE_OVER_LAMBDA: f64 = 1.0 / 1.3e-10;

    /// The unit incident direction, rounded to f32.
    fn incident() -> [f64; 3] {
        let n = TOWARDS.iter().map(|x| x * x).sum::<f64>().sqrt();
        as_f32(TOWARDS.map(|x| x / n))
    }

    /// Each direction's h, k, l and sin θ/λ, four outputs a direction; the orientation row,
    /// then i and 1/λ, are the parameters.
    #[cube(launch)]
    fn indices_of_directions(params: &Array<f32>, input: &Array<f32>, output: &mut Array<f32>) {
        let i = ABSOLUTE_POS;
        if 4 * i + 3 < output.len() {
            let d = load3(input, 3 * i);
            for v in 0..3usize {
                output[4 * i + v] = miller_index(params, 0usize, v, d);
            }
            let incident = load3(params, ORIENTATION_WIDTH);
            output[4 * i + 3] = stol(d, incident, params[ORIENTATION_WIDTH + 3]);
        }
    }

    /// `values` rounded to f32 and back: the kernel's inputs as the f64 reference sees them.
    fn as_f32<const N: usize>(values: [f64; N]) -> [f64; N] {
        values.map(|x| f64::from(x as f32))
    }

    /// The f64 reference: h, k, l `[n]` each and sin θ/λ `[n]` of `dirs`.
    fn reference(dirs: &[[f64; 3]], row: &[f64; ORIENTATION_WIDTH], incident: [f64; 3]) -> [Vec<f64>; 4] {
        let n = dirs.len();
        let t = |v: Vec<f64>, shape: [usize; 2]| Tensor::<B, 2>::from_data(TensorData::new(v, shape), &dev());
        let d = t(dirs.iter().flatten().copied().collect(), [n, 3]);
        // coef [3, 3]: column v is the v-th axis over λ
        let coef: Vec<f64> = (0..3).flat_map(|k| (0..3).map(move |v| row[3 * v + k])).collect();
        let offset = t(row[OFFSET..OFFSET + 3].to_vec(), [1, 3]);
        let hkl = stage::miller_indices(d.clone(), t(coef, [3, 3]), offset);
        let cos2t = stage::cos_two_theta(d, t(incident.to_vec(), [3, 1]));
        let stol = stage::stol(cos2t, t(vec![f64::from(ONE_OVER_LAMBDA as f32)], [1, 1]));
        let host = |x: Tensor<B, 2>| -> Vec<f64> { x.into_data().convert::<f64>().to_vec().unwrap() };
        let [h, k, l] = hkl;
        [host(h), host(k), host(l), host(stol)]
    }

    #[test]
    fn miller_indices_and_stol_match_the_tensor_stages() {
        let dirs: Vec<[f64; 3]> = unit_directions(4099).take(600).collect();
        let (row, incident) = (as_f32(ROW), incident());
        let params: Vec<f32> = row
            .iter()
            .chain(&incident)
            .chain(&[ONE_OVER_LAMBDA])
            .map(|&x| x as f32)
            .collect();
        let input: Vec<f32> = dirs.iter().flatten().map(|&x| x as f32).collect();
        let n = dirs.len();
        let Some(got) = launch_with_params(&params, &input, 4 * n, n, indices_of_directions::launch::<WgpuRuntime>)
        else {
            return;
        };
        let want = reference(&dirs, &row, incident);
        for (i, d) in dirs.iter().enumerate() {
            for v in 0..3 {
                // an f32 dot product of three terms and a difference: a few ulps of the
                // magnitudes it adds
                let scale: f64 = (0..3).map(|k| (row[3 * v + k] * d[k]).abs()).sum::<f64>() + row[OFFSET + v].abs();
                let g = f64::from(got[4 * i + v]);
                assert!(
                    (g - want[v][i]).abs() <= 4.0 * f64::from(f32::EPSILON) * scale,
                    "direction {i}: index {v} {g} vs {}",
                    want[v][i]
                );
            }
            // |d − i|/(2λ): an f32 norm and product, a few ulps relative. The reference's
            // √(2 − 2 cos 2θ) takes d and i as unit vectors; rounded to f32 they are not, which
            // moves its |q|² by δ = ||d|² − 1| + ||i|² − 1|, its |q| by δ/(2|q|)
            let (g, w) = (f64::from(got[4 * i + 3]), want[3][i]);
            let unit_slack = |v: &[f64; 3]| (v.iter().map(|x| x * x).sum::<f64>() - 1.0).abs();
            let q = 2.0 * w / ONE_OVER_LAMBDA;
            let slack = 0.5 * ONE_OVER_LAMBDA * (unit_slack(d) + unit_slack(&incident)) / (2.0 * q);
            assert!(
                (g - w).abs() <= 4.0 * f64::from(f32::EPSILON) * w + slack,
                "direction {i}: sin θ/λ {g} vs {w}"
            );
        }
    }
}
