//! `.stol` tables: the structure factor of an amorphous material against sinθ/λ, as the C
//! suite's `nonBragg` reads them (`water.stol`, `ice.stol`, `air.stol`, … in `fixtures/stol/`).
//!
//! One point per line: the abscissa, then F (electrons; negative values are allowed), split by
//! any of C's delimiters ` \t,;:!`; further columns are ignored. Blank lines and lines whose
//! first field starts with `#` are skipped.
//!
//! Stricter than C, which reads any text as numbers (`#Curve 0` is a point (0, 0) there, see
//! `docs/differences.md`): a line that does not start with two finite numbers, a negative or
//! non-increasing abscissa, or a file without points is an error naming the file and line.

use crate::base::error::{Error, Result};
use std::path::Path;

/// C's field delimiters.
const DELIMITERS: &[char] = &[' ', '\t', ',', ';', ':', '!', '\r'];

pub use crate::config::StolUnits;

/// A table as read: abscissae in the file's units and F (electrons), one entry per point.
#[derive(Debug, Clone, PartialEq)]
pub struct StolTable {
    /// The abscissa of each point, strictly increasing, ≥ 0 (file units).
    pub x: Vec<f64>,
    /// F at each point (electrons per molecule).
    pub f: Vec<f64>,
}

/// Reads a `.stol` table; errors name `path:line`.
pub fn read_stol(path: &Path) -> Result<StolTable> {
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_stol(&String::from_utf8_lossy(&text), path)
}

/// Parses the text of a `.stol` table read from `path` (named in errors).
pub fn parse_stol(text: &str, path: &Path) -> Result<StolTable> {
    let mut table = StolTable {
        x: Vec::new(),
        f: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split(DELIMITERS).filter(|s| !s.is_empty());
        let Some(first) = fields.next() else { continue };
        if first.starts_with('#') {
            continue;
        }
        let at = |msg: String| Error::parse(path, Some(i + 1), msg);
        let number = |field: Option<&str>, what: &str| match field.map(str::parse::<f64>) {
            Some(Ok(v)) if v.is_finite() => Ok(v),
            Some(_) => Err(at(format!(
                "the {what} '{}' is not a finite number",
                field.unwrap_or("")
            ))),
            None => Err(at(format!("no {what}: a point needs sin(theta)/lambda and F"))),
        };
        let x = number(Some(first), "sin(theta)/lambda")?;
        let f = number(fields.next(), "structure factor F")?;
        if x < 0.0 {
            return Err(at(format!("sin(theta)/lambda {x} is negative")));
        }
        if let Some(&last) = table.x.last() {
            if x <= last {
                return Err(at(format!(
                    "sin(theta)/lambda {x} does not increase (the line before has {last})"
                )));
            }
        }
        table.x.push(x);
        table.f.push(f);
    }
    if table.x.is_empty() {
        return Err(Error::parse(
            path,
            None,
            "no data: a .stol table needs at least one 'stol F' line",
        ));
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StolTable> {
        parse_stol(text, Path::new("t.stol"))
    }

    #[test]
    fn reads_cs_delimiters_comments_and_extra_columns() {
        let t = parse("#Curve 0, 3 points\n#x y type\n0 1.5 i\n\n0.1,\t-2;x\n0.25:3!\n").unwrap();
        assert_eq!(t.x, vec![0.0, 0.1, 0.25]);
        assert_eq!(t.f, vec![1.5, -2.0, 3.0]);
    }

    #[test]
    fn malformed_tables_name_the_line() {
        for (text, line, words) in [
            ("0 1\n0.2 1\n0.1 1\n", 3, "does not increase"),
            ("0 1\n0 2\n", 2, "does not increase"),
            ("-0.1 1\n", 1, "negative"),
            ("0 1\n0.1 nan\n", 2, "not a finite number"),
            ("0 1\n0.1\n", 2, "no structure factor"),
            ("0 1\nabc 2\n", 2, "not a finite number"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(
                e.contains(&format!("t.stol:{line}")) && e.contains(words),
                "{text:?}: {e}"
            );
        }
        let e = parse("# only a comment\n\n").unwrap_err().to_string();
        assert!(e.contains("t.stol") && e.contains("no data"), "{e}");
    }
}
