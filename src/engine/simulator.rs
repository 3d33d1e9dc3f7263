//! The embedding API: the simulator as a burn [`Module`] whose parameters are trainable
//! [`Param`](burn::module::Param)s and whose forward pass returns the image as a tensor on the
//! caller's device (and, under `Autodiff`, on the caller's graph).
//!
//! ```no_run
//! use burn::backend::{ndarray::NdArrayDevice, Autodiff, NdArray};
//! use burn::module::Module;
//! use nanobragg::Simulator;
//!
//! type B = Autodiff<NdArray<f64>>;
//! let device = NdArrayDevice::Cpu;
//! let sim = Simulator::<B>::from_args(
//!     &["-default_F", "100", "-cell", "100", "100", "100", "90", "90", "90",
//!       "-lambda", "6.2", "-N", "5", "-detpixels", "64"],
//!     &device,
//! )?;
//! let image = sim.forward(); // [spixels, fpixels], photons per pixel
//! let grads = image.sum().backward();
//! let d_distance = sim.params.distance.grad(&grads); // ∂Σ/∂distance, per metre
//! println!("{} parameters", sim.num_params());
//! # Ok::<(), nanobragg::Error>(())
//! ```
//!
//! See `docs/embedding.md`.

use crate::base::error::{Error, Result};
use crate::config::SimConfig;
use crate::experiment::args::{parse_args, Parsed};
use crate::experiment::{load_structure_factors, Experiment};
use crate::kernel::PixelKernel;
use crate::render::drive::{drive_here, Rendered};
use crate::render::output::Statistics;
use crate::render::{assemble, chunk_intensity, spans, RenderOptions};
use crate::scene::params::Params;
use crate::scene::{Scene, SceneTensors};
use burn::module::Module;
use burn::tensor::{backend::Backend, Tensor};
use std::sync::Arc;

use crate::render::scenes::{OneImage, Scenes, Setup};

/// Elements per `[samples, orientations]` intermediate of one chunk of [`Simulator::forward`]
/// (the memory budget caps it further): large, because the whole graph of a differentiable
/// forward pass stays alive anyway, and accelerators want few, large kernels.
pub const FORWARD_CHUNK_ELEMENTS: usize = 1 << 20;

/// The simulator as a burn module: `params` are its trainable parameters (see [`Params`] for
/// names and units); everything else is the host's resolution of the configuration, which is
/// not a parameter and is not saved with the module's record.
#[derive(Module, Debug)]
pub struct Simulator<B: Backend> {
    /// The continuous parameters, trainable.
    pub params: Params<B>,
    /// The setup and its host scene ([`Scene::new`]), resolved once.
    image: Arc<OneImage>,
}

impl<B: PixelKernel> Simulator<B> {
    /// A simulator from the C program's flags (same flags, units and defaults as the
    /// `nanobragg` binary; output flags are accepted and ignored). Structure factors are read
    /// as the binary reads them (`-hkl`, else `Fdump.bin`, else `-default_F`), but no file is
    /// written.
    pub fn from_args(args: &[&str], device: &B::Device) -> Result<Simulator<B>> {
        match parse_args(args)? {
            Parsed::Run(cfg, _) => Self::new(&cfg, device),
            Parsed::Help => Err(Error::Config("-h asks for the usage text, not a simulation".into())),
        }
    }

    /// A simulator from a configuration, with its parameters at the values the host setup
    /// resolves (trainable).
    ///
    /// A detector of several panels (`-geom`, `-detector_expt`) is refused: see
    /// [`Simulator::panels`].
    pub fn new(cfg: &SimConfig, device: &B::Device) -> Result<Self> {
        if cfg.detector.panels.is_some() {
            return Err(Error::Config(
                "Simulator::new renders one panel; for a detector of several panels (-geom, -detector_expt) use PanelSimulator (all panels, with trainable group motions) or Simulator::panels (one simulator a panel)".into(),
            ));
        }
        Self::with_grid(cfg, load_structure_factors(cfg)?, device)
    }

    /// One simulator per panel of a detector of several panels (`-geom`, `-detector_expt`), in
    /// the file's order, each rendering `[slow, fast]` of its panel as the CUSTOM detector C
    /// would be given for it alone (`docs/panels.md`). Each one's `params` hold that panel's
    /// own `beam_center` (the panel moved along −fast, −slow), `close_distance` (along its
    /// outward normal) and `detector_rotation` (about the lab axes through the sample), and a
    /// copy of the run's other parameters. The structure factors are read once.
    pub fn panels(cfg: &SimConfig, device: &B::Device) -> Result<Vec<Self>> {
        let layout = cfg.detector.panels.as_ref().ok_or_else(|| {
            Error::Config("Simulator::panels needs a detector of several panels (-geom, -detector_expt)".into())
        })?;
        let grid = load_structure_factors(cfg)?;
        crate::experiment::panels::custom::panel_configs(cfg, layout, "-geom/-detector_expt")?
            .iter()
            .map(|pc| Self::with_grid(pc, grid.clone(), device))
            .collect()
    }

    fn with_grid(cfg: &SimConfig, grid: Option<crate::io::hkl::HklGrid>, device: &B::Device) -> Result<Self> {
        let exp = Experiment::with_structure_factors(cfg, grid)?;
        Self::from_experiment(cfg, exp, device)
    }

    /// A simulator from a configuration and the experiment the host already resolved from it
    /// ([`Experiment::new`], or [`Experiment::with_structure_factors`] with the structure
    /// factors it read), its parameters at the experiment's values (trainable). Nothing is read
    /// again: bindings that keep a resolved experiment make simulators this way.
    ///
    /// A detector of several panels is refused, as by [`Simulator::new`].
    pub fn from_experiment(cfg: &SimConfig, exp: Experiment, device: &B::Device) -> Result<Self> {
        if cfg.detector.panels.is_some() {
            return Err(Error::Config(
                "Simulator::from_experiment renders one panel; give each panel's own configuration (Simulator::panels)"
                    .into(),
            ));
        }
        Ok(Self {
            params: Params::new(cfg, &exp, device),
            image: one_image(Setup {
                cfg: cfg.clone(),
                exp,
                options: forward_options(),
            }),
        })
    }

    /// The same simulator rendering with `options`: the tensor stages in chunks planned from
    /// its memory budget and chunk cap, span by span on the caller's thread; the native loop on
    /// burn-ndarray, its reverse pass and the backward pass of a kernel's image on
    /// `options.threads` workers (by default the process's count: `OMP_NUM_THREADS`, else
    /// `RAYON_NUM_THREADS`, else the cores), within `options.memory_budget`. Progress is not
    /// reported.
    pub fn with_options(self, options: RenderOptions) -> Self {
        let Setup { cfg, exp, .. } = &*self.image.setup;
        let image = OneImage {
            setup: Arc::new(Setup {
                cfg: cfg.clone(),
                exp: exp.clone(),
                options,
            }),
            host: self.image.host.clone(),
        };
        Self {
            image: Arc::new(image),
            params: self.params,
        }
    }

    /// The host's resolution of the configuration.
    pub fn setup(&self) -> &Setup {
        &self.image.setup
    }

    /// The image `[spixels, fpixels]` (photons per pixel, 0 outside the ROI and in masked
    /// pixels) at the module's own parameters: the same values as the binary's `-floatfile`
    /// (up to the backend's precision).
    pub fn forward(&self) -> Tensor<B, 2> {
        self.forward_with(&self.params)
    }

    /// The statistics C prints (max and its position, mean, rms, rmsd) of an image from
    /// [`Simulator::forward`], reduced on its device: a few scalars are read back, not the image.
    pub fn statistics(&self, image: Tensor<B, 2>) -> Result<Statistics> {
        Statistics::of_tensor(&self.image.setup.exp, image.detach())
    }

    /// The image at `params`, tensors the caller may have computed (e.g. with
    /// [`Params::replace`]); gradients flow back into them.
    ///
    /// Where the backend has the one-kernel render or the native loop ([`PixelKernel`]: the
    /// wgpu backends, burn-ndarray in f64, and autodiff over them) and `options.pixel_kernel`
    /// is on (the default), the parameters' values are read back, the scene is evaluated from
    /// them on the host in f64 and the image is the kernel's or the loop's: one operation of
    /// the caller's graph whose parents are the parameter tensors. Its backward pass is the
    /// adjoint kernels' on a GPU and the native loop's reverse pass on the CPU, where
    /// `options.adjoint_kernel` is on (the default) and they cover the image, else the tensor
    /// stages' vector–Jacobian product on the host (`docs/gradients.md`). Otherwise the tensor
    /// stages render, span by span, on the caller's graph. A readback that fails falls back to
    /// the tensor stages.
    pub fn forward_with(&self, params: &Params<B>) -> Tensor<B, 2> {
        render(&self.image, params).pop().expect("one image")
    }
}

/// `setup` with its host scene.
fn one_image(setup: Setup) -> Arc<OneImage> {
    let host = Scene::new(&setup.exp);
    Arc::new(OneImage {
        setup: Arc::new(setup),
        host,
    })
}

/// A simulator's options: chunks of [`FORWARD_CHUNK_ELEMENTS`], the kernel where the backend
/// has one (see [`Simulator::forward_with`]), and the process's worker count
/// ([`crate::base::threads::default_count`]) for the native loop, its reverse pass and the
/// backward pass on the host.
pub(crate) fn forward_options() -> RenderOptions {
    RenderOptions {
        max_chunk_elements: Some(FORWARD_CHUNK_ELEMENTS),
        pixel_kernel: true,
        ..RenderOptions::default()
    }
}

/// The images `[spixels, fpixels]` of `scenes` at `params`, on `params`' graph: by `B`'s kernel
/// from the scenes' values evaluated on the host ([`PixelKernel::render_params`], where it has
/// one and every image's `options.pixel_kernel` is on), else (or where reading the parameters
/// back fails) by the tensor stages from the scenes built on `B`, span by span on the caller's
/// thread.
pub(crate) fn render<B: PixelKernel, S: Scenes>(scenes: &Arc<S>, params: &Params<B>) -> Vec<Tensor<B, 2>> {
    if let Ok(Some(images)) = B::render_params(scenes, params) {
        return images;
    }
    scenes
        .images()
        .into_iter()
        .zip(scenes.scenes(params))
        .map(|((setup, host), scene)| render_stages(setup, host, &scene))
        .collect()
}

/// The image `[spixels, fpixels]` of the differentiable scene `scene` of `setup` (whose host
/// scene is `host`) by the tensor stages, span by span on the caller's thread and graph.
fn render_stages<B: Backend>(setup: &Setup, host: &Scene, scene: &SceneTensors<B>) -> Tensor<B, 2> {
    let Setup { exp, options, .. } = setup;
    let device = scene.coef.device();
    // planned for the one thread the spans run on, whatever the workers of the host's passes
    let here = RenderOptions {
        threads: 1,
        ..options.clone()
    };
    let (spans, block) = spans(exp, host, &here, 8);
    // one span after another, each left on the device and on the caller's graph; C's
    // interpolation rule as everywhere (crate::render::drive)
    let mut parts: Vec<Option<Tensor<B, 1>>> = (0..spans.len()).map(|_| None).collect();
    drive_here(
        &spans,
        exp.structure_factors.interpolate,
        |chunk| {
            let out = chunk_intensity(exp, host, scene, chunk.span, chunk.tricubic, block, &device);
            Rendered {
                value: out.intensity.reshape([chunk.span.len]),
                out_of_range: out.out_of_range,
            }
        },
        |chunk, values| parts[chunk.index] = Some(values),
    );
    assemble(exp, parts.into_iter().flatten().collect(), &device)
}
