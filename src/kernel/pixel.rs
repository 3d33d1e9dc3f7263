//! The whole per-pixel loop of C as one CubeCL kernel: one invocation per image pixel and
//! shot, looping over sensor layers × sub-pixels × sources × φ × mosaic domains in C's order,
//! in registers (physics reference §7).
//!
//! Its helpers carry the names of the tensor stages (`src/physics/`), so one can be held
//! against the other: [`sample_position`], [`curved_position`], [`solid_angle`],
//! [`capture_fraction`], [`stol`], [`kahn_factor`], [`miller_index`], [`lattice_factor`],
//! [`nearest`], [`tricubic`]. Every sine goes through [`super::trig`].

use super::job::Switches;
use super::layout::*;
use super::trig::{sin_pi, sinc3, sincg, PI_F32};
use cubecl::prelude::*;

/// A lab vector (m, or unit).
#[derive(CubeType, Clone, Copy)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

#[cube]
pub(super) fn load3(a: &Array<f32>, at: usize) -> Vec3 {
    Vec3 {
        x: a[at],
        y: a[at + 1],
        z: a[at + 2],
    }
}

#[cube]
pub(super) fn dot(a: Vec3, b: Vec3) -> f32 {
    a.x * b.x + a.y * b.y + a.z * b.z
}

#[cube]
pub(super) fn cross(a: Vec3, b: Vec3) -> Vec3 {
    Vec3 {
        x: a.y * b.z - a.z * b.y,
        y: a.z * b.x - a.x * b.z,
        z: a.x * b.y - a.y * b.x,
    }
}

#[cube]
pub(super) fn scaled(a: Vec3, k: f32) -> Vec3 {
    Vec3 {
        x: a.x * k,
        y: a.y * k,
        z: a.z * k,
    }
}

#[cube]
pub(super) fn sum3(a: Vec3, b: Vec3) -> Vec3 {
    Vec3 {
        x: a.x + b.x,
        y: a.y + b.y,
        z: a.z + b.z,
    }
}

/// P = Fdet·f + Sdet·s + Odet·o + pix0 (m), from the detector coordinates (m).
#[cube]
pub(super) fn sample_position(params: &Array<f32>, fdet: f32, sdet: f32, odet: f32) -> Vec3 {
    let along = sum3(
        sum3(scaled(load3(params, FDET), fdet), scaled(load3(params, SDET), sdet)),
        scaled(load3(params, ODET), odet),
    );
    sum3(along, load3(params, PIX0))
}

/// The lab position of a sample (m): planar, or on the sphere of the curved detector.
#[cube]
pub(super) fn lab_position(params: &Array<f32>, fdet: f32, sdet: f32, odet: f32, #[comptime] curved: bool) -> Vec3 {
    let planar = sample_position(params, fdet, sdet, odet);
    if curved {
        curved_position(params, planar)
    } else {
        planar
    }
}

/// v rotated by θ (rad) about the unit axis k: v cos θ + (k × v) sin θ + k (k·v)(1 − cos θ),
/// with 1 − cos θ = 2 sin²(θ/2).
#[cube]
pub(super) fn rotate_about(v: Vec3, k: Vec3, theta: f32) -> Vec3 {
    let half = theta / PI_F32;
    let s = sin_pi(half);
    let h = sin_pi(half * 0.5);
    let one_minus_cos = 2.0 * h * h;
    let cos = 1.0 - one_minus_cos;
    sum3(
        sum3(scaled(v, cos), scaled(cross(k, v), s)),
        scaled(k, dot(k, v) * one_minus_cos),
    )
}

/// The spherical detector's position (`-curved_det`): distance·b rotated about s by P_y/distance,
/// then about f by P_z/distance (m).
#[cube]
fn curved_position(params: &Array<f32>, planar: Vec3) -> Vec3 {
    let distance = params[DISTANCE];
    let v = scaled(load3(params, BEAM), distance);
    let v = rotate_about(v, load3(params, SDET), planar.y / distance);
    rotate_about(v, load3(params, FDET), planar.z / distance)
}

/// ω (sr) at air path `r` (m): pixel²/r²·close_distance/r, or 1/r² for a point pixel.
#[cube]
pub(super) fn solid_angle(params: &Array<f32>, r: f32, #[comptime] point_pixel: bool) -> f32 {
    let mut omega = 1.0 / (r * r);
    if !point_pixel {
        omega = params[PIXEL_AREA] * params[CLOSE_DISTANCE] / (r * r * r);
    }
    omega
}

/// Fraction absorbed in layer t: exp(−t·Δzμ/ρ) − exp(−(t+1)·Δzμ/ρ), parallax ρ = d·o.
#[cube]
pub(super) fn capture_fraction(params: &Array<f32>, parallax: f32, layer: f32) -> f32 {
    let k = -params[STEP_MU] / parallax;
    (layer * k).exp() - ((layer + 1.0) * k).exp()
}

/// sin θ/λ = |d − i|/(2λ) (m⁻¹): the difference of unit vectors, not √(2 − 2 cos 2θ), so small
/// angles keep their digits.
#[cube]
pub(super) fn stol(d: Vec3, incident: Vec3, inv_lambda: f32) -> f32 {
    let q = sum3(d, scaled(incident, -1.0));
    0.5 * inv_lambda * (dot(q, q)).sqrt()
}

/// Kahn's factor ½(1 + cos²2θ − K·cos 2ψ·sin²2θ), cos 2ψ = (e² − b²)/(e² + b²) (1 along the
/// beam) with e, b the projections of d on E_in, B_in; sin²2θ = |d × i|².
#[cube]
pub(super) fn kahn_factor(sources: &Array<f32>, row: usize, d: Vec3, kahn: f32) -> f32 {
    let incident = load3(sources, row + INCIDENT);
    let cos2t = dot(d, incident);
    let across = cross(d, incident);
    let sin2 = dot(across, across);
    let e = dot(d, load3(sources, row + E_IN));
    let b = dot(d, load3(sources, row + B_IN));
    let denom = e * e + b * b;
    let mut cos_two_psi = 1.0;
    if denom != 0.0 {
        cos_two_psi = (e * e - b * b) / denom;
    }
    0.5 * (1.0 + cos2t * cos2t - kahn * cos_two_psi * sin2)
}

/// `local[0..len]` = `values[0..len]`: a thread's own copy of a small input array, so the
/// loops read registers, not the storage buffer (which SIMD drivers such as llvmpipe load
/// lane by lane, with a bounds check each).
#[cube]
pub(super) fn copy_f32(values: &Array<f32>, local: &mut Array<f32>, #[comptime] len: usize) {
    #[unroll]
    for j in 0..len {
        local[j] = values[j];
    }
}

/// [`copy_f32`] for `i32` arrays.
#[cube]
pub(super) fn copy_i32(values: &Array<i32>, local: &mut Array<i32>, #[comptime] len: usize) {
    #[unroll]
    for j in 0..len {
        local[j] = values[j];
    }
}

/// The fractional Miller index along axis `v` of orientation row `row`: d·(a/λ) − a·i/λ.
#[cube]
pub(super) fn miller_index(orientations: &Array<f32>, row: usize, v: usize, d: Vec3) -> f32 {
    dot(d, load3(orientations, row + 3 * v)) - orientations[row + OFFSET + v]
}

/// x − ceil(x − ½) ∈ (−½, ½].
#[cube]
pub(super) fn fractional(x: f32) -> f32 {
    x - (x - 0.5).ceil()
}

/// F_latt at (h, k, l) for the crystal shape chosen at compile time (physics reference §5.6).
#[cube]
pub(super) fn lattice_factor(
    params: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    #[comptime] square: bool,
    #[comptime] round: bool,
    #[comptime] gauss: bool,
) -> f32 {
    let na = params[N_CELLS];
    let nb = params[N_CELLS + 1];
    let nc = params[N_CELLS + 2];
    let volume = na * nb * nc;
    let mut f = 1.0;
    if square {
        if na > 1.0 {
            f *= sincg(h, na);
        }
        if nb > 1.0 {
            f *= sincg(k, nb);
        }
        if nc > 1.0 {
            f *= sincg(l, nc);
        }
    } else if round {
        let dh = fractional(h) * na;
        let dk = fractional(k) * nb;
        let dl = fractional(l) * nc;
        let r2 = dh * dh + dk * dk + dl * dl;
        f = sinc3((r2 * params[FUDGE]).sqrt()) * volume * 0.723_601_2;
    } else {
        let dh = fractional(h);
        let dk = fractional(k);
        let dl = fractional(l);
        let mut r2 = 0.0;
        #[unroll]
        for axis in 0..3usize {
            let c = dh * params[RECIP + axis] + dk * params[RECIP + 3 + axis] + dl * params[RECIP + 6 + axis];
            r2 += c * c;
        }
        r2 *= volume * volume * params[FUDGE];
        if gauss {
            f = (-r2 / 0.63).exp() * volume;
        } else {
            f = 0.0;
            if r2 < 0.3969 {
                f = volume;
            }
        }
    }
    f
}

/// F_cell by nearest neighbour: the grid value at ceil(x − ½), default_F outside the grid.
#[cube]
pub(super) fn nearest(params: &Array<f32>, counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> f32 {
    let node = nearest_node(counts, h, k, l);
    let mut f = params[DEFAULT_F];
    if node >= 0 {
        f = hkl[node as usize];
    }
    f
}

/// The grid offset of the node nearest (h, k, l), ceil(x − ½) along each axis; −1 off the
/// grid.
#[cube]
pub(super) fn nearest_node(counts: &Array<i32>, h: f32, k: f32, l: f32) -> i32 {
    let ih = grid_offset(counts, (h - 0.5).ceil(), 0usize);
    let ik = grid_offset(counts, (k - 0.5).ceil(), 1usize);
    let il = grid_offset(counts, (l - 0.5).ceil(), 2usize);
    let ch = counts[HKL_COUNT];
    let ck = counts[HKL_COUNT + 1];
    let cl = counts[HKL_COUNT + 2];
    let mut node = (ih * ck + ik) * cl + il;
    if !(ih >= 0 && ih < ch && ik >= 0 && ik < ck && il >= 0 && il < cl) {
        node = -1;
    }
    node
}

/// The offset from the grid's first index of the integral index `x` along `axis`, with `x`
/// clamped to one step outside the grid first (NaN to below it): an index off the grid stays
/// off it, and the cast to i32 is defined for any value (C's `(int)` cast is not).
#[cube]
pub(super) fn grid_offset(counts: &Array<i32>, x: f32, #[comptime] axis: usize) -> i32 {
    let min = counts[HKL_MIN + axis];
    let below = (min - 1) as f32;
    let above = (min + counts[HKL_COUNT + axis]) as f32;
    let mut v = below;
    if x >= below {
        v = x;
    }
    if v > above {
        v = above;
    }
    v as i32 - min
}

/// Whether tricubic interpolation at (h, k, l) leaves the grid: C needs min + 2 ≤ x ≤ max − 2.
#[cube]
pub(super) fn tricubic_out_of_range(counts: &Array<i32>, h: f32, k: f32, l: f32) -> bool {
    let mut out = false;
    #[unroll]
    for a in 0..3usize {
        let mut x = l;
        if a == 0 {
            x = h;
        } else if a == 1 {
            x = k;
        }
        let min = counts[HKL_MIN + a] as f32;
        let max = min + (counts[HKL_COUNT + a] - 1) as f32;
        if x < min + 2.0 || x > max - 2.0 {
            out = true;
        }
    }
    out
}

/// x clamped to [0, max(hi, 0)].
#[cube]
pub(super) fn clamp_index(x: i32, hi: i32) -> i32 {
    let mut v = x;
    if v > hi {
        v = hi;
    }
    if v < 0 {
        v = 0;
    }
    v
}

/// The 4-point Lagrange weight of node `n` (nodes at −1, 0, 1, 2) at t ∈ [0, 1).
#[cube]
pub(super) fn lagrange_weight(t: f32, n: u32) -> f32 {
    let tm1 = t - 1.0;
    let tm2 = t - 2.0;
    let tp1 = t + 1.0;
    let mut w = tp1 * t * tm1 / 6.0;
    if n == 0 {
        w = t * tm1 * tm2 / -6.0;
    } else if n == 1 {
        w = tp1 * tm1 * tm2 / 2.0;
    } else if n == 2 {
        w = tp1 * t * tm2 / -2.0;
    }
    w
}

/// The 4×4×4 node block around (h, k, l), clamped into the grid: the grid offset of its
/// first node, the grid's strides along k and l, its last offset, and the fractional parts
/// h − ⌊h⌋, k − ⌊k⌋, l − ⌊l⌋ that the Lagrange weights take.
#[derive(CubeType, Clone, Copy)]
pub struct TricubicBlock {
    pub base: i32,
    pub ck: i32,
    pub cl: i32,
    pub last: i32,
    pub th: f32,
    pub tk: f32,
    pub tl: f32,
}

#[cube]
pub(super) fn tricubic_block(counts: &Array<i32>, h: f32, k: f32, l: f32) -> TricubicBlock {
    let fh = h.floor();
    let fk = k.floor();
    let fl = l.floor();
    let ch = counts[HKL_COUNT];
    let ck = counts[HKL_COUNT + 1];
    let cl = counts[HKL_COUNT + 2];
    let bh = clamp_index(grid_offset(counts, fh, 0usize) - 1, ch - 4);
    let bk = clamp_index(grid_offset(counts, fk, 1usize) - 1, ck - 4);
    let bl = clamp_index(grid_offset(counts, fl, 2usize) - 1, cl - 4);
    TricubicBlock {
        base: (bh * ck + bk) * cl + bl,
        ck,
        cl,
        last: ch * ck * cl - 1,
        th: h - fh,
        tk: k - fk,
        tl: l - fl,
    }
}

/// The grid offset of node (i, j, m) of `block`, clamped into the grid.
#[cube]
pub(super) fn block_node(block: TricubicBlock, i: u32, j: u32, m: u32) -> usize {
    clamp_index(
        block.base + (i as i32 * block.ck + j as i32) * block.cl + m as i32,
        block.last,
    ) as usize
}

/// Whether C counts a term of lattice factor `lattice`: it skips zero lattice factors without
/// water, which matters where the `-oversample_*` products or tricubic interpolation make a
/// skipped term differ from a zero one (elsewhere every term counts).
#[cube]
pub(super) fn counted(lattice: f32, #[comptime] sw: Switches) -> bool {
    let mut valid = true;
    if comptime!(!sw.water && (sw.products() || sw.tricubic)) {
        valid = lattice != 0.0;
    }
    valid
}

/// F_cell at (h, k, l): default_F without a grid; the grid by nearest neighbour, or by
/// tricubic interpolation until `nearest_now` (C's fall-back).
#[allow(clippy::too_many_arguments)]
#[cube]
pub(super) fn structure_factor(
    params: &Array<f32>,
    counts: &Array<i32>,
    hkl: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    nearest_now: bool,
    #[comptime] sw: Switches,
) -> f32 {
    let mut f = params[DEFAULT_F];
    if comptime!(sw.tricubic) {
        if nearest_now {
            f = nearest(params, counts, hkl, h, k, l);
        } else {
            f = tricubic(counts, hkl, h, k, l);
        }
    } else if comptime!(sw.nearest) {
        f = nearest(params, counts, hkl, h, k, l);
    }
    f
}

/// F_cell by tricubic interpolation over the 4×4×4 nodes around (h, k, l), summed along l,
/// then k, then h (as the tensor stage), with the node block clamped into the grid.
#[cube]
fn tricubic(counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> f32 {
    let block = tricubic_block(counts, h, k, l);
    let mut f = 0.0;
    #[unroll]
    for i in 0..4u32 {
        let mut fk_sum = 0.0;
        #[unroll]
        for j in 0..4u32 {
            let mut fl_sum = 0.0;
            #[unroll]
            for m in 0..4u32 {
                fl_sum += hkl[block_node(block, i, j, m)] * lagrange_weight(block.tl, m);
            }
            fk_sum += fl_sum * lagrange_weight(block.tk, j);
        }
        f += fk_sum * lagrange_weight(block.th, i);
    }
    f
}

/// Whether pixel (slow, fast) of the image is rendered: inside the ROI and, with a mask, not
/// masked.
#[cube]
pub(super) fn is_rendered(
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

/// `len` registers with [`Switches::rows_in_registers`] (for the source's row or the
/// orientation rows), else one (unused).
pub(super) fn still_registers(sw: Switches, len: usize) -> usize {
    if sw.rows_in_registers {
        len
    } else {
        1
    }
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
    let flags = comptime!(sw.products());
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
                            if !polar_found {
                                polar_first = polar;
                                polar_found = true;
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
                        for m in 0..per_source {
                            let o = first + m * ORIENTATION_WIDTH;
                            let h = miller_index(orientations, o, 0, d);
                            let k = miller_index(orientations, o, 1, d);
                            let l = miller_index(orientations, o, 2, d);
                            let f_latt = lattice_factor(params, h, k, l, sw.square, sw.round, sw.gauss);
                            if counted(f_latt, sw) {
                                if comptime!(sw.tricubic) {
                                    if !nearest_now && tricubic_out_of_range(counts, h, k, l) {
                                        nearest_now = true;
                                        first_out_of_range[0].fetch_min(pixel as i32);
                                    }
                                }
                                let f_cell = structure_factor(params, counts, hkl, h, k, l, nearest_now, sw);
                                let term = f_cell * f_cell * f_latt * f_latt;
                                if flags {
                                    running = (running + term) * factor;
                                } else {
                                    running += term;
                                }
                            }
                        }
                    }
                }
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
