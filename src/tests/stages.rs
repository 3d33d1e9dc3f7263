//! Stage-level tests: each physics stage on the f64 CPU backend against its formula evaluated
//! independently on the host, or against an analytic limit.

use super::common;
use common::host;

use common::f64_device as dev;
use common::uniform;

use burn::backend::ndarray::NdArray;
use burn::tensor::{Tensor, TensorData};
use nanobragg::base::vec3::{cross, dot, norm, rotate_axis, unitize};
use nanobragg::config::CrystalShape;
use nanobragg::physics::detector::{
    capture_fraction, curved_positions, diffracted_directions, pixel_positions, solid_angle,
};
use nanobragg::physics::lattice::{lattice_factor, sinc3, sincg, LatticeShape, LatticeTensors};
use nanobragg::physics::polarization::kahn_factor;
use nanobragg::physics::scattering::{cos_two_theta, miller_indices, stol};
use nanobragg::physics::structure_factor::{nearest, tricubic, tricubic_out_of_range, HklTensor};
use std::f64::consts::PI;

type B = NdArray<f64>;

fn t2(v: Vec<f64>, shape: [usize; 2]) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(v, shape), &dev())
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn pixel_positions_follow_the_basis() {
    let coords = uniform(30, 0.0, 0.05, 1);
    let basis = vec![0.0, 0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0];
    let pix0 = [0.1, 0.02, -0.03];
    let got = host(
        pixel_positions(
            t2(coords.clone(), [10, 3]),
            t2(basis, [3, 3]),
            t2(pix0.to_vec(), [1, 3]),
        )
        .rows(),
    );
    let want: Vec<f64> = coords
        .chunks(3)
        .flat_map(|c| {
            // f = z, s = −y, o = x
            [pix0[0] + c[2], pix0[1] - c[1], pix0[2] + c[0]]
        })
        .collect();
    assert_close(&got, &want, 1e-15, "position");
}

#[test]
fn curved_detector_is_a_sphere_and_matches_rodrigues() {
    let distance = 0.05;
    let planar: Vec<f64> = uniform(60, -0.02, 0.02, 2);
    let (b, f, s) = ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]);
    let got = host(curved_positions(
        t2(planar.clone(), [20, 3]),
        t2(b.to_vec(), [1, 3]),
        t2(f.to_vec(), [1, 3]),
        t2(s.to_vec(), [1, 3]),
        t2(vec![distance], [1, 1]),
    ));
    for (i, p) in planar.chunks(3).enumerate() {
        let v = rotate_axis([distance, 0.0, 0.0], s, p[1] / distance);
        let v = rotate_axis(v, f, p[2] / distance);
        assert_close(&got[3 * i..3 * i + 3], &v, 1e-14, "curved");
        assert!((norm([got[3 * i], got[3 * i + 1], got[3 * i + 2]]) - distance).abs() < 1e-15);
    }
}

#[test]
fn solid_angle_of_a_flat_detector_integrates_to_the_analytic_value() {
    // a square detector of side 2a at distance d subtends Ω = 4·asin(a²/(a²+d²))
    let (d, a, n) = (0.1, 0.05, 200usize);
    let px = 2.0 * a / n as f64;
    let mut pos = Vec::with_capacity(n * n * 3);
    for i in 0..n {
        for j in 0..n {
            pos.extend([d, -a + px * (i as f64 + 0.5), -a + px * (j as f64 + 0.5)]);
        }
    }
    let (dir, air) = diffracted_directions(t2(pos, [n * n, 3]));
    let omega: f64 = host(solid_angle(air.clone(), px, t2(vec![d], [1, 1]), false))
        .iter()
        .sum();
    let want = 4.0 * (a * a / (a * a + d * d)).asin();
    assert!((omega / want - 1.0).abs() < 1e-4, "{omega} vs {want}");
    // point pixel: 1/R²
    let inv: Vec<f64> = host(air.clone()).iter().map(|r| 1.0 / (r * r)).collect();
    assert_close(
        &host(solid_angle(air, px, t2(vec![d], [1, 1]), true)),
        &inv,
        1e-14,
        "point pixel",
    );
    // unit directions
    for v in host(dir.rows()).chunks(3) {
        assert!((norm([v[0], v[1], v[2]]) - 1.0).abs() < 1e-15);
    }
}

#[test]
fn capture_fractions_telescope_over_layers() {
    let (step, mu, layers) = (50e-6, 1.0 / 300e-6, 4);
    let dirs = [0.9f64, 0.3, 0.3];
    let (d, _) = unitize(dirs);
    let rho = d[0]; // o = x
    let mut total = 0.0;
    for t in 0..layers {
        let c = host(capture_fraction(
            t2(d.to_vec(), [1, 3]),
            t2(vec![1.0, 0.0, 0.0], [3, 1]),
            t2(vec![t as f64], [1, 1]),
            step,
            mu,
        ))[0];
        total += c;
    }
    let want = 1.0 - (-(layers as f64) * step * mu / rho).exp();
    assert!((total - want).abs() < 1e-14, "{total} vs {want}");
}

#[test]
fn scattering_vector_and_miller_indices() {
    let d: Vec<f64> = uniform(12, -1.0, 1.0, 3)
        .chunks(3)
        .flat_map(|v| unitize([v[0] + 2.0, v[1], v[2]]).0)
        .collect();
    let inc = unitize([1.0, 0.01, -0.02]).0;
    let lambda = 1.3e-10;
    let cos2t = cos_two_theta(t2(d.clone(), [4, 3]), t2(inc.to_vec(), [3, 1]));
    let s = host(stol(cos2t, t2(vec![1.0 / lambda], [1, 1])));
    // two orientations with arbitrary cell vectors (m)
    let cells = [
        [[5e-9, 1e-10, 0.0], [0.0, 6e-9, 2e-10], [1e-10, 0.0, 7e-9]],
        [[4e-9, 0.0, 0.0], [0.0, 4e-9, 0.0], [0.0, 0.0, 4e-9]],
    ];
    let c = cells.len();
    let mut coef = vec![0.0; 9 * c];
    let mut offset = vec![0.0; 3 * c];
    for (ci, abc) in cells.iter().enumerate() {
        for (vi, v) in abc.iter().enumerate() {
            for axis in 0..3 {
                coef[axis * 3 * c + vi * c + ci] = v[axis] / lambda;
            }
            offset[vi * c + ci] = dot(*v, inc) / lambda;
        }
    }
    let hkl = miller_indices(t2(d.clone(), [4, 3]), t2(coef, [3, 3 * c]), t2(offset, [1, 3 * c]));
    let hkl: Vec<Vec<f64>> = hkl.into_iter().map(host).collect();
    for (r, dv) in d.chunks(3).enumerate() {
        let q = [
            (dv[0] - inc[0]) / lambda,
            (dv[1] - inc[1]) / lambda,
            (dv[2] - inc[2]) / lambda,
        ];
        assert!((s[r] - 0.5 * norm(q)).abs() < 1e-6 * norm(q));
        for (ci, abc) in cells.iter().enumerate() {
            for vi in 0..3 {
                let want = dot(abc[vi], q);
                assert!((hkl[vi][r * c + ci] - want).abs() < 1e-9, "{vi} {r} {ci}");
            }
        }
    }
}

#[test]
fn kahn_factor_limits() {
    let inc = [1.0, 0.0, 0.0];
    let p = [0.0, 0.0, 1.0];
    let b_in = unitize(cross(p, inc)).0;
    let e_in = unitize(cross(inc, b_in)).0;
    let dirs: Vec<f64> = uniform(30, -1.0, 1.0, 4)
        .chunks(3)
        .flat_map(|v| unitize([v[0], v[1], v[2]]).0)
        .collect();
    let n = dirs.len() / 3;
    let d = t2(dirs.clone(), [n, 3]);
    let cos2t = cos_two_theta(d.clone(), t2(inc.to_vec(), [3, 1]));
    let e = d.clone().matmul(t2(e_in.to_vec(), [3, 1]));
    let b = d.matmul(t2(b_in.to_vec(), [3, 1]));
    let unpol = host(kahn_factor(cos2t.clone(), e.clone(), b.clone(), 0.0));
    let full = host(kahn_factor(cos2t, e, b, 1.0));
    for (i, v) in dirs.chunks(3).enumerate() {
        let c = v[0];
        // unpolarized: ½(1 + cos²2θ); fully polarized along E: 1 − (d·E)²
        assert!((unpol[i] - 0.5 * (1.0 + c * c)).abs() < 1e-14);
        let de = dot([v[0], v[1], v[2]], e_in);
        assert!(
            (full[i] - (1.0 - de * de)).abs() < 1e-14,
            "{} vs {}",
            full[i],
            1.0 - de * de
        );
    }
}

#[test]
fn sincg_is_the_grating_function() {
    let h = uniform(200, -30.0, 30.0, 5);
    for n in [2.0, 5.0, 17.0] {
        let got = host(sincg(t2(h.clone(), [1, 200]), n));
        for (g, x) in got.iter().zip(&h) {
            let want = (n * PI * x).sin() / (PI * x).sin();
            // equal up to sign, which squares away
            assert!((g.abs() - want.abs()).abs() < 1e-9 * n, "N={n} h={x}: {g} vs {want}");
        }
        // at integer h the limit N
        let got = host(sincg(t2(vec![0.0, 3.0, -7.0], [1, 3]), n));
        assert!(got.iter().all(|&g| (g - n).abs() < 1e-12));
    }
}

#[test]
fn sinc3_is_the_sphere_transform() {
    let x = uniform(100, 0.05, 20.0, 6);
    let got = host(sinc3(t2(x.clone(), [1, 100])));
    for (g, x) in got.iter().zip(&x) {
        let want = 3.0 * (x.sin() / x - x.cos()) / (x * x);
        assert!((g - want).abs() < 1e-12, "{x}");
    }
    let small = host(sinc3(t2(vec![0.0, 1e-4, 5e-3], [1, 3])));
    assert!(
        (small[0] - 1.0).abs() < 1e-15 && (small[1] - 1.0).abs() < 1e-8 && (small[2] - (1.0 - 2.5e-6)).abs() < 1e-9
    );
}

#[test]
fn lattice_shapes_match_their_formulas() {
    let n = [5.0, 4.0, 3.0];
    let recip = [[0.01, 0.0, 0.0], [0.001, 0.012, 0.0], [0.0, 0.002, 0.015]];
    let pts = uniform(60, -3.0, 3.0, 7);
    let hkl: [Tensor<B, 2>; 3] = [0, 1, 2].map(|a| t2(pts.iter().skip(a).step_by(3).cloned().collect(), [1, 20]));
    let frac = |x: f64| x - (x - 0.5).ceil();
    for shape in [
        CrystalShape::Square,
        CrystalShape::Round,
        CrystalShape::Gauss,
        CrystalShape::Tophat,
    ] {
        let p = LatticeShape {
            shape,
            n,
            fudge: 0.8,
            recip,
        };
        // the host-constant form and the differentiable form (N, a*, b*, c* as tensors)
        let tensors = LatticeTensors {
            n: t2(n.to_vec(), [1, 3]),
            recip: t2(recip.concat(), [1, 9]),
        };
        let forms = [
            host(lattice_factor(&hkl, &p, None)),
            host(lattice_factor(&hkl, &p, Some(&tensors))),
        ];
        for (form, got) in forms.iter().enumerate() {
            for (i, v) in pts.chunks(3).enumerate() {
                let vol = n[0] * n[1] * n[2];
                let want = match shape {
                    CrystalShape::Square => (0..3)
                        .map(|a| (n[a] * PI * v[a]).sin() / (PI * v[a]).sin())
                        .product::<f64>(),
                    CrystalShape::Round => {
                        let r2: f64 = (0..3).map(|a| (frac(v[a]) * n[a]).powi(2)).sum();
                        let x = PI * (r2 * 0.8).sqrt();
                        vol * 0.723601254558268 * 3.0 * (x.sin() / x - x.cos()) / (x * x)
                    }
                    _ => {
                        let d: Vec<f64> = (0..3).map(|a| frac(v[a])).collect();
                        let r2: f64 = (0..3)
                            .map(|ax| (d[0] * recip[0][ax] + d[1] * recip[1][ax] + d[2] * recip[2][ax]).powi(2))
                            .sum::<f64>()
                            * vol
                            * vol;
                        if shape == CrystalShape::Gauss {
                            vol * (-(r2 / 0.63) * 0.8).exp()
                        } else if r2 * 0.8 < 0.3969 {
                            vol
                        } else {
                            0.0
                        }
                    }
                };
                assert!(
                    (got[i].abs() - want.abs()).abs() < 1e-9 * (1.0 + want.abs()),
                    "{shape:?} form {form} {v:?}: {} vs {want}",
                    got[i]
                );
            }
        }
    }
}

fn cubic_grid(min: i32, max: i32) -> nanobragg::io::hkl::HklGrid {
    let f =
        |h: f64, k: f64, l: f64| 10.0 + 0.3 * h * h * h - 0.2 * h * k + 0.1 * k * k * l + 0.05 * l * l * l + h * k * l;
    let n = (max - min + 1) as usize;
    let mut values = Vec::with_capacity(n * n * n);
    for h in min..=max {
        for k in min..=max {
            for l in min..=max {
                values.push(f(h as f64, k as f64, l as f64));
            }
        }
    }
    nanobragg::io::hkl::HklGrid {
        h_min: min,
        h_max: max,
        k_min: min,
        k_max: max,
        l_min: min,
        l_max: max,
        values,
        entries: n * n * n,
    }
}

#[test]
fn tricubic_reproduces_cubic_polynomials_and_nearest_looks_up() {
    let grid = cubic_grid(-6, 6);
    let f =
        |h: f64, k: f64, l: f64| 10.0 + 0.3 * h * h * h - 0.2 * h * k + 0.1 * k * k * l + 0.05 * l * l * l + h * k * l;
    let g = HklTensor::<B>::new(&grid, 7.5, &dev());
    let pts = uniform(90, -4.0, 4.0, 8);
    let hkl: [Tensor<B, 2>; 3] = [0, 1, 2].map(|a| t2(pts.iter().skip(a).step_by(3).cloned().collect(), [3, 10]));
    let tri = host(tricubic(&hkl, &g));
    let oor = host(tricubic_out_of_range(&hkl, &g).float());
    let near = host(nearest(&hkl, &g));
    for (i, v) in pts.chunks(3).enumerate() {
        assert_eq!(oor[i], 0.0);
        assert!((tri[i] - f(v[0], v[1], v[2])).abs() < 1e-9, "{v:?}");
        let r = |x: f64| (x - 0.5).ceil();
        assert_eq!(near[i], f(r(v[0]), r(v[1]), r(v[2])));
    }
    // out of the grid: default_F, and flagged for tricubic
    let far: [Tensor<B, 2>; 3] = [
        t2(vec![9.0, 0.0, -4.6], [1, 3]),
        t2(vec![0.0, 0.0, 0.0], [1, 3]),
        t2(vec![0.0, 4.7, 0.0], [1, 3]),
    ];
    assert_eq!(host(nearest(&far, &g))[0], 7.5);
    assert_eq!(host(tricubic_out_of_range(&far, &g).float()), vec![1.0, 1.0, 1.0]);
}
