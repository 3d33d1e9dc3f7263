//! The whole per-pixel loop of C as one CubeCL kernel: one invocation per image pixel and
//! shot, looping over sensor layers × sub-pixels × sources × φ × mosaic domains in C's order,
//! in registers (physics reference §7); and the statistics C prints, reduced per block.
//!
//! The loop composes the forward helpers of [`super::stages`], which carry the names of the
//! tensor stages (`src/physics/`), so one can be held against the other: `sample_position`,
//! `curved_position`, `solid_angle`, `capture_fraction`, `stol`, `kahn_factor`,
//! `miller_index`, `lattice_factor`, `nearest`, `tricubic`. Every sine goes through
//! [`super::trig`].

use super::job::Switches;
use super::layout::*;
use super::registers::{copy_f32, copy_i32, still_registers};
use super::stages::absorption::capture_fraction;
use super::stages::detector::{lab_position, solid_angle};
use super::stages::lattice::lattice_factor;
use super::stages::polarization::kahn_factor;
use super::stages::scattering::{miller_index, stol};
use super::stages::structure_factor::{structure_factor, tricubic_out_of_range};
use super::stages::vectors::{dot, load3, scaled, Vec3};
use cubecl::prelude::*;

/// Whether pixel (slow, fast) of the image is rendered: inside the ROI and, with a mask, not
/// masked.
#[cube]
pub(crate) fn is_rendered(
    counts: &Array<i32>,
    mask: &Array<f32>,
    slow: i32,
    fast: i32,
    #[comptime] masked: bool,
) -> bool {
    let mut rendered = slow >= counts[ROW0] && slow < counts[ROW1] && fast >= counts[COL0] && fast < counts[COL1];
    if masked && rendered {
        let width = counts[COL1] - counts[COL0];
        let position = (slow - counts[ROW0]) * width + fast - counts[COL0];
        rendered = mask[position as usize] != 0.0;
    }
    rendered
}

/// Whether C counts a term of lattice factor `lattice`: it skips zero lattice factors without
/// water, which matters where the `-oversample_*` products or tricubic interpolation make a
/// skipped term differ from a zero one (elsewhere every term counts).
#[cube]
pub(crate) fn counted(lattice: f32, #[comptime] sw: Switches) -> bool {
    let mut valid = true;
    if comptime!(!sw.water && (sw.products() || sw.tricubic)) {
        valid = lattice != 0.0;
    }
    valid
}

/// One invocation per (shot, image pixel), on a grid x = fast, y = slow, z = shot: the pixel's photons into `image[shot·P + pixel]`
/// (0 outside the ROI and where masked) and, for shot 0, its part of Σω into `omega[pixel]`
/// (sr). With tricubic structure factors, the image index of the first pixel that met an
/// out-of-range point goes into `first_out_of_range[0]` (an atomic minimum).
///
/// Shapes: `params` [[`PARAMS`]], `counts` [[`COUNTS`]], `sources` [S·10], `orientations`
/// [shots·S·Φ·M·12], `scales` [shots] (r_e²·fluence/steps, m²... C's units), `hkl` [grid],
/// `mask` [ROI positions].
#[allow(clippy::too_many_arguments)]
#[cube(launch_unchecked)]
pub fn render_pixels(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    scales: &Array<f32>,
    hkl: &Array<f32>,
    mask: &Array<f32>,
    image: &mut Array<f32>,
    omega: &mut Array<f32>,
    first_out_of_range: &mut Array<Atomic<i32>>,
    #[comptime] sw: Switches,
) {
    // a thread's own copies ([`copy_f32`])
    let mut p = Array::<f32>::new(PARAMS);
    copy_f32(params, &mut p, PARAMS);
    let mut c = Array::<i32>::new(COUNTS);
    copy_i32(counts, &mut c, COUNTS);
    // and, where they fit, of the source and the orientation rows ([`Switches::rows_in_registers`])
    let mut source = Array::<f32>::new(comptime!(still_registers(sw, SOURCE_WIDTH)));
    let mut rows = Array::<f32>::new(comptime!(still_registers(sw, sw.orientation_batch * ORIENTATION_WIDTH)));
    if comptime!(sw.rows_in_registers) {
        copy_f32(sources, &mut source, SOURCE_WIDTH);
        copy_f32(
            orientations,
            &mut rows,
            comptime!(sw.orientation_batch * ORIENTATION_WIDTH),
        );
    }
    // x along fast, y along slow, z the shot: no integer division per invocation (it is a
    // scalar loop on SIMD drivers such as llvmpipe)
    let fpixels = c[FPIXELS] as usize;
    let pixels = fpixels * c[SPIXELS] as usize;
    let fast_at = ABSOLUTE_POS_X as usize;
    let slow_at = ABSOLUTE_POS_Y as usize;
    let shot = ABSOLUTE_POS_Z as usize;
    let pixel = slow_at * fpixels + fast_at;
    let at = shot * pixels + pixel;
    if fast_at >= fpixels || at >= image.len() {
        terminate!();
    }
    let slow = slow_at as i32;
    let fast = fast_at as i32;
    if !is_rendered(&c, mask, slow, fast, sw.masked) {
        image[at] = 0.0;
        if shot == 0 {
            omega[pixel] = 0.0;
        }
        terminate!();
    }
    let value = if comptime!(sw.rows_in_registers) {
        pixel_photons(
            &p,
            &c,
            &source,
            &rows,
            hkl,
            omega,
            first_out_of_range,
            shot,
            0,
            pixel,
            slow,
            fast,
            sw,
        )
    } else {
        pixel_photons(
            &p,
            &c,
            sources,
            orientations,
            hkl,
            omega,
            first_out_of_range,
            shot,
            shot * c[PER_SHOT] as usize,
            pixel,
            slow,
            fast,
            sw,
        )
    };
    image[at] = value * scales[shot];
}

/// The loop of one rendered pixel: photons before the r_e²·fluence/steps scale, and Σω. The
/// shot's orientation rows start at row `first_row` of `orientations`.
// a compile-time switch stays its own `if`: joined with a runtime condition by `&&`, the
// kernel would carry the switched-off branch as code
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
#[cube]
fn pixel_photons(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    omega_out: &mut Array<f32>,
    first_out_of_range: &mut Array<Atomic<i32>>,
    shot: usize,
    first_row: usize,
    pixel: usize,
    slow: i32,
    fast: i32,
    #[comptime] sw: Switches,
) -> f32 {
    let os = counts[OVERSAMPLE];
    let layers = counts[LAYERS];
    let n_sources = counts[SOURCES] as usize;
    let per_shot = counts[PER_SHOT] as usize;
    let per_source = per_shot / n_sources;
    let subpixel = params[SUBPIXEL];
    let odet = load3(params, ODET);
    let mut nearest_now = pixel as i32 > counts[SWITCH_PIXEL];
    // C's per-pixel state: the running sum starts at I_bg; ω, polar and capture are cached
    let mut running = params[I_BG];
    let mut omega_first = 0.0;
    let mut omega_total = 0.0;
    let mut capture = 1.0;
    let mut capture_last = 1.0;
    let mut polar_first = 1.0;
    if sw.polar {
        polar_first = 0.0;
    }
    let mut polar_found = false;
    for t in 0..layers {
        for sub_s in 0..os {
            for sub_f in 0..os {
                let fdet = subpixel * (fast * os + sub_f) as f32 + subpixel * 0.5;
                let sdet = subpixel * (slow * os + sub_s) as f32 + subpixel * 0.5;
                let pos = lab_position(params, fdet, sdet, t as f32 * params[LAYER_STEP], sw.curved);
                let r = (dot(pos, pos)).sqrt();
                let d = scaled(pos, 1.0 / r);
                let omega = solid_angle(params, r, sw.point_pixel);
                let first_of_layer = sub_s == 0 && sub_f == 0;
                if t == 0 && first_of_layer {
                    omega_first = omega;
                }
                omega_total += omega;
                if sw.sensor {
                    if first_of_layer || sw.oversample_thick {
                        capture = capture_fraction(params, dot(d, odet), t as f32);
                    }
                    if first_of_layer {
                        capture_last = capture;
                    }
                }
                sample_terms(
                    params,
                    counts,
                    sources,
                    orientations,
                    hkl,
                    first_out_of_range,
                    pixel,
                    first_row,
                    n_sources,
                    per_source,
                    d,
                    omega,
                    capture,
                    &mut running,
                    &mut nearest_now,
                    &mut polar_first,
                    &mut polar_found,
                    sw,
                );
            }
        }
    }
    let mut value = running;
    if sw.sensor && !sw.oversample_thick {
        value *= capture_last;
    }
    if !sw.oversample_polar {
        value *= polar_first;
    }
    if !sw.oversample_omega {
        value *= omega_first;
    }
    if shot == 0 {
        let mut omega_sum = omega_first * (layers * os * os) as f32;
        if sw.oversample_omega {
            omega_sum = omega_total;
        }
        omega_out[pixel] = omega_sum;
    }
    value
}

/// The terms of one sample (layer, sub-pixel) along `d` over the `n_sources` sources, into
/// C's per-pixel state (the running sum, whether the structure factors are nearest neighbour
/// by now, the cached polarization of the first kept sample and whether it is found): each
/// source kept by `-dmin` with its polarization and its `-oversample_*` product of ω
/// (`omega`), the capture fraction (`capture`) and the polarization, then its orientation
/// rows ([`source_terms`]).
#[allow(clippy::too_many_arguments)]
#[cube]
fn sample_terms(
    params: &Array<f32>,
    counts: &Array<i32>,
    sources: &Array<f32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    first_out_of_range: &mut Array<Atomic<i32>>,
    pixel: usize,
    first_row: usize,
    n_sources: usize,
    per_source: usize,
    d: Vec3,
    omega: f32,
    capture: f32,
    running: &mut f32,
    nearest_now: &mut bool,
    polar_first: &mut f32,
    polar_found: &mut bool,
    #[comptime] sw: Switches,
) {
    for si in 0..n_sources {
        let row = si * SOURCE_WIDTH;
        let mut keep = true;
        if sw.dmin {
            keep = stol(d, load3(sources, row + INCIDENT), sources[row + INV_LAMBDA]) <= params[STOL_MAX];
        }
        if keep {
            let mut polar = 1.0;
            if sw.polar {
                polar = kahn_factor(sources, row, d, params[KAHN]);
                if !*polar_found {
                    *polar_first = polar;
                    *polar_found = true;
                }
            }
            let mut factor = 1.0;
            if sw.oversample_thick && sw.sensor {
                factor *= capture;
            }
            if sw.oversample_polar && sw.polar {
                factor *= polar;
            }
            if sw.oversample_omega {
                factor *= omega;
            }
            let first = (first_row + si * per_source) * ORIENTATION_WIDTH;
            source_terms(
                params,
                counts,
                orientations,
                hkl,
                first_out_of_range,
                pixel,
                first,
                per_source,
                d,
                factor,
                running,
                nearest_now,
                sw,
            );
        }
    }
}

/// The terms of one source's `per_source` orientation rows, from row offset `first` of
/// `orientations`, along `d`, into the running sum `running`: C's innermost loop, with its
/// `-oversample_*` product `factor` after each counted term, and (with tricubic structure
/// factors) C's fall-back at the first point out of the grid: `nearest_now` from then on,
/// the pixel recorded in `first_out_of_range`.
// a compile-time switch stays its own `if` (see [`pixel_photons`])
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
#[cube]
fn source_terms(
    params: &Array<f32>,
    counts: &Array<i32>,
    orientations: &Array<f32>,
    hkl: &Array<f32>,
    first_out_of_range: &mut Array<Atomic<i32>>,
    pixel: usize,
    first: usize,
    per_source: usize,
    d: Vec3,
    factor: f32,
    running: &mut f32,
    nearest_now: &mut bool,
    #[comptime] sw: Switches,
) {
    let flags = comptime!(sw.products());
    for m in 0..per_source {
        let o = first + m * ORIENTATION_WIDTH;
        let h = miller_index(orientations, o, 0, d);
        let k = miller_index(orientations, o, 1, d);
        let l = miller_index(orientations, o, 2, d);
        let f_latt = lattice_factor(params, h, k, l, sw.square, sw.round, sw.gauss);
        if counted(f_latt, sw) {
            if comptime!(sw.tricubic) {
                if !*nearest_now && tricubic_out_of_range(counts, h, k, l) {
                    *nearest_now = true;
                    first_out_of_range[0].fetch_min(pixel as i32);
                }
            }
            let f_cell = structure_factor(params, counts, hkl, h, k, l, *nearest_now, sw);
            let term = f_cell * f_cell * f_latt * f_latt;
            if flags {
                *running = (*running + term) * factor;
            } else {
                *running += term;
            }
        }
    }
}

/// The statistics C prints, reduced per block of `counts[STAT_BLOCK]` ROI positions (row by
/// row; masked pixels are 0 in the image and count, as in C's deviation): `partials[b]` =
/// (Σv, Σ(v − block mean)² by Welford's update, the block's maximum, Σω), `first_max[b]` =
/// the ROI position of the block's first maximum (C's running maximum moves only on a larger
/// value). One invocation per block; blocks of shot s follow those of shot s − 1.
#[cube(launch_unchecked)]
pub fn image_statistics(
    image: &Array<f32>,
    omega: &Array<f32>,
    counts: &Array<i32>,
    partials: &mut Array<f32>,
    first_max: &mut Array<i32>,
) {
    let block = ABSOLUTE_POS;
    let per_shot = counts[STAT_BLOCKS] as usize;
    if block >= first_max.len() {
        terminate!();
    }
    let shot = block / per_shot;
    let fpixels = counts[FPIXELS] as usize;
    let pixels = fpixels * counts[SPIXELS] as usize;
    let width = (counts[COL1] - counts[COL0]) as usize;
    let roi = width * (counts[ROW1] - counts[ROW0]) as usize;
    let size = counts[STAT_BLOCK] as usize;
    let start = (block % per_shot) * size;
    let mut end = start + size;
    if end > roi {
        end = roi;
    }
    let mut sum = 0.0;
    let mut mean = 0.0;
    let mut m2 = 0.0;
    let mut max = 0.0;
    let mut omega_sum = 0.0;
    let mut at_max = start as i32;
    let mut first = true;
    for q in start..end {
        let row = counts[ROW0] as usize + q / width;
        let col = counts[COL0] as usize + q % width;
        let p = row * fpixels + col;
        let v = image[shot * pixels + p];
        sum += v;
        let n = (q - start + 1) as f32;
        let delta = v - mean;
        mean += delta / n;
        m2 += delta * (v - mean);
        if first || v > max {
            max = v;
            at_max = q as i32;
            first = false;
        }
        omega_sum += omega[p];
    }
    partials[block * PARTIAL_WIDTH] = sum;
    partials[block * PARTIAL_WIDTH + 1] = m2;
    partials[block * PARTIAL_WIDTH + 2] = max;
    partials[block * PARTIAL_WIDTH + 3] = omega_sum;
    first_max[block] = at_max;
}
