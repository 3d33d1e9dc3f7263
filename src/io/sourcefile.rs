//! X-ray source lists (`-sourcefile`).
//!
//! One source per non-blank line, up to five columns:
//!
//! ```text
//! X Y Z weight lambda
//! ```
//!
//! * X, Y, Z: position of the source relative to the sample (m; only the direction matters, the
//!   beam travels from the source towards the sample);
//! * weight: relative intensity (C reads it but never uses it);
//! * lambda: wavelength (m).
//!
//! Columns are separated by any run of the characters ` \t,;:!` (as C). Missing trailing columns
//! are `None` and get C's defaults later (see [`SourceRow`]); a column written as `nan` is also
//! `None`, because C's `atof` turns it into NaN, which it then defaults. Columns after the fifth
//! are ignored, as in C.
//!
//! Deliberate differences from C's `read_text_file`:
//! * lines whose first non-delimiter character is `#` are comments (C turns them into a garbage
//!   source at (0,0,0));
//! * a token that is not a number is an error (C's `atof` silently gives 0);
//! * a row whose X, Y and Z are all given and all 0 is an error (its direction is undefined);
//! * a last line without a newline is read normally (C would give 0 for its missing columns);
//! * a file with no sources is an error (C exits with status 9 as well).

use crate::base::error::{Error, Result};
use crate::config::SourceRow;
use std::path::Path;

/// Column delimiters, as C's `read_text_file`.
const DELIMITERS: &[char] = &[' ', '\t', ',', ';', ':', '!'];

fn is_delimiter(c: char) -> bool {
    DELIMITERS.contains(&c) || c.is_whitespace()
}

/// Reads a source file into one [`SourceRow`] per source line.
///
/// Errors name `path:line`: a non-numeric or infinite value, a source at (0,0,0), or no source
/// lines at all.
pub fn read_sourcefile(path: &Path) -> Result<Vec<SourceRow>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let mut toks = line.split(is_delimiter).filter(|t| !t.is_empty()).peekable();
        match toks.peek() {
            None => continue,
            Some(t) if t.starts_with('#') => continue,
            Some(_) => {}
        }
        let mut cols: [Option<f64>; 5] = [None; 5];
        for (c, tok) in cols.iter_mut().zip(toks) {
            *c = parse_column(tok).map_err(|m| Error::parse(path, Some(lineno), m))?;
        }
        let [x, y, z, weight, lambda] = cols;
        if [x, y, z].iter().all(|c| *c == Some(0.0)) {
            return Err(Error::parse(
                path,
                Some(lineno),
                "source position is (0,0,0): its direction is undefined",
            ));
        }
        rows.push(SourceRow {
            x,
            y,
            z,
            weight,
            lambda,
        });
    }
    if rows.is_empty() {
        return Err(Error::parse(path, None, "no sources in file"));
    }
    Ok(rows)
}

/// A column value: a finite number, or `None` for `nan` (C's missing-value marker).
fn parse_column(tok: &str) -> std::result::Result<Option<f64>, String> {
    let v: f64 = tok.parse().map_err(|_| format!("'{tok}' is not a number"))?;
    if v.is_nan() {
        Ok(None)
    } else if v.is_infinite() {
        Err(format!("'{tok}' is not finite"))
    } else {
        Ok(Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_support::{golden_dir, write_temp};
    use proptest::prelude::*;

    #[test]
    fn golden_sources() {
        let Some(dir) = golden_dir() else { return };
        let rows = read_sourcefile(&dir.join("inputs/sources.txt")).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0],
            SourceRow {
                x: Some(-10.0),
                y: Some(0.0),
                z: Some(0.0),
                weight: Some(1.0),
                lambda: Some(6.2e-10)
            }
        );
        assert_eq!(rows[1].y, Some(0.02));
        assert_eq!(rows[1].weight, Some(0.5));
        assert_eq!(rows[2].z, Some(-0.03));
        assert_eq!(rows[2].lambda, Some(6.3e-10));
    }

    #[test]
    fn delimiters_missing_columns_and_comments() {
        let f = write_temp(
            b"# X Y Z w lambda\n\n-1,0;0:2!1e-10\n  -1\t2\n\r\n1 nan 0.5 nan 2e-10 extra stuff\n ,; \n0 0 1",
        );
        let rows = read_sourcefile(f.path()).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[0],
            SourceRow {
                x: Some(-1.0),
                y: Some(0.0),
                z: Some(0.0),
                weight: Some(2.0),
                lambda: Some(1e-10)
            }
        );
        assert_eq!(
            rows[1],
            SourceRow {
                x: Some(-1.0),
                y: Some(2.0),
                ..Default::default()
            }
        );
        assert_eq!(
            rows[2],
            SourceRow {
                x: Some(1.0),
                y: None,
                z: Some(0.5),
                weight: None,
                lambda: Some(2e-10)
            }
        );
        assert_eq!(
            rows[3],
            SourceRow {
                x: Some(0.0),
                y: Some(0.0),
                z: Some(1.0),
                ..Default::default()
            }
        );
    }

    fn err_line(content: &[u8]) -> Option<usize> {
        match read_sourcefile(write_temp(content).path()) {
            Err(Error::Parse { line, .. }) => line,
            other => panic!("expected parse error, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(err_line(b"-10 0 0\n\n-10 abc 0\n"), Some(3));
        assert_eq!(err_line(b"-10 0 0\n0 0 0 1 1e-10\n"), Some(2));
        assert_eq!(err_line(b"-10 0 0\n0.0,-0.0,0\n"), Some(2));
        assert_eq!(err_line(b"-10 inf 0\n"), Some(1));
        assert_eq!(err_line(b"-10 0 0 1 1e-10x\n"), Some(1));
        assert_eq!(err_line(b""), None);
        assert_eq!(err_line(b"\n  \n# only comments\n"), None);
        let f = write_temp(b"1 2 3\n1 2 three\n");
        let msg = read_sourcefile(f.path()).unwrap_err().to_string();
        assert!(msg.contains(&format!("{}:2", f.path().display())), "{msg}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = read_sourcefile(write_temp(&bytes).path());
        }

        #[test]
        fn random_lines_never_panic(lines in proptest::collection::vec(
            "[ \t,;:!#]*(-?[0-9]{1,2}(\\.[0-9]{1,3})?(e-1[0-9])?|nan|x)?([ \t,;:!]+(-?[0-9]{1,2}(\\.[0-9])?|nan|0)){0,6}",
            0..10)) {
            if let Ok(rows) = read_sourcefile(write_temp(lines.join("\n").as_bytes()).path()) {
                prop_assert!(!rows.is_empty());
                prop_assert!(rows.len() <= lines.len());
            }
        }
    }
}
