//! What a thread copies into its registers before its loops.
//!
//! Each thread copies `params` and `counts` at the start ([`copy_f32`]), and the adjoint
//! kernels each orientation batch, with its rows' incident directions, once before its terms
//! ([`load_batch`]): the terms then read no storage buffer (llvmpipe reads each element of one
//! lane by lane, with a bounds check; on llvmpipe this took the heavy adjoint kernel from
//! 0.78 s to 0.32 s).

use super::job::Switches;
use super::layout::*;
use cubecl::prelude::*;

/// `local[0..len]` = `values[0..len]`: a thread's own copy of a small input array, so the
/// loops read registers, not the storage buffer (which SIMD drivers such as llvmpipe load
/// lane by lane, with a bounds check each).
#[cube]
pub(crate) fn copy_f32(values: &Array<f32>, local: &mut Array<f32>, #[comptime] len: usize) {
    #[unroll]
    for j in 0..len {
        local[j] = values[j];
    }
}

/// [`copy_f32`] for `i32` arrays.
#[cube]
pub(crate) fn copy_i32(values: &Array<i32>, local: &mut Array<i32>, #[comptime] len: usize) {
    #[unroll]
    for j in 0..len {
        local[j] = values[j];
    }
}

/// `len` registers with [`Switches::rows_in_registers`] (for the source's row or the
/// orientation rows), else one (unused).
pub(crate) fn still_registers(sw: Switches, len: usize) -> usize {
    if sw.rows_in_registers {
        len
    } else {
        1
    }
}

/// Numbers a thread keeps for each row of an orientation batch: the row's 12 (a/λ, b/λ, c/λ,
/// the offsets) at m·12, then its source's incident direction at B·12 + 3m.
pub(crate) const BATCH_ROW: usize = ORIENTATION_WIDTH + 3;

/// Batch `batch` (rows b·B..b·B + B of the shot, those below `per_shot`) into the thread's
/// `batch_rows` [B·[`BATCH_ROW`]], which the terms read instead of the storage buffers (see
/// [`copy_f32`]).
#[cube]
pub(crate) fn load_batch(
    orientations: &Array<f32>,
    sources: &Array<f32>,
    per_shot: usize,
    per_source: usize,
    batch: usize,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    if comptime!(sw.rows_in_registers) {
        load_only_batch(orientations, sources, batch_rows, sw);
    } else {
        #[unroll]
        for m in 0..sw.orientation_batch {
            let o = batch * sw.orientation_batch + m;
            if o < per_shot {
                #[unroll]
                for j in 0..ORIENTATION_WIDTH {
                    batch_rows[m * ORIENTATION_WIDTH + j] = orientations[o * ORIENTATION_WIDTH + j];
                }
                let row = (o / per_source) * SOURCE_WIDTH + INCIDENT;
                #[unroll]
                for j in 0..3usize {
                    batch_rows[comptime!(sw.orientation_batch * ORIENTATION_WIDTH + 3 * m + j)] = sources[row + j];
                }
            }
        }
    }
}

/// [`load_batch`] where the one source's rows fit one batch ([`Switches::rows_in_registers`]):
/// every row and source 0's incident direction, at constant offsets and without a branch.
#[cube]
fn load_only_batch(
    orientations: &Array<f32>,
    sources: &Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    #[unroll]
    for j in 0..comptime!(sw.orientation_batch * ORIENTATION_WIDTH) {
        batch_rows[j] = orientations[j];
    }
    #[unroll]
    for m in 0..sw.orientation_batch {
        #[unroll]
        for j in 0..3usize {
            batch_rows[comptime!(sw.orientation_batch * ORIENTATION_WIDTH + 3 * m + j)] = sources[INCIDENT + j];
        }
    }
}
