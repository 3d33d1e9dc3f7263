use super::*;
use crate::diff::testing::{dev, host, max_rel, Ad};
use crate::io::stol::{StolTable, StolUnits};
use crate::physics::amorphous::{amorphous_intensity, structure_factor};
use crate::physics::detector::{diffracted_directions, solid_angle};
use crate::physics::polarization::kahn_factor_tensor;
use crate::physics::scattering::{cos_two_theta, stol};
use burn::tensor::{backend::Backend, Tensor, TensorData};

/// The background of the samples at lab `positions` `[R, 3]` (m), photons per sample
/// `[R, 1]` before the average over a pixel's samples: Σ_s sign(F)·F²·P·ω·w_s ×
/// `amount` `[1, 1]` (r_e²·fluence·molecules), F taken from the curve at sinθ/λ and scaled by
/// `f_scale` `[1, 1]`. `close_distance` `[1, 1]` (m) enters ω. Gradients reach the positions,
/// the close distance, the amount and the scale. (The tensor-stage reference of C's loop,
/// [`render_background`].)
fn background_samples<B: Backend>(
    scene: &BackgroundScene,
    positions: Tensor<B, 2>,
    close_distance: Tensor<B, 2>,
    amount: Tensor<B, 2>,
    f_scale: Tensor<B, 2>,
) -> Tensor<B, 2> {
    let device = positions.device();
    let r = positions.dims()[0];
    let (directions, airpath) = diffracted_directions(positions);
    let directions = directions.rows();
    let omega = solid_angle(airpath, scene.pixel, close_distance, scene.point_pixel);
    let s = scene.sources.len();
    let row = |v: Vec<f64>| Tensor::<B, 2>::from_data(TensorData::new(v, [1, s]), &device);
    let incident_t = Tensor::<B, 2>::from_data(
        TensorData::new(
            scene.sources.iter().flat_map(|x| x.incident).collect::<Vec<_>>(),
            [s, 3],
        ),
        &device,
    )
    .transpose();
    let cos2 = cos_two_theta(directions.clone(), incident_t);
    let inv_lambda = row(scene.sources.iter().map(|x| 1.0 / x.lambda).collect());
    let f = structure_factor(stol(cos2.clone(), inv_lambda), &scene.curve) * f_scale;
    let polar = match scene.polarization {
        None => Tensor::<B, 2>::ones([r, s], &device),
        Some((kahn, axis)) => {
            let frames: Vec<(Vec3, Vec3)> = scene
                .sources
                .iter()
                .map(|x| {
                    let b_in = unitize(cross(axis, x.incident)).0;
                    (unitize(cross(x.incident, b_in)).0, b_in)
                })
                .collect();
            let basis = |pick: fn(&(Vec3, Vec3)) -> Vec3| {
                let v: Vec<f64> = frames.iter().flat_map(pick).collect();
                Tensor::<B, 2>::from_data(TensorData::new(v, [s, 3]), &device).transpose()
            };
            let e_proj = directions.clone().matmul(basis(|x| x.0));
            let b_proj = directions.matmul(basis(|x| x.1));
            kahn_factor_tensor(cos2, e_proj, b_proj, Tensor::from_data([[kahn]], &device))
        }
    };
    let weights = row(scene.sources.iter().map(|x| x.weight).collect());
    let ones = Tensor::<B, 2>::ones([r, 1], &device);
    amorphous_intensity(f, polar, omega, ones, weights) * amount
}

/// A tilted 6×5 detector 80 mm away, two sources (different λ and weight), Kahn 0.7, 2×2
/// sub-pixels, a curve with a sign change.
fn scene() -> BackgroundScene {
    let table = StolTable {
        x: vec![0.0, 0.05, 0.1, 0.2, 0.3, 0.5],
        f: vec![2.57, 2.6, 2.9, 1.5, -0.4, 0.8],
    };
    let (fdet, sdet) = (
        crate::base::vec3::rotate_xyz([0.0, 0.0, 1.0], 0.05, -0.1, 0.02),
        crate::base::vec3::rotate_xyz([0.0, -1.0, 0.0], 0.05, -0.1, 0.02),
    );
    let odet = unitize(cross(fdet, sdet)).0;
    let distance = 0.08;
    let (xbeam, ybeam) = (0.006, 0.004);
    let beam = [1.0, 0.0, 0.0];
    let pix0 = std::array::from_fn(|i| -xbeam * fdet[i] - ybeam * sdet[i] + distance * beam[i]);
    BackgroundScene {
        width: 6,
        height: 5,
        roi: (0, 6, 0, 5),
        pixel: 2e-3,
        oversample: 2,
        fdet,
        sdet,
        odet,
        pix0,
        beam,
        distance,
        close_distance: dot(pix0, odet),
        curved: false,
        point_pixel: false,
        fmap: false,
        sources: vec![
            BackgroundSource {
                incident: beam,
                lambda: 1e-10,
                weight: 1.0,
            },
            BackgroundSource {
                incident: unitize([1.0, 0.002, -0.001]).0,
                lambda: 0.9e-10,
                weight: 0.5,
            },
        ],
        polarization: Some((0.7, [0.0, 0.0, 1.0])),
        curve: StolCurve::new(&table, StolUnits::Stol),
        r_e_sqr: crate::experiment::R_E_SQR,
        fluence: 1e24,
        molecules: 3.3e19,
    }
}

/// Lab positions `[R, 3]` of every sample of every pixel, in C's order.
fn positions(s: &BackgroundScene) -> Vec<f64> {
    let os = s.oversample;
    let sub = s.pixel / os as f64;
    let mut out = Vec::new();
    for slow in 0..s.height {
        for fast in 0..s.width {
            for ss in 0..os {
                for sf in 0..os {
                    let (f, sl) = (
                        sub * (fast * os + sf) as f64 + sub / 2.0,
                        sub * (slow * os + ss) as f64 + sub / 2.0,
                    );
                    out.extend((0..3).map(|i| f * s.fdet[i] + sl * s.sdet[i] + s.pix0[i]));
                }
            }
        }
    }
    out
}

/// The tensor stages' image (photons/pixel) with the detector moved `shift` (m) along the beam,
/// the material's amount times `amount` and F times `f_scale`; all of them leaves for autodiff.
fn tensor_image(s: &BackgroundScene, shift: f64, amount: f64, f_scale: f64) -> (Tensor<Ad, 2>, [Tensor<Ad, 2>; 3]) {
    let p = positions(s);
    let r = p.len() / 3;
    let leaf = |v: f64| Tensor::<Ad, 2>::from_data([[v]], &dev()).require_grad();
    let (d, a, k) = (leaf(shift), leaf(amount), leaf(f_scale));
    let beam = Tensor::<Ad, 2>::from_data(TensorData::new(s.beam.to_vec(), [1, 3]), &dev());
    let base = Tensor::<Ad, 2>::from_data(TensorData::new(p, [r, 3]), &dev());
    // the shift enters the positions and the close distance, as moving the detector does
    let moved = base + beam.clone().mul(d.clone()).expand([r, 3]);
    let close = d.clone() * dot(s.beam, s.odet) + s.close_distance;
    let per_photon = s.r_e_sqr * s.fluence * s.molecules;
    let samples = background_samples(s, moved, close, a.clone() * per_photon, k.clone());
    let image = samples
        .reshape([s.width * s.height, s.oversample * s.oversample])
        .sum_dim(1)
        / s.steps() as f64;
    (image, [d, a, k])
}

#[test]
fn tensor_stages_match_cs_loop() {
    let s = scene();
    let c_loop: Vec<f64> = render_background(&s).pixels.iter().map(|&v| v as f64).collect();
    let tensors = host(tensor_image(&s, 0.0, 1.0, 1.0).0.inner());
    // the loop rounds each pixel to f32 as C does
    assert!(max_rel(&tensors, &c_loop, 1e-30) < 1e-7, "{tensors:?} vs {c_loop:?}");
    assert!(c_loop.iter().any(|&v| v > 0.0));
}

#[test]
fn unity_table_without_polarization_is_the_inverse_square_law() {
    let mut s = scene();
    s.curve = StolCurve::new(
        &StolTable {
            x: vec![0.0, 1.0],
            f: vec![1.0, 1.0],
        },
        StolUnits::Stol,
    );
    (s.polarization, s.point_pixel, s.oversample) = (None, true, 1);
    s.sources.truncate(1);
    let image = render_background(&s);
    for slow in 0..s.height {
        for fast in 0..s.width {
            let centre = s.position(s.pixel * (fast as f64 + 0.5), s.pixel * (slow as f64 + 0.5));
            let expected = s.r_e_sqr * s.fluence * s.molecules / dot(centre, centre);
            let got = image.pixels[slow * s.width + fast] as f64;
            assert!((got / expected - 1.0).abs() < 1e-6, "{got} vs {expected}");
        }
    }
}

#[test]
fn the_image_is_the_same_on_any_thread_count() {
    let s = scene();
    let on = |n: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        pool.install(|| render_background(&s))
    };
    let one = on(1);
    for n in [2, 3] {
        let many = on(n);
        assert_eq!(many.pixels, one.pixels);
        assert_eq!(many.last_sample, one.last_sample);
    }
}

/// Gradients of a weighted sum of the image with respect to the detector's position along the
/// beam, the material's amount and F's scale, against central differences of the forward.
#[test]
fn gradients_equal_central_differences() {
    let s = scene();
    let weights: Vec<f64> = (0..s.width * s.height).map(|i| 1.0 + (i % 7) as f64 * 0.3).collect();
    let w = Tensor::<Ad, 2>::from_data(TensorData::new(weights.clone(), [weights.len(), 1]), &dev());
    let (image, leaves) = tensor_image(&s, 0.0, 1.0, 1.0);
    let grads = (image * w).sum().backward();
    let analytic: Vec<f64> = leaves.iter().map(|l| host(l.grad(&grads).unwrap())[0]).collect();
    let loss = |shift: f64, amount: f64, scale: f64| {
        let img = host(tensor_image(&s, shift, amount, scale).0.inner());
        img.iter().zip(&weights).map(|(a, b)| a * b).sum::<f64>()
    };
    let steps = [1e-6, 1e-4, 1e-4];
    let at = |k: usize, h: f64| {
        let mut x = [0.0, 1.0, 1.0];
        x[k] += h;
        loss(x[0], x[1], x[2])
    };
    for k in 0..3 {
        let numeric = (at(k, steps[k]) - at(k, -steps[k])) / (2.0 * steps[k]);
        assert!(
            (analytic[k] - numeric).abs() <= 1e-6 * numeric.abs(),
            "parameter {k}: {} vs {numeric}",
            analytic[k]
        );
    }
    // analytic limits: linear in the amount, F² in the scale (sign(F)·F² is odd, its slope 2·I)
    let total = loss(0.0, 1.0, 1.0);
    assert!((analytic[1] / total - 1.0).abs() < 1e-12);
    assert!((analytic[2] / (2.0 * total) - 1.0).abs() < 1e-12);
}

/// The rearranged loop renders C's loop's image: each pixel within 2 units in the last place
/// of f32 (its f64 sum differs from C's by a few f64 units, then both round to f32), on the
/// tilted, polarized, two-source scene and its variants (no polarization, point pixels, a
/// curved detector, F instead of photons, an ROI, rows of several lane groups with a partial last one).
#[test]
fn the_fast_loop_renders_cs_image() {
    let variants: [fn(&mut BackgroundScene); 8] = [
        |_| {},
        |s| s.polarization = None,
        |s| s.polarization = Some((0.0, [0.0, 0.0, 1.0])),
        |s| (s.point_pixel, s.curved) = (true, true),
        |s| s.fmap = true,
        |s| s.roi = (1, 3, 2, 4),
        |s| (s.width, s.roi) = (19, (0, 18, 0, 4)),
        |s| (s.width, s.roi) = (21, (9, 17, 1, 3)),
    ];
    for (k, vary) in variants.iter().enumerate() {
        let mut s = scene();
        vary(&mut s);
        let (exact, fast) = (render_background(&s).pixels, render_background_fast(&s));
        let peak = exact.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(peak > 0.0, "variant {k}: an empty image");
        for (p, (e, f)) in exact.iter().zip(&fast).enumerate() {
            let ulp = f32::EPSILON * e.abs().max(1e-6 * peak);
            assert!((e - f).abs() <= 2.0 * ulp, "variant {k}, pixel {p}: {f} vs C's {e}");
        }
    }
}

/// The cubics with folded denominators give C's `polint` on every shipped table the reader
/// accepts (`shortwater.stol`'s abscissae do not increase: it is refused), between and at its
/// points, in every interval and beyond both ends, to 16 units in the last place of the
/// sum of the four Lagrange terms' magnitudes: the terms partly cancel (water.stol has closely
/// spaced points), and each form rounds in its own order. The product form keeps its accuracy
/// next to the nodes, where a cubic in powers of s would cancel (ice.stol's spikes, two points
/// 1.6·10⁻⁵ Å⁻¹ apart).
#[test]
fn cubics_are_cs_interpolation_on_every_shipped_table() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/stol");
    for name in ["air", "ice", "nanoice", "unity", "water"] {
        let table = crate::io::stol::read_stol(&dir.join(format!("{name}.stol"))).unwrap();
        let curve = StolCurve::new(&table, StolUnits::Stol);
        let cubics = StolCubics::new(&curve);
        let (lo, hi) = (curve.stol[2], curve.stol[curve.len() - 3]);
        let mut hint = 1;
        let at_points = curve.stol[2..curve.len() - 2].iter().copied();
        let between = (0..20_000).map(|i| lo - 0.05 * (hi - lo) + (hi - lo) * 1.1 * (f64::from(i) / 20_000.0));
        let mut samples: Vec<f64> = at_points.chain(between).collect();
        samples.sort_by(f64::total_cmp);
        for s in samples {
            let c = curve.f_near(s, &mut hint);
            assert_eq!(cubics.interval(s), hint, "{name}: s = {s}");
            let f = cubics.f_in(s, hint);
            let (xa, ya) = (&curve.stol[hint - 1..hint + 3], &curve.f[hint - 1..hint + 3]);
            let magnitude: f64 = (0..4)
                .map(|k| {
                    let others = (0..4).filter(|&j| j != k);
                    let basis: f64 = others.clone().map(|j| (s - xa[j]) / (xa[k] - xa[j])).product();
                    (basis * ya[k]).abs()
                })
                .sum();
            assert!(
                (c - f).abs() <= 16.0 * f64::EPSILON * magnitude,
                "{name}: s = {s}: {f} vs C's {c}"
            );
        }
    }
}
