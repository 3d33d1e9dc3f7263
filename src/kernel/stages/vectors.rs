//! Lab vectors in a kernel's registers, and the accumulators' vector slots.

use cubecl::prelude::*;

/// A lab vector (m, or unit).
#[derive(CubeType, Clone, Copy)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

#[cube]
pub(crate) fn load3(a: &Array<f32>, at: usize) -> Vec3 {
    Vec3 {
        x: a[at],
        y: a[at + 1],
        z: a[at + 2],
    }
}

#[cube]
pub(crate) fn dot(a: Vec3, b: Vec3) -> f32 {
    a.x * b.x + a.y * b.y + a.z * b.z
}

#[cube]
pub(crate) fn cross(a: Vec3, b: Vec3) -> Vec3 {
    Vec3 {
        x: a.y * b.z - a.z * b.y,
        y: a.z * b.x - a.x * b.z,
        z: a.x * b.y - a.y * b.x,
    }
}

#[cube]
pub(crate) fn scaled(a: Vec3, k: f32) -> Vec3 {
    Vec3 {
        x: a.x * k,
        y: a.y * k,
        z: a.z * k,
    }
}

#[cube]
pub(crate) fn sum3(a: Vec3, b: Vec3) -> Vec3 {
    Vec3 {
        x: a.x + b.x,
        y: a.y + b.y,
        z: a.z + b.z,
    }
}

/// v += g at `at..at + 3` of a thread's accumulators.
#[cube]
pub(crate) fn add3(acc: &mut Array<f32>, at: usize, g: Vec3) {
    acc[at] += g.x;
    acc[at + 1] += g.y;
    acc[at + 2] += g.z;
}
