//! Where the kernel finds its inputs: indices into the flat arrays the host packs
//! ([`super::job::PixelJob`]) and the kernel reads. One list, used on both sides.

/// Invocations per workgroup, along the fast axis.
pub const WORKGROUP: usize = 64;

/// `params` (f32): lab vectors (m), lengths (m), factors.
pub const PIX0: usize = 0;
pub const FDET: usize = 3;
pub const SDET: usize = 6;
pub const ODET: usize = 9;
/// Sub-pixel size (m).
pub const SUBPIXEL: usize = 12;
/// Sensor layer thickness step Δz (m).
pub const LAYER_STEP: usize = 13;
/// Close distance (m).
pub const CLOSE_DISTANCE: usize = 14;
/// pixel² (m²).
pub const PIXEL_AREA: usize = 15;
/// Beam direction (unit) and the recomputed distance (m), for the curved detector.
pub const BEAM: usize = 16;
pub const DISTANCE: usize = 19;
/// Δz·μ (dimensionless).
pub const STEP_MU: usize = 20;
/// Largest sin θ/λ kept by `-dmin`: 0.5/dmin (m⁻¹).
pub const STOL_MAX: usize = 21;
/// Kahn polarization factor K.
pub const KAHN: usize = 22;
/// default_F (electrons).
pub const DEFAULT_F: usize = 23;
/// Water background I_bg (C's units), 0 without water.
pub const I_BG: usize = 24;
/// Na, Nb, Nc.
pub const N_CELLS: usize = 25;
pub const FUDGE: usize = 28;
/// a*, b*, c* back to back (Å⁻¹), for GAUSS and TOPHAT.
pub const RECIP: usize = 29;
/// The fixed-point scale 2^e of the structure-factor grid's gradient (the scatter kernel's
/// only: see [`super::scatter`]).
pub const GRID_SCALE: usize = 38;
pub const PARAMS: usize = 39;

/// `counts` (i32).
pub const FPIXELS: usize = 0;
pub const SPIXELS: usize = 1;
/// ROI rows `ROW0..ROW1` and columns `COL0..COL1` (end exclusive).
pub const ROW0: usize = 2;
pub const ROW1: usize = 3;
pub const COL0: usize = 4;
pub const COL1: usize = 5;
pub const OVERSAMPLE: usize = 6;
pub const LAYERS: usize = 7;
pub const SOURCES: usize = 8;
/// Orientations per shot (S·Φ·M).
pub const PER_SHOT: usize = 9;
/// Smallest h, k, l of the structure-factor grid and its extent along each.
pub const HKL_MIN: usize = 10;
pub const HKL_COUNT: usize = 13;
/// Image index after which every pixel uses nearest-neighbour structure factors (C's
/// tricubic fall-back); i32::MAX on a first pass.
pub const SWITCH_PIXEL: usize = 16;
/// ROI positions per statistics block, and blocks per shot.
pub const STAT_BLOCK: usize = 17;
pub const STAT_BLOCKS: usize = 18;
pub const COUNTS: usize = 19;

/// `sources` rows (f32): incident direction (unit), 1/λ (m⁻¹), E_in and B_in (unit).
pub const SOURCE_WIDTH: usize = 10;
pub const INCIDENT: usize = 0;
pub const INV_LAMBDA: usize = 3;
pub const E_IN: usize = 4;
pub const B_IN: usize = 7;

/// `orientations` rows (f32): a/λ, b/λ, c/λ (m·m⁻¹... as [`crate::scene::Scene::coef`]),
/// then a·i/λ, b·i/λ, c·i/λ.
pub const ORIENTATION_WIDTH: usize = 12;
pub const OFFSET: usize = 9;

/// `partials` rows (f32) of the statistics kernel: Σv, Σ(v − block mean)², max v, Σω.
pub const PARTIAL_WIDTH: usize = 4;

/// Slots of the vector–Jacobian kernel's accumulators (f32), Σ_p w_p·∂I_p/∂z for: the
/// detector frame as the sample positions read it (pix0, rows f, s, o), the sensor normal as
/// the parallax reads it (the scene's `odet_col`), close_distance, N, a*/b*/c*, K, default_F,
/// I_bg, the scale r_e²·fluence/steps (Σ w·I/scale), the curved detector's rotation axes f
/// and s and its distance, and Σ|∂L/∂F_node| over the structure-factor grid's parts (a bound
/// for the grid's fixed-point scatter, [`super::scatter`]); then, in each row's own columns,
/// the 12 numbers of every orientation row.
pub const G_PIX0: usize = 0;
pub const G_FDET: usize = 3;
pub const G_SDET: usize = 6;
pub const G_ODET: usize = 9;
pub const G_ODET_COL: usize = 12;
pub const G_CLOSE_DISTANCE: usize = 15;
pub const G_N_CELLS: usize = 16;
pub const G_RECIP: usize = 19;
pub const G_KAHN: usize = 28;
pub const G_DEFAULT_F: usize = 29;
pub const G_I_BG: usize = 30;
pub const G_SCALE: usize = 31;
pub const G_CURVED_FDET: usize = 32;
pub const G_CURVED_SDET: usize = 35;
pub const G_DISTANCE: usize = 38;
pub const G_GRID_BOUND: usize = 39;
/// The slots above.
pub const G_GLOBALS: usize = 40;
/// The most orientation rows a thread of the adjoint kernels accumulates between two
/// workgroup reductions (each reduction costs two barriers; each row 12 registers).
pub const ORIENTATION_BATCH: usize = 4;
/// Image rows an invocation of the vector–Jacobian kernel takes where it can (see
/// `Switches::image_rows`) on a GPU: the workgroup's sums and each orientation batch's loads
/// are shared by this many pixels a thread, and a 512² image still launches 64k invocations.
pub const VJP_IMAGE_ROWS: usize = 4;
/// [`VJP_IMAGE_ROWS`] on a CPU adapter (llvmpipe): its few cores run 8 lanes each, so fewer,
/// longer invocations lose no parallelism, and the per-invocation work (the registers' copies,
/// each batch's loads lane by lane, the sums through shared memory) is shared by 8× more pixels
/// (heavy 256² on llvmpipe, 2 cores: 167 → 139 ms).
pub const VJP_IMAGE_ROWS_CPU: usize = 32;
