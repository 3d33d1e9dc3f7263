//! X-ray sources: the divergence grid with elliptical trimming and the dispersion sweep, or the
//! rows of a `-sourcefile` (physics reference §6).

use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::base::vec3::{rotate_axis, scale, unitize};
use crate::config::SourceRow;
use crate::experiment::sampling::Sweep;

/// Distance from the sample to generated sources (m); fixed in C.
pub const SOURCE_DISTANCE: f64 = 10.0;

/// One point source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Source {
    /// Unit propagation direction of the incident photons (from the source to the sample).
    pub incident: Vec3,
    /// Wavelength (m).
    pub lambda: f64,
}

/// Sources from a file: missing positions default to −10 m·b, missing λ to λ0; the weight
/// column is ignored, as in C.
pub fn from_rows(rows: &[SourceRow], beam: Vec3, lambda0: f64) -> Result<Vec<Source>> {
    if rows.is_empty() {
        return Err(Error::Config("-sourcefile: no sources in the file".into()));
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let pos = [
                r.x.unwrap_or(-SOURCE_DISTANCE * beam[0]),
                r.y.unwrap_or(-SOURCE_DISTANCE * beam[1]),
                r.z.unwrap_or(-SOURCE_DISTANCE * beam[2]),
            ];
            let (unit, len) = unitize(pos);
            let lambda = r.lambda.unwrap_or(lambda0);
            if len == 0.0 || !len.is_finite() {
                return Err(Error::Config(format!("-sourcefile: source {} is at the origin", i + 1)));
            }
            if !(lambda > 0.0 && lambda.is_finite()) {
                return Err(Error::Config(format!(
                    "-sourcefile: source {} has wavelength {lambda}",
                    i + 1
                )));
            }
            Ok(Source {
                incident: scale(unit, -1.0),
                lambda,
            })
        })
        .collect()
}

/// Divergence offsets (hdiv, vdiv) (rad) that survive C's elliptical trimming, in C's order.
pub fn divergence_grid(h: Sweep, v: Sweep, round_div: bool) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for ht in 0..h.count {
        for vt in 0..v.count {
            let hd = h.step * ht as f64 - h.range / 2.0;
            let vd = v.step * vt as f64 - v.range / 2.0;
            let even = |s: &Sweep| (1 - (s.count % 2)) as f64;
            let mut test = (hd * hd - h.step * h.step / 4.0 * even(&h)) / h.range / h.range;
            test += (vd * vd - v.step * v.step / 4.0 * even(&v)) / v.range / v.range;
            // a zero range gives NaN, and C keeps such points (NaN > 1.1 is false)
            if round_div && test * 4.0 > 1.1 {
                continue;
            }
            out.push((hd, vd));
        }
    }
    out
}

/// Generated sources: each accepted divergence point × each wavelength, in C's order.
/// `beam` is b, `polar` the E-vector p; vertical divergence rotates about p, horizontal
/// about v = unit(b × p).
pub fn generate(
    beam: Vec3,
    polar: Vec3,
    lambda0: f64,
    h: Sweep,
    v: Sweep,
    round_div: bool,
    disp: Sweep,
) -> Vec<Source> {
    let vert = unitize(crate::base::vec3::cross(beam, polar)).0;
    let mut out = Vec::new();
    for (hd, vd) in divergence_grid(h, v, round_div) {
        let pos = scale(beam, -SOURCE_DISTANCE);
        let pos = rotate_axis(rotate_axis(pos, polar, vd), vert, hd);
        let incident = scale(unitize(pos).0, -1.0);
        for dt in 0..disp.count {
            let lambda = lambda0 * (1.0 + disp.step * dt as f64 - disp.range / 2.0);
            out.push(Source { incident, lambda });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_divergence_gives_one_source_along_the_beam() {
        let s = generate(
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1e-10,
            Sweep::SINGLE,
            Sweep::SINGLE,
            true,
            Sweep::SINGLE,
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].incident, [1.0, 0.0, 0.0]);
        assert_eq!(s[0].lambda, 1e-10);
    }

    #[test]
    fn elliptical_trimming_drops_corners() {
        let sw = Sweep {
            count: 3,
            range: 2e-3,
            step: 1e-3,
        };
        assert_eq!(divergence_grid(sw, sw, true).len(), 5);
        assert_eq!(divergence_grid(sw, sw, false).len(), 9);
    }

    #[test]
    fn dispersion_spans_the_band() {
        let d = Sweep {
            count: 3,
            range: 0.02,
            step: 0.01,
        };
        let s = generate(
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1e-10,
            Sweep::SINGLE,
            Sweep::SINGLE,
            true,
            d,
        );
        let l: Vec<f64> = s.iter().map(|s| s.lambda).collect();
        assert!((l[0] - 0.99e-10).abs() < 1e-22 && (l[2] - 1.01e-10).abs() < 1e-22);
    }
}
