//! Several image rows an invocation of the vector–Jacobian kernel (`Switches::image_rows`,
//! without the `-oversample_*` products): every pixel of the thread adds into the same
//! accumulators, and one workgroup sum serves them all.

use super::reduce::{emit_rows, reduce_columns, shared_len, zero, Outlet};
use super::terms::{batch_terms, factor_adjoints, first_nearest_term, pixel_factors, term_cotangent};
use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use crate::kernel::pixel::is_rendered;
use crate::kernel::registers::{load_batch, BATCH_ROW};
use cubecl::prelude::*;

/// The pixels of [`image_rows_vjp`]'s invocation across its orientation batches: the scale
/// r_e²·fluence/steps, then one entry per image row: ∂L/∂I of the pixel (0 where it is not
/// rendered or has weight 0), its terms' cotangent w·scale·Ω·P·C, and its running sum so far.
#[derive(CubeType)]
struct RowPixels {
    scale: f32,
    weight: Array<f32>,
    g_term: Array<f32>,
    total: Array<f32>,
}

/// The image row, column and index of image row `r` of the invocation, `None` (slow = −1)
/// where it lies outside the image or is not rendered.
#[derive(CubeType, Clone, Copy)]
struct RowPixel {
    slow: i32,
    fast: i32,
    pixel: usize,
}

#[cube]
fn row_pixel(counts: &Array<i32>, mask: &Array<f32>, r: usize, #[comptime] sw: Switches) -> RowPixel {
    let fpixels = counts[FPIXELS] as usize;
    let spixels = counts[SPIXELS] as usize;
    let fast_at = ABSOLUTE_POS_X as usize;
    let slow_at = ABSOLUTE_POS_Y as usize * sw.image_rows + r;
    let mut out = RowPixel {
        slow: -1,
        fast: fast_at as i32,
        pixel: slow_at * fpixels + fast_at,
    };
    if fast_at < fpixels && slow_at < spixels && is_rendered(counts, mask, slow_at as i32, fast_at as i32, sw.masked) {
        out.slow = slow_at as i32;
    }
    out
}

/// Before the batches: each pixel's weight, cotangent and running sum (I_bg), and I_bg's
/// adjoint.
#[allow(clippy::too_many_arguments)]
#[cube]
fn rows_start(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    rows: &mut RowPixels,
    acc: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    for r in 0..sw.image_rows {
        rows.weight[r] = 0.0;
        rows.g_term[r] = 0.0;
        rows.total[r] = 0.0;
        let at = row_pixel(counts, mask, r, sw);
        if at.slow >= 0 {
            let weight = weights[at.pixel];
            if weight != 0.0 {
                let factors = pixel_factors(params, counts, sources, at.slow, at.fast, sw);
                let g_term = term_cotangent(weight, rows.scale, factors);
                rows.weight[r] = weight;
                rows.g_term[r] = g_term;
                rows.total[r] = params[I_BG];
                acc[G_I_BG] += g_term;
            }
        }
    }
}

/// After the batches: the cached factors' adjoints of each pixel, from its whole running sum.
#[allow(clippy::too_many_arguments)]
#[cube]
fn rows_finish(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    mask: &Array<f32>,
    rows: &RowPixels,
    acc: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    for r in 0..sw.image_rows {
        if rows.weight[r] != 0.0 {
            let at = row_pixel(counts, mask, r, sw);
            let factors = pixel_factors(params, counts, sources, at.slow, at.fast, sw);
            factor_adjoints(
                params,
                counts,
                sources,
                at.slow,
                at.fast,
                factors,
                rows.total[r],
                rows.weight[r],
                rows.scale,
                acc,
                sw,
            );
        }
    }
}

/// The terms of orientation batch `batch` (its rows in `batch_rows`, [`load_batch`]) of the
/// pixel `at`, with cotangent `g_term` each, into `acc` and `orient`; the running sum after
/// them, from `running` before.
#[allow(clippy::too_many_arguments)]
#[cube]
fn pixel_terms(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    at: RowPixel,
    batch: usize,
    g_term: f32,
    running: f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) -> f32 {
    let samples = counts[LAYERS] * counts[OVERSAMPLE] * counts[OVERSAMPLE];
    let nearest_from = first_nearest_term(
        params,
        counts,
        sources,
        orientations,
        at.pixel as i32,
        at.slow,
        at.fast,
        sw,
    );
    batch_terms(
        params,
        counts,
        sources,
        orientations,
        hkl,
        0,
        samples,
        batch,
        batch + 1,
        at.slow,
        at.fast,
        g_term,
        running,
        nearest_from,
        acc,
        orient,
        batch_rows,
        true,
        true,
        sw,
    )
}

/// The one-batch case of [`image_rows_vjp`]: each pixel's cached factors, its terms and the
/// factors' adjoints in one pass (the factors evaluated once).
#[allow(clippy::too_many_arguments)]
#[cube]
fn rows_one_batch(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    scale: f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    for r in 0..sw.image_rows {
        let at = row_pixel(counts, mask, r, sw);
        if at.slow >= 0 {
            let weight = weights[at.pixel];
            if weight != 0.0 {
                let factors = pixel_factors(params, counts, sources, at.slow, at.fast, sw);
                let g_term = term_cotangent(weight, scale, factors);
                acc[G_I_BG] += g_term;
                let total = pixel_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    at,
                    0,
                    g_term,
                    params[I_BG],
                    acc,
                    orient,
                    batch_rows,
                    sw,
                );
                factor_adjoints(
                    params, counts, sources, at.slow, at.fast, factors, total, weight, scale, acc, sw,
                );
            }
        }
    }
}

/// Batch `batch` of the image rows of [`image_rows_vjp`]'s invocation: every pixel's terms
/// of the batch into `acc` and `orient` (and its running sum into `rows`), then the
/// workgroup's sum of `orient` into its columns of `partials`. Every thread of the workgroup
/// calls it.
#[allow(clippy::too_many_arguments)]
#[cube]
fn image_rows_batch(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    partials: &mut Array<f32>,
    batch: usize,
    per_source: usize,
    rows: &mut RowPixels,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_data: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    outlet: Outlet,
    #[comptime] sw: Switches,
) {
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    zero(orient, batch_columns);
    load_batch(
        orientations,
        sources,
        outlet.per_shot,
        per_source,
        batch,
        batch_data,
        sw,
    );
    if comptime!(sw.one_batch) {
        rows_one_batch(
            params,
            counts,
            sources,
            orientations,
            hkl,
            mask,
            weights,
            rows.scale,
            acc,
            orient,
            batch_data,
            sw,
        );
    } else {
        for r in 0..sw.image_rows {
            if rows.weight[r] != 0.0 {
                let at = row_pixel(counts, mask, r, sw);
                let g_term = rows.g_term[r];
                let running = rows.total[r];
                rows.total[r] = pixel_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    at,
                    batch,
                    g_term,
                    running,
                    acc,
                    orient,
                    batch_data,
                    sw,
                );
            }
        }
    }
    emit_rows(orient, batch, false, weights, partials, shared, outlet, false, sw);
}

/// [`pixel_vjp`] where each invocation takes `sw.image_rows` image rows (x = fast, y = a block
/// of rows; `Switches::image_rows`): every pixel of the thread adds into the same
/// accumulators, and one workgroup sum serves them all. Each pixel's cached factors are
/// evaluated before the orientation batches and their adjoints after them.
#[allow(clippy::too_many_arguments)]
#[cube]
pub(crate) fn image_rows_vjp(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    partials: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    let per_shot = counts[PER_SHOT] as usize;
    let width = G_GLOBALS + per_shot * ORIENTATION_WIDTH;
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let mut shared = SharedMemory::<f32>::new(comptime!(shared_len(false, batch_columns)));
    let mut acc = Array::<f32>::new(G_GLOBALS);
    zero(&mut acc, G_GLOBALS);
    let mut orient = Array::<f32>::new(batch_columns);
    let mut batch_data = Array::<f32>::new(comptime!(sw.orientation_batch * BATCH_ROW));
    let mut rows = RowPixels {
        scale: scales[0],
        weight: Array::<f32>::new(sw.image_rows),
        g_term: Array::<f32>::new(sw.image_rows),
        total: Array::<f32>::new(sw.image_rows),
    };
    let per_source = per_shot / counts[SOURCES] as usize;
    let outlet = Outlet {
        n: 0,
        width,
        per_shot,
        pixel: 0,
        pixels: 0,
        row: (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) as usize * width,
        unit: UNIT_POS_X as usize,
    };
    if comptime!(sw.one_batch) {
        image_rows_batch(
            params,
            counts,
            sources,
            orientations,
            hkl,
            mask,
            weights,
            partials,
            0,
            per_source,
            &mut rows,
            &mut acc,
            &mut orient,
            &mut batch_data,
            &mut shared,
            outlet,
            sw,
        );
    } else {
        rows_start(params, counts, sources, mask, weights, &mut rows, &mut acc, sw);
        for batch in 0..per_shot.div_ceil(sw.orientation_batch) {
            image_rows_batch(
                params,
                counts,
                sources,
                orientations,
                hkl,
                mask,
                weights,
                partials,
                batch,
                per_source,
                &mut rows,
                &mut acc,
                &mut orient,
                &mut batch_data,
                &mut shared,
                outlet,
                sw,
            );
        }
        rows_finish(params, counts, sources, mask, &rows, &mut acc, sw);
    }
    reduce_columns(
        &acc,
        G_GLOBALS,
        &mut shared,
        partials,
        outlet.row,
        G_GLOBALS,
        outlet.unit,
        false,
    );
}
