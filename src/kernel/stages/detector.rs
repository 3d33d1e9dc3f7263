//! The detector (the tensor stages' `physics::detector`): a sample's position on the planar
//! or curved detector, its ray (air path and direction) and the solid angle ω, each with its
//! adjoint back to the detector frame (pix0, the rows f, s, o), the curved detector's axes and
//! distance, and close_distance.

use super::vectors::{add3, cross, dot, load3, scaled, sum3, Vec3};
use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use crate::kernel::trig::{sin_pi, PI_F32};
use cubecl::prelude::*;

/// P = Fdet·f + Sdet·s + Odet·o + pix0 (m), from the detector coordinates (m).
#[cube]
pub(crate) fn sample_position(params: &Array<f32>, fdet: f32, sdet: f32, odet: f32) -> Vec3 {
    let along = sum3(
        sum3(scaled(load3(params, FDET), fdet), scaled(load3(params, SDET), sdet)),
        scaled(load3(params, ODET), odet),
    );
    sum3(along, load3(params, PIX0))
}

/// The lab position of a sample (m): planar, or on the sphere of the curved detector.
#[cube]
pub(crate) fn lab_position(params: &Array<f32>, fdet: f32, sdet: f32, odet: f32, #[comptime] curved: bool) -> Vec3 {
    let planar = sample_position(params, fdet, sdet, odet);
    if curved {
        curved_position(params, planar)
    } else {
        planar
    }
}

/// v rotated by θ (rad) about the unit axis k: v cos θ + (k × v) sin θ + k (k·v)(1 − cos θ),
/// with 1 − cos θ = 2 sin²(θ/2).
#[cube]
pub(crate) fn rotate_about(v: Vec3, k: Vec3, theta: f32) -> Vec3 {
    let half = theta / PI_F32;
    let s = sin_pi(half);
    let h = sin_pi(half * 0.5);
    let one_minus_cos = 2.0 * h * h;
    let cos = 1.0 - one_minus_cos;
    sum3(
        sum3(scaled(v, cos), scaled(cross(k, v), s)),
        scaled(k, dot(k, v) * one_minus_cos),
    )
}

/// The spherical detector's position (`-curved_det`): distance·b rotated about s by P_y/distance,
/// then about f by P_z/distance (m).
#[cube]
fn curved_position(params: &Array<f32>, planar: Vec3) -> Vec3 {
    let distance = params[DISTANCE];
    let v = scaled(load3(params, BEAM), distance);
    let v = rotate_about(v, load3(params, SDET), planar.y / distance);
    rotate_about(v, load3(params, FDET), planar.z / distance)
}

/// The detector coordinates (m) of sample (t, sub_s, sub_f) of a pixel: along f, s, o.
#[cube]
pub fn detector_coordinates(
    params: &Array<f32>,
    slow: i32,
    fast: i32,
    os: i32,
    t: i32,
    sub_s: i32,
    sub_f: i32,
) -> Vec3 {
    let subpixel = params[SUBPIXEL];
    Vec3 {
        x: subpixel * (fast * os + sub_f) as f32 + subpixel * 0.5,
        y: subpixel * (slow * os + sub_s) as f32 + subpixel * 0.5,
        z: t as f32 * params[LAYER_STEP],
    }
}

/// The adjoint of [`sample_position`]: P = f·F + s·S + o·O + pix0 pushes ∂L/∂P to the
/// detector frame (rows F, S, O and pix0).
#[cube]
pub fn sample_position_adjoint(acc: &mut Array<f32>, coords: Vec3, g_pos: Vec3) {
    add3(acc, G_FDET, scaled(g_pos, coords.x));
    add3(acc, G_SDET, scaled(g_pos, coords.y));
    add3(acc, G_ODET, scaled(g_pos, coords.z));
    add3(acc, G_PIX0, g_pos);
}

/// The adjoint of [`rotate_about`], R = v cos θ + (k × v) sin θ + k (k·v)(1 − cos θ), for
/// the cotangent g of R: ∂L/∂v, ∂L/∂k and ∂L/∂θ.
#[derive(CubeType, Clone, Copy)]
pub struct RotationAdjoint {
    pub g_v: Vec3,
    pub g_k: Vec3,
    pub g_theta: f32,
}

#[cube]
pub fn rotate_about_adjoint(v: Vec3, k: Vec3, theta: f32, g: Vec3) -> RotationAdjoint {
    let half = theta / PI_F32;
    let s = sin_pi(half);
    let h = sin_pi(half * 0.5);
    let one_minus_cos = 2.0 * h * h;
    let cos = 1.0 - one_minus_cos;
    let kg = dot(k, g);
    let kv = dot(k, v);
    RotationAdjoint {
        // g cos θ + (g × k) sin θ + k (k·g)(1 − cos θ)
        g_v: sum3(
            sum3(scaled(g, cos), scaled(cross(g, k), s)),
            scaled(k, kg * one_minus_cos),
        ),
        // (v × g) sin θ + ((k·g) v + (k·v) g)(1 − cos θ)
        g_k: sum3(
            scaled(cross(v, g), s),
            scaled(sum3(scaled(v, kg), scaled(g, kv)), one_minus_cos),
        ),
        g_theta: -s * dot(v, g) + cos * dot(cross(k, v), g) + s * kv * kg,
    }
}

/// The adjoint of [`curved_position`] at the planar position `planar` (m) for the
/// cotangent `g` of the curved one: the rotation axes (rows f and s as the curved detector
/// reads them) and the distance into `acc`; returns ∂L/∂planar (only its y and z move the
/// curved position).
#[cube]
pub fn curved_position_adjoint(params: &Array<f32>, acc: &mut Array<f32>, planar: Vec3, g: Vec3) -> Vec3 {
    let distance = params[DISTANCE];
    let beam = load3(params, BEAM);
    let fdet = load3(params, FDET);
    let sdet = load3(params, SDET);
    let start = scaled(beam, distance);
    let about_s = planar.y / distance;
    let about_f = planar.z / distance;
    let middle = rotate_about(start, sdet, about_s);
    let second = rotate_about_adjoint(middle, fdet, about_f, g);
    let first = rotate_about_adjoint(start, sdet, about_s, second.g_v);
    add3(acc, G_CURVED_FDET, second.g_k);
    add3(acc, G_CURVED_SDET, first.g_k);
    acc[G_DISTANCE] += dot(beam, first.g_v) - (first.g_theta * about_s + second.g_theta * about_f) / distance;
    Vec3 {
        x: 0.0,
        y: first.g_theta / distance,
        z: second.g_theta / distance,
    }
}

/// The adjoint of [`lab_position`] at detector coordinates `coords` (m) for the cotangent
/// `g_pos` of the lab position: the detector frame and, on the curved detector, its axes and
/// distance.
#[cube]
fn lab_position_adjoint(
    params: &Array<f32>,
    acc: &mut Array<f32>,
    coords: Vec3,
    g_pos: Vec3,
    #[comptime] curved: bool,
) {
    if curved {
        let planar = sample_position(params, coords.x, coords.y, coords.z);
        let g_planar = curved_position_adjoint(params, acc, planar, g_pos);
        sample_position_adjoint(acc, coords, g_planar);
    } else {
        sample_position_adjoint(acc, coords, g_pos);
    }
}

/// The adjoint of d = P/|P| (unit, `r` = |P| in m): ∂L/∂P = (g − d·(d·g))/r.
#[cube]
pub fn direction_adjoint(d: Vec3, r: f32, g_d: Vec3) -> Vec3 {
    let along = dot(d, g_d);
    scaled(
        Vec3 {
            x: g_d.x - d.x * along,
            y: g_d.y - d.y * along,
            z: g_d.z - d.z * along,
        },
        1.0 / r,
    )
}

/// A sample's lab position (m), its air path r (m) and direction d.
#[derive(CubeType, Clone, Copy)]
pub struct Ray {
    pub coords: Vec3,
    pub d: Vec3,
    pub r: f32,
}

#[allow(clippy::too_many_arguments)]
#[cube]
pub(crate) fn ray(
    params: &Array<f32>,
    slow: i32,
    fast: i32,
    os: i32,
    t: i32,
    sub_s: i32,
    sub_f: i32,
    #[comptime] curved: bool,
) -> Ray {
    let coords = detector_coordinates(params, slow, fast, os, t, sub_s, sub_f);
    ray_at(params, coords, curved)
}

/// The ray of the sample at detector coordinates `coords` (Fdet, Sdet, Odet) (m).
#[cube]
pub(crate) fn ray_at(params: &Array<f32>, coords: Vec3, #[comptime] curved: bool) -> Ray {
    let pos = lab_position(params, coords.x, coords.y, coords.z, curved);
    let r = dot(pos, pos).sqrt();
    Ray {
        coords,
        d: scaled(pos, 1.0 / r),
        r,
    }
}

/// C's flat sample index (layer·os + sub-pixel row)·os + sub-pixel column, as its parts.
#[derive(CubeType, Clone, Copy)]
pub struct SampleIndex {
    pub layer: i32,
    pub row: i32,
    pub column: i32,
}

#[cube]
impl SampleIndex {
    /// The parts of flat index `q` with `os` sub-pixels a side.
    pub fn of(q: i32, os: i32) -> SampleIndex {
        SampleIndex {
            layer: q / (os * os),
            row: (q / os) % os,
            column: q % os,
        }
    }

    /// The next sample in C's order.
    pub fn advance(&mut self, os: i32) {
        self.column += 1;
        if self.column == os {
            self.column = 0;
            self.row += 1;
        }
        if self.row == os {
            self.row = 0;
            self.layer += 1;
        }
    }
}

/// The ray of C's flat sample index `q` = (layer·os + sub-pixel row)·os + sub-pixel column.
#[cube]
pub(crate) fn sample_ray(params: &Array<f32>, slow: i32, fast: i32, os: i32, q: i32, #[comptime] curved: bool) -> Ray {
    let at = SampleIndex::of(q, os);
    ray(params, slow, fast, os, at.layer, at.row, at.column, curved)
}

/// A change ∂L/∂d of a sample's direction, pushed back to the detector.
#[cube]
pub(crate) fn push_direction(params: &Array<f32>, acc: &mut Array<f32>, ray: Ray, g_d: Vec3, #[comptime] curved: bool) {
    lab_position_adjoint(params, acc, ray.coords, direction_adjoint(ray.d, ray.r, g_d), curved);
}

/// ω (sr) at air path `r` (m): pixel²/r²·close_distance/r, or 1/r² for a point pixel.
#[cube]
pub(crate) fn solid_angle(params: &Array<f32>, r: f32, #[comptime] point_pixel: bool) -> f32 {
    let mut omega = 1.0 / (r * r);
    if !point_pixel {
        omega = params[PIXEL_AREA] * params[CLOSE_DISTANCE] / (r * r * r);
    }
    omega
}

/// The adjoint of [`solid_angle`] at `ray` for cotangent `g` of ω: close_distance and
/// the position.
#[cube]
pub fn solid_angle_adjoint(params: &Array<f32>, acc: &mut Array<f32>, ray: Ray, g: f32, #[comptime] sw: Switches) {
    let r = ray.r;
    let mut g_r = -2.0 * g / (r * r * r);
    if !sw.point_pixel {
        let area_over_r3 = params[PIXEL_AREA] / (r * r * r);
        acc[G_CLOSE_DISTANCE] += g * area_over_r3;
        g_r = -3.0 * g * area_over_r3 * params[CLOSE_DISTANCE] / r;
    }
    // ∂r/∂P = d
    lab_position_adjoint(params, acc, ray.coords, scaled(ray.d, g_r), sw.curved);
}

#[cfg(test)]
mod tests {
    //! The kernel's detector on the wgpu device (llvmpipe without a GPU) against the tensor
    //! stage `physics::detector` in f64 and burn-autodiff of it, on a detector tilted about all
    //! three lab axes with pix0 about 0.1 m out: the lab positions (planar and curved) and the
    //! solid angle (area pixel and point pixel) at detector coordinates spread over 60 mm × 60 mm
    //! and five sensor layers, and the adjoints of ω and of a direction's cotangent back to the
    //! detector frame, the curved detector's axes and distance, and close_distance.
    use super::*;
    use crate::base::vec3::rotate_xyz;
    use crate::diff::testing::{dev, host, uniform, Ad, B};
    use crate::kernel::adjoint::zero;
    use crate::kernel::testing::{launch_with_params, store_globals};
    use crate::physics::detector as stage;
    use burn::backend::ndarray::NdArrayDevice;
    use burn::tensor::{backend::Backend, Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;

    /// The pixel size (m): 2⁻¹³, so that pixel² is exact in f32.
    const PIXEL: f64 = 1.0 / 8192.0;
    /// The cotangent w of the direction d in the direction test, L = d·w (unit-free).
    const DIRECTION_COTANGENT: [f64; 3] = [0.3, -0.5, 0.8];
    /// Numbers the forward test kernel writes a sample: the lab position (m), then ω (sr).
    const FORWARD: usize = 4;

    /// `x` rounded to f32: every number the kernel reads, so that the f64 reference sees it.
    fn rounded(x: f64) -> f64 {
        f64::from(x as f32)
    }

    /// The test's detector, in f32 values.
    struct Detector {
        /// Rows f, s, o (unit, orthonormal to f32 rounding, none along a lab axis).
        basis: [[f64; 3]; 3],
        /// pix0 (m): 0.1 m along o, the frame's origin 30 mm back along f and s.
        pix0: [f64; 3],
        /// The beam direction (unit).
        beam: [f64; 3],
        /// The curved detector's distance (m).
        distance: f64,
        /// close_distance (m).
        close: f64,
    }

    /// MOSFLM's frame (f = z, s = −y, o = x along the beam) turned by 0.1, −0.15 and 0.2 rad.
    fn detector() -> Detector {
        let frame = [[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]];
        let basis = frame.map(|v| rotate_xyz(v, 0.1, -0.15, 0.2).map(rounded));
        let pix0 = [0, 1, 2].map(|k| rounded(0.1 * basis[2][k] - 0.03 * basis[0][k] - 0.03 * basis[1][k]));
        Detector {
            basis,
            pix0,
            beam: [1.0, 0.0, 0.0],
            distance: rounded(0.1),
            close: rounded(0.1),
        }
    }

    impl Detector {
        /// The kernel's `params`: the frame, pixel², the beam and both distances, then `extra`
        /// from [`PARAMS`].
        fn params(&self, extra: [f64; 3]) -> Vec<f32> {
            let mut p = vec![0.0f32; PARAMS + 3];
            for k in 0..3 {
                p[PIX0 + k] = self.pix0[k] as f32;
                p[FDET + k] = self.basis[0][k] as f32;
                p[SDET + k] = self.basis[1][k] as f32;
                p[ODET + k] = self.basis[2][k] as f32;
                p[BEAM + k] = self.beam[k] as f32;
                p[PARAMS + k] = extra[k] as f32;
            }
            p[CLOSE_DISTANCE] = self.close as f32;
            p[PIXEL_AREA] = (PIXEL * PIXEL) as f32;
            p[DISTANCE] = self.distance as f32;
            p
        }
    }

    /// `n` detector coordinates (Fdet, Sdet, Odet) (m): pix0 itself, the beam centre and the far
    /// corner of the last layer, then Fdet and Sdet uniform over [0, 60 mm) and Odet one of five
    /// layers 25 µm apart (f32 values).
    fn coordinates(n: usize) -> Vec<[f64; 3]> {
        let along = uniform(2 * n, 0.0, 0.06, 7);
        let layers = uniform(n, 0.0, 5.0, 11);
        let fixed = [[0.0, 0.0, 0.0], [0.03, 0.03, 0.0], [0.06, 0.06, 1e-4]];
        let spread = (0..n).map(|i| [along[2 * i], along[2 * i + 1], layers[i].floor() * 2.5e-5]);
        fixed
            .into_iter()
            .chain(spread)
            .take(n)
            .map(|c| c.map(rounded))
            .collect()
    }

    /// Each sample's lab position and solid angle ([`FORWARD`] numbers) from its detector
    /// coordinates in `input` (3 a sample).
    #[cube(launch)]
    fn positions_of_samples(
        params: &Array<f32>,
        input: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] curved: bool,
        #[comptime] point_pixel: bool,
    ) {
        let i = ABSOLUTE_POS;
        if (i + 1) * FORWARD <= output.len() {
            let c = load3(input, 3 * i);
            let pos = lab_position(params, c.x, c.y, c.z, curved);
            output[FORWARD * i] = pos.x;
            output[FORWARD * i + 1] = pos.y;
            output[FORWARD * i + 2] = pos.z;
            output[FORWARD * i + 3] = solid_angle(params, dot(pos, pos).sqrt(), point_pixel);
        }
    }

    /// Each sample's adjoint for cotangent 1 of ω (`direction` false) or of d·w (`direction`
    /// true, w at [`PARAMS`]), into its own [`G_GLOBALS`] accumulators.
    #[cube(launch)]
    fn adjoints_of_samples(
        params: &Array<f32>,
        input: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] sw: Switches,
        #[comptime] direction: bool,
    ) {
        let i = ABSOLUTE_POS;
        if (i + 1) * G_GLOBALS <= output.len() {
            let mut acc = Array::<f32>::new(G_GLOBALS);
            zero(&mut acc, G_GLOBALS);
            let ray = ray_at(params, load3(input, 3 * i), sw.curved);
            if direction {
                push_direction(params, &mut acc, ray, load3(params, PARAMS), sw.curved);
            } else {
                solid_angle_adjoint(params, &mut acc, ray, 1.0, sw);
            }
            store_globals(&acc, output, i);
        }
    }

    /// The detector as the tensor stage takes it, each part its own leaf: the basis `[3, 3]`
    /// (rows f, s, o), pix0 and the beam `[1, 3]`, the curved detector's rotation axes f and s
    /// `[1, 3]` (apart from the basis, as the kernel keeps their gradients apart), its distance
    /// and close_distance `[1, 1]` (m).
    struct Frame<K: Backend> {
        basis: Tensor<K, 2>,
        pix0: Tensor<K, 2>,
        beam: Tensor<K, 2>,
        fdet_axis: Tensor<K, 2>,
        sdet_axis: Tensor<K, 2>,
        distance: Tensor<K, 2>,
        close: Tensor<K, 2>,
    }

    fn tensor<K: Backend<Device = NdArrayDevice>>(v: Vec<f64>, shape: [usize; 2]) -> Tensor<K, 2> {
        Tensor::from_data(TensorData::new(v, shape), &dev())
    }

    impl<K: Backend<Device = NdArrayDevice>> Frame<K> {
        /// The leaves of `det`, all but the beam (which has no slot) keeping their gradients
        /// under autodiff.
        fn new(det: &Detector) -> Self {
            let leaf = |v: Vec<f64>, shape| tensor::<K>(v, shape).require_grad();
            let row = |v: [f64; 3]| leaf(v.to_vec(), [1, 3]);
            Self {
                basis: leaf(det.basis.concat(), [3, 3]),
                pix0: row(det.pix0),
                beam: tensor(det.beam.to_vec(), [1, 3]),
                fdet_axis: row(det.basis[0]),
                sdet_axis: row(det.basis[1]),
                distance: leaf(vec![det.distance], [1, 1]),
                close: leaf(vec![det.close], [1, 1]),
            }
        }

        /// Lab positions `[R, 3]` (m) at detector coordinates `coords` `[R, 3]` (m).
        fn positions(&self, coords: Tensor<K, 2>, curved: bool) -> Tensor<K, 2> {
            let planar = stage::pixel_positions(coords, self.basis.clone(), self.pix0.clone()).rows();
            if !curved {
                return planar;
            }
            let (f, s) = (self.fdet_axis.clone(), self.sdet_axis.clone());
            stage::curved_positions(planar, self.beam.clone(), f, s, self.distance.clone())
        }
    }

    /// The kernel's input: the detector coordinates, 3 a sample.
    fn flat(coords: &[[f64; 3]]) -> Vec<f32> {
        coords.iter().flatten().map(|&x| x as f32).collect()
    }

    /// Lab positions `[R·3]` (m) and ω `[R]` (sr) at `coords` by the tensor stage in f64.
    fn reference_forward(det: &Detector, coords: &[[f64; 3]], curved: bool, point_pixel: bool) -> (Vec<f64>, Vec<f64>) {
        let frame = Frame::<B>::new(det);
        let positions = frame.positions(tensor(coords.concat(), [coords.len(), 3]), curved);
        let (_, airpath) = stage::diffracted_directions(positions.clone());
        let omega = stage::solid_angle(airpath, PIXEL, frame.close.clone(), point_pixel);
        (host(positions), host(omega))
    }

    /// The forward kernel's lab positions (m) and solid angles (sr) against the tensor stage in
    /// f64, on the planar and the curved detector, with an area pixel and a point pixel.
    #[test]
    fn positions_and_solid_angle_match_the_tensor_stage() {
        let det = detector();
        let coords = coordinates(500);
        let n = coords.len();
        for curved in [false, true] {
            for point_pixel in [false, true] {
                let Some(got) = launch_with_params(
                    &det.params([0.0; 3]),
                    &flat(&coords),
                    FORWARD * n,
                    n,
                    |c, count, dim, p, i, o| {
                        positions_of_samples::launch::<WgpuRuntime>(c, count, dim, p, i, o, curved, point_pixel)
                    },
                ) else {
                    return;
                };
                let (positions, omega) = reference_forward(&det, &coords, curved, point_pixel);
                let (mut worst_p, mut worst_omega) = (0.0f64, 0.0f64);
                for (i, got) in got.chunks(FORWARD).enumerate() {
                    let case = format!("curved {curved}, point pixel {point_pixel}, sample {i}");
                    for a in 0..3 {
                        let (g, w) = (f64::from(got[a]), positions[3 * i + a]);
                        // |P| ≈ 0.1 m: a few f32 roundings (6e-9 m each), and on the curved
                        // detector the two rotations' sines (a few ulp); 1.6e-8 m seen
                        assert!((g - w).abs() <= 5e-8, "{case}: P[{a}] {g} vs {w}");
                        worst_p = worst_p.max((g - w).abs());
                    }
                    let (g, w) = (f64::from(got[3]), omega[i]);
                    // r carries the positions' roundings (2e-7 relative), ω = pixel²·c/r³ thrice;
                    // 5e-7 seen
                    assert!((g - w).abs() <= 1.5e-6 * w, "{case}: ω {g} vs {w}");
                    worst_omega = worst_omega.max((g - w).abs() / w);
                }
                eprintln!(
                    "curved {curved}, point pixel {point_pixel}: worst |ΔP| {worst_p:.2e} m, ω {worst_omega:.2e}"
                );
            }
        }
    }

    /// What a sample's adjoint accumulators should hold, by burn-autodiff of the tensor stage.
    struct Reference {
        /// The gradients `[G_GLOBALS]`, each leaf's at its slot, 0 elsewhere.
        acc: Vec<f64>,
        /// The slots whose leaf the loss reaches (the others must stay 0).
        reached: Vec<bool>,
        /// The loss's value, and the sample's air path r (m).
        value: f64,
        r: f64,
    }

    /// [`Reference`] for the scalar `loss`(d `[1, 3]`, r `[1, 1]`, close_distance `[1, 1]`) of
    /// the sample at detector coordinates `coords` (m), through the tensor stage in f64.
    fn reference_gradients(
        det: &Detector,
        coords: [f64; 3],
        curved: bool,
        loss: &dyn Fn(Tensor<Ad, 2>, Tensor<Ad, 2>, Tensor<Ad, 2>) -> Tensor<Ad, 2>,
    ) -> Reference {
        let f = Frame::<Ad>::new(det);
        let (d, r) = stage::diffracted_directions(f.positions(tensor(coords.to_vec(), [1, 3]), curved));
        let value = loss(d.rows(), r.clone(), f.close.clone());
        let grads = value.clone().sum().backward();
        let (mut acc, mut reached) = (vec![0.0; G_GLOBALS], vec![false; G_GLOBALS]);
        let leaves = [
            (G_PIX0, &f.pix0),
            (G_FDET, &f.basis),
            (G_CURVED_FDET, &f.fdet_axis),
            (G_CURVED_SDET, &f.sdet_axis),
            (G_DISTANCE, &f.distance),
            (G_CLOSE_DISTANCE, &f.close),
        ];
        for (slot, leaf) in leaves {
            if let Some(g) = leaf.grad(&grads) {
                let g = host(g);
                acc[slot..slot + g.len()].copy_from_slice(&g);
                reached[slot..slot + g.len()].fill(true);
            }
        }
        Reference {
            acc,
            reached,
            value: host(value.inner())[0],
            r: host(r.inner())[0],
        }
    }

    /// The accumulators' groups at a sample with detector coordinates `coords` (m) and air path
    /// `r` (m): name, first slot, width, and the length (m, or 1) by which a cotangent of the
    /// lab position reaches them (f, s, o by the coordinates, the rotation axes by the rotated
    /// vector's length, the distance by 1 plus the rotation angles, close_distance by r/c).
    fn slot_groups(det: &Detector, coords: [f64; 3], r: f64) -> [(&'static str, usize, usize, f64); 8] {
        [
            ("pix0", G_PIX0, 3, 1.0),
            ("f", G_FDET, 3, coords[0].abs()),
            ("s", G_SDET, 3, coords[1].abs()),
            ("o", G_ODET, 3, coords[2].abs()),
            ("close_distance", G_CLOSE_DISTANCE, 1, r / det.close),
            ("curved f", G_CURVED_FDET, 3, det.distance),
            ("curved s", G_CURVED_SDET, 3, det.distance),
            ("distance", G_DISTANCE, 1, 2.0),
        ]
    }

    /// The adjoint's bound relative to a group's scale |want| + s·L (see [`compare_accumulators`]):
    /// the kernel's f32 chain (r³, the normalisation, two rotations and their adjoints) rounds
    /// some dozen times at 6e-8 relative each (2.2e-7 of the scale seen); an error of 2e-6 in
    /// any partial fails.
    const ADJOINT_TOL: f64 = 2e-6;

    /// A sample's accumulators `got` against `want`: each of `groups` (see [`slot_groups`])
    /// within [`ADJOINT_TOL`]·(|want group| + s·L), s the size of ∂L/∂P; every other slot 0.
    /// Returns the worst error relative to its scale.
    fn compare_accumulators(
        case: &str,
        got: &[f32],
        want: &[f64],
        groups: &[(&str, usize, usize, f64)],
        s: f64,
    ) -> f64 {
        let (mut worst, mut checked) = (0.0f64, [false; G_GLOBALS]);
        for &(name, slot, width, length) in groups {
            let range = slot..slot + width;
            let scale = want[range.clone()].iter().map(|w| w * w).sum::<f64>().sqrt() + s * length;
            for q in range {
                checked[q] = true;
                let err = (f64::from(got[q]) - want[q]).abs();
                assert!(
                    err <= ADJOINT_TOL * scale,
                    "{case}: ∂L/∂{name}[{}] {} vs {} (scale {scale:.3e})",
                    q - slot,
                    got[q],
                    want[q]
                );
                if scale > 0.0 {
                    worst = worst.max(err / scale);
                }
            }
        }
        for (q, &g) in got.iter().enumerate().filter(|&(q, _)| !checked[q]) {
            assert_eq!(g, 0.0, "{case}: slot {q}, which the loss does not reach, holds {g}");
        }
        worst
    }

    /// The adjoint test kernel under `sw` (of ω, or of d·w when `direction`) against
    /// [`reference_gradients`], sample by sample.
    fn check_adjoint(sw: Switches, direction: bool) {
        let det = detector();
        let coords = coordinates(100);
        let n = coords.len();
        let params = det.params(DIRECTION_COTANGENT);
        let Some(got) = launch_with_params(&params, &flat(&coords), G_GLOBALS * n, n, |c, count, dim, p, i, o| {
            adjoints_of_samples::launch::<WgpuRuntime>(c, count, dim, p, i, o, sw, direction)
        }) else {
            return;
        };
        let w = tensor::<Ad>(DIRECTION_COTANGENT.to_vec(), [3, 1]);
        let loss = |d: Tensor<Ad, 2>, r, close| {
            if direction {
                d.matmul(w.clone())
            } else {
                stage::solid_angle(r, PIXEL, close, sw.point_pixel)
            }
        };
        let of = if direction { "d·w" } else { "ω" };
        let case = format!("{of}, curved {}, point pixel {}", sw.curved, sw.point_pixel);
        let mut worst = 0.0f64;
        for (i, (acc, &c)) in got.chunks(G_GLOBALS).zip(&coords).enumerate() {
            let want = reference_gradients(&det, c, sw.curved, &loss);
            // the size of ∂L/∂P: |w|/r for d·w, ω's slope in r (3ω/r, 2ω/r for a point pixel)
            let s = match (direction, sw.point_pixel) {
                (true, _) => DIRECTION_COTANGENT.iter().map(|x| x * x).sum::<f64>().sqrt() / want.r,
                (false, true) => 2.0 * want.value / want.r,
                (false, false) => 3.0 * want.value / want.r,
            };
            let groups: Vec<_> = slot_groups(&det, c, want.r)
                .into_iter()
                .filter(|g| want.reached[g.1])
                .collect();
            let sample = format!("{case}, sample {i} at {c:?}");
            worst = worst.max(compare_accumulators(&sample, acc, &want.acc, &groups, s));
        }
        eprintln!("{case}: worst error {worst:.2e} of its scale");
    }

    fn switches(curved: bool, point_pixel: bool) -> Switches {
        Switches {
            curved,
            point_pixel,
            ..crate::kernel::native::pixel::tests_support::switches()
        }
    }

    /// ω's adjoint against burn-autodiff of the tensor stage: pix0, the rows f, s, o and
    /// close_distance; on the curved detector its axes and distance (there |P| is the distance
    /// whatever the rotation angles, so the planar frame's gradients are f32 noise around 0).
    #[test]
    fn solid_angle_adjoint_matches_autodiff_of_the_tensor_stage() {
        for curved in [false, true] {
            for point_pixel in [false, true] {
                check_adjoint(switches(curved, point_pixel), false);
            }
        }
    }

    /// A direction's cotangent pushed back to the detector (`push_direction`, as the
    /// polarization and the capture fraction push theirs) against burn-autodiff of d·w: on the
    /// curved detector it moves the rotation angles, which ω's radial cotangent leaves alone.
    #[test]
    fn direction_adjoint_matches_autodiff_of_the_tensor_stage() {
        for curved in [false, true] {
            check_adjoint(switches(curved, false), true);
        }
    }
}
