//! The differentiable detector geometry (`nanobragg::diff::detector`) against the host's
//! `DetectorGeometry::new` for every convention and both pivots, and its autodiff gradients
//! against central finite differences. f64 only (NdArray<f64> and its autodiff wrapper).

mod common;
use common::host;

use common::f64_device as dev;
use common::uniform;

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::{backend::Backend, Tensor, TensorData};
use nanobragg::config::{Convention, CustomVectors, DetectorConfig, Pivot, Vec3};
use nanobragg::diff::detector::{detector, detector_in_frame, DetectorFrame, DetectorTensors};
use nanobragg::geometry::{rotate_xyz, unitize};
use nanobragg::setup::detector::DetectorGeometry;

type B = NdArray<f64>;
type Ad = Autodiff<NdArray<f64>>;

const CONVENTIONS: [Convention; 6] = [
    Convention::Mosflm,
    Convention::Xds,
    Convention::Dials,
    Convention::Adxv,
    Convention::Denzo,
    Convention::Custom,
];

fn t1<K: Backend<Device = NdArrayDevice>>(v: &[f64]) -> Tensor<K, 1> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), &dev())
}

/// A CUSTOM basis: MOSFLM's rotated at random, the normal sometimes left out or given
/// unnormalised (C then rebuilds it as f × s), a random 2θ axis and a tilted beam.
fn custom_vectors(seed: u64) -> CustomVectors {
    let r = uniform(10, -0.4, 0.4, seed);
    let turn = |v: Vec3| rotate_xyz(v, r[0], r[1], r[2]);
    let odet = match seed % 3 {
        0 => None,
        1 => Some(turn([1.0, 0.0, 0.0])),
        _ => Some(turn([2.0, 0.0, 0.0])),
    };
    CustomVectors {
        fdet: Some(turn([0.0, 0.0, 1.0])),
        sdet: Some(turn([0.0, -1.0, 0.0])),
        odet,
        beam: Some(unitize([1.0, r[3] * 0.2, r[4] * 0.2]).0),
        polar: None,
        spindle: None,
        twotheta_axis: Some(unitize([r[5], 1.0, r[6]]).0),
    }
}

/// A random detector configuration of `convention` with non-zero rotations and 2θ.
fn config(convention: Convention, pivot: Pivot, with_close: bool, seed: u64) -> DetectorConfig {
    let r = uniform(12, 0.0, 1.0, seed);
    let angle = |u: f64| (u - 0.5) * 0.6; // ±0.3 rad
    let px = 0.05e-3 + 0.1e-3 * r[0];
    DetectorConfig {
        convention,
        pivot,
        pixel_size: px,
        fpixels: Some(500 + (1000.0 * r[1]) as usize),
        spixels: Some(400 + (1000.0 * r[2]) as usize),
        distance: 0.05 + 0.25 * r[3],
        close_distance: with_close.then_some(0.04 + 0.2 * r[4]),
        xbeam: Some(0.01 + 0.05 * r[5]),
        ybeam: Some(0.01 + 0.05 * r[6]),
        orgx: seed.is_multiple_of(2).then_some(100.0 + 300.0 * r[7]),
        orgy: seed.is_multiple_of(2).then_some(100.0 + 300.0 * r[8]),
        rotx: angle(r[9]),
        roty: angle(r[10]),
        rotz: angle(r[11]),
        twotheta: 0.05 + 0.3 * r[4],
        custom: if convention == Convention::Custom {
            custom_vectors(seed)
        } else {
            CustomVectors::default()
        },
        ..Default::default()
    }
}

/// The parameter vector of a configuration: [distance, close_distance, Xbeam, Ybeam, rotx,
/// roty, rotz, 2θ] (m and rad); close_distance is 0 (and unused) when not given.
fn params(cfg: &DetectorConfig, host: &DetectorGeometry) -> Vec<f64> {
    vec![
        cfg.distance,
        cfg.close_distance.unwrap_or(0.0),
        host.xbeam,
        host.ybeam,
        cfg.rotx,
        cfg.roty,
        cfg.rotz,
        cfg.twotheta,
    ]
}

/// The tensor detector from a parameter vector `[8]`.
fn tensor_detector<K: Backend<Device = NdArrayDevice>>(
    frame: &DetectorFrame,
    x: Tensor<K, 1>,
    with_close: bool,
) -> DetectorTensors<K> {
    detector_in_frame(
        frame,
        x.clone().narrow(0, 0, 1),
        with_close.then(|| x.clone().narrow(0, 1, 1)),
        x.clone().narrow(0, 2, 2),
        x.clone().narrow(0, 4, 3),
        x.narrow(0, 7, 1),
        &dev(),
    )
}

/// Largest deviation of the tensor detector from the host, relative to each quantity's size
/// (unit vectors: 1; pix0: |pix0|; distances: themselves).
fn deviation(got: DetectorTensors<B>, want: &DetectorGeometry) -> f64 {
    let rel_vec = |g: Tensor<B, 1>, w: Vec3| {
        let len = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        host(g)
            .iter()
            .zip(w)
            .map(|(a, b)| (a - b).abs() / len)
            .fold(0.0, f64::max)
    };
    let rel = |g: Tensor<B, 1>, w: f64| ((host(g)[0] - w) / w).abs();
    [
        rel_vec(got.fdet, want.fdet),
        rel_vec(got.sdet, want.sdet),
        rel_vec(got.odet, want.odet),
        rel_vec(got.pix0, want.pix0),
        rel(got.close_distance, want.close_distance),
        rel(got.distance, want.distance),
    ]
    .into_iter()
    .fold(0.0, f64::max)
}

#[test]
fn detector_matches_host_for_every_convention_and_pivot() {
    let mut worst = 0.0f64;
    let mut cases = 0;
    for convention in CONVENTIONS {
        for pivot in [Pivot::Beam, Pivot::Sample] {
            for with_close in [false, true] {
                for seed in 0..4u64 {
                    let cfg = config(convention, pivot, with_close, 1001 * seed + 17);
                    let want = DetectorGeometry::new(&cfg).unwrap();
                    let x = params(&cfg, &want);
                    // the public entry point (constants from the host)
                    let got = detector(
                        &want,
                        t1::<B>(&x[0..1]),
                        with_close.then(|| t1::<B>(&x[1..2])),
                        t1::<B>(&x[2..4]),
                        t1::<B>(&x[4..7]),
                        t1::<B>(&x[7..8]),
                        &dev(),
                    );
                    let d1 = deviation(got, &want);
                    // exact constants from the configuration
                    let frame = DetectorFrame::from_config(&cfg, &want);
                    let d2 = deviation(tensor_detector(&frame, t1::<B>(&x), with_close), &want);
                    assert!(
                        d1 < 1e-12 && d2 < 1e-12,
                        "{convention:?} {pivot:?} close={with_close} seed={seed}: {d1:e} {d2:e}"
                    );
                    worst = worst.max(d1).max(d2);
                    cases += 1;
                }
            }
        }
    }
    println!("detector: {cases} cases, max relative deviation {worst:e}");
}

#[test]
fn frames_from_host_and_config_agree() {
    for convention in CONVENTIONS {
        for seed in 0..6u64 {
            let cfg = config(convention, Pivot::Sample, false, seed);
            let host = DetectorGeometry::new(&cfg).unwrap();
            let (a, b) = (DetectorFrame::from_host(&host), DetectorFrame::from_config(&cfg, &host));
            let close = |x: Vec3, y: Vec3| (0..3).all(|i| (x[i] - y[i]).abs() < 1e-15);
            assert!(
                close(a.f0, b.f0) && close(a.s0, b.s0) && close(a.o0, b.o0),
                "{convention:?} {a:?} {b:?}"
            );
            if host.pivot == Pivot::Sample && convention != Convention::Custom {
                assert!((a.fclose - b.fclose).abs() < 1e-16 && (a.sclose - b.sclose).abs() < 1e-16);
            }
        }
    }
}

/// Σ pix0·w₀ + fdet·w₁ + sdet·w₂ + odet·w₃ (lengths in cm, so every term is O(1)) + close + distance.
fn objective<K: Backend<Device = NdArrayDevice>>(d: DetectorTensors<K>, w: &[f64]) -> Tensor<K, 1> {
    let vecs = [d.pix0 * 100.0, d.fdet, d.sdet, d.odet];
    let dots = vecs
        .into_iter()
        .enumerate()
        .map(|(i, v)| (v * t1::<K>(&w[3 * i..3 * i + 3])).sum());
    dots.reduce(|a, b| a + b).unwrap() + d.close_distance * (100.0 * w[12]) + d.distance * (100.0 * w[13])
}

#[test]
fn detector_gradients_match_finite_differences() {
    let w = uniform(14, -1.0, 1.0, 99);
    let mut worst = 0.0f64;
    for convention in CONVENTIONS {
        for pivot in [Pivot::Beam, Pivot::Sample] {
            for with_close in [false, true] {
                let cfg = config(convention, pivot, with_close, 5 + convention as u64);
                let want = DetectorGeometry::new(&cfg).unwrap();
                let frame = DetectorFrame::from_host(&want);
                let x = params(&cfg, &want);
                let f_host = |x: &[f64]| host(objective(tensor_detector(&frame, t1::<B>(x), with_close), &w))[0];
                let xt = t1::<Ad>(&x).require_grad();
                let grads = objective(tensor_detector(&frame, xt.clone(), with_close), &w).backward();
                let ad = host(xt.grad(&grads).unwrap());
                // central differences, step 1e-6 relative (lengths ≥ 1 cm, angles ≥ 0.05 rad)
                let fd: Vec<f64> = (0..x.len())
                    .map(|i| {
                        let h = 1e-6 * x[i].abs().max(1e-2);
                        let (mut xp, mut xm) = (x.clone(), x.clone());
                        xp[i] += h;
                        xm[i] -= h;
                        (f_host(&xp) - f_host(&xm)) / (2.0 * h)
                    })
                    .collect();
                let scale = fd.iter().fold(1.0f64, |s, g| s.max(g.abs()));
                let err = ad
                    .iter()
                    .zip(&fd)
                    .map(|(a, b)| (a - b).abs() / scale)
                    .fold(0.0, f64::max);
                assert!(
                    err < 1e-7,
                    "{convention:?} {pivot:?} close={with_close}: {err:e}\n{ad:?}\n{fd:?}"
                );
                worst = worst.max(err);
                // unused parameters have no gradient
                if with_close {
                    assert_eq!(ad[0], 0.0, "-close_distance overrides -distance");
                } else {
                    assert_eq!(ad[1], 0.0);
                }
                if matches!(convention, Convention::Xds | Convention::Dials) {
                    assert_eq!((ad[2], ad[3]), (0.0, 0.0), "{convention:?} ignores the beam centre");
                }
            }
        }
    }
    println!("detector gradients: max error {worst:e} (relative to the largest gradient)");
}
