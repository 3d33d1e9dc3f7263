//! The GPU render as one kernel: C's whole per-pixel loop as a CubeCL kernel, launched once per
//! image (or batch of shots), with the statistics C prints reduced by a second launch, the
//! image read back once.
//!
//! * [`stages`]: the per-pixel loop's stages as `#[cube]` helpers, each forward helper beside
//!   its adjoint; [`trig`]: sines on reduced arguments, accurate in f32 on any driver;
//!   [`registers`]: what a thread copies into registers.
//! * [`pixel`]: the render's kernels; [`layout`]: where the kernels find their inputs;
//!   [`job`]: the host's packing.
//! * [`adjoint`]: the render's adjoints, the vector–Jacobian product and the derivative images
//!   as kernels; [`scatter`]: the structure-factor grid's gradient; [`vjp`]: their launches
//!   from the host and their sums as gradients.
//! * [`native`]: the same loop in native Rust, burn-ndarray's render (f64 or f32), and its
//!   reverse pass (f64): the CPU engine's gradients and derivative images.
//! * [`PixelKernel`]: the backend extension (cube backend, fusion's custom op, burn-ndarray's
//!   native loop; autodiff renders a simulator's parameters with its inner backend's kernel).
//! * [`render`]: images from one launch, on any backend that has the kernel.
//!
//! The tensor stages (`src/render/mod.rs`) stay the reference; `src/tests/kernel.rs`
//! holds the two against each other and against C.

#[cfg(feature = "gpu")]
pub mod adjoint;
mod autodiff;
mod backend;
#[cfg(feature = "gpu")]
mod cube;
mod dispatch;
#[cfg(feature = "gpu")]
mod fusion;
pub mod job;
pub mod launch;
pub mod layout;
pub mod native;
mod ndarray;
#[cfg(feature = "gpu")]
pub mod pixel;
#[cfg(feature = "gpu")]
pub mod registers;
#[cfg(feature = "gpu")]
pub mod scatter;
#[cfg(feature = "gpu")]
pub mod stages;
#[cfg(all(test, feature = "gpu"))]
mod testing;
#[cfg(feature = "gpu")]
pub mod trig;
pub mod vjp;

pub use backend::PixelKernel;
