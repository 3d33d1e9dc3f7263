//! Images that are not finite numbers: the check a run makes before it writes any file, and
//! the flag it names.
//!
//! C writes whatever its sums give: +∞ where a pixel's photons overflow single precision
//! (`-fluence 1e300`, `-water 1e30`, `-point_pixel` with `-oversample_omega`), NaN where an
//! overflowed factor meets a zero (∞·0 between the spots). Here such an image is an error
//! (exit status 9) naming the flag behind the largest factor of the intensity, and nothing is
//! written; `-allow_nonfinite` writes the images anyway, with a warning.
//!
//! The factors of a pixel's peak intensity, I = r_e²·fluence · F² · F_latt² · Ω · P (plus the
//! water background, which takes F²·F_latt²'s place), are compared with their sizes in an
//! ordinary run; the one furthest above its ordinary size (in decades) is named.

use crate::base::error::{Error, Result};
use crate::experiment::{Experiment, R_E_SQR, WATER_BACKGROUND};
use crate::render::output::NonFinite;
use crate::render::Image;

/// One factor of the peak intensity: the flag that sets it, what it is, its value, and its
/// value in an ordinary run (the default fluence, F = 100, N = 10, 100 µm of water, a
/// 0.1 mm pixel at 100 mm).
struct Factor {
    flag: &'static str,
    what: &'static str,
    value: f64,
    ordinary: f64,
}

impl Factor {
    /// Decades above the ordinary value (+∞ for a non-finite value).
    fn excess(&self) -> f64 {
        let v = self.value.abs();
        if v.is_finite() {
            (v.max(f64::MIN_POSITIVE) / self.ordinary).log10()
        } else {
            f64::INFINITY
        }
    }
}

/// The factors of `exp`'s peak intensity.
fn factors(exp: &Experiment) -> Vec<Factor> {
    let sf = &exp.structure_factors;
    let grid_max = sf
        .grid
        .as_ref()
        .map_or(0.0, |g| g.values.iter().fold(0.0f64, |m, f| m.max(f.abs())));
    let (f_flag, f_max) = if grid_max > sf.default_f.abs() {
        ("-hkl (or ./Fdump.bin)", grid_max)
    } else {
        ("-default_F", sf.default_f.abs())
    };
    let d = &exp.detector;
    let close = d.close_distance.abs();
    let (omega_flag, omega, omega_ordinary) = if d.point_pixel {
        (
            "-point_pixel with -distance or -close_distance",
            1.0 / (close * close),
            1e2,
        )
    } else {
        (
            "-pixel (or -distance, -close_distance)",
            (d.pixel_size / close).powi(2),
            1e-6,
        )
    };
    let cells: f64 = exp.n_cells.iter().product();
    let mut out = vec![
        Factor {
            flag: "-fluence (or -flux, -exposure and -beamsize)",
            what: "r_e²·fluence",
            value: R_E_SQR * exp.fluence,
            ordinary: R_E_SQR * crate::config::DEFAULT_FLUENCE,
        },
        Factor {
            flag: f_flag,
            what: "F²",
            value: f_max * f_max,
            ordinary: 1e4,
        },
        Factor {
            flag: crate::experiment::N_FLAGS,
            what: "F_latt² = (Na·Nb·Nc)²",
            value: cells * cells,
            ordinary: 1e6,
        },
        Factor {
            flag: "-water",
            what: "the water background per unit r_e²·fluence",
            value: exp.water_size.powi(3) * WATER_BACKGROUND / R_E_SQR,
            ordinary: 1e-12 * WATER_BACKGROUND / R_E_SQR,
        },
        Factor {
            flag: omega_flag,
            what: "the solid angle of the nearest pixel",
            value: omega,
            ordinary: omega_ordinary,
        },
        Factor {
            flag: "-polar",
            what: "the Kahn polarization factor",
            value: exp.polarization.abs().max(1.0),
            ordinary: 1.0,
        },
    ];
    if exp.oversample_omega {
        // C multiplies the running sum by every term's solid angle: Ω^(terms)
        out.push(Factor {
            flag: "-oversample_omega",
            what: "the running sum times every term's solid angle",
            value: omega.max(1.0).powf(exp.steps as f64),
            ordinary: 1.0,
        });
    }
    out
}

/// The factor furthest above its ordinary size, when one is more than a decade above it.
fn culprit(exp: &Experiment) -> Option<Factor> {
    factors(exp)
        .into_iter()
        .filter(|f| f.excess() > 1.0)
        .max_by(|a, b| a.excess().total_cmp(&b.excess()))
}

/// Where an image's pixels are not finite, as text: "N pixels are NaN …, the first at …".
fn describe(r: &NonFinite) -> String {
    let at = |p: Option<(usize, usize)>| p.map(|(s, f)| format!("slow={s} fast={f}")).unwrap_or_default();
    let mut parts = Vec::new();
    if r.infinite > 0 {
        parts.push(format!(
            "{} pixels overflow single precision (beyond ±3.4e38 photons), the first at {}",
            r.infinite,
            at(r.first_infinite)
        ));
    }
    if r.nan > 0 {
        parts.push(format!(
            "{} pixels are NaN (not a number), the first at {}",
            r.nan,
            at(r.first_nan)
        ));
    }
    parts.join("; ")
}

/// Checks that every pixel of `image` (rendered from `exp`) is a finite number.
///
/// `Ok(None)`: all are. Otherwise, without `allow_nonfinite`, an error naming the flag behind
/// the largest factor of the intensity (a configuration error when no factor stands out);
/// with it, `Ok(Some(warning))`.
pub fn check_image(exp: &Experiment, image: &Image, allow_nonfinite: bool) -> Result<Option<String>> {
    let r = NonFinite::scan(image);
    if r.nan == 0 && r.infinite == 0 {
        return Ok(None);
    }
    let what = describe(&r);
    if allow_nonfinite {
        // names only the kinds of value present (a log with no NaN pixels never says "NaN")
        let ints = match (r.nan > 0, r.infinite > 0) {
            (true, true) => "as 0 (NaN) or saturated (±∞)",
            (true, false) => "as 0",
            _ => "saturated",
        };
        return Ok(Some(format!(
            "{what}; written as they are to the float image, {ints} in the integer and noise images"
        )));
    }
    let advice = "or give -allow_nonfinite to write the images anyway";
    Err(match culprit(exp) {
        Some(f) => Error::flag(
            f.flag,
            format!(
                "{what}: the intensity's largest factor, {} = {}, is {:.0} decades above an ordinary run's; lower it, {advice}",
                f.what,
                crate::base::cfmt::fmt_g(f.value),
                f.excess().min(999.0)
            ),
        ),
        None => Error::Config(format!(
            "{what}: the simulation has no value there (check the inputs, {advice})"
        )),
    })
}

/// Checks that every value of a derivative image is finite (see [`check_image`]); `name` is
/// the derivative's parameter. The error names `-derivative NAME`.
pub fn check_derivative(name: &str, data: &[f32], allow_nonfinite: bool) -> Result<Option<String>> {
    let bad = data.iter().filter(|v| !v.is_finite()).count();
    if bad == 0 {
        return Ok(None);
    }
    let what = format!("d(pixel)/d({name}) is not a finite number at {bad} pixels");
    if allow_nonfinite {
        return Ok(Some(format!("{what}; written as it is")));
    }
    Err(Error::flag(
        "-derivative",
        format!("{what}: the image overflows single precision there (lower the intensity, or give -allow_nonfinite to write it anyway)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;

    fn experiment(edit: impl FnOnce(&mut SimConfig)) -> Experiment {
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
        cfg.crystal.hkl = crate::config::HklSource::None;
        cfg.detector.fpixels = Some(4);
        cfg.detector.spixels = Some(4);
        edit(&mut cfg);
        Experiment::new(&cfg).unwrap()
    }

    fn image(data: Vec<f32>) -> Image {
        Image {
            fpixels: 2,
            spixels: data.len() / 2,
            data,
            omega_sum: 0.0,
            interpolation_fell_back: false,
            statistics: None,
        }
    }

    fn flag_of(exp: &Experiment, data: Vec<f32>) -> String {
        match check_image(exp, &image(data), false) {
            Err(Error::Flag { flag, .. }) => flag,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finite_images_pass_and_allowed_ones_warn() {
        let exp = experiment(|_| {});
        assert!(check_image(&exp, &image(vec![0.0, 1.0, -2.0, 3e38]), false)
            .unwrap()
            .is_none());
        let w = check_image(&exp, &image(vec![f32::NAN, f32::INFINITY]), true)
            .unwrap()
            .unwrap();
        assert!(w.contains("NaN") && w.contains("overflow"), "{w}");
    }

    #[test]
    fn the_error_names_the_extreme_factor() {
        let inf = vec![f32::INFINITY, 0.0];
        type Edit = Box<dyn Fn(&mut SimConfig)>;
        let cases: [(&str, Edit); 5] = [
            ("-fluence", Box::new(|c| c.beam.fluence = 1e300)),
            ("-default_F", Box::new(|c| c.crystal.default_f = 1e100)),
            ("-N", Box::new(|c| c.crystal.na = 1e18)),
            ("-water", Box::new(|c| c.sampling.water_size = 1e30)),
            ("-polar", Box::new(|c| c.beam.polarization = 1e200)),
        ];
        for (flag, edit) in cases {
            let exp = experiment(|c| edit(c));
            let named = flag_of(&exp, inf.clone());
            assert!(named.starts_with(flag), "{flag}: {named}");
        }
    }

    #[test]
    fn nothing_extreme_is_a_plain_error_with_the_position() {
        let exp = experiment(|_| {});
        let e = check_image(&exp, &image(vec![1.0, 2.0, f32::NAN, 0.0]), false).unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        assert!(e.to_string().contains("slow=1 fast=0"), "{e}");
    }

    #[test]
    fn derivatives_name_the_flag() {
        assert!(check_derivative("distance", &[1.0, 2.0], false).unwrap().is_none());
        let e = check_derivative("distance", &[1.0, f32::NAN], false).unwrap_err();
        assert!(
            e.to_string().contains("-derivative") && e.to_string().contains("distance"),
            "{e}"
        );
    }
}
