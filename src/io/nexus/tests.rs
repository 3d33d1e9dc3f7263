//! File-level tests: h5py reads what we write (fixtures/nxmx_read.py).
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::chain::tests::{cases, render_centre};
use super::frame::LabToNexus;
use super::*;

fn reader_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nxmx_read.py")
}

/// Whether python3 + h5py are usable; panics if required by NANOBRAGG_REQUIRE_H5PY=1.
fn have_h5py() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import h5py, numpy"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var("NANOBRAGG_REQUIRE_H5PY").as_deref() != Ok("1"),
            "h5py required but missing"
        );
        eprintln!("SKIP: python3 with h5py/numpy not available");
    }
    ok
}

/// Run the reader on `path` with extra args and parse its JSON.
fn read(path: &Path, args: &[&str]) -> Value {
    let out = Command::new("python3")
        .arg(reader_script())
        .arg(path)
        .args(args)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "reader failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("reader JSON")
}

/// One shot of a `--dump`ed stack (a JSON array), each value converted by `f`.
fn dumped<T>(shot: &Value, f: impl Fn(&Value) -> T) -> Vec<T> {
    shot.as_array().unwrap().iter().map(f).collect()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nx-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn beam(dir: Vec3) -> NxBeam {
    NxBeam {
        direction: dir,
        wavelengths_m: vec![1.3e-10],
        weights: vec![1.0],
        polarization: [0.0, 1.0, 0.0],
        flux: Some(1e12),
    }
}

fn gonio(spindle: Vec3) -> NxGoniometer {
    NxGoniometer {
        spindle,
        phi_start_deg: 10.0,
        osc_deg: 0.25,
        exposure_s: 0.1,
    }
}

/// A deterministic test image for shot k.
fn image(n: usize, k: usize) -> (Vec<i32>, Vec<f32>) {
    let counts = (0..n).map(|p| (p * 7 + k * 13) as i32 % 1000).collect();
    let photons = (0..n).map(|p| (p as f32 + 0.1) * (k as f32 + 1.0) / 3.0).collect();
    (counts, photons)
}

#[test]
fn h5py_positions_match_render() {
    if !have_h5py() {
        return;
    }
    let dir = tmpdir("pos");
    for (name, d, b) in cases() {
        let path = dir.join(format!("{name}.nxs"));
        let mut w = NxmxWriter::create_atomic(&path, &d, &beam(b), &gonio([0.0, 1.0, 0.0])).unwrap();
        let (c, p) = image(d.fpixels * d.spixels, 0);
        w.append_shot(&c, &p, 10.0).unwrap();
        w.finish().unwrap();
        let v = read(&path, &["--pixels", "all", "--plain"]);
        let r = LabToNexus::from_beam(b).unwrap();
        let pos = v["positions"].as_array().unwrap();
        assert_eq!(pos.len(), d.fpixels * d.spixels, "{name}");
        for row in pos {
            let (i, j) = (row[0].as_u64().unwrap() as usize, row[1].as_u64().unwrap() as usize);
            let want = r.apply(render_centre(&d, i, j));
            for k in 0..3 {
                let got = row[2 + k].as_f64().unwrap();
                assert!(
                    (got - want[k]).abs() < 1e-9,
                    "{name} pixel ({i},{j}) axis {k}: {got} vs {}",
                    want[k]
                );
            }
        }
        assert!((v["wavelength_A"][0].as_f64().unwrap() - 1.3).abs() < 1e-12);
    }
}

#[test]
fn h5py_reads_pixel_values_exactly() {
    if !have_h5py() {
        return;
    }
    let (_, d, b) = cases().remove(0);
    let n = d.fpixels * d.spixels;
    let path = tmpdir("values").join("values.nxs");
    let mut w = NxmxWriter::create(&path, &d, &beam(b), &gonio([0.0, 0.0, 1.0])).unwrap();
    let mut shots = vec![];
    for k in 0..3 {
        let (mut c, mut p) = image(n, k);
        c[0] = i32::MAX;
        c[1] = -i32::MAX;
        c[2] = i32::MIN;
        p[0] = f32::MAX;
        p[1] = f32::MIN_POSITIVE;
        p[2] = 1.0e-45; // subnormal
        p[3] = -0.0;
        w.append_shot(&c, &p, 10.0 + 0.25 * k as f64).unwrap();
        shots.push((c, p));
    }
    w.finish().unwrap();
    let v = read(&path, &["--dump", "--plain"]);
    assert_eq!(v["shots"], 3);
    assert_eq!(v["dtype"], "int32");
    assert_eq!(v["phi"], serde_json::json!([10.0, 10.25, 10.5]));
    for (k, (c, p)) in shots.iter().enumerate() {
        let got_c = dumped(&v["counts"][k], |x| x.as_i64().unwrap());
        assert_eq!(got_c, c.iter().map(|&x| x as i64).collect::<Vec<_>>(), "shot {k}");
        let got_p = dumped(&v["photons"][k], |x| x.as_f64().unwrap() as f32);
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got_p), bits(p), "shot {k}");
    }
}

/// A shot written band by band (chunks of two rows, the last of each module padded), from
/// pixels that arrive one at a time, reads back exactly, module by module and shot by shot.
#[test]
fn h5py_reads_banded_module_stacks_exactly() {
    if !have_h5py() {
        return;
    }
    let (_, mut d, b) = cases().remove(0);
    (d.fpixels, d.spixels) = (5, 7);
    let modules = vec![d.clone(), d.clone(), d];
    let n = 3 * 5 * 7;
    let path = tmpdir("banded").join("banded.nxs");
    let mut w = NxmxWriter::create_tiled(&path, &modules, &beam(b), &gonio([0.0, 0.0, 1.0]), 11).unwrap();
    let shots: Vec<_> = (0..2).map(|k| image(n, k)).collect();
    for (c, p) in &shots {
        w.append_shot_from(c.iter().copied(), p.iter().copied(), 0.0).unwrap();
    }
    let too_short = w.append_shot_from(0..n as i32 - 1, std::iter::repeat_n(0.0, n), 0.0);
    assert!(too_short.is_err(), "a shot one pixel short is refused");
    w.finish().unwrap();
    let v = read(&path, &["--dump", "--plain"]);
    assert_eq!(v["shape"], serde_json::json!([2, 3, 7, 5]));
    for (k, (c, p)) in shots.iter().enumerate() {
        assert_eq!(&dumped(&v["counts"][k], |x| x.as_i64().unwrap() as i32), c, "shot {k}");
        assert_eq!(&dumped(&v["photons"][k], |x| x.as_f64().unwrap() as f32), p, "shot {k}");
    }
}

#[test]
fn atomic_writer_renames_only_at_finish() {
    let (_, d, b) = cases().remove(1);
    let path = tmpdir("atomic").join("one.nxs");
    let _ = std::fs::remove_file(&path);
    let mut w = NxmxWriter::create_atomic(&path, &d, &beam(b), &gonio([0.0, 1.0, 0.0])).unwrap();
    let (c, p) = image(d.fpixels * d.spixels, 0);
    w.append_shot(&c, &p, 0.0).unwrap();
    assert!(!path.exists() && w.path().exists());
    w.finish().unwrap();
    assert!(path.exists());
}

#[test]
fn wrong_shot_size_is_an_error_naming_the_file() {
    let (_, d, b) = cases().remove(1);
    let path = tmpdir("size").join("bad.nxs");
    let mut w = NxmxWriter::create(&path, &d, &beam(b), &gonio([0.0, 1.0, 0.0])).unwrap();
    let e = w.append_shot(&[1, 2], &[1.0, 2.0], 0.0).unwrap_err();
    assert!(e.to_string().contains("bad.nxs"), "{e}");
}

#[test]
fn unwritable_path_is_an_error_not_a_panic() {
    let (_, d, b) = cases().remove(1);
    let e = NxmxWriter::create(
        Path::new("/nonexistent-dir/x.nxs"),
        &d,
        &beam(b),
        &gonio([0.0, 1.0, 0.0]),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("/nonexistent-dir/x.nxs"), "{e}");
}

/// Child half of the crash test: appends shots forever, printing "SHOT k".
#[test]
fn crash_child() {
    let Ok(path) = std::env::var("NX_CRASH_CHILD") else {
        return;
    };
    let (_, mut d, b) = cases().remove(4);
    d.fpixels = 64;
    d.spixels = 48;
    let mut w = NxmxWriter::create(Path::new(&path), &d, &beam(b), &gonio([0.0, 1.0, 0.0])).unwrap();
    for k in 0.. {
        let (c, p) = image(d.fpixels * d.spixels, k);
        let idx = w.append_shot(&c, &p, k as f64 * 0.25).unwrap();
        println!("SHOT {idx}");
    }
}

/// Spawn the child, SIGKILL it after `after` shots, return the last index printed.
fn run_and_kill(path: &Path, after: usize) -> usize {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "io::nexus::tests::crash_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("NX_CRASH_CHILD", path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut last = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        if let Some(k) = line.unwrap().strip_prefix("SHOT ") {
            last = Some(k.trim().parse::<usize>().unwrap());
            if last.unwrap() + 1 >= after {
                child.kill().unwrap(); // SIGKILL on unix
                break;
            }
        }
    }
    child.wait().unwrap();
    last.expect("child printed no shot")
}

#[test]
fn sigkill_leaves_every_appended_shot_readable() {
    if !have_h5py() {
        return;
    }
    let iters: usize = std::env::var("NX_CRASH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = tmpdir("crash");
    for it in 0..iters {
        let path = dir.join(format!("crash{it}.nxs"));
        let last = run_and_kill(&path, 3 + it % 5);
        let v = read(&path, &[]);
        let shots = v["shots"].as_u64().unwrap() as usize;
        assert!(shots > last, "iteration {it}: printed {last}, file has {shots}");
        let n = 64 * 48;
        for k in 0..=last {
            let want: i64 = image(n, k).0.iter().map(|&x| x as i64).sum();
            assert_eq!(v["sums"][k].as_i64().unwrap(), want, "iteration {it} shot {k}");
        }
        recover::clear_swmr_flags(&path).unwrap();
        let plain = read(&path, &["--plain"]);
        assert_eq!(plain["open_mode"], "plain");
        assert_eq!(plain["sums"], v["sums"], "iteration {it}");
        eprintln!(
            "crash iteration {it}: killed after shot {last}; file has {shots} shots ({})",
            v["open_mode"]
        );
    }
}
