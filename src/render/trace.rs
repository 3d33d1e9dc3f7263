//! A scalar, host-side (f64) evaluation of one pixel that follows the C program's loop
//! literally (layers → sub-pixels → sources → φ → mosaic, with its caching of ω, polarization
//! and capture fraction), printing the intermediate values like C's trace.
//!
//! It serves `-trace_pixel` / `-printout_pixel`, and as an independent check of the tensor
//! engine: its value must equal the rendered pixel (see `tests/integration/trace.rs`).

use crate::base::series::{GAUSS_WIDTH, ROUND_SCALE, TOPHAT_R2};
use crate::base::vec3::Vec3;
use crate::base::vec3::{add, dot, norm, rotate_axis, scale, sub, unitize};
use crate::config::CrystalShape;
use crate::experiment::{Experiment, R_E_SQR};
use crate::scene::crystal_rotations;
use std::f64::consts::PI;

/// Result of tracing one pixel.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelTrace {
    /// The pixel's value (photons), as in the float image.
    pub value: f64,
    /// Human-readable trace lines.
    pub lines: Vec<String>,
}

fn sincg(x: f64, n: f64) -> f64 {
    if x == 0.0 {
        n
    } else {
        (x * n).sin() / x.sin()
    }
}

fn sinc3(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        3.0 * (x.sin() / x - x.cos()) / (x * x)
    }
}

fn polint(xa: [f64; 4], ya: [f64; 4], x: f64) -> f64 {
    (0..4)
        .map(|n| {
            let w: f64 = (0..4)
                .filter(|&m| m != n)
                .map(|m| (x - xa[m]) / (xa[n] - xa[m]))
                .product();
            w * ya[n]
        })
        .sum()
}

/// F of the unit cell at fractional (h, k, l), C's rules (tricubic when in range).
fn structure_factor(exp: &Experiment, hkl: [f64; 3]) -> f64 {
    let sf = &exp.structure_factors;
    let Some(g) = sf.grid.as_ref().filter(|g| g.entries > 0) else {
        return sf.default_f;
    };
    let min = [g.h_min, g.k_min, g.l_min];
    let max = [g.h_max, g.k_max, g.l_max];
    let in_tri = (0..3).all(|a| hkl[a] >= (min[a] + 2) as f64 && hkl[a] <= (max[a] - 2) as f64);
    if sf.interpolate && in_tri {
        let fl = hkl.map(|x| x.floor() as i32);
        let nodes = |a: usize| [fl[a] - 1, fl[a], fl[a] + 1, fl[a] + 2];
        let (hn, kn, ln) = (nodes(0), nodes(1), nodes(2));
        let as_f = |n: [i32; 4]| n.map(|v| v as f64);
        let mut rows = [0.0; 4];
        for (i, &h) in hn.iter().enumerate() {
            let mut cols = [0.0; 4];
            for (j, &k) in kn.iter().enumerate() {
                let ys = ln.map(|l| g.get(h, k, l).unwrap_or(sf.default_f));
                cols[j] = polint(as_f(ln), ys, hkl[2]);
            }
            rows[i] = polint(as_f(kn), cols, hkl[1]);
        }
        return polint(as_f(hn), rows, hkl[0]);
    }
    let h0 = hkl.map(|x| (x - 0.5).ceil() as i32);
    g.get(h0[0], h0[1], h0[2]).unwrap_or(sf.default_f)
}

fn lattice_factor(exp: &Experiment, hkl: [f64; 3]) -> f64 {
    let n = exp.n_cells;
    let frac = hkl.map(|x| x - (x - 0.5).ceil());
    let vol = n[0] * n[1] * n[2];
    match exp.shape {
        CrystalShape::Square => (0..3)
            .filter(|&a| n[a] > 1.0)
            .map(|a| sincg(PI * hkl[a], n[a]))
            .product(),
        CrystalShape::Round => {
            let r2: f64 = (0..3).map(|a| (frac[a] * n[a]).powi(2)).sum();
            vol * ROUND_SCALE * sinc3(PI * (r2 * exp.fudge).sqrt())
        }
        CrystalShape::Gauss | CrystalShape::Tophat => {
            let l = &exp.lattice;
            let d = add(
                add(scale(l.a_star, frac[0]), scale(l.b_star, frac[1])),
                scale(l.c_star, frac[2]),
            );
            let r2 = dot(d, d) * vol * vol;
            if exp.shape == CrystalShape::Gauss {
                vol * (-(r2 / GAUSS_WIDTH) * exp.fudge).exp()
            } else if r2 * exp.fudge < TOPHAT_R2 {
                vol
            } else {
                0.0
            }
        }
    }
}

fn kahn(k: f64, incident: Vec3, d: Vec3, p: Vec3) -> f64 {
    let c = dot(incident, d);
    let (c2, s2) = (c * c, 1.0 - c * c);
    let psi = if k != 0.0 {
        let b_in = unitize(crate::base::vec3::cross(p, incident)).0;
        let e_in = unitize(crate::base::vec3::cross(incident, b_in)).0;
        -dot(d, b_in).atan2(dot(d, e_in))
    } else {
        0.0
    };
    0.5 * (1.0 + c2 - k * (2.0 * psi).cos() * s2)
}

/// Trace pixel (fast, slow); `None` if it lies outside the detector.
pub fn trace_pixel(exp: &Experiment, fpixel: usize, spixel: usize) -> Option<PixelTrace> {
    let det = &exp.detector;
    if fpixel >= det.fpixels || spixel >= det.spixels {
        return None;
    }
    let mut lines = Vec::new();
    let os = exp.oversample;
    let sub_size = det.pixel_size / os as f64;
    let rots = crystal_rotations(exp);
    let lat = &exp.lattice;
    let mut intensity = exp.i_bg;
    let mut polar = if exp.nopolar { 1.0 } else { 0.0 };
    let mut omega = 0.0;
    let mut capture = 1.0;
    for t in 0..exp.sensor.layers {
        let odet = t as f64 * exp.sensor.step;
        capture = if exp.sensor.thickness == 0.0 { 1.0 } else { 0.0 };
        for ss in 0..os {
            for sf in 0..os {
                let fdet = sub_size * (fpixel * os + sf) as f64 + sub_size / 2.0;
                let sdet = sub_size * (spixel * os + ss) as f64 + sub_size / 2.0;
                let mut pos = add(
                    add(add(scale(det.fdet, fdet), scale(det.sdet, sdet)), scale(det.odet, odet)),
                    det.pix0,
                );
                if det.curved {
                    let v = rotate_axis(scale(det.beam, det.distance), det.sdet, pos[1] / det.distance);
                    pos = rotate_axis(v, det.fdet, pos[2] / det.distance);
                }
                let (d, airpath) = unitize(pos);
                if omega == 0.0 || exp.oversample_omega {
                    omega = if det.point_pixel {
                        1.0 / (airpath * airpath)
                    } else {
                        det.pixel_size * det.pixel_size / (airpath * airpath) * det.close_distance / airpath
                    };
                }
                if exp.sensor.thickness > 0.0 && (capture == 0.0 || exp.oversample_thick) {
                    let rho = dot(d, det.odet);
                    let depth = |n: f64| (-n * exp.sensor.step * exp.sensor.mu / rho).exp();
                    capture = depth(t as f64) - depth(t as f64 + 1.0);
                }
                let first = t == 0 && ss == 0 && sf == 0;
                if first {
                    lines.push(format!(
                        "pixel_pos_meters {:.15e} {:.15e} {:.15e}",
                        pos[0], pos[1], pos[2]
                    ));
                    lines.push(format!("R_distance_meters {airpath:.15e}"));
                    lines.push(format!("omega_pixel_sr {omega:.15e}"));
                    lines.push(format!("diffracted_vec {:.15e} {:.15e} {:.15e}", d[0], d[1], d[2]));
                }
                for (si, src) in exp.sources.iter().enumerate() {
                    let q = scale(sub(d, src.incident), 1.0 / src.lambda);
                    let stol = 0.5 * norm(q);
                    if exp.dmin > 0.0 && stol > 0.0 && exp.dmin > 0.5 / stol {
                        continue;
                    }
                    if !exp.nopolar && (polar == 0.0 || exp.oversample_polar) {
                        polar = kahn(exp.polarization, src.incident, d, det.polar);
                    }
                    for (ri, m) in rots.iter().enumerate() {
                        let abc = [lat.a, lat.b, lat.c].map(|v| crate::base::vec3::mat_vec(m, v));
                        let hkl = abc.map(|v| dot(v, q));
                        let f_latt = lattice_factor(exp, hkl);
                        if f_latt == 0.0 && exp.water_size == 0.0 {
                            continue;
                        }
                        let f_cell = structure_factor(exp, hkl);
                        intensity += f_cell * f_cell * f_latt * f_latt;
                        if exp.oversample_thick {
                            intensity *= capture;
                        }
                        if exp.oversample_polar {
                            intensity *= polar;
                        }
                        if exp.oversample_omega {
                            intensity *= omega;
                        }
                        if first && si == 0 && ri == 0 {
                            lines.push(format!(
                                "incident_vec {:.15e} {:.15e} {:.15e}",
                                src.incident[0], src.incident[1], src.incident[2]
                            ));
                            lines.push(format!("lambda_meters {:.15e}", src.lambda));
                            lines.push(format!(
                                "scattering_vec_A_inv {:.15e} {:.15e} {:.15e}",
                                q[0] * 1e-10,
                                q[1] * 1e-10,
                                q[2] * 1e-10
                            ));
                            lines.push(format!("stol {stol:.15e}"));
                            lines.push(format!("hkl_frac {:.15e} {:.15e} {:.15e}", hkl[0], hkl[1], hkl[2]));
                            let h0 = hkl.map(|x| (x - 0.5).ceil());
                            lines.push(format!("hkl_rounded {} {} {}", h0[0], h0[1], h0[2]));
                            lines.push(format!("F_latt {f_latt:.15e}"));
                            lines.push(format!("F_cell {f_cell:.15e}"));
                            lines.push(format!("polar {polar:.15e}"));
                        }
                    }
                }
            }
        }
    }
    let mut value = R_E_SQR * exp.fluence * intensity / exp.steps as f64;
    if !exp.oversample_thick {
        value *= capture;
    }
    if !exp.oversample_polar {
        value *= polar;
    }
    if !exp.oversample_omega {
        value *= omega;
    }
    lines.push(format!("capture_fraction {capture:.15e}"));
    lines.push(format!("steps {}", exp.steps));
    lines.push(format!("I_before_scaling {intensity:.15e}"));
    lines.push(format!("I_pixel_final {value:.15e}"));
    Some(PixelTrace { value, lines })
}
