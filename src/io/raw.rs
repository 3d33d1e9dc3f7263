//! Raw float images (`-floatfile`): `fpixels·spixels` little-endian `f32` values, no header,
//! fast-major order (index = slow·fpixels + fast). Values are photons per pixel.
//!
//! C writes native byte order; every platform it is run on in practice is little-endian, and this
//! port always writes little-endian so files are portable.

use super::atomic::{write_atomic_with, write_values};
use crate::base::error::{Error, Result};
use std::path::Path;

/// Writes `data` as raw little-endian `f32` values, atomically.
pub fn write_float_image(path: &Path, data: &[f32]) -> Result<()> {
    write_float_parts(path, &[data])
}

/// Writes `parts` one after the other as raw little-endian `f32` values, atomically, without
/// joining them in memory (the panels of a detector: `[P, slow, fast]`).
pub fn write_float_parts(path: &Path, parts: &[&[f32]]) -> Result<()> {
    let len = parts.iter().map(|p| p.len()).sum();
    write_atomic_with(path, &mut |w| {
        write_values(w, parts.iter().flat_map(|p| p.iter()).map(|v| v.to_le_bytes()), len)
    })
}

/// Reads a raw little-endian `f32` image.
///
/// The file length must be a multiple of 4 bytes and, when `expected_len` is given, hold exactly
/// that many values.
pub fn read_float_image(path: &Path, expected_len: Option<usize>) -> Result<Vec<f32>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if bytes.len() % 4 != 0 {
        return Err(Error::parse(
            path,
            None,
            format!("float image has {} bytes, not a multiple of 4", bytes.len()),
        ));
    }
    let n = bytes.len() / 4;
    if let Some(want) = expected_len {
        if n != want {
            return Err(Error::parse(
                path,
                None,
                format!("float image holds {n} values, expected {want}"),
            ));
        }
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        let data = [1.0f32, -2.5, 0.0, f32::MAX];
        write_float_image(&p, &data).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len(), 16);
        assert_eq!(&bytes[0..4], &[0x00, 0x00, 0x80, 0x3f]);
        assert_eq!(&bytes[4..8], &[0x00, 0x00, 0x20, 0xc0]);
        assert_eq!(read_float_image(&p, Some(4)).unwrap(), data);
        assert_eq!(read_float_image(&p, None).unwrap(), data);
        assert!(read_float_image(&p, Some(5)).is_err());
    }

    #[test]
    fn bad_length_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        std::fs::write(&p, [0u8; 7]).unwrap();
        let e = read_float_image(&p, None).unwrap_err();
        assert!(e.to_string().contains("f.bin"), "{e}");
        assert!(read_float_image(&dir.path().join("missing"), None).is_err());
    }

    #[test]
    fn reads_golden_float_image() {
        let Some(dir) = crate::io::test_support::golden_dir() else {
            return;
        };
        let img = read_float_image(&dir.join("smv_scale_adc_64.f32"), Some(64 * 64)).unwrap();
        // cases.json: max 154.6524658203125 at (slow 32, fast 32).
        let max = img.iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(max, 154.652_47);
        assert_eq!(img[32 * 64 + 32], max);
    }
}
