//! The adjoint pass over one pixel's terms: C's cached per-pixel factors (Ω, P, C) and their
//! adjoints, the first term under C's tricubic fall-back, and the terms of a range of samples
//! and orientation batches with their adjoints (forward mode through the `-oversample_*`
//! products, see [`super`]).

use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use crate::kernel::pixel::counted;
use crate::kernel::registers::load_batch;
use crate::kernel::stages::absorption::{capture_fraction, capture_fraction_adjoint};
use crate::kernel::stages::detector::{push_direction, ray, solid_angle, solid_angle_adjoint, Ray, SampleIndex};
use crate::kernel::stages::lattice::{lattice_factor, lattice_factor_partials};
use crate::kernel::stages::polarization::{kahn_factor, kahn_factor_adjoint};
use crate::kernel::stages::scattering::{kept, miller_index};
use crate::kernel::stages::structure_factor::{structure_factor_partials, tricubic_out_of_range};
use crate::kernel::stages::vectors::{add3, dot, load3, scaled, sum3, Vec3};
use cubecl::prelude::*;

/// C's cached per-pixel factors: ω of the first sample, the capture fraction of the last
/// layer's first sample, the polarization of the first kept sample (layer, sub-pixel row and
/// column, source); 1 for a factor whose `-oversample_*` flag applies it per term instead.
#[derive(CubeType, Clone, Copy)]
pub struct PixelFactors {
    pub omega: f32,
    pub capture: f32,
    pub polar: f32,
    pub polar_found: bool,
    pub polar_t: i32,
    pub polar_s: i32,
    pub polar_f: i32,
    pub polar_source: u32,
}

#[cube]
pub(crate) fn pixel_factors(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    slow: i32,
    fast: i32,
    #[comptime] sw: Switches,
) -> PixelFactors {
    let os = counts[OVERSAMPLE];
    let layers = counts[LAYERS];
    let first = ray(params, slow, fast, os, 0, 0, 0, sw.curved);
    let mut out = PixelFactors {
        omega: 1.0,
        capture: 1.0,
        polar: 1.0,
        polar_found: false,
        polar_t: 0,
        polar_s: 0,
        polar_f: 0,
        polar_source: 0,
    };
    if !sw.oversample_omega {
        out.omega = solid_angle(params, first.r, sw.point_pixel);
    }
    if sw.sensor && !sw.oversample_thick {
        let last = ray(params, slow, fast, os, layers - 1, 0, 0, sw.curved);
        let parallax = dot(last.d, load3(params, ODET));
        out.capture = capture_fraction(params, parallax, (layers - 1) as f32);
    }
    if sw.polar && !sw.oversample_polar {
        out.polar = 0.0;
        let n_sources = counts[SOURCES] as u32;
        for t in 0..layers {
            for sub_s in 0..os {
                for sub_f in 0..os {
                    let at = ray(params, slow, fast, os, t, sub_s, sub_f, sw.curved);
                    for si in 0..n_sources {
                        let row = si as usize * SOURCE_WIDTH;
                        if !out.polar_found && kept(params, sources, row, at.d, sw.dmin) {
                            out.polar = kahn_factor(sources, row, at.d, params[KAHN]);
                            out.polar_found = true;
                            out.polar_t = t;
                            out.polar_s = sub_s;
                            out.polar_f = sub_f;
                            out.polar_source = si;
                        }
                    }
                }
            }
        }
    }
    out
}

/// The cotangent of each of a pixel's terms for its ∂L/∂I `weight`: w·scale·Ω·P·C, with
/// `scale` = r_e²·fluence/steps and C's cached factors.
#[cube]
pub(crate) fn term_cotangent(weight: f32, scale: f32, factors: PixelFactors) -> f32 {
    weight * scale * factors.omega * factors.polar * factors.capture
}

/// C's index (sample, then orientation row) of the first term of pixel `pixel` that takes
/// nearest-neighbour structure factors under C's tricubic fall-back (`counts[SWITCH_PIXEL]`,
/// found by the render): 0 after the switching pixel, never before it or without tricubic
/// interpolation, and at the switching pixel the first kept, counted term whose point leaves
/// the grid (the render's test, in the render's order).
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn first_nearest_term(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    pixel: i32,
    slow: i32,
    fast: i32,
    #[comptime] sw: Switches,
) -> i32 {
    // i32::MAX: never
    let mut first = 2147483647i32;
    if sw.tricubic {
        let switch = counts[SWITCH_PIXEL];
        if pixel > switch {
            first = 0;
        } else if pixel == switch {
            let os = counts[OVERSAMPLE];
            let per_shot = counts[PER_SHOT] as usize;
            let per_source = per_shot / counts[SOURCES] as usize;
            let mut index = 0i32;
            for t in 0..counts[LAYERS] {
                for sub_s in 0..os {
                    for sub_f in 0..os {
                        let at = ray(params, slow, fast, os, t, sub_s, sub_f, sw.curved);
                        for o in 0..per_shot {
                            let row = (o / per_source) * SOURCE_WIDTH;
                            if first == 2147483647i32 && kept(params, sources, row, at.d, sw.dmin) {
                                let r = o * ORIENTATION_WIDTH;
                                let h = miller_index(orientations, r, 0, at.d);
                                let k = miller_index(orientations, r, 1, at.d);
                                let l = miller_index(orientations, r, 2, at.d);
                                let lattice = lattice_factor(params, h, k, l, sw.square, sw.round, sw.gauss);
                                if counted(lattice, sw) && tricubic_out_of_range(counts, h, k, l) {
                                    first = index;
                                }
                            }
                            index += 1;
                        }
                    }
                }
            }
        }
    }
    first
}

/// The terms of samples `first_sample..end_sample` (C's flat sample index: layer, sub-pixel
/// row, sub-pixel column) and orientation batches `first_batch..end_batch` (rows
/// `b·B..b·B + B`, B = `sw.orientation_batch`) of one pixel, in C's order (sample, then row),
/// with cotangent `g_term` each; returns the running sum after them, from `running` before.
/// Their adjoints go into `acc` and, with `rows`, into the thread's orientation accumulators
/// `orient` (row m of the batch at m·12: a/λ, b/λ, c/λ, then the offsets; one batch then).
/// One ray and one direction adjoint per sample.
///
/// With the `-oversample_*` products C multiplies the running sum by the sample's factor f
/// after every counted term: running ← (running + t)·f. Their adjoint here is forward mode:
/// the accumulators hold g·∂running/∂z, so after each term they are multiplied by f and take
/// g·(running + t)·∂f/∂z. `acc[G_I_BG]` is thereby multiplied by the product of the terms'
/// factors ([`pixel_adjoint`] uses it as the running sum's ∂/∂ of its start).
///
/// Terms from C's index `nearest_from` on take nearest-neighbour structure factors (C's
/// tricubic fall-back, [`first_nearest_term`]).
#[allow(clippy::too_many_arguments)]
#[cube]
pub(crate) fn batch_terms(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    first_sample: i32,
    end_sample: i32,
    first_batch: usize,
    end_batch: usize,
    slow: i32,
    fast: i32,
    g_term: f32,
    running: f32,
    nearest_from: i32,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    batch_rows: &mut Array<f32>,
    #[comptime] preloaded: bool,
    #[comptime] rows: bool,
    #[comptime] sw: Switches,
) -> f32 {
    let flags = comptime!(sw.products());
    let os = counts[OVERSAMPLE];
    let per_shot = counts[PER_SHOT] as usize;
    let per_source = per_shot / counts[SOURCES] as usize;
    let mut sum = running;
    // the sample's layer and sub-pixel row and column, counted along (an integer division is
    // a scalar loop per lane on SIMD drivers such as llvmpipe)
    let mut sample_at = SampleIndex::of(first_sample, os);
    for q in first_sample..end_sample {
        let t = sample_at.layer;
        let at = ray(params, slow, fast, os, t, sample_at.row, sample_at.column, sw.curved);
        sample_at.advance(os);
        let sample = q * per_shot as i32;
        // ∂L/∂d over the sample's terms (a Vec3 cannot be reassigned in a kernel)
        let mut gx = 0.0;
        let mut gy = 0.0;
        let mut gz = 0.0;
        for b in first_batch..end_batch {
            if comptime!(!preloaded) {
                load_batch(orientations, sources, per_shot, per_source, b, batch_rows, sw);
            }
            #[unroll]
            for m in 0..sw.orientation_batch {
                let o = b * sw.orientation_batch + m;
                let row = (o / per_source) * SOURCE_WIDTH;
                if o < per_shot && kept(params, sources, row, at.d, sw.dmin) {
                    let term = term_adjoint(
                        params,
                        counts,
                        batch_rows,
                        hkl,
                        at.d,
                        load3(batch_rows, comptime!(sw.orientation_batch * ORIENTATION_WIDTH + 3 * m)),
                        g_term,
                        sample + o as i32 >= nearest_from,
                        acc,
                        orient,
                        m * ORIENTATION_WIDTH,
                        rows,
                        sw,
                    );
                    if term.valid {
                        gx += term.g_d.x;
                        gy += term.g_d.y;
                        gz += term.g_d.z;
                        if flags {
                            let f = term_factor(params, sources, row, at, t as f32, sw);
                            let product = f.omega * f.capture * f.polar;
                            scale_all(acc, orient, product, rows, sw);
                            gx *= product;
                            gy *= product;
                            gz *= product;
                            let g_factor = g_term * (sum + term.value);
                            term_factor_adjoint(params, sources, acc, row, at, t as f32, f, g_factor, sw);
                            sum = (sum + term.value) * product;
                        } else {
                            sum += term.value;
                        }
                    }
                }
            }
        }
        push_direction(params, acc, at, Vec3 { x: gx, y: gy, z: gz }, sw.curved);
    }
    sum
}

/// The factors one term of the `-oversample_*` products multiplies the running sum by: ω,
/// the capture fraction and the Kahn factor of the sample (each 1 where its flag is off).
#[derive(CubeType, Clone, Copy)]
pub struct TermFactor {
    pub omega: f32,
    pub capture: f32,
    pub polar: f32,
}

#[cube]
pub(crate) fn term_factor(
    params: &Array<f32>,
    sources: &Array<f32>,
    row: usize,
    at: Ray,
    layer: f32,
    #[comptime] sw: Switches,
) -> TermFactor {
    let mut out = TermFactor {
        omega: 1.0,
        capture: 1.0,
        polar: 1.0,
    };
    if sw.oversample_omega {
        out.omega = solid_angle(params, at.r, sw.point_pixel);
    }
    if sw.oversample_thick && sw.sensor {
        out.capture = capture_fraction(params, dot(at.d, load3(params, ODET)), layer);
    }
    if sw.oversample_polar && sw.polar {
        out.polar = kahn_factor(sources, row, at.d, params[KAHN]);
    }
    out
}

/// The adjoint of [`term_factor`]'s product for cotangent `g`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn term_factor_adjoint(
    params: &Array<f32>,
    sources: &Array<f32>,
    acc: &mut Array<f32>,
    row: usize,
    at: Ray,
    layer: f32,
    f: TermFactor,
    g: f32,
    #[comptime] sw: Switches,
) {
    if sw.oversample_omega {
        solid_angle_adjoint(params, acc, at, g * f.capture * f.polar, sw);
    }
    if sw.oversample_thick && sw.sensor {
        capture_fraction_adjoint(params, acc, at, layer, g * f.omega * f.polar, sw);
    }
    if sw.oversample_polar && sw.polar {
        kahn_factor_adjoint(sources, params, acc, row, at, g * f.omega * f.capture, sw);
    }
}

/// Every accumulator of the thread times `f` (the orientation rows' with `rows`).
#[cube]
fn scale_all(acc: &mut Array<f32>, orient: &mut Array<f32>, f: f32, #[comptime] rows: bool, #[comptime] sw: Switches) {
    #[unroll]
    for j in 0..G_GLOBALS {
        acc[j] *= f;
    }
    if rows {
        #[unroll]
        for j in 0..comptime!(sw.orientation_batch * ORIENTATION_WIDTH) {
            orient[j] *= f;
        }
    }
}

/// One term's value F²·L², the cotangent of its direction d, and whether C counts it (it
/// skips zero lattice factors without water where the `-oversample_*` products or tricubic
/// interpolation make a skipped term differ from a zero one).
#[derive(CubeType, Clone, Copy)]
pub struct TermAdjoint {
    pub value: f32,
    pub g_d: Vec3,
    pub valid: bool,
}

/// The adjoint of one term F²·L² of orientation row `o` along `d` with cotangent `g_term`:
/// N, a*/b*/c* and default_F into `acc`, the row's 12 numbers into `orient[slot..slot + 12]`.
#[allow(clippy::too_many_arguments)]
#[cube]
fn term_adjoint(
    params: &Array<f32>,
    counts: &Array<i32>,
    batch_rows: &Array<f32>,
    hkl: &Array<f32>,
    d: Vec3,
    incident: Vec3,
    g_term: f32,
    nearest_now: bool,
    acc: &mut Array<f32>,
    orient: &mut Array<f32>,
    #[comptime] slot: usize,
    #[comptime] rows: bool,
    #[comptime] sw: Switches,
) -> TermAdjoint {
    let h = miller_index(batch_rows, slot, 0, d);
    let k = miller_index(batch_rows, slot, 1, d);
    let l = miller_index(batch_rows, slot, 2, d);
    let lat = lattice_factor_partials(params, h, k, l, sw.square, sw.round, sw.gauss);
    let f = structure_factor_partials(params, counts, hkl, h, k, l, nearest_now, sw);
    let f2 = f.value * f.value;
    let l2 = lat.value * lat.value;
    // an invalid term (F_latt = 0) adds exactly 0 below
    let valid = counted(lat.value, sw);
    // ∂L/∂F_cell
    let g_f = g_term * 2.0 * f.value * l2;
    if f.is_default {
        acc[G_DEFAULT_F] += g_f;
    } else {
        acc[G_GRID_BOUND] += g_f.abs() * f.weight_sum;
    }
    let g_l = g_term * 2.0 * lat.value * f2;
    acc[G_N_CELLS] += g_l * lat.dna;
    acc[G_N_CELLS + 1] += g_l * lat.dnb;
    acc[G_N_CELLS + 2] += g_l * lat.dnc;
    if sw.gauss {
        let g_c = scaled(lat.c, g_l * lat.kappa);
        add3(acc, G_RECIP, scaled(g_c, lat.frac.x));
        add3(acc, G_RECIP + 3, scaled(g_c, lat.frac.y));
        add3(acc, G_RECIP + 6, scaled(g_c, lat.frac.z));
    }
    let gh = g_l * lat.dh + g_f * f.dh;
    let gk = g_l * lat.dk + g_f * f.dk;
    let gl = g_l * lat.dl + g_f * f.dl;
    // h_v = d·(a_v/λ) − offset_v with offset_v = (a_v/λ)·i: the a/λ slots take (d − i)·∂L/∂h,
    // small near the direct beam where d·∂L/∂h and i·∂L/∂h would cancel in the sums
    // (`vjp::orientation_gradients` adds i·Σ ∂L/∂h back in f64)
    if rows {
        let q = sum3(d, scaled(incident, -1.0));
        add3(orient, slot, scaled(q, gh));
        add3(orient, slot + 3, scaled(q, gk));
        add3(orient, slot + 6, scaled(q, gl));
        orient[slot + OFFSET] -= gh;
        orient[slot + OFFSET + 1] -= gk;
        orient[slot + OFFSET + 2] -= gl;
    }
    let axis_a = load3(batch_rows, slot);
    let axis_b = load3(batch_rows, slot + 3);
    let axis_c = load3(batch_rows, slot + 6);
    TermAdjoint {
        value: f2 * l2,
        valid,
        g_d: Vec3 {
            x: gh * axis_a.x + gk * axis_b.x + gl * axis_c.x,
            y: gh * axis_a.y + gk * axis_b.y + gl * axis_c.y,
            z: gh * axis_a.z + gk * axis_b.z + gl * axis_c.z,
        },
    }
}

/// The cached factors' adjoints, once the pixel's running sum `total` is known;
/// `weight` = ∂L/∂I of the pixel, `scale` = r_e²·fluence/steps.
// a compile-time switch stays its own `if`: joined with a runtime condition by `&&`, the
// kernel would carry the switched-off branch as code
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
#[cube]
pub(crate) fn factor_adjoints(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    slow: i32,
    fast: i32,
    factors: PixelFactors,
    total: f32,
    weight: f32,
    scale: f32,
    acc: &mut Array<f32>,
    #[comptime] sw: Switches,
) {
    let os = counts[OVERSAMPLE];
    let layers = counts[LAYERS];
    let omega = factors.omega;
    let polar = factors.polar;
    let capture = factors.capture;
    acc[G_SCALE] += weight * total * omega * polar * capture;
    let g = weight * scale * total;
    if !sw.oversample_omega {
        solid_angle_adjoint(
            params,
            acc,
            ray(params, slow, fast, os, 0, 0, 0, sw.curved),
            g * polar * capture,
            sw,
        );
    }
    if sw.sensor && !sw.oversample_thick {
        let last = ray(params, slow, fast, os, layers - 1, 0, 0, sw.curved);
        capture_fraction_adjoint(params, acc, last, (layers - 1) as f32, g * omega * polar, sw);
    }
    if comptime!(sw.polar && !sw.oversample_polar) {
        if factors.polar_found {
            let at = ray(
                params,
                slow,
                fast,
                os,
                factors.polar_t,
                factors.polar_s,
                factors.polar_f,
                sw.curved,
            );
            let row = factors.polar_source as usize * SOURCE_WIDTH;
            kahn_factor_adjoint(sources, params, acc, row, at, g * omega * capture, sw);
        }
    }
}
