//! The crate's tests of its internals across layers: the kernels against the tensor stages,
//! the stages against their formulas, the one geometry, gradients against finite differences
//! and autodiff, and autodiff under threads. They reach modules the public API keeps private,
//! so they live in the crate; the tests of the public API and the binaries are in
//! `tests/integration`, and both suites share its helpers (`tests/integration/common.rs`).
//!
//! Tests that instantiate the library's generic code on a backend (a [`crate::Simulator`] or
//! [`crate::PanelSimulator`], a refinement objective, a [`crate::engine::BackendTask`] over
//! `NdArray` and both wgpu engines) live here too, public API or not: a release build does not
//! share generic instantiations between crates, so the integration binary, which calls the
//! library's non-generic API, would compile each backend's render and gradients a second time
//! (minutes of the test build), where this binary compiles them once, with the library. Those
//! that compare with the `nanobragg` program's files run it through `common::run_program`
//! (this binary again, as the program: `program.rs`).
//!
//! The files name the crate `nanobragg::`, as the integration tests do (the crate root's
//! `extern crate self as nanobragg` in test builds).

#[path = "../../tests/integration/common.rs"]
pub(crate) mod common;

mod background;
mod burn_reshape;
mod concurrency;
mod derivatives;
mod diff_geometry;
#[cfg(feature = "app")]
mod embedding;
#[cfg(feature = "app")]
mod embedding_f32;
mod gradcheck;
mod gradcheck_api;
mod gradients;
mod kernel;
mod kernel_autodiff;
mod kernel_vjp;
mod native_f32;
mod native_vjp;
#[cfg(feature = "app")]
mod panel_simulator;
#[cfg(feature = "app")]
mod panels;
mod program;
mod refine;
#[cfg(feature = "app")]
mod refine_response;
mod stages;
mod threads;
mod wgpu;
