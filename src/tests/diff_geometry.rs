//! The one detector geometry (`nanobragg::diff::detector`, which `DetectorGeometry::new`
//! evaluates in f64) against the geometry the reference describes, for every convention and
//! both pivots, and its autodiff gradients against central finite differences. f64 only (NdArray<f64> and its autodiff wrapper).

use super::common;
use common::host;

use common::f64_device as dev;
use common::uniform;

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::tensor::{backend::Backend, Tensor, TensorData};
use nanobragg::base::vec3::{add, dot, rotate_axis, rotate_xyz, scale, unitize};
use nanobragg::config::{Convention, CustomVectors, DetectorConfig, Pivot, Vec3};
use nanobragg::diff::detector::{detector_in_frame, DetectorFrame, DetectorTensors};
use nanobragg::experiment::detector::DetectorGeometry;

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
    )
}

/// Largest |a − b| over two vectors.
fn off(a: Vec3, b: Vec3) -> f64 {
    (0..3).map(|i| (a[i] - b[i]).abs()).fold(0.0, f64::max)
}

fn vec3(t: Tensor<B, 1>) -> Vec3 {
    let v = host(t);
    [v[0], v[1], v[2]]
}

/// The detector the setup resolves obeys the geometry the reference describes, checked with the
/// scalar rotations of `nanobragg::base::vec3` (not the tensor ones): the basis is the frame's
/// rotated by `R_2θ·Rz·Ry·Rx`; pivot BEAM puts the beam spot (Fbeam, Sbeam) of the convention
/// (MOSFLM Ybeam + ½px, Xbeam + ½px; DENZO Ybeam, Xbeam; ADXV Xbeam, detsize − Ybeam; else
/// Xbeam, Ybeam) on the beam at the distance; pivot SAMPLE puts the near point (Fclose, Sclose)
/// at the foot of the perpendicular from the sample; and the tensor function, called directly,
/// gives the same numbers.
#[test]
fn detector_obeys_its_geometry_for_every_convention_and_pivot() {
    let mut cases = 0;
    for convention in CONVENTIONS {
        for pivot in [Pivot::Beam, Pivot::Sample] {
            for with_close in [false, true] {
                for seed in 0..4u64 {
                    let cfg = config(convention, pivot, with_close, 1001 * seed + 17);
                    let d = DetectorGeometry::new(&cfg).unwrap();
                    let f = &d.frame;
                    let orient = |v: Vec3| {
                        let v = rotate_xyz(v, cfg.rotx, cfg.roty, cfg.rotz);
                        rotate_axis(v, f.twotheta_axis, cfg.twotheta)
                    };
                    let what = format!("{convention:?} {pivot:?} close={with_close} seed={seed}");
                    for (got, unrotated) in [(d.fdet, f.f0), (d.sdet, f.s0), (d.odet, f.o0)] {
                        assert!(off(got, orient(unrotated)) < 1e-14, "{what}: basis");
                    }
                    let ratio = dot(d.beam, rotate_xyz(f.o0, cfg.rotx, cfg.roty, cfg.rotz));
                    let close = cfg.close_distance.unwrap_or((ratio * cfg.distance).abs());
                    let on_detector = |fc: f64, sc: f64| add(add(d.pix0, scale(d.fdet, fc)), scale(d.sdet, sc));
                    match d.pivot {
                        Pivot::Beam => {
                            let (x, y, px) = (d.xbeam, d.ybeam, d.pixel_size);
                            let (fb, sb) = match convention {
                                Convention::Mosflm => (y + px / 2.0, x + px / 2.0),
                                Convention::Denzo => (y, x),
                                Convention::Adxv => (x, d.detsize_s - y),
                                _ => (x, y),
                            };
                            let spot = scale(d.beam, close / ratio);
                            assert!(off(on_detector(fb, sb), spot) < 1e-14, "{what}: beam spot");
                        }
                        Pivot::Sample => {
                            let (fc, sc) = match convention {
                                Convention::Custom => (d.xbeam, d.ybeam),
                                _ => (f.fclose, f.sclose),
                            };
                            let foot = scale(d.odet, close);
                            assert!(off(on_detector(fc, sc), foot) < 1e-14, "{what}: near point");
                        }
                    }
                    assert!((d.close_distance - dot(d.pix0, d.odet)).abs() < 1e-15, "{what}");
                    assert!((d.distance - d.close_distance / ratio).abs() < 1e-14, "{what}");
                    // the public tensor function on its own parameters
                    let t = tensor_detector(f, t1::<B>(&params(&cfg, &d)), with_close);
                    for (got, want) in [(t.fdet, d.fdet), (t.sdet, d.sdet), (t.odet, d.odet), (t.pix0, d.pix0)] {
                        assert_eq!(vec3(got), want, "{what}");
                    }
                    cases += 1;
                }
            }
        }
    }
    println!("detector: {cases} configurations obey the geometry");
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
                let frame = want.frame.clone();
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

/// The differentiable pipeline (`Simulator::forward`, its scene built from parameter tensors by
/// `Params::scene`) renders every golden case as the C program did: the same geometry reaches
/// the image by both roads (`-mat` included, whose reciprocal vectors `Params::scene` once took
/// from the matrix's rows).
#[test]
fn simulator_renders_every_golden_case_as_c() {
    let Some(dir) = common::golden_dir() else { return };
    let device = common::f64_device();
    for case in common::cases(&dir) {
        let nanobragg::experiment::args::Parsed::Run(mut cfg, _) =
            nanobragg::experiment::args::parse_args(&case.args).unwrap()
        else {
            panic!("{}: no run", case.name)
        };
        if cfg.crystal.hkl == nanobragg::config::HklSource::FdumpIfPresent {
            cfg.crystal.hkl = nanobragg::config::HklSource::None;
        }
        let sim = nanobragg::Simulator::<burn::backend::ndarray::NdArray<f64>>::new(&cfg, &device).unwrap();
        let got: Vec<f32> = common::host(sim.forward()).iter().map(|&v| v as f32).collect();
        let corr = common::correlation(&got, &case.image);
        let ratio = common::sum_ratio(&got, &case.image);
        assert!(
            corr >= 0.9999 && (ratio - 1.0).abs() <= 1e-3,
            "{}: correlation {corr}, sum ratio {ratio}",
            case.name
        );
    }
}
