//! Structure-factor tables: the dense h,k,l grid and the `-hkl` text reader.
//!
//! Text format, one reflection per line, whitespace-separated:
//!
//! ```text
//! h k l F [more columns ...]
//! ```
//!
//! * h, k, l are Miller indices and must be integers (`3`, `-2` and `3.0` are accepted, `1.5` is
//!   an error); F is the structure-factor amplitude (electrons, as C uses it, unscaled).
//! * Columns after the fourth (σ, phase, ...) are ignored.
//! * Blank lines and lines whose first non-space character is `#` are skipped.
//! * A later line for the same h,k,l overwrites an earlier one, as in C.
//!
//! Differences from C, which reads the file as a stream of `%lg` quadruples: C mis-reads files
//! with more than four columns and only warns about non-integer indices; it has no comment lines.
//! This reader is line-based, so 5- and 6-column files work, and bad lines are errors naming
//! `path:line`.

use crate::base::error::{Error, Result};
use std::path::Path;

/// Largest grid (number of h,k,l points) a reader will allocate: 2³¹ values, 16 GiB.
#[cfg(not(fuzzing))]
pub const MAX_GRID_POINTS: usize = 1 << 31;
/// In fuzzing builds (`cargo fuzz` sets `cfg(fuzzing)`) 2²⁴ values: the same code paths, in
/// the fuzzer's memory limit (a file of a few lines may span the largest grid).
#[cfg(fuzzing)]
pub const MAX_GRID_POINTS: usize = 1 << 24;

/// A dense structure-factor grid over inclusive index ranges.
///
/// `values` is laid out with l fastest:
/// `((h − h_min)·k_count + (k − k_min))·l_count + (l − l_min)`, where
/// `k_count = k_max − k_min + 1`, etc.
#[derive(Debug, Clone, PartialEq)]
pub struct HklGrid {
    pub h_min: i32,
    pub h_max: i32,
    pub k_min: i32,
    pub k_max: i32,
    pub l_min: i32,
    pub l_max: i32,
    /// Structure factors F(h,k,l), `h_count·k_count·l_count` of them.
    pub values: Vec<f64>,
    /// C's `hkls`: the number of data lines read from a text file, or the number of grid points
    /// for a grid read from `Fdump.bin`.
    pub entries: usize,
}

impl HklGrid {
    /// Number of grid points along h, k and l (0 for an inverted range).
    pub fn counts(&self) -> [usize; 3] {
        [
            axis_count(self.h_min, self.h_max),
            axis_count(self.k_min, self.k_max),
            axis_count(self.l_min, self.l_max),
        ]
    }

    /// Position of (h,k,l) in `values`, or `None` outside the ranges.
    pub fn index(&self, h: i32, k: i32, l: i32) -> Option<usize> {
        if h < self.h_min || h > self.h_max || k < self.k_min || k > self.k_max || l < self.l_min || l > self.l_max {
            return None;
        }
        let [_, kc, lc] = self.counts();
        let h0 = (i64::from(h) - i64::from(self.h_min)) as usize;
        let k0 = (i64::from(k) - i64::from(self.k_min)) as usize;
        let l0 = (i64::from(l) - i64::from(self.l_min)) as usize;
        h0.checked_mul(kc)?.checked_add(k0)?.checked_mul(lc)?.checked_add(l0)
    }

    /// F(h,k,l), or `None` outside the ranges (or if `values` is shorter than the ranges say).
    pub fn get(&self, h: i32, k: i32, l: i32) -> Option<f64> {
        self.index(h, k, l).and_then(|i| self.values.get(i).copied())
    }
}

/// Points on an inclusive axis `min..=max`; 0 when `max < min`.
fn axis_count(min: i32, max: i32) -> usize {
    (i64::from(max) - i64::from(min) + 1).max(0) as usize
}

/// Allocates a grid of `counts` points filled with `fill`, refusing sizes above
/// [`MAX_GRID_POINTS`] or that cannot be allocated. Errors name `path`.
pub(crate) fn alloc_grid(path: &Path, counts: [usize; 3], fill: f64) -> Result<Vec<f64>> {
    let n = counts[0]
        .checked_mul(counts[1])
        .and_then(|n| n.checked_mul(counts[2]))
        .filter(|&n| n <= MAX_GRID_POINTS)
        .ok_or_else(|| {
            Error::parse(
                path,
                None,
                format!(
                    "h,k,l grid of {} x {} x {} points is too large (limit {MAX_GRID_POINTS})",
                    counts[0], counts[1], counts[2]
                ),
            )
        })?;
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| Error::parse(path, None, format!("cannot allocate an h,k,l grid of {n} points")))?;
    v.resize(n, fill);
    Ok(v)
}

/// Parses a Miller index: any number with no fractional part, within `i32`.
fn parse_index(tok: &str) -> std::result::Result<i32, String> {
    let v: f64 = tok.parse().map_err(|_| format!("'{tok}' is not a number"))?;
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(format!("index '{tok}' is not an integer"));
    }
    if v < f64::from(i32::MIN) || v > f64::from(i32::MAX) {
        return Err(format!("index '{tok}' is out of range"));
    }
    Ok(v as i32)
}

/// Reads an `-hkl` text file into a dense grid spanning the indices present.
///
/// Grid points not listed get `default_f` (C prefills with `default_F` when it is non-zero and
/// leaves 0 otherwise, which is the same thing). `entries` is the number of data lines.
///
/// Errors (naming `path:line`): fewer than 4 columns, a non-numeric or non-integer index, a
/// non-numeric or non-finite F, no data lines at all, or a grid too large to allocate.
pub fn read_hkl(path: &Path, default_f: f64) -> Result<HklGrid> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);

    let mut rows: Vec<(i32, i32, i32, f64)> = Vec::new();
    let (mut lo, mut hi) = ([i32::MAX; 3], [i32::MIN; 3]);
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = toks.first() else { continue };
        if first.starts_with('#') {
            continue;
        }
        if toks.len() < 4 {
            return Err(Error::parse(
                path,
                Some(lineno),
                format!("expected at least 4 columns (h k l F), found {}", toks.len()),
            ));
        }
        let mut hkl = [0i32; 3];
        for (axis, slot) in hkl.iter_mut().enumerate() {
            *slot = parse_index(toks[axis])
                .map_err(|m| Error::parse(path, Some(lineno), format!("{}: {m}", ["h", "k", "l"][axis])))?;
            lo[axis] = lo[axis].min(*slot);
            hi[axis] = hi[axis].max(*slot);
        }
        let f: f64 = toks[3]
            .parse()
            .map_err(|_| Error::parse(path, Some(lineno), format!("F: '{}' is not a number", toks[3])))?;
        if !f.is_finite() {
            return Err(Error::parse(
                path,
                Some(lineno),
                format!("F: '{}' is not finite", toks[3]),
            ));
        }
        rows.push((hkl[0], hkl[1], hkl[2], f));
    }
    if rows.is_empty() {
        return Err(Error::parse(path, None, "no h k l F lines in file"));
    }

    let mut grid = HklGrid {
        h_min: lo[0],
        h_max: hi[0],
        k_min: lo[1],
        k_max: hi[1],
        l_min: lo[2],
        l_max: hi[2],
        values: Vec::new(),
        entries: rows.len(),
    };
    grid.values = alloc_grid(path, grid.counts(), default_f)?;
    for &(h, k, l, f) in &rows {
        if let Some(i) = grid.index(h, k, l) {
            grid.values[i] = f;
        }
    }
    Ok(grid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_support::{golden_dir, write_temp};
    use proptest::prelude::*;

    #[test]
    fn golden_pattern_hkl() {
        let Some(dir) = golden_dir() else { return };
        let g = read_hkl(&dir.join("inputs/pattern.hkl"), 0.0).unwrap();
        assert_eq!(
            (g.h_min, g.h_max, g.k_min, g.k_max, g.l_min, g.l_max),
            (-1, 2, -1, 2, -1, 1)
        );
        assert_eq!(g.counts(), [4, 4, 3]);
        assert_eq!(g.values.len(), 48);
        assert_eq!(g.entries, 11);
        assert_eq!(g.get(0, 0, 0), Some(100.0));
        assert_eq!(g.get(1, 1, 0), Some(12.5));
        assert_eq!(g.get(2, 0, 0), Some(200.0));
        assert_eq!(g.get(-1, -1, 0), Some(20.0));
        assert_eq!(g.get(0, 0, -1), Some(60.0));
        assert_eq!(g.get(2, 2, 1), Some(0.0)); // not listed
        assert_eq!(g.get(3, 0, 0), None);
        assert_eq!(g.get(0, 0, 2), None);
        assert_eq!(g.index(-1, -1, -1), Some(0));
        assert_eq!(g.index(2, 2, 1), Some(47));
        assert_eq!(g.index(0, 0, 0), Some((4 + 1) * 3 + 1));
    }

    #[test]
    fn golden_sparse_and_smooth() {
        let Some(dir) = golden_dir() else { return };
        let g = read_hkl(&dir.join("inputs/sparse.hkl"), 7.5).unwrap();
        assert_eq!(
            (g.h_min, g.h_max, g.k_min, g.k_max, g.l_min, g.l_max),
            (-2, 2, 0, 2, 0, 0)
        );
        assert_eq!(g.entries, 4);
        assert_eq!(g.get(2, 0, 0), Some(80.0));
        assert_eq!(g.get(-2, 0, 0), Some(45.0));
        assert_eq!(g.get(1, 1, 0), Some(7.5)); // default_F fills the gaps
        let s = read_hkl(&dir.join("inputs/smooth.hkl"), 0.0).unwrap();
        assert_eq!(s.counts(), [25, 25, 25]);
        assert_eq!(s.entries, 15625);
        assert_eq!(s.get(-12, -12, -12), Some(39.7342));
        assert_eq!(s.get(12, 12, 12), Some(45.3419));
    }

    #[test]
    fn extra_columns_comments_duplicates() {
        let f = write_temp(
            b"# h k l F sigma phase\n\n  1 2 3 10.5 0.3 90\n-1 0 3.0 2\n   # indented comment\n1 2 3 11 extra words\n",
        );
        let g = read_hkl(f.path(), 0.0).unwrap();
        assert_eq!(g.entries, 3);
        assert_eq!(g.get(1, 2, 3), Some(11.0)); // the later duplicate wins
        assert_eq!(g.get(-1, 0, 3), Some(2.0));
        assert_eq!(g.get(0, 1, 3), Some(0.0));
        assert_eq!(g.counts(), [3, 3, 1]);
    }

    #[test]
    fn crlf_lines_work() {
        let f = write_temp(b"0 0 0 1\r\n1 0 0 2\r\n");
        let g = read_hkl(f.path(), 0.0).unwrap();
        assert_eq!(g.get(1, 0, 0), Some(2.0));
    }

    fn err_line(content: &[u8]) -> Option<usize> {
        let f = write_temp(content);
        match read_hkl(f.path(), 0.0) {
            Err(Error::Parse { line, .. }) => line,
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_lines_name_the_line() {
        assert_eq!(err_line(b"0 0 0 1\n1.5 0 0 2\n"), Some(2));
        assert_eq!(err_line(b"0 0 0 1\n\n1 0 2\n"), Some(3));
        assert_eq!(err_line(b"0 0 x 1\n"), Some(1));
        assert_eq!(err_line(b"0 0 0 1\n0 0 1 abc\n"), Some(2));
        assert_eq!(err_line(b"0 0 0 nan\n"), Some(1));
        assert_eq!(err_line(b"0 0 0 inf\n"), Some(1));
        assert_eq!(err_line(b"0 0 0 1\n# c\n5e10 0 0 1\n"), Some(3));
        assert_eq!(err_line(b"1 2 3 # F missing\n"), Some(1));
        assert_eq!(err_line(b""), None);
        assert_eq!(err_line(b"# only a comment\n\n"), None);
        let f = write_temp(b"0 0 0 1\n1.5 0 0 2\n");
        let msg = read_hkl(f.path(), 0.0).unwrap_err().to_string();
        assert!(msg.contains(&format!("{}:2", f.path().display())), "{msg}");
    }

    #[test]
    fn huge_grid_is_refused() {
        let f = write_temp(b"-2000000000 0 0 1\n2000000000 0 0 1\n0 -2000000000 0 1\n0 2000000000 0 1\n");
        assert!(read_hkl(f.path(), 0.0).is_err());
    }

    #[test]
    fn missing_file_is_io_error() {
        let e = read_hkl(Path::new("/nonexistent/x.hkl"), 0.0).unwrap_err();
        assert!(matches!(e, Error::Io { .. }));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let f = write_temp(&bytes);
            let _ = read_hkl(f.path(), 1.0);
        }

        #[test]
        fn random_lines_never_panic(lines in proptest::collection::vec(
            "[ \t]*(#|-?[0-9]{1,3}(\\.[05])?|[a-z]+|1e[0-9]{1,3})([ \t]+(-?[0-9]{1,3}(\\.[0-9])?|nan|x|1e[0-9]{1,2})){0,6}",
            0..20,
        )) {
            let f = write_temp(lines.join("\n").as_bytes());
            if let Ok(g) = read_hkl(f.path(), 0.0) {
                let [a, b, c] = g.counts();
                prop_assert_eq!(g.values.len(), a * b * c);
                prop_assert!(g.entries >= 1);
            }
        }

        /// Every listed reflection is found at its own index after parsing (last duplicate wins).
        #[test]
        fn written_reflections_read_back(rows in proptest::collection::vec(
            (-5i32..5, -5i32..5, -5i32..5, -1e6f64..1e6), 1..30)) {
            let text: String = rows.iter().map(|(h, k, l, f)| format!("{h} {k} {l} {f:e} 0.5\n")).collect();
            let file = write_temp(text.as_bytes());
            let g = read_hkl(file.path(), -3.0).unwrap();
            prop_assert_eq!(g.entries, rows.len());
            for (i, &(h, k, l, f)) in rows.iter().enumerate() {
                if !rows[i + 1..].iter().any(|r| (r.0, r.1, r.2) == (h, k, l)) {
                    prop_assert_eq!(g.get(h, k, l), Some(f));
                }
            }
        }
    }
}
