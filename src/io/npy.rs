//! NumPy `.npy` files (format version 1.0) of `f32` arrays, for loading images with
//! `numpy.load`.
//!
//! Layout: the magic `\x93NUMPY`, version bytes 1 0, a little-endian u16 header length, then an
//! ASCII header dict `{'descr': '<f4', 'fortran_order': False, 'shape': (…), }` padded with
//! spaces and ended by `\n` so that magic + length + header is a multiple of 64 bytes, then the
//! data as little-endian `f32` in C (row-major) order. An image is written with shape
//! `[spixels, fpixels]`, so `a[slow, fast]` is the pixel.

use super::atomic::{write_atomic_with, write_values};
use crate::base::error::{Error, Result};
use std::path::Path;

/// `\x93NUMPY` followed by format version 1.0.
const MAGIC: &[u8; 8] = b"\x93NUMPY\x01\x00";

/// The padded header (dict + spaces + `\n`) for an `f32` array of `shape`.
fn header(shape: &[usize]) -> String {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut h = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {dims}, }}");
    // magic (8) + header length (2) + header, ending in '\n', is a multiple of 64.
    let total = (MAGIC.len() + 2 + h.len() + 1).div_ceil(64) * 64;
    let pad = total - (MAGIC.len() + 2 + h.len() + 1);
    h.extend(std::iter::repeat_n(' ', pad));
    h.push('\n');
    h
}

/// Writes `data` as a `.npy` v1.0 array of little-endian `f32` (`'<f4'`) with the given `shape`
/// (C order: the last axis varies fastest), atomically. An empty `shape` is a scalar (one value).
///
/// Error if the product of `shape` is not `data.len()` or the header does not fit format 1.0.
pub fn write_npy_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<()> {
    write_npy_f32_parts(path, shape, &[data])
}

/// [`write_npy_f32`] of `parts` one after the other, without joining them in memory (the panels
/// of a detector: shape `[P, slow, fast]`).
pub fn write_npy_f32_parts(path: &Path, shape: &[usize], parts: &[&[f32]]) -> Result<()> {
    let invalid = |msg: String| Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidInput, msg));
    let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let given: usize = parts.iter().map(|p| p.len()).sum();
    if count != Some(given) {
        return Err(invalid(format!(
            "array shape {shape:?} does not hold the {given} values given"
        )));
    }
    let h = header(shape);
    let Ok(len) = u16::try_from(h.len()) else {
        return Err(invalid(format!("npy header of {} bytes is too long", h.len())));
    };
    write_atomic_with(path, &mut |w| {
        w.write_all(MAGIC)?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(h.as_bytes())?;
        write_values(w, parts.iter().flat_map(|p| p.iter()).map(|v| v.to_le_bytes()), given)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses a v1.0 '<f4' file written by [`write_npy_f32`]: (header text, data).
    fn parse(bytes: &[u8]) -> (String, Vec<f32>) {
        assert_eq!(&bytes[..8], MAGIC);
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let start = 10 + len;
        assert_eq!(start % 64, 0, "data starts on a 64-byte boundary");
        let header = std::str::from_utf8(&bytes[10..start]).unwrap().to_string();
        assert!(header.ends_with('\n'));
        let data = bytes[start..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        (header, data)
    }

    #[test]
    fn header_and_data_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        let data: Vec<f32> = (0..6).map(|i| i as f32 * 1.5 - 2.0).collect();
        write_npy_f32(&p, &[2, 3], &data).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let (h, back) = parse(&bytes);
        assert_eq!(
            h.trim_end(),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
        );
        assert_eq!(back, data);
        assert_eq!(bytes.len(), 128 + 24);

        write_npy_f32(&p, &[4], &data[..4]).unwrap();
        let (h, back) = parse(&std::fs::read(&p).unwrap());
        assert!(h.contains("'shape': (4,), "), "{h}");
        assert_eq!(back, &data[..4]);

        write_npy_f32(&p, &[], &[7.0]).unwrap();
        let (h, back) = parse(&std::fs::read(&p).unwrap());
        assert!(h.contains("'shape': (), "), "{h}");
        assert_eq!(back, [7.0]);

        write_npy_f32(&p, &[0, 5], &[]).unwrap();
        let (h, back) = parse(&std::fs::read(&p).unwrap());
        assert!(h.contains("'shape': (0, 5), "), "{h}");
        assert!(back.is_empty());
    }

    #[test]
    fn padding_for_every_header_length() {
        // Shapes whose headers cross a 64-byte boundary are padded to the next one.
        for d in [1usize, 10, 12345, 1 << 40] {
            for rank in 1..6 {
                let h = header(&vec![d; rank]);
                assert_eq!((10 + h.len()) % 64, 0, "{h:?}");
                assert!(h.ends_with('\n') && !h[..h.len() - 1].contains('\n'));
            }
        }
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.npy");
        let e = write_npy_f32(&p, &[2, 2], &[1.0; 3]).unwrap_err();
        assert!(e.to_string().contains("b.npy"), "{e}");
        assert!(write_npy_f32(&p, &[usize::MAX, 2], &[]).is_err());
        assert!(write_npy_f32(&p, &[], &[]).is_err());
        assert!(!p.exists());
    }

    /// numpy reads the file back, when python3 with numpy is available (skipped otherwise).
    #[test]
    fn numpy_loads_it() {
        let have_numpy = std::process::Command::new("python3")
            .args(["-c", "import numpy"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !have_numpy {
            eprintln!("skipped: python3 with numpy not available");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.npy");
        let data: Vec<f32> = (0..12).map(|i| i as f32 / 4.0).collect();
        write_npy_f32(&p, &[3, 4], &data).unwrap();
        let script = "import sys, numpy as np; a = np.load(sys.argv[1]); \
                      print(a.dtype, a.shape, a.flags['C_CONTIGUOUS'], a[2, 1], a.sum())";
        let out = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&p)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "float32 (3, 4) True 2.25 16.5"
        );
    }
}
