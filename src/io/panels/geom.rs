//! CrystFEL geometry files (`-geom FILE`, `crystfel_geometry(5)`): panels with their data
//! ranges, fs/ss vectors, corner positions, camera length and resolution, and bad regions.
//!
//! The file's frame: +z along the beam, x and y across it (pixel units for `corner_x/y` and
//! the fs/ss vectors, metres for `clen` and `coffset`, pixels per metre for `res`). A value
//! given without a panel name is a default for every panel first named after it, as CrystFEL
//! reads it; a panel's own value wins. Lengths may carry a unit (`clen = 95 mm`).
//!
//! The beam: propagation +z, polarization E along +x (horizontal in CrystFEL's frame, y up),
//! and `photon_energy` (eV) as the wavelength when the file gives a number.

use super::groups::crystfel_grouping;
use super::{panel_fault, unit, FileBeam, Panel, PanelFault, PanelLayout, PixelRect};
use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use std::collections::BTreeMap;
use std::path::Path;

/// The beam's direction of propagation in CrystFEL's frame.
const BEAM: Vec3 = [0.0, 0.0, 1.0];

/// hc (eV·m), as the photon energy → wavelength conversion.
const HC_EV_M: f64 = 1.239_841_984_332_002_8e-6;

/// Properties read but not needed to render (data layout, gain, flags, groups).
const IGNORED: &[&str] = &[
    "data",
    "mask",
    "mask_file",
    "mask_good",
    "mask_bad",
    "adu_per_eV",
    "adu_per_photon",
    "max_adu",
    "badrow_direction",
    "rail_direction",
    "clen_for_centering",
    "flag_lessthan",
    "flag_morethan",
    "flag_equal",
    "peak_list",
    "peak_list_type",
    "detector_shift_x",
    "detector_shift_y",
    "bandwidth",
    "satmap",
    "satmap_file",
    "saturation_map",
    "saturation_map_file",
    "mask0_data",
    "mask0_file",
    "mask0_goodbits",
    "mask0_badbits",
    "mask1_data",
    "mask1_file",
    "mask1_goodbits",
    "mask1_badbits",
];

/// The panel properties this reader knows (beyond [`IGNORED`]); a global value of one of these
/// (or of an ignored key) is a default for the panels named after it. Other global keys (a
/// newer CrystFEL's, or a facility's own) are passed over; an unknown key given for a panel
/// is an error.
const PANEL_KEYS: &[&str] = &[
    "min_fs",
    "max_fs",
    "min_ss",
    "max_ss",
    "fs",
    "ss",
    "corner_x",
    "corner_y",
    "coffset",
    "clen",
    "res",
    "pixel_pitch",
    "no_index",
    "dim0",
    "dim1",
    "dim2",
    "dim3",
];

/// One panel's properties as read, each with the line it came from.
#[derive(Debug, Clone, Default)]
struct Props(BTreeMap<String, (String, usize)>);

impl Props {
    fn get(&self, key: &str) -> Option<&(String, usize)> {
        self.0.get(key)
    }
}

/// A parse of the file: global values, panels in order of first mention, bad regions.
struct Parsed {
    globals: Props,
    panels: Vec<(String, Props)>,
    bad: Vec<(String, Props)>,
    /// `rigid_group_NAME = panel,panel,…`: (NAME, panels, line).
    rigid_groups: Vec<(String, Vec<String>, usize)>,
    /// `rigid_group_collection_NAME = group,group,…`: (NAME, groups, line).
    collections: Vec<(String, Vec<String>, usize)>,
}

/// Reads a CrystFEL geometry file.
pub fn read_geom(path: &Path) -> Result<PanelLayout> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_geom(path, &text)
}

/// Parses the text of a CrystFEL geometry file; `path` names it in errors.
pub fn parse_geom(path: &Path, text: &str) -> Result<PanelLayout> {
    let parsed = split(path, text)?;
    let err = |line: usize, msg: String| Error::parse(path, Some(line), msg);
    let mut panels = Vec::new();
    for (name, props) in &parsed.panels {
        panels.push(panel(name, props, &err)?);
    }
    if panels.is_empty() {
        return Err(Error::parse(
            path,
            None,
            "no panels (a panel is named as NAME/min_fs = …)",
        ));
    }
    for (name, props) in &parsed.bad {
        bad_region(name, props, &mut panels, &parsed.panels, &err)?;
    }
    let wavelength = file_wavelength(&parsed.globals, &err)?;
    let groupings = parsed
        .collections
        .iter()
        .map(|(name, groups, line)| {
            let groups: Vec<(String, usize)> = groups.iter().map(|g| (g.clone(), *line)).collect();
            crystfel_grouping(name, &groups, &parsed.rigid_groups, &panels, &err)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(PanelLayout {
        groupings,
        panels,
        beam: FileBeam {
            direction: BEAM,
            polarization: [1.0, 0.0, 0.0],
            wavelength,
        },
    })
}

/// The wavelength (m) of `wavelength = X A` (or `m`) or `photon_energy = E` (eV); `None` when
/// the file gives neither, or names a value in the data files (e.g. `/LCLS/photon_energy_eV`),
/// which a simulation cannot read: `-lambda` or `-energy` then, else the default.
fn file_wavelength(globals: &Props, err: &ErrFn) -> Result<Option<f64>> {
    let is_path = |v: &str| v.starts_with('/');
    if let Some((v, line)) = globals.get("wavelength").filter(|(v, _)| !is_path(v)) {
        let mut words = v.split_whitespace();
        let (x, unit) = (words.next().unwrap_or(""), words.next());
        let scale = match unit {
            Some("A") => 1e-10,
            None | Some("m") => 1.0,
            Some(u) => return Err(err(*line, format!("wavelength: unit '{u}' (A or m)"))),
        };
        return Ok(Some(positive(x, "wavelength", *line, err)? * scale));
    }
    match globals.get("photon_energy").filter(|(v, _)| !is_path(v)) {
        Some((v, line)) => Ok(Some(HC_EV_M / positive(v, "photon_energy", *line, err)?)),
        None => Ok(None),
    }
}

/// Splits the file into globals, panels (with the defaults in force at their first mention)
/// and bad regions.
fn split(path: &Path, text: &str) -> Result<Parsed> {
    let mut globals = Props::default();
    let mut panels: Vec<(String, Props)> = Vec::new();
    let mut bad: Vec<(String, Props)> = Vec::new();
    let (mut rigid_groups, mut collections) = (Vec::new(), Vec::new());
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split(';').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let Some((key, value)) = content.split_once('=') else {
            return Err(Error::parse(
                path,
                Some(line),
                format!("'{content}': expected KEY = VALUE"),
            ));
        };
        let (key, value) = (key.trim(), value.trim().to_string());
        if value.is_empty() {
            return Err(Error::parse(path, Some(line), format!("{key}: no value")));
        }
        match key.split_once('/') {
            None if key.starts_with("rigid_group") => {
                let names = value.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
                let entry = |name: &str| (name.to_string(), names.collect(), line);
                match key.strip_prefix("rigid_group_collection_") {
                    Some(name) => collections.push(entry(name)),
                    None => rigid_groups.push(entry(key.trim_start_matches("rigid_group_"))),
                }
            }
            None => {
                globals.0.insert(key.to_string(), (value, line));
            }
            Some((name, prop)) => {
                let (name, prop) = (name.trim(), prop.trim().to_string());
                let list = if name.starts_with("bad") { &mut bad } else { &mut panels };
                let at = match list.iter().position(|(n, _)| n == name) {
                    Some(at) => at,
                    None => {
                        // a new panel starts from the defaults given so far
                        let start = if name.starts_with("bad") {
                            Props::default()
                        } else {
                            defaults(&globals)
                        };
                        list.push((name.to_string(), start));
                        list.len() - 1
                    }
                };
                list[at].1 .0.insert(prop, (value, line));
            }
        }
    }
    Ok(Parsed {
        globals,
        panels,
        bad,
        rigid_groups,
        collections,
    })
}

/// The global values that are panel defaults ([`PANEL_KEYS`] and [`IGNORED`]).
fn defaults(globals: &Props) -> Props {
    let known = |k: &str| PANEL_KEYS.contains(&k) || IGNORED.contains(&k);
    Props(
        globals
            .0
            .iter()
            .filter(|(k, _)| known(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

type ErrFn<'a> = dyn Fn(usize, String) -> Error + 'a;

fn number(v: &str, key: &str, line: usize, err: &ErrFn) -> Result<f64> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| err(line, format!("{key}: '{v}' is not a number")))
}

fn positive(v: &str, key: &str, line: usize, err: &ErrFn) -> Result<f64> {
    let x = number(v, key, line, err)?;
    if x > 0.0 {
        Ok(x)
    } else {
        Err(err(line, format!("{key}: {v} must be positive")))
    }
}

fn index(v: &str, key: &str, line: usize, err: &ErrFn) -> Result<usize> {
    v.parse::<usize>()
        .map_err(|_| err(line, format!("{key}: '{v}' is not a pixel index (0, 1, …)")))
}

/// A length (m): a number, or a number with the unit `m` or `mm`.
fn length(v: &str, key: &str, line: usize, err: &ErrFn) -> Result<f64> {
    let mut words = v.split_whitespace();
    let (x, unit) = (words.next().unwrap_or(""), words.next());
    let scale = match unit {
        None | Some("m") => 1.0,
        Some("mm") => 1e-3,
        Some(u) => return Err(err(line, format!("{key}: unit '{u}' (m or mm)"))),
    };
    if words.next().is_some() {
        return Err(err(line, format!("{key}: '{v}' is not a length")));
    }
    x.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x * scale)
        .ok_or_else(|| {
            err(
                line,
                format!("{key}: '{v}' is not a length (a camera length read from the data files is not supported)"),
            )
        })
}

/// A CrystFEL direction such as `+0.0012x -1.0y +0.01z`, in pixel units.
fn direction(v: &str, key: &str, line: usize, err: &ErrFn) -> Result<Vec3> {
    let mut out = [0.0; 3];
    let bad = || err(line, format!("{key}: '{v}' is not a direction such as '+1x -0.002y'"));
    let compact: String = v.chars().filter(|c| !c.is_whitespace()).collect();
    let mut rest = compact.as_str();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let end = rest.find(['x', 'y', 'z']).ok_or_else(bad)?;
        let (coef, axis) = (&rest[..end], rest.as_bytes()[end]);
        let c = match coef {
            "" | "+" => 1.0,
            "-" => -1.0,
            c => c.parse::<f64>().map_err(|_| bad())?,
        };
        out[(axis - b'x') as usize] += c;
        rest = &rest[end + 1..];
    }
    Ok(out)
}

fn required<'a>(props: &'a Props, name: &str, key: &str, err: &ErrFn) -> Result<&'a (String, usize)> {
    props.get(key).ok_or_else(|| {
        let line = props.0.values().map(|(_, l)| *l).min().unwrap_or(0);
        err(line, format!("panel {name}: {name}/{key} is missing"))
    })
}

/// One panel from its properties.
fn panel(name: &str, p: &Props, err: &ErrFn) -> Result<Panel> {
    for (key, (_, line)) in &p.0 {
        if !PANEL_KEYS.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
            return Err(err(*line, format!("{name}/{key}: unknown panel property")));
        }
    }
    let get = |key: &str| required(p, name, key, err);
    let idx = |key: &str| get(key).and_then(|(v, l)| index(v, &format!("{name}/{key}"), *l, err));
    let (min_fs, max_fs, min_ss, max_ss) = (idx("min_fs")?, idx("max_fs")?, idx("min_ss")?, idx("max_ss")?);
    if max_fs < min_fs || max_ss < min_ss {
        let line = get("max_fs")?.1;
        return Err(err(line, format!("panel {name}: max_fs/max_ss below min_fs/min_ss")));
    }
    let (fs_v, fs_l) = get("fs")?;
    let (ss_v, ss_l) = get("ss")?;
    let fs = direction(fs_v, &format!("{name}/fs"), *fs_l, err)?;
    let ss = direction(ss_v, &format!("{name}/ss"), *ss_l, err)?;
    let pitch = match (p.get("res"), p.get("pixel_pitch")) {
        (_, Some((v, l))) => length(v, &format!("{name}/pixel_pitch"), *l, err)?,
        (Some((v, l)), None) => 1.0 / positive(v, &format!("{name}/res"), *l, err)?,
        (None, None) => return Err(err(fs_l.to_owned(), format!("panel {name}: no res (pixels per metre)"))),
    };
    let (clen_v, clen_l) = get("clen")?;
    let clen = length(clen_v, &format!("{name}/clen"), *clen_l, err)?;
    let coffset = match p.get("coffset") {
        Some((v, l)) => length(v, &format!("{name}/coffset"), *l, err)?,
        None => 0.0,
    };
    let corner = |key: &str| get(key).and_then(|(v, l)| number(v, &format!("{name}/{key}"), *l, err));
    let (cx, cy) = (corner("corner_x")?, corner("corner_y")?);
    let (fast, fs_len) = (
        unit(fs).ok_or_else(|| err(*fs_l, format!("{name}/fs: zero vector")))?,
        crate::base::vec3::norm(fs),
    );
    let (slow, ss_len) = (
        unit(ss).ok_or_else(|| err(*ss_l, format!("{name}/ss: zero vector")))?,
        crate::base::vec3::norm(ss),
    );
    if (fs_len - ss_len).abs() > 1e-6 * fs_len {
        return Err(err(
            *ss_l,
            format!("panel {name}: fs and ss steps differ (only square pixels are rendered)"),
        ));
    }
    // at most usize::MAX − 0 + 1 pixels: counted in u64 so that no count overflows
    let count = |lo: usize, hi: usize| usize::try_from(hi as u64 - lo as u64 + 1).ok();
    let (Some(nf), Some(ns)) = (count(min_fs, max_fs), count(min_ss, max_ss)) else {
        let line = get("max_fs")?.1;
        return Err(err(line, format!("panel {name}: too many pixels")));
    };
    let no_index = match p.get("no_index") {
        Some((v, l)) => number(v, &format!("{name}/no_index"), *l, err)? != 0.0,
        None => false,
    };
    let bad = if no_index {
        vec![PixelRect {
            f0: 0,
            f1: nf - 1,
            s0: 0,
            s1: ns - 1,
        }]
    } else {
        Vec::new()
    };
    let panel = Panel {
        name: name.to_string(),
        fast,
        slow,
        // the corner is in pixels, the fs/ss z components add to clen in pixels too
        origin: [cx * pitch, cy * pitch, clen + coffset],
        pixel_size: pitch * fs_len,
        fpixels: nf,
        spixels: ns,
        thickness: None,
        mu: None,
        bad,
    };
    match panel_fault(&panel, BEAM) {
        None => Ok(panel),
        Some((fault, message)) => {
            let (key, line) = match fault {
                PanelFault::Axes => ("ss", *ss_l),
                PanelFault::PixelSize => match (p.get("pixel_pitch"), p.get("res")) {
                    (Some((_, l)), _) => ("pixel_pitch", *l),
                    (None, Some((_, l))) => ("res", *l),
                    (None, None) => ("fs", *fs_l),
                },
                PanelFault::PixelCount => ("max_fs", get("max_fs")?.1),
                PanelFault::Origin => ("clen", *clen_l),
                PanelFault::Beam => ("fs", *fs_l),
            };
            Err(err(line, format!("panel {name}: {name}/{key}: {message}")))
        }
    }
}

/// The pixels `0..n` of one row whose centres lie in the box `[x0, x1, y0, y1]` (pixel units
/// of `pitch`), as an inclusive range: the centres move along a line, so those inside are
/// contiguous. The range is found from the line, then its ends are checked with `inside`
/// itself, so it holds exactly the pixels a test of each would find.
fn row_inside(
    n: usize,
    inside: impl Fn(usize) -> bool,
    centre: impl Fn(usize) -> Vec3,
    pitch: f64,
    [x0, x1, y0, y1]: [f64; 4],
) -> Option<(usize, usize)> {
    let (c0, c1) = (centre(0), centre(1));
    // f where the centre's coordinate k crosses lo and hi (the whole row when it does not move)
    let span = |k: usize, lo: f64, hi: f64| {
        let (a, b) = (c0[k] / pitch, (c1[k] - c0[k]) / pitch);
        if b == 0.0 {
            return if (lo..=hi).contains(&a) {
                (f64::NEG_INFINITY, f64::INFINITY)
            } else {
                (1.0, 0.0)
            };
        }
        let (p, q) = ((lo - a) / b, (hi - a) / b);
        (p.min(q), p.max(q))
    };
    let (xa, xb) = span(0, x0, x1);
    let (ya, yb) = span(1, y0, y1);
    let (from, to) = (xa.max(ya), xb.min(yb));
    if from.is_nan() || to.is_nan() || from > to || n == 0 {
        return None;
    }
    let last = (n - 1) as f64;
    let clamp = |f: f64| f.clamp(0.0, last) as usize;
    let (mut lo, mut hi) = (clamp(from.floor() - 2.0), clamp(to.ceil() + 2.0));
    while lo <= hi && !inside(lo) {
        lo += 1;
    }
    while hi > lo && !inside(hi) {
        hi -= 1;
    }
    (lo <= hi && inside(lo)).then_some((lo, hi))
}

/// Marks a bad region's pixels: by data range (`min_fs … max_ss` and `panel`) or by lab
/// position in pixel units (`min_x … max_y`, every panel whose pixel centre falls inside).
fn bad_region(name: &str, p: &Props, panels: &mut [Panel], raw: &[(String, Props)], err: &ErrFn) -> Result<()> {
    let num = |key: &str| required(p, name, key, err).and_then(|(v, l)| number(v, &format!("{name}/{key}"), *l, err));
    if p.get("min_x").is_some() || p.get("max_x").is_some() {
        let (x0, x1, y0, y1) = (num("min_x")?, num("max_x")?, num("min_y")?, num("max_y")?);
        for panel in panels.iter_mut() {
            let pitch = panel.pixel_size;
            let inside = |f: usize, s: usize| {
                let c = panel.pixel_centre(f, s);
                let (x, y) = (c[0] / pitch, c[1] / pitch);
                (x0..=x1).contains(&x) && (y0..=y1).contains(&y)
            };
            let rects: Vec<PixelRect> = (0..panel.spixels)
                .filter_map(|s| {
                    let (f0, f1) = row_inside(
                        panel.fpixels,
                        |f| inside(f, s),
                        |f| panel.pixel_centre(f, s),
                        pitch,
                        [x0, x1, y0, y1],
                    )?;
                    Some(PixelRect { f0, f1, s0: s, s1: s })
                })
                .collect();
            panel.bad.extend(rects);
        }
        return Ok(());
    }
    let (pv, pl) = required(p, name, "panel", err)?;
    let k = raw
        .iter()
        .position(|(n, _)| n == pv)
        .ok_or_else(|| err(*pl, format!("{name}/panel: no panel named '{pv}'")))?;
    let idx = |key: &str| required(p, name, key, err).and_then(|(v, l)| index(v, &format!("{name}/{key}"), *l, err));
    let (min_fs, max_fs, min_ss, max_ss) = (idx("min_fs")?, idx("max_fs")?, idx("min_ss")?, idx("max_ss")?);
    let r = &raw[k].1;
    let origin = |key: &str| r.get(key).and_then(|(v, _)| v.parse::<usize>().ok()).unwrap_or(0);
    let (f_start, s_start) = (origin("min_fs"), origin("min_ss"));
    let panel = &mut panels[k];
    let clip = |lo: usize, hi: usize, start: usize, n: usize| {
        let lo = lo.saturating_sub(start);
        let hi = hi.saturating_sub(start).min(n - 1);
        (lo <= hi).then_some((lo, hi))
    };
    if let (Some((f0, f1)), Some((s0, s1))) = (
        clip(min_fs, max_fs, f_start, panel.fpixels),
        clip(min_ss, max_ss, s_start, panel.spixels),
    ) {
        panel.bad.push(PixelRect { f0, f1, s0, s1 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "; two panels, one above the other\n\
        clen = 0.1\n\
        res = 10000   ; 100 um pixels\n\
        photon_energy = 12398.419843320028\n\
        p0/min_fs = 0\n p0/max_fs = 3\n p0/min_ss = 0\n p0/max_ss = 1\n\
        p0/fs = +1.0x\n p0/ss = +1.0y\n p0/corner_x = -2\n p0/corner_y = 0.5\n\
        clen = 95 mm\n\
        p1/min_fs = 0\n p1/max_fs = 3\n p1/min_ss = 2\n p1/max_ss = 3\n\
        p1/fs = -1x\n p1/ss = -y\n p1/corner_x = 2\n p1/corner_y = -0.5\n p1/coffset = 0.001\n\
        bad_a/min_fs = 1\n bad_a/max_fs = 2\n bad_a/min_ss = 3\n bad_a/max_ss = 3\n bad_a/panel = p1\n";

    #[test]
    fn panels_defaults_units_and_bad_regions() {
        let l = parse_geom(Path::new("two.geom"), TWO).unwrap();
        assert_eq!(l.panels.len(), 2);
        let (p0, p1) = (&l.panels[0], &l.panels[1]);
        assert_eq!((p0.fpixels, p0.spixels, p1.fpixels, p1.spixels), (4, 2, 4, 2));
        assert!((p0.pixel_size - 1e-4).abs() < 1e-18);
        // p0 was named before clen changed: 0.1 m; p1 after: 95 mm, plus its coffset
        assert!((p0.origin[2] - 0.1).abs() < 1e-15 && (p1.origin[2] - 0.096).abs() < 1e-15);
        assert!((p0.origin[0] + 2e-4).abs() < 1e-18 && (p0.origin[1] - 0.5e-4).abs() < 1e-18);
        assert_eq!((p1.fast, p1.slow), ([-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]));
        // the bad region counts slow from p1's min_ss = 2
        assert_eq!(
            p1.bad,
            vec![PixelRect {
                f0: 1,
                f1: 2,
                s0: 1,
                s1: 1
            }]
        );
        assert!((l.beam.wavelength.unwrap() - 1e-10).abs() < 1e-22);
    }

    #[test]
    fn rigid_group_collections_are_groupings() {
        let text = format!("{TWO}\nrigid_group_a = p0\nrigid_group_b = p1\nrigid_group_both = p0,p1\nrigid_group_collection_halves = a,b\nrigid_group_collection_whole = both\n");
        let l = parse_geom(Path::new("g.geom"), &text).unwrap();
        assert_eq!(l.grouping_names(), ["panels", "all", "halves", "whole"]);
        let halves = l.grouping("halves").unwrap();
        let members: Vec<Vec<usize>> = halves.groups.iter().map(|g| g.panels.clone()).collect();
        assert_eq!(members, [vec![0], vec![1]]);
        assert_eq!(l.grouping("whole").unwrap().groups[0].panels, [0, 1]);
        assert_eq!(l.grouping("all").unwrap().groups.len(), 1);
        // a group naming an unknown panel, a collection naming an unknown group
        for (extra, want) in [
            (
                "rigid_group_a = p0,p9\nrigid_group_collection_c = a\n",
                "rigid_group_a: no panel 'p9'",
            ),
            (
                "rigid_group_collection_c = a,zz\nrigid_group_a = p0\n",
                "no rigid_group_zz",
            ),
            (
                "rigid_group_a = p0\nrigid_group_b = p0\nrigid_group_collection_c = a,b\n",
                "is in rigid_group_a and rigid_group_b",
            ),
        ] {
            let e = parse_geom(Path::new("g.geom"), &format!("{TWO}\n{extra}"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("g.geom:") && e.contains(want), "{e}");
        }
    }

    #[test]
    fn unknown_globals_and_values_from_the_data_files_are_passed_over() {
        let text = format!(
            "photon_energy = /LCLS/photon_energy_eV\nprofile_radius = 0.002e9\nmask_edge_pixels = 1\n{}",
            ONE.join("\n")
        );
        let l = parse_geom(Path::new("real.geom"), &text).unwrap();
        assert_eq!((l.panels.len(), l.beam.wavelength), (1, None));
        let l = parse_geom(Path::new("w.geom"), &format!("wavelength = 1.5 A\n{}", ONE.join("\n"))).unwrap();
        assert!((l.beam.wavelength.unwrap() - 1.5e-10).abs() < 1e-24);
        // the same key for a panel is an error
        let e = parse_geom(Path::new("p.geom"), &one_with(9, "p0/profile_radius = 1")).unwrap_err();
        assert!(e.to_string().starts_with("p.geom:9: p0/profile_radius"), "{e}");
    }

    #[test]
    fn lab_bad_regions_mask_pixel_centres_inside() {
        let text = format!("{TWO}bad_b/min_x = -2\nbad_b/max_x = -1\nbad_b/min_y = 0\nbad_b/max_y = 2\n");
        let l = parse_geom(Path::new("t.geom"), &text).unwrap();
        // p0's pixel centres are at x = −1.5, −0.5, 0.5, 1.5 and y = 1, 2: the first column
        let m = l.panels[0].mask().unwrap();
        assert_eq!(m, vec![0, 1, 1, 1, 0, 1, 1, 1]);
    }

    /// A complete one-panel file, line by line (line k+1 is `ONE[k]`).
    const ONE: [&str; 10] = [
        "clen = 0.1",
        "res = 1e4",
        "p0/min_fs = 0",
        "p0/max_fs = 1",
        "p0/min_ss = 0",
        "p0/max_ss = 1",
        "p0/fs = x",
        "p0/ss = y",
        "p0/corner_x = 0",
        "p0/corner_y = 0",
    ];

    /// `ONE` with line `k` (1-based) replaced.
    fn one_with(k: usize, line: &str) -> String {
        let mut lines = ONE.map(String::from).to_vec();
        lines[k - 1] = line.to_string();
        lines.join("\n")
    }

    #[test]
    fn malformed_files_name_the_line_and_key() {
        parse_geom(Path::new("ok.geom"), &ONE.join("\n")).unwrap();
        let cases = [
            (7, "p0/fs = +1x +2q", "p0/fs"),
            (3, "p0/min_fs = x", "p0/min_fs"),
            (9, "p0/colour = red", "p0/colour"),
            (2, "this line has no equals sign", "expected KEY = VALUE"),
            (1, "clen = /LCLS/detector_1/EncoderValue", "p0/clen"),
            (1, "clen = 0.1 inch", "unit 'inch'"),
            (2, "res = 0", "p0/res"),
            (4, "p0/max_fs = -1", "p0/max_fs"),
        ];
        for (k, line, key) in cases {
            let text = one_with(k, line);
            let e = parse_geom(Path::new("bad.geom"), &text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("bad.geom:{k}:")), "{line:?}: {e}");
            assert!(e.contains(key), "{line:?}: {e}");
        }
        let e = parse_geom(Path::new("bad.geom"), &ONE[..9].join("\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("p0/corner_y is missing"), "{e}");
        let e = parse_geom(Path::new("bad.geom"), "clen = 0.1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.geom") && e.contains("no panels"), "{e}");
        let e = read_geom(Path::new("/nonexistent/x.geom")).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/x.geom"), "{e}");
    }
}
