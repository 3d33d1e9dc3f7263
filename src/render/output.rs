//! Image products the C program derives from the float image: statistics, the integer SMV
//! image, the Poisson noise image and the PGM preview (physics reference §14, §17), and the
//! same integer and noise images as signed 32-bit counts for the miniCBF outputs, with the
//! header values of both formats.
//!
//! The integer images are computed once, as 32-bit counts ([`int_counts`], [`NoisePixels`]);
//! the 16-bit SMV images are those counts clipped to [0, 65535] ([`clip_to_u16`]), so the CBF
//! and SMV images agree wherever the SMV is not clipped.

use crate::config::OutputConfig;
use crate::experiment::{Experiment, Membership};
use crate::io::cbf::CbfHeader;
use crate::io::smv::SmvFields;
use crate::render::detector::detector_counts;
pub use crate::render::image::Statistics;
use crate::render::image::{roi, Image};
use crate::render::noise::PoissonNoise;

/// The int-image scale: the user's, or 55000/max (1 for a blank image).
pub fn int_scale(user: Option<f64>, stats: &Statistics) -> f64 {
    int_scale_of_max(user, stats.max_i)
}

/// [`int_scale`] from the brightest value `max_i` alone (a detector of several panels: its
/// brightest pixel over every panel).
pub fn int_scale_of_max(user: Option<f64>, max_i: f64) -> f64 {
    match user {
        Some(s) if s > 0.0 => s,
        _ if max_i > 0.0 => 55000.0 / max_i,
        _ => 1.0,
    }
}

/// One noiseless integer count as C computes it for the int image, without the 16-bit clip:
/// round-half-up(value·`scale` + `adc`) floored at 0, the rounding in f32 as C's
/// `floorf(test + 0.5)` does (so counts above 2²⁴ are rounded to f32 precision), saturating at
/// 2³¹−1. NaN gives 0.
pub fn int_count(value: f32, scale: f64, adc: f64) -> i32 {
    // f64::max takes 0 for NaN
    let v = (value as f64 * scale + adc).max(0.0);
    floor_to_i32((v + 0.5) as f32)
}

/// `x.floor() as i32`: saturating, NaN to 0, without the call to `floorf` that `floor` is on
/// the baseline x86-64 target, so that a loop over an image stays vectorised.
pub fn floor_to_i32(x: f32) -> i32 {
    // truncated toward 0, saturating; exact in f32, since |t| < 2²⁴ or x is an integer
    let t = x as i32;
    if (t as f32) > x {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// A count as the 16-bit SMV images store it: clipped to [0, 65535] (C's overload ceiling).
pub fn clip_to_u16(count: i32) -> u16 {
    count.clamp(0, u16::MAX as i32) as u16
}

/// The noiseless integer image as signed 32-bit counts (`-cbffile`), pixel by pixel in file
/// order: [`int_count`] for ROI pixels, 0 outside the ROI.
pub fn int_counts<'a>(exp: &Experiment, image: &'a Image, scale: f64, adc: f64) -> impl Iterator<Item = i32> + 'a {
    image
        .data
        .iter()
        .zip(roi(exp).membership())
        .map(move |(&x, inside)| if inside { int_count(x, scale, adc) } else { 0 })
}

/// The noiseless 16-bit integer image (`-intfile`), pixel by pixel in file order: the
/// [`int_counts`] clipped to [0, 65535], i.e. C's round-half-up(value·scale + adc) clipped to
/// [0, 65535] for ROI pixels, 0 outside the ROI.
pub fn int_pixels<'a>(exp: &Experiment, image: &'a Image, scale: f64, adc: f64) -> impl Iterator<Item = u16> + 'a {
    int_counts(exp, image, scale, adc).map(clip_to_u16)
}

/// The PGM scale: the user's, else 250/(5·rmsd), else the int scale.
pub fn pgm_scale(user: Option<f64>, int_scale: f64, stats: &Statistics) -> f64 {
    match user {
        Some(s) if s > 0.0 => s,
        _ if stats.rmsd > 0.0 => 250.0 / (5.0 * stats.rmsd),
        _ => int_scale,
    }
}

/// PGM bytes, pixel by pixel in file order: min(255, value·scale) truncated; 0 outside the ROI.
pub fn pgm_pixels<'a>(exp: &Experiment, image: &'a Image, scale: f64) -> impl Iterator<Item = u8> + 'a {
    image.data.iter().zip(roi(exp).membership()).map(
        move |(&x, inside)| {
            if inside {
                (x as f64 * scale).min(255.0) as u8
            } else {
                0
            }
        },
    )
}

/// The Poisson noise image with C's generator, pixel by pixel in file order (which is C's order
/// of drawing), as signed 32-bit counts: for each ROI pixel a deviate of its photons plus adc,
/// truncated, floored at 0 and saturating at 2³¹−1; 0 outside the ROI. The `-noisefile` SMV
/// image is these counts through [`clip_to_u16`], the `-cbf_noisefile` image these counts
/// themselves: one draw serves both. Counts photons and overloads (deviate + adc above 65535,
/// C's 16-bit ceiling, whatever file the counts go to) as it goes.
///
/// Non-finite pixels (which C cannot handle: its sampler never returns for NaN) draw no random
/// number and add no photons: +∞ gives the largest count (65535 in the SMV image) and counts as
/// an overload, NaN gives 0 (as in the int image), −∞ gives adc (a deviate of 0, like any
/// negative mean).
pub struct NoisePixels<'a> {
    noise: PoissonNoise,
    data: std::iter::Zip<std::slice::Iter<'a, f32>, Membership<'static>>,
    adc: f64,
    /// The counts of the detector model (`-psf`, `-readout`, …), drawn whole beforehand.
    modelled: Option<std::vec::IntoIter<u32>>,
    /// Photons drawn so far (finite deviates).
    pub photons: f64,
    /// Pixels above 65535 so far (clipped in the SMV image).
    pub overloads: usize,
}

impl<'a> NoisePixels<'a> {
    pub fn new(exp: &Experiment, image: &'a Image, seed: i64, adc: f64) -> Self {
        Self {
            noise: PoissonNoise::new(seed),
            data: image.data.iter().zip(roi(exp).membership()),
            adc,
            modelled: None,
            photons: 0.0,
            overloads: 0,
        }
    }

    /// The noise image `out` asks for: C's Poisson noise, or with a detector model
    /// (`out.detector`) `noisify`'s chain on the whole float image (0 outside the ROI, as
    /// C's), its photons after the PSF and the ROI's overloads counted beforehand.
    pub fn for_output(exp: &Experiment, image: &'a Image, seed: i64, out: &OutputConfig) -> Self {
        let mut pixels = Self::new(exp, image, seed, out.adc);
        if let Some(cfg) = &out.detector {
            let size = (image.fpixels, image.spixels);
            let counts = detector_counts(&image.data, size, exp.detector.pixel_size, cfg, out.adc, seed);
            for (&adu, inside) in counts.adu.iter().zip(roi(exp).membership()) {
                pixels.overloads += usize::from(inside && adu > 65535);
            }
            pixels.photons = counts.photons;
            pixels.modelled = Some(counts.adu.into_iter());
        }
        pixels
    }
}

impl Iterator for NoisePixels<'_> {
    type Item = i32;

    fn next(&mut self) -> Option<i32> {
        let (&x, inside) = self.data.next()?;
        if let Some(modelled) = self.modelled.as_mut() {
            let adu = modelled.next()?;
            return Some(if inside { adu as i32 } else { 0 });
        }
        if !inside {
            return Some(0);
        }
        let n = self.noise.poisson(x) as f64;
        if n.is_finite() {
            self.photons += n;
        }
        let v = n + self.adc;
        if v > 65535.0 {
            self.overloads += 1;
        }
        // truncated as C's cast; a NaN deviate (f64::max takes 0 for it) and negative counts
        // become 0, as in the int image; +∞ saturates
        Some(v.max(0.0) as i32)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.data.size_hint()
    }
}

/// Where an image holds values that are not finite numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NonFinite {
    /// Pixels that are NaN, and the (slow, fast) position of the first in C's order.
    pub nan: usize,
    pub first_nan: Option<(usize, usize)>,
    /// Pixels that are ±∞ (an overflow of the f32 range), and the first one's (slow, fast).
    pub infinite: usize,
    pub first_infinite: Option<(usize, usize)>,
}

impl NonFinite {
    /// Scans an image (row-major, `fpixels` per row).
    pub fn scan(image: &Image) -> Self {
        let mut r = Self::default();
        // the common case in one pass the compiler vectorises
        let finite = |block: &[f32]| block.iter().fold(true, |ok, v| ok & v.is_finite());
        if image.data.chunks(1 << 12).all(finite) {
            return r;
        }
        let at = |idx: usize| (idx / image.fpixels.max(1), idx % image.fpixels.max(1));
        for (idx, v) in image.data.iter().enumerate() {
            if v.is_nan() {
                r.nan += 1;
                r.first_nan.get_or_insert(at(idx));
            } else if v.is_infinite() {
                r.infinite += 1;
                r.first_infinite.get_or_insert(at(idx));
            }
        }
        r
    }
}

/// SMV header values of an experiment, computed as C does.
pub fn smv_fields(exp: &Experiment) -> SmvFields {
    let d = &exp.detector;
    let px = d.pixel_size;
    let mm = 1000.0;
    SmvFields {
        fpixels: d.fpixels,
        spixels: d.spixels,
        pixel_size_mm: px * mm,
        distance_mm: d.distance * mm,
        wavelength_angstrom: exp.lambda0 * 1e10,
        beam_center_x_mm: d.xbeam * mm,
        beam_center_y_mm: d.ybeam * mm,
        adxv_center_x_mm: d.fbeam * mm,
        adxv_center_y_mm: (d.detsize_s - d.sbeam) * mm,
        mosflm_center_x_mm: (d.sbeam - 0.5 * px) * mm,
        mosflm_center_y_mm: (d.fbeam - 0.5 * px) * mm,
        denzo_x_beam_mm: d.sbeam * mm,
        denzo_y_beam_mm: d.fbeam * mm,
        dials_origin_mm: d.dials_origin,
        xds_orgx_px: d.orgx,
        xds_orgy_px: d.orgy,
        close_distance_mm: d.close_distance * mm,
        phi_deg: exp.phi0.to_degrees(),
        osc_start_deg: exp.phi0.to_degrees(),
        osc_range_deg: exp.phi.range.to_degrees(),
        twotheta_deg: d.twotheta.to_degrees(),
    }
}

/// The exposure written to CBF headers when `-exposure` is not a positive time (s): DIALS
/// takes a scan's exposure from the header and needs one.
pub const CBF_FALLBACK_EXPOSURE_S: f64 = 1.0;

/// The Pilatus header of the CBF images of an experiment, from the same values as
/// [`smv_fields`]: pixel size and distance (m), wavelength (Å), start angle (`-phi`) and
/// increment (`-osc`) (°), and the beam centre as Pilatus defines `Beam_xy`: the direct beam's
/// (fast, slow) position in pixels from the outer corner of the first pixel (Fbeam/pixel,
/// Sbeam/pixel, so the centre of pixel (0, 0) is (0.5, 0.5)). The sensor thickness is
/// `-detector_thick` (m; 0 is written as 0: no parallax, as rendered), the exposure `-exposure`
/// (s; [`CBF_FALLBACK_EXPOSURE_S`] when that is not positive), 2θ `-twotheta` (°; dxtbx and XDS
/// ignore it), and `Count_cutoff` the largest count an int32 pixel holds. Detector rotations
/// have no line in the header. The timestamp is fixed (1970-01-01T00:00:00.000), so the same
/// run writes the same bytes.
pub fn cbf_header(exp: &Experiment) -> CbfHeader {
    let d = &exp.detector;
    let exposure = if exp.exposure > 0.0 && exp.exposure.is_finite() {
        exp.exposure
    } else {
        CBF_FALLBACK_EXPOSURE_S
    };
    CbfHeader {
        detector: "nanobragg simulation, S/N 60-0000".to_string(),
        timestamp: "1970-01-01T00:00:00.000".to_string(),
        pixel_size_x_m: d.pixel_size,
        pixel_size_y_m: d.pixel_size,
        thickness_m: exp.sensor.thickness,
        exposure_time_s: exposure,
        count_cutoff: i32::MAX,
        wavelength_a: exp.lambda0 * 1e10,
        distance_m: d.distance,
        beam_x_px: d.fbeam / d.pixel_size,
        beam_y_px: d.sbeam / d.pixel_size,
        start_angle_deg: exp.phi0.to_degrees(),
        angle_increment_deg: exp.phi.range.to_degrees(),
        detector_2theta_deg: d.twotheta.to_degrees(),
        ..CbfHeader::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;

    proptest::proptest! {
        #[test]
        fn floor_to_i32_is_floor_then_a_saturating_cast(bits: u32) {
            let x = f32::from_bits(bits);
            proptest::prop_assert_eq!(floor_to_i32(x), x.floor() as i32, "{}", x);
        }
    }

    #[test]
    fn floor_to_i32_at_the_edges() {
        let edges = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.5,
            -1.5,
            16777215.5,
            16777216.0,
            -16777217.0,
            2147483520.0,
            2147483648.0,
            -2147483648.0,
            -2147483904.0,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            -1e-45,
            65535.5,
            65536.0,
        ];
        for x in edges {
            assert_eq!(floor_to_i32(x), x.floor() as i32, "{x}");
        }
    }

    fn experiment(pixels: usize) -> Experiment {
        let mut cfg = SimConfig::default();
        cfg.crystal.cell = Some([
            1e-8,
            1e-8,
            1e-8,
            90f64.to_radians(),
            90f64.to_radians(),
            90f64.to_radians(),
        ]);
        cfg.crystal.default_f = 100.0;
        cfg.detector.fpixels = Some(pixels);
        cfg.detector.spixels = Some(pixels);
        Experiment::with_structure_factors(&cfg, None).unwrap()
    }

    fn image(data: Vec<f32>, fpixels: usize) -> Image {
        Image {
            fpixels,
            spixels: data.len() / fpixels,
            data,
            omega_sum: 0.0,
            interpolation_fell_back: false,
            statistics: None,
        }
    }

    #[test]
    fn non_finite_pixels_are_counted_and_located() {
        let mut data = vec![1.0f32; 12];
        data[5] = f32::NAN;
        data[7] = f32::INFINITY;
        data[9] = f32::NAN;
        data[10] = f32::NEG_INFINITY;
        let r = NonFinite::scan(&image(data, 4));
        assert_eq!((r.nan, r.first_nan), (2, Some((1, 1))));
        assert_eq!((r.infinite, r.first_infinite), (2, Some((1, 3))));
        assert_eq!(NonFinite::scan(&image(vec![0.0; 4], 2)), NonFinite::default());
    }

    #[test]
    fn noise_of_non_finite_pixels_is_defined() {
        let exp = experiment(2);
        let img = image(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 5.0], 2);
        let mut pixels = NoisePixels::new(&exp, &img, 1, 40.0);
        let noisy: Vec<i32> = pixels.by_ref().collect();
        assert_eq!(&noisy[..3], &[0, i32::MAX, 40]);
        let smv: Vec<u16> = noisy.iter().map(|&c| clip_to_u16(c)).collect();
        assert_eq!(&smv[..3], &[0, 65535, 40]);
        assert_eq!(pixels.overloads, 1);
        // only the finite pixel adds photons
        assert_eq!(pixels.photons, noisy[3] as f64 - 40.0);
    }

    /// C's int-image pixel, as the port computed it before the 32-bit counts existed.
    fn c_int_pixel(x: f32, scale: f64, adc: f64) -> u16 {
        let v = (x as f64 * scale + adc).clamp(0.0, 65535.0);
        ((v + 0.5) as f32).floor() as u16
    }

    #[test]
    fn int_counts_clipped_are_cs_16_bit_pixels() {
        let values = [
            0.0f32,
            0.49,
            0.5,
            1.5,
            -3.0,
            1000.25,
            65534.4,
            65534.6,
            65535.4,
            65535.6,
            1e6,
            3e9,
            f32::MAX,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        for &x in &values {
            for (scale, adc) in [
                (1.0, 0.0),
                (1.0, 40.0),
                (0.5, 10.0),
                (123.4, 40.0),
                (1.0, -100.0),
                (1.0, 0.3),
            ] {
                let count = int_count(x, scale, adc);
                assert_eq!(clip_to_u16(count), c_int_pixel(x, scale, adc), "{x} {scale} {adc}");
                // the count keeps what the clip loses
                let v = x as f64 * scale + adc;
                if v.is_finite() && (65535.5..2e9).contains(&v) {
                    assert_eq!(count as f64, ((v + 0.5) as f32).floor() as f64, "{x}");
                }
            }
        }
        assert_eq!(int_count(1e6, 1.0, 40.0), 1_000_040);
        assert_eq!(int_count(f32::INFINITY, 1.0, 40.0), i32::MAX);
        assert_eq!(int_count(f32::NAN, 1.0, 40.0), 0);
        assert_eq!(
            (clip_to_u16(-5), clip_to_u16(70_000), clip_to_u16(123)),
            (0, 65535, 123)
        );
    }

    #[test]
    fn int_images_agree_where_the_smv_is_not_clipped() {
        let exp = experiment(2);
        let img = image(vec![10.0, 70_000.0, 65_495.0, 1e7], 2);
        let counts: Vec<i32> = int_counts(&exp, &img, 1.0, 40.0).collect();
        let pixels: Vec<u16> = int_pixels(&exp, &img, 1.0, 40.0).collect();
        assert_eq!(counts, [50, 70_040, 65_535, 10_000_040]);
        assert_eq!(pixels, [50, 65_535, 65_535, 65_535]);
    }

    #[test]
    fn cbf_header_takes_the_renders_geometry() {
        let flags = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 1.2 -N 2 -pixel 0.1 -detpixels 64 \
                     -distance 120 -Xbeam 3 -Ybeam 2.5 -phi 10 -osc 0.5 -detector_thick 300 -exposure 0.25 \
                     -twotheta 5";
        let args: Vec<&str> = flags.split_whitespace().collect();
        let crate::experiment::args::Parsed::Run(cfg, _) = crate::experiment::args::parse_args(&args).unwrap() else {
            panic!("a run")
        };
        let exp = Experiment::with_structure_factors(&cfg, None).unwrap();
        let h = cbf_header(&exp);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(close(h.pixel_size_x_m, 1e-4) && close(h.pixel_size_y_m, 1e-4));
        assert!(close(h.wavelength_a, 1.2));
        assert!(close(h.distance_m, exp.detector.distance));
        assert!(close(h.thickness_m, 300e-6));
        assert!(close(h.exposure_time_s, 0.25));
        assert!(close(h.start_angle_deg, 10.0) && close(h.angle_increment_deg, 0.5));
        assert!(close(h.detector_2theta_deg, 5.0));
        // Beam_xy: Fbeam, Sbeam in pixels from the corner of pixel (0, 0)
        assert!(close(h.beam_x_px, exp.detector.fbeam / 1e-4));
        assert!(close(h.beam_y_px, exp.detector.sbeam / 1e-4));
        assert_eq!(h.count_cutoff, i32::MAX);
        h.validate().unwrap();
        // the same values as the SMV header
        let smv = smv_fields(&exp);
        assert!(close(h.distance_m * 1e3, smv.distance_mm));
        assert!(close(h.wavelength_a, smv.wavelength_angstrom));
        assert!(close(h.beam_x_px * smv.pixel_size_mm, smv.adxv_center_x_mm));
        assert!(close(h.start_angle_deg, smv.osc_start_deg) && close(h.angle_increment_deg, smv.osc_range_deg));
        // no exposure time: the fallback DIALS can use
        let mut cfg = cfg.clone();
        cfg.beam.exposure = 0.0;
        let exp = Experiment::with_structure_factors(&cfg, None).unwrap();
        assert_eq!(cbf_header(&exp).exposure_time_s, CBF_FALLBACK_EXPOSURE_S);
    }

    #[test]
    fn untilted_mosflm_beam_centre_in_pixels() {
        let exp = experiment(64);
        let h = cbf_header(&exp);
        // MOSFLM: Fbeam = Ybeam + ½ pixel, Sbeam = Xbeam + ½ pixel (default Xbeam = Ybeam = detsize/2)
        let px = exp.detector.pixel_size;
        assert!((h.beam_x_px - (exp.detector.ybeam + 0.5 * px) / px).abs() < 1e-9);
        assert!((h.beam_y_px - (exp.detector.xbeam + 0.5 * px) / px).abs() < 1e-9);
    }
}
