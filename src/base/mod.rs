//! The bottom layer: what every layer above uses and that knows nothing of the simulation.
//!
//! * [`error`]: the crate's error type; [`vec3`]: host-side 3-vectors in f64; [`rng`]: C's
//!   random numbers; [`cfmt`]: C's `printf` number formats; [`trig`]: sines of tensors,
//!   accurate in f32; [`series`]: the special functions' series, thresholds and switch
//!   points, for the tensor stages and the kernels alike.
//! * [`device`]: process-wide facts about the devices; [`gpu`]: the wgpu adapter;
//!   [`workers`], [`threads`]: the worker pool and how many threads a run may keep busy.

pub mod cfmt;
pub(crate) mod device;
pub mod error;
pub mod gpu;
pub mod rng;
pub mod series;
pub mod threads;
pub mod trig;
pub mod vec3;
pub mod workers;
