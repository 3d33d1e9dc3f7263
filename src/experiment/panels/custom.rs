//! Each panel as the CUSTOM detector the C program would be given to render it alone: the
//! panel's fast, slow and outward normal as `-fdet_vector -sdet_vector -odet_vector`, the
//! run's beam, polarization and spindle, pivot SAMPLE, the near point
//! (`-Xclose`, `-Yclose`) = (−origin·fast, −origin·slow) and `-close_distance` = origin·normal,
//! so that C's `pix0 = −Xclose·fast − Yclose·slow + close_distance·normal` is the panel's
//! origin. A multi-panel render is P such renders, each within the chunk budget: the one
//! detector geometry (`crate::diff::detector`) serves every panel.

use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::base::vec3::{dot, norm};
use crate::config::{Convention, CustomVectors, DetectorConfig, Pivot, SimConfig};
use crate::experiment::DetectorGeometry;
use crate::io::panels::{Panel, PanelLayout};

/// The run's configuration for `panel` of a layout already in the run's frame
/// ([`PanelLayout::in_run_frame`]); `run` is the run's own detector, resolved.
pub fn panel_config(cfg: &SimConfig, run: &DetectorGeometry, panel: &Panel) -> SimConfig {
    let normal = exactly_unit(panel.facing_away());
    let d = &cfg.detector;
    let detector = DetectorConfig {
        convention: Convention::Custom,
        pivot: Pivot::Sample,
        pixel_size: panel.pixel_size,
        fpixels: Some(panel.fpixels),
        spixels: Some(panel.spixels),
        detsize_f: panel.pixel_size * panel.fpixels as f64,
        detsize_s: panel.pixel_size * panel.spixels as f64,
        close_distance: Some(dot(panel.origin, normal)),
        xbeam: None,
        ybeam: None,
        xclose: Some(-dot(panel.origin, panel.fast)),
        yclose: Some(-dot(panel.origin, panel.slow)),
        orgx: None,
        orgy: None,
        rotx: 0.0,
        roty: 0.0,
        rotz: 0.0,
        twotheta: 0.0,
        custom: CustomVectors {
            fdet: Some(panel.fast),
            sdet: Some(panel.slow),
            odet: Some(normal),
            beam: Some(run.beam),
            polar: Some(run.polar),
            spindle: Some(run.spindle),
            // no 2θ: the axis is left at CUSTOM's default (and off the flags, where C's
            // substring match of -twotheta_axis would also set -twotheta)
            twotheta_axis: None,
        },
        thickness: panel.thickness.unwrap_or(d.thickness),
        mu: panel.mu.or(d.mu),
        roi: None,
        mask: panel.mask(),
        panels: None,
        ..d.clone()
    };
    SimConfig {
        detector,
        ..cfg.clone()
    }
}

/// `v` (a unit vector to rounding) with its largest component moved by a few ulps so that its
/// length computes to exactly 1.0. The C program, and the setup that follows it, rebuilds a
/// normal whose length is not exactly 1 as fast × slow, which for a left-handed panel points
/// back to the sample (negative solid angles).
fn exactly_unit(v: Vec3) -> Vec3 {
    let k = (0..3).max_by(|&a, &b| v[a].abs().total_cmp(&v[b].abs())).unwrap_or(0);
    for step in [0i64, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8] {
        let mut w = v;
        w[k] = f64::from_bits(v[k].to_bits().wrapping_add_signed(step));
        if norm(w) == 1.0 {
            return w;
        }
    }
    v
}

/// The C program's flags for one panel's detector ([`panel_config`]), lengths in mm: the
/// command that renders the panel alone.
pub fn panel_flags(panel_cfg: &DetectorConfig) -> Vec<String> {
    let c = &panel_cfg.custom;
    let mut flags = Vec::new();
    let mut vector = |flag: &str, v: Option<[f64; 3]>| {
        if let Some(v) = v {
            flags.push(flag.to_string());
            flags.extend(v.iter().map(|x| format!("{x:e}")));
        }
    };
    vector("-fdet_vector", c.fdet);
    vector("-sdet_vector", c.sdet);
    vector("-odet_vector", c.odet);
    vector("-beam_vector", c.beam);
    vector("-polar_vector", c.polar);
    vector("-spindle_axis", c.spindle);
    let mm = |x: Option<f64>| mm_text(x.unwrap_or(0.0));
    flags.extend([
        "-pivot".to_string(),
        "sample".to_string(),
        "-close_distance".to_string(),
        mm(panel_cfg.close_distance),
        "-Xclose".to_string(),
        mm(panel_cfg.xclose),
        "-Yclose".to_string(),
        mm(panel_cfg.yclose),
        "-pixel".to_string(),
        mm(Some(panel_cfg.pixel_size)),
        "-detpixels_f".to_string(),
        panel_cfg.fpixels.unwrap_or(0).to_string(),
        "-detpixels_s".to_string(),
        panel_cfg.spixels.unwrap_or(0).to_string(),
    ]);
    flags
}

/// A length `x` (m) as millimetre text that C's parser (`atof(text)/1000.0`), and ours, read
/// back as exactly `x`: the panel's flags then give the very doubles the multi-panel render
/// uses. Falls back to the nearest text when no nearby millimetre value divides back exactly.
fn mm_text(x: f64) -> String {
    let y = x * 1e3;
    (0..=8i64)
        .flat_map(|k| [k, -k])
        .map(|k| f64::from_bits(y.to_bits().wrapping_add_signed(k)))
        .find(|y| y / 1000.0 == x)
        .map_or_else(|| format!("{y:e}"), |y| format!("{y:e}"))
}

/// Flags that move or crop a one-panel detector, which a panel file replaces.
fn refuse_single_panel_flags(d: &DetectorConfig, file: &str) -> Result<()> {
    let moved = [
        ("-detector_rotx", d.rotx != 0.0),
        ("-detector_roty", d.roty != 0.0),
        ("-detector_rotz", d.rotz != 0.0),
        ("-twotheta", d.twotheta != 0.0),
        ("-roi", d.roi.is_some()),
        ("-mask", d.mask.is_some()),
    ];
    match moved.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(Error::flag(
            *flag,
            format!("cannot be combined with {file}: the panels' positions and bad regions come from the file"),
        )),
        None => Ok(()),
    }
}

/// Every panel's configuration, in the file's order, for a run whose detector is `layout`
/// (in the file's frame). The run's beam and polarization vectors (from its convention and
/// `-beam_vector`/`-polar_vector`) place the file's frame.
pub fn panel_configs(cfg: &SimConfig, layout: &PanelLayout, file: &str) -> Result<Vec<SimConfig>> {
    let (beam, polar) = run_frame(cfg)?;
    placed_panel_configs(cfg, &layout.in_run_frame(beam, polar), file)
}

/// [`panel_configs`] of a layout already placed in the run's frame by
/// [`PanelLayout::in_run_frame`]`(`[`run_frame`]`(cfg))`.
pub fn placed_panel_configs(cfg: &SimConfig, placed: &PanelLayout, file: &str) -> Result<Vec<SimConfig>> {
    refuse_single_panel_flags(&cfg.detector, file)?;
    // a panel's bad regions become a mask of one u16 a pixel
    for p in placed.panels.iter().filter(|p| !p.bad.is_empty()) {
        let bytes = p.fpixels.checked_mul(p.spixels).and_then(|n| n.checked_mul(2));
        if !bytes.is_some_and(crate::experiment::resources::can_allocate) {
            return Err(Error::flag(
                file,
                format!(
                    "panel {}: the mask of its {} x {} pixels cannot be allocated",
                    p.name, p.fpixels, p.spixels
                ),
            ));
        }
    }
    let run = run_geometry(cfg)?;
    Ok(placed.panels.iter().map(|p| panel_config(cfg, &run, p)).collect())
}

/// The run's detector without its panels: its convention's frame.
fn run_geometry(cfg: &SimConfig) -> Result<DetectorGeometry> {
    DetectorGeometry::new(&DetectorConfig {
        panels: None,
        ..cfg.detector.clone()
    })
}

/// The run's beam vector and the polarization vector a panel file's frame is placed by
/// ([`PanelLayout::in_run_frame`]), as [`panel_configs`] places it.
pub fn run_frame(cfg: &SimConfig) -> Result<(Vec3, Vec3)> {
    let run = run_geometry(cfg)?;
    Ok((run.beam, crate::io::panels::perpendicular(run.beam, run.polar)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::vec3::{add, cross, scale, unitize};

    /// A tilted panel at about 90 mm, right- or left-handed.
    fn tilted(left_handed: bool) -> Panel {
        let fast = unitize([0.9, 0.3, 0.1]).0;
        let slow0 = unitize(cross([0.2, -0.1, 1.0], fast)).0;
        let slow = if left_handed { scale(slow0, -1.0) } else { slow0 };
        let centre = [0.09, 0.004, -0.003];
        Panel {
            name: "t".into(),
            fast,
            slow,
            origin: add(centre, add(scale(fast, -1.6e-3), scale(slow, -1.2e-3))),
            pixel_size: 1e-4,
            fpixels: 32,
            spixels: 24,
            thickness: None,
            mu: None,
            bad: Vec::new(),
        }
    }

    #[test]
    fn each_panel_is_a_custom_detector_whose_pix0_is_its_origin() {
        let cfg = SimConfig::default();
        let run = DetectorGeometry::new(&cfg.detector).unwrap();
        for left_handed in [false, true] {
            let panel = tilted(left_handed);
            let pc = panel_config(&cfg, &run, &panel);
            let d = DetectorGeometry::new(&pc.detector).unwrap();
            for k in 0..3 {
                assert!(
                    (d.pix0[k] - panel.origin[k]).abs() < 1e-15,
                    "{left_handed}: {:?}",
                    d.pix0
                );
                assert!((d.fdet[k] - panel.fast[k]).abs() < 1e-15);
                assert!((d.sdet[k] - panel.slow[k]).abs() < 1e-15);
            }
            // the normal the render uses faces away from the sample, left-handed or not
            assert!(dot(d.odet, panel.origin) > 0.0, "{left_handed}: {:?}", d.odet);
            assert!(d.close_distance > 0.0);
            assert_eq!(norm(pc.detector.custom.odet.unwrap()), 1.0);
        }
    }

    #[test]
    fn panel_flags_parse_to_the_same_detector() {
        let cfg = SimConfig::default();
        let run = DetectorGeometry::new(&cfg.detector).unwrap();
        let pc = panel_config(&cfg, &run, &tilted(true));
        let flags = panel_flags(&pc.detector);
        let crate::experiment::args::Parsed::Run(parsed, _) = crate::experiment::args::parse_args(&flags).unwrap()
        else {
            panic!("a run")
        };
        let (a, b) = (
            DetectorGeometry::new(&pc.detector).unwrap(),
            DetectorGeometry::new(&parsed.detector).unwrap(),
        );
        // the flags' text reads back as the very same doubles
        assert_eq!(a, b);
    }
}
