//! The CPU engine's per-pixel loop: C's loop over layers × sub-pixels × sources × orientation
//! rows, one pixel at a time, in native Rust over the worker threads, in f64 (C's precision)
//! or f32 ([`Real`]). It reads the job the host packs for the cube kernel ([`PixelJob`]), and
//! its helpers mirror that kernel's ([`pixel`]), so the two cover the same configurations.
//!
//! Rows of the region of interest are handed to the workers one at a time; every pixel is
//! computed on its own, so the image does not depend on the thread count. C switches from
//! tricubic to nearest-neighbour structure factors for good at the first point off the grid,
//! in its loop order: a first pass finds the first pixel where that happens, and the rows from
//! there on are rendered again with the switch in place (as the cube kernel does).

pub mod inputs;
pub mod pixel;
pub mod real;

pub use real::Real;

use crate::error::Result;
use crate::image::Image;
use crate::kernel::PixelJob;
use crate::scene::Scene;
use crate::setup::Experiment;
use crate::simulate::RenderOptions;
use inputs::Inputs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The images (photons) of `scene`, one shot or a batch of shots ([`Scene::batch`]) of `exp`,
/// one per shot, by the native loop in precision `F` on `opts.threads` workers; progress
/// reported through `opts` as rows finish.
pub fn render<F: Real>(exp: &Experiment, scene: &Scene, opts: &RenderOptions) -> Result<Vec<Image>> {
    let job = PixelJob::on_host(exp, scene);
    let inputs = Inputs::<F>::new(&job);
    let (rows, switch) = render_roi(&inputs, opts)?;
    Ok(images(&inputs, &rows, switch.is_some()))
}

/// The image `[spixels·fpixels]` (photons, not rounded to f32) of the one-shot `job`, and
/// the image index after which its render switched to nearest neighbour (C's tricubic
/// fall-back), by the loop in precision `F` on `opts.threads` workers.
pub fn job_photons<F: Real>(job: &PixelJob, opts: &RenderOptions) -> Result<(Vec<f64>, Option<usize>)> {
    let inputs = Inputs::<F>::new(job);
    let (rows, switch) = render_roi(&inputs, opts)?;
    let mut image = vec![0.0; inputs.fpixels * inputs.spixels];
    let cols = inputs.cols.len();
    for (row, slow) in rows.iter().zip(inputs.rows.clone()) {
        let first = slow * inputs.fpixels + inputs.cols.start;
        image[first..first + cols].copy_from_slice(&row.photons[..cols]);
    }
    Ok((image, switch))
}

/// Every ROI row, with C's tricubic fall-back, and the pixel where it switched.
fn render_roi<F: Real>(inputs: &Inputs<F>, opts: &RenderOptions) -> Result<(Vec<RowOut>, Option<usize>)> {
    let roi_rows = inputs.rows.clone();
    let mut rows = render_rows(inputs, roi_rows.clone(), None, opts)?;
    let switch = rows.iter().filter_map(|r| r.left_grid_at).min();
    if let Some(pixel) = switch {
        // every pixel after `pixel` uses nearest neighbour from its start: its row and those
        // after it again
        let from = pixel / inputs.fpixels.max(1);
        let quiet = RenderOptions {
            progress: None,
            ..opts.clone()
        };
        let again = render_rows(inputs, from..roi_rows.end, Some(pixel), &quiet)?;
        rows.truncate(from - roi_rows.start);
        rows.extend(again);
    }
    Ok((rows, switch))
}

/// One ROI row's results: the photons of its ROI columns, shot after shot (`[shots·cols]`),
/// its Σω (shot 0, sr), and the first pixel (image index) where tricubic interpolation left
/// the grid.
struct RowOut {
    photons: Vec<f64>,
    omega: f64,
    left_grid_at: Option<usize>,
}

/// The rows `rows` (image rows inside the ROI), in order; pixels after image index `switch`
/// use nearest neighbour from their start.
fn render_rows<F: Real>(
    inp: &Inputs<F>,
    rows: std::ops::Range<usize>,
    switch: Option<usize>,
    opts: &RenderOptions,
) -> Result<Vec<RowOut>> {
    let next = AtomicUsize::new(rows.start);
    let done = AtomicUsize::new(0);
    let total = rows.len() * inp.cols.len();
    let out: Mutex<Vec<Option<RowOut>>> = Mutex::new((0..rows.len()).map(|_| None).collect());
    let threads = opts.threads.clamp(1, rows.len().max(1));
    crate::workers::run(threads, || loop {
        let slow = next.fetch_add(1, Ordering::Relaxed);
        if slow >= rows.end {
            break;
        }
        let row = render_row(inp, slow, switch);
        out.lock().expect("a row is stored whole")[slow - rows.start] = Some(row);
        let n = done.fetch_add(inp.cols.len(), Ordering::Relaxed) + inp.cols.len();
        if let Some(progress) = &opts.progress {
            progress(n, total);
        }
    })?;
    let rows = out.into_inner().expect("a row is stored whole");
    Ok(rows.into_iter().map(|r| r.expect("every row rendered")).collect())
}

/// One image row inside the ROI: every shot's photons at its ROI columns.
fn render_row<F: Real>(inp: &Inputs<F>, slow: usize, switch: Option<usize>) -> RowOut {
    let cols = inp.cols.len();
    let shots = inp.scales.len();
    let mut photons = vec![0.0; shots * cols];
    let (mut omega, mut left_grid_at) = (0.0, None);
    for (c, fast) in inp.cols.clone().enumerate() {
        if !is_rendered(inp, slow, fast) {
            continue;
        }
        let pixel = slow * inp.fpixels + fast;
        let nearest_now = switch.is_some_and(|s| pixel > s);
        for (shot, &scale) in inp.scales.iter().enumerate() {
            let rows = &inp.orientations[shot * inp.per_shot..(shot + 1) * inp.per_shot];
            let out = pixel::pixel_photons(inp, rows, slow, fast, nearest_now);
            photons[shot * cols + c] = out.photons.to_f64() * scale;
            if shot == 0 {
                omega += out.omega.to_f64();
            }
            if out.left_grid && left_grid_at.is_none() {
                left_grid_at = Some(pixel);
            }
        }
    }
    RowOut {
        photons,
        omega,
        left_grid_at,
    }
}

/// Whether pixel (slow, fast), inside the ROI, is rendered (not masked).
fn is_rendered<F>(inp: &Inputs<F>, slow: usize, fast: usize) -> bool {
    inp.mask.as_ref().is_none_or(|mask| {
        let width = inp.cols.len();
        mask[(slow - inp.rows.start) * width + fast - inp.cols.start]
    })
}

/// The images, one per shot, from the ROI's rows (0 outside the ROI).
fn images<F>(inp: &Inputs<F>, rows: &[RowOut], fell_back: bool) -> Vec<Image> {
    let cols = inp.cols.len();
    let omega_sum = rows.iter().map(|r| r.omega).sum();
    (0..inp.scales.len())
        .map(|shot| {
            let mut data = vec![0.0f32; inp.fpixels * inp.spixels];
            for (row, slow) in rows.iter().zip(inp.rows.clone()) {
                let first = slow * inp.fpixels + inp.cols.start;
                let values = &row.photons[shot * cols..(shot + 1) * cols];
                for (d, &v) in data[first..first + cols].iter_mut().zip(values) {
                    *d = v as f32;
                }
            }
            Image {
                fpixels: inp.fpixels,
                spixels: inp.spixels,
                data,
                omega_sum,
                interpolation_fell_back: fell_back,
                statistics: None,
            }
        })
        .collect()
}
