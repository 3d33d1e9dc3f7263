//! The stages of C's per-pixel loop as `#[cube]` helpers: each stage's forward helper beside
//! its adjoint, in a file named after the physics (as the tensor stages in `src/physics/`).
//!
//! * [`vectors`]: lab vectors in registers; [`detector`]: sample positions (planar and
//!   curved), rays, the solid angle; [`absorption`]: the sensor's capture fraction;
//!   [`polarization`]: Kahn's factor; [`scattering`]: Miller indices and sin θ/λ (`-dmin`);
//!   [`lattice`]: sincg, sinc3 and the lattice factor; [`structure_factor`]: default_F, the
//!   grid by nearest neighbour or tricubic interpolation.
//!
//! A forward helper carries the name of its tensor stage; the forward kernel
//! ([`super::pixel`]) composes them. Beside it, `…_partials` returns the forward value with its
//! partial derivatives, and `…_adjoint` pushes a cotangent back into a thread's accumulators
//! (the layout's `G_*` slots) to the variables the forward helper read; the adjoint kernels
//! ([`super::adjoint`]) compose those. The tensor stages stay the reference
//! (`src/tests/kernel.rs`, `kernel_vjp.rs`); the thresholds and series coefficients
//! they share with the kernels are in [`crate::base::series`].
//!
//! Each file ends with its conformance tests: on the same inputs, the tensor stage in f64,
//! the forward helper through a small test kernel, and the adjoint or partials against
//! burn-autodiff of the tensor stage, at tolerances of a few f32 ulps of the values involved
//! ([`crate::kernel::testing`] launches them on wgpu, llvmpipe without a GPU). A wrong
//! partial in a rare branch fails there rather than inside an end-to-end tolerance.

pub mod absorption;
pub mod detector;
pub mod lattice;
pub mod polarization;
pub mod scattering;
pub mod structure_factor;
pub mod vectors;
