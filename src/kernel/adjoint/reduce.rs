//! The workgroup's sums: a thread's accumulators summed over the workgroup in thread order
//! into its row of `partials` (or contracted with tangents into derivative images), and the
//! second launch that sums the rows in row order. No float atomics: the same inputs give the
//! same bits.

use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use cubecl::prelude::*;

/// The workgroup's sum of `values[0..columns]` over its threads, in thread order, into (or,
/// with `add`, onto) `output[at..at + min(columns, limit)]`. Every thread of the workgroup
/// calls it (it synchronises them).
#[cube]
pub(crate) fn reduce_columns(
    values: &Array<f32>,
    #[comptime] columns: usize,
    shared: &mut SharedMemory<f32>,
    output: &mut Array<f32>,
    at: usize,
    limit: usize,
    unit: usize,
    add: bool,
) {
    #[unroll]
    for j in 0..columns {
        shared[unit * columns + j] = values[j];
    }
    sync_cube();
    if unit < columns && unit < limit {
        let mut s = 0.0;
        for t in 0..WORKGROUP {
            s += shared[t * columns + unit];
        }
        if add {
            output[at + unit] += s;
        } else {
            output[at + unit] = s;
        }
    }
    sync_cube();
}

/// `values[0..columns]` = 0.
#[cube]
pub(crate) fn zero(values: &mut Array<f32>, #[comptime] columns: usize) {
    #[unroll]
    for j in 0..columns {
        values[j] = 0.0;
    }
}

/// Σ_j `values[j]`·`tangents[at + j]` over the `columns` values.
#[cube]
pub(crate) fn contract(
    values: &Array<f32>,
    #[comptime] from: usize,
    #[comptime] columns: usize,
    tangents: &Array<f32>,
    at: usize,
) -> f32 {
    let mut s = 0.0;
    #[unroll]
    for j in 0..columns {
        s += values[from + j] * tangents[at + j];
    }
    s
}

/// Where a pixel's adjoint goes: `n` derivative images of `pixels` (at `pixel`), or the
/// workgroup's row `row` of partials (thread `unit`), each `width` = G_GLOBALS + 12·`per_shot`
/// columns wide.
#[derive(CubeType, Clone, Copy)]
pub struct Outlet {
    pub n: usize,
    pub width: usize,
    pub per_shot: usize,
    pub pixel: usize,
    pub pixels: usize,
    pub row: usize,
    pub unit: usize,
}

/// The thread's orientation accumulators `orient` of batch `batch`: contracted with the
/// tangents `input` into the pixel's derivative images (`derivatives`), else summed over the
/// workgroup into its partials (added to what is there with `add`). Every thread of the
/// workgroup calls it.
#[allow(clippy::too_many_arguments)]
#[cube]
pub(crate) fn emit_rows(
    orient: &Array<f32>,
    batch: usize,
    add: bool,
    input: &Array<f32>,
    output: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    to: Outlet,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    let batch_rows = sw.orientation_batch;
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let column = G_GLOBALS + batch * batch_columns;
    if derivatives {
        let rows = min(to.per_shot - batch * batch_rows, batch_rows) * ORIENTATION_WIDTH;
        for k in 0..to.n {
            let mut s = 0.0;
            #[unroll]
            for m in 0..batch_rows {
                if m * ORIENTATION_WIDTH < rows {
                    s += contract(
                        orient,
                        m * ORIENTATION_WIDTH,
                        ORIENTATION_WIDTH,
                        input,
                        k * to.width + column + m * ORIENTATION_WIDTH,
                    );
                }
            }
            output[k * to.pixels + to.pixel] += s;
        }
    } else {
        reduce_columns(
            orient,
            batch_columns,
            shared,
            output,
            to.row + column,
            to.width - column,
            to.unit,
            add,
        );
    }
}

/// Shared memory the pass needs: one row of batch columns per thread for the reduction.
pub(crate) fn shared_len(derivatives: bool, batch_columns: usize) -> usize {
    if derivatives {
        1
    } else {
        WORKGROUP * batch_columns.max(G_GLOBALS)
    }
}

/// `sums[j]` = Σ_b `partials[b·width + j]`, b in order (width = `sums`' length): the second
/// launch of the vector–Jacobian product.
#[cube(launch_unchecked)]
pub fn sum_partials(partials: &Array<f32>, sums: &mut Array<f32>) {
    let j = ABSOLUTE_POS;
    let width = sums.len();
    if j < width {
        let rows = partials.len() / width;
        let mut s = 0.0;
        for b in 0..rows {
            s += partials[b * width + j];
        }
        sums[j] = s;
    }
}
