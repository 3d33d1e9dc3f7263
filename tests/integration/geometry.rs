//! The host geometry (detector basis and origin, lattice vectors), which the setup evaluates
//! with the same tensor functions that render and differentiate, against the numbers the C
//! program printed for every golden case: an independent reference for the one geometry.

use crate::common;

use nanobragg::config::{HklSource, Vec3};
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;

/// The three numbers after `key` on the first line starting with `key`.
fn vector_after(log: &str, key: &str) -> Option<Vec3> {
    let line = log.lines().find(|l| l.starts_with(key))?;
    let v: Vec<f64> = line[key.len()..]
        .split_whitespace()
        .map(|t| t.parse().expect("a number"))
        .collect();
    Some([v[0], v[1], v[2]])
}

/// The columns of the 3×3 block (rows X:, Y:, Z:) printed two lines below `title`.
fn columns_after(log: &str, title: &str) -> Option<[Vec3; 3]> {
    let lines: Vec<&str> = log.lines().collect();
    let at = lines.iter().position(|l| l.starts_with(title))?;
    let rows: Vec<Vec<f64>> = lines[at + 2..at + 5]
        .iter()
        .map(|l| {
            l[2..]
                .split_whitespace()
                .map(|t| t.parse().expect("a number"))
                .collect()
        })
        .collect();
    Some([0, 1, 2].map(|j| [rows[0][j], rows[1][j], rows[2][j]]))
}

/// Largest |got − want| over the components.
fn deviation(got: Vec3, want: Vec3) -> f64 {
    (0..3).map(|i| (got[i] - want[i]).abs()).fold(0.0, f64::max)
}

#[test]
fn host_geometry_matches_what_c_printed() {
    let Some(dir) = common::golden_dir() else { return };
    let (mut detectors, mut lattices) = (0, 0);
    for case in common::cases(&dir) {
        let log = &case.c_stdout;
        let Parsed::Run(mut cfg, _) = parse_args(&case.args).unwrap() else {
            panic!("{}: no run", case.name)
        };
        if cfg.crystal.hkl == HklSource::FdumpIfPresent {
            cfg.crystal.hkl = HklSource::None;
        }
        let exp = Experiment::new(&cfg).unwrap();
        let d = &exp.detector;
        // printed with 15 significant digits
        for (key, got) in [
            ("DETECTOR_FAST_AXIS", d.fdet),
            ("DETECTOR_SLOW_AXIS", d.sdet),
            ("DETECTOR_NORMAL_AXIS", d.odet),
            ("DETECTOR_PIX0_VECTOR", d.pix0),
        ] {
            if let Some(want) = vector_after(log, key) {
                let dev = deviation(got, want);
                assert!(dev < 1e-13, "{}: {key} {got:?}, C printed {want:?}", case.name);
                detectors += 1;
            }
        }
        // printed with 8 decimals: direct vectors in Å, reciprocal ones in Å⁻¹
        let l = &exp.lattice;
        let direct = [l.a, l.b, l.c].map(|v| v.map(|x| x * 1e10));
        for (title, got, tol) in [
            ("real-space cell vectors", direct, 6e-9),
            ("reciprocal-space cell vectors", [l.a_star, l.b_star, l.c_star], 6e-9),
        ] {
            if let Some(want) = columns_after(log, title) {
                for (g, w) in got.iter().zip(want) {
                    let dev = deviation(*g, w);
                    assert!(dev <= tol, "{}: {title} {g:?}, C printed {w:?}", case.name);
                }
                lattices += 1;
            }
        }
    }
    println!("{detectors} detector vectors and {lattices} lattice blocks match C");
    assert!(
        detectors >= 4 * 30 && lattices >= 2 * 30,
        "too few printed values found"
    );
}
