//! The miniCBF outputs through the binary: `-cbffile` holds the `-intfile` counts and
//! `-cbf_noisefile` the `-noisefile` counts (the same draw) as signed 32-bit integers, without
//! the clip at 65535; the Pilatus header carries the flags' geometry; fabio, when installed,
//! reads the same pixels and header values (`fixtures/fabio_read.py`); shot runs write them
//! per shot; a missing directory is exit 9 naming the file, with nothing written.
//!
//! fabio checks skip with "SKIP: fabio not installed" unless `NANOBRAGG_REQUIRE_FABIO=1`.

use crate::common;

use nanobragg::io::cbf::{read_cbf, write_cbf, CbfHeader, CbfImage};
use nanobragg::io::smv::read_smv_u16;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_nanobragg");

/// Fast and slow pixel counts of the rendered images (unequal, so a transposed image shows).
const FAST: usize = 40;
const SLOW: usize = 32;

/// The geometry every run here shares; [`expected_header`] is what the CBF header must say
/// about it.
const GEOMETRY: &str = "-detpixels_f 40 -detpixels_s 32 -pixel 0.4 -distance 50 -Xbeam 5.3 -Ybeam 7.7 \
                        -phi 3 -osc 0.5 -phisteps 2 -detector_thick 320 -detector_abs 300 -thicksteps 2 \
                        -exposure 0.5 -oversample 1 -nopgm -adc 40";

/// The noise seed of every run here.
const SEED: &str = "7";

/// The base flags: the light crystal on [`GEOMETRY`].
fn base() -> Vec<String> {
    common::flags(&[common::LIGHT_CRYSTAL, GEOMETRY])
        .into_iter()
        .map(String::from)
        .collect()
}

/// The header values the flags of [`GEOMETRY`] give (SI and Pilatus units). Beam_xy in the
/// MOSFLM convention: fast = (Ybeam + ½ pixel) / pixel, slow = (Xbeam + ½ pixel) / pixel.
fn expected_header() -> CbfHeader {
    CbfHeader {
        pixel_size_x_m: 4e-4,
        pixel_size_y_m: 4e-4,
        thickness_m: 320e-6,
        exposure_time_s: 0.5,
        count_cutoff: i32::MAX,
        wavelength_a: 6.2,
        distance_m: 0.05,
        beam_x_px: (7.7 + 0.2) / 0.4,
        beam_y_px: (5.3 + 0.2) / 0.4,
        start_angle_deg: 3.0,
        angle_increment_deg: 0.5,
        ..CbfHeader::default()
    }
}

fn run_in(dir: &Path, args: &[String]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("nanobragg runs")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `base()` followed by `extra`.
fn args_with(extra: &[&str]) -> Vec<String> {
    let mut a = base();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// C's int-image count before its 16-bit clip: floorf(max(value·scale + adc, 0) + 0.5), the
/// rounding in single precision.
fn c_count(value: f32, scale: f64, adc: f64) -> i64 {
    let v = (value as f64 * scale + adc).max(0.0);
    ((v + 0.5) as f32).floor() as i64
}

/// The numbers in `text` after `key` on its line, e.g. `("Fbeam=", "  Fbeam=0.00215 Sbeam=…")`.
fn printed(stdout: &str, key: &str) -> f64 {
    let rest = stdout
        .lines()
        .find_map(|l| l.split_once(key).map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no {key} in\n{stdout}"));
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// Checks a header read back against [`expected_header`], to the precision each field is
/// written with.
fn assert_header(h: &CbfHeader) {
    let want = expected_header();
    let fields = [
        ("pixel_size_x_m", h.pixel_size_x_m, want.pixel_size_x_m, 1e-12),
        ("pixel_size_y_m", h.pixel_size_y_m, want.pixel_size_y_m, 1e-12),
        ("thickness_m", h.thickness_m, want.thickness_m, 1e-12),
        ("exposure_time_s", h.exposure_time_s, want.exposure_time_s, 1e-9),
        ("wavelength_a", h.wavelength_a, want.wavelength_a, 1e-9),
        ("distance_m", h.distance_m, want.distance_m, 1e-9),
        ("beam_x_px", h.beam_x_px, want.beam_x_px, 1e-9),
        ("beam_y_px", h.beam_y_px, want.beam_y_px, 1e-9),
        ("start_angle_deg", h.start_angle_deg, want.start_angle_deg, 1e-9),
        (
            "angle_increment_deg",
            h.angle_increment_deg,
            want.angle_increment_deg,
            1e-9,
        ),
    ];
    for (name, got, want, tol) in fields {
        assert!(close(got, want, tol), "{name}: header {got}, flags {want}");
    }
    assert_eq!(h.count_cutoff, want.count_cutoff);
    assert_eq!(h.header_convention, "PILATUS_1.2");
}

/// The outputs of one run: float image, SMV int and noise images, CBF int and noise images.
struct Run {
    stdout: String,
    float: Vec<f32>,
    int_smv: Vec<u16>,
    noise_smv: Vec<u16>,
    int_cbf: CbfImage,
    noise_cbf: CbfImage,
}

/// Runs the binary in `dir` with every image output and `extra` flags.
fn run_all(dir: &Path, extra: &[&str]) -> Run {
    let mut flags = vec![
        "-floatfile",
        "float.bin",
        "-intfile",
        "int.img",
        "-noisefile",
        "noise.img",
        "-cbffile",
        "int.cbf",
        "-cbf_noisefile",
        "noise.cbf",
        "-seed",
        SEED,
    ];
    flags.extend_from_slice(extra);
    let stdout = ok(&run_in(dir, &args_with(&flags)));
    for line in [
        "writing int.cbf as 4-byte integers (miniCBF)",
        "writing noise.cbf as 4-byte integers (miniCBF)",
    ] {
        assert!(stdout.contains(line), "no {line:?} in\n{stdout}");
    }
    let run = Run {
        float: common::read_f32(&dir.join("float.bin")),
        int_smv: read_smv_u16(&dir.join("int.img")).unwrap().1,
        noise_smv: read_smv_u16(&dir.join("noise.img")).unwrap().1,
        int_cbf: read_cbf(&dir.join("int.cbf")).unwrap(),
        noise_cbf: read_cbf(&dir.join("noise.cbf")).unwrap(),
        stdout,
    };
    for (name, n) in [
        ("float", run.float.len()),
        ("int", run.int_smv.len()),
        ("noise", run.noise_smv.len()),
        ("int.cbf", run.int_cbf.data.len()),
        ("noise.cbf", run.noise_cbf.data.len()),
    ] {
        assert_eq!(n, FAST * SLOW, "{name}");
    }
    for cbf in [&run.int_cbf, &run.noise_cbf] {
        assert_eq!((cbf.fast, cbf.slow), (FAST, SLOW));
    }
    run
}

/// Where the SMV is below 65535 the CBF holds the same count; where the SMV is clipped the CBF
/// holds 65535 or more. Returns how many pixels were clipped.
fn assert_cbf_is_unclipped_smv(cbf: &[i32], smv: &[u16], what: &str) -> usize {
    let mut clipped = 0;
    for (i, (&c, &s)) in cbf.iter().zip(smv).enumerate() {
        if s < u16::MAX {
            assert_eq!(c, s as i32, "{what}: pixel {i}: CBF {c}, SMV {s}");
        } else {
            assert!(c >= u16::MAX as i32, "{what}: pixel {i}: CBF {c} under the SMV's clip");
            clipped += 1;
        }
    }
    clipped
}

/// Checks the int CBF against the float image at `scale`: every pixel is C's rounding of
/// value·scale + adc. Returns the largest count.
fn assert_int_cbf_follows_the_float_image(run: &Run, scale: f64) -> i64 {
    let mut max = 0;
    for (i, (&c, &x)) in run.int_cbf.data.iter().zip(&run.float).enumerate() {
        let want = c_count(x, scale, 40.0);
        assert_eq!(c as i64, want, "pixel {i}: float {x}, scale {scale}");
        max = max.max(want);
    }
    max
}

#[test]
fn cbf_images_hold_the_smv_counts_unclipped() {
    let tmp = tempfile::tempdir().unwrap();
    // an exact scale, so the counts can be recomputed from the float image
    let run = run_all(tmp.path(), &["-scale", "2.5"]);
    assert!(run.stdout.contains("intfile_scale = 2.5"), "{}", run.stdout);
    let max = assert_int_cbf_follows_the_float_image(&run, 2.5);
    assert!(max > 40, "the image has spots: max count {max}");
    assert_cbf_is_unclipped_smv(&run.int_cbf.data, &run.int_smv, "int");
    assert_cbf_is_unclipped_smv(&run.noise_cbf.data, &run.noise_smv, "noise");
    assert_ne!(run.noise_cbf.data, run.int_cbf.data, "the noise image has noise");
    for img in [&run.int_cbf, &run.noise_cbf] {
        assert_header(&img.header().unwrap());
    }
    // the header's beam centre is the one the run printed (Fbeam, Sbeam in m)
    let h = run.int_cbf.header().unwrap();
    assert!(close(h.beam_x_px, printed(&run.stdout, "Fbeam=") / 4e-4, 1e-5));
    assert!(close(h.beam_y_px, printed(&run.stdout, "Sbeam=") / 4e-4, 1e-5));

    // the noise is the same draw as -noisefile's alone, same seed
    let alone = tmp.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    ok(&run_in(
        &alone,
        &args_with(&["-scale", "2.5", "-noisefile", "noise.img", "-seed", SEED]),
    ));
    let smv_alone = read_smv_u16(&alone.join("noise.img")).unwrap().1;
    assert_eq!(smv_alone, run.noise_smv, "-cbf_noisefile changed the noise draw");
    // and a CBF noise image alone is the same as beside the SMV one
    ok(&run_in(
        &alone,
        &args_with(&["-scale", "2.5", "-nonoise", "-cbf_noisefile", "n.cbf", "-seed", SEED]),
    ));
    assert_eq!(read_cbf(&alone.join("n.cbf")).unwrap().data, run.noise_cbf.data);
}

#[test]
fn cbf_keeps_what_the_smv_clips() {
    let tmp = tempfile::tempdir().unwrap();
    let first = run_all(tmp.path(), &[]);
    let peak = first.float.iter().fold(0.0f32, |m, &x| m.max(x));
    assert!(peak > 0.0, "a blank image");
    // a scale that takes the peak to ~500000 counts, well past 65535
    let scale = format!("{:.6e}", 5e5 / peak as f64);
    let big = tmp.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let run = run_all(&big, &["-scale", &scale]);
    let scale: f64 = scale.parse().unwrap();
    let max = assert_int_cbf_follows_the_float_image(&run, scale);
    assert!(max > 400_000, "max count {max}");
    let clipped = assert_cbf_is_unclipped_smv(&run.int_cbf.data, &run.int_smv, "int");
    assert!(clipped > 0, "nothing was clipped in the SMV");
    assert!(run.int_cbf.data.iter().any(|&c| c > 65_535));

    // noise past 65535: a fluence that takes the peak to ~300000 photons
    let fluence = format!(
        "{:.6e}",
        nanobragg::SimConfig::default().beam.fluence * 3e5 / peak as f64
    );
    let bright = tmp.path().join("bright");
    std::fs::create_dir(&bright).unwrap();
    let run = run_all(&bright, &["-fluence", &fluence]);
    let clipped = assert_cbf_is_unclipped_smv(&run.noise_cbf.data, &run.noise_smv, "noise");
    assert!(clipped > 0, "no noise pixel over 65535");
    assert!(run.noise_cbf.data.iter().any(|&c| c > 100_000));
    // C's overloads are the counts above 65535 (deviates and adc are whole numbers here), all
    // of them kept by the CBF
    let over = run.noise_cbf.data.iter().filter(|&&c| c > 65_535).count();
    assert!(
        run.stdout.contains(&format!("({over} overloads)")),
        "{over} overloads expected in\n{}",
        run.stdout
    );
}

#[test]
fn cbf_into_a_missing_directory_is_an_error_naming_the_file() {
    for flag in ["-cbffile", "-cbf_noisefile"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = run_in(
            tmp.path(),
            &args_with(&["-floatfile", "float.bin", flag, "no_such_dir/image.cbf"]),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{flag}: {err}");
        assert!(err.contains("no_such_dir/image.cbf"), "{flag}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "{flag} left files: {left:?}");
    }
}

#[test]
fn shots_write_cbf_images_per_shot() {
    let tmp = tempfile::tempdir().unwrap();
    let shots = tmp.path().join("shots");
    std::fs::create_dir(&shots).unwrap();
    ok(&run_in(
        &shots,
        &args_with(&[
            "-shots_random",
            "2",
            "-prefix",
            "s_",
            "-seed",
            "5",
            "-cbffile",
            "x.cbf",
            "-cbf_noisefile",
            "y.cbf",
        ]),
    ));
    let manifest = common::json_lines(&shots.join("manifest.jsonl"));
    assert_eq!(manifest.len(), 2);
    for line in &manifest {
        let index = line["index"].as_u64().unwrap();
        let kinds: Vec<&str> = line["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        assert!(kinds.contains(&"cbf") && kinds.contains(&"cbf_noise"), "{kinds:?}");
        let stem = shots.join(format!("s_{index:06}"));
        let path = |suffix: &str| PathBuf::from(format!("{}{suffix}", stem.display()));
        let int_cbf = read_cbf(&path(".cbf")).unwrap();
        let noise_cbf = read_cbf(&path("_noise.cbf")).unwrap();
        assert_cbf_is_unclipped_smv(&int_cbf.data, &read_smv_u16(&path(".img")).unwrap().1, "int");
        assert_cbf_is_unclipped_smv(&noise_cbf.data, &read_smv_u16(&path("_noise.img")).unwrap().1, "noise");
        assert_header(&int_cbf.header().unwrap());
    }
    // a shot's CBF files are those of a classic run of the base flags and the shot's args
    let line = &manifest[0];
    let classic = tmp.path().join("classic");
    std::fs::create_dir(&classic).unwrap();
    let mut args = args_with(&["-seed", "5"]);
    args.extend(
        line["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    args.extend(["-cbffile", "c.cbf", "-cbf_noisefile", "n.cbf"].map(String::from));
    ok(&run_in(&classic, &args));
    let stem = format!("s_{:06}", line["index"].as_u64().unwrap());
    for (shot, mine) in [(format!("{stem}.cbf"), "c.cbf"), (format!("{stem}_noise.cbf"), "n.cbf")] {
        assert_eq!(
            std::fs::read(shots.join(&shot)).unwrap(),
            std::fs::read(classic.join(mine)).unwrap(),
            "{shot}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// fabio
// ---------------------------------------------------------------------------------------------

/// Whether fabio can be imported. When it cannot, the caller skips with a message, unless
/// `NANOBRAGG_REQUIRE_FABIO=1` (CI) makes that a failure.
fn fabio_available() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import fabio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let required = std::env::var("NANOBRAGG_REQUIRE_FABIO").is_ok_and(|v| v == "1");
        assert!(!required, "NANOBRAGG_REQUIRE_FABIO=1 but python3 cannot import fabio");
        eprintln!("SKIP: fabio not installed");
    }
    found
}

/// What `fixtures/fabio_read.py` reports for each of `files`.
fn fabio_read(files: &[&Path]) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fabio_read.py");
    let out = Command::new("python3").arg(script).args(files).output().unwrap();
    assert!(
        out.status.success(),
        "fabio_read.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).expect("fabio_read.py prints JSON");
    parsed.as_array().expect("a list").clone()
}

/// fabio's pixels, as i64.
fn fabio_pixels(v: &Value) -> Vec<i64> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// fabio opened a CBF as we wrote it: int32 (slow, fast), nothing logged, its encoder's bytes.
fn assert_fabio_cbf(v: &Value, fast: usize, slow: usize, data: &[i32]) {
    let path = &v["path"];
    assert_eq!(v["class"], "CbfImage", "{path}");
    assert_eq!(v["dtype"], "int32", "{path}");
    assert_eq!(v["shape"], serde_json::json!([slow, fast]), "{path}");
    assert_eq!(v["messages"], serde_json::json!([]), "{path}");
    assert_eq!(v["same_bytes_as_fabio_encoder"], true, "{path}");
    assert_eq!(v["header_convention"], "PILATUS_1.2", "{path}");
    let want: Vec<i64> = data.iter().map(|&x| x as i64).collect();
    assert_eq!(fabio_pixels(v), want, "{path}: fabio's pixels");
}

#[test]
fn fabio_reads_the_pixels_and_header() {
    if !fabio_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = run_all(tmp.path(), &["-scale", "2.5"]);
    let dir = tmp.path();
    let files = [
        dir.join("int.cbf"),
        dir.join("noise.cbf"),
        dir.join("int.img"),
        dir.join("noise.img"),
    ];
    let read = fabio_read(&files.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    assert_fabio_cbf(&read[0], FAST, SLOW, &run.int_cbf.data);
    assert_fabio_cbf(&read[1], FAST, SLOW, &run.noise_cbf.data);
    for (v, smv) in [(&read[2], &run.int_smv), (&read[3], &run.noise_smv)] {
        assert_eq!(v["shape"], serde_json::json!([SLOW, FAST]), "{}", v["path"]);
        let want: Vec<i64> = smv.iter().map(|&x| x as i64).collect();
        assert_eq!(fabio_pixels(v), want, "{}: fabio's SMV pixels", v["path"]);
        assert!(close(number_text(&v["header"]["WAVELENGTH"]), 6.2, 1e-9));
    }
    // the header fields, as fabio parses them, are the flags
    let want = expected_header();
    for v in &read[..2] {
        let p = &v["pilatus"];
        let pairs = [
            ("Pixel_size[0]", number(&p["Pixel_size"][0]), want.pixel_size_x_m),
            ("Pixel_size[1]", number(&p["Pixel_size"][1]), want.pixel_size_y_m),
            ("Wavelength", number(&p["Wavelength"]), want.wavelength_a),
            ("Detector_distance", number(&p["Detector_distance"]), want.distance_m),
            ("Beam_xy[0]", number(&p["Beam_xy"][0]), want.beam_x_px),
            ("Beam_xy[1]", number(&p["Beam_xy"][1]), want.beam_y_px),
            ("Start_angle", number(&p["Start_angle"]), want.start_angle_deg),
            (
                "Angle_increment",
                number(&p["Angle_increment"]),
                want.angle_increment_deg,
            ),
            ("Exposure_time", number(&p["Exposure_time"]), want.exposure_time_s),
            ("Exposure_period", number(&p["Exposure_period"]), want.exposure_time_s),
            ("thickness", number(&p["sensor"][1]), want.thickness_m),
        ];
        for (name, got, flag) in pairs {
            assert!(
                close(got, flag, 1e-9),
                "{}: fabio's {name} {got}, flags {flag}",
                v["path"]
            );
        }
        assert_eq!(p["sensor"][0], "Silicon");
        assert_eq!(p["Count_cutoff"].as_i64(), Some(i32::MAX as i64));
        assert_eq!(v["mime"]["X-Binary-Size-Fastest-Dimension"], FAST.to_string());
        assert_eq!(v["mime"]["X-Binary-Size-Second-Dimension"], SLOW.to_string());
    }
}

/// A JSON string holding a number (fabio's SMV header values are text).
fn number_text(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Extreme int32 pixels: every byte-offset width boundary both ways (±127/128, ±32767/32768,
/// steps past 2¹⁵), ±(2³¹−1) and i32::MIN next to each other (steps that wrap modulo 2³²), then
/// random values over the whole range. No two neighbours are exactly 2³¹ apart: fabio's int32
/// decoder, which `fabio.open()` uses, misreads the 64-bit escape such a step needs (see
/// `src/io/cbf/byte_offset.rs`).
fn extreme_image(n: usize) -> Vec<i32> {
    const MAX: i32 = i32::MAX;
    const MIN: i32 = i32::MIN;
    const MIN1: i32 = i32::MIN + 1;
    let mut data = vec![
        0,
        0,
        1,
        -1,
        127,
        0,
        -127,
        0,
        128,
        0,
        -128,
        0,
        129,
        -129,
        32767,
        0,
        -32767,
        0,
        32768,
        0,
        -32768,
        0,
        32769,
        -32769,
        70_000,
        -70_000,
        40_000,
        -40_000,
        0,
        MAX,
        0,
        MIN1,
        0,
        -1,
        MAX - 1,
        -1,
        MIN,
        MIN,
        -1,
        0,
        1 << 30,
        -(1 << 30) + 1,
        0,
        MAX,
        MAX,
        0,
        MIN1,
        MAX,
        MIN1,
        MAX,
        MIN,
        MAX,
        MIN,
        MIN1,
        -2,
        MAX,
        -2,
        -(1 << 30),
        (1 << 30) + 40_000,
        -(1 << 30),
        40_000,
        0,
    ];
    let randoms = common::uniform(n - data.len(), -2_147_483_647.0, 2_147_483_647.0, 2024);
    data.extend(randoms.into_iter().map(|x| x as i32));
    // break any exact 2^31 step the random values made
    for i in 1..data.len() {
        if data[i].wrapping_sub(data[i - 1]) == MIN {
            data[i] = data[i].wrapping_add(1);
        }
    }
    data
}

#[test]
fn fabio_decodes_extreme_pixels_exactly() {
    if !fabio_available() {
        return;
    }
    let (fast, slow) = (61, 47);
    let data = extreme_image(fast * slow);
    assert!(data.windows(2).all(|w| w[1].wrapping_sub(w[0]) != i32::MIN));
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("extremes.cbf");
    write_cbf(&path, &expected_header(), &data, fast, slow).unwrap();
    assert_eq!(read_cbf(&path).unwrap().data, data);
    let read = fabio_read(&[&path]);
    assert_fabio_cbf(&read[0], fast, slow, &data);
}
