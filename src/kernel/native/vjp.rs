//! Reverse mode through the native loop, in f64: Σ_p w_p·∂I_p/∂z for the scene variables z
//! (the vector–Jacobian product) and the derivative images dI_p/dθ_k, in the cube adjoint
//! kernel's layout (`kernel::layout`'s `G_*` slots, then 12 numbers per orientation row), so
//! the host's chain rule to the parameters (`kernel::vjp`) serves both.
//!
//! **A pixel.** I = scale·Ω·P·C·S, with S C's running sum over the terms t_n = F²·L² in its
//! loop order (from I_bg) and Ω, P, C its cached first-sample factors. Without the
//! `-oversample_*` products every term's cotangent is the same g = w·scale·Ω·P·C: one pass
//! over the terms gives every term's adjoint and S, which the cached factors' adjoints need.
//! With them, C multiplies the running sum by each counted term's factor f_n after the term,
//! S_n = (S_{n−1} + t_n)·f_n, so ∂I/∂t_n = g·f_n·Π_{m>n} f_m and ∂I/∂f_n =
//! g·(S_{n−1} + t_n)·Π_{m>n} f_m: a first pass stores the factors' suffix products, the second
//! takes the adjoints in C's order.
//!
//! **Sums in a fixed order.** The ROI's rows are cut into a fixed number of contiguous chunks
//! (set by the sizes and the memory budget, not by the thread count); each chunk's pixels add
//! into the chunk's own accumulators in row order, and the chunks' sums are added in chunk
//! order. The same inputs give the same bits on any number of threads.

use super::adjoint::{self, add3, CellFactor, LatticePartials, Ray};
use super::inputs::{Inputs, Row, Source, V3};
use super::lanes::{self, LANES};
use super::pixel::{self as forward, counted, dot, miller_index, scaled, sum3, tricubic_out_of_range};
use super::vjp_lanes::{self, LaneSums};
use crate::base::error::Result;
use crate::kernel::job::{JobSums, PixelJob};
use crate::kernel::layout as at;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The most chunks a vector–Jacobian product's rows are cut into.
const MAX_CHUNKS: usize = 64;

/// One chunk's sums: the scene variables' `[G_GLOBALS + 12·C]` and the grid's `[nodes]`.
type ChunkSums = (Vec<f64>, Vec<f64>);

/// ∂L/∂I of a one-shot job's pixels `[spixels·fpixels]`: one value for every pixel (the
/// cotangent of a sum) or one a pixel, read where it lies.
#[derive(Debug, Clone, Copy)]
pub enum Cotangent<'a> {
    /// The same weight for every pixel.
    Uniform(f64),
    /// One weight a pixel, row-major `[spixels·fpixels]`.
    PerPixel(&'a [f64]),
}

impl Cotangent<'_> {
    /// The weight of pixel `pixel` (row-major index).
    pub(super) fn at(&self, pixel: usize) -> f64 {
        match self {
            Cotangent::Uniform(w) => *w,
            Cotangent::PerPixel(w) => w[pixel],
        }
    }
}

/// The vector–Jacobian product of the one-shot `job` for weights `weights` (∂L/∂I
/// `[spixels·fpixels]`; pixels outside the ROI, masked or of weight 0 add nothing), with the
/// grid's gradient where `grid`, on `threads` workers within about `budget` bytes of
/// accumulators. C's tricubic fall-back is the job's ([`PixelJob::switch_pixel`], which the
/// render found).
pub fn job_vjp(job: &PixelJob, weights: Cotangent<'_>, grid: bool, threads: usize, budget: usize) -> Result<JobSums> {
    let inp = Inputs::<f64>::new(job);
    let width = at::G_GLOBALS + at::ORIENTATION_WIDTH * inp.per_shot;
    let nodes = match (grid, &inp.grid) {
        (true, Some(g)) => g.values.len(),
        _ => 0,
    };
    let switch = switch_pixel(job);
    let lanes = vjp_lanes::covers(&inp);
    let rows = inp.rows.clone();
    let chunks = (budget / (8 * (width + nodes)))
        .clamp(1, MAX_CHUNKS)
        .min(rows.len().max(1));
    let bound = |c: usize| rows.start + rows.len() * c / chunks;
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<ChunkSums>>> = Mutex::new(vec![None; chunks]);
    crate::base::workers::run(threads.clamp(1, chunks), || {
        let mut later = Vec::new();
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            if c >= chunks {
                break;
            }
            let mut acc = vec![0.0; width];
            let mut into = vec![0.0; nodes];
            if lanes {
                let mut sums = LaneSums::new(width);
                for slow in bound(c)..bound(c + 1) {
                    let grid_into = (nodes > 0).then_some(&mut into[..]);
                    vjp_lanes::row_adjoint(&inp, slow, weights, &mut sums, grid_into);
                }
                sums.add_to(&mut acc);
            } else {
                for slow in bound(c)..bound(c + 1) {
                    for fast in inp.cols.clone() {
                        let w = weights.at(slow * inp.fpixels + fast);
                        if w == 0.0 || !super::is_rendered(&inp, slow, fast) {
                            continue;
                        }
                        let grid_into = (nodes > 0).then_some(&mut into[..]);
                        let mut out = Outlet {
                            acc: &mut acc,
                            grid: grid_into,
                            later: &mut later,
                        };
                        pixel_adjoint(&inp, slow, fast, w, switch, &mut out);
                    }
                }
            }
            done.lock().expect("a chunk is stored whole")[c] = Some((acc, into));
        }
    })?;
    let mut sums = vec![0.0; width];
    let mut grid_sums = vec![0.0; nodes];
    for (acc, into) in done.into_inner().expect("chunks stored whole").into_iter().flatten() {
        sums.iter_mut().zip(acc).for_each(|(s, v)| *s += v);
        grid_sums.iter_mut().zip(into).for_each(|(s, v)| *s += v);
    }
    Ok(JobSums {
        sums,
        grid: (nodes > 0).then_some(grid_sums),
    })
}

/// The derivative images `[n, spixels·fpixels]` dI_p/dθ_k = Σ_z ∂I_p/∂z·t_k[z] of the
/// one-shot `job` for the tangents `tangents` `[n, G_GLOBALS + 12·C]` (t_k = ∂z/∂θ_k in the
/// vector–Jacobian layout): each rendered pixel's adjoint with weight 1, contracted with the
/// tangents; 0 outside the ROI and where masked. Rows go to `threads` workers; every pixel is
/// its own, so the images do not depend on the thread count.
pub fn job_derivatives(job: &PixelJob, tangents: &[f64], n: usize, threads: usize) -> Result<Vec<f64>> {
    let inp = Inputs::<f64>::new(job);
    let width = at::G_GLOBALS + at::ORIENTATION_WIDTH * inp.per_shot;
    let pixels = inp.fpixels * inp.spixels;
    let switch = switch_pixel(job);
    let lanes = vjp_lanes::covers(&inp);
    let out = Mutex::new(vec![0.0; n * pixels]);
    let next = AtomicUsize::new(inp.rows.start);
    crate::base::workers::run(threads.clamp(1, inp.rows.len().max(1)), || {
        let (mut acc, mut later) = (vec![0.0; width], Vec::new());
        let mut row = vec![0.0; n * inp.cols.len()];
        let mut sums = lanes.then(|| LaneSums::new(width));
        loop {
            let slow = next.fetch_add(1, Ordering::Relaxed);
            if slow >= inp.rows.end {
                break;
            }
            row.fill(0.0);
            if let Some(sums) = sums.as_mut() {
                vjp_lanes::row_derivatives(&inp, slow, tangents, n, sums, &mut row);
            } else {
                for (c, fast) in super::rendered_columns(&inp, slow) {
                    acc.fill(0.0);
                    let mut outlet = Outlet {
                        acc: &mut acc,
                        grid: None,
                        later: &mut later,
                    };
                    pixel_adjoint(&inp, slow, fast, 1.0, switch, &mut outlet);
                    for (k, t) in tangents.chunks_exact(width).enumerate().take(n) {
                        row[k * inp.cols.len() + c] = acc.iter().zip(t).map(|(a, t)| a * t).sum();
                    }
                }
            }
            let mut images = out.lock().expect("a row is written whole");
            for k in 0..n {
                let at = k * pixels + slow * inp.fpixels;
                let cols = inp.cols.len();
                images[at + inp.cols.start..at + inp.cols.end].copy_from_slice(&row[k * cols..(k + 1) * cols]);
            }
        }
    })?;
    Ok(out.into_inner().expect("rows written whole"))
}

/// The image index after which the job's pixels use nearest neighbour (`None`: never).
fn switch_pixel(job: &PixelJob) -> Option<usize> {
    usize::try_from(job.switch_pixel())
        .ok()
        .filter(|&p| p != i32::MAX as usize)
}

/// Where one pixel's adjoint goes: the scene variables' accumulators `[G_GLOBALS + 12·C]`,
/// the grid's (where its gradient is asked for), and scratch for the products' factors.
struct Outlet<'a> {
    acc: &'a mut [f64],
    grid: Option<&'a mut [f64]>,
    later: &'a mut Vec<f64>,
}

/// C's cached per-pixel factors, each with the ray it was computed on (kept for its adjoint):
/// ω of the first sample, the capture fraction of the last layer's first sample, the Kahn
/// factor of the first kept (sample, source) with that source's index; 1 (and no ray) for a
/// factor whose `-oversample_*` flag applies it per term.
pub(super) struct Factors {
    pub omega: f64,
    pub capture: f64,
    pub polar: f64,
    omega_ray: Option<Ray>,
    capture_ray: Option<Ray>,
    polar_at: Option<(Ray, usize)>,
}

/// Whether `source` keeps the sample along `d` (`-dmin`).
#[inline]
fn kept(inp: &Inputs<f64>, source: &Source<f64>, d: V3<f64>) -> bool {
    !inp.sw.dmin || forward::stol(d, source) <= inp.p.stol_max
}

/// The cached factors of pixel (`slow`, `fast`) of shot 0.
pub(super) fn factors_at(inp: &Inputs<f64>, slow: usize, fast: usize) -> Factors {
    pixel_factors(&Pass::new(inp, slow, fast, false))
}

/// The cached factors of the pass's pixel.
fn pixel_factors(pass: &Pass) -> Factors {
    let inp = pass.inp;
    let (sw, p, os) = (&inp.sw, &inp.p, inp.oversample);
    let mut out = Factors {
        omega: 1.0,
        capture: 1.0,
        polar: 1.0,
        omega_ray: None,
        capture_ray: None,
        polar_at: None,
    };
    if !sw.oversample_omega {
        let first = pass.ray(0, 0, 0);
        out.omega = forward::solid_angle(p, first.r, sw.point_pixel);
        out.omega_ray = Some(first);
    }
    if sw.sensor && !sw.oversample_thick {
        let last = pass.ray(inp.layers - 1, 0, 0);
        out.capture = forward::capture_fraction(p, dot(last.d, p.odet), (inp.layers - 1) as f64);
        out.capture_ray = Some(last);
    }
    if sw.polar && !sw.oversample_polar {
        out.polar = 0.0;
        'search: for t in 0..inp.layers {
            for sub_s in 0..os {
                for sub_f in 0..os {
                    let ray = pass.ray(t, sub_s, sub_f);
                    if let Some(si) = inp.sources.iter().position(|s| kept(inp, s, ray.d)) {
                        out.polar = forward::kahn_factor(&inp.sources[si], ray.d, p.kahn);
                        out.polar_at = Some((ray, si));
                        break 'search;
                    }
                }
            }
        }
    }
    out
}

/// One pixel's adjoint for its ∂L/∂I `weight`, into `out`; C's tricubic fall-back after image
/// index `switch`.
fn pixel_adjoint(inp: &Inputs<f64>, slow: usize, fast: usize, weight: f64, switch: Option<usize>, out: &mut Outlet) {
    let scale = inp.scales[0];
    let pixel = slow * inp.fpixels + fast;
    let pass = Pass::new(inp, slow, fast, switch.is_some_and(|s| pixel > s));
    let factors = pixel_factors(&pass);
    let g_term = weight * scale * factors.omega * factors.polar * factors.capture;
    // ∂I/∂I_bg: the running sum starts at I_bg (the products scale it after every term)
    let all = match inp.sw.products() {
        true => pass.suffix_products(out.later),
        false => 1.0,
    };
    out.acc[at::G_I_BG] += g_term * all;
    let total = pass.terms(g_term, out);
    factor_adjoints(inp, &factors, total, weight, out.acc);
}

/// The factors one term of the `-oversample_*` products multiplies the running sum by: ω,
/// the capture fraction and the Kahn factor of the sample (each 1 where its flag is off).
#[derive(Debug, Clone, Copy)]
struct TermFactor {
    omega: f64,
    capture: f64,
    polar: f64,
}

impl TermFactor {
    fn of(inp: &Inputs<f64>, source: &Source<f64>, ray: &Ray, layer: usize) -> Self {
        let (sw, p) = (&inp.sw, &inp.p);
        let mut f = Self {
            omega: 1.0,
            capture: 1.0,
            polar: 1.0,
        };
        if sw.oversample_omega {
            f.omega = forward::solid_angle(p, ray.r, sw.point_pixel);
        }
        if sw.oversample_thick && sw.sensor {
            f.capture = forward::capture_fraction(p, dot(ray.d, p.odet), layer as f64);
        }
        if sw.oversample_polar && sw.polar {
            f.polar = forward::kahn_factor(source, ray.d, p.kahn);
        }
        f
    }

    fn product(&self) -> f64 {
        self.omega * self.capture * self.polar
    }

    /// The adjoint of the product for its cotangent `g`.
    fn adjoint(&self, inp: &Inputs<f64>, source: &Source<f64>, ray: &Ray, layer: usize, g: f64, acc: &mut [f64]) {
        let (sw, p) = (&inp.sw, &inp.p);
        if sw.oversample_omega {
            adjoint::solid_angle(p, sw, acc, ray, g * self.capture * self.polar);
        }
        if sw.oversample_thick && sw.sensor {
            adjoint::capture_fraction(p, sw, acc, ray, layer as f64, g * self.omega * self.polar);
        }
        if sw.oversample_polar && sw.polar {
            adjoint::kahn_factor(p, sw, acc, source, ray, g * self.omega * self.capture);
        }
    }
}

/// The terms of one pixel, in C's order.
struct Pass<'a> {
    inp: &'a Inputs<f64>,
    /// The shot's orientation rows.
    rows: &'a [Row<f64>],
    slow: usize,
    fast: usize,
    /// The ray of the pixel's first sample.
    first: Ray,
    /// Whether structure factors are nearest neighbour from the pixel's start.
    nearest_start: bool,
}

impl<'a> Pass<'a> {
    /// The pass of pixel (`slow`, `fast`) of shot 0, nearest neighbour from its start where
    /// `nearest_start`.
    fn new(inp: &'a Inputs<f64>, slow: usize, fast: usize, nearest_start: bool) -> Self {
        Self {
            inp,
            rows: inp.orientations_of(0),
            slow,
            fast,
            first: adjoint::ray(&inp.p, &inp.sw, inp.oversample, slow, fast, 0, 0, 0),
            nearest_start,
        }
    }

    /// Every sample of the pixel in C's order (layer, sub-pixel row, sub-pixel column), with
    /// its ray and layer.
    fn each_sample(&self, mut visit: impl FnMut(&Ray, usize)) {
        let (inp, os) = (self.inp, self.inp.oversample);
        for t in 0..inp.layers {
            for sub_s in 0..os {
                for sub_f in 0..os {
                    visit(&self.ray(t, sub_s, sub_f), t);
                }
            }
        }
    }

    /// The ray of layer `t`, sub-pixel (`sub_s`, `sub_f`): the first sample's computed once.
    fn ray(&self, t: usize, sub_s: usize, sub_f: usize) -> Ray {
        match (t, sub_s, sub_f) {
            (0, 0, 0) => self.first,
            _ => adjoint::ray(
                &self.inp.p,
                &self.inp.sw,
                self.inp.oversample,
                self.slow,
                self.fast,
                t,
                sub_s,
                sub_f,
            ),
        }
    }

    /// The sources that keep the sample along `d`, each with the index of its first row.
    fn kept_sources(&self, d: V3<f64>) -> impl Iterator<Item = (&Source<f64>, usize)> + '_ {
        let per_source = self.per_source();
        let sources = self.inp.sources.iter().enumerate();
        sources
            .filter(move |(_, s)| kept(self.inp, s, d))
            .map(move |(si, s)| (s, si * per_source))
    }

    fn per_source(&self) -> usize {
        self.rows.len() / self.inp.sources.len().max(1)
    }

    /// With the products: each counted term's Π_{m>n} f_m into `later`; returns Π f_m.
    fn suffix_products(&self, later: &mut Vec<f64>) -> f64 {
        later.clear();
        let per_source = self.per_source();
        self.each_sample(|ray, t| {
            for (source, first) in self.kept_sources(ray.d) {
                let f = TermFactor::of(self.inp, source, ray, t).product();
                for row in &self.rows[first..first + per_source] {
                    let lat = adjoint::lattice_factor(&self.inp.p, miller_index(row, ray.d), &self.inp.sw);
                    if counted(lat.value, &self.inp.sw) {
                        later.push(f);
                    }
                }
            }
        });
        let mut after = 1.0;
        for x in later.iter_mut().rev() {
            let f = *x;
            *x = after;
            after *= f;
        }
        after
    }

    /// Every term's adjoint, with cotangent `g_term` (times the later factors with the
    /// products), into `out`; returns the running sum S.
    fn terms(&self, g_term: f64, out: &mut Outlet) -> f64 {
        let (inp, sw) = (self.inp, &self.inp.sw);
        let mut running = inp.p.i_bg;
        let mut nearest_now = self.nearest_start;
        let mut n = 0;
        self.each_sample(|ray, t| {
            let mut g_d = [0.0; 3];
            for (source, first) in self.kept_sources(ray.d) {
                let f = sw.products().then(|| TermFactor::of(inp, source, ray, t));
                let rows = &self.rows[first..first + self.per_source()];
                let lanes = rows.chunks(LANES).flat_map(|group| {
                    let hkl = lanes::miller_indices(group, ray.d);
                    let lat = lanes::lattice_factors(&inp.p, &hkl, group.len(), sw);
                    group.iter().zip(hkl).zip(lat)
                });
                for (o, ((row, hkl), lat)) in lanes.enumerate() {
                    if !counted(lat.value, sw) {
                        continue;
                    }
                    if sw.tricubic && !nearest_now && inp.grid.as_ref().is_some_and(|g| tricubic_out_of_range(g, hkl)) {
                        nearest_now = true;
                    }
                    let cell = adjoint::structure_factor(&inp.p, inp.grid.as_ref(), sw, hkl, nearest_now);
                    let term = cell.value * cell.value * lat.value * lat.value;
                    let cotangent = match f {
                        Some(f) => g_term * f.product() * out.later[n],
                        None => g_term,
                    };
                    let slot = at::G_GLOBALS + at::ORIENTATION_WIDTH * (first + o);
                    let g = self.term_adjoint(row, source, ray, &lat, &cell, cotangent, slot, out);
                    g_d = sum3(g_d, g);
                    match f {
                        Some(f) => {
                            let g_factor = g_term * (running + term) * out.later[n];
                            f.adjoint(inp, source, ray, t, g_factor, out.acc);
                            running = (running + term) * f.product();
                        }
                        None => running += term,
                    }
                    n += 1;
                }
            }
            // the sample's direction: its cotangent back to the detector
            adjoint::push_direction(&inp.p, sw, out.acc, ray, g_d);
        });
        running
    }

    /// The adjoint of one term F²·L² of orientation row `row` (its slots from `slot`) for the
    /// cotangent `g_term`: N, a*/b*/c*, default_F or the grid into `out`; returns ∂L/∂d.
    #[allow(clippy::too_many_arguments)]
    fn term_adjoint(
        &self,
        row: &Row<f64>,
        source: &Source<f64>,
        ray: &Ray,
        lat: &LatticePartials,
        cell: &CellFactor,
        g_term: f64,
        slot: usize,
        out: &mut Outlet,
    ) -> V3<f64> {
        let acc = &mut *out.acc;
        // ∂L/∂F_cell and ∂L/∂F_latt
        let g_f = g_term * 2.0 * cell.value * lat.value * lat.value;
        let g_l = g_term * 2.0 * lat.value * cell.value * cell.value;
        if cell.is_default {
            acc[at::G_DEFAULT_F] += g_f;
        } else if let (Some(into), Some(grid)) = (out.grid.as_deref_mut(), &self.inp.grid) {
            adjoint::scatter_to_grid(grid, cell, g_f, into);
        }
        for a in 0..3 {
            acc[at::G_N_CELLS + a] += g_l * lat.d_n[a];
        }
        if self.inp.sw.gauss {
            let g_c = scaled(lat.c, g_l * lat.kappa);
            for v in 0..3 {
                add3(acc, at::G_RECIP + 3 * v, scaled(g_c, lat.frac[v]));
            }
        }
        let gh = [0, 1, 2].map(|v| g_l * lat.d_hkl[v] + g_f * cell.d_hkl[v]);
        // h_v = d·(a_v/λ) − offset_v: the a/λ slots take (d − i)·∂L/∂h and the offsets −∂L/∂h
        // (the cube kernel's layout; `kernel::vjp` adds i·Σ ∂L/∂h back)
        let q = sum3(ray.d, scaled(source.incident, -1.0));
        for v in 0..3 {
            add3(acc, slot + 3 * v, scaled(q, gh[v]));
            acc[slot + at::OFFSET + v] -= gh[v];
        }
        (0..3).fold([0.0; 3], |g, v| sum3(g, scaled(row.axes[v], gh[v])))
    }
}

/// The cached factors' adjoints, once the pixel's running sum `total` is known; `weight` =
/// ∂L/∂I of the pixel.
pub(super) fn factor_adjoints(inp: &Inputs<f64>, f: &Factors, total: f64, weight: f64, acc: &mut [f64]) {
    let (sw, p) = (&inp.sw, &inp.p);
    acc[at::G_SCALE] += weight * total * f.omega * f.polar * f.capture;
    let g = weight * inp.scales[0] * total;
    if let Some(first) = &f.omega_ray {
        adjoint::solid_angle(p, sw, acc, first, g * f.polar * f.capture);
    }
    if let Some(last) = &f.capture_ray {
        let layer = (inp.layers - 1) as f64;
        adjoint::capture_fraction(p, sw, acc, last, layer, g * f.omega * f.polar);
    }
    if let Some((ray, si)) = &f.polar_at {
        adjoint::kahn_factor(p, sw, acc, &inp.sources[*si], ray, g * f.omega * f.capture);
    }
}

/// The one-pixel pass's sums for the lanes' tests: [`job_vjp`]'s Σ_p w_p·∂I_p/∂z and the grid's,
/// one pixel at a time on one worker, each with Σ_p |w_p·∂I_p/∂z| (the scale of its rounding).
#[cfg(test)]
pub(super) fn one_pixel_at_a_time(job: &PixelJob, weights: Cotangent<'_>) -> [(Vec<f64>, Vec<f64>); 2] {
    let inp = Inputs::<f64>::new(job);
    let width = at::G_GLOBALS + at::ORIENTATION_WIDTH * inp.per_shot;
    let nodes = inp.grid.as_ref().map_or(0, |g| g.values.len());
    let (mut sums, mut scale) = (vec![0.0; width], vec![0.0; width]);
    let (mut grid_sums, mut grid_scale) = (vec![0.0; nodes], vec![0.0; nodes]);
    let mut later = Vec::new();
    for slow in inp.rows.clone() {
        for fast in inp.cols.clone() {
            let w = weights.at(slow * inp.fpixels + fast);
            if w == 0.0 || !super::is_rendered(&inp, slow, fast) {
                continue;
            }
            let (mut acc, mut into) = (vec![0.0; width], vec![0.0; nodes]);
            let mut out = Outlet {
                acc: &mut acc,
                grid: Some(&mut into[..]),
                later: &mut later,
            };
            pixel_adjoint(&inp, slow, fast, w, switch_pixel(job), &mut out);
            for (s, (m, a)) in sums.iter_mut().zip(scale.iter_mut().zip(&acc)) {
                (*s, *m) = (*s + a, *m + a.abs());
            }
            for (s, (m, a)) in grid_sums.iter_mut().zip(grid_scale.iter_mut().zip(&into)) {
                (*s, *m) = (*s + a, *m + a.abs());
            }
        }
    }
    [(sums, scale), (grid_sums, grid_scale)]
}
