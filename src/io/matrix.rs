//! MOSFLM orientation matrix files (`-mat`).
//!
//! The first nine numbers of the file form the A matrix, row by row:
//!
//! ```text
//! a*x b*x c*x
//! a*y b*y c*y
//! a*z b*z c*z
//! ```
//!
//! i.e. the columns are the reciprocal cell vectors a*, b*, c* in Å⁻¹ multiplied by the
//! wavelength in Å (MOSFLM's dimensionless convention). As with C's `fscanf("%lg")`, line breaks
//! and spacing do not matter and anything after the ninth number (MOSFLM's U matrix, cell, ...)
//! is ignored.

use crate::base::error::{Error, Result};
use std::path::Path;

/// Reads the nine matrix elements in file order. `result[0]` is the first row, i.e. the x
/// components of a*, b*, c*.
///
/// Errors name `path:line`: a token that is not a number (C's `fscanf` would stop there and leave
/// the remaining elements unset), a non-finite number, or fewer than nine numbers in the file
/// (reported at the last line).
pub fn read_matrix(path: &Path) -> Result<[[f64; 3]; 3]> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut m = [[0.0; 3]; 3];
    let mut n = 0usize;
    let mut last_line = 1usize;
    'lines: for (i, line) in text.lines().enumerate() {
        last_line = i + 1;
        for tok in line.split_whitespace() {
            let v: f64 = tok
                .parse()
                .map_err(|_| Error::parse(path, Some(i + 1), format!("'{tok}' is not a number")))?;
            if !v.is_finite() {
                return Err(Error::parse(
                    path,
                    Some(i + 1),
                    format!("matrix element '{tok}' is not finite"),
                ));
            }
            m[n / 3][n % 3] = v;
            n += 1;
            if n == 9 {
                break 'lines;
            }
        }
    }
    if n < 9 {
        return Err(Error::parse(
            path,
            Some(last_line),
            format!("expected 9 matrix elements, found {n}"),
        ));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_support::{golden_dir, write_temp};
    use proptest::prelude::*;

    #[test]
    fn golden_a_mat() {
        let Some(dir) = golden_dir() else { return };
        let m = read_matrix(&dir.join("inputs/A.mat")).unwrap();
        assert_eq!(m[0], [0.0144784634, -0.0051971093, -0.0004597462]);
        assert_eq!(m[1], [0.0055577614, 0.0125569320, -0.0029602746]);
        assert_eq!(m[2], [0.0019042085, 0.0028661382, 0.0121357080]);
    }

    #[test]
    fn layout_free_and_trailing_content_ignored() {
        let f = write_temp(b"1 2\n3 4 5 6 7\n\n 8\n9 10 11\n  0.0 0.0 0.0\ncell 1 2 3\n");
        let m = read_matrix(f.path()).unwrap();
        assert_eq!(m, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
        let f = write_temp(b"1e-2 -2E-2 +3\t4 5 6 7 8 9");
        assert_eq!(read_matrix(f.path()).unwrap()[0], [0.01, -0.02, 3.0]);
    }

    fn err_line(content: &[u8]) -> Option<usize> {
        match read_matrix(write_temp(content).path()) {
            Err(Error::Parse { line, .. }) => line,
            other => panic!("expected parse error, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(err_line(b"1 2 3\n4 5 6\n7 8\n"), Some(3));
        assert_eq!(err_line(b"1 2 3\n4 five 6\n7 8 9\n"), Some(2));
        assert_eq!(err_line(b"1 2 3\n4 5 6\n7 8 nan\n"), Some(3));
        assert_eq!(err_line(b""), Some(1));
        assert_eq!(err_line(b"1 2 3\n4 5 6\n7 8\n\n\n"), Some(5));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = read_matrix(write_temp(&bytes).path());
        }

        #[test]
        fn random_number_lines(lines in proptest::collection::vec(
            "[ \t]*(-?[0-9]{1,3}(\\.[0-9]{0,4})?([eE][-+]?[0-9])?[ \t]*){0,5}(x|inf)?", 0..8)) {
            let text = lines.join("\n");
            let count = text.split_whitespace().take_while(|t| t.parse::<f64>().is_ok_and(f64::is_finite)).count();
            let r = read_matrix(write_temp(text.as_bytes()).path());
            prop_assert_eq!(r.is_ok(), count >= 9);
        }
    }
}
