//! One pixel an invocation: the vector–Jacobian kernel where the `-oversample_*` products
//! apply (or an image row a thread is all the launch asks), and the derivative-image kernel.

use super::image_rows::image_rows_vjp;
use super::reduce::{contract, emit_rows, reduce_columns, shared_len, zero, Outlet};
use super::terms::{batch_terms, factor_adjoints, first_nearest_term, pixel_factors, term_cotangent, PixelFactors};
use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use crate::kernel::pixel::is_rendered;
use crate::kernel::registers::{copy_f32, copy_i32, load_batch, still_registers, BATCH_ROW};
use cubecl::prelude::*;

/// One pixel's adjoint (x = fast, y = slow, one shot), 64 invocations per workgroup along
/// fast, then either the workgroup's reduction ([`pixel_vjp`]: `input` = weights, `output` =
/// partials) or the contraction with tangents ([`pixel_derivatives`]: `input` = tangents,
/// `output` = derivative images), chosen at compile time. In steps: the pixel and its weight
/// here, with the thread's accumulators and C's cached factors; its terms over the
/// orientation batches ([`orientation_passes`]); the cached factors' adjoints and the
/// accumulators' way out ([`finish_pixel`]).
#[allow(clippy::too_many_arguments)]
#[cube]
fn pixel_adjoint(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    input: &Array<f32>,
    output: &mut Array<f32>,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    let fpixels = counts[FPIXELS] as usize;
    let pixels = fpixels * counts[SPIXELS] as usize;
    let fast_at = ABSOLUTE_POS_X as usize;
    let pixel = ABSOLUTE_POS_Y as usize * fpixels + fast_at;
    let slow = ABSOLUTE_POS_Y as i32;
    let fast = fast_at as i32;
    let inside = fast_at < fpixels && pixel < pixels;
    let rendered = inside && is_rendered(counts, mask, slow, fast, sw.masked);
    let per_shot = counts[PER_SHOT] as usize;
    let width = G_GLOBALS + per_shot * ORIENTATION_WIDTH;
    let mut n = 0usize;
    let mut weight = 1.0;
    if derivatives {
        n = input.len() / width;
        if inside {
            for k in 0..n {
                output[k * pixels + pixel] = 0.0;
            }
        }
        if !rendered {
            terminate!();
        }
    } else {
        weight = 0.0;
        if rendered {
            weight = input[pixel];
        }
    }
    let active = rendered && weight != 0.0;
    let row = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) as usize * width;
    let unit = UNIT_POS_X as usize;
    let scale = scales[0];
    let batch_rows = sw.orientation_batch;
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let mut shared = SharedMemory::<f32>::new(comptime!(shared_len(derivatives, batch_columns)));
    let mut acc = Array::<f32>::new(G_GLOBALS);
    zero(&mut acc, G_GLOBALS);
    let mut orient = Array::<f32>::new(batch_columns);
    let mut batch_data = Array::<f32>::new(comptime!(sw.orientation_batch * BATCH_ROW));
    let factors = pixel_factors(params, counts, sources, slow, fast, sw);
    let g_term = term_cotangent(weight, scale, factors);
    let nearest_from = first_nearest_term(params, counts, sources, orientations, pixel as i32, slow, fast, sw);
    // ∂I/∂I_bg: the running sum starts at I_bg (the `-oversample_*` products scale it after)
    acc[G_I_BG] = g_term;
    let mut total = params[I_BG];
    let samples = counts[LAYERS] * counts[OVERSAMPLE] * counts[OVERSAMPLE];
    let batches = per_shot.div_ceil(batch_rows);
    let at = PixelPass {
        slow,
        fast,
        samples,
        batches,
        weight,
        scale,
        g_term,
        nearest_from,
        active,
    };
    let outlet = Outlet {
        n,
        width,
        per_shot,
        pixel,
        pixels,
        row,
        unit,
    };
    orientation_passes(
        params,
        counts,
        sources,
        orientations,
        hkl,
        input,
        output,
        at,
        &mut total,
        &mut acc,
        &mut orient,
        &mut batch_data,
        &mut shared,
        outlet,
        derivatives,
        sw,
    );
    finish_pixel(
        params,
        counts,
        sources,
        at,
        factors,
        total,
        &mut acc,
        input,
        output,
        &mut shared,
        outlet,
        derivatives,
        sw,
    );
}

/// What the steps of [`pixel_adjoint`] share of its pixel: where it is (slow, fast), its
/// samples (layers·os²) and orientation batches, its ∂L/∂I `weight`, the scale
/// r_e²·fluence/steps, its terms' cotangent w·scale·Ω·P·C, C's index of its first
/// nearest-neighbour term ([`first_nearest_term`]), and whether it adds anything (rendered,
/// weight ≠ 0).
#[derive(CubeType, Clone, Copy)]
struct PixelPass {
    slow: i32,
    fast: i32,
    samples: i32,
    batches: usize,
    weight: f32,
    scale: f32,
    g_term: f32,
    nearest_from: i32,
    active: bool,
}

/// The terms of pixel `at` over its orientation batches, from the running sum `total` (I_bg)
/// on, which they leave after them: their adjoints into `acc`, each batch's rows' out
/// through `outlet` ([`emit_rows`]). Every thread of the workgroup calls it.
#[allow(clippy::too_many_arguments)]
#[cube]
fn orientation_passes(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    input: &Array<f32>,
    output: &mut Array<f32>,
    at: PixelPass,
    total: &mut f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_data: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    outlet: Outlet,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    if sw.rows_reversed {
        reversed_batches(
            params,
            counts,
            sources,
            orientations,
            hkl,
            input,
            output,
            at,
            total,
            acc,
            orient,
            batch_data,
            shared,
            outlet,
            derivatives,
            sw,
        );
    } else {
        forward_batches(
            params,
            counts,
            sources,
            orientations,
            hkl,
            input,
            output,
            at,
            total,
            acc,
            orient,
            batch_data,
            shared,
            outlet,
            derivatives,
            sw,
        );
    }
}

/// [`orientation_passes`] with the `-oversample_*` products over several batches
/// (`Switches::rows_reversed`): everything but the orientation rows in forward mode over C's
/// order, then the rows in reverse mode, C's order backwards, one (sample, batch) block at a
/// time.
#[allow(clippy::too_many_arguments)]
#[cube]
fn reversed_batches(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    input: &Array<f32>,
    output: &mut Array<f32>,
    at: PixelPass,
    total: &mut f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_data: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    outlet: Outlet,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let samples = at.samples;
    let batches = at.batches;
    if at.active {
        *total = batch_terms(
            params,
            counts,
            sources,
            orientations,
            hkl,
            0,
            samples,
            0,
            batches,
            at.slow,
            at.fast,
            at.g_term,
            *total,
            at.nearest_from,
            acc,
            orient,
            batch_data,
            false,
            false,
            sw,
        );
    }
    let mut block = Array::<f32>::new(G_GLOBALS);
    // ∂I/∂running after the terms done so far: the product of the later terms' factors
    let mut later = at.g_term;
    for i in 0..samples {
        let q = samples - 1 - i;
        for j in 0..batches {
            let batch = batches - 1 - j;
            zero(orient, batch_columns);
            if at.active {
                zero(&mut block, G_GLOBALS);
                // block[G_I_BG] becomes the block's ∂running/∂running before it
                block[G_I_BG] = 1.0;
                batch_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    q,
                    q + 1,
                    batch,
                    batch + 1,
                    at.slow,
                    at.fast,
                    later,
                    0.0,
                    at.nearest_from,
                    &mut block,
                    orient,
                    batch_data,
                    false,
                    true,
                    sw,
                );
                later *= block[G_I_BG];
            }
            emit_rows(orient, batch, i > 0, input, output, shared, outlet, derivatives, sw);
        }
    }
}

/// [`orientation_passes`] batch by batch, each in C's order (forward mode where the
/// `-oversample_*` products apply: their rows fit one batch).
#[allow(clippy::too_many_arguments)]
#[cube]
fn forward_batches(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    input: &Array<f32>,
    output: &mut Array<f32>,
    at: PixelPass,
    total: &mut f32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_data: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    outlet: Outlet,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    let batch_columns = comptime!(sw.orientation_batch * ORIENTATION_WIDTH);
    let per_shot = outlet.per_shot;
    let per_source = per_shot / counts[SOURCES] as usize;
    for batch in 0..at.batches {
        zero(orient, batch_columns);
        load_batch(orientations, sources, per_shot, per_source, batch, batch_data, sw);
        if at.active {
            *total = batch_terms(
                params,
                counts,
                sources,
                orientations,
                hkl,
                0,
                at.samples,
                batch,
                batch + 1,
                at.slow,
                at.fast,
                at.g_term,
                *total,
                at.nearest_from,
                acc,
                orient,
                batch_data,
                true,
                true,
                sw,
            );
        }
        emit_rows(orient, batch, false, input, output, shared, outlet, derivatives, sw);
    }
}

/// The last step of [`pixel_adjoint`]: the cached factors' adjoints from the pixel's whole
/// running sum `total`, then the thread's accumulators contracted with the tangents into its
/// derivative images, or summed over the workgroup into its row of partials.
#[allow(clippy::too_many_arguments)]
#[cube]
fn finish_pixel(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    at: PixelPass,
    factors: PixelFactors,
    total: f32,
    acc: &mut Array<f32>,
    input: &Array<f32>,
    output: &mut Array<f32>,
    shared: &mut SharedMemory<f32>,
    outlet: Outlet,
    #[comptime] derivatives: bool,
    #[comptime] sw: Switches,
) {
    if at.active {
        factor_adjoints(
            params, counts, sources, at.slow, at.fast, factors, total, at.weight, at.scale, acc, sw,
        );
    }
    if derivatives {
        for k in 0..outlet.n {
            output[k * outlet.pixels + outlet.pixel] += contract(acc, 0usize, G_GLOBALS, input, k * outlet.width);
        }
    } else {
        reduce_columns(
            acc,
            G_GLOBALS,
            shared,
            output,
            outlet.row,
            G_GLOBALS,
            outlet.unit,
            false,
        );
    }
}

/// One invocation per `sw.image_rows` image pixels (x = fast, y = the block of slow rows, one
/// shot), 64 per workgroup along fast: the workgroup's Σ_p w_p·∂I_p/∂z into its row of
/// `partials` `[workgroups,
/// G_GLOBALS + 12·orientations]` (the layout's `G_*` slots, then a/λ, b/λ, c/λ and the
/// offsets of each orientation row). `weights` `[spixels·fpixels]` is ∂L/∂I; pixels outside
/// the ROI, masked or of weight 0 add nothing. The other inputs are the render's
/// ([`crate::kernel::pixel::render_pixels`]).
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked)]
pub fn pixel_vjp(
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
    // a thread's own copies ([`copy_f32`])
    let mut p = Array::<f32>::new(PARAMS);
    copy_f32(params, &mut p, PARAMS);
    let mut c = Array::<i32>::new(COUNTS);
    copy_i32(counts, &mut c, COUNTS);
    let mut source = Array::<f32>::new(comptime!(still_registers(sw, SOURCE_WIDTH)));
    if comptime!(sw.rows_in_registers) {
        copy_f32(sources, &mut source, SOURCE_WIDTH);
    }
    if comptime!(sw.image_rows > 1 && sw.rows_in_registers) {
        image_rows_vjp(&p, &c, &source, orientations, scales, hkl, mask, weights, partials, sw);
    } else if comptime!(sw.image_rows > 1) {
        image_rows_vjp(&p, &c, sources, orientations, scales, hkl, mask, weights, partials, sw);
    } else {
        pixel_adjoint(
            &p,
            &c,
            sources,
            orientations,
            scales,
            hkl,
            mask,
            weights,
            partials,
            false,
            sw,
        );
    }
}

/// One invocation per image pixel (x = fast, y = slow, one shot): the derivative images
/// `derivatives[k·P + pixel]` = dI_p/dθ_k = Σ_z ∂I_p/∂z·t_k[z] for the tangents `tangents`
/// `[K, width]` (t_k = ∂z/∂θ_k in the layout of [`pixel_vjp`]'s rows), 0 outside the ROI and
/// where masked: the adjoint of each pixel with weight 1, contracted with the tangents where
/// [`pixel_vjp`] reduces over the workgroup (forward mode's result, one launch).
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked)]
pub fn pixel_derivatives(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    tangents: &Array<f32>,
    derivatives: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    let mut p = Array::<f32>::new(PARAMS);
    copy_f32(params, &mut p, PARAMS);
    let mut c = Array::<i32>::new(COUNTS);
    copy_i32(counts, &mut c, COUNTS);
    pixel_adjoint(
        &p,
        &c,
        sources,
        orientations,
        scales,
        hkl,
        mask,
        tangents,
        derivatives,
        true,
        sw,
    );
}
