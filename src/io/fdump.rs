//! `Fdump.bin`, the C program's binary cache of the structure-factor grid.
//!
//! Layout (C writes it after reading `-hkl`, and reads it when no `-hkl` is given):
//!
//! 1. ASCII header `"h_min h_max k_min k_max l_min l_max\n"` followed by a form feed (`\x0c`);
//! 2. `(h_count+1)·(k_count+1)·(l_count+1)` little-endian `f64` values (C: native order), h
//!    slowest and l fastest, where `h_count = h_max − h_min + 1`. The last h plane, the last k
//!    row of every plane and the last l value of every row are padding: C's grid is allocated one
//!    larger in every dimension and the padding is written as zeros.
//!
//! Differences from C's reader: C parses the header with `fscanf("%d...%d\n\f")`, whose `\n`
//! directive swallows *any* whitespace, so a first F value whose low byte happens to be a
//! whitespace byte (0x09–0x0d, 0x20) would be mis-read; this reader requires exactly `"\n\x0c"`
//! after the six integers. It also rejects truncated files and files with trailing bytes, which
//! C reads silently.

use super::atomic::write_atomic;
use super::hkl::{alloc_grid, HklGrid};
use crate::base::error::{Error, Result};
use std::path::Path;

/// The header is six `i32`s and five spaces: at most 71 bytes before the newline.
const MAX_HEADER_LINE: usize = 128;

/// Writes `grid` in C's `Fdump.bin` layout (header, then the padded grid), atomically.
pub fn write_fdump(path: &Path, grid: &HklGrid) -> Result<()> {
    let [hc, kc, lc] = grid.counts();
    let padded = (hc + 1).checked_mul(kc + 1).and_then(|n| n.checked_mul(lc + 1));
    let consistent =
        hc != 0 && kc != 0 && lc != 0 && hc.checked_mul(kc).and_then(|n| n.checked_mul(lc)) == Some(grid.values.len());
    let Some(padded) = padded.filter(|_| consistent) else {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "grid holds {} values but its ranges span {hc} x {kc} x {lc}",
                    grid.values.len()
                ),
            ),
        ));
    };
    let header = format!(
        "{} {} {} {} {} {}\n\x0c",
        grid.h_min, grid.h_max, grid.k_min, grid.k_max, grid.l_min, grid.l_max
    );
    let mut bytes = Vec::with_capacity(header.len() + 8 * padded);
    bytes.extend_from_slice(header.as_bytes());
    for h0 in 0..=hc {
        for k0 in 0..=kc {
            for l0 in 0..=lc {
                let v = if h0 < hc && k0 < kc && l0 < lc {
                    grid.values[(h0 * kc + k0) * lc + l0]
                } else {
                    0.0
                };
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    write_atomic(path, &bytes)
}

/// Reads an `Fdump.bin` written by C or by [`write_fdump`]. The padding is dropped;
/// `entries` is the number of grid points (C's `hkls = h_range·k_range·l_range`).
///
/// Errors: a header that is not six integers followed by `"\n\x0c"`, an inverted range, or a data
/// section whose length is not exactly the padded grid size.
pub fn read_fdump(path: &Path) -> Result<HklGrid> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let garbled = |msg: String| Error::parse(path, Some(1), msg);

    let nl = bytes
        .iter()
        .take(MAX_HEADER_LINE)
        .position(|&b| b == b'\n')
        .ok_or_else(|| garbled("no header line (expected six integers and a newline)".into()))?;
    let header = std::str::from_utf8(&bytes[..nl]).map_err(|_| garbled("header is not text".into()))?;
    let nums = header
        .split_whitespace()
        .map(|t| t.parse::<i32>())
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| garbled(format!("header '{header}' is not six integers")))?;
    let [h_min, h_max, k_min, k_max, l_min, l_max] = nums[..] else {
        return Err(garbled(format!("header '{header}' is not six integers")));
    };
    if bytes.get(nl + 1) != Some(&0x0c) {
        return Err(garbled("header line is not followed by a form feed".into()));
    }
    if h_max < h_min || k_max < k_min || l_max < l_min {
        return Err(garbled(format!("inverted index range in header '{header}'")));
    }

    let mut grid = HklGrid {
        h_min,
        h_max,
        k_min,
        k_max,
        l_min,
        l_max,
        values: Vec::new(),
        entries: 0,
    };
    let [hc, kc, lc] = grid.counts();
    let data = &bytes[nl + 2..];
    let expected = (hc + 1)
        .checked_mul(kc + 1)
        .and_then(|n| n.checked_mul(lc + 1))
        .and_then(|n| n.checked_mul(8));
    if expected != Some(data.len()) {
        let want = expected.map_or_else(|| "an impossible number of".to_string(), |n| n.to_string());
        return Err(Error::parse(
            path,
            None,
            format!(
                "data section has {} bytes, but a {hc} x {kc} x {lc} grid with padding needs {want} bytes{}",
                data.len(),
                if expected.is_some_and(|n| data.len() < n) {
                    " (truncated file)"
                } else {
                    ""
                }
            ),
        ));
    }
    grid.values = alloc_grid(path, [hc, kc, lc], 0.0)?;
    grid.entries = grid.values.len();
    let mut chunks = data.chunks_exact(8);
    let mut i = 0;
    for h0 in 0..=hc {
        for k0 in 0..=kc {
            for l0 in 0..=lc {
                let Some(c) = chunks.next() else {
                    return Err(Error::parse(path, None, "truncated data section"));
                };
                if h0 < hc && k0 < kc && l0 < lc {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    grid.values[i] = f64::from_le_bytes(b);
                    i += 1;
                }
            }
        }
    }
    Ok(grid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::hkl::read_hkl;
    use crate::io::test_support::{golden_dir, write_temp};
    use proptest::prelude::*;

    fn f64_at(bytes: &[u8], header_len: usize, idx: usize) -> f64 {
        let o = header_len + 8 * idx;
        f64::from_le_bytes(bytes[o..o + 8].try_into().unwrap())
    }

    /// Layout checked against the Fdump.bin the C binary wrote for
    /// `-hkl pattern.hkl -default_F 0 -cell 100 100 100 90 90 90 -detpixels 8`:
    /// header "-1 2 -1 2 -1 1\n\x0c", 816 bytes, F(-1,-1,0)=20 at value 1, F(-1,0,0)=40 at 5.
    #[test]
    fn pattern_layout_matches_c() {
        let Some(dir) = golden_dir() else { return };
        let g = read_hkl(&dir.join("inputs/pattern.hkl"), 0.0).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("Fdump.bin");
        write_fdump(&p, &g).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let head = b"-1 2 -1 2 -1 1\n\x0c";
        assert_eq!(&bytes[..head.len()], head);
        assert_eq!(bytes.len(), 816);
        assert_eq!(f64_at(&bytes, 16, 0), 0.0);
        assert_eq!(f64_at(&bytes, 16, 1), 20.0);
        assert_eq!(f64_at(&bytes, 16, 5), 40.0);
        // F(0,0,0)=100: h0=1, k0=1, l0=1 in the padded 5 x 5 x 4 grid.
        assert_eq!(f64_at(&bytes, 16, (5 + 1) * 4 + 1), 100.0);
        // Padding planes are zero.
        assert_eq!(f64_at(&bytes, 16, 3), 0.0);

        let back = read_fdump(&p).unwrap();
        assert_eq!(back.values, g.values);
        assert_eq!(back.entries, 48);
        assert_eq!((back.h_min, back.h_max, back.l_min, back.l_max), (-1, 2, -1, 1));
    }

    /// Byte-for-byte comparison with the C program, when `NANOBRAGG_C_BIN` names its binary.
    #[test]
    fn identical_to_c_binary_when_available() {
        let (Some(dir), Some(c_bin)) = (golden_dir(), std::env::var_os("NANOBRAGG_C_BIN")) else {
            eprintln!("skipped: set NANOBRAGG_C_BIN to the C nanoBragg binary to compare");
            return;
        };
        for (hkl, default_f) in [("pattern.hkl", "0"), ("sparse.hkl", "3.5"), ("smooth.hkl", "0")] {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::copy(dir.join("inputs").join(hkl), tmp.path().join(hkl)).unwrap();
            let status = std::process::Command::new(&c_bin)
                .current_dir(tmp.path())
                .args([
                    "-hkl",
                    hkl,
                    "-default_F",
                    default_f,
                    "-cell",
                    "100",
                    "100",
                    "100",
                    "90",
                    "90",
                    "90",
                ])
                .args(["-detpixels", "4", "-nonoise", "-nopgm"])
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            let c_bytes = std::fs::read(tmp.path().join("Fdump.bin")).unwrap();
            let g = read_hkl(&tmp.path().join(hkl), default_f.parse().unwrap()).unwrap();
            let ours = tmp.path().join("ours.bin");
            write_fdump(&ours, &g).unwrap();
            assert_eq!(std::fs::read(&ours).unwrap(), c_bytes, "{hkl}");
            assert_eq!(read_fdump(&tmp.path().join("Fdump.bin")).unwrap().values, g.values);
        }
    }

    #[test]
    fn round_trip_with_negative_and_odd_ranges() {
        let g = HklGrid {
            h_min: -3,
            h_max: -2,
            k_min: 5,
            k_max: 5,
            l_min: -1,
            l_max: 2,
            values: (0..8).map(|i| i as f64 * 1.25 - 3.0).collect(),
            entries: 5,
        };
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("Fdump.bin");
        write_fdump(&p, &g).unwrap();
        let back = read_fdump(&p).unwrap();
        assert_eq!(back.values, g.values);
        assert_eq!(back.entries, 8);
        assert_eq!(back.get(-2, 5, 2), Some(g.values[7]));
    }

    #[test]
    fn inconsistent_grid_is_refused() {
        let g = HklGrid {
            h_min: 0,
            h_max: 1,
            k_min: 0,
            k_max: 0,
            l_min: 0,
            l_max: 0,
            values: vec![1.0],
            entries: 1,
        };
        let tmp = tempfile::tempdir().unwrap();
        assert!(write_fdump(&tmp.path().join("F"), &g).is_err());
    }

    #[test]
    fn truncated_and_garbled_files() {
        let mut good = b"0 0 0 0 0 1\n\x0c".to_vec();
        good.extend(std::iter::repeat_n(0u8, 2 * 2 * 3 * 8));
        assert!(read_fdump(write_temp(&good).path()).is_ok());
        assert!(read_fdump(write_temp(&good[..good.len() - 1]).path()).is_err());
        let mut long = good.clone();
        long.push(0);
        assert!(read_fdump(write_temp(&long).path()).is_err());
        let mut no_ff = good.clone();
        no_ff[12] = b' ';
        assert!(read_fdump(write_temp(&no_ff).path()).is_err());
        assert!(read_fdump(write_temp(b"0 0 0 0 0\n\x0c").path()).is_err());
        assert!(read_fdump(write_temp(b"0 0 0 0 1 0\n\x0c").path()).is_err());
        assert!(read_fdump(write_temp(b"a b c d e f\n\x0c").path()).is_err());
        assert!(read_fdump(write_temp(b"").path()).is_err());
        assert!(read_fdump(write_temp(b"-2147483648 2147483647 -2147483648 2147483647 0 0\n\x0c").path()).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = read_fdump(write_temp(&bytes).path());
        }

        #[test]
        fn random_header_never_panics(
            r in proptest::array::uniform6(-3i32..3), extra in 0usize..40) {
            let mut bytes = format!("{} {} {} {} {} {}\n\x0c", r[0], r[1], r[2], r[3], r[4], r[5]).into_bytes();
            bytes.extend(std::iter::repeat_n(0u8, extra * 8));
            if let Ok(g) = read_fdump(write_temp(&bytes).path()) {
                let [a, b, c] = g.counts();
                prop_assert_eq!((a + 1) * (b + 1) * (c + 1), extra);
            }
        }
    }
}
