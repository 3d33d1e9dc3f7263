//! nanobragg: a differentiable re-implementation of the nanoBragg X-ray diffraction simulator
//! (J. Holton and K. Frankel) on burn.
//!
//! Data flow: [`config::SimConfig`] (what the user asked for, C defaults, SI units) →
//! [`experiment::Experiment`] (host-side resolution in f64: geometry, sampling, sources, mosaic
//! domains, structure factors) → [`scene`] (flat arrays, uploaded as tensors) →
//! [`physics`] stages (pure functions generic over the burn backend) composed by
//! [`render::render`] over chunks of pixels → [`render::Image`].

#[cfg(test)]
extern crate self as nanobragg;

#[cfg(feature = "app")]
pub mod app;
pub(crate) mod base;
pub mod config;
pub(crate) mod diff;
pub mod engine;
pub mod experiment;
pub mod gradients;
pub mod io;
pub(crate) mod kernel;
/// The tensor stages: public with the `stages` feature (the stage benchmarks, stages of your
/// own), the crate's own otherwise.
#[cfg(feature = "stages")]
pub mod physics;
#[cfg(not(feature = "stages"))]
pub(crate) mod physics;
pub mod refine;
pub mod render;
pub(crate) mod scene;
#[cfg(test)]
mod tests;

pub use base::error::{Error, Result};
pub use base::gpu::{gpu_adapters, select_gpu, Adapter};
pub use config::SimConfig;
pub use engine::render::{render, render_batch};
pub use engine::Engine;
pub use engine::{PanelSimulator, Simulator};
pub use experiment::Experiment;
pub use kernel::PixelKernel;
pub use refine::gradcheck::{gradcheck, ComponentCheck, GradcheckOptions, GradcheckReport};
pub use render::image::{Image, Statistics};
pub use render::RenderOptions;
pub use scene::params::Params;

/// The README and every guide in `docs/`, compiled by `cargo test` as doc tests so that their
/// Rust examples cannot drift from the API. `tests/integration/docs.rs` checks that every guide
/// is listed here and runs their shell commands.
#[cfg(doctest)]
pub mod guides {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../docs/architecture.md")]
    pub struct Architecture;
    #[doc = include_str!("../docs/benchmarks.md")]
    pub struct Benchmarks;
    #[doc = include_str!("../docs/differences.md")]
    pub struct Differences;
    #[doc = include_str!("../docs/embedding.md")]
    pub struct Embedding;
    #[doc = include_str!("../docs/engines.md")]
    pub struct Engines;
    #[doc = include_str!("../docs/gradients.md")]
    pub struct Gradients;
    #[doc = include_str!("../docs/many-shots.md")]
    pub struct ManyShots;
    #[doc = include_str!("../docs/noisify.md")]
    pub struct Noisify;
    #[doc = include_str!("../docs/nonbragg.md")]
    pub struct NonBragg;
    #[doc = include_str!("../docs/outputs.md")]
    pub struct Outputs;
    #[doc = include_str!("../docs/panels.md")]
    pub struct Panels;
    #[doc = include_str!("../docs/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../docs/python.md")]
    pub struct Python;
    #[doc = include_str!("../docs/refinement.md")]
    pub struct Refinement;
}
