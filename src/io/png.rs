//! PNG previews of float images (photons per pixel), for looking at an image or at the
//! difference between two, rather than for analysis.
//!
//! Greyscale previews are log-scaled so that weak and strong spots are both visible, with a
//! **dark background and bright spots**: a pixel of `x` photons maps to
//!
//! ```text
//! byte = round(255 · min(1, ln(1 + x/s) / ln(1 + top/s)))      (0 for x ≤ 0 or NaN)
//! ```
//!
//! where, by default ([`LogScale::from_images`]), `s` is the median and `top` the 99.9th
//! percentile of the positive finite pixels (both in photons); brighter pixels saturate at 255.
//! The chosen `s` and `top` are recorded in the file's `Description` text chunk. Images are
//! fast-major (index = slow·fpixels + fast), so the fast axis runs left to right and slow
//! top to bottom, as in the PGM output.

use super::atomic::write_atomic;
use crate::base::error::{Error, Result};
use std::path::Path;

/// The log mapping of a greyscale preview (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogScale {
    /// Knee of the logarithm (photons): pixels well below `s` are mapped almost linearly, those
    /// above logarithmically. Positive.
    pub s: f64,
    /// Value that maps to 255 (photons); anything brighter saturates. Positive.
    pub top: f64,
}

impl LogScale {
    /// A robust scale for one or more images together: `s` is the median and `top` the 99.9th
    /// percentile (nearest rank) of all their positive finite pixels. Images without any positive
    /// pixel give `s = top = 1`.
    pub fn from_images(images: &[&[f32]]) -> LogScale {
        let mut positive: Vec<f32> = images
            .iter()
            .flat_map(|img| img.iter().copied())
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        if positive.is_empty() {
            return LogScale { s: 1.0, top: 1.0 };
        }
        let s = percentile(&mut positive, 0.5) as f64;
        let top = percentile(&mut positive, 0.999) as f64;
        LogScale { s, top: top.max(s) }
    }

    /// The grey level (0–255) of a pixel of `x` photons.
    pub fn map(&self, x: f32) -> u8 {
        let x = x as f64;
        if x.is_nan() || x <= 0.0 {
            return 0;
        }
        let denom = (self.top / self.s).ln_1p();
        if denom.is_nan() || denom <= 0.0 {
            return 255;
        }
        let v = ((x / self.s).ln_1p() / denom).min(1.0);
        (255.0 * v).round() as u8
    }
}

/// The `p`-quantile (0 ≤ p ≤ 1, nearest rank) of a non-empty slice; reorders the slice.
fn percentile(values: &mut [f32], p: f64) -> f32 {
    let n = values.len();
    let rank = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
    let (_, v, _) = values.select_nth_unstable_by(rank, f32::total_cmp);
    *v
}

/// Checks that `len` values fill a non-empty `width × height` image whose sides fit a PNG.
fn check_size(path: &Path, width: usize, height: usize, len: usize, per_pixel: usize) -> Result<(u32, u32)> {
    let invalid = |msg: String| Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidInput, msg));
    if width == 0 || height == 0 {
        return Err(invalid(format!("cannot write an empty {width} x {height} image")));
    }
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(invalid(format!(
            "image of {width} x {height} pixels is too large for PNG"
        )));
    };
    if width.checked_mul(height).and_then(|n| n.checked_mul(per_pixel)) != Some(len) {
        return Err(invalid(format!(
            "image data has {len} values, expected {width} x {height} x {per_pixel}"
        )));
    }
    Ok((w, h))
}

/// Encodes 8-bit pixels as a PNG in memory.
fn encode(path: &Path, w: u32, h: u32, color: ::png::ColorType, pixels: &[u8], description: &str) -> Result<Vec<u8>> {
    let to_err = |e: ::png::EncodingError| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("PNG encoding: {e}")),
        )
    };
    let mut out = Vec::new();
    {
        let mut enc = ::png::Encoder::new(&mut out, w, h);
        enc.set_color(color);
        enc.set_depth(::png::BitDepth::Eight);
        if !description.is_empty() {
            enc.add_text_chunk("Description".to_string(), description.to_string())
                .map_err(to_err)?;
        }
        let mut writer = enc.write_header().map_err(to_err)?;
        writer.write_image_data(pixels).map_err(to_err)?;
        writer.finish().map_err(to_err)?;
    }
    Ok(out)
}

/// Writes an 8-bit greyscale, log-scaled PNG preview of a float image (photons per pixel,
/// fast-major, `fpixels` wide and `spixels` high), atomically, with the scale chosen by
/// [`LogScale::from_images`] from this image alone.
///
/// Error if the image is empty or `data.len() != fpixels·spixels`.
pub fn write_png_preview(path: &Path, fpixels: usize, spixels: usize, data: &[f32]) -> Result<()> {
    write_png_preview_scaled(path, fpixels, spixels, data, &LogScale::from_images(&[data]))
}

/// As [`write_png_preview`], with an explicit scale: give two images the same [`LogScale`] to
/// compare them by eye.
pub fn write_png_preview_scaled(
    path: &Path,
    fpixels: usize,
    spixels: usize,
    data: &[f32],
    scale: &LogScale,
) -> Result<()> {
    let (w, h) = check_size(path, fpixels, spixels, data.len(), 1)?;
    let pixels: Vec<u8> = data.iter().map(|&x| scale.map(x)).collect();
    let description = format!(
        "log preview: grey = 255*min(1, ln(1+x/s)/ln(1+top/s)), s = {} photons, top = {} photons",
        scale.s, scale.top
    );
    write_atomic(
        path,
        &encode(path, w, h, ::png::ColorType::Grayscale, &pixels, &description)?,
    )
}

/// Writes an 8-bit RGB PNG (`rgb` holds `width·height` pixels of 3 bytes, row by row), atomically.
///
/// Error if the image is empty or `rgb.len() != 3·width·height`.
pub fn write_png_rgb(path: &Path, width: usize, height: usize, rgb: &[u8]) -> Result<()> {
    let (w, h) = check_size(path, width, height, rgb.len(), 3)?;
    write_atomic(path, &encode(path, w, h, ::png::ColorType::Rgb, rgb, "")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a PNG file: (width, height, color type, pixel bytes).
    fn decode(path: &Path) -> (u32, u32, ::png::ColorType, Vec<u8>) {
        let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let mut reader = ::png::Decoder::new(file).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, info.color_type, buf)
    }

    #[test]
    fn preview_size_orientation_and_ordering() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img.png");
        // 4 wide, 2 high; a weak pixel, a bright spot, background zeros, one NaN, one negative.
        let mut data = vec![0.0f32; 8];
        data[1] = 0.5; // slow 0, fast 1
        data[6] = 1000.0; // slow 1, fast 2
        data[3] = f32::NAN;
        data[4] = -3.0;
        data[7] = 2.0;
        write_png_preview(&p, 4, 2, &data).unwrap();
        let (w, h, color, px) = decode(&p);
        assert_eq!((w, h, color), (4, 2, ::png::ColorType::Grayscale));
        assert_eq!(px.len(), 8);
        assert_eq!(px[0], 0, "zero is black");
        assert_eq!(px[3], 0, "NaN is black");
        assert_eq!(px[4], 0, "negative is black");
        assert_eq!(px[6], 255, "99.9th percentile is white");
        assert!(px[1] > 0, "weak pixel visible");
        assert!(px[6] > px[7] && px[7] > px[1] && px[1] > px[0]);
        // No temporary file left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn log_scale_is_robust() {
        // 1000 pixels of 1 and a few hot ones: the median is 1, the hot pixel saturates.
        let mut data = vec![1.0f32; 1000];
        data[0] = 1e9;
        let s = LogScale::from_images(&[&data]);
        assert_eq!(s.s, 1.0);
        assert_eq!(s.top, 1.0);
        assert_eq!(s.map(1.0), 255);
        let mut ramp: Vec<f32> = (1..=10_000).map(|i| i as f32).collect();
        ramp.push(0.0);
        let s = LogScale::from_images(&[&ramp]);
        assert_eq!(s.s, 5000.0);
        assert_eq!(s.top, 9990.0);
        assert_eq!(s.map(20_000.0), 255);
        // Far below the median a pixel is nearly black; the median itself is clearly visible.
        assert_eq!(s.map(1.0), 0);
        assert!(s.map(50.0) > 0);
        assert!(s.map(5000.0) > 100 && s.map(5000.0) < s.map(9000.0));
        // A shared scale is computed over both images.
        let both = LogScale::from_images(&[&[1.0, 2.0], &[3.0]]);
        assert_eq!(both.s, 2.0);
        assert_eq!(LogScale::from_images(&[&[0.0, -1.0]]), LogScale { s: 1.0, top: 1.0 });
    }

    #[test]
    fn scaled_previews_share_the_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let a = [1.0f32, 10.0, 100.0, 1000.0];
        let b = [2.0f32, 20.0, 200.0, 2000.0];
        let scale = LogScale::from_images(&[&a, &b]);
        write_png_preview_scaled(&dir.path().join("a.png"), 2, 2, &a, &scale).unwrap();
        write_png_preview_scaled(&dir.path().join("b.png"), 2, 2, &b, &scale).unwrap();
        let (_, _, _, pa) = decode(&dir.path().join("a.png"));
        let (_, _, _, pb) = decode(&dir.path().join("b.png"));
        for i in 0..4 {
            assert!(pb[i] >= pa[i]);
            assert_eq!(pa[i], scale.map(a[i]));
        }
    }

    #[test]
    fn rgb_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rgb.png");
        let rgb: Vec<u8> = (0..2 * 3 * 3).map(|i| (i * 10) as u8).collect();
        write_png_rgb(&p, 3, 2, &rgb).unwrap();
        let (w, h, color, px) = decode(&p);
        assert_eq!((w, h, color), (3, 2, ::png::ColorType::Rgb));
        assert_eq!(px, rgb);
    }

    #[test]
    fn bad_sizes_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.png");
        let e = write_png_preview(&p, 0, 0, &[]).unwrap_err();
        assert!(e.to_string().contains("x.png"), "{e}");
        assert!(write_png_preview(&p, 3, 0, &[]).is_err());
        let e = write_png_preview(&p, 2, 2, &[1.0; 3]).unwrap_err();
        assert!(e.to_string().contains("expected 2 x 2"), "{e}");
        assert!(write_png_preview(&p, usize::MAX, 2, &[1.0; 3]).is_err());
        assert!(write_png_rgb(&p, 2, 2, &[0; 11]).is_err());
        assert!(write_png_rgb(&p, 0, 2, &[]).is_err());
        assert!(!p.exists(), "nothing written on error");
        // A directory that does not exist is an I/O error naming the path.
        let e = write_png_rgb(&dir.path().join("nope").join("y.png"), 1, 1, &[0; 3]).unwrap_err();
        assert!(e.to_string().contains("y.png"), "{e}");
    }
}
