//! Expected uncertainties of refined values: the Poisson Fisher information and its inverse
//! (the Cramér–Rao bound), for stating tolerances and spotting degenerate parameters.
//!
//! For counts `k_p ~ Poisson(I_p(x))` the Fisher information is
//! `F_ij = Σ_p (∂I_p/∂x_i)(∂I_p/∂x_j) / I_p`; any unbiased estimate of `x` has covariance
//! ≥ `F⁻¹`, and the maximum-likelihood fit reaches it for many photons. The Jacobian columns
//! here are central differences of forward renders (a diagnostic, not the gradients the
//! optimisers use).

use super::objective::ImageObjective;
use crate::base::error::{Error, Result};
use burn::tensor::backend::AutodiffBackend;

/// `F` (x units⁻²) at `x`, with central-difference steps `steps` (x units) per component;
/// pixels with `I < floor` photons are treated as `I = floor`.
pub fn poisson_fisher<B: AutodiffBackend>(
    objective: &mut ImageObjective<'_, B>,
    x: &[f64],
    steps: &[f64],
    floor: f64,
) -> Result<Vec<Vec<f64>>>
where
    B::InnerBackend: crate::kernel::PixelKernel,
{
    let n = x.len();
    let model = objective.image(x)?.data;
    let mut columns = Vec::with_capacity(n);
    for i in 0..n {
        let mut xp = x.to_vec();
        let mut xm = x.to_vec();
        xp[i] += steps[i];
        xm[i] -= steps[i];
        let ip = objective.image(&xp)?.data;
        let im = objective.image(&xm)?.data;
        columns.push(
            ip.iter()
                .zip(&im)
                .map(|(a, b)| (*a as f64 - *b as f64) / (2.0 * steps[i]))
                .collect::<Vec<f64>>(),
        );
    }
    let mut f = vec![vec![0.0; n]; n];
    for (p, &ip) in model.iter().enumerate() {
        if objective.mask.is_some_and(|m| !m[p]) {
            continue;
        }
        let w = 1.0 / (ip as f64).max(floor);
        for (fi, ci) in f.iter_mut().zip(&columns) {
            for (fij, cj) in fi.iter_mut().zip(&columns) {
                *fij += ci[p] * cj[p] * w;
            }
        }
    }
    Ok(f)
}

/// The inverse of a symmetric positive definite matrix (Gauss–Jordan with partial pivoting).
pub fn invert(a: &[Vec<f64>]) -> Result<Vec<Vec<f64>>> {
    let n = a.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = r.clone();
            row.extend((0..n).map(|j| if i == j { 1.0 } else { 0.0 }));
            row
        })
        .collect();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
            .unwrap_or(c);
        if m[p][c].abs() < 1e-300 {
            return Err(Error::Config(
                "Fisher information is singular (a parameter has no effect)".into(),
            ));
        }
        m.swap(c, p);
        let d = m[c][c];
        m[c].iter_mut().for_each(|v| *v /= d);
        for r in 0..n {
            if r != c {
                let k = m[r][c];
                if k != 0.0 {
                    let pivot = m[c].clone();
                    m[r].iter_mut().zip(pivot).for_each(|(v, pv)| *v -= k * pv);
                }
            }
        }
    }
    Ok(m.into_iter().map(|r| r[n..].to_vec()).collect())
}

/// Standard errors `sqrt(diag F⁻¹)` and the correlation matrix of `F⁻¹`.
pub fn standard_errors(fisher: &[Vec<f64>]) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    let cov = invert(fisher)?;
    let se: Vec<f64> = (0..cov.len()).map(|i| cov[i][i].max(0.0).sqrt()).collect();
    let corr = cov
        .iter()
        .enumerate()
        .map(|(i, r)| r.iter().enumerate().map(|(j, v)| v / (se[i] * se[j])).collect())
        .collect();
    Ok((se, corr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_of_a_spd_matrix() {
        let a = vec![vec![4.0, 1.0, 0.5], vec![1.0, 3.0, 0.2], vec![0.5, 0.2, 2.0]];
        let inv = invert(&a).unwrap();
        for (i, row) in a.iter().enumerate() {
            for j in 0..3 {
                let v: f64 = row.iter().zip(&inv).map(|(x, r)| x * r[j]).sum();
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        assert!(invert(&[vec![0.0]]).is_err());
    }
}
