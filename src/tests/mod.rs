//! The crate's tests of its internals across layers: the kernels against the tensor stages,
//! the stages against their formulas, the one geometry, gradients against finite differences
//! and autodiff, and autodiff under threads. They reach modules the public API keeps private,
//! so they live in the crate; the tests of the public API and the binaries are in
//! `tests/integration`, and both suites share its helpers (`tests/integration/common.rs`).
//!
//! Tests that run code of their own on every engine's backend (a [`crate::engine::BackendTask`]
//! over `NdArray` and both wgpu engines) live here too, public API or not: this test binary
//! compiles those backends' tensor code anyway, where the integration binary, which calls the
//! library's non-generic API, would compile it a second time (minutes of the test build).
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
mod gradcheck;
mod gradients;
mod kernel;
mod kernel_vjp;
mod native_f32;
mod native_vjp;
mod refine;
mod stages;
mod threads;
mod wgpu;
