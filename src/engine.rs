//! Compute engines chosen at run time.
//!
//! `Cpu` runs the generic stages eagerly on burn-ndarray, in f64 (default) or f32. The float
//! dtype of a burn device is fixed per process (see `shared/reference/burn-notes.md` §3), so a
//! process must not render with both precisions.

use crate::config::SimConfig;
use crate::derivative::{derivative_images, DerivativeImage};
use crate::error::{Error, Result};
use crate::setup::Experiment;
use crate::simulate::{render, Image, RenderOptions};
use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::DType;

/// Floating-point precision of the CPU engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    F64,
    F32,
}

/// A compute engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// burn-ndarray on the CPU.
    Cpu { precision: Precision },
}

impl Default for Engine {
    fn default() -> Self {
        Engine::Cpu {
            precision: Precision::F64,
        }
    }
}

impl Engine {
    /// Short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Cpu {
                precision: Precision::F64,
            } => "cpu (f64)",
            Engine::Cpu {
                precision: Precision::F32,
            } => "cpu (f32)",
        }
    }

    /// Render an experiment on this engine.
    pub fn render(&self, exp: &Experiment, opts: &RenderOptions) -> Result<Image> {
        let device = NdArrayDevice::Cpu;
        let engine_err = |e: String| Error::Engine {
            engine: self.name().into(),
            message: e,
        };
        tune_allocator();
        match self {
            Engine::Cpu {
                precision: Precision::F64,
            } => {
                init_dtype::<NdArray<f64>>(&device, DType::F64).map_err(engine_err)?;
                render::<NdArray<f64>>(exp, opts, &device)
            }
            Engine::Cpu {
                precision: Precision::F32,
            } => {
                init_dtype::<NdArray<f32>>(&device, DType::F32).map_err(engine_err)?;
                render::<NdArray<f32>>(exp, opts, &device)
            }
        }
    }
}

impl Engine {
    /// Derivative images `names` (see [`crate::derivative::DERIVATIVES`]) on this engine,
    /// under burn's autodiff.
    pub fn derivatives(
        &self,
        cfg: &SimConfig,
        exp: &Experiment,
        names: &[&str],
        opts: &RenderOptions,
    ) -> Result<Vec<DerivativeImage>> {
        let device = NdArrayDevice::Cpu;
        let engine_err = |e: String| Error::Engine {
            engine: self.name().into(),
            message: e,
        };
        let out = match self {
            Engine::Cpu {
                precision: Precision::F64,
            } => {
                init_dtype::<NdArray<f64>>(&device, DType::F64).map_err(engine_err)?;
                derivative_images::<Autodiff<NdArray<f64>>>(cfg, exp, names, opts, &device)?
            }
            Engine::Cpu {
                precision: Precision::F32,
            } => {
                init_dtype::<NdArray<f32>>(&device, DType::F32).map_err(engine_err)?;
                derivative_images::<Autodiff<NdArray<f32>>>(cfg, exp, names, opts, &device)?
            }
        };
        Ok(out.1)
    }
}

/// Fix the device's default float dtype once per process; asking for another one later fails.
fn init_dtype<B: burn::tensor::backend::Backend>(device: &B::Device, dtype: DType) -> std::result::Result<(), String> {
    static CHOSEN: std::sync::OnceLock<DType> = std::sync::OnceLock::new();
    let chosen = *CHOSEN.get_or_init(|| {
        let _ = burn::tensor::set_default_dtypes::<B>(device, dtype, DType::I64);
        dtype
    });
    if chosen == dtype {
        Ok(())
    } else {
        Err(format!(
            "this process already renders in {chosen:?}; f32 and f64 cannot be mixed in one process"
        ))
    }
}

/// The CPU engine allocates a fresh buffer for nearly every tensor operation (a few hundred
/// KiB each). glibc serves buffers above its mmap threshold (128 KiB at start) with fresh
/// pages and trims freed heap memory back to the OS, so every operation paid page faults
/// (about a fifth of a light render's CPU time, as system time). Raising both thresholds
/// keeps freed buffers for reuse; peak memory is still bounded by the chunk budget.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes allocator parameters; it is thread-safe in glibc.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
            }
        });
    }
}
