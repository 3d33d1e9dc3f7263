//! SMV (ADSC) images: a text header of `KEY=value;` lines padded to `HEADER_BYTES`, followed by
//! unsigned 16-bit pixels in fast-major order (index = slow·SIZE1 + fast).
//!
//! Reading follows C's `GetFrame`/`ValueOf` (used for `-img` and `-mask`); writing reproduces the
//! header C writes for `-intfile` and `-noisefile` byte for byte.
//!
//! Header units, as C writes and reads them: lengths in mm, wavelength in Å, angles in degrees,
//! `XDS_ORGX`/`XDS_ORGY` in pixels.

use super::atomic::{write_atomic_with, write_values};
use crate::base::cfmt::fmt_g;
use crate::base::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// The bytes every SMV file starts with (C compares the first 12 bytes).
const MAGIC: &[u8] = b"{\nHEADER_BYT";

/// Size of the header block C writes.
const WRITTEN_HEADER_BYTES: usize = 512;

/// An SMV header as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmvHeader {
    /// The first `header_bytes` bytes of the file, up to the first NUL byte (where C's string
    /// functions stop), with invalid UTF-8 replaced.
    pub text: String,
    /// `HEADER_BYTES`: where the pixel data start.
    pub header_bytes: usize,
}

impl SmvHeader {
    /// Byte offset just after the `=` that follows the last occurrence of `key`, as C's
    /// `ValueOf` finds it.
    ///
    /// C searches substrings, so keys match inside longer keys: `DISTANCE` finds
    /// `CLOSE_DISTANCE` when that comes later (as in the headers nanoBragg writes), `ORGX` finds
    /// `XDS_ORGX`. The `=` may be anywhere after the key, even on a later line.
    fn value_offset(&self, key: &str) -> Option<usize> {
        if key.is_empty() {
            return None;
        }
        // Repeated forward search, each starting after the previous match, as C does (this is
        // not always `rfind` for self-overlapping keys).
        let mut pos = None;
        let mut from = 0;
        while let Some(i) = self.text.get(from..).and_then(|t| t.find(key)) {
            from += i + key.len();
            pos = Some(from);
        }
        let after = pos?;
        let eq = self.text.get(after..)?.find('=')?;
        Some(after + eq + 1)
    }

    /// The number after `key=`, like C's `ValueOf`: the last substring occurrence of `key`, the
    /// next `=` after it, then the longest numeric prefix as `atof` reads it (leading whitespace
    /// skipped).
    ///
    /// `None` when the key is missing (C: NaN), when no `=` follows it or nothing numeric follows
    /// the `=` (C: 0.0), or when the value is NaN. Hexadecimal numbers, which `atof` accepts, are
    /// not supported.
    pub fn value_of(&self, key: &str) -> Option<f64> {
        let off = self.value_offset(key)?;
        c_atof(self.text.get(off..)?).filter(|v| !v.is_nan())
    }

    /// The text after `key=` (same search as [`value_of`](Self::value_of)) up to the next `;` or
    /// line end, trimmed; e.g. `little_endian` for `BYTE_ORDER`. `None` if missing or empty.
    pub fn string_of(&self, key: &str) -> Option<String> {
        let off = self.value_offset(key)?;
        let rest = self.text.get(off..)?;
        let end = rest.find([';', '\n', '\r']).unwrap_or(rest.len());
        let v = rest[..end].trim();
        (!v.is_empty()).then(|| v.to_string())
    }

    /// The value of the line `key=value;` whose key is exactly `key` (not a substring match; the
    /// last such line wins), up to `;` or the line end, trimmed. Used to read back headers this
    /// program writes; C has no equivalent.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.text
            .lines()
            .filter_map(|line| line.split_once('='))
            .filter(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.split(';').next().unwrap_or("").trim())
            .next_back()
    }

    /// 1-based line number of a byte offset in the header text.
    fn line_at(&self, offset: usize) -> usize {
        self.text
            .as_bytes()
            .iter()
            .take(offset)
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// A positive integer value (`SIZE1`, `HEADER_BYTES` ...), or an error naming the line.
    fn positive_int(&self, path: &Path, key: &str) -> Result<Option<usize>> {
        let Some(off) = self.value_offset(key) else {
            return Ok(None);
        };
        let v = self.value_of(key).unwrap_or(f64::NAN);
        if !(v >= 1.0 && v.fract() == 0.0 && v <= u32::MAX as f64) {
            return Err(Error::parse(
                path,
                Some(self.line_at(off)),
                format!("{key} must be a positive integer"),
            ));
        }
        Ok(Some(v as usize))
    }
}

/// C's `atof`: skip leading whitespace, then read the longest prefix that is a decimal number
/// (optional sign, digits with an optional point, optional exponent) or `inf`/`infinity`/`nan`.
/// `None` if there is no such prefix.
fn c_atof(s: &str) -> Option<f64> {
    let s = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let lower = s.get(i..).map(|t| t.to_ascii_lowercase()).unwrap_or_default();
    for (word, len) in [("infinity", 8), ("inf", 3), ("nan", 3)] {
        if lower.starts_with(word) {
            return s.get(..i + len)?.parse().ok();
        }
    }
    let digits = |mut j: usize| {
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let int_end = digits(i);
    let mut end = int_end;
    let mut n_digits = int_end - i;
    if b.get(end) == Some(&b'.') {
        let frac_end = digits(end + 1);
        n_digits += frac_end - end - 1;
        end = frac_end;
    }
    if n_digits == 0 {
        return None;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut j = end + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_end = digits(j);
        if exp_end > j {
            end = exp_end;
        }
    }
    s.get(..end)?.parse().ok()
}

/// Parses a header from the first bytes of a file (at least the first 512, or the whole file if
/// shorter) and returns `HEADER_BYTES`.
fn header_size(path: &Path, prefix: &[u8]) -> Result<usize> {
    if !prefix.starts_with(MAGIC) {
        return Err(Error::parse(
            path,
            Some(1),
            "not an SMV file (it must start with \"{\\nHEADER_BYTES=\")",
        ));
    }
    let probe = SmvHeader {
        text: header_text(prefix),
        header_bytes: prefix.len(),
    };
    probe
        .positive_int(path, "HEADER_BYTES")?
        .ok_or_else(|| Error::parse(path, Some(2), "HEADER_BYTES has no value"))
}

/// Header bytes as text, cut at the first NUL as C's string functions would.
fn header_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn short_header(path: &Path, header_bytes: usize, len: usize) -> Error {
    Error::parse(
        path,
        None,
        format!("file has {len} bytes, fewer than HEADER_BYTES={header_bytes}"),
    )
}

/// Reads only the header of an SMV file.
///
/// The file must start with `{\nHEADER_BYT`; `HEADER_BYTES` is read from the first 512 bytes
/// (as C does) and the whole header is then read.
pub fn read_smv_header(path: &Path) -> Result<SmvHeader> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    let mut reader = file.take(WRITTEN_HEADER_BYTES as u64);
    reader.read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    let header_bytes = header_size(path, &bytes)?;
    if header_bytes > bytes.len() {
        let mut file = reader.into_inner();
        (&mut file)
            .take((header_bytes - bytes.len()) as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        if bytes.len() < header_bytes {
            return Err(short_header(path, header_bytes, bytes.len()));
        }
    }
    Ok(SmvHeader {
        text: header_text(&bytes[..header_bytes]),
        header_bytes,
    })
}

/// Reads an SMV image of unsigned 16-bit pixels: the header, then `SIZE1·SIZE2` values
/// (fast-major) starting at byte `HEADER_BYTES`.
///
/// `BYTE_ORDER=big_endian` data are byte-swapped; `little_endian` or no `BYTE_ORDER` is read as
/// little-endian. (C reads the pixels without ever swapping, i.e. in its native order.) Like C,
/// if `SIZE1` is missing or 0, `DETECTOR_DIMENSIONS` gives both sizes. `TYPE` is not checked
/// (C does not check it either). Bytes after the image are ignored.
///
/// Errors: not an SMV file, missing or non-integer sizes, an unknown `BYTE_ORDER`, or a file too
/// short for the header or the pixels.
pub fn read_smv_u16(path: &Path) -> Result<(SmvHeader, Vec<u16>)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let header_bytes = header_size(path, &bytes[..bytes.len().min(WRITTEN_HEADER_BYTES)])?;
    let Some(head) = bytes.get(..header_bytes) else {
        return Err(short_header(path, header_bytes, bytes.len()));
    };
    let header = SmvHeader {
        text: header_text(head),
        header_bytes,
    };

    let (width, height) = match header.positive_int(path, "SIZE1") {
        Ok(Some(w)) => {
            let h = header
                .positive_int(path, "SIZE2")?
                .ok_or_else(|| Error::parse(path, None, "SMV header has no SIZE2"))?;
            (w, h)
        }
        // C falls back to DETECTOR_DIMENSIONS when SIZE1 reads as 0 or is absent.
        size1 => match header.positive_int(path, "DETECTOR_DIMENSIONS") {
            Ok(Some(d)) => (d, d),
            _ => {
                size1?;
                return Err(Error::parse(path, None, "SMV header has no SIZE1/SIZE2"));
            }
        },
    };

    let big_endian = match header.string_of("BYTE_ORDER").as_deref() {
        None | Some("little_endian") => false,
        Some("big_endian") => true,
        Some(other) => {
            let line = header.value_offset("BYTE_ORDER").map(|o| header.line_at(o));
            return Err(Error::parse(
                path,
                line,
                format!("unknown BYTE_ORDER '{other}' (expected little_endian or big_endian)"),
            ));
        }
    };

    let need = width.checked_mul(height).and_then(|n| n.checked_mul(2));
    let data = need
        .and_then(|n| n.checked_add(header_bytes))
        .and_then(|end| bytes.get(header_bytes..end))
        .ok_or_else(|| {
            Error::parse(
                path,
                None,
                format!(
                    "pixel data too short: {width} x {height} 16-bit pixels need {} bytes after the {header_bytes}-byte header, found {}",
                    need.map_or_else(|| "too many".to_string(), |n| n.to_string()),
                    bytes.len() - header_bytes
                ),
            )
        })?;
    let values = data
        .chunks_exact(2)
        .map(|c| {
            let b = [c[0], c[1]];
            if big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        })
        .collect();
    Ok((header, values))
}

/// The values C writes into an SMV header, in header units (mm, Å, degrees, pixels).
///
/// Compute them exactly as C does (e.g. `mosflm_center_x_mm = (Sbeam − 0.5·pixel)·1000`) to get
/// identical `%g` text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmvFields {
    /// `SIZE1`: fast-axis pixel count.
    pub fpixels: usize,
    /// `SIZE2`: slow-axis pixel count.
    pub spixels: usize,
    /// `PIXEL_SIZE` (mm).
    pub pixel_size_mm: f64,
    /// `DISTANCE` (mm).
    pub distance_mm: f64,
    /// `WAVELENGTH` (Å).
    pub wavelength_angstrom: f64,
    /// `BEAM_CENTER_X` (mm): Xbeam.
    pub beam_center_x_mm: f64,
    /// `BEAM_CENTER_Y` (mm): Ybeam.
    pub beam_center_y_mm: f64,
    /// `ADXV_CENTER_X` (mm): Fbeam.
    pub adxv_center_x_mm: f64,
    /// `ADXV_CENTER_Y` (mm): detsize_s − Sbeam.
    pub adxv_center_y_mm: f64,
    /// `MOSFLM_CENTER_X` (mm): Sbeam − ½ pixel.
    pub mosflm_center_x_mm: f64,
    /// `MOSFLM_CENTER_Y` (mm): Fbeam − ½ pixel.
    pub mosflm_center_y_mm: f64,
    /// `DENZO_X_BEAM` (mm): Sbeam.
    pub denzo_x_beam_mm: f64,
    /// `DENZO_Y_BEAM` (mm): Fbeam.
    pub denzo_y_beam_mm: f64,
    /// `DIALS_ORIGIN` (mm), three comma-separated values.
    pub dials_origin_mm: [f64; 3],
    /// `XDS_ORGX` (pixels).
    pub xds_orgx_px: f64,
    /// `XDS_ORGY` (pixels).
    pub xds_orgy_px: f64,
    /// `CLOSE_DISTANCE` (mm).
    pub close_distance_mm: f64,
    /// `PHI` (degrees).
    pub phi_deg: f64,
    /// `OSC_START` (degrees; C writes φ0 here too).
    pub osc_start_deg: f64,
    /// `OSC_RANGE` (degrees).
    pub osc_range_deg: f64,
    /// `TWOTHETA` (degrees).
    pub twotheta_deg: f64,
}

impl SmvFields {
    /// The header text C writes, up to and including the closing `}` and form feed, before the
    /// space padding. Values are formatted with `%g`; `DIALS_ORIGIN` has no trailing `;`, as in
    /// C. `BYTE_ORDER` is always `little_endian` because [`write_smv`] writes little-endian data.
    pub fn header_text(&self) -> String {
        self.header_text_sized(WRITTEN_HEADER_BYTES)
    }

    /// [`SmvFields::header_text`] announcing `header_bytes` in `HEADER_BYTES`.
    fn header_text_sized(&self, header_bytes: usize) -> String {
        let g = fmt_g;
        let [o1, o2, o3] = self.dials_origin_mm;
        let mut s = String::with_capacity(WRITTEN_HEADER_BYTES);
        s.push_str(&format!(
            "{{\nHEADER_BYTES={header_bytes};\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\n"
        ));
        s.push_str(&format!("SIZE1={};\nSIZE2={};\n", self.fpixels, self.spixels));
        for (key, v) in [
            ("PIXEL_SIZE", self.pixel_size_mm),
            ("DISTANCE", self.distance_mm),
            ("WAVELENGTH", self.wavelength_angstrom),
            ("BEAM_CENTER_X", self.beam_center_x_mm),
            ("BEAM_CENTER_Y", self.beam_center_y_mm),
            ("ADXV_CENTER_X", self.adxv_center_x_mm),
            ("ADXV_CENTER_Y", self.adxv_center_y_mm),
            ("MOSFLM_CENTER_X", self.mosflm_center_x_mm),
            ("MOSFLM_CENTER_Y", self.mosflm_center_y_mm),
            ("DENZO_X_BEAM", self.denzo_x_beam_mm),
            ("DENZO_Y_BEAM", self.denzo_y_beam_mm),
        ] {
            s.push_str(&format!("{key}={};\n", g(v)));
        }
        s.push_str(&format!("DIALS_ORIGIN={},{},{}\n", g(o1), g(o2), g(o3)));
        for (key, v) in [
            ("XDS_ORGX", self.xds_orgx_px),
            ("XDS_ORGY", self.xds_orgy_px),
            ("CLOSE_DISTANCE", self.close_distance_mm),
            ("PHI", self.phi_deg),
            ("OSC_START", self.osc_start_deg),
            ("OSC_RANGE", self.osc_range_deg),
            ("TWOTHETA", self.twotheta_deg),
        ] {
            s.push_str(&format!("{key}={};\n", g(v)));
        }
        s.push_str("DETECTOR_SN=000;\nBEAMLINE=fake;\n}\x0c");
        s
    }

    /// Reads the fields back from a header written by [`write_smv`] (or by C), by exact key.
    /// `None` if any key is missing or malformed.
    pub fn from_header(h: &SmvHeader) -> Option<SmvFields> {
        let num = |k: &str| h.field(k)?.parse::<f64>().ok();
        let count = |k: &str| h.field(k)?.parse::<usize>().ok();
        let mut origin = [0.0; 3];
        let parts: Vec<&str> = h.field("DIALS_ORIGIN")?.split(',').collect();
        if parts.len() != 3 {
            return None;
        }
        for (o, p) in origin.iter_mut().zip(parts) {
            *o = p.trim().parse().ok()?;
        }
        Some(SmvFields {
            fpixels: count("SIZE1")?,
            spixels: count("SIZE2")?,
            pixel_size_mm: num("PIXEL_SIZE")?,
            distance_mm: num("DISTANCE")?,
            wavelength_angstrom: num("WAVELENGTH")?,
            beam_center_x_mm: num("BEAM_CENTER_X")?,
            beam_center_y_mm: num("BEAM_CENTER_Y")?,
            adxv_center_x_mm: num("ADXV_CENTER_X")?,
            adxv_center_y_mm: num("ADXV_CENTER_Y")?,
            mosflm_center_x_mm: num("MOSFLM_CENTER_X")?,
            mosflm_center_y_mm: num("MOSFLM_CENTER_Y")?,
            denzo_x_beam_mm: num("DENZO_X_BEAM")?,
            denzo_y_beam_mm: num("DENZO_Y_BEAM")?,
            dials_origin_mm: origin,
            xds_orgx_px: num("XDS_ORGX")?,
            xds_orgy_px: num("XDS_ORGY")?,
            close_distance_mm: num("CLOSE_DISTANCE")?,
            phi_deg: num("PHI")?,
            osc_start_deg: num("OSC_START")?,
            osc_range_deg: num("OSC_RANGE")?,
            twotheta_deg: num("TWOTHETA")?,
        })
    }
}

/// Writes an SMV image as C does: the header of [`SmvFields::header_text`], spaces up to byte
/// 512, then `data` as little-endian `u16` (fast-major), atomically.
///
/// A header longer than 512 bytes (long `%g` values: negative centres, 2θ, φ...) announces and
/// is padded to the next multiple of 512 bytes. C instead writes it unpadded after
/// `HEADER_BYTES=512`, so its data start at the wrong offset; see docs/differences.md.
///
/// `data` is produced as it is written. Errors unless it yields exactly `fpixels·spixels`
/// values; then nothing is written.
pub fn write_smv(path: &Path, fields: &SmvFields, data: impl IntoIterator<Item = u16>) -> Result<()> {
    let invalid = |msg: String| Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidInput, msg));
    let Some(n) = fields.fpixels.checked_mul(fields.spixels) else {
        return Err(invalid(format!(
            "a {} x {} image has too many pixels",
            fields.fpixels, fields.spixels
        )));
    };
    let mut size = WRITTEN_HEADER_BYTES;
    let mut header = fields.header_text_sized(size);
    while header.len() > size {
        size = header.len().div_ceil(WRITTEN_HEADER_BYTES) * WRITTEN_HEADER_BYTES;
        header = fields.header_text_sized(size);
    }
    let padding = vec![b' '; size - header.len()];
    let mut data = Some(data);
    write_atomic_with(path, &mut |w| {
        w.write_all(header.as_bytes())?;
        w.write_all(&padding)?;
        write_values(w, data.take().into_iter().flatten().map(u16::to_le_bytes), n)
    })
}

/// The pixels of an SMV image, in the integer type its header's `TYPE` names.
#[derive(Debug, Clone, Copy)]
pub enum SmvPixels<'a> {
    /// `TYPE=unsigned_short`.
    U16(&'a [u16]),
    /// `TYPE=long_integer` (unsigned 32-bit, as C's `noisify` writes it).
    U32(&'a [u32]),
}

/// Writes a header block given whole (already padded to its `HEADER_BYTES`) and then the
/// pixels as little-endian integers, atomically.
pub fn write_smv_block(path: &Path, header: &[u8], pixels: SmvPixels<'_>) -> Result<()> {
    write_atomic_with(path, &mut |w| {
        w.write_all(header)?;
        match pixels {
            SmvPixels::U16(p) => write_values(w, p.iter().map(|v| v.to_le_bytes()), p.len()),
            SmvPixels::U32(p) => write_values(w, p.iter().map(|v| v.to_le_bytes()), p.len()),
        }
    })
}

/// `text` followed by spaces up to a multiple of 512 bytes (at least 512), as C pads the
/// headers it writes.
pub fn pad_header(text: &str) -> Vec<u8> {
    let size = text.len().div_ceil(WRITTEN_HEADER_BYTES).max(1) * WRITTEN_HEADER_BYTES;
    let mut bytes = text.as_bytes().to_vec();
    bytes.resize(size, b' ');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::test_support::{golden_dir, write_temp};
    use proptest::prelude::*;

    fn header(text: &str) -> SmvHeader {
        SmvHeader {
            text: text.to_string(),
            header_bytes: 512,
        }
    }

    /// Every golden SMV file C wrote is reproduced byte for byte (header and pixels) from the
    /// values parsed back out of it.
    #[test]
    fn long_headers_grow_to_the_next_block() {
        let fields = SmvFields {
            fpixels: 2,
            spixels: 1,
            beam_center_x_mm: -123.456789,
            beam_center_y_mm: -123.456789,
            adxv_center_x_mm: -123.456789,
            adxv_center_y_mm: -123.456789,
            mosflm_center_x_mm: -123.456789,
            mosflm_center_y_mm: -123.456789,
            denzo_x_beam_mm: -123.456789,
            denzo_y_beam_mm: -123.456789,
            dials_origin_mm: [-123.456789; 3],
            xds_orgx_px: -1234.56789,
            xds_orgy_px: -1234.56789,
            twotheta_deg: -23.4567,
            phi_deg: -123.456,
            osc_start_deg: -123.456,
            osc_range_deg: 0.123456,
            ..Default::default()
        };
        assert!(fields.header_text().len() > 512);
        let file = write_temp(b"");
        write_smv(file.path(), &fields, [7, 9]).unwrap();
        let (h, data) = read_smv_u16(file.path()).unwrap();
        assert_eq!(h.header_bytes, 1024);
        assert_eq!(data, vec![7, 9]);
        assert_eq!(SmvFields::from_header(&h).unwrap().twotheta_deg, -23.4567);
    }

    #[test]
    fn golden_files_rewritten_identically() {
        let Some(dir) = golden_dir() else { return };
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "smv_scale_adc_64.int.img",
            "smv_noise_pgm_64.int.img",
            "smv_noise_pgm_64.noise.img",
        ] {
            let path = dir.join(name);
            let original = std::fs::read(&path).unwrap();
            let (h, data) = read_smv_u16(&path).unwrap();
            assert_eq!(h.header_bytes, 512);
            assert_eq!(data.len(), 64 * 64);
            let fields = SmvFields::from_header(&h).unwrap();
            assert_eq!((fields.fpixels, fields.spixels), (64, 64));
            let out = tmp.path().join(name);
            write_smv(&out, &fields, data.iter().copied()).unwrap();
            let ours = std::fs::read(&out).unwrap();
            assert_eq!(&ours[..512], &original[..512], "{name} header");
            assert_eq!(ours, original, "{name}");
        }
    }

    #[test]
    fn golden_values_and_value_of_quirks() {
        let Some(dir) = golden_dir() else { return };
        let (h, data) = read_smv_u16(&dir.join("smv_scale_adc_64.int.img")).unwrap();
        assert_eq!(h.value_of("PIXEL_SIZE"), Some(0.1));
        assert_eq!(h.value_of("WAVELENGTH"), Some(6.2));
        assert_eq!(h.value_of("BEAM_CENTER_X"), Some(3.25));
        assert_eq!(h.value_of("ADXV_CENTER_Y"), Some(3.1));
        assert_eq!(h.value_of("ORGX"), Some(33.5)); // matches XDS_ORGX
        assert_eq!(h.value_of("DIALS_ORIGIN"), Some(-3.3));
        assert_eq!(h.value_of("SIZE1"), Some(64.0));
        assert_eq!(h.value_of("NO_SUCH_KEY"), None);
        assert_eq!(h.string_of("BYTE_ORDER").as_deref(), Some("little_endian"));
        assert_eq!(h.string_of("TYPE").as_deref(), Some("unsigned_short"));
        assert_eq!(h.field("DIALS_ORIGIN"), Some("-3.3,3.3,-100"));
        // -scale 0.5 -adc 10: background pixels are small, the peak is 0.5·154.65 + 10 → 87.
        assert_eq!(data[0], 10);
        assert_eq!(data.iter().max(), Some(&87));
        assert_eq!(data[32 * 64 + 32], 87);
    }

    #[test]
    fn golden_mask() {
        let Some(dir) = golden_dir() else { return };
        let path = dir.join("inputs/mask.img");
        let (h, mask) = read_smv_u16(&path).unwrap();
        assert_eq!(h.value_of("SIZE1"), Some(128.0));
        assert_eq!(h.value_of("DISTANCE"), Some(100.0));
        assert_eq!(mask.len(), 128 * 128);
        assert_eq!(mask.iter().filter(|&&v| v == 0).count(), 728);
        assert_eq!((mask[0], mask[89], mask[90]), (1, 1, 0));
        let only = read_smv_header(&path).unwrap();
        assert_eq!(only, h);
        assert!(only.text.starts_with("{\nHEADER_BYTES=512;"));
    }

    #[test]
    fn value_of_follows_c() {
        let h = header("{\nHEADER_BYTES=512;\nDISTANCE=100;\nCLOSE_DISTANCE=95.5;\nX=  -1.5e2mm;\nY=abc;\nZ;\nW=.5;\nV=1e;\nU=+inf;\nT=nan;\n}");
        assert_eq!(h.value_of("DISTANCE"), Some(95.5)); // last substring match: CLOSE_DISTANCE
        assert_eq!(h.value_of("X"), Some(-150.0)); // leading spaces skipped, suffix ignored
        assert_eq!(h.value_of("Y"), None); // C: atof("abc") = 0
        assert_eq!(h.value_of("W"), Some(0.5));
        assert_eq!(h.value_of("V"), Some(1.0)); // a bare 'e' is not an exponent
        assert_eq!(h.value_of("U"), Some(f64::INFINITY));
        assert_eq!(h.value_of("T"), None);
        // "Z" last occurs in... no: 'Z' is only in "Z;", and the next '=' is W's.
        assert_eq!(h.value_of("Z"), Some(0.5));
        assert_eq!(h.value_of(""), None);
        assert_eq!(header("A=1;\nB").value_of("B"), None); // no '=' after the key
                                                           // Self-overlapping key: C's successive searches find "A=A=" at 0 only (the next search
                                                           // starts after it), so the value is the 5 after the following '='.
        assert_eq!(header("A=A=A=5;").value_of("A=A="), Some(5.0));
        assert_eq!(c_atof("  12.5e-1x"), Some(1.25));
        assert_eq!(c_atof("-7."), Some(-7.0));
        assert_eq!(c_atof("-"), None);
        assert_eq!(c_atof("."), None);
        assert_eq!(c_atof("Infinity!"), Some(f64::INFINITY));
    }

    fn smv_bytes(header_lines: &str, header_bytes: usize, data: &[u8]) -> Vec<u8> {
        let mut b = format!("{{\nHEADER_BYTES={header_bytes};\n{header_lines}}}\x0c").into_bytes();
        assert!(b.len() <= header_bytes);
        b.resize(header_bytes, b' ');
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn byte_order_and_sizes() {
        let data = [1u8, 2, 3, 4, 5, 6];
        let le = write_temp(&smv_bytes(
            "BYTE_ORDER=little_endian;\nSIZE1=3;\nSIZE2=1;\n",
            512,
            &data,
        ));
        assert_eq!(read_smv_u16(le.path()).unwrap().1, vec![0x0201, 0x0403, 0x0605]);
        let be = write_temp(&smv_bytes("BYTE_ORDER=big_endian;\nSIZE1=1;\nSIZE2=3;\n", 512, &data));
        assert_eq!(read_smv_u16(be.path()).unwrap().1, vec![0x0102, 0x0304, 0x0506]);
        // A non-512 header size, no BYTE_ORDER, and DETECTOR_DIMENSIONS instead of SIZE1.
        let mut long = data.to_vec();
        long.extend([7, 8, 9, 10]);
        let f = write_temp(&smv_bytes("DETECTOR_DIMENSIONS=2;\n", 1024, &long[..8]));
        let (h, v) = read_smv_u16(f.path()).unwrap();
        assert_eq!(h.header_bytes, 1024);
        assert_eq!(v, vec![0x0201, 0x0403, 0x0605, 0x0807]);
        assert_eq!(read_smv_header(f.path()).unwrap().header_bytes, 1024);
        // Small header.
        let f = write_temp(&smv_bytes("SIZE1=1;SIZE2=1;", 64, &[9, 0]));
        assert_eq!(read_smv_u16(f.path()).unwrap().1, vec![9]);
    }

    fn parse_err(bytes: &[u8]) -> (String, Option<usize>) {
        match read_smv_u16(write_temp(bytes).path()) {
            Err(e @ Error::Parse { line, .. }) => (e.to_string(), line),
            other => panic!("expected parse error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_files() {
        let (msg, _) = parse_err(b"P5\n64 64\n255\n");
        assert!(msg.contains("not an SMV file"), "{msg}");
        assert!(parse_err(b"").0.contains("not an SMV file"));
        let (msg, _) = parse_err(&smv_bytes("SIZE1=4;\nSIZE2=4;\n", 512, &[0; 31]));
        assert!(msg.contains("too short"), "{msg}");
        let (_, line) = parse_err(&smv_bytes("DIM=2;\nSIZE1=4.5;\nSIZE2=4;\n", 512, &[0; 64]));
        assert_eq!(line, Some(4));
        let (msg, _) = parse_err(&smv_bytes("DIM=2;\n", 512, &[0; 64]));
        assert!(msg.contains("SIZE1"), "{msg}");
        let (_, line) = parse_err(&smv_bytes("SIZE1=1;\nSIZE2=1;\nBYTE_ORDER=middle;\n", 512, &[0; 2]));
        assert_eq!(line, Some(5));
        let mut b = smv_bytes("SIZE1=1;\nSIZE2=1;\n", 512, &[0; 2]);
        b[15..18].copy_from_slice(b"999");
        let (msg, _) = parse_err(&b);
        assert!(msg.contains("HEADER_BYTES"), "{msg}");
        b[15..18].copy_from_slice(b"abc");
        assert_eq!(parse_err(&b).1, Some(2));
        assert!(read_smv_header(write_temp(b"{\nHEADER_BYTES=900;\n").path()).is_err());
        let huge = smv_bytes("SIZE1=4294967295;\nSIZE2=4294967295;\n", 512, &[0; 2]);
        assert!(parse_err(&huge).0.contains("too short"));
    }

    #[test]
    fn write_then_read_round_trip() {
        let fields = SmvFields {
            fpixels: 3,
            spixels: 2,
            pixel_size_mm: 0.172,
            distance_mm: 250.0,
            wavelength_angstrom: 0.9795,
            beam_center_x_mm: 30.1,
            beam_center_y_mm: -1e-7,
            dials_origin_mm: [-1.5, 2.0, -250.0],
            xds_orgx_px: 1234567.0,
            twotheta_deg: -0.0,
            ..Default::default()
        };
        let data = [0u16, 1, 40, 65535, 256, 7];
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.img");
        write_smv(&p, &fields, data.iter().copied()).unwrap();
        let raw = std::fs::read(&p).unwrap();
        assert_eq!(raw.len(), 512 + 12);
        assert_eq!(&raw[512..516], &[0, 0, 1, 0]);
        let (h, back) = read_smv_u16(&p).unwrap();
        assert_eq!(back, data);
        assert!(h.text.contains("\nBEAM_CENTER_Y=-1e-07;\nADXV_CENTER_X=0;\n"));
        assert!(h.text.contains("\nDIALS_ORIGIN=-1.5,2,-250\nXDS_ORGX=1.23457e+06;\n"));
        assert!(h
            .text
            .contains("\nTWOTHETA=-0;\nDETECTOR_SN=000;\nBEAMLINE=fake;\n}\x0c   "));
        let parsed = SmvFields::from_header(&h).unwrap();
        assert_eq!(parsed.xds_orgx_px, 1234570.0);
        assert_eq!(parsed.pixel_size_mm, 0.172);
        assert!(write_smv(&p, &fields, data[..5].iter().copied()).is_err());
        let absurd = SmvFields {
            fpixels: 1,
            spixels: 1,
            ..Default::default()
        };
        assert!(write_smv(&p, &absurd, [1]).is_ok());
        let too_long = SmvFields {
            fpixels: 1,
            spixels: 1,
            pixel_size_mm: -1.5e-300,
            distance_mm: -1.5e-300,
            wavelength_angstrom: -1.5e-300,
            beam_center_x_mm: -1.5e-300,
            beam_center_y_mm: -1.5e-300,
            adxv_center_x_mm: -1.5e-300,
            adxv_center_y_mm: -1.5e-300,
            mosflm_center_x_mm: -1.5e-300,
            mosflm_center_y_mm: -1.5e-300,
            denzo_x_beam_mm: -1.5e-300,
            denzo_y_beam_mm: -1.5e-300,
            dials_origin_mm: [-1.23456e-300; 3],
            xds_orgx_px: -1.23456e-300,
            xds_orgy_px: -1.23456e-300,
            close_distance_mm: -1.23456e-300,
            phi_deg: -1.23456e-300,
            osc_start_deg: -1.23456e-300,
            osc_range_deg: -1.23456e-300,
            twotheta_deg: -1.23456e-300,
        };
        // a long header grows to the next 512-byte block instead of failing
        write_smv(&p, &too_long, [1]).unwrap();
        assert_eq!(read_smv_u16(&p).unwrap().0.header_bytes, 1024);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            let f = write_temp(&bytes);
            let _ = read_smv_u16(f.path());
            let _ = read_smv_header(f.path());
        }

        #[test]
        fn random_headers_never_panic(
            lines in proptest::collection::vec(
                "(HEADER_BYTES|SIZE1|SIZE2|DETECTOR_DIMENSIONS|BYTE_ORDER|X)=[ ]?(-?[0-9]{1,4}(\\.[0-9])?|big_endian|little_endian|nan|)[;]?",
                0..6),
            header_bytes in prop_oneof![Just(512usize), 16usize..700],
            tail in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            let mut b = format!("{{\nHEADER_BYTES={header_bytes};\n{}\n}}\x0c", lines.join("\n")).into_bytes();
            b.extend(tail);
            let f = write_temp(&b);
            if let Ok((h, v)) = read_smv_u16(f.path()) {
                prop_assert!(h.header_bytes + 2 * v.len() <= b.len());
            }
            let _ = read_smv_header(f.path());
        }

        #[test]
        fn write_read_round_trip(
            f in 1usize..20, s in 1usize..20, seed in any::<u16>(),
            x in -1e6f64..1e6, y in -1e-3f64..1e-3,
        ) {
            let data: Vec<u16> = (0..f * s).map(|i| (i as u16).wrapping_mul(seed)).collect();
            let fields = SmvFields { fpixels: f, spixels: s, beam_center_x_mm: x, phi_deg: y, ..Default::default() };
            let tmp = tempfile::tempdir().unwrap();
            let p = tmp.path().join("r.img");
            write_smv(&p, &fields, data.iter().copied()).unwrap();
            let (h, back) = read_smv_u16(&p).unwrap();
            prop_assert_eq!(back, data);
            let again = SmvFields::from_header(&h).unwrap();
            prop_assert_eq!(again.header_text(), fields.header_text());
            prop_assert_eq!(h.value_of("BEAM_CENTER_X").unwrap(), fmt_g(x).parse::<f64>().unwrap());
        }
    }
}
