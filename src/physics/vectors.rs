//! Per-sample 3-vectors: the positions and diffracted directions of the R sub-pixel samples of
//! a chunk, in the layout that makes their small products cheap on the backend at hand.

use super::{project, project_minus, with_partials};
use burn::tensor::{backend::Backend, Tensor};

/// R vectors of 3 components (m for positions, dimensionless for directions).
///
/// - `Rows` `[R, 3]`: without autodiff. K = 3 products with a `[3, N]` matrix are one matmul on
///   burn-ndarray and multiply–adds elsewhere (see [`project`]).
/// - `Components` x, y, z `[R]` each: under autodiff. A product with one column is then three
///   1-D multiply–adds, whose backward steps are 1-D products and lane sums; burn's matmul
///   backward would copy the transposed `[R, 3]` operand and pack a K = 3 product for each of
///   the half-dozen projections of a chunk (3× slower, measured in docs/gradients.md).
#[derive(Debug, Clone)]
pub enum SampleVectors<B: Backend> {
    Rows(Tensor<B, 2>),
    Components([Tensor<B, 1>; 3]),
}

impl<B: Backend> From<Tensor<B, 2>> for SampleVectors<B> {
    fn from(rows: Tensor<B, 2>) -> Self {
        Self::Rows(rows)
    }
}

impl<B: Backend> SampleVectors<B> {
    /// Host vectors `[R·3]` (x, y, z of each sample in turn), uploaded in the layout for the
    /// device: components under autodiff, rows otherwise.
    #[cfg(test)]
    pub fn from_host(v: Vec<f64>, device: &B::Device) -> Self {
        use burn::tensor::TensorData;
        let r = v.len() / 3;
        if !B::ad_enabled(device) {
            return Self::Rows(Tensor::from_data(TensorData::new(v, [r, 3]), device));
        }
        Self::Components([0, 1, 2].map(|k| {
            let c: Vec<f64> = v.iter().skip(k).step_by(3).copied().collect();
            Tensor::from_data(TensorData::new(c, [r]), device)
        }))
    }

    /// The vectors as rows `[R, 3]`.
    pub fn rows(&self) -> Tensor<B, 2> {
        match self {
            Self::Rows(t) => t.clone(),
            Self::Components(c) => Tensor::stack(c.to_vec(), 1),
        }
    }

    /// a·b `[R, N]` for `b` `[3, N]`.
    pub fn dot(&self, b: Tensor<B, 2>) -> Tensor<B, 2> {
        match (self, b.dims()[1]) {
            (Self::Components(c), 1) => as_column(combine(c, &b, 0, None)),
            _ => project(self.rows(), b),
        }
    }

    /// a·b − row `[R, N]` for `b` `[3, N]` and `row` `[1, N]` (see [`project_minus`]).
    pub fn dot_minus(&self, b: Tensor<B, 2>, row: Tensor<B, 2>) -> Tensor<B, 2> {
        match (self, b.dims()[1]) {
            (Self::Components(c), 1) => as_column(combine(c, &b, 0, Some(row.reshape([1])))),
            _ => project_minus(self.rows(), b, row),
        }
    }

    /// The vectors mapped by `m` `[3, 3]` and shifted: a·m − row for `row` `[1, 3]`, in the same
    /// layout.
    pub fn affine_minus(&self, m: Tensor<B, 2>, row: Tensor<B, 2>) -> Self {
        match self {
            Self::Components(c) => Self::Components(
                [0, 1, 2].map(|j| combine(c, &m, j, Some(row.clone().slice([0..1, j..j + 1]).reshape([1])))),
            ),
            Self::Rows(t) => Self::Rows(project_minus(t.clone(), m, row)),
        }
    }

    /// |a| `[R, 1]` and the unit vectors a/|a|.
    pub fn normalized(&self) -> (Self, Tensor<B, 2>) {
        match self {
            Self::Rows(t) => {
                let norm = t.clone().powi_scalar(2).sum_dim(1).sqrt();
                (Self::Rows(t.clone() / norm.clone()), norm)
            }
            Self::Components(c) => {
                let s = c
                    .iter()
                    .map(|x| x.clone() * x.clone())
                    .reduce(|a, b| a + b)
                    .expect("three components");
                // √s with ∂/∂s = 1/(2√s) given (burn's sqrt backward is a libm pow per element)
                let norm0 = s.clone().detach().sqrt();
                let norm = with_partials(norm0.clone(), [(s, norm0.recip() * 0.5)]);
                let unit = c.clone().map(|x| x / norm.clone());
                (Self::Components(unit), as_column(norm))
            }
        }
    }
}

/// Σ_k c_k·b[k, j] − s `[R]` for components `c` `[R]` and `b` `[3, N]`, with the single
/// values of `b` and `s` `[1]` broadcast along the 1-D components.
fn combine<B: Backend>(c: &[Tensor<B, 1>; 3], b: &Tensor<B, 2>, j: usize, s: Option<Tensor<B, 1>>) -> Tensor<B, 1> {
    let entry = |k: usize| b.clone().slice([k..k + 1, j..j + 1]).reshape([1]);
    let sum = c[0].clone() * entry(0) + c[1].clone() * entry(1) + c[2].clone() * entry(2);
    match s {
        Some(s) => sum - s,
        None => sum,
    }
}

/// `[R]` → `[R, 1]`.
fn as_column<B: Backend>(t: Tensor<B, 1>) -> Tensor<B, 2> {
    let r = t.dims()[0];
    t.reshape([r, 1])
}

#[cfg(test)]
mod tests {
    use super::SampleVectors;
    use crate::diff::testing::{dev, host, Ad};
    use burn::backend::ndarray::NdArray;
    use burn::tensor::{backend::Backend, Tensor, TensorData};

    fn t2<B: Backend<Device = burn::backend::ndarray::NdArrayDevice>>(v: &[f64], shape: [usize; 2]) -> Tensor<B, 2> {
        Tensor::from_data(TensorData::new(v.to_vec(), shape), &dev())
    }

    /// Positions, directions and projections in the component layout (autodiff) equal the
    /// row layout's, and the gradients of Σ(d·b − s) are the analytic ones.
    #[test]
    fn components_match_rows_and_analytic_gradients() {
        let coords: Vec<f64> = (0..30).map(|i| 0.01 * ((i as f64) * 0.77).sin() + 0.02).collect();
        let (m, row) = ([0.0, 0.2, 1.0, 0.1, -1.0, 0.0, 1.0, 0.0, 0.3], [0.1, 0.02, -0.03]);
        let (b, s) = ([0.3, -0.2, 0.9], [0.05]);
        let dev = dev();

        let rows = SampleVectors::<NdArray<f64>>::from_host(coords.clone(), &dev);
        assert!(matches!(rows, SampleVectors::Rows(_)));
        let (dir_r, air_r) = rows.affine_minus(t2(&m, [3, 3]), t2(&row, [1, 3])).normalized();
        let proj_r = host(dir_r.dot_minus(t2(&b, [3, 1]), t2(&s, [1, 1])));

        let comps = SampleVectors::<Ad>::from_host(coords.clone(), &dev);
        assert!(matches!(comps, SampleVectors::Components(_)));
        let (m_ad, b_ad) = (t2::<Ad>(&m, [3, 3]).require_grad(), t2::<Ad>(&b, [3, 1]).require_grad());
        let (dir_c, air_c) = comps.affine_minus(m_ad.clone(), t2(&row, [1, 3])).normalized();
        let proj = dir_c.dot_minus(b_ad.clone(), t2(&s, [1, 1]));
        let proj_c = host(proj.clone().inner());

        for (got, want) in [
            (host(dir_c.rows().inner()), host(dir_r.rows())),
            (host(air_c.inner()), host(air_r)),
            (proj_c, proj_r),
        ] {
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-15 * (1.0 + w.abs()), "{g} vs {w}");
            }
        }
        // ∂Σ(d·b − s)/∂b = Σ_r d_r
        let grads = proj.sum().backward();
        let dirs = host(dir_r.rows());
        let want: Vec<f64> = (0..3).map(|k| dirs.iter().skip(k).step_by(3).sum()).collect();
        let got = host(b_ad.grad(&grads).expect("b is used"));
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-12, "∂/∂b: {g} vs {w}");
        }
        // ∂/∂m against central differences of the row layout
        let gm = host(m_ad.grad(&grads).expect("m is used"));
        let total = |m: &[f64]| -> f64 {
            let rows = SampleVectors::<NdArray<f64>>::from_host(coords.clone(), &dev);
            let (d, _) = rows.affine_minus(t2(m, [3, 3]), t2(&row, [1, 3])).normalized();
            host(d.dot_minus(t2(&b, [3, 1]), t2(&s, [1, 1]))).iter().sum()
        };
        for (i, g) in gm.iter().enumerate() {
            let h = 1e-6;
            let (mut up, mut down) = (m, m);
            up[i] += h;
            down[i] -= h;
            let fd = (total(&up) - total(&down)) / (2.0 * h);
            assert!((g - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "∂/∂m[{i}]: {g} vs {fd}");
        }
    }
}
