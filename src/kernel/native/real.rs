//! The precision the native loop computes in: f64 (the CPU engine's default, C's `double`)
//! or f32.

use crate::base::series::{COS_TAYLOR, SIN_TAYLOR};
use crate::physics::amorphous::StolLanes;
use std::f64::consts::PI;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub};

/// A float the native loop computes in: the arithmetic it uses, and sines of arguments in
/// half-turns (x = π·t).
///
/// f64 takes the platform's `sin`/`cos` of π·t, as C's libm gives them. f32 evaluates them in
/// f64 and rounds once: the CPU has exact f64 sines at little cost, so f32 needs none of the
/// polynomial reductions of the GPU kernel (`kernel::trig`).
pub trait Real:
    Copy
    + Default
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + MulAssign
    + StolLanes
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// `v` rounded to this precision.
    fn of(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn ceil(self) -> Self;
    fn floor(self) -> Self;
    fn abs(self) -> Self;
    /// sin(π·t).
    fn sin_pi(self) -> Self;
    /// cos(π·t).
    fn cos_pi(self) -> Self;
    /// The integer part as `i32`, saturating (NaN: 0).
    fn to_i32(self) -> i32;
    /// cos(π·t) for |t| ≤ ½, by [`cos_pi_small`] in f64.
    fn cos_pi_small(self) -> Self;
}

/// cos(π·t) for |t| ≤ ½ (x = π·t ∈ [−π/2, π/2]): its Taylor polynomial to x²², whose
/// truncation error (below 1e-19) is under half an ulp of f64, so the result is within a few
/// ulp of libm's cosine at a fraction of its cost (no argument reduction, no branches).
#[inline(always)]
pub fn cos_pi_small(t: f64) -> f64 {
    let x = t * PI;
    let x2 = x * x;
    // (−1)^j/(2j)! for j = 1..=11
    taylor_tail(&COS_TAYLOR, x2) * x2 + COS_TAYLOR[0]
}

/// Σ_{j=1}^{11} c_j·y^(j−1) for a Taylor table `c` ([`SIN_TAYLOR`], [`COS_TAYLOR`]) at y = x².
///
/// The small terms, from c₄ up, by Estrin's scheme (independent products in pairs, then
/// combined by y² and y⁴); c₃, c₂ and c₁, which decide the sum's rounding, by Horner's rule.
/// Its chain of dependent operations is about half Horner's rule all the way (the loops wait
/// on it), and it is as accurate: within 2·ε of libm's cosine and 4 ulp of its sine on
/// [−π/2, π/2] (tested below), as Horner's rule was.
#[inline(always)]
pub fn taylor_tail(c: &[f64; 12], y: f64) -> f64 {
    let y2 = y * y;
    let y4 = y2 * y2;
    let p4 = c[4] + c[5] * y;
    let p6 = c[6] + c[7] * y;
    let p8 = c[8] + c[9] * y;
    let p10 = c[10] + c[11] * y;
    let q4 = p4 + p6 * y2;
    let q8 = p8 + p10 * y2;
    let high = q4 + q8 * y4;
    ((high * y + c[3]) * y + c[2]) * y + c[1]
}

/// sin(π·t) for |t| ≤ ½ (x = π·t ∈ [−π/2, π/2]): its Taylor polynomial to x²³ (truncation
/// error below 1e-20), within a few ulp of libm's sine, as [`cos_pi_small`].
#[inline(always)]
pub fn sin_pi_small(t: f64) -> f64 {
    let x = t * PI;
    let x2 = x * x;
    // (−1)^j/(2j+1)! for j = 1..=11
    x + x * x2 * taylor_tail(&SIN_TAYLOR, x2)
}

/// Whether `x` is a whole number (through an integer conversion, no libm call).
#[inline]
pub fn is_whole(x: f64) -> bool {
    x.abs() < 9.0e15 && x == x as i64 as f64
}

/// x rounded to a whole number (to nearest, ties to even) where |x| is below `exact`, the
/// type's last fraction bit: x ± exact (the sign of x) has no fraction bits left, so the add
/// rounds x and the subtraction takes exact back off, both exactly. Above it every float is
/// whole, and infinities and NaN pass through.
macro_rules! nearest_whole {
    ($x:expr, $exact:expr) => {{
        let x = $x;
        let shift = <Self>::copysign($exact, x);
        if x.abs() < $exact {
            (x + shift) - shift
        } else {
            x
        }
    }};
}

macro_rules! real {
    ($t:ty, $sin_pi:expr, $cos_pi:expr, $exact:expr) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            /// ⌈x⌉ without a rounding instruction or a conversion: `nearest_whole!`, raised by
            /// one where it lies below x. x86-64's baseline (SSE2) has no rounding instruction,
            /// and without AVX-512DQ no vector conversion to a 64-bit integer: these adds,
            /// compares and selects stay in the callers' vector registers. Equal to `ceil`
            /// except for the sign of a zero result.
            #[inline(always)]
            fn ceil(self) -> Self {
                let r = nearest_whole!(self, $exact);
                if r < self {
                    r + 1.0
                } else {
                    r
                }
            }
            /// ⌊x⌋, as [`Real::ceil`].
            #[inline(always)]
            fn floor(self) -> Self {
                let r = nearest_whole!(self, $exact);
                if r > self {
                    r - 1.0
                } else {
                    r
                }
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sin_pi(self) -> Self {
                let f: fn($t) -> $t = $sin_pi;
                f(self)
            }
            #[inline(always)]
            fn cos_pi(self) -> Self {
                let f: fn($t) -> $t = $cos_pi;
                f(self)
            }
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn cos_pi_small(self) -> Self {
                cos_pi_small(self as f64) as $t
            }
        }
    };
}

// the fraction bits: every float of magnitude 2⁵² (f64) or 2²³ (f32) and above is whole
real!(f64, |t| (t * PI).sin(), |t| (t * PI).cos(), 4_503_599_627_370_496.0);
real!(
    f32,
    |t| (f64::from(t) * PI).sin() as f32,
    |t| (f64::from(t) * PI).cos() as f32,
    8_388_608.0
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The f32 sines are the f64 ones rounded once, far from the origin too (the platform's
    /// f32 sine of π·t would carry π·t's rounding).
    #[test]
    fn f32_sines_round_the_f64_sines() {
        for t in [1e-30f32, 0.1, 0.5, 0.75, 1.0, 123.456, -4095.7] {
            assert_eq!(t.sin_pi(), (f64::from(t) * PI).sin() as f32);
            assert_eq!(t.cos_pi(), (f64::from(t) * PI).cos() as f32);
        }
        assert!((0.5f64.sin_pi() - 1.0).abs() < 1e-16);
    }

    /// floor and ceil without a rounding instruction equal libm's (but for the sign of a zero) on both
    /// sides of every boundary: halves, whole numbers, tiny and huge magnitudes, the last
    /// fraction bit, infinities and NaN.
    #[test]
    fn integer_floor_and_ceil_are_libm_s() {
        fn check<F: Real + std::fmt::Debug>(x: F, floor: F, ceil: F) {
            let same = |a: F, b: F| a == b || (a != a && b != b);
            assert!(same(Real::floor(x), floor), "floor {x:?}");
            assert!(same(Real::ceil(x), ceil), "ceil {x:?}");
        }
        let mut xs = vec![0.0, -0.0, 0.5, -0.5, 1e-300, -1e-300, 7.0, -7.0, 1e300, -1e300];
        xs.extend([f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 2f64.powi(52) - 0.5]);
        xs.extend([-(2f64.powi(52) - 0.5), 2f64.powi(53) + 2.0, 2f64.powi(40) + 0.25]);
        xs.extend((-400..=400).map(|i| f64::from(i) * 0.125 + 1e-9 * f64::from(i % 3)));
        for x in xs {
            for y in [x, x.next_up(), x.next_down()] {
                check(y, y.floor(), y.ceil());
                let y = y as f32;
                check(y, y.floor(), y.ceil());
            }
        }
        for y in [2f32.powi(23) - 0.5, -(2f32.powi(23) - 0.5), 3e9, -3e9, 1e38] {
            check(y, y.floor(), y.ceil());
        }
    }

    /// The polynomial sine is within 4 ulp of libm's, relative, over the whole half-turn range.
    #[test]
    fn small_sine_matches_libm() {
        for i in 0..=1000 {
            let t = -0.5 + i as f64 / 1000.0;
            let want = (t * PI).sin();
            assert!(
                (sin_pi_small(t) - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1e-300),
                "{t}"
            );
        }
    }

    /// The polynomial cosine is within 2 ulp of libm's over the whole half-turn range.
    #[test]
    fn small_cosine_matches_libm() {
        for i in -5000..=5000 {
            let t = f64::from(i) / 10000.0;
            let (got, want) = (cos_pi_small(t), (t * PI).cos());
            assert!((got - want).abs() <= 2.0 * f64::EPSILON, "{t}: {got} vs {want}");
        }
        assert!(1.0f64.cos_pi() + 1.0 < 1e-16);
    }
}
