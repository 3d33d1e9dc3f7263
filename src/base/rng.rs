//! C-compatible random numbers: the Numerical Recipes `ran1` generator (Park–Miller minimal
//! standard with a Bays–Durham shuffle) and the deviates nanoBragg draws from it, so that the
//! same seeds give the same mosaic domains, random misset and noise as the C program.

use crate::base::vec3::Mat3;

const IA: i64 = 16807;
const IM: i64 = 2147483647;
const AM: f64 = 1.0 / IM as f64;
const IQ: i64 = 127773;
const IR: i64 = 2836;
const NTAB: usize = 32;
const NDIV: i64 = 1 + (IM - 1) / NTAB as i64;
const EPS: f64 = 1.2e-7;
const RNMX: f64 = 1.0 - EPS;

/// The statics of C's `ran1`: the shuffle table and its last output. A C process has one
/// table, shared by every seed variable it passes to `ran1`; a seed that is not positive
/// reloads it. nanoBragg starts every stream with such a seed, so it sees one table per
/// stream ([`Ran1`]); `noisify` draws from two seeds alternately through the one table, and
/// reproduces that with one `ShuffleTable` and two seed variables.
#[derive(Debug, Clone)]
pub struct ShuffleTable {
    iy: i64,
    iv: [i64; NTAB],
}

impl Default for ShuffleTable {
    fn default() -> Self {
        Self { iy: 0, iv: [0; NTAB] }
    }
}

/// One Park–Miller step of the seed variable, as C computes it (Schrage's method).
fn advance(idum: &mut i64) {
    let k = *idum / IQ;
    *idum = IA * (*idum - k * IQ) - IR * k;
    if *idum < 0 {
        *idum += IM;
    }
}

impl ShuffleTable {
    /// C's `ran1(&idum)`: a uniform deviate in (0, 1) as a C `float`, advancing the seed
    /// variable `idum` and this table.
    pub fn ran1(&mut self, idum: &mut i64) -> f32 {
        if *idum <= 0 || self.iy == 0 {
            *idum = if -*idum < 1 { 1 } else { -*idum };
            for j in (0..NTAB + 8).rev() {
                advance(idum);
                if j < NTAB {
                    self.iv[j] = *idum;
                }
            }
            self.iy = self.iv[0];
        }
        advance(idum);
        let j = (self.iy / NDIV) as usize;
        self.iy = self.iv[j];
        self.iv[j] = *idum;
        // C: the product is double, stored in a float, compared with the double RNMX
        let temp = (AM * self.iy as f64) as f32;
        if temp as f64 > RNMX {
            RNMX as f32
        } else {
            temp
        }
    }
}

/// One `ran1` stream: a seed variable with a table of its own.
#[derive(Debug, Clone)]
pub struct Ran1 {
    idum: i64,
    table: ShuffleTable,
}

impl Ran1 {
    /// A stream seeded the way C stores a seed: `idum = seed` (C passes `-n` for `-seed n`).
    pub fn new(idum: i64) -> Self {
        Self {
            idum,
            table: ShuffleTable::default(),
        }
    }

    /// Uniform deviate in (0, 1), as a C `float`.
    pub fn next_f32(&mut self) -> f32 {
        self.table.ran1(&mut self.idum)
    }
}

/// A random rotation within a spherical cap, as C's `mosaic_rotation_umat`: a random axis and
/// an angle `mosaicity·(1−r³²)^(1/3)` (rad). `mosaicity` is a C `float` there, and the cube
/// root is taken in single precision; both are reproduced.
pub fn mosaic_rotation(mosaicity: f64, rng: &mut Ran1) -> Mat3 {
    let r1 = 2.0 * rng.next_f32() as f64 - 1.0;
    let r2 = 2.0 * rng.next_f32() as f64 - 1.0;
    let r3 = 2.0 * rng.next_f32() as f64 - 1.0;
    let xyrad = (1.0 - r2 * r2).sqrt();
    let cube_root = ((1.0 - r3 * r3) as f32).powf((1.0f64 / 3.0) as f32);
    let rot = ((mosaicity as f32) * cube_root) as f64;
    let v1 = xyrad * (std::f64::consts::PI * r1).sin();
    let v2 = xyrad * (std::f64::consts::PI * r1).cos();
    let v3 = r2;
    let (s, c) = rot.sin_cos();
    let t = 1.0 - c;
    [
        [c + t * v1 * v1, t * v1 * v2 - s * v3, t * v1 * v3 + s * v2],
        [t * v1 * v2 + s * v3, c + t * v2 * v2, t * v2 * v3 - s * v1],
        [t * v1 * v3 - s * v2, t * v2 * v3 + s * v1, c + t * v3 * v3],
    ]
}

/// Misset angles (rad, about x, y, z) whose `rotate_xyz` reproduces the rotation `u`
/// (C's `umat2misset` for a proper rotation matrix).
pub fn umat_to_misset(u: &Mat3) -> [f64; 3] {
    let mut u = *u;
    for row in u.iter_mut() {
        let m = (row[0] * row[0] + row[1] * row[1] + row[2] * row[2]).sqrt();
        if m > 0.0 {
            for x in row.iter_mut() {
                *x /= m;
            }
        }
    }
    let [[uxx, uxy, _], [uyx, uyy, _], [uzx, uzy, uzz]] = u;
    if uzx * uzx < 1.0 {
        [
            uzy.atan2(uzz),
            (-uzx).atan2((uzy * uzy + uzz * uzz).sqrt()),
            uyx.atan2(uxx),
        ]
    } else {
        [std::f64::consts::PI, std::f64::consts::FRAC_PI_2, uxy.atan2(-uyy)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::vec3::{mat_vec, rotate_xyz};

    #[test]
    fn ran1_matches_park_miller_sequence() {
        // Independent check: with the shuffle table, ran1's outputs are a permutation-delayed
        // copy of the Park–Miller sequence x_{n+1} = 16807 x_n mod (2^31 − 1). Every value
        // returned must therefore be one of the raw Park–Miller values (× 1/IM).
        let seed = 12345678i64;
        let mut raw = Vec::new();
        let mut x = seed;
        for _ in 0..2000 {
            x = (x * IA) % IM;
            raw.push(x);
        }
        let mut rng = Ran1::new(-seed);
        for _ in 0..1000 {
            let v = rng.next_f32();
            assert!(v > 0.0 && v < 1.0);
            let hit = raw.iter().any(|&r| (AM * r as f64) as f32 == v);
            assert!(hit, "{v} is not a Park-Miller value");
        }
    }

    #[test]
    fn mosaic_rotation_is_orthonormal_and_bounded() {
        let mut rng = Ran1::new(-777);
        for _ in 0..50 {
            let u = mosaic_rotation(0.01, &mut rng);
            for i in 0..3 {
                for j in 0..3 {
                    let d: f64 = (0..3).map(|k| u[i][k] * u[j][k]).sum();
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((d - want).abs() < 1e-12);
                }
            }
            // rotation angle from the trace is at most the spread
            let tr = u[0][0] + u[1][1] + u[2][2];
            let angle = ((tr - 1.0) / 2.0).clamp(-1.0, 1.0).acos();
            assert!(angle <= 0.01 + 1e-9);
        }
    }

    #[test]
    fn umat_to_misset_inverts_rotate_xyz() {
        let ang = [0.3, -0.4, 1.1];
        let cols = [
            rotate_xyz([1.0, 0.0, 0.0], ang[0], ang[1], ang[2]),
            rotate_xyz([0.0, 1.0, 0.0], ang[0], ang[1], ang[2]),
            rotate_xyz([0.0, 0.0, 1.0], ang[0], ang[1], ang[2]),
        ];
        let mut u = [[0.0; 3]; 3];
        for j in 0..3 {
            for i in 0..3 {
                u[i][j] = cols[j][i];
            }
        }
        let got = umat_to_misset(&u);
        for i in 0..3 {
            assert!((got[i] - ang[i]).abs() < 1e-12, "{got:?}");
        }
        let v = [0.2, 0.5, -0.7];
        let a = mat_vec(&u, v);
        let b = rotate_xyz(v, got[0], got[1], got[2]);
        for i in 0..3 {
            assert!((a[i] - b[i]).abs() < 1e-12);
        }
    }
}
