//! nanobragg's integration tests, one module per area, linked into one binary so burn and wgpu
//! link once. Tests that must not share a process with the others (an `NdArray<f32>` device,
//! whose dtype burn fixes per process) run themselves again in a child process
//! ([`common::own_process`]). `tests/external-crate` stays a package of its own: it is an
//! outside user of the embedding contract.
//!
//! These tests call the library's non-generic API. Tests that instantiate its generic code on a
//! backend (a `Simulator<B>` and the like) are in the crate's unit-test binary, `src/tests/`,
//! which compiles those instantiations once with the library (`src/tests/mod.rs`).

mod common;

mod architecture;
mod batch;
mod cbf;
mod cli;
mod compare;
mod derivative_files;
mod docs;
mod engine_at;
mod features;
mod fuzz_replay;
mod geometry;
mod launches;
mod native;
mod nexus;
mod noisify;
mod nonbragg;
mod outputs;
mod outside_crate;
mod parity;
mod parity_f32;
mod parity_wgpu;
mod robustness;
mod shots;
mod statistics;
mod threads;
mod trace;
mod wgpu_engine;
