//! The detector's point-spread function as a differentiable stage: the PSF integrated over each
//! pixel within a fixed radius, a 2-D convolution of the image with it, and the photons beyond
//! the radius added back evenly, as `noisify` does with `-psf_radius`. Gradients flow to the
//! FWHM and to the image.
//!
//! Widths and offsets are in pixels; images are `[slow, fast]`, photons per pixel.

use burn::tensor::{backend::Backend, module::conv2d, ops::ConvOptions, Tensor, TensorData};

/// `g` of the fiber PSF per unit of FWHM: FWHM = 2·√(2^(2/3) − 1)·g, C's constant.
pub const FIBER_G_PER_FWHM: f64 = 0.652383013252053;

/// The PSF's functional form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PsfShape {
    /// A 2-D Gaussian, `ln16/(π w²)·exp(−ln16·r²/w²)` for FWHM `w`.
    Gauss,
    /// The fiber-optic taper's `g/(2π)·(g² + r²)^(−3/2)`, `g` = [`FIBER_G_PER_FWHM`]·FWHM.
    Fiber,
}

/// A `[side, side]` constant on `device`, row `dy + r`, column `dx + r`.
fn grid<B: Backend>(side: usize, f: impl Fn(i64, i64) -> f64, device: &B::Device) -> Tensor<B, 2> {
    let r = (side / 2) as i64;
    let values: Vec<f64> = (0..side * side)
        .map(|i| f((i % side) as i64 - r, (i / side) as i64 - r))
        .collect();
    Tensor::from_data(TensorData::new(values, [side, side]), device)
}

/// The fraction of a unit source that lands on each pixel within `radius` pixels (a disc,
/// zero outside), `[2r+1, 2r+1]` (row: Δslow + r, column: Δfast + r), for the FWHM `fwhm_px`
/// `[1]` (pixels). Differentiable in the FWHM.
pub fn psf_kernel<B: Backend>(shape: PsfShape, fwhm_px: Tensor<B, 1>, radius: usize) -> Tensor<B, 2> {
    let device = fwhm_px.device();
    let side = 2 * radius + 1;
    let r2 = (radius * radius) as i64;
    let disc = grid::<B>(side, |dx, dy| f64::from(u8::from(dx * dx + dy * dy <= r2)), &device);
    let w = fwhm_px.reshape([1, 1]);
    let kernel = match shape {
        PsfShape::Gauss => {
            // separable: ½[erf(a(d+½)/w) − erf(a(d−½)/w)] along each axis, a = √ln16
            let a = 16f64.ln().sqrt();
            let offsets: Vec<f64> = (0..side).map(|i| i as f64 - radius as f64).collect();
            let d = Tensor::<B, 2>::from_data(TensorData::new(offsets, [1, side]), &device);
            let edge = |shift: f64| ((d.clone() + shift) / w.clone()).mul_scalar(a).erf();
            let along = (edge(0.5) - edge(-0.5)).mul_scalar(0.5);
            along.clone().reshape([side, 1]) * along
        }
        PsfShape::Fiber => {
            let g = w.mul_scalar(FIBER_G_PER_FWHM);
            let corner = |sx: f64, sy: f64| {
                let x = grid::<B>(side, |dx, _| dx as f64 + sx, &device);
                let y = grid::<B>(side, |_, dy| dy as f64 + sy, &device);
                let g2 = g.clone() * g.clone();
                let root = (g2 + x.clone() * x.clone() + y.clone() * y.clone()).sqrt();
                ((x * y) / (g.clone() * root))
                    .atan()
                    .div_scalar(2.0 * std::f64::consts::PI)
            };
            corner(0.5, 0.5) - corner(0.5, -0.5) - corner(-0.5, 0.5) + corner(-0.5, -0.5)
        }
    };
    kernel * disc
}

/// The fraction of a source's photons beyond `radius` pixels, `[1]`: `exp(−ln16·r²/w²)` for
/// the Gaussian, `g/√(g² + r²)` for the fiber. Differentiable in the FWHM.
pub fn psf_tail<B: Backend>(shape: PsfShape, fwhm_px: Tensor<B, 1>, radius: usize) -> Tensor<B, 1> {
    let r = radius as f64;
    match shape {
        PsfShape::Gauss => (fwhm_px.powi_scalar(2).recip().mul_scalar(-16f64.ln() * r * r)).exp(),
        PsfShape::Fiber => {
            let g = fwhm_px.mul_scalar(FIBER_G_PER_FWHM);
            g.clone() / (g.powi_scalar(2).add_scalar(r * r)).sqrt()
        }
    }
}

/// `image` `[slow, fast]` blurred by `kernel` `[2r+1, 2r+1]` ([`psf_kernel`]): each pixel's
/// photons spread over its neighbours, those carried past the image's edges lost, and the
/// `tail` ([`psf_tail`]) of every pixel's photons added back evenly over the image. Pixels
/// below zero spread nothing, as in `noisify`. Differentiable in the image and the kernel.
pub fn blur<B: Backend>(image: Tensor<B, 2>, kernel: Tensor<B, 2>, tail: Tensor<B, 1>) -> Tensor<B, 2> {
    let [h, w] = image.dims();
    let [k, _] = kernel.dims();
    let photons = image.clamp_min(0.0);
    let lost_each = (photons.clone().sum() * tail).div_scalar((h * w) as f64);
    let options = ConvOptions::new([1, 1], [k / 2, k / 2], [1, 1], 1);
    let spread = conv2d(
        photons.reshape([1, 1, h, w]),
        kernel.reshape([1, 1, k, k]),
        None,
        options,
    );
    spread.reshape([h, w]) + lost_each.reshape([1, 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::testing::{dev, host, t1, Ad, B};
    use burn::tensor::TensorData;

    fn image2(values: &[f32], h: usize, w: usize) -> Tensor<B, 2> {
        let v: Vec<f64> = values.iter().map(|&x| x as f64).collect();
        Tensor::from_data(TensorData::new(v, [h, w]), &dev())
    }

    /// A few bright spots on a faint background, `[h, w]`.
    fn spots(h: usize, w: usize) -> Vec<f32> {
        (0..h * w)
            .map(|i| {
                let (x, y) = ((i % w) as f64, (i / w) as f64);
                let spot = |cx: f64, cy: f64, n: f64| n * (-((x - cx).powi(2) + (y - cy).powi(2)) / 1.5).exp();
                (2.5 + spot(7.0, 6.0, 900.0) + spot(20.0, 15.0, 400.0) + spot(12.3, 17.8, 250.0)).floor() as f32
            })
            .collect()
    }

    #[test]
    fn the_stage_is_noisify_with_a_fixed_radius() {
        // noisify sums in single precision: agreement to its rounding
        let (h, w) = (24, 29);
        let img = spots(h, w);
        for (shape, fwhm, radius) in [
            (PsfShape::Gauss, 2.2, 5),
            (PsfShape::Fiber, 0.9, 6),
            (PsfShape::Gauss, 0.8, 2),
        ] {
            let psf = crate::render::detector::Psf {
                shape,
                fwhm_px: fwhm,
                radius_px: radius as u32,
            };
            let (want, _) = crate::render::detector::apply_psf(&img, w, h, &psf);
            let kernel = psf_kernel::<B>(shape, t1(&[fwhm]), radius);
            let got = host(blur(image2(&img, h, w), kernel, psf_tail(shape, t1(&[fwhm]), radius)));
            for (i, (g, c)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - *c as f64).abs() <= 1e-5 * (*c as f64).abs().max(1.0),
                    "{shape:?} pixel {i}: {g} vs {c}"
                );
            }
        }
    }

    /// Σ image·weights, for a scalar loss.
    fn loss<K: Backend>(blurred: Tensor<K, 2>, weights: &[f64]) -> Tensor<K, 1> {
        let [h, w] = blurred.dims();
        let wt = Tensor::<K, 2>::from_data(TensorData::new(weights.to_vec(), [h, w]), &blurred.device());
        (blurred * wt).sum()
    }

    fn loss_at(shape: PsfShape, fwhm: f64, img: &[f32], h: usize, w: usize, weights: &[f64]) -> f64 {
        let k = psf_kernel::<B>(shape, t1(&[fwhm]), 4);
        host(loss(
            blur(image2(img, h, w), k, psf_tail(shape, t1(&[fwhm]), 4)),
            weights,
        ))[0]
    }

    #[test]
    fn fwhm_gradient_is_the_central_difference() {
        let (h, w) = (24, 29);
        let img = spots(h, w);
        let weights: Vec<f64> = (0..h * w).map(|i| ((i * 7919) % 101) as f64 / 101.0).collect();
        for (shape, fwhm) in [(PsfShape::Gauss, 1.7), (PsfShape::Fiber, 0.8)] {
            let f = t1::<Ad>(&[fwhm]).require_grad();
            let v: Vec<f64> = img.iter().map(|&x| x as f64).collect();
            let image = Tensor::<Ad, 2>::from_data(TensorData::new(v, [h, w]), &dev());
            let out = blur(image, psf_kernel(shape, f.clone(), 4), psf_tail(shape, f.clone(), 4));
            let grads = loss(out, &weights).backward();
            let exact = host(f.grad(&grads).unwrap())[0];
            let e = 1e-5 * fwhm;
            let fd = (loss_at(shape, fwhm + e, &img, h, w, &weights) - loss_at(shape, fwhm - e, &img, h, w, &weights))
                / (2.0 * e);
            assert!((exact - fd).abs() <= 1e-6 * fd.abs(), "{shape:?}: {exact} vs {fd}");
        }
    }

    #[test]
    fn image_gradient_is_the_blur_of_the_weights() {
        // the kernel is symmetric, so the adjoint of the blur is the blur itself; the tail is
        // added back uniformly, so each pixel also gains tail·mean(weights)
        let (h, w) = (12, 15);
        let img = spots(h, w);
        // non-negative: blur() spreads only photons ≥ 0
        let weights: Vec<f64> = (0..h * w).map(|i| ((i * 31) % 17) as f64 + 0.5).collect();
        let v: Vec<f64> = img.iter().map(|&x| x as f64).collect();
        let image = Tensor::<Ad, 2>::from_data(TensorData::new(v, [h, w]), &dev()).require_grad();
        let fw = t1::<Ad>(&[1.3]);
        let out = blur(
            image.clone(),
            psf_kernel(PsfShape::Fiber, fw.clone(), 3),
            psf_tail(PsfShape::Fiber, fw, 3),
        );
        let grads = loss(out, &weights).backward();
        let got = host(image.grad(&grads).unwrap());
        let wt = Tensor::<B, 2>::from_data(TensorData::new(weights.clone(), [h, w]), &dev());
        let spread = host(blur(wt, psf_kernel(PsfShape::Fiber, t1(&[1.3]), 3), t1(&[0.0])));
        let tail = host(psf_tail::<B>(PsfShape::Fiber, t1(&[1.3]), 3))[0];
        let mean = weights.iter().sum::<f64>() / (h * w) as f64;
        for i in 0..h * w {
            let want = spread[i] + tail * mean;
            assert!(
                (got[i] - want).abs() < 1e-12 * want.abs().max(1.0),
                "pixel {i}: {} vs {want}",
                got[i]
            );
        }
    }

    #[test]
    fn a_refinement_recovers_the_fwhm_from_a_noisy_image() {
        // observed: spots blurred by a 1.8-pixel Gaussian PSF, with Poisson noise drawn as
        // noisify draws it; the fit finds the root of the gradient of a Poisson likelihood
        let (h, w) = (24, 29);
        let truth = 1.8;
        let ideal = spots(h, w);
        let psf = crate::render::detector::Psf {
            shape: PsfShape::Gauss,
            fwhm_px: truth,
            radius_px: 4,
        };
        let (blurred, _) = crate::render::detector::apply_psf(&ideal, w, h, &psf);
        let mut noise = crate::render::noise::PoissonNoise::new(11);
        let observed: Vec<f64> = blurred.iter().map(|&m| noise.poisson(m) as f64).collect();
        let slope = |fwhm: f64| {
            let f = t1::<Ad>(&[fwhm]).require_grad();
            let v: Vec<f64> = ideal.iter().map(|&x| x as f64).collect();
            let model = blur(
                Tensor::<Ad, 2>::from_data(TensorData::new(v, [h, w]), &dev()),
                psf_kernel(PsfShape::Gauss, f.clone(), 4),
                psf_tail(PsfShape::Gauss, f.clone(), 4),
            );
            let obs = Tensor::<Ad, 2>::from_data(TensorData::new(observed.clone(), [h, w]), &dev());
            let nll = (model.clone() - obs * model.log()).sum();
            host(f.grad(&nll.backward()).unwrap())[0]
        };
        let (mut lo, mut hi) = (1.0, 3.0);
        assert!(
            slope(lo) < 0.0 && slope(hi) > 0.0,
            "the likelihood must have a minimum between"
        );
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            if slope(mid) > 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        assert!((lo / truth - 1.0).abs() < 0.05, "refined {lo} for {truth}");
    }
}
