//! The Pilatus header of a miniCBF file: the `# Key value` lines of
//! `_array_data.header_contents` that PILATUS detectors (camserver) write and that fabio
//! (`pilatus_headers`) and dxtbx (`FormatCBFMiniPilatus`, for DIALS) parse.
//!
//! Units follow the Pilatus convention: lengths in metres, wavelength in Å, angles in degrees,
//! times in seconds, beam centre in pixels (fast, slow) from the outer corner of the first pixel.

use super::{invalid, CbfError, SECTION_START};
use std::io;

/// The header convention written by default: the one PILATUS detectors (camserver) write, and the
/// only one for which fabio parses the header lines into `pilatus_headers`. dxtbx's
/// `FormatCBFMiniPilatus` accepts any convention containing `PILATUS`; CBFlib's own miniCBF
/// header writer uses `PILATUS_1.4`.
pub const DEFAULT_HEADER_CONVENTION: &str = "PILATUS_1.2";

/// hc in eV·Å: photon energy (eV) = `HC_EV_ANGSTROM` / wavelength (Å).
const HC_EV_ANGSTROM: f64 = 12_398.419_843_320_026;

/// The experiment described by the Pilatus header lines. Each field's unit and the precision it
/// is written with are in its doc comment; readers parse the numbers back as floats.
#[derive(Debug, Clone, PartialEq)]
pub struct CbfHeader {
    /// `_array_data.header_convention`; default [`DEFAULT_HEADER_CONVENTION`]. Must be one word.
    pub header_convention: String,
    /// Free-form detector name for `# Detector: ...`, e.g. `PILATUS 6M, S/N 60-0000`. Line breaks
    /// and other control characters are written as spaces; a name without any letter or digit
    /// is written as `unknown`.
    pub detector: String,
    /// Acquisition time, `YYYY-MM-DDThh:mm:ss` with optional `.fff` (what Pilatus writes and
    /// dxtbx parses); any other form is rejected by [`CbfHeader::validate`].
    pub timestamp: String,
    /// Pixel size along the fast axis (m), written in µm to 3 decimals (`172e-6`).
    pub pixel_size_x_m: f64,
    /// Pixel size along the slow axis (m), written in µm to 3 decimals.
    pub pixel_size_y_m: f64,
    /// Silicon sensor thickness (m), written to 6 decimals (1 µm).
    pub thickness_m: f64,
    /// Exposure time (s), written to 7 decimals; also written as `Exposure_period` (dxtbx reads
    /// the scan's exposure from that line).
    pub exposure_time_s: f64,
    /// `Count_cutoff` (counts): dxtbx takes it as the highest trusted pixel value.
    pub count_cutoff: i32,
    /// X-ray wavelength (Å), written to 6 decimals. `Threshold_setting` is written as half the
    /// photon energy, in whole eV, as dxtbx does.
    pub wavelength_a: f64,
    /// Sample-to-detector distance (m), written to 6 decimals (1 µm).
    pub distance_m: f64,
    /// Beam centre along the fast axis (pixels), written to 3 decimals.
    pub beam_x_px: f64,
    /// Beam centre along the slow axis (pixels), written to 3 decimals.
    pub beam_y_px: f64,
    /// Spindle (phi) angle at the start of the exposure (deg), written to 4 decimals; also the
    /// `Phi` line.
    pub start_angle_deg: f64,
    /// Rotation during the exposure (deg), written to 4 decimals.
    pub angle_increment_deg: f64,
    /// Detector 2θ (deg), written to 4 decimals as `Detector_2theta`. fabio keeps it; dxtbx and
    /// XDS ignore it (they take the detector as normal to the beam).
    pub detector_2theta_deg: f64,
}

impl Default for CbfHeader {
    /// A PILATUS 6M-like header: 172 µm pixels, 450 µm silicon, 1 Å at 200 mm, no rotation.
    fn default() -> Self {
        Self {
            header_convention: DEFAULT_HEADER_CONVENTION.to_string(),
            detector: "PILATUS 6M, S/N 60-0000, nanobragg simulation".to_string(),
            timestamp: "1970-01-01T00:00:00.000".to_string(),
            pixel_size_x_m: 172e-6,
            pixel_size_y_m: 172e-6,
            thickness_m: 450e-6,
            exposure_time_s: 1.0,
            count_cutoff: i32::MAX,
            wavelength_a: 1.0,
            distance_m: 0.2,
            beam_x_px: 0.0,
            beam_y_px: 0.0,
            start_angle_deg: 0.0,
            angle_increment_deg: 0.0,
            detector_2theta_deg: 0.0,
        }
    }
}

/// `x` with `decimals` decimals, trailing zeros (and a bare point) removed: `172.000` → `172`.
fn fmt_trimmed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `s` with every control character (line breaks included) turned into a space and surrounding
/// blanks removed, so it cannot end a header line or the `;` text field.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// Whether `s` is `YYYY-MM-DDThh:mm:ss`, optionally followed by `.` and digits.
fn is_pilatus_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let shape = b"0000-00-00T00:00:00";
    if b.len() < shape.len() {
        return false;
    }
    let head_ok = shape
        .iter()
        .zip(b)
        .all(|(&p, &c)| if p == b'0' { c.is_ascii_digit() } else { c == p });
    let tail = &b[shape.len()..];
    let tail_ok = tail.is_empty() || (tail.len() > 1 && tail[0] == b'.' && tail[1..].iter().all(u8::is_ascii_digit));
    head_ok && tail_ok
}

impl CbfHeader {
    /// Checks what the writer needs: finite numbers, positive pixel sizes and wavelength, a
    /// one-word convention, a Pilatus timestamp, and no section boundary in the detector name.
    pub fn validate(&self) -> io::Result<()> {
        let numbers = [
            ("pixel_size_x_m", self.pixel_size_x_m),
            ("pixel_size_y_m", self.pixel_size_y_m),
            ("thickness_m", self.thickness_m),
            ("exposure_time_s", self.exposure_time_s),
            ("wavelength_a", self.wavelength_a),
            ("distance_m", self.distance_m),
            ("beam_x_px", self.beam_x_px),
            ("beam_y_px", self.beam_y_px),
            ("start_angle_deg", self.start_angle_deg),
            ("angle_increment_deg", self.angle_increment_deg),
            ("detector_2theta_deg", self.detector_2theta_deg),
        ];
        if let Some((name, v)) = numbers.iter().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(format!("CBF header field {name} is not finite: {v}")));
        }
        for (name, v) in [
            ("pixel_size_x_m", self.pixel_size_x_m),
            ("pixel_size_y_m", self.pixel_size_y_m),
            ("wavelength_a", self.wavelength_a),
        ] {
            if v <= 0.0 {
                return Err(invalid(format!("CBF header field {name} must be positive: {v}")));
            }
        }
        let conv = &self.header_convention;
        if conv.is_empty() || !conv.bytes().all(|c| c.is_ascii_graphic() && c != b'"' && c != b'\'') {
            return Err(invalid(format!(
                "CBF header convention must be one plain word: {conv:?}"
            )));
        }
        if self.detector.contains(SECTION_START) {
            return Err(invalid(
                "CBF detector name contains the binary section boundary".to_string(),
            ));
        }
        if !is_pilatus_timestamp(&self.timestamp) {
            return Err(invalid(format!(
                "CBF timestamp is not YYYY-MM-DDThh:mm:ss[.fff]: {:?}",
                self.timestamp
            )));
        }
        Ok(())
    }

    /// The Pilatus header lines (without line endings), in the order the detectors write them.
    pub fn pilatus_lines(&self) -> Vec<String> {
        let detector = match one_line(&self.detector) {
            // fabio's PILATUS_1.2 parser fails on a line with no word after `Detector`
            d if !d.chars().any(char::is_alphanumeric) => "unknown".to_string(),
            d => d,
        };
        let px = fmt_trimmed(self.pixel_size_x_m * 1e6, 3);
        let py = fmt_trimmed(self.pixel_size_y_m * 1e6, 3);
        let threshold_ev = (HC_EV_ANGSTROM / self.wavelength_a / 2.0).round();
        vec![
            format!("# Detector: {detector}"),
            format!("# {}", self.timestamp),
            format!("# Pixel_size {px}e-6 m x {py}e-6 m"),
            format!("# Silicon sensor, thickness {:.6} m", self.thickness_m),
            format!("# Exposure_time {:.7} s", self.exposure_time_s),
            format!("# Exposure_period {:.7} s", self.exposure_time_s),
            "# Tau = 0 s".to_string(),
            format!("# Count_cutoff {} counts", self.count_cutoff),
            format!("# Threshold_setting: {threshold_ev:.0} eV"),
            "# N_excluded_pixels = 0".to_string(),
            format!("# Wavelength {:.6} A", self.wavelength_a),
            format!("# Detector_distance {:.6} m", self.distance_m),
            format!("# Beam_xy ({:.3}, {:.3}) pixels", self.beam_x_px, self.beam_y_px),
            format!("# Start_angle {:.4} deg.", self.start_angle_deg),
            format!("# Angle_increment {:.4} deg.", self.angle_increment_deg),
            format!("# Detector_2theta {:.4} deg.", self.detector_2theta_deg),
            format!("# Phi {:.4} deg.", self.start_angle_deg),
            "# Oscillation_axis PHI".to_string(),
            "# N_oscillations 1".to_string(),
        ]
    }

    /// Rebuilds a header from the `(key, value)` lines of
    /// [`CbfImage::header_lines`](super::CbfImage::header_lines). The `Silicon` line
    /// gives the thickness; `Exposure_period`, `Tau` and the other fixed lines are ignored.
    pub fn from_pilatus_lines(convention: &str, lines: &[(String, String)]) -> Result<Self, CbfError> {
        let get = |key: &str| {
            lines
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| CbfError::Format(format!("header line {key} missing")))
        };
        let pixel = words(get("Pixel_size")?);
        let beam = words(get("Beam_xy")?);
        let sensor = words(get("Silicon")?);
        let thickness_at = sensor.iter().position(|w| *w == "thickness").map(|i| i + 1);
        Ok(Self {
            header_convention: convention.to_string(),
            detector: get("Detector")?.to_string(),
            timestamp: get("timestamp")?.to_string(),
            pixel_size_x_m: number_at(&pixel, 0, "Pixel_size")?,
            pixel_size_y_m: number_at(&pixel, 3, "Pixel_size")?,
            thickness_m: number_at(&sensor, thickness_at.unwrap_or(usize::MAX), "Silicon")?,
            exposure_time_s: first_number(get("Exposure_time")?, "Exposure_time")?,
            count_cutoff: number_at::<i32>(&words(get("Count_cutoff")?), 0, "Count_cutoff")?,
            wavelength_a: first_number(get("Wavelength")?, "Wavelength")?,
            distance_m: first_number(get("Detector_distance")?, "Detector_distance")?,
            beam_x_px: number_at(&beam, 0, "Beam_xy")?,
            beam_y_px: number_at(&beam, 1, "Beam_xy")?,
            start_angle_deg: first_number(get("Start_angle")?, "Start_angle")?,
            angle_increment_deg: first_number(get("Angle_increment")?, "Angle_increment")?,
            // optional: files from other writers may lack it
            detector_2theta_deg: match get("Detector_2theta") {
                Ok(v) => first_number(v, "Detector_2theta")?,
                Err(_) => 0.0,
            },
        })
    }
}

/// The words of a header value, with `(`, `)` and `,` treated as blanks.
fn words(value: &str) -> Vec<&str> {
    value
        .split(|c: char| c.is_whitespace() || "(),".contains(c))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Word `i` of `words` parsed as a number.
fn number_at<T: std::str::FromStr>(words: &[&str], i: usize, key: &str) -> Result<T, CbfError> {
    words
        .get(i)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| CbfError::Format(format!("header line {key} has no number at word {i}")))
}

/// The first word of `value` parsed as f64.
fn first_number(value: &str, key: &str) -> Result<f64, CbfError> {
    number_at(&words(value), 0, key)
}

/// One Pilatus header line as `(key, value)`; `None` for blank or non-`#` lines.
pub(super) fn pilatus_pair(line: &str) -> Option<(String, String)> {
    let body = line.trim().strip_prefix('#')?.trim();
    let (first, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    if first.is_empty() {
        return None;
    }
    if first.as_bytes()[0].is_ascii_digit() && first.contains(':') {
        return Some(("timestamp".to_string(), body.to_string()));
    }
    let rest = rest.trim();
    let value = rest.strip_prefix('=').unwrap_or(rest).trim();
    Some((first.trim_end_matches(':').to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_header() -> CbfHeader {
        CbfHeader {
            detector: "PILATUS3 6M, S/N 60-0127".to_string(),
            timestamp: "2017-06-26T02:54:23.347".to_string(),
            pixel_size_x_m: 172e-6,
            pixel_size_y_m: 75.5e-6,
            thickness_m: 450e-6,
            exposure_time_s: 0.099,
            count_cutoff: 1_009_797,
            wavelength_a: 0.9768,
            distance_m: 0.22982,
            beam_x_px: 1264.48,
            beam_y_px: -3.5,
            start_angle_deg: -254.7,
            angle_increment_deg: 0.1,
            detector_2theta_deg: 12.25,
            ..CbfHeader::default()
        }
    }

    /// The lines as the detectors write them, each field with its unit and precision.
    #[test]
    fn pilatus_lines_have_the_detectors_layout() {
        assert_eq!(
            test_header().pilatus_lines(),
            [
                "# Detector: PILATUS3 6M, S/N 60-0127",
                "# 2017-06-26T02:54:23.347",
                "# Pixel_size 172e-6 m x 75.5e-6 m",
                "# Silicon sensor, thickness 0.000450 m",
                "# Exposure_time 0.0990000 s",
                "# Exposure_period 0.0990000 s",
                "# Tau = 0 s",
                "# Count_cutoff 1009797 counts",
                "# Threshold_setting: 6346 eV",
                "# N_excluded_pixels = 0",
                "# Wavelength 0.976800 A",
                "# Detector_distance 0.229820 m",
                "# Beam_xy (1264.480, -3.500) pixels",
                "# Start_angle -254.7000 deg.",
                "# Angle_increment 0.1000 deg.",
                "# Detector_2theta 12.2500 deg.",
                "# Phi -254.7000 deg.",
                "# Oscillation_axis PHI",
                "# N_oscillations 1",
            ]
        );
        // no sensor thickness is written as 0 m (no parallax), not left out
        let thin = CbfHeader {
            thickness_m: 0.0,
            ..test_header()
        };
        assert!(thin
            .pilatus_lines()
            .contains(&"# Silicon sensor, thickness 0.000000 m".to_string()));
    }

    #[test]
    fn numbers_are_trimmed_to_their_decimals() {
        assert_eq!(fmt_trimmed(172.0, 3), "172");
        assert_eq!(fmt_trimmed(75.5, 3), "75.5");
        assert_eq!(fmt_trimmed(100.0004, 3), "100");
        assert_eq!(fmt_trimmed(0.1234567, 3), "0.123");
        assert_eq!(fmt_trimmed(1e-6 * 1e6, 3), "1");
    }

    #[test]
    fn timestamps_follow_the_pilatus_form() {
        for ok in [
            "2017-06-26T02:54:23",
            "2017-06-26T02:54:23.347",
            "1970-01-01T00:00:00.0",
        ] {
            assert!(is_pilatus_timestamp(ok), "{ok}");
        }
        for bad in [
            "",
            "2017-06-26",
            "2017-06-26 02:54:23",
            "2017-06-26T02:54:23.",
            "2017-06-26T02:54:23Z",
        ] {
            assert!(!is_pilatus_timestamp(bad), "{bad}");
        }
    }

    #[test]
    fn validate_names_the_bad_field() {
        assert!(test_header().validate().is_ok());
        let cases = [
            (
                CbfHeader {
                    wavelength_a: 0.0,
                    ..test_header()
                },
                "wavelength_a",
            ),
            (
                CbfHeader {
                    pixel_size_x_m: -1e-4,
                    ..test_header()
                },
                "pixel_size_x_m",
            ),
            (
                CbfHeader {
                    distance_m: f64::NAN,
                    ..test_header()
                },
                "distance_m",
            ),
            (
                CbfHeader {
                    detector_2theta_deg: f64::INFINITY,
                    ..test_header()
                },
                "detector_2theta_deg",
            ),
            (
                CbfHeader {
                    header_convention: String::new(),
                    ..test_header()
                },
                "convention",
            ),
            (
                CbfHeader {
                    timestamp: "today".into(),
                    ..test_header()
                },
                "timestamp",
            ),
        ];
        for (h, needle) in cases {
            let err = h.validate().unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn lines_split_into_keys_and_values() {
        let pair = pilatus_pair;
        assert_eq!(pair("# Tau = 0 s"), Some(("Tau".into(), "0 s".into())));
        assert_eq!(
            pair("# Threshold_setting: 6346 eV"),
            Some(("Threshold_setting".into(), "6346 eV".into()))
        );
        assert_eq!(
            pair("# Detector: X, S/N 1"),
            Some(("Detector".into(), "X, S/N 1".into()))
        );
        assert_eq!(
            pair("# 2017-06-26T02:54:23.347"),
            Some(("timestamp".into(), "2017-06-26T02:54:23.347".into()))
        );
        assert_eq!(
            pair("  # Wavelength 1.0 A  "),
            Some(("Wavelength".into(), "1.0 A".into()))
        );
        assert_eq!(pair("Wavelength 1.0 A"), None);
        assert_eq!(pair("#"), None);
        assert_eq!(pair(""), None);
    }

    #[test]
    fn written_lines_parse_back_to_the_header() {
        let h = test_header();
        let lines: Vec<_> = h.pilatus_lines().iter().filter_map(|l| pilatus_pair(l)).collect();
        assert_eq!(CbfHeader::from_pilatus_lines(&h.header_convention, &lines).unwrap(), h);
        // Detector_2theta is optional; every other field is required
        let without: Vec<_> = lines.iter().filter(|(k, _)| k != "Detector_2theta").cloned().collect();
        let back = CbfHeader::from_pilatus_lines(&h.header_convention, &without).unwrap();
        assert_eq!(back.detector_2theta_deg, 0.0);
        let without: Vec<_> = lines.iter().filter(|(k, _)| k != "Wavelength").cloned().collect();
        let err = CbfHeader::from_pilatus_lines(&h.header_convention, &without).unwrap_err();
        assert!(err.to_string().contains("Wavelength"), "{err}");
    }
}
