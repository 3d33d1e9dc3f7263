//! The CPU engine's native per-pixel loop against its tensor stages, on every golden case, in
//! f64: the two are independent implementations of C's loop (one pixel at a time in native
//! Rust, against whole tensors op by op through burn), so agreement to f64 rounding is a check
//! of both. Their agreement with C itself is `parity`'s. Also: the loop's images do not depend
//! on the thread count, and its progress reaches the whole ROI.

use crate::common;

use nanobragg::config::HklSource;
use nanobragg::engine::{Engine, Precision};
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::render::RenderOptions;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn cpu(fusion: bool) -> Engine {
    Engine::Cpu {
        precision: Precision::F64,
        fusion,
    }
}

fn experiment(args: &[String]) -> Experiment {
    let Parsed::Run(mut cfg, _) = parse_args(args).unwrap() else {
        panic!("a render")
    };
    if cfg.crystal.hkl == HklSource::FdumpIfPresent {
        cfg.crystal.hkl = HklSource::None;
    }
    Experiment::new(&cfg).unwrap()
}

/// Each pixel within a few f32 ulps of the image's largest value (both images are f32 roundings
/// of f64 values that differ by f64 rounding), Σω to 1e-12, the same fall-back.
#[test]
fn native_loop_matches_the_tensor_stages_on_every_golden_case() {
    let Some(dir) = common::golden_dir() else { return };
    let opts = RenderOptions::default();
    for case in common::cases(&dir) {
        let exp = experiment(&case.args);
        let native = cpu(true).render(&exp, &opts).unwrap();
        let stages = cpu(false).render(&exp, &opts).unwrap();
        let peak = stages.data.iter().fold(0.0f64, |m, &v| m.max(f64::from(v).abs()));
        let worst = native
            .data
            .iter()
            .zip(&stages.data)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
            .fold(0.0, f64::max);
        println!(
            "{:<36} max |native − stages| / peak = {:.2e}",
            case.name,
            worst / peak.max(1e-300)
        );
        assert!(worst <= 4e-7 * peak, "{}: {worst} against a peak of {peak}", case.name);
        let omega = (native.omega_sum - stages.omega_sum).abs();
        assert!(
            omega <= 1e-12 * stages.omega_sum.abs(),
            "{}: Σω {} vs {}",
            case.name,
            native.omega_sum,
            stages.omega_sum
        );
        assert_eq!(
            native.interpolation_fell_back, stages.interpolation_fell_back,
            "{}",
            case.name
        );
    }
}

/// A mosaic, φ-stepped, oversampled render with tricubic-free structure factors.
const WORK: &str = "-default_F 100 -cell 70 80 90 85 95 100 -lambda 1.2 -N 4 -distance 80 -pixel 0.2 \
    -detpixels 48 -mosaic 0.5 -mosaic_domains 5 -phisteps 3 -osc 0.3 -oversample 2 -roi 3 40 5 44";

/// The same bits on 1, 2 and 3 workers: every pixel is computed on its own.
#[test]
fn native_images_do_not_depend_on_the_thread_count() {
    let args: Vec<String> = WORK.split_whitespace().map(String::from).collect();
    let exp = experiment(&args);
    let image = |threads| {
        let opts = RenderOptions {
            threads,
            ..Default::default()
        };
        cpu(true).render(&exp, &opts).unwrap()
    };
    let one = image(1);
    assert!(one.data.iter().any(|&v| v > 0.0));
    for threads in [2, 3] {
        let other = image(threads);
        assert!(one.data == other.data, "{threads} threads");
        assert_eq!(one.omega_sum.to_bits(), other.omega_sum.to_bits());
    }
}

/// Progress is reported as rows finish and ends at the ROI's size.
#[test]
fn native_progress_reaches_the_whole_roi() {
    let args: Vec<String> = WORK.split_whitespace().map(String::from).collect();
    let exp = experiment(&args);
    let (last, total) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (l, t) = (last.clone(), total.clone());
    let opts = RenderOptions {
        threads: 2,
        progress: Some(Arc::new(move |done, all| {
            l.fetch_max(done, Ordering::Relaxed);
            t.store(all, Ordering::Relaxed);
        })),
        ..Default::default()
    };
    cpu(true).render(&exp, &opts).unwrap();
    let roi = exp.active_pixels().rect().len();
    assert_eq!(
        (last.load(Ordering::Relaxed), total.load(Ordering::Relaxed)),
        (roi, roi)
    );
}
