//! Per-shot random numbers: seeds derived from a base seed and the shot index, and uniformly
//! random crystal orientations.
//!
//! Everything here is a pure function of (base seed, shot index), never of the order in which
//! shots are rendered, so shards and resumed runs draw exactly what one unsharded run draws.
//! The generator is SplitMix64 (Steele, Lea & Flood 2014), keyed by the base seed, the shot
//! index and a purpose constant; it is not C's `ran1`, which only has 2³¹ states and is kept
//! for what C itself draws (noise, mosaic domains, `-misset random`).

use crate::base::rng::umat_to_misset;
use crate::base::vec3::Mat3;

/// Purpose keys: independent streams for the noise seed and the orientation of one shot.
const NOISE_STREAM: u64 = 0x6E6F_6973_655F_7365; // "noise_se"
const ORIENTATION_STREAM: u64 = 0x6F72_6965_6E74_6174; // "orientat"

/// SplitMix64: a 64-bit counter passed through a bijective mixer.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal deviates, two at a time (Box–Muller).
    pub fn normal_pair(&mut self) -> (f64, f64) {
        // 1 − u lies in (0, 1], so the logarithm is finite
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        (r * c, r * s)
    }
}

/// SplitMix64's output function (a bijection of u64).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stream of shot `index` for `purpose`, under base seed `base`.
fn stream(base: i64, index: u64, purpose: u64) -> SplitMix64 {
    let key = mix(mix(base as u64 ^ purpose).wrapping_add(index));
    SplitMix64::new(key)
}

/// The noise seed (C's `-seed n`) of shot `index` under base seed `base`: in 1 ..= 2³¹ − 1,
/// the range of positive C `int`s.
pub fn derived_seed(base: i64, index: u64) -> i64 {
    let x = stream(base, index, NOISE_STREAM).next_u64();
    1 + (x % (i32::MAX as u64)) as i64
}

/// A rotation matrix drawn uniformly (Haar measure) over SO(3): a unit quaternion from four
/// independent standard normal deviates (the normalised 4-vector is uniform on S³, and the map
/// S³ → SO(3) is two-to-one and measure-preserving).
pub fn uniform_rotation(rng: &mut SplitMix64) -> Mat3 {
    loop {
        let (w, x) = rng.normal_pair();
        let (y, z) = rng.normal_pair();
        let n = (w * w + x * x + y * y + z * z).sqrt();
        if n < 1e-9 {
            continue;
        }
        let (w, x, y, z) = (w / n, x / n, y / n, z / n);
        return [
            [
                1.0 - 2.0 * (y * y + z * z),
                2.0 * (x * y - w * z),
                2.0 * (x * z + w * y),
            ],
            [
                2.0 * (x * y + w * z),
                1.0 - 2.0 * (x * x + z * z),
                2.0 * (y * z - w * x),
            ],
            [
                2.0 * (x * z - w * y),
                2.0 * (y * z + w * x),
                1.0 - 2.0 * (x * x + y * y),
            ],
        ];
    }
}

/// The random orientation of shot `index` under base seed `base`, as `-misset` angles in
/// degrees (rotations about x, y, z, applied as C applies `-misset`). Each angle is in
/// (−180, 180].
pub fn random_misset_degrees(base: i64, index: u64) -> [f64; 3] {
    let u = uniform_rotation(&mut stream(base, index, ORIENTATION_STREAM));
    umat_to_misset(&u).map(f64::to_degrees)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::vec3::{mat_mul, rotate_xyz};

    #[test]
    fn splitmix_reference_values() {
        // the first outputs of SplitMix64 seeded with 0 (published reference sequence)
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn rotations_are_proper() {
        let mut r = SplitMix64::new(7);
        for _ in 0..100 {
            let u = uniform_rotation(&mut r);
            let ut = [0, 1, 2].map(|i| [0, 1, 2].map(|j| u[j][i]));
            let p = mat_mul(&u, &ut);
            for (i, row) in p.iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
                }
            }
            let det = u[0][0] * (u[1][1] * u[2][2] - u[1][2] * u[2][1])
                - u[0][1] * (u[1][0] * u[2][2] - u[1][2] * u[2][0])
                + u[0][2] * (u[1][0] * u[2][1] - u[1][1] * u[2][0]);
            assert!((det - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn misset_angles_reproduce_the_rotation() {
        // the angles, applied as -misset applies them, rotate vectors as the drawn matrix does
        for index in 0..20 {
            let u = uniform_rotation(&mut stream(3, index, ORIENTATION_STREAM));
            let [x, y, z] = random_misset_degrees(3, index).map(f64::to_radians);
            for v in [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.3, -0.5, 0.8]] {
                let got = rotate_xyz(v, x, y, z);
                let want = crate::base::vec3::mat_vec(&u, v);
                for k in 0..3 {
                    assert!((got[k] - want[k]).abs() < 1e-12, "{got:?} {want:?}");
                }
            }
        }
    }

    #[test]
    fn seeds_depend_on_base_and_index_only() {
        assert_eq!(derived_seed(5, 17), derived_seed(5, 17));
        assert_ne!(derived_seed(5, 17), derived_seed(5, 18));
        assert_ne!(derived_seed(5, 17), derived_seed(6, 17));
        for i in 0..1000 {
            let s = derived_seed(-3, i);
            assert!((1..=i32::MAX as i64).contains(&s));
        }
        assert_ne!(random_misset_degrees(1, 0), random_misset_degrees(1, 1));
    }
}
