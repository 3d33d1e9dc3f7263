//! The CPU engine's per-pixel loop: C's loop over layers × sub-pixels × sources × orientation
//! rows, one pixel at a time, in native Rust over the worker threads, in f64 (C's precision)
//! or f32 ([`Real`]). It reads the job the host packs for the cube kernel ([`PixelJob`]), and
//! its helpers mirror that kernel's ([`pixel`]), so the two cover the same configurations.
//!
//! Rows of the region of interest are handed to the workers one at a time; every pixel is
//! computed on its own, so the image does not depend on the thread count. Pixels of a row go
//! through the loop in groups, one per lane ([`pixel_lanes`]), with the bits of one at a time. C switches from
//! tricubic to nearest-neighbour structure factors for good at the first point off the grid,
//! in its loop order: a first pass finds the first pixel where that happens, and the rows from
//! there on are rendered again with the switch in place (as the cube kernel does).
//!
//! [`vjp`] runs the same loop in reverse mode, in f64, with the adjoints of the helpers beside
//! them in [`adjoint`]: the CPU engine's vector–Jacobian products and derivative images.

pub mod adjoint;
pub mod groups;
pub mod inputs;
pub mod lanes;
pub mod pixel;
pub mod pixel_lanes;
pub mod real;
pub mod vjp;
pub mod vjp_lanes;

pub use real::Real;

use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::kernel::job::{HostImage, PixelJob};
use crate::physics::amorphous::StolCubics;
use crate::render::amorphous::{with_background, BackgroundScene};
use crate::render::image::Image;
use crate::render::RenderOptions;
use crate::scene::Scene;
use inputs::{Background, Inputs};
use multiversion::multiversion;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The images (photons) of `scene`, one shot or a batch of shots ([`Scene::batch`]) of `exp`,
/// one per shot, by the native loop in precision `F` on `opts.threads` workers; progress
/// reported through `opts` as rows finish.
pub fn render<F: Real>(exp: &Experiment, scene: &Scene, opts: &RenderOptions) -> Result<Vec<Image>> {
    let job = PixelJob::new(exp, scene);
    images(&Inputs::<F>::new(&job), opts)
}

/// [`render`] with the amorphous background of `background` added to every image (photons,
/// each pixel's background rounded to f32 and added to its f32 value, as
/// [`with_background`] adds it). Where the lanes render, the background is summed
/// in their loop, sharing each sample's direction, solid angle and polarization factor;
/// elsewhere (tricubic structure factors, `-dmin`, `-Fmap`) it is rendered on its own and added.
pub fn render_with_background<F: Real>(
    exp: &Experiment,
    scene: &Scene,
    opts: &RenderOptions,
    background: &BackgroundScene,
) -> Result<Vec<Image>> {
    let job = PixelJob::new(exp, scene);
    let mut inputs = Inputs::<F>::new(&job);
    if !folds_background(&inputs, background) {
        return with_background(exp, background, images(&inputs, opts));
    }
    inputs.background = Some(Background {
        cubics: StolCubics::new(&background.curve),
        photons_per_sample: background.photons_per_electron_sqr() / background.steps() as f64,
    });
    images(&inputs, opts)
}

/// Whether the lanes sum `background` in their loop for `inputs` ([`render_with_background`]):
/// they render it (no tricubic interpolation), they visit every sample (no `-dmin` culling),
/// and the background's samples are theirs.
pub fn folds_background<F>(inputs: &Inputs<F>, background: &BackgroundScene) -> bool {
    pixel_lanes::covers(inputs)
        && !inputs.sw.dmin
        && !background.fmap
        && background.sources.len() == inputs.sources.len()
        && background.oversample == inputs.oversample
}

/// The images of `inputs`, one per shot.
fn images<F: Real>(inputs: &Inputs<F>, opts: &RenderOptions) -> Result<Vec<Image>> {
    let pixels = inputs.fpixels * inputs.spixels;
    let mut data = vec![vec![0.0f32; pixels]; inputs.scales.len()];
    let (omega_sum, switch) = render_roi(inputs, opts, &mut data)?;
    Ok(data
        .into_iter()
        .map(|data| Image {
            fpixels: inputs.fpixels,
            spixels: inputs.spixels,
            data,
            omega_sum,
            interpolation_fell_back: switch.is_some(),
            statistics: None,
        })
        .collect())
}

/// The image `[spixels·fpixels]` (photons, not rounded to f32) of the one-shot `job`, and
/// the image index after which its render switched to nearest neighbour (C's tricubic
/// fall-back), by the loop in precision `F` on `opts.threads` workers.
pub fn job_photons<F: Real>(job: &PixelJob, opts: &RenderOptions) -> Result<(Vec<f64>, Option<usize>)> {
    let inputs = Inputs::<F>::new(job);
    let mut image = vec![vec![0.0f64; inputs.fpixels * inputs.spixels]];
    let (_, switch) = render_roi(&inputs, opts, &mut image)?;
    Ok((image.swap_remove(0), switch))
}

/// The image of the one-shot `job` read back, by the loop in precision `F` on `opts.threads`
/// workers; C's tricubic fall-back, where the render found one, is set in `job`
/// ([`PixelJob::switch_to_nearest_after`]) for its adjoint.
pub fn host_image<F: Real>(job: &mut PixelJob, opts: &RenderOptions) -> Result<HostImage> {
    let inputs = Inputs::<F>::new(job);
    let mut photons = vec![vec![0.0f64; inputs.fpixels * inputs.spixels]];
    let (omega_sum, switch) = render_roi(&inputs, opts, &mut photons)?;
    if let Some(pixel) = switch {
        job.switch_to_nearest_after(i32::try_from(pixel).unwrap_or(i32::MAX));
    }
    let photons = photons.swap_remove(0);
    let image = Image {
        fpixels: inputs.fpixels,
        spixels: inputs.spixels,
        data: photons.iter().map(|&v| v as f32).collect(),
        omega_sum,
        interpolation_fell_back: switch.is_some(),
        statistics: None,
    };
    Ok(HostImage { image, photons })
}

/// Every ROI row into `images` (one per shot, `[spixels·fpixels]`, zero outside the ROI and
/// where masked), with C's tricubic fall-back: Σω (shot 0, sr) and the pixel where the render
/// switched to nearest neighbour.
fn render_roi<F: Real, T: Real>(
    inputs: &Inputs<F>,
    opts: &RenderOptions,
    images: &mut [Vec<T>],
) -> Result<(f64, Option<usize>)> {
    let roi_rows = inputs.rows.clone();
    // each ROI row's ROI columns in every shot's image, handed to one worker at a time
    let mut per_row: Vec<Vec<&mut [T]>> = (0..roi_rows.len()).map(|_| Vec::new()).collect();
    for image in images.iter_mut() {
        let rows = image.chunks_mut(inputs.fpixels.max(1)).skip(roi_rows.start);
        for (slices, row) in per_row.iter_mut().zip(rows) {
            slices.push(&mut row[inputs.cols.clone()]);
        }
    }
    let slots: Vec<Mutex<Vec<&mut [T]>>> = per_row.into_iter().map(Mutex::new).collect();
    let mut sums = render_rows(inputs, &slots, roi_rows.clone(), None, opts)?;
    let switch = sums.iter().filter_map(|r| r.left_grid_at).min();
    if let Some(pixel) = switch {
        // every pixel after `pixel` uses nearest neighbour from its start: its row and those
        // after it again
        let from = pixel / inputs.fpixels.max(1);
        let quiet = RenderOptions {
            progress: None,
            ..opts.clone()
        };
        let again = render_rows(inputs, &slots, from..roi_rows.end, Some(pixel), &quiet)?;
        sums.truncate(from - roi_rows.start);
        sums.extend(again);
    }
    Ok((sums.iter().map(|r| r.omega).sum(), switch))
}

/// What one ROI row leaves besides its pixels: its Σω (shot 0, sr), and the first pixel
/// (image index) where tricubic interpolation left the grid.
struct RowSums {
    omega: f64,
    left_grid_at: Option<usize>,
}

/// ROI rows of `slots` (one per ROI row: its columns in every shot's image) from image row
/// `rows.start` to `rows.end`, in order; pixels after image index `switch` use nearest
/// neighbour from their start.
fn render_rows<F: Real, T: Real>(
    inp: &Inputs<F>,
    slots: &[Mutex<Vec<&mut [T]>>],
    rows: std::ops::Range<usize>,
    switch: Option<usize>,
    opts: &RenderOptions,
) -> Result<Vec<RowSums>> {
    let next = AtomicUsize::new(rows.start);
    let done = AtomicUsize::new(0);
    let total = rows.len() * inp.cols.len();
    let sums: Mutex<Vec<Option<RowSums>>> = Mutex::new((0..rows.len()).map(|_| None).collect());
    let threads = opts.threads.clamp(1, rows.len().max(1));
    crate::base::workers::run(threads, || loop {
        let slow = next.fetch_add(1, Ordering::Relaxed);
        if slow >= rows.end {
            break;
        }
        let mut out = slots[slow - inp.rows.start].lock().expect("a row is written whole");
        let row = render_row(inp, slow, switch, &mut out);
        drop(out);
        sums.lock().expect("a row is stored whole")[slow - rows.start] = Some(row);
        let n = done.fetch_add(inp.cols.len(), Ordering::Relaxed) + inp.cols.len();
        if let Some(progress) = &opts.progress {
            progress(n, total);
        }
    })?;
    let sums = sums.into_inner().expect("a row is stored whole");
    Ok(sums.into_iter().map(|r| r.expect("every row rendered")).collect())
}

/// One image row inside the ROI: every shot's photons at its ROI columns into `out` (one slice
/// per shot; masked pixels are left as they are, 0).
fn render_row<F: Real, T: Real>(inp: &Inputs<F>, slow: usize, switch: Option<usize>, out: &mut [&mut [T]]) -> RowSums {
    if pixel_lanes::covers(inp) {
        return match inp.background {
            Some(_) => render_row_background_lanes(inp, slow, out),
            None => render_row_lanes(inp, slow, out),
        };
    }
    let (mut omega, mut left_grid_at) = (0.0, None);
    for (c, fast) in inp.cols.clone().enumerate() {
        if !is_rendered(inp, slow, fast) {
            continue;
        }
        let pixel = slow * inp.fpixels + fast;
        let nearest_now = switch.is_some_and(|s| pixel > s);
        for (shot, &scale) in inp.scales.iter().enumerate() {
            let rows = inp.orientations_of(shot);
            let value = pixel::pixel_photons(inp, rows, slow, fast, nearest_now);
            out[shot][c] = T::of(value.photons.to_f64() * scale);
            if shot == 0 {
                omega += value.omega.to_f64();
            }
            if value.left_grid && left_grid_at.is_none() {
                left_grid_at = Some(pixel);
            }
        }
    }
    RowSums { omega, left_grid_at }
}

/// [`render_row`] by [`pixel_lanes::PIXEL_LANES`] rendered pixels at a time (the last group
/// padded with its last pixel); without tricubic interpolation no pixel leaves the grid.
/// Compiled for the widest vector instructions the CPU has.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
fn render_row_lanes<F: Real, T: Real>(inp: &Inputs<F>, slow: usize, out: &mut [&mut [T]]) -> RowSums {
    let mut omega = 0.0;
    for group in groups::pixel_groups(inp, slow, |_| 1.0) {
        for (shot, &scale) in inp.scales.iter().enumerate() {
            let rows = inp.orientations_of(shot);
            let values = pixel_lanes::pixel_photons_lanes(inp, rows, slow, group.fast);
            for (&c, value) in group.positions().iter().zip(&values) {
                out[shot][c] = T::of(value.photons.to_f64() * scale);
                if shot == 0 {
                    omega += value.omega.to_f64();
                }
            }
        }
    }
    RowSums {
        omega,
        left_grid_at: None,
    }
}

/// [`render_row_lanes`] with the amorphous background of [`Inputs::background`] summed in
/// the first shot's loop and added to every shot's pixels (each rounded to f32 and added to
/// the f32 value, as [`with_background`] adds it). A function of its own, so that the loop
/// without the background compiles as it would alone.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
fn render_row_background_lanes<F: Real, T: Real>(inp: &Inputs<F>, slow: usize, out: &mut [&mut [T]]) -> RowSums {
    let mut omega = 0.0;
    for group in groups::pixel_groups(inp, slow, |_| 1.0) {
        let (first, photons) =
            pixel_lanes::pixel_photons_and_background_lanes(inp, inp.orientations_of(0), slow, group.fast);
        let background = photons.map(|b| T::of(f64::from(b as f32)));
        for (_, value) in group.positions().iter().zip(&first) {
            omega += value.omega.to_f64();
        }
        for (shot, &scale) in inp.scales.iter().enumerate() {
            let other;
            let values = match shot {
                0 => &first,
                _ => {
                    other = pixel_lanes::pixel_photons_lanes(inp, inp.orientations_of(shot), slow, group.fast);
                    &other
                }
            };
            for ((&c, value), &b) in group.positions().iter().zip(values).zip(&background) {
                out[shot][c] = T::of(value.photons.to_f64() * scale) + b;
            }
        }
    }
    RowSums {
        omega,
        left_grid_at: None,
    }
}

/// Whether pixel (slow, fast), inside the ROI, is rendered (not masked).
pub(super) fn is_rendered<F>(inp: &Inputs<F>, slow: usize, fast: usize) -> bool {
    inp.mask.as_ref().is_none_or(|mask| {
        let width = inp.cols.len();
        mask[(slow - inp.rows.start) * width + fast - inp.cols.start]
    })
}

/// The ROI columns of row `slow` that are rendered (not masked): (position in the ROI, column).
pub(super) fn rendered_columns<F>(inp: &Inputs<F>, slow: usize) -> Vec<(usize, usize)> {
    inp.cols
        .clone()
        .enumerate()
        .filter(|&(_, fast)| is_rendered(inp, slow, fast))
        .collect()
}

/// What the lanes' tests share: a job from C flags.
#[cfg(test)]
pub(super) mod testing {
    use crate::kernel::job::PixelJob;
    use crate::scene::Scene;
    use std::path::Path;

    /// The one-shot job of C flags `flags`, with `-hkl hkl` where given.
    pub fn job_of(flags: &str, hkl: Option<&Path>) -> PixelJob {
        let mut args: Vec<String> = flags.split_whitespace().map(String::from).collect();
        if let Some(path) = hkl {
            args.extend(["-hkl".to_string(), path.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let crate::experiment::args::Parsed::Run(cfg, _) = crate::experiment::args::parse_args(&args).unwrap() else {
            panic!("no run: {flags}")
        };
        let exp = crate::experiment::Experiment::new(&cfg).unwrap();
        PixelJob::new(&exp, &Scene::new(&exp))
    }
}
