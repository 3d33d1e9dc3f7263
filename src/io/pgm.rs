//! PGM preview images (`-pgmfile`): binary greyscale (P5), one byte per pixel, fast-major.

use super::atomic::{write_atomic_with, write_values};
use crate::base::cfmt::fmt_g;
use crate::base::error::{Error, Result};
use std::path::Path;

/// Writes a P5 PGM exactly as C does, atomically:
/// `P5\n<fpixels> <spixels>\n# pixels scaled by <pgm_scale as %lg>\n255\n` then the
/// `fpixels·spixels` bytes (already scaled and clipped by the caller).
///
/// Error unless `bytes` yields exactly `fpixels·spixels` bytes; then nothing is written.
pub fn write_pgm(
    path: &Path,
    fpixels: usize,
    spixels: usize,
    pgm_scale: f64,
    bytes: impl IntoIterator<Item = u8>,
) -> Result<()> {
    let Some(n) = fpixels.checked_mul(spixels) else {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a {fpixels} x {spixels} image has too many pixels"),
            ),
        ));
    };
    let header = format!(
        "P5\n{fpixels} {spixels}\n# pixels scaled by {}\n255\n",
        fmt_g(pgm_scale)
    );
    let mut bytes = Some(bytes);
    write_atomic_with(path, &mut |w| {
        w.write_all(header.as_bytes())?;
        write_values(w, bytes.take().into_iter().flatten().map(|b| [b]), n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_support::golden_dir;

    /// The golden PGM is reproduced byte for byte. Its scale, 2.53538 as printed, is C's
    /// 250/(5·rmsd); the log gives the same value ("pgm_scale = 2.53538").
    #[test]
    fn golden_pgm_identical() {
        let Some(dir) = golden_dir() else { return };
        let original = std::fs::read(dir.join("smv_noise_pgm_64.image.pgm")).unwrap();
        let head = b"P5\n64 64\n# pixels scaled by 2.53538\n255\n";
        assert_eq!(&original[..head.len()], head);
        let pixels = &original[head.len()..];
        assert_eq!(pixels.len(), 64 * 64);
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("image.pgm");
        // Any value that %g prints as 2.53538 gives the same header.
        write_pgm(&p, 64, 64, 2.535381, pixels.iter().copied()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), original);
    }

    #[test]
    fn header_format_and_size_check() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.pgm");
        write_pgm(&p, 3, 1, 1e-7, [0, 128, 255]).unwrap();
        let written = b"P5\n3 1\n# pixels scaled by 1e-07\n255\n\x00\x80\xff";
        assert_eq!(std::fs::read(&p).unwrap(), written);
        // too few or too many bytes: an error, and the file written before is left as it was
        assert!(write_pgm(&p, 2, 2, 1.0, [0; 3]).is_err());
        assert!(write_pgm(&p, 1, 2, 1.0, [0; 3]).is_err());
        assert!(write_pgm(&p, usize::MAX, 2, 1.0, [0; 3]).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), written);
    }
}
