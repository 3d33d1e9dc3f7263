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
