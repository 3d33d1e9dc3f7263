//! One chunk of pixels through the physics stages: detector samples, source factors, the
//! sums over orientations, the per-pixel factors, as tensors on any backend.

use crate::experiment::{Experiment, Span, R_E_SQR};
use crate::physics::detector::{
    capture_fraction_at, curved_positions, diffracted_directions, pixel_positions, sample_coordinates, solid_angle,
};
use crate::physics::lattice::lattice_factor;
use crate::physics::polarization::{kahn_factor, kahn_factor_tensor};
use crate::physics::scattering::{cos_two_theta, miller_indices, stol};
use crate::physics::structure_factor::{nearest, tricubic, tricubic_out_of_range};
use crate::physics::vectors::SampleVectors;
use crate::physics::{rows_for_autodiff, scale_column};
use crate::scene::probe::{probe_outer, probe_term, probed_scene, Probe};
use crate::scene::{block_columns, Scene, SceneTensors};
use burn::tensor::{backend::Backend, Bool, ElementConversion, Int, Tensor, TensorData};

/// `[R, S]` → `[R, n]` by picking, for each orientation `lo..hi`, its source's column.
fn per_orientation<B: Backend>(
    t: &Tensor<B, 2>,
    scene: &Scene,
    lo: usize,
    hi: usize,
    device: &B::Device,
) -> Tensor<B, 2> {
    if scene.sources == 1 {
        let r = t.dims()[0];
        return t.clone().expand([r, hi - lo]);
    }
    let idx: Vec<i64> = scene.source_of[lo..hi].iter().map(|&s| s as i64).collect();
    let idx = Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [hi - lo]), device);
    t.clone().select(1, idx)
}

pub(crate) fn scalar<B: Backend, const D: usize>(t: Tensor<B, D>) -> f64 {
    t.sum().into_scalar().elem::<f64>()
}

/// A chunk's pixel values as a tensor (still in the graph), with its bookkeeping.
pub struct ChunkIntensity<B: Backend> {
    /// `[P, shots]` photons per ROI position of the span (0 where masked), a column per shot
    /// of the scene (one for a single image).
    pub intensity: Tensor<B, 2>,
    /// `[1]` Σω over the span's rendered samples, as C accumulates it (sr).
    pub omega_sum: Tensor<B, 1>,
    /// Tricubic interpolation met an out-of-range point (later spans must use nearest).
    pub out_of_range: bool,
}

/// The pixel values of a span of the ROI as a tensor `[P, shots]`, composed from the stages.
pub fn chunk_intensity<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    st: &SceneTensors<B>,
    span: Span,
    tri: bool,
    block: usize,
    device: &B::Device,
) -> ChunkIntensity<B> {
    chunk_intensity_probed(exp, scene, st, span, tri, block, device, None)
}

/// A derivative probe and its ε per sample row `[R, n]` (a pixel's samples share its ε).
type Probing<'a, B> = Option<(&'a Probe<B>, &'a Tensor<B, 2>)>;

/// [`chunk_intensity`] with optional derivative probes (see [`crate::gradients::derivative`]): the scene
/// values pixel p uses are moved by ε_p·t along the probe's tangents, so that the gradient of
/// Σ I with respect to ε is the per-pixel derivative.
///
/// The steps, in C's order: the span's samples and which are rendered; the detector at each
/// sample (direction, solid angle, capture fraction); what depends on the source (cos 2θ, the
/// resolution cut, polarization); the Bragg terms summed over orientations; the per-pixel
/// factors and Σω.
#[allow(clippy::too_many_arguments)]
pub fn chunk_intensity_probed<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    st: &SceneTensors<B>,
    span: Span,
    tri: bool,
    block: usize,
    device: &B::Device,
    probe: Option<&Probe<B>>,
) -> ChunkIntensity<B> {
    let rpp = exp.sensor.layers * exp.oversample * exp.oversample;
    let (p, r) = (span.len, span.len * rpp);
    let (coords, layer) = sample_coordinates::<B>(&exp.sample_grid(), span.start, p, device);
    let rendered = RenderedSamples::of_span(st, span, rpp);
    let eps_row = probe.map(|pr| epsilon_rows(pr, p, rpp));
    let probed;
    let st = match (probe, &eps_row) {
        (Some(pr), Some(e)) => {
            probed = probed_scene(st, pr, e);
            &probed
        }
        _ => st,
    };
    let probing: Probing<'_, B> = probe.zip(eps_row.as_ref());
    let samples = detector_samples(exp, st, coords, layer, probing);
    let sources = source_factors(exp, st, &samples.dir, r);
    let sums = orientation_sums(
        exp, scene, st, &samples, &sources, tri, block, &rendered, probing, device,
    );
    debug_assert!(
        scene.shots == 1 || !(sums.weighted.is_some() || tri || probe.is_some()),
        "a batch of shots takes the plain path"
    );
    let (intensity, omega_sum) = pixel_intensity(
        exp,
        scene,
        st,
        &samples,
        &sources,
        sums.bragg,
        sums.weighted,
        &rendered,
        p,
    );
    ChunkIntensity {
        intensity,
        omega_sum,
        out_of_range: sums.out_of_range,
    }
}

/// Which positions of a span are rendered: 1, or 0 where masked, per position `[P, 1]` and per
/// sample row `[R, 1]`; `None` without a mask.
struct RenderedSamples<B: Backend> {
    pixels: Option<Tensor<B, 2>>,
    rows: Option<Tensor<B, 2>>,
}

impl<B: Backend> RenderedSamples<B> {
    fn of_span(st: &SceneTensors<B>, span: Span, rpp: usize) -> Self {
        let p = span.len;
        let pixels = st
            .rendered
            .as_ref()
            .map(|m| m.clone().narrow(0, span.start, p).reshape([p, 1]));
        let rows = pixels.as_ref().map(|m| match rpp {
            1 => m.clone(),
            _ => m.clone().expand([p, rpp]).reshape([p * rpp, 1]),
        });
        Self { pixels, rows }
    }
}

/// ε of each pixel `[P, n]` repeated for its `rpp` samples: `[R, n]`.
fn epsilon_rows<B: Backend>(probe: &Probe<B>, p: usize, rpp: usize) -> Tensor<B, 2> {
    let n = probe.epsilon.dims()[1];
    probe
        .epsilon
        .clone()
        .unsqueeze_dim::<3>(1)
        .expand([p, rpp, n])
        .reshape([p * rpp, n])
}

/// The detector at each sample `[R, ·]`: unit diffracted direction, solid angle (sr) and,
/// with a sensor, the capture fraction of its layer.
struct DetectorSamples<B: Backend> {
    dir: SampleVectors<B>,
    omega: Tensor<B, 2>,
    capture: Option<Tensor<B, 2>>,
}

/// Lab positions of the samples (planar or curved, moved by the probes), then
/// [`DetectorSamples`].
fn detector_samples<B: Backend>(
    exp: &Experiment,
    st: &SceneTensors<B>,
    coords: SampleVectors<B>,
    layer: Tensor<B, 2>,
    probing: Probing<'_, B>,
) -> DetectorSamples<B> {
    let det = &exp.detector;
    let mut pos = pixel_positions(coords.clone(), st.basis.clone(), st.pix0.clone());
    if let Some((pr, e)) = probing {
        let t = &pr.tangents;
        let moved = probe_outer(e, &coords.rows()).matmul(t.basis.clone()) + probe_term(e, &t.pix0);
        pos = SampleVectors::Rows(pos.rows() + moved);
    }
    if det.curved {
        pos = SampleVectors::Rows(curved_positions(
            pos.rows(),
            st.beam.clone(),
            st.fdet.clone(),
            st.sdet.clone(),
            st.distance.clone(),
        ));
    }
    let (dir, airpath) = diffracted_directions(pos);
    let omega = solid_angle(airpath, det.pixel_size, st.close_distance.clone(), det.point_pixel);
    // without a sensor the capture fraction is 1
    let capture = (exp.sensor.thickness > 0.0).then(|| {
        let mut parallax = dir.dot(st.odet_col.clone());
        if let Some((pr, e)) = probing {
            parallax = parallax + probe_outer(e, &dir.rows()).matmul(pr.tangents.odet.clone());
        }
        capture_fraction_at(parallax, layer, exp.sensor.step, exp.sensor.mu)
    });
    DetectorSamples { dir, omega, capture }
}

/// What depends on the sample and the source, `[R, S]`: cos 2θ, the resolution cut (1 kept,
/// 0 cut; `None` without `-dmin`) and the polarization factor (`None` with `-nopolar`).
struct SourceFactors<B: Backend> {
    keep: Option<Tensor<B, 2>>,
    polar: Option<Tensor<B, 2>>,
}

fn source_factors<B: Backend>(
    exp: &Experiment,
    st: &SceneTensors<B>,
    dir: &SampleVectors<B>,
    r: usize,
) -> SourceFactors<B> {
    let cos2t = cos_two_theta(dir.clone(), st.incident_t.clone());
    let keep = (exp.dmin > 0.0).then(|| {
        stol(cos2t.clone(), st.inv_lambda.clone())
            .lower_equal_elem(0.5 / exp.dmin)
            .float()
    });
    let polar = (!exp.nopolar).then(|| {
        if let Some(k) = &st.kahn {
            let e = dir.dot(st.e_in_t.clone());
            let b = dir.dot(st.b_in_t.clone());
            return kahn_factor_tensor(cos2t.clone(), e, b, rows_for_autodiff(k.clone(), r));
        }
        // the E/B projections only matter for a polarized beam (K ≠ 0)
        let (e, b) = if exp.polarization != 0.0 {
            (dir.dot(st.e_in_t.clone()), dir.dot(st.b_in_t.clone()))
        } else {
            (cos2t.clone(), cos2t.clone())
        };
        kahn_factor(cos2t.clone(), e, b, exp.polarization)
    });
    SourceFactors { keep, polar }
}

/// The Bragg terms summed over orientations: `bragg` `[R, shots]` (`None`: no orientation), or
/// with an `-oversample_*` flag the terms and the factors C multiplies its running sum by
/// (`weighted`, `[R, C]` each); whether tricubic interpolation left the grid.
struct OrientationSums<B: Backend> {
    bragg: Option<Tensor<B, 2>>,
    weighted: Option<(Tensor<B, 2>, Tensor<B, 2>)>,
    out_of_range: bool,
}

/// F_latt²·F_cell² over the orientations, block by block (a block holds whole shots, or a
/// part of one shot, never parts of two).
#[allow(clippy::too_many_arguments)]
fn orientation_sums<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    st: &SceneTensors<B>,
    samples: &DetectorSamples<B>,
    sources: &SourceFactors<B>,
    tri: bool,
    block: usize,
    rendered: &RenderedSamples<B>,
    probing: Probing<'_, B>,
    device: &B::Device,
) -> OrientationSums<B> {
    let dir = &samples.dir;
    let r = samples.omega.dims()[0];
    let flags = exp.oversample_thick || exp.oversample_polar || exp.oversample_omega;
    let water = exp.water_size != 0.0;
    let c = scene.orientations;
    let per_shot = c / scene.shots;
    // Σ over each shot's orientations, `[R, k]` per block of k whole shots (or `[R, 1]` for a
    // shot in several blocks, added up in `partial`)
    let mut columns: Vec<Tensor<B, 2>> = Vec::new();
    let mut partial: Option<Tensor<B, 2>> = None;
    let mut weighted = None;
    let mut out_of_range = false;
    let mut lo = 0;
    while lo < c {
        let hi = if block >= per_shot {
            lo + (block / per_shot) * per_shot
        } else {
            (lo + block).min((lo / per_shot + 1) * per_shot)
        }
        .min(c);
        let hkl = block_miller_indices(st, dir, lo, hi, r, probing);
        let f_latt = lattice_factor(&hkl, &scene.lattice, st.lattice.as_ref());
        // which terms C evaluates: survived dmin and (F_latt ≠ 0 or water)
        let mut valid: Option<Tensor<B, 2>> = sources.keep.as_ref().map(|k| per_orientation(k, scene, lo, hi, device));
        if !water && (flags || tri) {
            let nz = f_latt.clone().not_equal_elem(0.0).float();
            valid = Some(match valid {
                Some(v) => v * nz,
                None => nz,
            });
        }
        let (f_cell, fell_back) = cell_factors(st, &hkl, tri, valid.as_ref(), rendered, device);
        out_of_range |= fell_back;
        let mut term = f_latt.powi_scalar(2);
        term = match (f_cell, &st.default_f) {
            (Some(f), _) => term * f.powi_scalar(2),
            (None, Some(f)) => term * rows_for_autodiff(f.clone().powi_scalar(2), r),
            (None, None) => term * exp.structure_factors.default_f.powi(2),
        };
        if let Some(v) = &valid {
            term = term * v.clone();
        }
        if flags {
            weighted = Some((
                term.clone(),
                running_factors(exp, samples, sources, &term, valid.as_ref(), scene, lo, hi, device),
            ));
        } else if hi - lo >= per_shot {
            // whole shots: one column each
            let k = (hi - lo) / per_shot;
            columns.push(match (per_shot, k) {
                (1, _) => term,
                (_, 1) => term.sum_dim(1),
                _ => term.reshape([r, k, per_shot]).sum_dim(2).reshape([r, k]),
            });
        } else {
            let sum = if term.dims()[1] == 1 { term } else { term.sum_dim(1) };
            let sum = match partial.take() {
                Some(b) => b + sum,
                None => sum,
            };
            if hi % per_shot == 0 {
                columns.push(sum);
            } else {
                partial = Some(sum);
            }
        }
        lo = hi;
    }
    let bragg = match columns.len() {
        0 => None,
        1 => columns.pop(),
        _ => Some(Tensor::cat(columns, 1)),
    };
    OrientationSums {
        bragg,
        weighted,
        out_of_range,
    }
}

/// Fractional Miller indices `[R, hi − lo]` ×3 of orientations `lo..hi`, moved by the probes.
fn block_miller_indices<B: Backend>(
    st: &SceneTensors<B>,
    dir: &SampleVectors<B>,
    lo: usize,
    hi: usize,
    r: usize,
    probing: Probing<'_, B>,
) -> [Tensor<B, 2>; 3] {
    let (coef, offset) = st.block(lo, hi);
    let hkl = miller_indices(dir.clone(), coef, offset);
    let Some((pr, e)) = probing else { return hkl };
    let t = &pr.tangents;
    let (tc, to) = (block_columns(&t.coef, lo, hi), block_columns(&t.offset, lo, hi));
    let d = probe_outer(e, &dir.rows()).matmul(tc) - probe_term(e, &to); // [R, 3·(hi − lo)]
    let nb = hi - lo;
    let mut hkl = hkl.into_iter();
    [0, 1, 2].map(|v| hkl.next().expect("three indices") + d.clone().slice([0..r, v * nb..(v + 1) * nb]))
}

/// F_cell `[R, n]` of a block from the HKL grid (`None`: default_F everywhere): nearest
/// neighbour, or tricubic until the first valid, rendered, out-of-range term in C's loop order
/// and nearest from there on (then `true`).
fn cell_factors<B: Backend>(
    st: &SceneTensors<B>,
    hkl: &[Tensor<B, 2>; 3],
    tri: bool,
    valid: Option<&Tensor<B, 2>>,
    rendered: &RenderedSamples<B>,
    device: &B::Device,
) -> (Option<Tensor<B, 2>>, bool) {
    let grid = match &st.hkl {
        None => return (None, false),
        Some(grid) if !tri => return (Some(nearest(hkl, grid)), false),
        Some(grid) => grid,
    };
    let mut cand: Tensor<B, 2, Bool> = tricubic_out_of_range(hkl, grid);
    if let Some(v) = valid {
        cand = cand.bool_and(v.clone().greater_elem(0.0));
    }
    // masked pixels are not rendered at all
    if let Some(m) = &rendered.rows {
        cand = (cand.float() * m.clone()).greater_elem(0.0);
    }
    let interpolated = tricubic(hkl, grid);
    if scalar(cand.clone().float()) == 0.0 {
        return (Some(interpolated), false);
    }
    // C switches to nearest neighbour from the first such term on, in loop order
    let [rr, cc] = cand.dims();
    let order = Tensor::<B, 1, Int>::arange(0..(rr * cc) as i64, device).reshape([rr, cc]);
    let first = order
        .clone()
        .mask_fill(cand.bool_not(), (rr * cc) as i64)
        .min()
        .into_scalar()
        .elem::<i64>();
    let before = order.lower_elem(first);
    (Some(nearest(hkl, grid).mask_where(before, interpolated)), true)
}

/// The factors C multiplies its running sum by after each term with an `-oversample_*` flag
/// `[R, hi − lo]`: capture, polarization, ω as the flags ask; 1 for skipped terms.
#[allow(clippy::too_many_arguments)]
fn running_factors<B: Backend>(
    exp: &Experiment,
    samples: &DetectorSamples<B>,
    sources: &SourceFactors<B>,
    term: &Tensor<B, 2>,
    valid: Option<&Tensor<B, 2>>,
    scene: &Scene,
    lo: usize,
    hi: usize,
    device: &B::Device,
) -> Tensor<B, 2> {
    let mut factor = term.ones_like();
    if let (true, Some(cap)) = (exp.oversample_thick, &samples.capture) {
        factor = factor * cap.clone();
    }
    if exp.oversample_polar {
        if let Some(pol) = &sources.polar {
            factor = factor * per_orientation(pol, scene, lo, hi, device);
        }
    }
    if exp.oversample_omega {
        factor = factor * samples.omega.clone();
    }
    match valid {
        Some(v) => factor * v.clone() - v.clone() + 1.0,
        None => factor,
    }
}

/// The per-pixel reductions `[P, shots]`: the Bragg sum over a pixel's samples (or C's running
/// products), the water background, r_e²·fluence/steps, and the capture, polarization and ω
/// factors C applies once per pixel; masked pixels 0. With Σω `[1]` as C accumulates it (sr).
#[allow(clippy::too_many_arguments)]
fn pixel_intensity<B: Backend>(
    exp: &Experiment,
    scene: &Scene,
    st: &SceneTensors<B>,
    samples: &DetectorSamples<B>,
    sources: &SourceFactors<B>,
    bragg: Option<Tensor<B, 2>>,
    weighted: Option<(Tensor<B, 2>, Tensor<B, 2>)>,
    rendered: &RenderedSamples<B>,
    p: usize,
) -> (Tensor<B, 2>, Tensor<B, 1>) {
    let os = exp.oversample;
    let rpp = exp.sensor.layers * os * os;
    let r = p * rpp;
    let shots = scene.shots;
    let omega = &samples.omega;
    // (a reshape or slice copies on burn-ndarray: skipped when there is one sample per pixel)
    let first_of = |t: &Tensor<B, 2>, col: usize| {
        if rpp == 1 {
            t.clone()
        } else {
            t.clone().reshape([p, rpp]).slice([0..p, col..col + 1])
        }
    };
    let omega_first = first_of(omega, 0);
    let polar_first = first_polarization(sources, omega_first.clone(), scene.sources, p, rpp);
    let mut intensity = match weighted {
        None => {
            let bragg = bragg.unwrap_or_else(|| omega.zeros_like().expand([r, shots]));
            let per_pixel = match (rpp, shots) {
                (1, _) => bragg,
                (_, 1) => bragg.reshape([p, rpp]).sum_dim(1),
                // each shot's samples summed as a contiguous row, as for a single shot
                _ => bragg
                    .swap_dims(0, 1)
                    .reshape([shots * p, rpp])
                    .sum_dim(1)
                    .reshape([shots, p])
                    .swap_dims(0, 1),
            };
            match &st.i_bg {
                Some(i_bg) => per_pixel + rows_for_autodiff(i_bg.clone(), p),
                None if exp.i_bg != 0.0 => per_pixel + exp.i_bg,
                None => per_pixel,
            }
        }
        Some((term, factor)) => {
            let c = scene.orientations;
            let term = term.reshape([p, rpp * c]);
            let suffix = factor.reshape([p, rpp * c]).flip([1]).cumprod(1).flip([1]);
            let all = suffix.clone().slice([0..p, 0..1]);
            // skipped terms are 0 even where the running product overflowed (0·∞)
            let skipped = term.clone().equal_elem(0.0);
            let bragg = (term * suffix).mask_fill(skipped, 0.0).sum_dim(1);
            match &st.i_bg {
                Some(i_bg) => bragg + all * rows_for_autodiff(i_bg.clone(), p),
                // without water no background term: an overflowed product times 0 would be NaN
                // where C's running sum is +∞
                None if exp.i_bg != 0.0 => bragg + all * exp.i_bg,
                None => bragg,
            }
        }
    };
    // r_e²·fluence first: the two alone would overflow f32
    intensity = scale_column(intensity, st.fluence.clone() * (R_E_SQR / exp.steps as f64));
    if let (false, Some(cap)) = (exp.oversample_thick, &samples.capture) {
        intensity = intensity * first_of(cap, (exp.sensor.layers - 1) * os * os);
    }
    if !exp.oversample_polar {
        intensity = intensity * polar_first;
    }
    if !exp.oversample_omega {
        intensity = intensity * omega_first.clone();
    }
    // masked pixels: 0, and no part in Σω (C skips them)
    let off = rendered.pixels.as_ref().map(|m| m.clone().equal_elem(0.0));
    if let Some(off) = &off {
        intensity = intensity.mask_fill(off.clone().expand([p, shots]), 0.0);
    }
    let omega_sum = if exp.oversample_omega {
        match &rendered.rows {
            Some(m) => omega.clone().mask_fill(m.clone().equal_elem(0.0), 0.0).sum(),
            None => omega.clone().sum(),
        }
    } else {
        match &off {
            Some(off) => omega_first.mask_fill(off.clone(), 0.0).sum(),
            None => omega_first.sum(),
        }
        .mul_scalar(rpp as f64)
    };
    (intensity, omega_sum)
}

/// The polarization C applies once per pixel `[P, 1]`: that of the pixel's first (sample,
/// source) surviving the resolution cut (0 if none does); 1 with `-nopolar`.
fn first_polarization<B: Backend>(
    sources: &SourceFactors<B>,
    ones_like: Tensor<B, 2>,
    s: usize,
    p: usize,
    rpp: usize,
) -> Tensor<B, 2> {
    let Some(pol) = &sources.polar else {
        return ones_like.ones_like();
    };
    let pol = if rpp * s == 1 {
        pol.clone()
    } else {
        pol.clone().reshape([p, rpp * s])
    };
    match &sources.keep {
        // nothing culled: the pixel's first sample and first source
        None if rpp * s == 1 => pol,
        None => pol.slice([0..p, 0..1]),
        // the first (sample, source) that survives the dmin cut
        Some(k) => {
            let alive = k.clone().reshape([p, rpp * s]);
            let first = alive.clone() * alive.cumsum(1).equal_elem(1.0).float();
            (pol * first).sum_dim(1)
        }
    }
}
