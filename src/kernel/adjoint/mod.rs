//! The adjoint of the pixel kernel: Σ_p w_p·∂I_p/∂z for the scene variables z, in one launch
//! plus one small reduction, reverse mode by hand (CubeCL has no autodiff).
//!
//! The stages' adjoints sit beside their forward helpers in [`super::stages`]: each returns
//! the forward value with its partial derivatives (`…_partials`), or pushes a cotangent back
//! to the variables the forward helper read (`…_adjoint`). Here they are composed: the term
//! pass ([`terms`]), the workgroup's sums ([`reduce`]), one pixel an invocation
//! ([`pixel_path`]: [`pixel_vjp`], [`pixel_derivatives`]) and several image rows an
//! invocation ([`image_rows`]). The tensor stages (`src/physics/`) stay the reference;
//! `src/tests/kernel_vjp.rs` holds the two against each other.
//!
//! **Accumulation.** A pixel's image is I = scale·(I_bg + Σ_n F_n²·L_n²)·Ω·P·C (physics
//! reference §7; Ω, P and C are C's cached first-sample factors), so the cotangent of every
//! term is the same number w·scale·Ω·P·C: one pass over the samples gives every term's
//! adjoint, and the sum that the factors' adjoints need. The pass runs over batches of up to
//! [`ORIENTATION_BATCH`] orientation rows, C's loop inside each batch, so each thread keeps
//! the 12 adjoints of each row of the batch and the [`G_GLOBALS`] of the rest in registers.
//! After each batch, and for the rest at the end, the 64 threads of a workgroup write theirs
//! to shared memory and one thread per column sums it, in thread order, into the workgroup's
//! row of `partials`; [`sum_partials`] then sums the rows, in row order. No float atomics:
//! the same inputs give the same bits. Where the products are off (`Switches::image_rows`),
//! each thread takes several image rows into the same accumulators before each workgroup sum
//! ([`image_rows`]): one sum for that many pixels a thread. Their cached factors are
//! evaluated once before the batches and their adjoints once after them (the adjoints are
//! linear in the running sum). The inputs the terms read are in registers
//! ([`super::registers`]).
//!
//! Covered: the four spot shapes, default_F, nearest-neighbour and tricubic structure factors
//! (C's fall-back included; the grid values' own gradient is the scatter kernel's,
//! [`super::scatter`]), polarization, `-dmin`, absorption layers, point pixels, the curved
//! detector, ROI and mask, water, several sources, φ steps and mosaic domains, the
//! `-oversample_*` products, one shot per launch ([`super::vjp::kernel_covers`]).
//!
//! **The `-oversample_*` products.** C multiplies the running sum by each counted term's
//! factors f after the term, so I = I_bg·Π f + Σ_n t_n·Π_{m≥n} f_m. Where a shot's orientation
//! rows fit one batch, the pass is forward mode over the pixel ([`terms::batch_terms`]). With
//! more rows (`Switches::rows_reversed`), the rows of earlier batches would need the factors
//! of terms not yet seen, so the pass takes everything but the rows in forward mode over C's
//! order, then sweeps the terms in C's order backwards, one (sample, batch) block at a time,
//! carrying ∂I/∂running after the current block, the product of the later terms' factors, as
//! one number.

#[cfg(doc)]
use super::layout::{G_GLOBALS, ORIENTATION_BATCH};

mod image_rows;
mod pixel_path;
mod reduce;
pub(crate) mod terms;

pub use pixel_path::{pixel_derivatives, pixel_vjp};
pub use reduce::sum_partials;
#[cfg(test)]
pub(crate) use reduce::zero;
