//! Chunk planning: the ROI cut into spans of pixels and the orientation axis into blocks, so
//! a chunk's intermediates fit the memory budget and the workers stay balanced.

use super::options::RenderOptions;
use crate::experiment::resources::BYTES_PER_ELEMENT;
use crate::experiment::Experiment;
use crate::experiment::Spans;
use crate::physics::detector::MAX_SPAN;
use crate::scene::Scene;

/// Elements per `[samples, orientations]` intermediate aimed for (cache-sized).
const CACHE_ELEMENTS: usize = 1 << 15;
/// Chunk cap of forward+backward passes (see [`gradient_spans`]; measured in
/// docs/gradients.md).
const GRADIENT_ELEMENTS: usize = 1 << 17;
/// How chunks and orientation blocks are sized.
#[derive(Debug, Clone, Copy)]
struct Plan {
    pixels_per_chunk: usize,
    block: usize,
}

/// [`spans`] for forward+backward passes: the autodiff tape keeps every intermediate of a
/// chunk alive, so cache residency is lost anyway, and larger chunks spread the graph's
/// per-operation cost over more pixels (measured in docs/gradients.md).
pub(crate) fn gradient_spans(exp: &Experiment, scene: &Scene, opts: &RenderOptions) -> (Spans, usize) {
    let opts = RenderOptions {
        max_chunk_elements: Some(opts.max_chunk_elements.unwrap_or(GRADIENT_ELEMENTS)),
        ..opts.clone()
    };
    spans(exp, scene, &opts, 4)
}

/// Chunk plan for `active` ROI positions, with at least `per_thread` chunks per worker thread
/// when the image allows.
fn plan(exp: &Experiment, scene: &Scene, active: usize, opts: &RenderOptions, per_thread: usize) -> Plan {
    let rpp = exp.sensor.layers * exp.oversample * exp.oversample;
    let c = scene.orientations;
    let per_worker = (opts.memory_budget / opts.threads.max(1)).max(1 << 20);
    // small chunks keep the intermediates in cache and avoid allocator churn: measured fastest
    // around 2^15 elements per [samples, orientations] tensor (docs/performance.md)
    let cap = opts.max_chunk_elements.unwrap_or(CACHE_ELEMENTS).max(1);
    let elements = (per_worker / BYTES_PER_ELEMENT).min(cap);
    let sequential =
        exp.oversample_thick || exp.oversample_polar || exp.oversample_omega || exp.structure_factors.interpolate;
    let block = if sequential { c } else { c.min((elements / rpp).max(1)) };
    let width = block.max(scene.sources).max(4);
    let by_memory = (elements / (rpp * width)).max(1);
    // enough chunks to balance the workers and report progress
    let balance = active.div_ceil(per_thread * opts.threads.max(1)).max(64);
    Plan {
        pixels_per_chunk: by_memory.min(balance).max(1),
        block,
    }
}

/// The ROI cut into spans for [`drive`], and the orientation block (see [`plan`]).
pub(crate) fn spans(exp: &Experiment, scene: &Scene, opts: &RenderOptions, per_thread: usize) -> (Spans, usize) {
    shortened_spans(exp, scene, opts, per_thread, 1)
}

/// [`spans`] for derivative images with `wider`× more columns per intermediate: spans that
/// many times shorter.
pub(crate) fn derivative_spans(exp: &Experiment, scene: &Scene, opts: &RenderOptions, wider: usize) -> (Spans, usize) {
    shortened_spans(exp, scene, opts, 8, wider)
}

/// The planned spans, `shorter`× shorter (at least one position, at most [`MAX_SPAN`]).
fn shortened_spans(
    exp: &Experiment,
    scene: &Scene,
    opts: &RenderOptions,
    per_thread: usize,
    shorter: usize,
) -> (Spans, usize) {
    let active = exp.active_pixels();
    let p = plan(exp, scene, active.rect().len(), opts, per_thread);
    (
        active.spans((p.pixels_per_chunk / shorter.max(1)).clamp(1, MAX_SPAN)),
        p.block,
    )
}
