//! The detector's response in the refinement's forward model: the counts a pixel is expected to
//! record are the simulated photons plus a scaled amorphous background, spread by the
//! detector's point-spread function,
//!
//! `M = PSF_w(I + s·B)`
//!
//! (photons per pixel, `[slow, fast]`), with the PSF's FWHM `w` and the background's scale `s`
//! fixed or refined. `B` is a background image at scale 1 (e.g. `nonbragg`'s, or
//! [`crate::render::amorphous`]'s). The PSF is [`crate::physics::psf`] with a fixed radius, as
//! `noisify` applies it with `-psf_radius`: noisify spreads the counted photons, and since the
//! spread is linear its mean is the spread of the mean, `M` above.
//!
//! Gradients: `∂L/∂I = PSFᵀ(∂L/∂M)`, and `∂L/∂w`, `∂L/∂s` by burn's autodiff through the
//! stage; the simulator's parameters then take `∂L/∂I` as the weights of one
//! vector–Jacobian pass.

use crate::base::error::{Error, Result};
use crate::config::{PsfKind, SimConfig};
use crate::experiment::Experiment;
use crate::physics::psf::{blur, psf_kernel, psf_tail, PsfShape};
use crate::refine::loss::Loss;
use crate::render::detector::Psf;
use crate::scene::to_host;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};

/// The largest PSF radius (pixels) an automatic radius is allowed in refinement: the fiber
/// form's automatic radius grows as the square root of the brightest pixel's photons, and the
/// photons beyond the radius are added back evenly anyway.
pub const MAX_AUTO_RADIUS_PX: u32 = 32;

/// The detector's PSF as the refinement models it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsfResponse {
    pub shape: PsfShape,
    /// Full width at half maximum (m), its starting value when refined.
    pub fwhm: f64,
    /// Pixel size (m).
    pub pixel: f64,
    /// Radius (pixels), fixed during the refinement.
    pub radius_px: u32,
}

impl PsfResponse {
    /// The PSF of the flags (`-psf`, `-psf_fwhm`, `-psf_radius`), `None` without `-psf`. With an
    /// automatic radius (`-psf_radius 0`), `noisify`'s radius for the brightest pixel of
    /// `observed` (photons), at most [`MAX_AUTO_RADIUS_PX`] and the detector's size.
    pub fn from_config(cfg: &SimConfig, exp: &Experiment, observed: &[f32]) -> Option<Self> {
        let noise = cfg.output.detector.as_ref()?;
        let kind = noise.psf.filter(|_| noise.psf_fwhm > 0.0)?;
        let shape = match kind {
            PsfKind::Gauss => PsfShape::Gauss,
            PsfKind::Fiber => PsfShape::Fiber,
        };
        let pixel = exp.detector.pixel_size;
        let mut radius_px = noise.psf_radius;
        if radius_px == 0 {
            let brightest = observed.iter().fold(0.0f64, |m, &v| m.max(v as f64));
            let psf = Psf {
                shape,
                fwhm_px: noise.psf_fwhm / pixel,
                radius_px: 0,
            };
            let side = exp.detector.fpixels.max(exp.detector.spixels) as f64;
            radius_px = psf.image_radius(brightest).min(side).min(MAX_AUTO_RADIUS_PX as f64) as u32;
        }
        Some(Self {
            shape,
            fwhm: noise.psf_fwhm,
            pixel,
            radius_px: radius_px.max(1),
        })
    }
}

/// A refinable component of the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseComponent {
    /// The PSF's FWHM, seen by the optimiser as `ln(FWHM / µm)`.
    PsfFwhm,
    /// The background's scale, seen as `ln(s)`.
    BackgroundScale,
}

impl ResponseComponent {
    /// The component of this name (`psf_fwhm`, `background_scale`), if it is one.
    pub fn named(label: &str) -> Option<Self> {
        match label {
            "psf_fwhm" => Some(Self::PsfFwhm),
            "background_scale" => Some(Self::BackgroundScale),
            _ => None,
        }
    }

    /// Its name.
    pub fn label(self) -> &'static str {
        match self {
            Self::PsfFwhm => "psf_fwhm",
            Self::BackgroundScale => "background_scale",
        }
    }

    /// The unit of its displayed value (`exp(x)`).
    pub fn unit(self) -> &'static str {
        match self {
            Self::PsfFwhm => "µm",
            Self::BackgroundScale => "×",
        }
    }
}

/// PSF and background of the forward model `M = PSF_w(I + s·B)`; both absent, `M = I`.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorResponse {
    pub psf: Option<PsfResponse>,
    /// The background at scale 1 (photons per pixel, fast-major over the detector).
    pub background: Option<Vec<f64>>,
    /// The background's scale `s`, its starting value when refined.
    pub background_scale: f64,
    /// The refined components, in the optimiser's order (after the simulator's).
    pub refined: Vec<ResponseComponent>,
}

impl Default for DetectorResponse {
    fn default() -> Self {
        Self {
            psf: None,
            background: None,
            background_scale: 1.0,
            refined: Vec::new(),
        }
    }
}

impl DetectorResponse {
    /// The flags' response: their PSF ([`PsfResponse::from_config`]) and their `-stol`
    /// sample's amorphous scattering as the background at scale 1 (as `nanobragg` adds it).
    pub fn from_config(cfg: &SimConfig, exp: &Experiment, observed: &[f32]) -> Result<Self> {
        use crate::render::amorphous::{render_background, BackgroundScene};
        let background = BackgroundScene::of_experiment(exp, &cfg.crystal.amorphous)?.map(|scene| {
            let pixels = render_background(&scene).pixels;
            let keep = |(&b, inside): (&f32, bool)| if inside { b as f64 } else { 0.0 };
            pixels.iter().zip(exp.active_pixels().membership()).map(keep).collect()
        });
        Ok(Self {
            psf: PsfResponse::from_config(cfg, exp, observed),
            background,
            ..Self::default()
        })
    }
}

/// A detector image's size, `[slow, fast]`.
pub type Dims = [usize; 2];

impl DetectorResponse {
    /// Whether `M = I`.
    pub fn is_identity(&self) -> bool {
        self.psf.is_none() && self.background.is_none()
    }

    /// Refines `components` too; an error where one has nothing to act on (no PSF, no
    /// background).
    pub fn refining(mut self, components: &[ResponseComponent]) -> Result<Self> {
        for &c in components {
            let present = match c {
                ResponseComponent::PsfFwhm => self.psf.is_some(),
                ResponseComponent::BackgroundScale => self.background.is_some(),
            };
            if !present {
                let what = if c == ResponseComponent::PsfFwhm {
                    "no PSF (-psf gauss|fiber)"
                } else {
                    "no background image"
                };
                return Err(Error::Config(format!("refine {}: the model has {what}", c.label())));
            }
        }
        self.refined = components.to_vec();
        Ok(self)
    }

    /// The refined components' `x` at their starting values.
    pub fn read(&self) -> Vec<f64> {
        self.refined
            .iter()
            .map(|c| match c {
                ResponseComponent::PsfFwhm => (self.psf.map_or(0.0, |p| p.fwhm) * 1e6).ln(),
                ResponseComponent::BackgroundScale => self.background_scale.ln(),
            })
            .collect()
    }

    /// (FWHM (pixels), scale) at `x`, the refined components' values.
    fn at(&self, x: &[f64]) -> Result<(f64, f64)> {
        if x.len() != self.refined.len() {
            return Err(Error::Config(format!(
                "refine: {} values for {} response components",
                x.len(),
                self.refined.len()
            )));
        }
        let mut fwhm_px = self.psf.map_or(0.0, |p| p.fwhm / p.pixel);
        let mut scale = self.background_scale;
        for (&c, &xi) in self.refined.iter().zip(x) {
            if !xi.is_finite() {
                return Err(Error::Config(format!("refine {}: x = {xi}", c.label())));
            }
            match c {
                ResponseComponent::PsfFwhm => fwhm_px = xi.exp() * 1e-6 / self.psf.map_or(1.0, |p| p.pixel),
                ResponseComponent::BackgroundScale => scale = xi.exp(),
            }
        }
        Ok((fwhm_px, scale))
    }

    /// `PSF_w(I + s·B)` `[slow, fast]` of `image` (photons per pixel), for FWHM `fwhm_px` `[1]`
    /// (pixels) and scale `scale` `[1]`.
    pub fn expected<K: Backend>(
        &self,
        image: Tensor<K, 2>,
        fwhm_px: Tensor<K, 1>,
        scale: Tensor<K, 1>,
    ) -> Tensor<K, 2> {
        let dims = image.dims();
        let device = image.device();
        let mut m = image;
        if let Some(b) = &self.background {
            let b = Tensor::<K, 2>::from_data(TensorData::new(b.clone(), dims), &device);
            m = m + b * scale.reshape([1, 1]);
        }
        if let Some(p) = &self.psf {
            let r = p.radius_px as usize;
            m = blur(
                m,
                psf_kernel(p.shape, fwhm_px.clone(), r),
                psf_tail(p.shape, fwhm_px, r),
            );
        }
        m
    }

    fn checked(&self, image: &[f32], dims: Dims) -> Result<Vec<f64>> {
        let n = dims[0] * dims[1];
        if image.len() != n || self.background.as_ref().is_some_and(|b| b.len() != n) {
            return Err(Error::Config(format!(
                "detector response: image of {} pixels, background of {}, detector of {n}",
                image.len(),
                self.background.as_ref().map_or(0, Vec::len)
            )));
        }
        Ok(image.iter().map(|&v| v as f64).collect())
    }

    /// The expected counts `M` at `x` for the simulated `image` (photons per pixel, fast-major,
    /// `dims` = `[slow, fast]`), computed on `device`.
    pub fn model<K: Backend>(&self, image: &[f32], dims: Dims, x: &[f64], device: &K::Device) -> Result<Vec<f64>> {
        let values = self.checked(image, dims)?;
        let (w, s) = self.at(x)?;
        let image = Tensor::<K, 2>::from_data(TensorData::new(values, dims), device);
        let one = |v: f64| Tensor::<K, 1>::from_data(TensorData::new(vec![v], [1]), device);
        to_host(self.expected(image, one(w), one(s)))
    }

    /// The loss of `M` at `x` against `observed`, `∂L/∂I` per pixel of `image` (the weights of
    /// the simulator's vector–Jacobian pass) and `∂L/∂x` of the refined components.
    #[allow(clippy::too_many_arguments)]
    pub fn loss_vjp<K: AutodiffBackend>(
        &self,
        image: &[f32],
        dims: Dims,
        x: &[f64],
        loss: &Loss,
        observed: &[f32],
        mask: Option<&[bool]>,
        device: &K::Device,
    ) -> Result<(f64, Vec<f64>, Vec<f64>)> {
        let values = self.checked(image, dims)?;
        let (w, s) = self.at(x)?;
        let image = Tensor::<K, 2>::from_data(TensorData::new(values, dims), device).require_grad();
        let leaf = |v: f64| Tensor::<K, 1>::from_data(TensorData::new(vec![v], [1]), device).require_grad();
        let (fwhm, scale) = (leaf(w), leaf(s));
        let m = self.expected(image.clone(), fwhm.clone(), scale.clone());
        let (value, weights) = terms(loss, &to_host(m.clone())?, observed, mask)?;
        let weights = Tensor::<K, 2>::from_data(TensorData::new(weights, dims), device);
        let grads = (m * weights).sum().backward();
        let grad = |t: &Tensor<K, 1>| t.grad(&grads).map_or(Ok(vec![0.0]), to_host);
        let (dw, ds) = (grad(&fwhm)?[0], grad(&scale)?[0]);
        let di = image
            .grad(&grads)
            .map_or_else(|| Ok(vec![0.0; dims[0] * dims[1]]), to_host)?;
        // the chain rule through x = ln(µm), ln(s)
        let dx = self
            .refined
            .iter()
            .map(|c| match c {
                ResponseComponent::PsfFwhm => dw * w,
                ResponseComponent::BackgroundScale => ds * s,
            })
            .collect();
        Ok((value, di, dx))
    }
}

/// The loss of `model` against `observed` and `∂L/∂M` per pixel, in f64.
pub fn terms(loss: &Loss, model: &[f64], observed: &[f32], mask: Option<&[bool]>) -> Result<(f64, Vec<f64>)> {
    if model.len() != observed.len() || mask.is_some_and(|m| m.len() != model.len()) {
        return Err(Error::Config(format!(
            "loss: model image has {} pixels, observed {}",
            model.len(),
            observed.len()
        )));
    }
    loss.validate()?;
    let mut value = 0.0;
    let weights = model
        .iter()
        .zip(observed)
        .enumerate()
        .map(|(p, (&i, &k))| {
            if mask.is_some_and(|m| !m[p]) {
                return 0.0;
            }
            let (v, g) = loss.term(i, k as f64);
            value += v;
            g
        })
        .collect();
    Ok((value, weights))
}

/// Component names split into the simulator's ([`crate::refine::Selection::named`]) and the
/// response's, with the map between the names' order and the objective's (the simulator's
/// components first).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSplit<'l> {
    pub simulator: Vec<&'l str>,
    pub response: Vec<ResponseComponent>,
    /// For each name, its index in the objective's `x`.
    position: Vec<usize>,
}

impl<'l> LabelSplit<'l> {
    pub fn new(labels: &[&'l str]) -> Self {
        let simulator: Vec<&str> = labels
            .iter()
            .copied()
            .filter(|l| ResponseComponent::named(l).is_none())
            .collect();
        let response: Vec<_> = labels.iter().filter_map(|l| ResponseComponent::named(l)).collect();
        let (mut s, mut r) = (0, simulator.len());
        let position = labels
            .iter()
            .map(|l| {
                let slot = if ResponseComponent::named(l).is_some() {
                    &mut r
                } else {
                    &mut s
                };
                *slot += 1;
                *slot - 1
            })
            .collect();
        Self {
            simulator,
            response,
            position,
        }
    }

    /// `x` in the objective's order from `x` in the names' order.
    pub fn to_objective(&self, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        for (&p, &v) in self.position.iter().zip(x) {
            out[p] = v;
        }
        out
    }

    /// A vector in the names' order from one in the objective's order.
    pub fn from_objective(&self, x: &[f64]) -> Vec<f64> {
        self.position.iter().map(|&p| x[p]).collect()
    }
}
