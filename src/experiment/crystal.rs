//! Crystal lattice: direct and reciprocal vectors from `-cell` and/or `-mat`, misset, N
//! (physics reference §5.1–5.5).

use crate::base::error::{Error, Result};
use crate::base::rng::{mosaic_rotation, umat_to_misset, Ran1};
use crate::base::vec3::Vec3;
use crate::base::vec3::{dot, norm, Mat3};
use crate::config::{CrystalConfig, Misset};
use crate::diff::{crystal::lattice, host};

/// The resolved crystal lattice at φ = 0 and no mosaic rotation.
#[derive(Debug, Clone, PartialEq)]
pub struct CrystalLattice {
    /// Direct vectors a, b, c (m).
    pub a: Vec3,
    pub b: Vec3,
    pub c: Vec3,
    /// Reciprocal vectors a*, b*, c* (Å⁻¹), misset applied; used by the GAUSS/TOPHAT shapes.
    pub a_star: Vec3,
    pub b_star: Vec3,
    pub c_star: Vec3,
    /// Cell volume (Å³).
    pub volume: f64,
    /// Misset angles applied (rad), if any (the random ones are reported by C).
    pub misset: Option<Vec3>,
    /// The cell (a, b, c in Å; α, β, γ in rad) with C's defaults applied, if given.
    pub cell: Option<[f64; 6]>,
    /// The `-mat` reciprocal vectors a*, b*, c* before the misset (Å⁻¹), if given.
    pub matrix: Option<[Vec3; 3]>,
}

/// The reciprocal vectors a*, b*, c* (Å⁻¹) of a MOSFLM A matrix (its columns, in units of
/// 1/λ with λ in Å) at the wavelength `lambda0` (m).
pub fn matrix_reciprocal(m: &[[f64; 3]; 3], lambda0: f64) -> [Vec3; 3] {
    let k = 1e-10 / lambda0;
    [0, 1, 2].map(|j| [m[0][j] * k, m[1][j] * k, m[2][j] * k])
}

/// Why a cell (lengths in Å, angles in rad, C's defaults already applied) describes no
/// crystal, if it does not: lengths must be positive and finite; every angle must lie strictly
/// between 0° and 180° and be smaller than the sum of the other two, and the three must sum to
/// less than 360°. Together these say that the volume term
/// 1 − cos²α − cos²β − cos²γ + 2·cosα·cosβ·cosγ is positive; the volume must also be finite.
pub fn cell_problem(cell: [f64; 6]) -> Option<String> {
    let [a, b, c, al, be, ga] = cell;
    if ![a, b, c].iter().all(|&x| x > 0.0 && x.is_finite()) {
        return Some(format!("cell lengths must be positive and finite, got {a} {b} {c} A"));
    }
    let deg = [al, be, ga].map(f64::to_degrees);
    let angles = format!("{} {} {} deg", deg[0], deg[1], deg[2]);
    let pi = std::f64::consts::PI;
    if ![al, be, ga].iter().all(|&x| x > 0.0 && x < pi) {
        return Some(format!(
            "cell angles {angles} make no cell: each must lie strictly between 0 and 180 degrees"
        ));
    }
    if al + be + ga >= 2.0 * pi {
        return Some(format!(
            "cell angles {angles} make no cell: their sum must be below 360 degrees"
        ));
    }
    if al >= be + ga || be >= al + ga || ga >= al + be {
        return Some(format!(
            "cell angles {angles} make no cell: each must be smaller than the sum of the other two"
        ));
    }
    let (ca, cb, cg) = (al.cos(), be.cos(), ga.cos());
    let term = 1.0 - ca * ca - cb * cb - cg * cg + 2.0 * ca * cb * cg;
    let volume = a * b * c * term.max(0.0).sqrt();
    if !(term > 0.0 && volume > 0.0 && volume.is_finite()) {
        return Some(format!("cell {a} {b} {c} A, {angles} has no finite positive volume"));
    }
    None
}

/// The time-based seed C uses when none is given.
pub fn time_seed() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(1)
}

impl CrystalLattice {
    /// Build the lattice as C does: cell → reciprocal, `-mat` overrides the reciprocal vectors,
    /// misset rotates them, then direct and reciprocal vectors are regenerated.
    /// `lambda0` (m) rescales the MOSFLM matrix.
    pub fn new(cfg: &CrystalConfig, lambda0: f64) -> Result<Self> {
        // the cell in Å and rad, with C's defaults for missing values
        let cell = cfg.cell.map(|[a, b, c, al, be, ga]| {
            let a = a * 1e10;
            let b = if b <= 0.0 { a } else { b * 1e10 };
            let c = if c <= 0.0 { a } else { c * 1e10 };
            let right = std::f64::consts::FRAC_PI_2;
            let ang = |x: f64| if x <= 0.0 { right } else { x };
            [a, b, c, ang(al), ang(be), ang(ga)]
        });
        if let Some(problem) = cell.and_then(cell_problem) {
            return Err(Error::flag("-cell", problem));
        }
        if cell.is_none() && cfg.matrix.is_none() {
            return Err(Error::Config("a unit cell is required: give -cell or -mat".into()));
        }
        let misset = match cfg.misset {
            Misset::None => None,
            Misset::Angles(a) => Some(a),
            Misset::Random => {
                let seed = cfg.misset_seed.unwrap_or_else(time_seed);
                let u: Mat3 = mosaic_rotation(90.0, &mut Ran1::new(-seed));
                Some(umat_to_misset(&u))
            }
        };
        // the one lattice geometry (crate::diff::crystal), evaluated in f64
        let matrix = cfg.matrix.map(|m| matrix_reciprocal(&m, lambda0));
        let t = lattice(
            host::vector(&cell.unwrap_or([0.0; 6])),
            host::vector(&misset.unwrap_or([0.0; 3])),
            matrix,
            cell.is_some(),
        );
        let volume = host::scalar(t.volume);
        let lattice = Self {
            a: host::vec3(t.a),
            b: host::vec3(t.b),
            c: host::vec3(t.c),
            a_star: host::vec3(t.a_star),
            b_star: host::vec3(t.b_star),
            c_star: host::vec3(t.c_star),
            volume,
            misset,
            cell,
            matrix,
        };
        let finite = [lattice.a, lattice.b, lattice.c]
            .iter()
            .flatten()
            .all(|x| x.is_finite());
        if !(volume.is_finite() && volume != 0.0 && finite) {
            return Err(match cfg.matrix {
                Some(_) => Error::flag(
                    "-mat",
                    "the orientation matrix is singular: the unit cell has zero volume",
                ),
                None => Error::Config("the unit cell has zero volume".into()),
            });
        }
        Ok(lattice)
    }

    /// Cell lengths (Å) and angles (deg), as C prints them.
    pub fn cell_parameters(&self) -> [f64; 6] {
        let (a, b, c) = (norm(self.a), norm(self.b), norm(self.c));
        let ang = |x: Vec3, y: Vec3, nx: f64, ny: f64| (dot(x, y) / (nx * ny)).clamp(-1.0, 1.0).acos().to_degrees();
        [
            a * 1e10,
            b * 1e10,
            c * 1e10,
            ang(self.b, self.c, b, c),
            ang(self.a, self.c, a, c),
            ang(self.a, self.b, a, b),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::vec3::scale;

    #[test]
    fn cubic_cell_is_diagonal() {
        let cfg = CrystalConfig {
            cell: Some([
                100e-10,
                100e-10,
                100e-10,
                90f64.to_radians(),
                90f64.to_radians(),
                90f64.to_radians(),
            ]),
            ..Default::default()
        };
        let x = CrystalLattice::new(&cfg, 1e-10).unwrap();
        assert!((x.a[0] - 1e-8).abs() < 1e-20 && x.a[1].abs() < 1e-20);
        assert!((x.c[2] - 1e-8).abs() < 1e-20);
        assert!((x.a_star[0] - 0.01).abs() < 1e-15);
        assert!((x.volume - 1e6).abs() < 1e-6);
    }

    #[test]
    fn impossible_cells_are_named() {
        let r = f64::to_radians;
        let cell = |al: f64, be: f64, ga: f64| [100.0, 100.0, 100.0, r(al), r(be), r(ga)];
        for (c, needle) in [
            (cell(180.0, 90.0, 90.0), "between 0 and 180"),
            (cell(190.0, 90.0, 90.0), "between 0 and 180"),
            (cell(120.0, 120.0, 120.0), "below 360"),
            (cell(150.0, 110.0, 100.0), "below 360"),
            (cell(100.0, 30.0, 60.0), "sum of the other two"),
            (cell(f64::NAN, 90.0, 90.0), "between 0 and 180"),
            ([0.0, 1.0, 1.0, r(90.0), r(90.0), r(90.0)], "lengths"),
            ([f64::INFINITY, 1.0, 1.0, r(90.0), r(90.0), r(90.0)], "lengths"),
            ([1e300, 1e300, 1e300, r(90.0), r(90.0), r(90.0)], "volume"),
        ] {
            let p = cell_problem(c).unwrap_or_else(|| panic!("{c:?} accepted"));
            assert!(p.contains(needle), "{p}");
        }
        for ok in [
            cell(90.0, 90.0, 90.0),
            cell(75.0, 85.0, 95.0),
            cell(119.0, 119.0, 119.0),
            cell(60.0, 60.0, 60.0),
        ] {
            assert_eq!(cell_problem(ok), None);
        }
        let cfg = CrystalConfig {
            cell: Some([1e-8, 1e-8, 1e-8, r(180.0), r(90.0), r(90.0)]),
            ..Default::default()
        };
        let e = CrystalLattice::new(&cfg, 1e-10).unwrap_err();
        assert!(e.to_string().contains("-cell"), "{e}");
    }

    #[test]
    fn triclinic_cell_as_c_builds_it() {
        // C's default orientation puts c*_z = c*·V/(abc·sinγ*) where 1/c is exact, so a
        // triclinic cell comes out slightly sheared; its log for this cell (golden
        // triclinic_misset_256) prints "Unit Cell: 70 80 90 75.0391 85.0136 95.0081".
        let (a, b, c) = (70.0, 80.0, 90.0);
        let (al, be, ga) = (75f64.to_radians(), 85f64.to_radians(), 95f64.to_radians());
        let cfg = CrystalConfig {
            cell: Some([a * 1e-10, b * 1e-10, c * 1e-10, al, be, ga]),
            misset: Misset::Angles([0.1, 0.2, 0.3]),
            ..Default::default()
        };
        let x = CrystalLattice::new(&cfg, 1e-10).unwrap();
        let p = x.cell_parameters();
        for (got, want) in p.iter().zip([a, b, c, 75.0391, 85.0136, 95.0081]) {
            assert!((got - want).abs() < 1e-4, "{p:?}");
        }
        // a* ⟂ b, c (it is built from b × c)
        let b_ang = scale(x.b, 1e10);
        let c_ang = scale(x.c, 1e10);
        assert!(dot(x.a_star, b_ang).abs() < 1e-12);
        assert!(dot(x.a_star, c_ang).abs() < 1e-12);
    }
}
