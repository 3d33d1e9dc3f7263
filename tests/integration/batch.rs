//! Batched rendering: shots that differ only in the crystal's orientation and the fluence
//! render in one graph (`Engine::render_batch`), and on the CPU f64 engine every image is
//! bit-identical to rendering its shot alone — the same operations in the same order, so a
//! shot's files never depend on which shots it was batched with.

use crate::common;
use common::setup;

use nanobragg::engine::{Engine, Precision};
use nanobragg::experiment::Experiment;
use nanobragg::render::{Image, RenderOptions};

const CPU: Engine = Engine::Cpu {
    precision: Precision::F64,
    fusion: true,
};

/// The experiments of `base` with each shot's flags appended.
fn shots(base: &str, each: &[&str]) -> Vec<Experiment> {
    each.iter().map(|s| setup(&format!("{base} {s}")).1).collect()
}

/// Renders `exps` one by one and as one batch with `opts`, and asserts that every image (its
/// pixels, Σω and statistics) is the same, bit for bit.
fn assert_batch_matches_singles(exps: &[Experiment], opts: &RenderOptions) {
    common::f64_device();
    for e in &exps[1..] {
        assert!(exps[0].batches_with(e), "the test's shots are meant to batch together");
    }
    let batch = CPU.render_batch(exps, opts).unwrap();
    assert_eq!(batch.len(), exps.len());
    let singles: Vec<Image> = exps.iter().map(|e| CPU.render(e, opts).unwrap()).collect();
    for (i, (b, s)) in batch.iter().zip(&singles).enumerate() {
        let differ = b
            .data
            .iter()
            .zip(&s.data)
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .count();
        assert_eq!(
            differ, 0,
            "shot {i}: {differ} pixels differ between batch and single render"
        );
        assert_eq!(b.omega_sum.to_bits(), s.omega_sum.to_bits(), "shot {i}: Σω");
        assert!(b == s, "shot {i}: statistics or flags differ");
        assert!(
            s.data.iter().any(|&v| v > 0.0),
            "shot {i} is blank: the test proves nothing"
        );
    }
    // the shots differ from one another, so a batch that mixed them up would fail above
    for (i, s) in singles.iter().enumerate().skip(1) {
        assert!(s.data != singles[0].data, "shots 0 and {i} render the same image");
    }
}

/// Triclinic, mosaic, φ-stepped, polarized crystal with four sources (divergence and
/// dispersion), a resolution cut, 2× oversampling and a thick sensor, in a ROI; the shots
/// differ in misset, φ start, mosaic domains and fluence.
const MOSAIC: &str = "-default_F 100 -cell 70 80 90 80 85 95 -lambda 1.5 -N 4 -distance 80 \
    -pixel 0.4 -detpixels 24 -roi 2 21 1 22 -detector_rotx 2 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 \
    -osc 2 -phisteps 2 -polar 0.8 -oversample 2 -hdivrange 0.3 -hdivsteps 2 -dispersion 0.2 \
    -dispsteps 2 -dmin 2.2 -detector_thick 50 -detector_thicksteps 2 -detector_abs 200";

const MOSAIC_SHOTS: [&str; 3] = [
    "-misset 10 20 30 -phi 0 -mosaic_seed 5",
    "-misset -40 5 12 -phi 7 -mosaic_seed 9 -fluence 3e23",
    "-misset 3 -60 80 -phi 2 -mosaic_seed 11 -fluence 8e24",
];

#[test]
fn batched_mosaic_shots_are_bit_identical_to_single_renders() {
    let exps = shots(MOSAIC, &MOSAIC_SHOTS);
    assert_eq!(exps[0].sources.len(), 4);
    // whole shots per orientation block (the default chunking)
    assert_batch_matches_singles(&exps, &RenderOptions::default());
}

#[test]
fn batched_shots_split_into_orientation_blocks_are_bit_identical() {
    let exps = shots(MOSAIC, &MOSAIC_SHOTS);
    // 4 samples per pixel × a cap of 20 elements: blocks of 5 of a shot's 4·2·3 = 24
    // orientations, so every shot is summed over several blocks, as when rendered alone
    let opts = RenderOptions {
        max_chunk_elements: Some(20),
        ..RenderOptions::default()
    };
    assert_batch_matches_singles(&exps, &opts);
}

#[test]
fn batched_light_shots_with_water_and_a_mask_are_bit_identical() {
    // one orientation per shot (the throughput case), water background, a mask
    let mut exps = shots(
        "-default_F 100 -cell 100 100 100 90 90 90 -lambda 1 -N 5 -distance 50 -pixel 0.4 \
         -detpixels 32 -water 0.05",
        &[
            "-misset 10 20 30",
            "-misset 80 -10 45",
            "-misset 170 33 -5",
            "-misset 1 2 3",
            "-misset -90 45 60",
        ],
    );
    let n = exps[0].detector.pixels();
    let mask: Vec<u16> = (0..n).map(|i| u16::from(i % 7 != 3)).collect();
    for e in &mut exps {
        e.mask = Some(mask.clone());
    }
    assert_batch_matches_singles(&exps, &RenderOptions::default());
    // and with one worker and small chunks
    let opts = RenderOptions {
        threads: 1,
        max_chunk_elements: Some(64),
        ..RenderOptions::default()
    };
    assert_batch_matches_singles(&exps, &opts);
}

#[test]
fn only_orientation_and_fluence_may_differ_within_a_batch() {
    let base = "-default_F 100 -cell 70 80 90 80 85 95 -lambda 1.5 -N 4 -distance 80 -pixel 0.4 \
                -detpixels 24 -misset 10 20 30 -mosaic 0.5 -mosaic_dom 3";
    let (_, first) = setup(base);
    let with = |extra: &str| setup(&format!("{base} {extra}")).1;
    // orientation, φ start, mosaic domains, fluence (and the flux that makes it) may differ
    for extra in [
        "-misset 1 2 3",
        "-phi 5",
        "-mosaic_seed 42",
        "-fluence 1e20",
        "-flux 1e12 -exposure 2 -beamsize 0.1",
    ] {
        assert!(first.batches_with(&with(extra)), "{extra} should batch");
    }
    // anything else changes what every orientation sees
    for extra in [
        "-distance 81",
        "-lambda 1.51",
        "-N 5",
        "-cell 70 80 91 80 85 95",
        "-detector_rotz 1",
        "-Xbeam 4",
        "-mosaic_dom 4",
        "-mosaic 0.6",
        "-oversample 2",
        "-polar 0.5",
        "-default_F 101",
        "-dmin 3",
        "-osc 1 -phisteps 2",
        "-water 10",
    ] {
        assert!(!first.batches_with(&with(extra)), "{extra} must not batch");
    }
    // C's order-dependent rules would run across shots: never batched
    for flag in ["-oversample_thick", "-oversample_polar", "-oversample_omega"] {
        let (_, a) = setup(&format!("{base} {flag}"));
        assert!(!a.batches_with(&a.clone()), "{flag} must not batch");
    }
    // with water the background scales with the fluence: equal fluence batches, other not
    let (_, wet) = setup(&format!("{base} -water 10"));
    assert!(wet.batches_with(&with("-water 10 -misset 1 2 3")));
    assert!(!wet.batches_with(&with("-water 10 -fluence 1e20")));
    // the Gaussian and top-hat spots read the reciprocal vectors outside the orientation
    // columns: their orientation must not change
    let (_, gauss) = setup(&format!("{base} -gauss_xtal"));
    assert!(gauss.batches_with(&with("-gauss_xtal -fluence 1e20")));
    assert!(!gauss.batches_with(&with("-gauss_xtal -misset 1 2 3")));
}
