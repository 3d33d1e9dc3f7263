//! What the host decides for one run of the per-pixel loop: the experiment packed into the
//! flat arrays of [`super::layout`] (f64 here; the cube kernels get them in f32, the native
//! loop in its own precision), and the switches.

use super::layout as at;
use crate::base::error::Result;
use crate::config::CrystalShape;
use crate::experiment::{Experiment, R_E_SQR};
use crate::render::image::Image;
use crate::scene::{to_host, Scene, SceneTensors};
use burn::tensor::{backend::Backend, Tensor};

/// ROI positions per statistics block (see [`super::pixel::image_statistics`]): f32 sums
/// over 64 values keep ~7 digits; the blocks are finished in f64 on the host.
pub const STAT_BLOCK: usize = 64;

/// One run's inputs, on the host, in f64.
#[derive(Debug, Clone)]
pub struct PixelJob {
    pub switches: Switches,
    pub params: Vec<f64>,
    pub counts: Vec<i32>,
    pub sources: Vec<f64>,
    pub orientations: Vec<f64>,
    pub scales: Vec<f64>,
    pub hkl: Vec<f64>,
    pub mask: Vec<f64>,
    pub shots: usize,
    /// Statistics blocks per shot.
    pub blocks_per_shot: usize,
}

impl PixelJob {
    /// The job for `exp` with the orientations and fluences of `scene` (one shot, or a batch of
    /// shots that differ only in those: [`Scene::batch`]).
    pub fn new(exp: &Experiment, scene: &Scene) -> Self {
        let grid = exp.structure_factors.grid.as_ref().filter(|g| g.entries > 0);
        let interpolate = exp.structure_factors.interpolate && grid.is_some();
        let roi = exp.active_pixels().rect();
        let blocks_per_shot = roi.len().div_ceil(STAT_BLOCK).max(1);
        let mask = exp.rendered_positions();
        let per_shot = scene.orientations / scene.shots;
        let mut switches = Switches {
            square: exp.shape == CrystalShape::Square,
            round: exp.shape == CrystalShape::Round,
            gauss: exp.shape == CrystalShape::Gauss,
            nearest: grid.is_some() && !interpolate,
            tricubic: interpolate,
            polar: !exp.nopolar,
            dmin: exp.dmin > 0.0,
            water: exp.water_size != 0.0,
            curved: exp.detector.curved,
            point_pixel: exp.detector.point_pixel,
            sensor: exp.sensor.thickness > 0.0,
            oversample_thick: exp.oversample_thick,
            oversample_polar: exp.oversample_polar,
            oversample_omega: exp.oversample_omega,
            masked: mask.is_some(),
            orientation_batch: orientation_batch(per_shot),
            rows_reversed: false,
            one_batch: per_shot <= at::ORIENTATION_BATCH,
            rows_in_registers: false,
            image_rows: 1,
        };
        switches.rows_reversed = switches.products() && per_shot > at::ORIENTATION_BATCH;
        switches.rows_in_registers = switches.one_batch && scene.shots == 1 && scene.sources == 1;
        // without the products the adjoint kernels' launch chooses ([`Switches::vjp_rows`]):
        // asking wgpu for its adapter here would probe it for every CPU render
        if !switches.products() {
            switches.image_rows = 0;
        }
        let mut counts = vec![0i32; at::COUNTS];
        let d = &exp.detector;
        let int = |v: usize| i32::try_from(v).expect("image sizes fit in i32");
        counts[at::FPIXELS] = int(d.fpixels);
        counts[at::SPIXELS] = int(d.spixels);
        counts[at::ROW0] = int(roi.rows.start);
        counts[at::ROW1] = int(roi.rows.end);
        counts[at::COL0] = int(roi.cols.start);
        counts[at::COL1] = int(roi.cols.end);
        counts[at::OVERSAMPLE] = int(exp.oversample);
        counts[at::LAYERS] = int(exp.sensor.layers);
        counts[at::SOURCES] = int(scene.sources);
        counts[at::PER_SHOT] = int(scene.orientations / scene.shots);
        if let Some(g) = grid {
            let c = g.counts();
            counts[at::HKL_MIN..at::HKL_MIN + 3].copy_from_slice(&[g.h_min, g.k_min, g.l_min]);
            counts[at::HKL_COUNT..at::HKL_COUNT + 3].copy_from_slice(&c.map(int));
        }
        counts[at::SWITCH_PIXEL] = i32::MAX;
        counts[at::STAT_BLOCK] = int(STAT_BLOCK);
        counts[at::STAT_BLOCKS] = int(blocks_per_shot);
        Self {
            switches,
            params: params(exp, scene),
            counts,
            sources: sources(scene),
            orientations: orientations(scene),
            // r_e²·fluence/steps (f32 holds the product, not r_e² and the fluence alone)
            scales: scene.fluence.iter().map(|f| R_E_SQR * f / exp.steps as f64).collect(),
            hkl: grid.map_or(vec![0.0], |g| g.values.clone()),
            mask: mask.unwrap_or_else(|| vec![1.0]),
            shots: scene.shots,
            blocks_per_shot,
        }
    }

    /// The job at the values of a differentiable scene `st` (whose constants are those of
    /// `host`, [`Scene::new`] of `exp`): every [`SceneTensors::variables`] field is read back by
    /// name, so parameters moved away from the configuration's values render as they are.
    pub fn of_scene_tensors<B: Backend>(exp: &Experiment, host: &Scene, st: &SceneTensors<B>) -> Result<Self> {
        let read = |t: &Tensor<B, 2>| to_host(t.clone());
        let mut scene = host.clone();
        scene.coef = read(&st.coef)?;
        scene.offset = read(&st.offset)?;
        scene.inv_lambda = read(&st.inv_lambda)?;
        scene.basis = read(&st.basis)?;
        scene.pix0 = read(&st.pix0)?;
        scene.fluence = read(&st.fluence)?;
        if let Some(l) = &st.lattice {
            let (n, recip) = (read(&l.n)?, read(&l.recip)?);
            scene.lattice.n = [n[0], n[1], n[2]];
            scene.lattice.recip = [0, 1, 2].map(|v| [recip[3 * v], recip[3 * v + 1], recip[3 * v + 2]]);
        }
        let mut job = Self::new(exp, &scene);
        let mut set = |at: usize, v: f64| job.params[at] = v;
        set(at::CLOSE_DISTANCE, read(&st.close_distance)?[0]);
        set(at::DISTANCE, read(&st.distance)?[0]);
        if let Some(k) = &st.kahn {
            set(at::KAHN, read(k)?[0]);
        }
        let default_f = st.hkl.as_ref().and_then(|h| h.default_f_tensor.as_ref());
        if let Some(f) = default_f.or(st.default_f.as_ref()) {
            set(at::DEFAULT_F, read(f)?[0]);
        }
        if let Some(i_bg) = &st.i_bg {
            let i_bg = read(i_bg)?[0];
            set(at::I_BG, i_bg);
            // a water size moved away from 0 adds the background the configuration had not
            job.switches.water |= i_bg != 0.0;
        }
        if let Some(h) = &st.hkl {
            job.hkl = to_host(h.values.clone())?;
        }
        Ok(job)
    }

    /// Pixels after image index `pixel` use nearest-neighbour structure factors (C's tricubic
    /// fall-back, found by a first pass).
    pub fn switch_to_nearest_after(&mut self, pixel: i32) {
        self.counts[at::SWITCH_PIXEL] = pixel;
    }

    /// The image index after which pixels use nearest-neighbour structure factors (`i32::MAX`:
    /// none, or not yet found by a render).
    pub fn switch_pixel(&self) -> i32 {
        self.counts[at::SWITCH_PIXEL]
    }

    /// The bytes its arrays hold (the structure-factor grid and the mask most of them).
    pub fn bytes(&self) -> usize {
        let floats = [
            &self.params,
            &self.sources,
            &self.orientations,
            &self.scales,
            &self.hkl,
            &self.mask,
        ];
        floats.iter().map(|v| v.len() * 8).sum::<usize>() + self.counts.len() * 4
    }
}

/// The scalar parameters, `[PARAMS]`.
fn params(exp: &Experiment, scene: &Scene) -> Vec<f64> {
    let d = &exp.detector;
    let mut p = vec![0.0f64; at::PARAMS];
    let mut put = |at: usize, v: &[f64]| p[at..at + v.len()].copy_from_slice(v);
    // the scene's detector frame: rows f, s, o, and pix0
    put(at::PIX0, &scene.pix0);
    put(at::FDET, &scene.basis[0..3]);
    put(at::SDET, &scene.basis[3..6]);
    put(at::ODET, &scene.basis[6..9]);
    put(at::SUBPIXEL, &[d.pixel_size / exp.oversample as f64]);
    put(at::LAYER_STEP, &[exp.sensor.step]);
    put(at::CLOSE_DISTANCE, &[d.close_distance]);
    put(at::PIXEL_AREA, &[d.pixel_size * d.pixel_size]);
    put(at::BEAM, &d.beam);
    put(at::DISTANCE, &[d.distance]);
    put(at::STEP_MU, &[exp.sensor.step * exp.sensor.mu]);
    put(at::STOL_MAX, &[if exp.dmin > 0.0 { 0.5 / exp.dmin } else { 0.0 }]);
    put(at::KAHN, &[exp.polarization]);
    put(at::DEFAULT_F, &[exp.structure_factors.default_f]);
    put(at::I_BG, &[exp.i_bg]);
    put(at::N_CELLS, &scene.lattice.n);
    put(at::FUDGE, &[scene.lattice.fudge]);
    put(at::RECIP, &scene.lattice.recip.concat());
    p
}

/// `[S, 10]`: incident direction, 1/λ, E_in, B_in of each source.
fn sources(scene: &Scene) -> Vec<f64> {
    let s = scene.sources;
    let column = |t: &[f64], si: usize| [t[si], t[s + si], t[2 * s + si]];
    (0..s)
        .flat_map(|si| {
            let mut row = Vec::with_capacity(at::SOURCE_WIDTH);
            row.extend(column(&scene.incident_t, si));
            row.push(scene.inv_lambda[si]);
            row.extend(column(&scene.e_in_t, si));
            row.extend(column(&scene.b_in_t, si));
            row
        })
        .collect()
}

/// `[C, 12]`: a/λ, b/λ, c/λ (from the scene's `[3, 3C]` columns), then a·i/λ, b·i/λ, c·i/λ.
fn orientations(scene: &Scene) -> Vec<f64> {
    let c = scene.orientations;
    (0..c)
        .flat_map(|ci| {
            let coef = (0..3).flat_map(move |v| (0..3).map(move |axis| scene.coef[axis * 3 * c + v * c + ci]));
            let offset = (0..3).map(move |v| scene.offset[v * c + ci]);
            coef.chain(offset)
        })
        .collect()
}

/// The configuration's switches, each a compile-time constant of the kernel: every
/// configuration compiles a kernel without the branches it does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Switches {
    /// Crystal shape: SQUARE (sincg), ROUND (sinc3), GAUSS, else TOPHAT.
    pub square: bool,
    pub round: bool,
    pub gauss: bool,
    /// Structure factors: a grid looked up by nearest neighbour, or interpolated (tricubic,
    /// with C's fall-back); neither: default_F everywhere.
    pub nearest: bool,
    pub tricubic: bool,
    /// Polarization factor computed (not `-nopolar`).
    pub polar: bool,
    pub dmin: bool,
    pub water: bool,
    pub curved: bool,
    pub point_pixel: bool,
    /// A sensor of non-zero thickness (capture fraction computed).
    pub sensor: bool,
    pub oversample_thick: bool,
    pub oversample_polar: bool,
    pub oversample_omega: bool,
    /// A mask: `mask` holds 1 (rendered) or 0 per ROI position.
    pub masked: bool,
    /// Orientation rows the adjoint kernels accumulate between two workgroup reductions
    /// ([`orientation_batch`]).
    pub orientation_batch: usize,
    /// The `-oversample_*` products over more orientation rows a shot than one batch: the
    /// adjoint kernels take the rows' adjoints in a second sweep, C's order backwards.
    pub rows_reversed: bool,
    /// A shot's orientation rows fit one batch.
    pub one_batch: bool,
    /// One shot, one source, and its orientation rows fit one batch: the kernels copy the
    /// source's row and the batch into each thread's registers before any branch, at
    /// constant offsets, which a SIMD driver such as llvmpipe loads once for all lanes (it
    /// loads lane by lane at any other offset or inside a branch). The batch is then the
    /// whole table.
    pub rows_in_registers: bool,
    /// Image rows each invocation of the vector–Jacobian kernel takes (one after another, into
    /// the same accumulators): 1 with the `-oversample_*` products; without them 0 as packed,
    /// meaning [`vjp_image_rows`], chosen when the adjoint kernels launch
    /// ([`Switches::vjp_rows`]). More rows a thread, fewer workgroup sums a pixel.
    pub image_rows: usize,
}

impl Switches {
    /// These switches as the adjoint kernels launch with them: an `image_rows` left to the
    /// launch (0) becomes [`vjp_image_rows`].
    pub fn vjp_rows(mut self) -> Self {
        if self.image_rows == 0 {
            self.image_rows = vjp_image_rows();
        }
        self
    }

    /// Whether the `-oversample_*` products apply: a factor per term instead of per pixel.
    pub fn products(&self) -> bool {
        self.oversample_thick || self.oversample_polar || self.oversample_omega
    }
}

/// Image rows an invocation of the vector–Jacobian kernel takes without the `-oversample_*`
/// products: [`at::VJP_IMAGE_ROWS_CPU`] where burn-wgpu's adapter is a CPU, else
/// [`at::VJP_IMAGE_ROWS`].
fn vjp_image_rows() -> usize {
    if crate::base::gpu::wgpu_adapter_is_cpu() {
        at::VJP_IMAGE_ROWS_CPU
    } else {
        at::VJP_IMAGE_ROWS
    }
}

/// Orientation rows per batch of the adjoint kernels for `per_shot` rows a shot: at most
/// [`at::ORIENTATION_BATCH`], each 12 registers a thread; fewer rows, fewer batches' barriers.
pub fn orientation_batch(per_shot: usize) -> usize {
    per_shot.clamp(1, at::ORIENTATION_BATCH)
}

/// An image read back to the host: as `-floatfile` writes it (f32, with C's statistics where
/// the kernel reduced them) and its photons in the precision it was rendered in
/// `[spixels·fpixels]`.
#[derive(Debug, Clone)]
pub struct HostImage {
    pub image: Image,
    pub photons: Vec<f64>,
}

/// An image `[spixels, fpixels]` (photons) rendered by the kernel, on the device, and the
/// pixel after which its render switched to nearest neighbour ([`PixelJob::switch_pixel`]).
pub type KernelImage<B> = (Tensor<B, 2>, i32);

/// The vector–Jacobian product of one job: Σ_p w_p·∂I_p/∂z `[G_GLOBALS + 12·C]` and, where
/// asked for, the structure-factor grid's Σ_p w_p·∂I_p/∂F_node `[nodes]`.
#[derive(Debug, Clone)]
pub struct JobSums {
    pub sums: Vec<f64>,
    pub grid: Option<Vec<f64>>,
}
