//! DIALS experiment lists (`-detector_expt FILE`, dxtbx's `.expt` JSON): the first detector's
//! panels and the first beam.
//!
//! Lengths in the file are mm (origin, pixel_size, thickness) and mm⁻¹ (mu). A detector with a
//! `hierarchy` is flattened: each group's frame (fast, slow, origin, given in its parent's
//! frame) is composed from the root down, and a panel's own frame is taken in its group's, as
//! dxtbx composes them. The beam's `direction` points from the sample to the source, so the
//! beam propagates along −direction; its E-vector is direction × polarization_normal … taken
//! perpendicular to the beam.

use super::groups::{Grouping, PanelGroup};
use super::{panel_fault, perpendicular, unit, FileBeam, Panel, PanelFault, PanelLayout};
use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::base::vec3::{add, cross, scale};
use serde_json::Value;
use std::path::Path;

/// Reads the first detector and beam of a DIALS experiment list.
pub fn read_expt(path: &Path) -> Result<PanelLayout> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_expt(path, &text)
}

/// Parses the text of a DIALS experiment list; `path` names it in errors.
pub fn parse_expt(path: &Path, text: &str) -> Result<PanelLayout> {
    let root: Value =
        serde_json::from_str(text).map_err(|e| Error::parse(path, Some(e.line()), format!("not JSON: {e}")))?;
    let at = |key: &str, msg: String| Error::parse(path, line_of(text, key), format!("{key}: {msg}"));
    let detector = root.get("detector").and_then(|d| d.get(0)).ok_or_else(|| {
        at(
            "detector",
            "no detector (an experiment list has \"detector\": [ … ])".into(),
        )
    })?;
    let raw = detector
        .get("panels")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| at("panels", "the first detector has no panels".into()))?;
    let mut panels = Vec::with_capacity(raw.len());
    for (k, p) in raw.iter().enumerate() {
        panels.push(panel(k, p, &at)?);
    }
    let mut nodes = Vec::new();
    if let Some(h) = detector.get("hierarchy") {
        compose(h, &IDENTITY, 0, &mut panels, &mut nodes, &at)?;
    }
    let groupings = hierarchy_levels(&nodes);
    let beam = match root.get("beam").and_then(|b| b.get(0)) {
        Some(b) => beam(b, &at)?,
        None => FileBeam {
            direction: [0.0, 0.0, -1.0],
            polarization: [1.0, 0.0, 0.0],
            wavelength: None,
        },
    };
    for (k, p) in panels.iter().enumerate() {
        if let Some((fault, message)) = panel_fault(p, beam.direction) {
            let key = match fault {
                PanelFault::Axes => "slow_axis",
                PanelFault::PixelSize => "pixel_size",
                PanelFault::PixelCount => "image_size",
                PanelFault::Origin => "origin",
                PanelFault::Beam => "fast_axis",
            };
            return Err(at(key, format!("panel {k} ({}): {message}", p.name)));
        }
    }
    Ok(PanelLayout {
        panels,
        beam,
        groupings,
    })
}

type AtFn<'a> = dyn Fn(&str, String) -> Error + 'a;

/// The 1-based line of the first `"key"` in the text, to point an error at.
fn line_of(text: &str, key: &str) -> Option<usize> {
    let quoted = format!("\"{}\"", key.rsplit(['.', ']']).next().unwrap_or(key));
    text.find(&quoted).map(|at| text[..at].matches('\n').count() + 1)
}

fn vec3(v: &Value, key: &str, at: &AtFn) -> Result<Vec3> {
    let a = v.get(key).and_then(Value::as_array).filter(|a| a.len() == 3);
    let nums: Option<Vec<f64>> = a.and_then(|a| a.iter().map(Value::as_f64).collect());
    match nums {
        Some(n) if n.iter().all(|x| x.is_finite()) => Ok([n[0], n[1], n[2]]),
        _ => Err(at(key, "expected three numbers".into())),
    }
}

fn direction(v: &Value, key: &str, at: &AtFn) -> Result<Vec3> {
    unit(vec3(v, key, at)?).ok_or_else(|| at(key, "a zero vector".into()))
}

fn pair<T>(v: &Value, key: &str, at: &AtFn, f: impl Fn(&Value) -> Option<T>) -> Result<[T; 2]> {
    let a = v.get(key).and_then(Value::as_array).filter(|a| a.len() == 2);
    match a.map(|a| (f(&a[0]), f(&a[1]))) {
        Some((Some(x), Some(y))) => Ok([x, y]),
        _ => Err(at(key, "expected two values".into())),
    }
}

/// One panel in its own (local) frame, lengths converted to m.
fn panel(k: usize, p: &Value, at: &AtFn) -> Result<Panel> {
    let at = |key: &str, msg: String| at(key, format!("panel {k}: {msg}"));
    let fast = direction(p, "fast_axis", &at)?;
    let slow = direction(p, "slow_axis", &at)?;
    let origin = scale(vec3(p, "origin", &at)?, 1e-3);
    let [pf, ps] = pair(p, "pixel_size", &at, |x| {
        x.as_f64().filter(|x| *x > 0.0 && x.is_finite())
    })?;
    if (pf - ps).abs() > 1e-9 * pf {
        return Err(at(
            "pixel_size",
            format!("{pf} × {ps} mm: only square pixels are rendered"),
        ));
    }
    let [nf, ns] = pair(p, "image_size", &at, |x| {
        x.as_u64().filter(|&n| n > 0).map(|n| n as usize)
    })?;
    let optional = |key: &str| p.get(key).and_then(Value::as_f64).filter(|x| x.is_finite() && *x > 0.0);
    Ok(Panel {
        name: p
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("panel{k}"), String::from),
        fast,
        slow,
        origin,
        pixel_size: pf * 1e-3,
        fpixels: nf,
        spixels: ns,
        thickness: optional("thickness").map(|t| t * 1e-3),
        mu: optional("mu").map(|m| m * 1e3),
        bad: Vec::new(),
    })
}

/// A frame: fast, slow, normal (columns of the rotation) and origin, in lab coordinates (m).
type Frame = [Vec3; 4];
const IDENTITY: Frame = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0; 3]];

/// A vector given in `frame`'s axes, in lab coordinates.
fn in_frame(frame: &Frame, v: Vec3) -> Vec3 {
    add(add(scale(frame[0], v[0]), scale(frame[1], v[1])), scale(frame[2], v[2]))
}

/// A hierarchy node below the root: its depth (1 = a child of the root), name, own fast and
/// slow axes in the lab (where it gives them) and the panels under it.
type Node = (usize, String, Option<[Vec3; 2]>, Vec<usize>);

/// Walks a hierarchy node at `depth`: composes its frame with `parent`, moves its panels into
/// the lab, records the groups below the root in `nodes`, and returns the panels under it.
fn compose(
    node: &Value,
    parent: &Frame,
    depth: usize,
    panels: &mut [Panel],
    nodes: &mut Vec<Node>,
    at: &AtFn,
) -> Result<Vec<usize>> {
    let own = node.get("fast_axis").is_some();
    let frame = if own {
        let (f, s) = (direction(node, "fast_axis", at)?, direction(node, "slow_axis", at)?);
        let o = scale(vec3(node, "origin", at)?, 1e-3);
        let (f, s) = (in_frame(parent, f), in_frame(parent, s));
        [
            f,
            s,
            unit(cross(f, s)).unwrap_or([0.0; 3]),
            add(parent[3], in_frame(parent, o)),
        ]
    } else {
        *parent
    };
    if let Some(k) = node.get("panel").and_then(Value::as_u64) {
        let count = panels.len();
        let p = panels
            .get_mut(k as usize)
            .ok_or_else(|| at("panel", format!("hierarchy names panel {k}, the detector has {count}")))?;
        // the panel's values are local to its group's frame
        p.fast = in_frame(parent, p.fast);
        p.slow = in_frame(parent, p.slow);
        p.origin = add(parent[3], in_frame(parent, p.origin));
        return Ok(vec![k as usize]);
    }
    let mut under = Vec::new();
    for child in node.get("children").and_then(Value::as_array).into_iter().flatten() {
        under.extend(compose(child, &frame, depth + 1, panels, nodes, at)?);
    }
    if depth > 0 {
        let name = node.get("name").and_then(Value::as_str).unwrap_or("");
        let name = if name.is_empty() {
            format!("group{}", nodes.len())
        } else {
            name.to_string()
        };
        nodes.push((depth, name, own.then_some([frame[0], frame[1]]), under.clone()));
    }
    Ok(under)
}

/// The groupings `level1`, `level2`, …: the hierarchy's groups at each depth below the root
/// (a panel above that depth is a group of its own, see [`PanelLayout::grouping`]).
fn hierarchy_levels(nodes: &[Node]) -> Vec<Grouping> {
    let deepest = nodes.iter().map(|n| n.0).max().unwrap_or(0);
    (1..=deepest)
        .map(|d| Grouping {
            name: format!("level{d}"),
            groups: nodes
                .iter()
                .filter(|n| n.0 == d && !n.3.is_empty())
                .map(|(_, name, axes, panels)| PanelGroup {
                    name: name.clone(),
                    panels: panels.clone(),
                    axes: *axes,
                })
                .collect(),
        })
        .collect()
}

/// The first beam: propagation −direction, E-vector from the polarization normal, wavelength.
fn beam(b: &Value, at: &AtFn) -> Result<FileBeam> {
    let to_source = direction(b, "direction", at)?;
    let propagation = scale(to_source, -1.0);
    let polarization = match b.get("polarization_normal") {
        Some(_) => {
            let n = direction(b, "polarization_normal", at)?;
            perpendicular(propagation, cross(n, to_source))
        }
        None => perpendicular(propagation, [1.0, 0.0, 0.0]),
    };
    let wavelength = match b.get("wavelength") {
        Some(w) => Some(
            w.as_f64()
                .filter(|x| *x > 0.0 && x.is_finite())
                .ok_or_else(|| at("wavelength", "expected a positive number (Å)".into()))?
                * 1e-10,
        ),
        None => None,
    };
    Ok(FileBeam {
        direction: propagation,
        polarization,
        wavelength,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expt(panels: &str, hierarchy: &str) -> String {
        format!(
            r#"{{
  "__id__": "ExperimentList",
  "experiment": [{{"__id__": "Experiment", "beam": 0, "detector": 0}}],
  "beam": [{{"direction": [0.0, 0.0, 1.0], "wavelength": 1.2,
            "polarization_normal": [0.0, 1.0, 0.0], "polarization_fraction": 0.999}}],
  "detector": [{{
    "panels": [{panels}]{hierarchy}
  }}]
}}"#
        )
    }

    const PANEL: &str = r#"{"name": "A", "type": "SENSOR_PAD", "fast_axis": [1.0, 0.0, 0.0],
        "slow_axis": [0.0, -1.0, 0.0], "origin": [-10.0, 20.0, -100.0], "pixel_size": [0.1, 0.1],
        "image_size": [200, 100], "thickness": 0.45, "mu": 3.9, "material": "Si"}"#;

    #[test]
    fn a_flat_panel_in_mm_and_the_beam() {
        let l = parse_expt(Path::new("a.expt"), &expt(PANEL, "")).unwrap();
        let p = &l.panels[0];
        assert_eq!((p.name.as_str(), p.fpixels, p.spixels), ("A", 200, 100));
        let want = [-10.0e-3, 20.0e-3, -100.0e-3];
        assert!((0..3).all(|k| (p.origin[k] - want[k]).abs() < 1e-17), "{:?}", p.origin);
        assert!((p.pixel_size - 1e-4).abs() < 1e-18);
        assert!((p.thickness.unwrap() - 450e-6).abs() < 1e-18 && (p.mu.unwrap() - 3900.0).abs() < 1e-9);
        assert_eq!(l.beam.direction, [0.0, 0.0, -1.0]);
        assert_eq!(l.beam.polarization, [1.0, 0.0, 0.0]);
        assert!((l.beam.wavelength.unwrap() - 1.2e-10).abs() < 1e-24);
    }

    #[test]
    fn a_hierarchy_composes_group_frames() {
        // a group rotated 90° about z (its fast is lab y) and moved to (0, 0, −100) mm; the
        // panel 5 mm along its group's fast axis
        let panel = PANEL.replace("[-10.0, 20.0, -100.0]", "[5.0, 0.0, 0.0]");
        let hierarchy = r#", "hierarchy": {"name": "", "fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, 1.0, 0.0],
          "origin": [0.0, 0.0, 0.0], "children": [{"name": "q0", "fast_axis": [0.0, 1.0, 0.0],
          "slow_axis": [-1.0, 0.0, 0.0], "origin": [0.0, 0.0, -100.0], "children": [{"panel": 0}]}]}"#;
        let l = parse_expt(Path::new("h.expt"), &expt(&panel, hierarchy)).unwrap();
        let p = &l.panels[0];
        let close = |a: Vec3, b: Vec3| (0..3).all(|k| (a[k] - b[k]).abs() < 1e-15);
        assert!(close(p.origin, [0.0, 5e-3, -0.1]), "{:?}", p.origin);
        assert!(close(p.fast, [0.0, 1.0, 0.0]), "{:?}", p.fast);
        assert!(close(p.slow, [1.0, 0.0, 0.0]), "{:?}", p.slow);
    }

    #[test]
    fn hierarchy_levels_are_groupings_with_the_nodes_axes() {
        // root → q0 (panels 0, 1, in its own frame), q1 → { s (panel 2), panel 3 }
        let p = |k: usize, x: f64| {
            PANEL
                .replace("\"A\"", &format!("\"P{k}\""))
                .replace("[-10.0, 20.0, -100.0]", &format!("[{x}, 0.0, -100.0]"))
        };
        let panels = [p(0, 0.0), p(1, 30.0), p(2, 60.0), p(3, 90.0)].join(", ");
        let hierarchy = r#", "hierarchy": {"name": "", "children": [
          {"name": "q0", "fast_axis": [0.0, 1.0, 0.0], "slow_axis": [-1.0, 0.0, 0.0], "origin": [0.0, 0.0, -100.0],
           "children": [{"panel": 0}, {"panel": 1}]},
          {"name": "q1", "children": [{"name": "s", "children": [{"panel": 2}]}, {"panel": 3}]}]}"#;
        let l = parse_expt(Path::new("h.expt"), &expt(&panels, hierarchy)).unwrap();
        let names: Vec<String> = l.groupings.iter().map(|g| g.name.clone()).collect();
        assert_eq!(names, ["level1", "level2"]);
        let level1 = l.grouping("level1").unwrap();
        let members: Vec<(&str, Vec<usize>)> = level1
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.panels.clone()))
            .collect();
        assert_eq!(members, [("q0", vec![0, 1]), ("q1", vec![2, 3])]);
        assert_eq!(level1.groups[0].axes, Some([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]));
        assert_eq!(level1.groups[1].axes, None);
        // at depth 2: s, and every panel above that depth on its own
        let level2 = l.grouping("level2").unwrap();
        let members: Vec<Vec<usize>> = level2.groups.iter().map(|g| g.panels.clone()).collect();
        assert_eq!(members, [vec![2], vec![0], vec![1], vec![3]]);
        let e = l.grouping("quadrants").unwrap_err().to_string();
        assert!(e.contains("-panel_groups") && e.contains("level1"), "{e}");
    }

    #[test]
    fn malformed_files_name_the_file_line_and_key() {
        let e = parse_expt(Path::new("x.expt"), "{\n \"detector\": [\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.expt:") && e.contains("not JSON"), "{e}");
        let bad = expt(&PANEL.replace("[0.1, 0.1]", "[0.1]"), "");
        let e = parse_expt(Path::new("x.expt"), &bad).unwrap_err().to_string();
        assert!(
            e.starts_with("x.expt:8:") && e.contains("pixel_size") && e.contains("panel 0"),
            "{e}"
        );
        let bad = expt(&PANEL.replace("[1.0, 0.0, 0.0]", "[0.0, 0.0, 0.0]"), "");
        let e = parse_expt(Path::new("x.expt"), &bad).unwrap_err().to_string();
        assert!(e.contains("fast_axis") && e.contains("zero"), "{e}");
        let e = parse_expt(Path::new("x.expt"), "{\"beam\": []}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no detector"), "{e}");
        let bad = expt(PANEL, "").replace("\"wavelength\": 1.2", "\"wavelength\": -1");
        let e = parse_expt(Path::new("x.expt"), &bad).unwrap_err().to_string();
        assert!(e.starts_with("x.expt:4:") && e.contains("wavelength"), "{e}");
    }
}
