//! miniCBF images as PILATUS/DECTRIS detectors write them: a CIF text header carrying the
//! Pilatus `# Key value` lines, then one binary section of signed 32-bit pixels compressed with
//! `x-CBF_BYTE_OFFSET`.
//!
//! Layout written by [`write_cbf`] (every line ends in CRLF, as in files from the detectors):
//!
//! ```text
//! ###CBF: VERSION 1.5, nanobragg miniCBF writer
//!
//! data_image_1
//!
//! _array_data.header_convention "PILATUS_1.2"
//! _array_data.header_contents
//! ;
//! # Detector: ...
//! # 2024-01-01T00:00:00.000
//! # Pixel_size 172e-6 m x 172e-6 m
//! ...
//! ;
//!
//! _array_data.data
//! ;
//! --CIF-BINARY-FORMAT-SECTION--
//! Content-Type: application/octet-stream;
//!      conversions="x-CBF_BYTE_OFFSET"
//! ... MIME lines (X-Binary-Size, Content-MD5, dimensions, X-Binary-Size-Padding: 4095)
//!
//! 0C 1A 04 D5, compressed bytes, 4095 zero bytes
//! --CIF-BINARY-FORMAT-SECTION----
//! ;
//! ```
//!
//! Pixels are in fast-major order: index = slow·fast_len + fast, the order of
//! `X-Binary-Size-Fastest-Dimension` (fabio returns the array with shape `(slow, fast)`).
//!
//! Header units follow the Pilatus convention: lengths in metres, wavelength in Å, angles in
//! degrees, times in seconds, beam centre in pixels ([`header`]).
//!
//! The pieces: [`byte_offset`] compresses and decompresses the pixels, [`header`] formats and
//! parses the Pilatus lines, and this module lays out and reads the file. [`write_cbf`] and
//! [`read_cbf`] work on paths (the file replaced atomically, errors naming it as the crate's
//! [`Error`]); [`encode_cbf`] and [`parse_cbf`] work in memory.
//!
//! Checked against fabio 2026.6.0: `fabio.open()` returns exactly the pixels written, its
//! `pilatus_headers` the header values, and its own int32 encoder the same compressed bytes
//! (`tests/integration/cbf.rs` repeats the checks when fabio is installed).

pub mod byte_offset;
pub mod header;

pub use byte_offset::{byte_offset_decode, byte_offset_encode, byte_offset_encode_from};
pub use header::{CbfHeader, DEFAULT_HEADER_CONVENTION};

use crate::base::error::Error;
use crate::io::atomic::write_atomic_with;
use header::pilatus_pair;
use md5::{Digest, Md5};
use std::io::{self, Write};
use std::path::Path;

/// The bytes that start every binary section (CBF spec: form feed, ^Z, ^D, 0xD5).
pub const BINARY_START: [u8; 4] = [0x0C, 0x1A, 0x04, 0xD5];

/// Zero bytes written after the compressed data, as `X-Binary-Size-Padding` announces.
pub const PADDING: usize = 4095;

/// Opening boundary of the binary section.
const SECTION_START: &str = "--CIF-BINARY-FORMAT-SECTION--";

/// Closing boundary of the binary section.
const SECTION_END: &str = "--CIF-BINARY-FORMAT-SECTION----";

/// Line ending used throughout the file.
const EOL: &str = "\r\n";

/// `X-Binary-Element-Type` of the only element type written and read.
const ELEMENT_TYPE: &str = "signed 32-bit integer";

/// `conversions` value of the only compression written and read.
const BYTE_OFFSET: &str = "x-CBF_BYTE_OFFSET";

/// Everything that reading or decoding a CBF can reject.
#[derive(Debug, thiserror::Error)]
pub enum CbfError {
    /// The compressed stream ended inside a value, or before `wanted` values were read.
    #[error("byte-offset stream truncated after {decoded} of {wanted} values")]
    Truncated {
        /// Values decoded before the stream ran out.
        decoded: usize,
        /// Values asked for.
        wanted: usize,
    },
    /// Bytes remained after the last value.
    #[error("{extra} bytes left after the last value")]
    TrailingBytes {
        /// How many bytes were left over.
        extra: usize,
    },
    /// A 64-bit escape carried a delta wider than ±(2³²−1), which no two i32 pixels can differ by
    /// (this includes −2⁶³, the escape to 128 bits).
    #[error("delta of pixel {index} does not fit a signed 32-bit image")]
    Overflow {
        /// Index of the pixel whose delta was out of range.
        index: usize,
    },
    /// `Content-MD5` does not match the compressed bytes.
    #[error("Content-MD5 mismatch: header {expected}, data {actual}")]
    Md5Mismatch {
        /// The digest in the header (base64).
        expected: String,
        /// The digest of the bytes in the file (base64).
        actual: String,
    },
    /// A structural problem: a missing marker, key or field, or a value that does not parse.
    #[error("malformed CBF: {0}")]
    Format(String),
}

/// Shorthand for a [`CbfError::Format`].
fn format_err(msg: impl Into<String>) -> CbfError {
    CbfError::Format(msg.into())
}

/// An `InvalidInput` error.
pub(super) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

// ---------------------------------------------------------------------------------------------
// digests
// ---------------------------------------------------------------------------------------------

/// Standard base64 (RFC 4648, `+/`, `=` padding) of `bytes`.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let word = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(word >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `Content-MD5` value: base64 of the MD5 digest of the compressed bytes.
pub fn content_md5(compressed: &[u8]) -> String {
    base64_encode(&Md5::digest(compressed))
}

/// The MIME header of the binary section, from the boundary line through the blank line that
/// precedes the start marker.
fn mime_header(compressed_len: usize, md5: &str, fast: usize, slow: usize) -> String {
    [
        SECTION_START.to_string(),
        "Content-Type: application/octet-stream;".to_string(),
        format!("     conversions=\"{BYTE_OFFSET}\""),
        "Content-Transfer-Encoding: BINARY".to_string(),
        format!("X-Binary-Size: {compressed_len}"),
        "X-Binary-ID: 1".to_string(),
        format!("X-Binary-Element-Type: \"{ELEMENT_TYPE}\""),
        "X-Binary-Element-Byte-Order: LITTLE_ENDIAN".to_string(),
        format!("Content-MD5: {md5}"),
        format!("X-Binary-Number-of-Elements: {}", fast * slow),
        format!("X-Binary-Size-Fastest-Dimension: {fast}"),
        format!("X-Binary-Size-Second-Dimension: {slow}"),
        format!("X-Binary-Size-Padding: {PADDING}"),
        String::new(),
        String::new(),
    ]
    .join(EOL)
}

/// Everything before the binary start marker: CIF text, Pilatus lines, MIME header.
fn text_header(header: &CbfHeader, compressed_len: usize, md5: &str, fast: usize, slow: usize) -> String {
    let mut lines = vec![
        "###CBF: VERSION 1.5, nanobragg miniCBF writer".to_string(),
        String::new(),
        "data_image_1".to_string(),
        String::new(),
        format!("_array_data.header_convention \"{}\"", header.header_convention),
        "_array_data.header_contents".to_string(),
        ";".to_string(),
    ];
    lines.extend(header.pilatus_lines());
    lines.extend([
        ";".to_string(),
        String::new(),
        "_array_data.data".to_string(),
        ";".to_string(),
        String::new(),
    ]);
    lines.join(EOL) + &mime_header(compressed_len, md5, fast, slow)
}

/// Checks what [`encode_cbf`] needs: `fast`·`slow` = `data.len()`, neither 0, and a header
/// [`CbfHeader::validate`] accepts. Errors with `InvalidInput`.
fn check_image(header: &CbfHeader, pixels: usize, fast: usize, slow: usize) -> io::Result<()> {
    if fast == 0 || slow == 0 || fast.checked_mul(slow) != Some(pixels) {
        return Err(invalid(format!(
            "CBF image is {fast}x{slow} pixels but {pixels} values were given"
        )));
    }
    header.validate()
}

/// Writes `data` (`fast` × `slow` pixels, fast-major) as a miniCBF file with the Pilatus header
/// from `header`, into `w`.
///
/// Errors with `InvalidInput` when `data.len() != fast·slow`, when either dimension is 0, or when
/// [`CbfHeader::validate`] rejects the header (then nothing is written); otherwise only the
/// writer's errors.
pub fn encode_cbf(w: &mut dyn Write, header: &CbfHeader, data: &[i32], fast: usize, slow: usize) -> io::Result<()> {
    encode_cbf_from(w, header, data.iter().copied(), fast, slow)
}

/// [`encode_cbf`] of pixels as they come: only the compressed image is held (about a byte a
/// pixel for counts that change slowly), never the pixels. The same errors, found once the
/// pixels are counted (nothing is written before).
pub fn encode_cbf_from(
    w: &mut dyn Write,
    header: &CbfHeader,
    data: impl IntoIterator<Item = i32>,
    fast: usize,
    slow: usize,
) -> io::Result<()> {
    let (compressed, pixels) = byte_offset_encode_from(data);
    check_image(header, pixels, fast, slow)?;
    write_compressed(w, header, &compressed, fast, slow)
}

/// The file around the byte-offset `compressed` pixels: text header, binary section, end.
fn write_compressed(
    w: &mut dyn Write,
    header: &CbfHeader,
    compressed: &[u8],
    fast: usize,
    slow: usize,
) -> io::Result<()> {
    let md5 = content_md5(compressed);
    w.write_all(text_header(header, compressed.len(), &md5, fast, slow).as_bytes())?;
    w.write_all(&BINARY_START)?;
    w.write_all(compressed)?;
    w.write_all(&[0u8; PADDING])?;
    w.write_all(format!("{EOL}{SECTION_END}{EOL};{EOL}{EOL}").as_bytes())
}

/// What [`parse_cbf`] finds in a miniCBF file.
#[derive(Debug, Clone, PartialEq)]
pub struct CbfImage {
    /// `_array_data.header_convention`, unquoted; `None` when absent.
    pub header_convention: Option<String>,
    /// The `# Key value` lines of `_array_data.header_contents`, in order: key without `#` and
    /// trailing `:`, value with a leading `=` removed (`Tau = 0 s` → `Tau`, `0 s`). The date line
    /// has the key `timestamp`. Empty when the file has no header contents.
    pub header_lines: Vec<(String, String)>,
    /// The MIME lines of the binary section (`X-Binary-Size`, `conversions`, ...), values unquoted.
    pub mime: Vec<(String, String)>,
    /// Pixels, fast-major.
    pub data: Vec<i32>,
    /// `X-Binary-Size-Fastest-Dimension`.
    pub fast: usize,
    /// `X-Binary-Size-Second-Dimension`.
    pub slow: usize,
}

impl CbfImage {
    /// The value of MIME key `key`, if present.
    pub fn mime_value(&self, key: &str) -> Option<&str> {
        lookup(&self.mime, key)
    }

    /// The header as a [`CbfHeader`] (for files with Pilatus header lines).
    pub fn header(&self) -> Result<CbfHeader, CbfError> {
        let conv = self.header_convention.as_deref().unwrap_or(DEFAULT_HEADER_CONVENTION);
        CbfHeader::from_pilatus_lines(conv, &self.header_lines)
    }
}

/// The value for `key` in a key/value list.
fn lookup<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Position of `needle` in `hay` at or after `from`.
fn find_bytes(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// `s` without one pair of surrounding single or double quotes.
fn unquote(s: &str) -> &str {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

/// The value of CIF tag `tag` in `cif` when it is on the same line: `Some(value)` unquoted.
fn cif_inline_value(cif: &str, tag: &str) -> Option<String> {
    cif.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(tag)?;
        let v = unquote(rest);
        (!v.is_empty() && rest.starts_with(char::is_whitespace)).then(|| v.to_string())
    })
}

/// The text field (`;` ... `;` lines) that follows CIF tag `tag`, if any.
fn cif_text_field(cif: &str, tag: &str) -> Option<Vec<String>> {
    let mut lines = cif.lines();
    lines.by_ref().find(|l| l.trim() == tag)?;
    let first = lines.by_ref().find(|l| !l.trim().is_empty())?;
    let first_rest = first.strip_prefix(';')?;
    let mut out = Vec::new();
    if !first_rest.trim().is_empty() {
        out.push(first_rest.to_string());
    }
    for l in lines {
        if l.starts_with(';') {
            return Some(out);
        }
        out.push(l.to_string());
    }
    None
}

/// The MIME lines between the section boundary and the start marker, as `(key, value)`:
/// `Key: value` lines and the `name=value` parameter lines that continue `Content-Type`.
fn parse_mime(text: &str) -> Result<Vec<(String, String)>, CbfError> {
    let mut pairs = Vec::new();
    for line in text.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()) {
        for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once(':')
                .filter(|(k, _)| !k.contains('='))
                .or_else(|| part.split_once('='))
                .ok_or_else(|| format_err(format!("MIME line without ':' or '=': {line:?}")))?;
            pairs.push((k.trim().to_string(), unquote(v).to_string()));
        }
    }
    Ok(pairs)
}

/// The MIME value of `key` parsed as a number.
fn mime_number(mime: &[(String, String)], key: &str) -> Result<usize, CbfError> {
    let v = lookup(mime, key).ok_or_else(|| format_err(format!("MIME key {key} missing")))?;
    v.parse()
        .map_err(|_| format_err(format!("MIME key {key} is not a count: {v:?}")))
}

/// Checks that the MIME header announces what this reader decodes.
fn check_mime_kind(mime: &[(String, String)]) -> Result<(), CbfError> {
    let expect = [
        ("conversions", BYTE_OFFSET),
        ("X-Binary-Element-Type", ELEMENT_TYPE),
        ("X-Binary-Element-Byte-Order", "LITTLE_ENDIAN"),
    ];
    for (key, want) in expect {
        match lookup(mime, key) {
            Some(v) if v.eq_ignore_ascii_case(want) => {}
            other => return Err(format_err(format!("MIME {key} is {other:?}, expected {want:?}"))),
        }
    }
    Ok(())
}

/// Parses a miniCBF file held in memory: header lines, MIME keys and pixels.
///
/// Checks the `###CBF` magic, the byte-offset / signed 32-bit / little-endian kind, that
/// `X-Binary-Size` bytes follow the start marker, that `Content-MD5` (required) matches them,
/// that `X-Binary-Number-of-Elements` equals fast·slow, and that decoding uses exactly
/// `X-Binary-Size` bytes. Every failure is an error, never a panic.
pub fn parse_cbf(bytes: &[u8]) -> Result<CbfImage, CbfError> {
    if !bytes.starts_with(b"###CBF") {
        return Err(format_err("no ###CBF magic"));
    }
    let section = find_bytes(bytes, SECTION_START.as_bytes(), 0).ok_or_else(|| format_err("no binary section"))?;
    let start = find_bytes(bytes, &BINARY_START, section).ok_or_else(|| format_err("no binary start marker"))?;
    let cif = std::str::from_utf8(&bytes[..section]).map_err(|_| format_err("CIF header is not UTF-8"))?;
    let mime_text = std::str::from_utf8(&bytes[section..start]).map_err(|_| format_err("MIME header is not UTF-8"))?;
    let mime = parse_mime(mime_text)?;
    check_mime_kind(&mime)?;

    let size = mime_number(&mime, "X-Binary-Size")?;
    let fast = mime_number(&mime, "X-Binary-Size-Fastest-Dimension")?;
    let slow = mime_number(&mime, "X-Binary-Size-Second-Dimension")?;
    let n = mime_number(&mime, "X-Binary-Number-of-Elements")?;
    if fast.checked_mul(slow) != Some(n) {
        return Err(format_err(format!("{n} elements announced for {fast}x{slow} pixels")));
    }
    let data_start = start + BINARY_START.len();
    let compressed = data_start
        .checked_add(size)
        .and_then(|end| bytes.get(data_start..end))
        .ok_or_else(|| format_err(format!("X-Binary-Size {size} runs past the end of the file")))?;
    let expected = lookup(&mime, "Content-MD5").ok_or_else(|| format_err("MIME key Content-MD5 missing"))?;
    let actual = content_md5(compressed);
    if expected != actual {
        return Err(CbfError::Md5Mismatch {
            expected: expected.to_string(),
            actual,
        });
    }
    let data = byte_offset_decode(compressed, n)?;
    let header_lines = cif_text_field(cif, "_array_data.header_contents")
        .unwrap_or_default()
        .iter()
        .filter_map(|l| pilatus_pair(l))
        .collect();
    Ok(CbfImage {
        header_convention: cif_inline_value(cif, "_array_data.header_convention"),
        header_lines,
        mime,
        data,
        fast,
        slow,
    })
}

// ---------------------------------------------------------------------------------------------
// files
// ---------------------------------------------------------------------------------------------

/// Writes `data` (`fast` × `slow` pixels, fast-major) to `path` as a miniCBF file with the
/// Pilatus header `header` ([`encode_cbf`]), replacing the file atomically
/// ([`write_atomic_with`]).
///
/// Bad input (pixel count, header values) is an error naming `path` before anything is
/// created; so is a failed write, which leaves no file behind.
pub fn write_cbf(
    path: &Path,
    header: &CbfHeader,
    data: &[i32],
    fast: usize,
    slow: usize,
) -> crate::base::error::Result<()> {
    write_cbf_from(path, header, data.iter().copied(), fast, slow)
}

/// [`write_cbf`] of pixels as they come (see [`encode_cbf_from`]); the file is written whole
/// or not at all.
pub fn write_cbf_from(
    path: &Path,
    header: &CbfHeader,
    data: impl IntoIterator<Item = i32>,
    fast: usize,
    slow: usize,
) -> crate::base::error::Result<()> {
    let (compressed, pixels) = byte_offset_encode_from(data);
    check_image(header, pixels, fast, slow).map_err(|e| Error::io(path, e))?;
    write_atomic_with(path, &mut |w| write_compressed(w, header, &compressed, fast, slow))
}

/// Reads the miniCBF file at `path` ([`parse_cbf`]). A file that cannot be read is an
/// [`Error::Io`], a malformed one an [`Error::Parse`], both naming `path`.
pub fn read_cbf(path: &Path) -> crate::base::error::Result<CbfImage> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_cbf(&bytes).map_err(|e| Error::parse(path, None, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::byte_offset::samples::{extreme_values, random_values, Lcg};
    use super::*;

    #[test]
    fn base64_and_md5_match_known_vectors() {
        // RFC 4648 §10
        for (input, b64) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(input.as_bytes()), b64);
        }
        // RFC 1321: MD5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(content_md5(b""), "1B2M2Y8AsgTpgAmY7PhCfg==");
        assert_eq!(content_md5(b"abc"), "kAFQmDzST7DWlj99KOF/cg==");
    }

    fn test_header() -> CbfHeader {
        CbfHeader {
            detector: "PILATUS3 6M, S/N 60-0127".to_string(),
            timestamp: "2017-06-26T02:54:23.347".to_string(),
            pixel_size_x_m: 172e-6,
            pixel_size_y_m: 175e-6,
            thickness_m: 0.001,
            exposure_time_s: 0.099,
            count_cutoff: 1_009_797,
            wavelength_a: 0.9768,
            distance_m: 0.22982,
            beam_x_px: 1264.48,
            beam_y_px: 1242.52,
            start_angle_deg: 254.7,
            angle_increment_deg: 0.1,
            ..CbfHeader::default()
        }
    }

    fn written(header: &CbfHeader, data: &[i32], fast: usize, slow: usize) -> Vec<u8> {
        let mut out = Vec::new();
        encode_cbf(&mut out, header, data, fast, slow).unwrap();
        out
    }

    fn image_data(fast: usize, slow: usize) -> Vec<i32> {
        let mut data = extreme_values();
        data.extend(random_values(fast * slow - data.len(), 7));
        data
    }

    #[test]
    fn file_round_trip() {
        let (fast, slow) = (37, 23);
        let data = image_data(fast, slow);
        let header = test_header();
        let img = parse_cbf(&written(&header, &data, fast, slow)).unwrap();
        assert_eq!((img.fast, img.slow), (fast, slow));
        assert_eq!(img.data, data);
        assert_eq!(img.header_convention.as_deref(), Some("PILATUS_1.2"));
        assert_eq!(img.header().unwrap(), header);
        assert_eq!(img.mime_value("X-Binary-Size-Padding"), Some("4095"));
        assert_eq!(img.mime_value("X-Binary-ID"), Some("1"));
        assert_eq!(img.mime_value("Content-Type"), Some("application/octet-stream"));
        let tau = img.header_lines.iter().find(|(k, _)| k == "Tau");
        assert_eq!(tau.map(|(_, v)| v.as_str()), Some("0 s"));
    }

    #[test]
    fn file_layout_matches_pilatus() {
        let data = image_data(37, 23);
        let bytes = written(&test_header(), &data, 37, 23);
        let text = String::from_utf8_lossy(&bytes);
        assert!(bytes.starts_with(b"###CBF: VERSION 1.5"));
        for line in [
            "data_image_1\r\n",
            "_array_data.header_convention \"PILATUS_1.2\"\r\n_array_data.header_contents\r\n;\r\n# Detector: ",
            "# 2017-06-26T02:54:23.347\r\n",
            "# Pixel_size 172e-6 m x 175e-6 m\r\n",
            "# Silicon sensor, thickness 0.001000 m\r\n",
            "# Exposure_time 0.0990000 s\r\n",
            "# Wavelength 0.976800 A\r\n",
            "# Detector_distance 0.229820 m\r\n",
            "# Beam_xy (1264.480, 1242.520) pixels\r\n",
            "# Start_angle 254.7000 deg.\r\n",
            "# Angle_increment 0.1000 deg.\r\n",
            "# Threshold_setting: 6346 eV\r\n",
            ";\r\n\r\n_array_data.data\r\n;\r\n--CIF-BINARY-FORMAT-SECTION--\r\n",
            "Content-Type: application/octet-stream;\r\n     conversions=\"x-CBF_BYTE_OFFSET\"\r\n",
            "X-Binary-Element-Type: \"signed 32-bit integer\"\r\n",
            "X-Binary-Number-of-Elements: 851\r\nX-Binary-Size-Fastest-Dimension: 37\r\n",
            "X-Binary-Size-Second-Dimension: 23\r\nX-Binary-Size-Padding: 4095\r\n\r\n\u{c}\u{1a}\u{4}",
        ] {
            assert!(text.contains(line), "missing {line:?}");
        }
        let start = find_bytes(&bytes, &BINARY_START, 0).unwrap();
        let head = String::from_utf8(bytes[..start].to_vec()).unwrap();
        assert!(
            !head.replace("\r\n", "").contains(['\r', '\n']),
            "bare CR or LF in the text"
        );
        // start marker, data, 4095 zeros, closing boundary
        let compressed = byte_offset_encode(&data);
        let start = start + BINARY_START.len();
        let end = start + compressed.len();
        assert_eq!(&bytes[start..end], &compressed[..]);
        assert!(bytes[end..end + PADDING].iter().all(|&b| b == 0));
        assert_eq!(
            &bytes[end + PADDING..],
            b"\r\n--CIF-BINARY-FORMAT-SECTION----\r\n;\r\n\r\n"
        );
        let size_line = format!("X-Binary-Size: {}\r\n", compressed.len());
        assert!(text.contains(&size_line));
        assert!(text.contains(&format!("Content-MD5: {}\r\n", content_md5(&compressed))));
    }

    #[test]
    fn writer_rejects_bad_input() {
        let h = test_header();
        let mut sink = Vec::new();
        assert!(encode_cbf(&mut sink, &h, &[1, 2, 3], 2, 2).is_err());
        assert!(encode_cbf(&mut sink, &h, &[], 0, 0).is_err());
        assert!(encode_cbf(&mut sink, &h, &[1], usize::MAX, 2).is_err());
        for bad in [
            CbfHeader {
                wavelength_a: f64::NAN,
                ..h.clone()
            },
            CbfHeader {
                wavelength_a: 0.0,
                ..h.clone()
            },
            CbfHeader {
                pixel_size_y_m: f64::INFINITY,
                ..h.clone()
            },
            CbfHeader {
                timestamp: "2017-06-26".to_string(),
                ..h.clone()
            },
            CbfHeader {
                timestamp: "2017-06-26T02:54:23.".to_string(),
                ..h.clone()
            },
            CbfHeader {
                header_convention: "PILATUS 1.2".to_string(),
                ..h.clone()
            },
            CbfHeader {
                detector: format!("x {SECTION_START} y"),
                ..h.clone()
            },
        ] {
            assert!(encode_cbf(&mut sink, &bad, &[1], 1, 1).is_err(), "{bad:?}");
        }
        assert!(sink.is_empty(), "nothing is written for rejected input");
    }

    #[test]
    fn detector_name_cannot_break_the_text_field() {
        let h = CbfHeader {
            detector: "evil\r\n;\r\n_array_data.data".to_string(),
            ..test_header()
        };
        let img = parse_cbf(&written(&h, &[1, 2], 2, 1)).unwrap();
        assert_eq!(lookup(&img.header_lines, "Detector"), Some("evil  ;  _array_data.data"));
        assert_eq!(img.data, [1, 2]);
        for blank in [" \n ", "", "(), :="] {
            let h = CbfHeader {
                detector: blank.to_string(),
                ..test_header()
            };
            let img = parse_cbf(&written(&h, &[1], 1, 1)).unwrap();
            assert_eq!(lookup(&img.header_lines, "Detector"), Some("unknown"));
        }
    }

    #[test]
    fn other_conventions_are_written_as_given() {
        let h = CbfHeader {
            header_convention: "PILATUS_1.4".to_string(),
            ..test_header()
        };
        let img = parse_cbf(&written(&h, &[5], 1, 1)).unwrap();
        assert_eq!(img.header().unwrap(), h);
    }

    /// Replaces the first occurrence of `from` by `to` (same length or not) in `bytes`.
    fn patched(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        let at = find_bytes(bytes, from.as_bytes(), 0).unwrap();
        [&bytes[..at], to.as_bytes(), &bytes[at + from.len()..]].concat()
    }

    #[test]
    fn reader_rejects_malformed_files() {
        let data = image_data(37, 23);
        let good = written(&test_header(), &data, 37, 23);
        let size = byte_offset_encode(&data).len();
        let size_line = format!("X-Binary-Size: {size}");
        let start = find_bytes(&good, &BINARY_START, 0).unwrap() + 4;

        let mut flipped = good.clone();
        flipped[start + 10] ^= 0x01;
        assert!(matches!(parse_cbf(&flipped), Err(CbfError::Md5Mismatch { .. })));

        let cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"###CBF".to_vec(),
            good[1..].to_vec(),
            good[..start + size / 2].to_vec(),
            good[..start - 4].to_vec(),
            patched(&good, &size_line, &format!("X-Binary-Size: {}", size + 1)),
            patched(&good, &size_line, &format!("X-Binary-Size: {}", size - 1)),
            patched(&good, &size_line, "X-Binary-Size: 99999999999999999999999"),
            patched(&good, &size_line, "X-Binary-Size: -1"),
            patched(&good, "Fastest-Dimension: 37", "Fastest-Dimension: 36"),
            patched(&good, "Number-of-Elements: 851", "Number-of-Elements: 850"),
            patched(&good, "x-CBF_BYTE_OFFSET", "x-CBF_PACKED"),
            patched(&good, "signed 32-bit", "signed 16-bit"),
            patched(&good, "LITTLE_ENDIAN", "BIG_ENDIAN"),
            patched(&good, "Content-MD5", "Content-MD6"),
            patched(&good, "X-Binary-ID: 1", "X-Binary-ID 1"),
            patched(
                &good,
                "--CIF-BINARY-FORMAT-SECTION--\r\n",
                "--CIF-BINARY-FORMAT-SECT\r\n",
            ),
        ];
        for (i, bad) in cases.iter().enumerate() {
            assert!(parse_cbf(bad).is_err(), "case {i} was accepted");
        }
        // the header can be missing lines without the pixels becoming unreadable
        let no_beam = patched(&good, "# Beam_xy", "# Beam_yx");
        let img = parse_cbf(&no_beam).unwrap();
        assert_eq!(img.data, data);
        assert!(matches!(img.header(), Err(CbfError::Format(_))));
    }

    #[test]
    fn reader_survives_every_truncation_and_byte_flip() {
        let data = image_data(8, 7);
        let good = written(&test_header(), &data, 8, 7);
        for cut in (0..good.len()).step_by(7) {
            let _ = parse_cbf(&good[..cut]);
        }
        let mut rng = Lcg(3);
        for _ in 0..2000 {
            let mut bad = good.clone();
            let at = rng.next_u32() as usize % bad.len();
            bad[at] = rng.next_u32() as u8;
            let _ = parse_cbf(&bad);
        }
    }

    #[test]
    fn files_are_written_atomically_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.cbf");
        let data = random_values(36, 3);
        write_cbf(&path, &test_header(), &data, 9, 4).unwrap();
        let img = read_cbf(&path).unwrap();
        assert_eq!((img.data, img.fast, img.slow), (data.clone(), 9, 4));
        assert_eq!(std::fs::read(&path).unwrap(), written(&test_header(), &data, 9, 4));
        // bad input names the file and leaves nothing behind
        let err = write_cbf(&dir.path().join("bad.cbf"), &test_header(), &data, 9, 5).unwrap_err();
        assert!(err.to_string().contains("bad.cbf"), "{err}");
        let missing = dir.path().join("no_such_dir").join("x.cbf");
        let err = write_cbf(&missing, &test_header(), &data, 9, 4).unwrap_err();
        assert!(matches!(err, Error::Io { ref path, .. } if *path == missing), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["image.cbf"]);
        // a malformed file is a parse error naming it
        std::fs::write(dir.path().join("junk.cbf"), b"###CBF junk").unwrap();
        let err = read_cbf(&dir.path().join("junk.cbf")).unwrap_err();
        assert!(
            matches!(err, Error::Parse { .. }) && err.to_string().contains("junk.cbf"),
            "{err}"
        );
    }
}
