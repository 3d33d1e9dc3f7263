//! Multi-panel detectors (`-geom`, `-detector_expt`): every panel against the C program's
//! image of it (rendered by C one panel per run, `fixtures/panels/make_fixtures.py`, which
//! derives C's CUSTOM flags on its own and checks C's printed pix0 against each panel's
//! origin), a single flat panel against the same detector given by flags, bad regions, and
//! malformed files.

use super::common;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The crystal of the C fixtures (`make_fixtures.py`'s CRYSTAL).
pub(crate) const CRYSTAL: &str =
    "-default_F 100 -cell 70 80 90 90 90 90 -misset 10 20 30 -lambda 1.0 -N 6 -oversample 2 -nonoise -nopgm";

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/panels").join(name)
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "nanobragg failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn args(parts: &[&str]) -> Vec<String> {
    parts
        .iter()
        .flat_map(|p| p.split_whitespace())
        .map(String::from)
        .collect()
}

/// Renders the detector of `flag FILE` and returns the float image `[P·slow·fast]`.
pub(crate) fn render_panels(dir: &Path, flag: &str, file: &Path, extra: &str) -> Vec<f32> {
    let mut a = args(&[CRYSTAL, extra, "-floatfile all.bin"]);
    a.extend([flag.to_string(), file.display().to_string()]);
    ok(&common::run_program(dir, &a));
    common::read_f32(&dir.join("all.bin"))
}

/// Each panel against C's: corr ≥ 0.9999 and sum within 1e-3.
fn assert_matches_c(ours: &[f32], c: &[f32], panels: usize, what: &str) {
    assert_eq!(ours.len(), c.len(), "{what}: pixel count");
    let n = c.len() / panels;
    for k in 0..panels {
        let (a, b) = (&ours[k * n..(k + 1) * n], &c[k * n..(k + 1) * n]);
        let corr = common::correlation(a, b);
        let ratio = common::sum_ratio(a, b);
        assert!(corr >= 0.9999, "{what} panel {k}: correlation {corr}");
        assert!((ratio - 1.0).abs() <= 1e-3, "{what} panel {k}: sum ratio {ratio}");
    }
}

#[test]
fn four_tilted_panels_match_c_per_panel() {
    let dir = tempfile::tempdir().unwrap();
    let ours = render_panels(dir.path(), "-detector_expt", &fixture("four_tilted.expt"), "");
    assert_matches_c(
        &ours,
        &common::read_f32(&fixture("four_tilted.c.f32")),
        4,
        "four_tilted.expt",
    );
}

#[test]
fn cspad_as_geom_and_as_expt_match_c_per_panel() {
    let c = common::read_f32(&fixture("cspad64.c.f32"));
    let dir = tempfile::tempdir().unwrap();
    let geom = render_panels(dir.path(), "-geom", &fixture("cspad64.geom"), "-npyfile all.npy");
    assert_matches_c(&geom, &c, 64, "cspad64.geom");
    // the NumPy array has the panel dimension
    let npy = std::fs::read(dir.path().join("all.npy")).unwrap();
    let header = String::from_utf8_lossy(&npy[..128]);
    assert!(header.contains("'shape': (64, 10, 20)"), "{header}");
    let expt = render_panels(dir.path(), "-detector_expt", &fixture("cspad64.expt"), "");
    assert_matches_c(&expt, &c, 64, "cspad64.expt");
    // one layout, two files: the same render to rounding
    let worst = geom
        .iter()
        .zip(&expt)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    let max = c.iter().copied().fold(0.0f32, f32::max);
    assert!(worst <= 1e-5 * max, "geom vs expt: {worst} of {max}");
}

/// The detector of MOSFLM flags, resolved by the library.
fn flag_detector(flags: &str) -> nanobragg::experiment::DetectorGeometry {
    let a = args(&[CRYSTAL, flags]);
    common::experiment(&a, None).1.detector
}

/// A one-panel DIALS experiment list for a panel given in nanobragg's MOSFLM frame (m):
/// DIALS (x, y, z) = run (z, y, −x), in mm.
fn one_panel_expt(d: &nanobragg::experiment::DetectorGeometry) -> String {
    let dials = |v: [f64; 3], s: f64| format!("[{:e}, {:e}, {:e}]", v[2] * s, v[1] * s, -v[0] * s);
    format!(
        r#"{{"__id__": "ExperimentList", "experiment": [{{"beam": 0, "detector": 0}}],
 "beam": [{{"direction": [0.0, 0.0, 1.0], "wavelength": 1.0, "polarization_normal": [0.0, 1.0, 0.0]}}],
 "detector": [{{"panels": [{{"name": "flat", "fast_axis": {}, "slow_axis": {}, "origin": {},
   "pixel_size": [{:e}, {:e}], "image_size": [{}, {}]}}]}}]}}"#,
        dials(d.fdet, 1.0),
        dials(d.sdet, 1.0),
        dials(d.pix0, 1e3),
        d.pixel_size * 1e3,
        d.pixel_size * 1e3,
        d.fpixels,
        d.spixels
    )
}

/// The same panel as a CrystFEL geometry file: CrystFEL (x, y, z) = run (z, −y, x).
fn one_panel_geom(d: &nanobragg::experiment::DetectorGeometry) -> String {
    let res = 1.0 / d.pixel_size;
    let cf = |v: [f64; 3]| [v[2], -v[1], v[0]];
    let (fs, ss, o) = (cf(d.fdet), cf(d.sdet), cf(d.pix0));
    format!(
        "; one flat panel\nclen = {:e}\nres = {res:e}\nflat/min_fs = 0\nflat/max_fs = {}\nflat/min_ss = 0\nflat/max_ss = {}\n\
         flat/fs = {:+e}x {:+e}y {:+e}z\nflat/ss = {:+e}x {:+e}y {:+e}z\nflat/corner_x = {:e}\nflat/corner_y = {:e}\n",
        o[2],
        d.fpixels - 1,
        d.spixels - 1,
        fs[0],
        fs[1],
        fs[2],
        ss[0],
        ss[1],
        ss[2],
        o[0] * res,
        o[1] * res
    )
}

#[test]
fn a_flat_panel_file_renders_as_the_detector_given_by_flags() {
    let dir = tempfile::tempdir().unwrap();
    let flags = "-mosflm -distance 100 -pixel 0.1 -detpixels_f 40 -detpixels_s 30 -Xbeam 1.5 -Ybeam 2.05";
    let d = flag_detector(flags);
    std::fs::write(dir.path().join("flat.expt"), one_panel_expt(&d)).unwrap();
    std::fs::write(dir.path().join("flat.geom"), one_panel_geom(&d)).unwrap();
    ok(&common::run_program(
        dir.path(),
        &args(&[CRYSTAL, flags, "-floatfile by_flags.bin"]),
    ));
    let by_flags = common::read_f32(&dir.path().join("by_flags.bin"));
    let max = by_flags.iter().copied().fold(0.0f32, f32::max);
    assert!(max > 0.0);
    let cfg = common::experiment(&args(&[CRYSTAL, flags]), None).0;
    for (flag, file) in [("-detector_expt", "flat.expt"), ("-geom", "flat.geom")] {
        let got = render_panels(dir.path(), flag, &dir.path().join(file), "");
        // bit-identical to the panel's own CUSTOM flags, as the library derives them for C
        let path = dir.path().join(file);
        let layout = match flag {
            "-geom" => nanobragg::io::panels::geom::read_geom(&path),
            _ => nanobragg::io::panels::expt::read_expt(&path),
        }
        .unwrap();
        let pc = nanobragg::experiment::panels::custom::panel_configs(&cfg, &layout, "test").unwrap();
        let mut a = args(&[CRYSTAL, "-floatfile by_custom.bin"]);
        a.extend(nanobragg::experiment::panels::custom::panel_flags(&pc[0].detector));
        ok(&common::run_program(dir.path(), &a));
        assert!(
            got == common::read_f32(&dir.path().join("by_custom.bin")),
            "{file}: differs from its CUSTOM flags' render"
        );
        // and equal to the MOSFLM flags' detector up to the rounding of the file's numbers
        let worst = got
            .iter()
            .zip(&by_flags)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            worst <= 1e-6 * max,
            "{file}: {worst} of {max} from the MOSFLM flags' render"
        );
    }
}

#[test]
fn bad_regions_are_not_rendered_and_outputs_are_per_panel() {
    let dir = tempfile::tempdir().unwrap();
    let mut geom = std::fs::read_to_string(fixture("cspad64.geom")).unwrap();
    // q0a1's data rows 10..19: its first two pixels of row 1, and q3a15 whole
    geom.push_str(
        "\nbad_one/min_fs = 0\nbad_one/max_fs = 1\nbad_one/min_ss = 11\nbad_one/max_ss = 11\nbad_one/panel = q0a1\n",
    );
    geom.push_str("q3a15/no_index = 1\n");
    std::fs::write(dir.path().join("bad.geom"), geom).unwrap();
    let mut a = args(&[CRYSTAL, "-floatfile all.bin -intfile int.img"]);
    a.extend(["-geom".to_string(), "bad.geom".to_string()]);
    ok(&common::run_program(dir.path(), &a));
    let all = common::read_f32(&dir.path().join("all.bin"));
    let c = common::read_f32(&fixture("cspad64.c.f32"));
    let n = 200;
    let q0a1 = &all[n..2 * n];
    assert_eq!(&q0a1[20..22], &[0.0, 0.0], "masked pixels");
    assert!(q0a1[22] > 0.0 && q0a1[..20].iter().all(|&x| x > 0.0));
    assert!(all[63 * n..].iter().all(|&x| x == 0.0), "q3a15 is bad");
    assert_matches_c(&all[..n], &c[..n], 1, "unmasked q0a0");
    // one SMV per panel, named by panel, with the detector's one scale
    for name in ["q0a0", "q1a7", "q3a15"] {
        let (h, px) = nanobragg::io::smv::read_smv_u16(&dir.path().join(format!("int_{name}.img"))).unwrap();
        assert_eq!(px.len(), n, "{name}: {h:?}");
    }
    let brightest = all.iter().copied().fold(0.0f32, f32::max);
    let at = all.iter().position(|&x| x == brightest).unwrap();
    let name = ["q0", "q1", "q2", "q3"][at / n / 16].to_string() + &format!("a{}", (at / n) % 16);
    let (_, px) = nanobragg::io::smv::read_smv_u16(&dir.path().join(format!("int_{name}.img"))).unwrap();
    // C's int scale: 55000 over the brightest pixel, + adc 40
    assert_eq!(px[at % n], 55040, "{name}");
}

#[test]
fn malformed_panel_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let geom = "clen = 0.1\nres = 1e4\np0/min_fs = 0\np0/max_fs = 3\np0/min_ss = 0\np0/max_ss = 3\n\
                p0/fs = sideways\np0/ss = y\np0/corner_x = 0\np0/corner_y = 0\n";
    std::fs::write(dir.path().join("bad.geom"), geom).unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["-geom", "bad.geom"], "bad.geom:7: p0/fs"),
        (&["-detector_expt", "missing.expt"], "missing.expt"),
        (&["-geom", "bad.geom", "-detector_expt", "x.expt"], "-detector_expt"),
        (&["-detector_rotx", "3"], "-detector_rotx"),
    ];
    for (extra, want) in cases {
        let mut a = args(&[CRYSTAL]);
        a.extend(extra.iter().map(|s| s.to_string()));
        if extra[0] == "-detector_rotx" {
            a.extend(["-geom".to_string(), fixture("cspad64.geom").display().to_string()]);
        }
        let out = common::run_program(dir.path(), &a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

/// `fixtures/panels/four_tilted.expt` with panel `k` moved by `edit(origin, fast, slow)` (the
/// file's frame and units: mm).
/// A change of a panel's origin, fast and slow vectors.
type PanelEdit = dyn Fn(&mut [f64; 3], &mut [f64; 3], &mut [f64; 3]);

/// A derivative name, its step and the file with the panel moved by a given amount.
type PanelMove = (&'static str, f64, Box<dyn Fn(f64) -> String>);

fn moved_panel(k: usize, edit: &PanelEdit) -> String {
    let text = std::fs::read_to_string(fixture("four_tilted.expt")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let p = &mut v["detector"][0]["panels"][k];
    let get = |p: &serde_json::Value, key: &str| -> [f64; 3] { std::array::from_fn(|i| p[key][i].as_f64().unwrap()) };
    let (mut o, mut f, mut s) = (get(p, "origin"), get(p, "fast_axis"), get(p, "slow_axis"));
    edit(&mut o, &mut f, &mut s);
    p["origin"] = serde_json::json!(o);
    p["fast_axis"] = serde_json::json!(f);
    p["slow_axis"] = serde_json::json!(s);
    v.to_string()
}

/// `v` rotated by `deg` about +x (right-handed).
fn about_x(v: &mut [f64; 3], deg: f64) {
    let (sn, cs) = deg.to_radians().sin_cos();
    *v = [v[0], v[1] * cs - v[2] * sn, v[1] * sn + v[2] * cs];
}

/// Cosine of the angle between `a` and `b`, and |a|/|b|.
fn cosine_and_norm_ratio(a: &[f64], b: &[f64]) -> (f64, f64) {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let (na, nb) = (
        a.iter().map(|x| x * x).sum::<f64>().sqrt(),
        b.iter().map(|x| x * x).sum::<f64>().sqrt(),
    );
    (dot / (na * nb), na / nb)
}

/// A derivative image against the central difference (plus − minus)/(2·step): cosine ≥ 0.999
/// and norms within 2 %.
fn assert_derivative(ours: &[f32], plus: &[f32], minus: &[f32], step: f64, what: &str) {
    let fd: Vec<f64> = plus
        .iter()
        .zip(minus)
        .map(|(p, m)| (*p as f64 - *m as f64) / (2.0 * step))
        .collect();
    let ours: Vec<f64> = ours.iter().map(|&x| x as f64).collect();
    let (cos, ratio) = cosine_and_norm_ratio(&ours, &fd);
    assert!(
        cos >= 0.999 && (ratio - 1.0).abs() <= 0.02,
        "{what}: cosine {cos}, norm ratio {ratio}"
    );
}

/// Renders `four_tilted.expt` with `extra` flags and `-derivative NAME d_NAME.bin` for each of
/// `names` in `dir`.
pub(crate) fn render_derivatives(dir: &Path, extra: &str, names: &[&str]) {
    let mut a = args(&[CRYSTAL, "-floatfile all.bin", extra]);
    for name in names {
        a.extend(["-derivative".to_string(), name.to_string(), format!("d_{name}.bin")]);
    }
    a.extend([
        "-detector_expt".to_string(),
        fixture("four_tilted.expt").display().to_string(),
    ]);
    ok(&common::run_program(dir, &a));
}

#[test]
fn per_panel_derivatives_match_central_differences_of_moved_panels() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names = ["Xbeam", "close_distance", "detector_rotz", "misset_x"];
    render_derivatives(d, "", &names);
    let n = 32 * 24;
    // each panel's own shifts and rotation, in the file's frame: Xbeam (−Xclose) moves the
    // panel along −fast, close_distance along its outward normal (fast × slow here), and
    // detector_rotz turns it about the run's z (the file's +x) through the sample
    let h = 0.005;
    for k in [0usize, 2] {
        let moves: [PanelMove; 3] = [
            (
                "Xbeam",
                h,
                Box::new(move |x| moved_panel(k, &move |o, f, _| (0..3).for_each(|i| o[i] -= x * f[i]))),
            ),
            (
                "close_distance",
                h,
                Box::new(move |x| {
                    moved_panel(k, &move |o, f, s| {
                        let nrm = [
                            f[1] * s[2] - f[2] * s[1],
                            f[2] * s[0] - f[0] * s[2],
                            f[0] * s[1] - f[1] * s[0],
                        ];
                        (0..3).for_each(|i| o[i] += x * nrm[i])
                    })
                }),
            ),
            (
                "detector_rotz",
                h,
                Box::new(move |x| moved_panel(k, &move |o, f, s| [o, f, s].into_iter().for_each(|v| about_x(v, x)))),
            ),
        ];
        for (name, step, moved) in moves {
            let image = |delta: f64| {
                std::fs::write(d.join("moved.expt"), moved(delta)).unwrap();
                render_panels(d, "-detector_expt", &d.join("moved.expt"), "")
            };
            let (plus, minus) = (image(step), image(-step));
            let ours = common::read_f32(&d.join(format!("d_{name}.bin")));
            let block = k * n..(k + 1) * n;
            assert_derivative(
                &ours[block.clone()],
                &plus[block.clone()],
                &minus[block],
                step,
                &format!("panel {k} {name}"),
            );
            // the other panels do not move
            assert!((0..4 * n).filter(|i| i / n != k).all(|i| plus[i] == minus[i]), "{name}");
        }
    }
    // a crystal parameter: one derivative over every panel
    let image = |misset: &str| {
        let mut a = args(&[&CRYSTAL.replace("-misset 10 20 30", misset), "-floatfile m.bin"]);
        a.extend([
            "-detector_expt".to_string(),
            fixture("four_tilted.expt").display().to_string(),
        ]);
        ok(&common::run_program(d, &a));
        common::read_f32(&d.join("m.bin"))
    };
    let (plus, minus) = (image("-misset 10.0001 20 30"), image("-misset 9.9999 20 30"));
    let ours = common::read_f32(&d.join("d_misset_x.bin"));
    assert_derivative(&ours, &plus, &minus, 1e-4, "misset_x");
}

/// `v` turned by `deg` degrees about the unit `axis` (right-handed; the test's own Rodrigues).
fn turned(v: [f64; 3], axis: [f64; 3], deg: f64) -> [f64; 3] {
    let (sn, cs) = deg.to_radians().sin_cos();
    let d: f64 = (0..3).map(|i| axis[i] * v[i]).sum();
    let c = [
        axis[1] * v[2] - axis[2] * v[1],
        axis[2] * v[0] - axis[0] * v[2],
        axis[0] * v[1] - axis[1] * v[0],
    ];
    std::array::from_fn(|i| v[i] * cs + c[i] * sn + axis[i] * d * (1.0 - cs))
}

/// The panels of `four_tilted.expt` as (origin, fast, slow, pixels fast, slow, pixel size),
/// in the file's frame and units (mm).
type FilePanel = ([f64; 3], [f64; 3], [f64; 3], f64, f64, f64);

fn file_panels() -> Vec<FilePanel> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("four_tilted.expt")).unwrap()).unwrap();
    let get = |p: &serde_json::Value, key: &str| -> [f64; 3] { std::array::from_fn(|i| p[key][i].as_f64().unwrap()) };
    v["detector"][0]["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let size = |i: usize| p["image_size"][i].as_f64().unwrap();
            (
                get(p, "origin"),
                get(p, "fast_axis"),
                get(p, "slow_axis"),
                size(0),
                size(1),
                p["pixel_size"][0].as_f64().unwrap(),
            )
        })
        .collect()
}

/// A group's centre (the mean of its panels' centres, mm) and its O, F, S axes (its first
/// panel's outward normal, fast and slow), as docs/panels.md defines them.
fn group_frame(panels: &[FilePanel], members: &[usize]) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut c = [0.0; 3];
    for &k in members {
        let (o, f, s, nf, ns, px) = panels[k];
        (0..3).for_each(|i| c[i] += (o[i] + f[i] * nf * px / 2.0 + s[i] * ns * px / 2.0) / members.len() as f64);
    }
    let (o, f, s, ..) = panels[members[0]];
    let n = [
        f[1] * s[2] - f[2] * s[1],
        f[2] * s[0] - f[0] * s[2],
        f[0] * s[1] - f[1] * s[0],
    ];
    let len = n.iter().map(|x| x * x).sum::<f64>().sqrt();
    let sign = if (0..3).map(|i| n[i] * o[i]).sum::<f64>() < 0.0 {
        -1.0
    } else {
        1.0
    };
    (c, [n.map(|x| sign * x / len), f, s])
}

/// `four_tilted.expt` with the panels `members` moved by `amount` of motion `m` (0–2: shift
/// along the file's x, y, z in mm; 3–5: rotation in degrees about the group's O, F, S through
/// its centre).
fn moved_group(members: &[usize], m: usize, amount: f64) -> String {
    let mut motion = [0.0; 6];
    motion[m] = amount;
    moved_by(members, motion)
}

/// `four_tilted.expt` with the panels `members` moved as one group by `motion`: turned by
/// S, then F, then O degrees about the group's fixed axes through its centre, then shifted by
/// X, Y, Z mm along the file's axes (docs/panels.md).
pub(crate) fn moved_by(members: &[usize], motion: [f64; 6]) -> String {
    let panels = file_panels();
    let (c, axes) = group_frame(&panels, members);
    let turn = |v: [f64; 3]| {
        let v = turned(v, axes[2], motion[5]);
        turned(turned(v, axes[1], motion[4]), axes[0], motion[3])
    };
    let text = std::fs::read_to_string(fixture("four_tilted.expt")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for &k in members {
        let (o, f, s, ..) = panels[k];
        let r = turn(std::array::from_fn(|i| o[i] - c[i]));
        let o: [f64; 3] = std::array::from_fn(|i| r[i] + c[i] + motion[i]);
        let p = &mut v["detector"][0]["panels"][k];
        p["origin"] = serde_json::json!(o);
        p["fast_axis"] = serde_json::json!(turn(f));
        p["slow_axis"] = serde_json::json!(turn(s));
    }
    v.to_string()
}

#[test]
fn panel_and_group_motions_match_central_differences() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 32 * 24;
    let names = nanobragg::experiment::panels::motion::MOTIONS.map(|(name, _)| name);
    // (grouping, the groups to check as member lists)
    let cases: [(&str, Vec<Vec<usize>>); 2] = [("panels", vec![vec![1], vec![3]]), ("all", vec![vec![0, 1, 2, 3]])];
    for (grouping, groups) in cases {
        render_derivatives(d, &format!("-panel_groups {grouping}"), &names);
        for members in &groups {
            for (m, name) in names.iter().enumerate() {
                let step = 0.005;
                let image = |delta: f64| {
                    std::fs::write(d.join("moved.expt"), moved_group(members, m, delta)).unwrap();
                    render_panels(d, "-detector_expt", &d.join("moved.expt"), "")
                };
                let (plus, minus) = (image(step), image(-step));
                let ours = common::read_f32(&d.join(format!("d_{name}.bin")));
                let block =
                    |v: &[f32]| -> Vec<f32> { members.iter().flat_map(|&k| v[k * n..(k + 1) * n].to_vec()).collect() };
                assert_derivative(
                    &block(&ours),
                    &block(&plus),
                    &block(&minus),
                    step,
                    &format!("{grouping} {members:?} {name}"),
                );
                // panels of other groups neither move nor have a derivative of this group
                assert!(
                    (0..4 * n)
                        .filter(|i| !members.contains(&(i / n)))
                        .all(|i| plus[i] == minus[i]),
                    "{name}"
                );
            }
        }
    }
}

/// The CRYSTAL run on `four_tilted.expt` as a configuration, and its layout.
pub(crate) fn four_tilted_config() -> (nanobragg::SimConfig, nanobragg::io::panels::PanelLayout) {
    let mut a = args(&[CRYSTAL]);
    a.extend([
        "-detector_expt".to_string(),
        fixture("four_tilted.expt").display().to_string(),
    ]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let nanobragg::experiment::args::Parsed::Run(cfg, _) = nanobragg::experiment::args::parse_args(&a).unwrap() else {
        panic!()
    };
    let layout = cfg.detector.panels.clone().unwrap();
    (*cfg, layout)
}

pub(crate) type Ad = burn::backend::Autodiff<burn::backend::ndarray::NdArray<f64>>;

/// A panel objective over `motions` of the `grouping`, against `observed`.
fn panel_objective<'a>(
    cfg: &'a nanobragg::SimConfig,
    layout: &nanobragg::io::panels::PanelLayout,
    grouping: &str,
    motions: &[(usize, usize)],
    observed: &'a [f32],
) -> nanobragg::refine::PanelObjective<'a, Ad> {
    nanobragg::refine::PanelObjective {
        cfg,
        grid: None,
        layout: layout.clone(),
        grouping: layout.grouping(grouping).unwrap(),
        motions: motions
            .iter()
            .map(|&(group, motion)| nanobragg::refine::MotionComponent { group, motion })
            .collect(),
        selection: Default::default(),
        observed,
        loss: Default::default(),
        options: Default::default(),
        device: common::f64_device(),
    }
}

/// The loss's gradient over panel and group motions, away from the start (rotations composed,
/// centres shifted), against central differences of the loss.
#[test]
fn panel_objective_gradient_matches_central_differences() {
    use nanobragg::refine::Objective;
    let (cfg, layout) = four_tilted_config();
    let dir = tempfile::tempdir().unwrap();
    let observed = render_panels(dir.path(), "-detector_expt", &fixture("four_tilted.expt"), "");
    for (grouping, motions) in [
        ("panels", vec![(1, 0), (1, 2), (1, 3), (1, 4), (1, 5), (3, 1)]),
        ("all", vec![(0, 0), (0, 3), (0, 4), (0, 5)]),
    ] {
        let mut f = panel_objective(&cfg, &layout, grouping, &motions, &observed);
        let x0: Vec<f64> = (0..motions.len())
            .map(|i| 0.02 * (i as f64 + 1.0) * if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let (_, g) = f.value_grad(&x0).unwrap();
        for i in 0..x0.len() {
            let fd = super::common::central_difference(|x| f.value(x).unwrap(), &x0, i, 1e-3);
            assert!(
                (g[i] - fd).abs() <= 2e-3 * fd.abs() + 1e-4 * g.iter().map(|v| v.abs()).fold(0.0, f64::max),
                "{grouping} {:?}: gradient {} vs central difference {fd}",
                motions[i],
                g[i]
            );
        }
    }
}

/// L-BFGS recovers a panel's shift and rotation from the image of a layout moved by the test's
/// own rotation code (no noise), starting from the file's layout.
#[test]
fn panel_motions_are_recovered_by_refinement() {
    use nanobragg::refine::{Lbfgs, Optimizer};
    let (cfg, layout) = four_tilted_config();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // panel 2 shifted 0.04 mm along the file's y, then turned 0.05° about its normal
    let shifted = moved_group(&[2], 1, 0.04);
    std::fs::write(d.join("s.expt"), &shifted).unwrap();
    let moved = {
        let panels = file_panels();
        let (c, axes) = group_frame(&panels, &[2]);
        let mut v: serde_json::Value = serde_json::from_str(&shifted).unwrap();
        let p = &mut v["detector"][0]["panels"][2];
        let get =
            |p: &serde_json::Value, key: &str| -> [f64; 3] { std::array::from_fn(|i| p[key][i].as_f64().unwrap()) };
        let c = [c[0], c[1] + 0.04, c[2]];
        let rel: [f64; 3] = std::array::from_fn(|i| get(p, "origin")[i] - c[i]);
        let r = turned(rel, axes[0], 0.05);
        p["origin"] = serde_json::json!([r[0] + c[0], r[1] + c[1], r[2] + c[2]]);
        p["fast_axis"] = serde_json::json!(turned(get(p, "fast_axis"), axes[0], 0.05));
        p["slow_axis"] = serde_json::json!(turned(get(p, "slow_axis"), axes[0], 0.05));
        v.to_string()
    };
    std::fs::write(d.join("moved.expt"), moved).unwrap();
    let observed = render_panels(d, "-detector_expt", &d.join("moved.expt"), "");
    let mut f = panel_objective(&cfg, &layout, "panels", &[(2, 0), (2, 1), (2, 3)], &observed);
    let mut opt = Lbfgs {
        max_iterations: 100,
        ..Default::default()
    };
    let out = opt.minimize(&mut f, &[0.0; 3], &mut |_, _| {}).unwrap();
    let want = [0.0, 0.04, 0.05];
    for (i, (x, w)) in out.x.iter().zip(want).enumerate() {
        assert!(
            (x - w).abs() <= 2e-3,
            "component {i}: refined {x}, true {w} ({:?})",
            out.x
        );
    }
}

#[test]
fn panel_groups_and_motions_are_refused_where_they_mean_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let expt = fixture("four_tilted.expt").display().to_string();
    for (extra, want) in [
        (
            vec!["-panel_groups", "quadrants", "-detector_expt", &expt],
            "no grouping 'quadrants'",
        ),
        (vec!["-panel_groups", "all"], "-panel_groups"),
        (
            vec!["-derivative", "panel_rot_O", "d.bin"],
            "panel_rot_O moves groups of the panels",
        ),
    ] {
        let mut a = args(&[CRYSTAL, "-detpixels 16"]);
        a.extend(extra.iter().map(|s| s.to_string()));
        let out = common::run_program(dir.path(), &a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{extra:?}: {err}");
    }
}

/// `Simulator::panels`: each panel's forward pass equals its block of the binary's float
/// image, and autodiff's ∂(Σ panel)/∂close_distance equals the sum of the panel's block of
/// `-derivative close_distance`; `Simulator::new` refuses a detector of several panels.
#[test]
fn simulator_panels_render_and_differentiate_each_panel() {
    use burn::tensor::ElementConversion;
    let (cfg, _) = four_tilted_config();
    let device = common::f64_device();
    assert!(nanobragg::Simulator::<Ad>::new(&cfg, &device).is_err());
    let sims = nanobragg::Simulator::<Ad>::panels(&cfg, &device).unwrap();
    assert_eq!(sims.len(), 4);
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(&[CRYSTAL, "-floatfile all.bin -derivative close_distance d.bin"]);
    a.extend([
        "-detector_expt".to_string(),
        fixture("four_tilted.expt").display().to_string(),
    ]);
    ok(&common::run_program(dir.path(), &a));
    let (image, derivative) = (
        common::read_f32(&dir.path().join("all.bin")),
        common::read_f32(&dir.path().join("d.bin")),
    );
    let n = 32 * 24;
    let max = image.iter().fold(0.0f32, |m, v| m.max(*v)) as f64;
    for (k, sim) in sims.iter().enumerate() {
        let forward = sim.forward();
        assert_eq!(forward.dims(), [24, 32]);
        let got: Vec<f64> = forward.clone().into_data().convert::<f64>().to_vec().unwrap();
        let worst = got
            .iter()
            .zip(&image[k * n..(k + 1) * n])
            .map(|(a, b)| (a - *b as f64).abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-6 * max,
            "panel {k}: forward differs from -floatfile by {worst}"
        );
        let grads = forward.sum().backward();
        let per_m: f64 = sim
            .params
            .close_distance
            .as_ref()
            .unwrap()
            .grad(&grads)
            .unwrap()
            .into_scalar()
            .elem();
        let want: f64 = derivative[k * n..(k + 1) * n].iter().map(|&v| v as f64).sum();
        assert!(
            (per_m * 1e-3 - want).abs() <= 1e-4 * want.abs(),
            "panel {k}: ∂Σ/∂close_distance {} vs {want}",
            per_m * 1e-3
        );
    }
}
