//! Derivative probes: tangents of the scene values along parameters, and per-pixel probes ε
//! that move the scene along them (see [`crate::gradients::derivative`] for the method). The render's
//! stages take an optional [`Probe`]; the derivative images build one.

use crate::physics::lattice::LatticeTensors;
use crate::scene::SceneTensors;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// Tangents of the scene values along n parameters, as the stages consume them.
#[derive(Debug, Clone)]
pub struct SceneTangents<B: Backend> {
    /// `[3n, 3]`: row 3i + k is ∂(basis row k: f, s, o)/∂θ_i.
    pub basis: Tensor<B, 2>,
    /// `[n, 3]`: ∂pix0, ∂f, ∂s (m and m⁻⁰ per parameter unit).
    pub pix0: Tensor<B, 2>,
    pub fdet: Tensor<B, 2>,
    pub sdet: Tensor<B, 2>,
    /// `[n, 1]`: ∂distance, ∂close_distance (m).
    pub distance: Tensor<B, 2>,
    pub close_distance: Tensor<B, 2>,
    /// `[3n, 1]`: row 3i + k is ∂o_k/∂θ_i.
    pub odet: Tensor<B, 2>,
    /// `[3n, 3C]` (row 3i + axis) and `[n, 3C]`: ∂coef, ∂offset.
    pub coef: Tensor<B, 2>,
    pub offset: Tensor<B, 2>,
    /// `[n, 3]`, `[n, 9]`: ∂N, ∂(a*, b*, c*).
    pub n_cells: Tensor<B, 2>,
    pub recip: Tensor<B, 2>,
    /// `[n, 1]`: ∂K, ∂default_F, ∂I_bg, ∂fluence.
    pub kahn: Tensor<B, 2>,
    pub default_f: Tensor<B, 2>,
    pub i_bg: Tensor<B, 2>,
    pub fluence: Tensor<B, 2>,
}

/// Per-pixel probes ε `[P, n]` (a zero leaf) along the scene tangents.
#[derive(Debug, Clone)]
pub struct Probe<B: Backend> {
    pub epsilon: Tensor<B, 2>,
    pub tangents: SceneTangents<B>,
}

/// `[R, n]·[n, k]` plus `[R, 3n]·[3n, k]` style probe terms: ε `[R, n]` times tangents
/// `[n, k]`.
pub(crate) fn probe_term<B: Backend>(eps: &Tensor<B, 2>, tangent: &Tensor<B, 2>) -> Tensor<B, 2> {
    eps.clone().matmul(tangent.clone())
}

/// ε ⊗ x: `[R, n]` and `[R, 3]` → `[R, 3n]` (column 3i + k = ε_i·x_k), to pair with tangents
/// of 3-vectors laid out `[3n, ·]`.
pub(crate) fn probe_outer<B: Backend>(eps: &Tensor<B, 2>, x: &Tensor<B, 2>) -> Tensor<B, 2> {
    let [r, n] = eps.dims();
    (eps.clone().unsqueeze_dim::<3>(2) * x.clone().unsqueeze_dim::<3>(1)).reshape([r, 3 * n])
}

/// The scene with the values that broadcast over rows moved along the probe's tangents:
/// per sample row (`eps_row` `[R, n]`) for the detector vectors, distances, N, a*, K and
/// default_F; per pixel (`ε` `[P, n]`) for the fluence and I_bg.
pub(crate) fn probed_scene<B: Backend>(
    st: &SceneTensors<B>,
    probe: &Probe<B>,
    eps_row: &Tensor<B, 2>,
) -> SceneTensors<B> {
    let t = &probe.tangents;
    let row = |x: &Tensor<B, 2>, tangent: &Tensor<B, 2>| x.clone() + probe_term(eps_row, tangent);
    let default_f = st.default_f.as_ref().map(|f| row(f, &t.default_f));
    SceneTensors {
        fdet: row(&st.fdet, &t.fdet),
        sdet: row(&st.sdet, &t.sdet),
        distance: row(&st.distance, &t.distance),
        close_distance: row(&st.close_distance, &t.close_distance),
        fluence: st.fluence.clone() + probe_term(&probe.epsilon, &t.fluence),
        i_bg: st
            .i_bg
            .as_ref()
            .map(|x| x.clone() + probe_term(&probe.epsilon, &t.i_bg)),
        kahn: st.kahn.as_ref().map(|k| row(k, &t.kahn)),
        hkl: st.hkl.as_ref().map(|g| crate::physics::structure_factor::HklTensor {
            default_f_tensor: default_f.clone(),
            ..g.clone()
        }),
        default_f,
        lattice: st.lattice.as_ref().map(|l| LatticeTensors {
            n: row(&l.n, &t.n_cells),
            recip: row(&l.recip, &t.recip),
        }),
        ..st.clone()
    }
}
