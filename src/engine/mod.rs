//! Compute engines chosen at run time.
//!
//! * [`Engine::Cpu`]: burn-ndarray, f64 (default) or f32, one worker thread per core. With
//!   `fusion: true` (the default) images render by C's per-pixel loop in native Rust
//!   ([`crate::kernel::native`]); `false` runs the tensor stages op by op in cache-sized chunks.
//!   Gradients and derivative images are the tensor stages' either way.
//! * [`Engine::Wgpu`]: burn-wgpu in f32 (WGSL compute shaders on Vulkan, Metal or DX12; Mesa's
//!   software Vulkan driver, llvmpipe, where there is no GPU), with or without burn's kernel
//!   fusion: `fusion: true` runs [`WgpuFused`] (`Wgpu<f32, i32>`, i.e. burn-fusion over the
//!   cube backend), `false` runs [`WgpuUnfused`] (`CubeBackend<WgpuRuntime, f32, i32, u32>`).
//!   One worker thread, large chunks (bounded by the memory budget).
//!
//! Every engine runs the *same* generic functions ([`crate::engine::render::render`],
//! [`crate::gradients::image_vjp`]), monomorphised per backend type; [`Engine::run`] is the one
//! dispatch point, and any generic task can go through it ([`BackendTask`]).
//!
//! The float dtype of a burn device is fixed per process (see `shared/reference/burn-notes.md`
//! §3), so a process must not render on the CPU with both precisions. The wgpu device is a
//! different device (always f32), so it mixes freely with either CPU precision.

pub mod panel_simulator;
pub mod render;
pub mod simulator;

pub use panel_simulator::{PanelSetup, PanelSimulator};
pub use simulator::Simulator;

use crate::base::device::init_cpu_dtype;
#[cfg(feature = "gpu")]
use crate::base::error::panic_message;
use crate::base::error::{Error, Result};
use crate::base::gpu::wgpu_probe;
#[cfg(feature = "gpu")]
pub use crate::base::gpu::{WgpuFused, WgpuUnfused};
pub use crate::base::workers::tune_process;
pub use crate::config::engine::{parse_switch, EngineKind, Precision};
use crate::config::SimConfig;
use crate::experiment::args::RunOptions;
use crate::experiment::Experiment;
use crate::gradients::derivative::DerivativeImage;
use crate::gradients::{fixed_weights, At, ParamGradient};
use crate::kernel::PixelKernel;
use crate::render::amorphous::BackgroundScene;
use crate::render::{Image, RenderOptions};
/// A tensor's values on the host, as f64 (an image from [`Simulator::forward`], say).
pub use crate::scene::to_host;
use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::DType;
use render::{render, render_batch, render_with_background};

/// Environment variable that switches fusion off (`0`, `off`, `false`) or on (`1`, `on`,
/// `true`) when `-fusion` is not given: off, every engine renders with the tensor stages.
pub const FUSION_ENV: &str = "NANOBRAGG_FUSION";

/// Elements per `[samples, orientations]` intermediate aimed for on wgpu (the memory budget
/// caps it further): big enough that kernel launches and the per-chunk readback are amortised.
pub const WGPU_CHUNK_ELEMENTS: usize = 1 << 22;

/// A compute engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// burn-ndarray on the CPU; `fusion`: images by the native per-pixel loop, else by the
    /// tensor stages.
    Cpu { precision: Precision, fusion: bool },
    /// burn-wgpu, f32, fused or not.
    Wgpu { fusion: bool },
}

impl Default for Engine {
    fn default() -> Self {
        Engine::Cpu {
            precision: Precision::F64,
            fusion: true,
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

impl std::str::FromStr for Engine {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Engine::from_name(s)
    }
}

/// A computation generic over the backend, run by [`Engine::run`] on the engine's backend.
pub trait BackendTask {
    type Output;
    /// Run on backend `B` (its autodiff wrapper is `Autodiff<B>`, on the same device).
    fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output>;
}

impl Engine {
    /// Every engine, in the order benchmarks list them.
    pub const ALL: [Engine; 6] = [
        Engine::Cpu {
            precision: Precision::F64,
            fusion: true,
        },
        Engine::Cpu {
            precision: Precision::F32,
            fusion: true,
        },
        Engine::Wgpu { fusion: true },
        Engine::Wgpu { fusion: false },
        Engine::Cpu {
            precision: Precision::F64,
            fusion: false,
        },
        Engine::Cpu {
            precision: Precision::F32,
            fusion: false,
        },
    ];

    /// Short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Cpu {
                precision: Precision::F64,
                fusion: true,
            } => "cpu (f64)",
            Engine::Cpu {
                precision: Precision::F32,
                fusion: true,
            } => "cpu (f32)",
            Engine::Cpu {
                precision: Precision::F64,
                fusion: false,
            } => "cpu (f64, tensor stages)",
            Engine::Cpu {
                precision: Precision::F32,
                fusion: false,
            } => "cpu (f32, tensor stages)",
            Engine::Wgpu { fusion: true } => "wgpu (fused)",
            Engine::Wgpu { fusion: false } => "wgpu (unfused)",
        }
    }

    /// The identifier [`Engine::from_name`] parses: `cpu`, `cpu-f32`, `wgpu`, `wgpu-nofusion`,
    /// `cpu-nofusion`, `cpu-f32-nofusion`.
    pub fn id(&self) -> &'static str {
        match self {
            Engine::Cpu {
                precision: Precision::F64,
                fusion: true,
            } => "cpu",
            Engine::Cpu {
                precision: Precision::F32,
                fusion: true,
            } => "cpu-f32",
            Engine::Cpu {
                precision: Precision::F64,
                fusion: false,
            } => "cpu-nofusion",
            Engine::Cpu {
                precision: Precision::F32,
                fusion: false,
            } => "cpu-f32-nofusion",
            Engine::Wgpu { fusion: true } => "wgpu",
            Engine::Wgpu { fusion: false } => "wgpu-nofusion",
        }
    }

    /// Parse an engine identifier: `cpu` (= `cpu-f64`), `cpu-f32`, `wgpu` (= `wgpu-fusion`),
    /// `wgpu-nofusion` (= `wgpu-unfused`), `cpu-nofusion` (= `cpu-f64-nofusion`),
    /// `cpu-f32-nofusion`. The plain names are fused: the environment is not read.
    pub fn from_name(name: &str) -> Result<Engine> {
        let cpu = |precision, fusion| Engine::Cpu { precision, fusion };
        Ok(match name {
            "cpu" | "cpu-f64" => cpu(Precision::F64, true),
            "cpu-f32" => cpu(Precision::F32, true),
            "cpu-nofusion" | "cpu-f64-nofusion" => cpu(Precision::F64, false),
            "cpu-f32-nofusion" => cpu(Precision::F32, false),
            "wgpu" | "wgpu-fusion" | "wgpu-fused" => Engine::Wgpu { fusion: true },
            "wgpu-nofusion" | "wgpu-unfused" => Engine::Wgpu { fusion: false },
            other => {
                return Err(Error::Engine {
                    engine: other.into(),
                    message: "unknown engine (available: cpu, cpu-f32, wgpu, wgpu-nofusion, cpu-nofusion, \
                              cpu-f32-nofusion)"
                        .into(),
                })
            }
        })
    }

    /// The engine the CLI's `-engine`, `-precision` and `-fusion` flags select (`None` = not
    /// given). wgpu computes in f32 only: asking it for f64 is an error naming the engine.
    /// Without `-fusion`, fusion follows [`FUSION_ENV`] and is on by default.
    pub fn select(kind: EngineKind, precision: Option<Precision>, fusion: Option<bool>) -> Result<Engine> {
        let fusion = match fusion {
            Some(f) => f,
            None => fusion_from_env()?.unwrap_or(true),
        };
        match kind {
            EngineKind::Cpu => Ok(Engine::Cpu {
                precision: precision.unwrap_or_default(),
                fusion,
            }),
            EngineKind::Wgpu => {
                if precision == Some(Precision::F64) {
                    return Err(Error::Engine {
                        engine: "wgpu".into(),
                        message: "computes in f32 only (f64 transcendentals are not reliable in \
                                  Vulkan/WGSL shaders and burn's fusion rejects f64); use \
                                  -precision f32, or -engine cpu for f64"
                            .into(),
                    });
                }
                Ok(Engine::Wgpu { fusion })
            }
        }
    }

    /// The options this engine renders with: `base`, with the engine's chunking and whether
    /// images render by one kernel or loop (`pixel_kernel`: fused). The CPU keeps `base`'s
    /// threads and chunks; wgpu uses one worker (the device is shared, and llvmpipe already runs
    /// `LP_NUM_THREADS` threads, see [`crate::base::threads::apply_process_wide`]) and chunks of up
    /// to [`WGPU_CHUNK_ELEMENTS`] unless `base` sets a cap.
    pub fn options(&self, base: &RenderOptions) -> RenderOptions {
        match self {
            // fused: the image by the native per-pixel loop; unfused: the tensor stages
            Engine::Cpu { fusion, .. } => RenderOptions {
                pixel_kernel: *fusion,
                ..base.clone()
            },
            Engine::Wgpu { fusion } => RenderOptions {
                threads: 1,
                max_chunk_elements: Some(base.max_chunk_elements.unwrap_or(WGPU_CHUNK_ELEMENTS)),
                // spans stay on the GPU; the finished image is read back once
                assemble_on_device: true,
                // fused: the whole render as one kernel (torch.compile's role); unfused: the
                // tensor stages op by op
                pixel_kernel: *fusion,
                ..base.clone()
            },
        }
    }

    /// Check that the engine can start; returns a description of the device (for wgpu: the
    /// adapter, driver and graphics API). Fails with [`Error::Engine`] naming the engine.
    pub fn probe(&self) -> Result<String> {
        match self {
            Engine::Cpu { .. } => Ok("burn-ndarray on the CPU".into()),
            Engine::Wgpu { .. } => wgpu_probe().map_err(|message| Error::Engine {
                engine: self.name().into(),
                message,
            }),
        }
    }

    /// Run a generic task on this engine's backend and device. The wgpu engines probe for an
    /// adapter first, and a panic inside burn/cubecl (e.g. a device lost) becomes
    /// [`Error::Engine`].
    pub fn run<T: BackendTask>(&self, task: T) -> Result<T::Output> {
        let engine_err = |message: String| Error::Engine {
            engine: self.name().into(),
            message,
        };
        match self {
            Engine::Cpu { precision, .. } => {
                let device = NdArrayDevice::Cpu;
                tune_process();
                match precision {
                    Precision::F64 => {
                        init_cpu_dtype::<NdArray<f64>>(&device, DType::F64).map_err(engine_err)?;
                        task.run::<NdArray<f64>>(&device)
                    }
                    Precision::F32 => {
                        init_cpu_dtype::<NdArray<f32>>(&device, DType::F32).map_err(engine_err)?;
                        task.run::<NdArray<f32>>(&device)
                    }
                }
            }
            Engine::Wgpu { fusion } => run_wgpu(*fusion, task).map_err(|e| match e {
                WgpuFailure::Task(e) => e,
                WgpuFailure::Engine(m) => engine_err(m),
            }),
        }
    }

    /// Render an experiment on this engine, with the engine's chunking ([`Engine::options`]).
    pub fn render(&self, exp: &Experiment, opts: &RenderOptions) -> Result<Image> {
        struct Render<'a> {
            exp: &'a Experiment,
            opts: RenderOptions,
        }
        impl BackendTask for Render<'_> {
            type Output = Image;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Image> {
                render::<B>(self.exp, &self.opts, device)
            }
        }
        self.run(Render {
            exp,
            opts: self.options(opts),
        })
    }

    /// [`Engine::render`] with the amorphous background of `background` (`-stol`) added
    /// ([`render_with_background`]).
    pub fn render_with_background(
        &self,
        exp: &Experiment,
        opts: &RenderOptions,
        background: &BackgroundScene,
    ) -> Result<Image> {
        struct Render<'a> {
            exp: &'a Experiment,
            opts: RenderOptions,
            background: &'a BackgroundScene,
        }
        impl BackendTask for Render<'_> {
            type Output = Image;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Image> {
                render_with_background::<B>(self.exp, &self.opts, self.background, device)
            }
        }
        self.run(Render {
            exp,
            opts: self.options(opts),
            background,
        })
    }

    /// Render shots that batch together ([`Experiment::batches_with`]) in one graph on this
    /// engine: an image per shot (see [`render_batch`]).
    pub fn render_batch(&self, shots: &[Experiment], opts: &RenderOptions) -> Result<Vec<Image>> {
        struct Batch<'a> {
            shots: &'a [Experiment],
            opts: RenderOptions,
        }
        impl BackendTask for Batch<'_> {
            type Output = Vec<Image>;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Vec<Image>> {
                render_batch::<B>(self.shots, &self.opts, device)
            }
        }
        self.run(Batch {
            shots,
            opts: self.options(opts),
        })
    }

    /// The image and Σ_p w_p·∂I_p/∂θ for every continuous parameter θ, on this engine
    /// ([`PixelKernel::vjp`]); see [`crate::gradients::image_vjp`].
    pub fn image_vjp(
        &self,
        cfg: &SimConfig,
        exp: &Experiment,
        weights: Option<&[f32]>,
        opts: &RenderOptions,
    ) -> Result<(Image, Vec<ParamGradient>)> {
        self.image_vjp_at(&At::own(cfg, exp, opts), weights)
    }

    /// [`Engine::image_vjp`] at the point `at`: its configuration with the parameter values
    /// `at.values` in place of the configuration's, rendered with `at.opts` as this engine
    /// adapts them ([`Engine::options`]).
    pub fn image_vjp_at(&self, at: &At<'_>, weights: Option<&[f32]>) -> Result<(Image, Vec<ParamGradient>)> {
        struct Vjp<'a> {
            at: At<'a>,
            weights: Option<&'a [f32]>,
        }
        impl BackendTask for Vjp<'_> {
            type Output = (Image, Vec<ParamGradient>);
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output> {
                let vjp = B::vjp(&self.at, &fixed_weights(self.at.exp, self.weights)?, device)?;
                Ok((vjp.image, vjp.gradients))
            }
        }
        let opts = self.options(at.opts);
        self.run(Vjp {
            at: At { opts: &opts, ..*at },
            weights,
        })
    }

    /// Derivative images `names` (see [`crate::gradients::derivative::DERIVATIVES`]) on this engine
    /// ([`PixelKernel::derivative_images`]); see [`crate::gradients::derivative::derivative_images`].
    pub fn derivatives(
        &self,
        cfg: &SimConfig,
        exp: &Experiment,
        names: &[&str],
        opts: &RenderOptions,
    ) -> Result<Vec<DerivativeImage>> {
        self.derivatives_at(&At::own(cfg, exp, opts), names)
    }

    /// [`Engine::derivatives`] at the point `at` (as [`Engine::image_vjp_at`] reads it).
    pub fn derivatives_at(&self, at: &At<'_>, names: &[&str]) -> Result<Vec<DerivativeImage>> {
        struct Derivatives<'a> {
            at: At<'a>,
            names: &'a [&'a str],
        }
        impl BackendTask for Derivatives<'_> {
            type Output = Vec<DerivativeImage>;
            fn run<B: PixelKernel>(self, device: &B::Device) -> Result<Self::Output> {
                B::derivative_images(&self.at, self.names, device).map(|(_, d)| d)
            }
        }
        let opts = self.options(at.opts);
        self.run(Derivatives {
            at: At { opts: &opts, ..*at },
            names,
        })
    }
}

impl RunOptions {
    /// The engine these options select (see [`Engine::select`]; reads `NANOBRAGG_FUSION`).
    pub fn engine(&self) -> Result<Engine> {
        let engine = Engine::select(self.engine, self.precision, self.fusion)?;
        if let (Engine::Wgpu { .. }, Some(choice)) = (engine, &self.gpu) {
            crate::base::gpu::select_gpu(choice).map_err(|message| Error::Engine {
                engine: engine.name().into(),
                message,
            })?;
        }
        Ok(engine)
    }
}

/// `-fusion` from [`FUSION_ENV`]: `None` when unset or empty.
pub fn fusion_from_env() -> Result<Option<bool>> {
    match std::env::var(FUSION_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::Config(format!("{FUSION_ENV}: not valid UTF-8"))),
        Ok(v) => parse_switch(&v).map_err(|m| Error::Config(format!("{FUSION_ENV}={v}: {m}"))),
    }
}

enum WgpuFailure {
    /// The task itself returned an error.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    Task(Error),
    /// The engine could not start or panicked.
    Engine(String),
}

#[cfg(feature = "gpu")]
fn run_wgpu<T: BackendTask>(fusion: bool, task: T) -> std::result::Result<T::Output, WgpuFailure> {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    wgpu_probe().map_err(WgpuFailure::Engine)?;
    let device = crate::base::gpu::wgpu_device();
    let out = catch_unwind(AssertUnwindSafe(|| {
        if fusion {
            task.run::<WgpuFused>(&device)
        } else {
            task.run::<WgpuUnfused>(&device)
        }
    }));
    match out {
        Ok(r) => r.map_err(WgpuFailure::Task),
        Err(payload) => Err(WgpuFailure::Engine(format!("failed: {}", panic_message(&*payload)))),
    }
}

#[cfg(not(feature = "gpu"))]
fn run_wgpu<T: BackendTask>(_fusion: bool, _task: T) -> std::result::Result<T::Output, WgpuFailure> {
    Err(WgpuFailure::Engine(wgpu_probe().unwrap_err()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in Engine::ALL {
            assert_eq!(Engine::from_name(e.id()).unwrap(), e);
            assert_eq!(e.to_string().parse::<Engine>().unwrap(), e);
        }
        assert_eq!(
            Engine::from_name("wgpu-unfused").unwrap(),
            Engine::Wgpu { fusion: false }
        );
        let e = Engine::from_name("cuda").unwrap_err().to_string();
        assert!(e.contains("cuda") && e.contains("wgpu-nofusion"), "{e}");
    }

    #[test]
    fn wgpu_is_f32_only_and_fusion_applies_to_every_engine() {
        let e = Engine::select(EngineKind::Wgpu, Some(Precision::F64), None).unwrap_err();
        assert!(matches!(&e, Error::Engine { engine, .. } if engine == "wgpu"), "{e}");
        assert!(e.to_string().contains("f32"), "{e}");
        assert_eq!(
            Engine::select(EngineKind::Wgpu, Some(Precision::F32), Some(false)).unwrap(),
            Engine::Wgpu { fusion: false }
        );
        assert_eq!(
            Engine::select(EngineKind::Cpu, None, Some(false)).unwrap(),
            Engine::from_name("cpu-nofusion").unwrap()
        );
        assert_eq!(
            Engine::select(EngineKind::Cpu, Some(Precision::F32), Some(true)).unwrap(),
            Engine::Cpu {
                precision: Precision::F32,
                fusion: true
            }
        );
    }

    #[test]
    fn switch_spellings() {
        assert_eq!(parse_switch("0"), Ok(Some(false)));
        assert_eq!(parse_switch(" OFF "), Ok(Some(false)));
        assert_eq!(parse_switch("on"), Ok(Some(true)));
        assert_eq!(parse_switch(""), Ok(None));
        assert!(parse_switch("maybe").is_err());
    }

    #[test]
    fn wgpu_chunking_is_chosen_by_the_engine() {
        let base = RenderOptions::default();
        let w = Engine::Wgpu { fusion: true }.options(&base);
        assert_eq!((w.threads, w.max_chunk_elements), (1, Some(WGPU_CHUNK_ELEMENTS)));
        let capped = RenderOptions {
            max_chunk_elements: Some(1000),
            ..Default::default()
        };
        assert_eq!(
            Engine::Wgpu { fusion: false }.options(&capped).max_chunk_elements,
            Some(1000)
        );
        let c = Engine::default().options(&base);
        assert_eq!((c.threads, c.max_chunk_elements), (base.threads, None));
    }

    #[test]
    fn panic_payloads_become_messages() {
        let p = std::panic::catch_unwind(|| panic!("No possible adapter available")).unwrap_err();
        assert_eq!(crate::base::error::panic_message(&*p), "No possible adapter available");
        let n = 3;
        let p = std::panic::catch_unwind(|| panic!("lost {n}")).unwrap_err();
        assert_eq!(crate::base::error::panic_message(&*p), "lost 3");
    }
}
