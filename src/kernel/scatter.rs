//! The structure-factor grid's gradient Σ_p w_p·∂I_p/∂F_node as a deterministic scatter: one
//! launch after the vector–Jacobian kernel, when the grid's values are parameters.
//!
//! Each term adds its part g·∂term/∂F_node to the nodes it read (nearest neighbour: one;
//! tricubic: the 64 of its block) as a 64-bit fixed-point integer, the part times 2^e rounded,
//! by two 32-bit atomic additions: the low word, then the high word with the low word's carry.
//! Integer sums do not depend on their order, so the same inputs give the same bits (no float
//! atomics). The scale 2^e (`params[GRID_SCALE]`) comes from the host, from the bound Σ|parts|
//! that the vector–Jacobian kernel sums in its [`G_GRID_BOUND`] slot: with Σ|parts|·2^e ≤
//! 2^61 no sum can overflow, and each node's sum is exact to its parts' rounding, 2^−e each
//! ([`super::vjp::fixed_point_exponent`], [`super::vjp::fixed_point_values`]).
//!
//! The terms are visited in C's order backwards, so that under the `-oversample_*` products
//! each term's ∂I/∂term, the product of the later counted terms' factors, is one running
//! product (the order of the integer sums does not matter).

use super::adjoint::terms::{first_nearest_term, pixel_factors, term_cotangent, term_factor};
use super::job::Switches;
use super::layout::*;
use super::pixel::{counted, is_rendered};
use super::registers::{copy_f32, copy_i32};
use super::stages::detector::sample_ray;
use super::stages::lattice::lattice_factor_partials;
use super::stages::scattering::{kept, miller_index};
use super::stages::structure_factor::{block_node, lagrange_weight, nearest_node, structure_factor, tricubic_block};
use cubecl::prelude::*;

/// `x` (in fixed-point units, |x| < 2^62) rounded to an integer and added to node `node`'s
/// 64-bit two's-complement sum: words 2·node (low) and 2·node + 1 (high). |x| = high·2^32 +
/// low with 0 ≤ low < 2^32, both exact in f32 (|x| has 24 significant bits); a negative x is
/// subtracted, the borrow taken from the high word.
// u32 additions wrap in the kernel (WGSL's integer arithmetic): `old + low < old` is the carry
#[allow(clippy::panicking_overflow_checks)]
#[cube]
fn add_fixed(grid: &mut Array<Atomic<u32>>, node: usize, x: f32) {
    let two_32 = 4294967296.0f32;
    let whole = x.abs().round();
    let high_part = (whole / two_32).floor();
    let low = (whole - high_part * two_32) as u32;
    let high = high_part as u32;
    if whole != 0.0 {
        if x > 0.0 {
            let old = grid[2 * node].fetch_add(low);
            let mut carry = 0u32;
            if old + low < old {
                carry = 1u32;
            }
            grid[2 * node + 1].fetch_add(high + carry);
        } else {
            let old = grid[2 * node].fetch_sub(low);
            let mut borrow = 0u32;
            if old < low {
                borrow = 1u32;
            }
            grid[2 * node + 1].fetch_sub(high + borrow);
        }
    }
}

/// `g` into the nearest node of (h, k, l), where it lies in the grid.
#[cube]
fn scatter_nearest(counts: &Array<i32>, grid: &mut Array<Atomic<u32>>, h: f32, k: f32, l: f32, g: f32) {
    let node = nearest_node(counts, h, k, l);
    if node >= 0 {
        add_fixed(grid, node as usize, g);
    }
}

/// The parts `g`·w_i(h)·w_j(k)·w_m(l) of one tricubic term into the 64 nodes of its block
/// (clamped into the grid as `stages::structure_factor::tricubic` reads them).
#[cube]
fn scatter_tricubic(counts: &Array<i32>, grid: &mut Array<Atomic<u32>>, h: f32, k: f32, l: f32, g: f32) {
    let block = tricubic_block(counts, h, k, l);
    for i in 0..4u32 {
        let wi = g * lagrange_weight(block.th, i);
        for j in 0..4u32 {
            let wij = wi * lagrange_weight(block.tk, j);
            #[unroll]
            for m in 0..4u32 {
                add_fixed(grid, block_node(block, i, j, m), wij * lagrange_weight(block.tl, m));
            }
        }
    }
}

/// One invocation per image pixel (x = fast, y = slow, one shot), 64 per workgroup along
/// fast: each term's parts ∂L/∂F_node = w_p·scale·Ω·P·C·2F·L²·∂F/∂F_node, times
/// `params[GRID_SCALE]`, into `grid` `[2·nodes]` (zeroed by the caller). The other inputs are
/// [`super::adjoint::pixel_vjp`]'s.
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked)]
pub fn pixel_grid_vjp(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    weights: &Array<f32>,
    grid: &mut Array<Atomic<u32>>,
    #[comptime] sw: Switches,
) {
    // a thread's own copies ([`copy_f32`])
    let mut p = Array::<f32>::new(PARAMS);
    copy_f32(params, &mut p, PARAMS);
    let mut c = Array::<i32>::new(COUNTS);
    copy_i32(counts, &mut c, COUNTS);
    let fpixels = c[FPIXELS] as usize;
    let pixels = fpixels * c[SPIXELS] as usize;
    let fast_at = ABSOLUTE_POS_X as usize;
    let pixel = ABSOLUTE_POS_Y as usize * fpixels + fast_at;
    let slow = ABSOLUTE_POS_Y as i32;
    let fast = fast_at as i32;
    if fast_at >= fpixels || pixel >= pixels {
        terminate!();
    }
    if !is_rendered(&c, mask, slow, fast, sw.masked) {
        terminate!();
    }
    let factors = pixel_factors(&p, &c, sources, slow, fast, sw);
    let g_term = term_cotangent(weights[pixel], scales[0], factors);
    let nearest_from = first_nearest_term(&p, &c, sources, orientations, pixel as i32, slow, fast, sw);
    let os = c[OVERSAMPLE];
    let samples = c[LAYERS] * os * os;
    let per_shot = c[PER_SHOT] as usize;
    let per_source = per_shot / c[SOURCES] as usize;
    // ∂I/∂term for the terms after the current one in C's order (the `-oversample_*` products'
    // factors of the later counted terms; 1 without them)
    let mut later = g_term * p[GRID_SCALE];
    if g_term != 0.0 {
        for i in 0..samples {
            let q = samples - 1 - i;
            let t = q / (os * os);
            let at = sample_ray(&p, slow, fast, os, q, sw.curved);
            let sample = q * per_shot as i32;
            for j in 0..per_shot {
                let o = per_shot - 1 - j;
                let row = (o / per_source) * SOURCE_WIDTH;
                if kept(&p, sources, row, at.d, sw.dmin) {
                    let r = o * ORIENTATION_WIDTH;
                    let h = miller_index(orientations, r, 0, at.d);
                    let k = miller_index(orientations, r, 1, at.d);
                    let l = miller_index(orientations, r, 2, at.d);
                    // the adjoint's lattice factor: the terms counted are the vector–Jacobian pass's
                    let lattice = lattice_factor_partials(&p, h, k, l, sw.square, sw.round, sw.gauss).value;
                    let nearest_now = sample + o as i32 >= nearest_from;
                    let f = structure_factor(&p, &c, hkl, h, k, l, nearest_now, sw);
                    let mut factor = 1.0;
                    if comptime!(sw.products()) {
                        let by = term_factor(&p, sources, row, at, t as f32, sw);
                        factor = by.omega * by.capture * by.polar;
                    }
                    // ∂L/∂F_cell in fixed-point units (a power of two: exact)
                    let g = later * factor * 2.0 * f * (lattice * lattice);
                    if comptime!(sw.tricubic) {
                        if nearest_now {
                            scatter_nearest(&c, grid, h, k, l, g);
                        } else {
                            scatter_tricubic(&c, grid, h, k, l, g);
                        }
                    } else {
                        scatter_nearest(&c, grid, h, k, l, g);
                    }
                    if counted(lattice, sw) {
                        later *= factor;
                    }
                }
            }
        }
    }
}
