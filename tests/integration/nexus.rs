//! NeXus NXmx output through the binary (`-nexusfile`), read back by h5py
//! (`fixtures/nxmx_read.py`, which walks the `depends_on` chains generically):
//! - every pixel's position recomputed from the file alone equals the render's pixel centre
//!   (mapped into the NeXus frame) to 1e-9 m, for MOSFLM, XDS and DIALS conventions, a rotated
//!   detector and 2θ, both pivots;
//! - the int32 counts equal the miniCBF's (noise on and off) and the float image the
//!   `-floatfile`, bit for bit;
//! - a shot run writes one stack whose shots the manifest lists by file and index;
//! - a shot run killed with SIGKILL leaves a stack h5py opens with every shot the manifest lists.
//!
//! The h5py checks skip with "SKIP: h5py not installed" unless `NANOBRAGG_REQUIRE_H5PY=1`.

use crate::common;

use nanobragg::io::cbf::read_cbf;
use nanobragg::io::nexus::frame::LabToNexus;
use nanobragg::io::raw::read_float_image;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_nanobragg");

/// Whether python3 with h5py is here; panics when it must be (`NANOBRAGG_REQUIRE_H5PY=1`).
fn have_h5py() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import h5py, numpy"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("NANOBRAGG_REQUIRE_H5PY").as_deref() != Ok("1"),
            "NANOBRAGG_REQUIRE_H5PY=1 but python3 cannot import h5py"
        );
        eprintln!("SKIP: h5py not installed");
    }
    ok
}

/// `fixtures/nxmx_read.py FILE ARGS…` as JSON.
fn read_nexus(path: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nxmx_read.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nxmx_read.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn run(dir: &Path, args: &[&str]) {
    let out = Command::new(BIN).current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "nanobragg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A small detector whose image is not square (a transposition shows).
const SMALL: &str = "-detpixels_f 12 -detpixels_s 9 -pixel 0.5 -distance 80 -oversample 1 -nopgm";

#[test]
fn pixel_positions_from_the_file_equal_the_renders() {
    if !have_h5py() {
        return;
    }
    let geometries = [
        "-mosflm -Xbeam 2.1 -Ybeam 3.3",
        "-xds -ORGX 5.5 -ORGY 3.2",
        "-dials -twotheta 12",
        "-mosflm -detector_rotx 3 -detector_roty -5 -detector_rotz 10 -Xbeam 2 -Ybeam 2.5",
        "-mosflm -twotheta 20 -detector_rotz 4 -pivot sample",
        "-xds -twotheta 15 -detector_rotx 2 -pivot beam",
    ];
    let dir = tempfile::tempdir().unwrap();
    for geometry in geometries {
        let mut args = common::flags(&[common::LIGHT_CRYSTAL, SMALL]);
        args.extend(geometry.split_whitespace());
        let (_, exp) = common::experiment(&args, None);
        args.extend(["-nonoise", "-nexusfile", "g.nxs"]);
        run(dir.path(), &args);
        let v = read_nexus(&dir.path().join("g.nxs"), &["--pixels", "all"]);
        let d = &exp.detector;
        let r = LabToNexus::from_beam(d.beam).unwrap();
        let positions = v["positions"].as_array().unwrap();
        assert_eq!(positions.len(), d.fpixels * d.spixels, "{geometry}");
        let mut worst: f64 = 0.0;
        for p in positions {
            let p: Vec<f64> = p.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            let (i, j) = (p[0], p[1]);
            // the render's pixel centre: pix0 + (i+½)·pixel·f + (j+½)·pixel·s
            let lab = add(
                d.pix0,
                add(
                    scale(d.fdet, (i + 0.5) * d.pixel_size),
                    scale(d.sdet, (j + 0.5) * d.pixel_size),
                ),
            );
            let want = r.apply(lab);
            for k in 0..3 {
                worst = worst.max((p[2 + k] - want[k]).abs());
            }
        }
        assert!(worst < 1e-9, "{geometry}: positions differ by up to {worst:e} m");
    }
}

/// The counts of `path` (one shot) and its float image, from h5py (f32 values, which the
/// JSON's f64 text names exactly: serde_json's default parser may miss an f64 by an ulp, never
/// an f32).
fn counts_and_photons(path: &Path) -> (Vec<i64>, Vec<f32>, Value) {
    let v = read_nexus(path, &["--dump"]);
    let counts = v["counts"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    let photons = v["photons"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    (counts, photons, v)
}

#[test]
fn counts_equal_the_cbf_and_photons_the_float_image() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut base = common::flags(&[common::LIGHT_CRYSTAL, SMALL]);
    base.extend(["-seed", "11", "-phi", "2", "-osc", "0.5", "-floatfile", "f.bin"]);
    for noise in [false, true] {
        let mut args = base.clone();
        match noise {
            true => args.extend(["-noisefile", "n.img", "-cbf_noisefile", "c.cbf"]),
            false => args.extend(["-nonoise", "-cbffile", "c.cbf"]),
        }
        args.extend(["-nexusfile", "x.nxs"]);
        run(dir.path(), &args);
        let (counts, photons, v) = counts_and_photons(&dir.path().join("x.nxs"));
        let cbf = read_cbf(&dir.path().join("c.cbf")).unwrap();
        let want: Vec<i64> = cbf.data.iter().map(|&c| c as i64).collect();
        assert_eq!(counts, want, "noise {noise}: NeXus counts against the CBF's");
        assert!(want.iter().any(|&c| c > 40), "noise {noise}: an image with spots");
        let float = read_float_image(&dir.path().join("f.bin"), Some(12 * 9)).unwrap();
        assert_eq!(photons, float, "noise {noise}: the float image");
        assert_eq!(v["shape"], serde_json::json!([1, 9, 12]));
        assert_eq!(v["dtype"], "int32");
        assert_eq!(v["wavelength_A"][0].as_f64().unwrap(), 6.2);
        assert_eq!(v["phi"][0].as_f64().unwrap(), 2.0);
    }
}

/// The flags of a noiseless shot run writing CBF images and a NeXus stack, `extra` appended.
fn shot_run_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = common::flags(&[common::LIGHT_CRYSTAL, SMALL]);
    args.extend(["-nonoise", "-cbffile", "x.cbf", "-nexusfile", "x.nxs"]);
    args.extend(extra);
    args
}

/// The manifest lines of `dir`.
fn manifest(dir: &Path) -> Vec<Value> {
    common::json_lines(&dir.join("manifest.jsonl"))
}

#[test]
fn a_shot_run_writes_one_stack_the_manifest_indexes() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = shot_run_args(&["-shots_random", "4", "-seed", "3", "-prefix", "shot_"]);
    run(dir.path(), &args);
    let lines = manifest(dir.path());
    assert_eq!(lines.len(), 4);
    let v = read_nexus(&dir.path().join("shot_shots.nxs"), &["--dump"]);
    assert_eq!(v["shots"], 4);
    for line in &lines {
        assert_eq!(line["nexus"]["file"], "shot_shots.nxs");
        let k = line["nexus"]["index"].as_u64().unwrap() as usize;
        let shot = line["index"].as_u64().unwrap();
        let cbf = read_cbf(&dir.path().join(format!("shot_{shot:06}.cbf"))).unwrap();
        let want: Vec<i64> = cbf.data.iter().map(|&c| c as i64).collect();
        let got: Vec<i64> = v["counts"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        assert_eq!(got, want, "shot {shot} at stack index {k}");
    }
}

#[test]
fn a_killed_shot_run_leaves_every_listed_shot_readable() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = shot_run_args(&["-shots_random", "100000", "-seed", "5", "-shot_batch", "1"]);
    let mut child = Command::new(BIN)
        .current_dir(dir.path())
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // kill -9 once a few shots are listed
    let listed = |d: &Path| std::fs::read_to_string(d.join("manifest.jsonl")).map_or(0, |t| t.lines().count());
    let t0 = std::time::Instant::now();
    while listed(dir.path()) < 3 && t0.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let lines = manifest(dir.path());
    assert!(lines.len() >= 3, "{} shots listed before the kill", lines.len());
    // the default prefix, shot_
    assert_eq!(lines[0]["nexus"]["file"], "shot_shots.nxs");
    let v = read_nexus(&dir.path().join("shot_shots.nxs"), &[]);
    let shots = v["shots"].as_u64().unwrap() as usize;
    for line in &lines {
        let k = line["nexus"]["index"].as_u64().unwrap() as usize;
        assert!(k < shots, "manifest lists index {k}, the file holds {shots}");
        let shot = line["index"].as_u64().unwrap();
        let cbf = read_cbf(&dir.path().join(format!("shot_{shot:06}.cbf"))).unwrap();
        let want: i64 = cbf.data.iter().map(|&c| c as i64).sum();
        assert_eq!(v["sums"][k].as_i64().unwrap(), want, "shot {shot} at stack index {k}");
    }
}

/// A detector of several panels: one `NXdetector_module` per panel, `data_origin` `[k, 0, 0]`,
/// every pixel where the panel's render put it (positions walked from the file by
/// `fixtures/nxmx_read.py`), the photons the `-floatfile` holds, and one int scale.
#[test]
fn a_multi_panel_run_writes_one_module_per_panel() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let expt = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/panels/four_tilted.expt");
    let mut args: Vec<String> = common::flags(&[common::LIGHT_CRYSTAL, "-oversample 1 -nopgm"])
        .into_iter()
        .map(String::from)
        .collect();
    args.extend(["-detector_expt".into(), expt.display().to_string()]);
    let Ok(nanobragg::experiment::args::Parsed::Run(cfg, _)) = nanobragg::experiment::args::parse_args(&args) else {
        panic!("the flags parse");
    };
    let layout = cfg.detector.panels.clone().expect("a panel file");
    let panels = nanobragg::experiment::panels::custom::panel_configs(&cfg, &layout, "four_tilted.expt").unwrap();
    args.extend(["-nonoise", "-floatfile", "all.bin", "-nexusfile", "p.nxs"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(dir.path(), &args);

    let v = read_nexus(&dir.path().join("p.nxs"), &["--pixels", "all", "--dump"]);
    let modules = v["modules"].as_array().unwrap();
    assert_eq!(modules.len(), panels.len());
    assert_eq!(v["shape"], serde_json::json!([1, panels.len(), 24, 32]));
    let mut worst: f64 = 0.0;
    for (k, (module, pc)) in modules.iter().zip(&panels).enumerate() {
        assert_eq!(module["data_origin"], serde_json::json!([k, 0, 0]), "module {k}");
        assert_eq!(module["data_size"], serde_json::json!([1, 24, 32]), "module {k}");
        let d = nanobragg::Experiment::with_structure_factors(pc, None)
            .unwrap()
            .detector;
        let r = LabToNexus::from_beam(d.beam).unwrap();
        let positions = module["positions"].as_array().unwrap();
        assert_eq!(positions.len(), d.fpixels * d.spixels);
        for p in positions {
            let p: Vec<f64> = p.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            let lab = add(
                d.pix0,
                add(
                    scale(d.fdet, (p[0] + 0.5) * d.pixel_size),
                    scale(d.sdet, (p[1] + 0.5) * d.pixel_size),
                ),
            );
            let want = r.apply(lab);
            (0..3).for_each(|c| worst = worst.max((p[2 + c] - want[c]).abs()));
        }
    }
    assert!(
        worst < 1e-9,
        "module pixel positions differ from the render's by {worst:e} m"
    );

    let photons: Vec<f32> = v["photons"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(
        photons,
        common::read_f32(&dir.path().join("all.bin")),
        "photons against -floatfile"
    );
    // one int scale for the detector: C's 55000 counts at its brightest pixel, plus the ADC
    // offset (40 by default)
    let brightest = v["counts"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .max();
    assert!(
        brightest.is_some_and(|m| (55_039..=55_041).contains(&m)),
        "brightest count {brightest:?}"
    );
}

/// Panels of different sizes cannot share the stacks: refused before rendering, naming the flag.
#[test]
fn a_multi_panel_nexus_file_needs_panels_of_one_size() {
    let dir = tempfile::tempdir().unwrap();
    let geom = "clen = 0.1\nres = 1e4\n\
                p0/min_fs = 0\np0/max_fs = 7\np0/min_ss = 0\np0/max_ss = 7\np0/fs = +1x\np0/ss = +1y\np0/corner_x = -4\np0/corner_y = -4\n\
                p1/min_fs = 0\np1/max_fs = 3\np1/min_ss = 8\np1/max_ss = 11\np1/fs = +1x\np1/ss = +1y\np1/corner_x = 10\np1/corner_y = -4\n";
    std::fs::write(dir.path().join("two.geom"), geom).unwrap();
    let mut args = common::flags(&[common::LIGHT_CRYSTAL]);
    args.extend(["-geom", "two.geom", "-nexusfile", "p.nxs"]);
    let out = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(&args)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("-nexusfile"), "{err}");
    assert!(!dir.path().join("p.nxs").exists());
}

/// A shot run over a detector of panels stacks `[shots, panels, slow, fast]`, one module per
/// panel, each shot's photons its float image.
#[test]
fn a_shot_run_over_panels_stacks_shots_and_panels() {
    if !have_h5py() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let expt = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/panels/four_tilted.expt");
    let mut args = common::flags(&[common::LIGHT_CRYSTAL, "-oversample 1 -nonoise -nopgm"]);
    args.extend(["-detector_expt", expt.to_str().unwrap(), "-nexusfile", "x.nxs"]);
    args.extend(["-shots_random", "3", "-seed", "3", "-prefix", "shot_"]);
    run(dir.path(), &args);
    let v = read_nexus(&dir.path().join("shot_shots.nxs"), &["--dump"]);
    assert_eq!(v["shape"], serde_json::json!([3, 4, 24, 32]));
    assert_eq!(v["modules"].as_array().unwrap().len(), 4);
    for line in manifest(dir.path()) {
        let k = line["nexus"]["index"].as_u64().unwrap() as usize;
        let shot = line["index"].as_u64().unwrap();
        let want = common::read_f32(&dir.path().join(format!("shot_{shot:06}.bin")));
        let got: Vec<f32> = v["photons"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(got, want, "shot {shot} at stack index {k}");
    }
}

/// a + b.
fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// v·k.
fn scale(v: [f64; 3], k: f64) -> [f64; 3] {
    v.map(|x| x * k)
}
