//! The `noisify` program against C's: the golden cases of `fixtures/golden/noisify` (written by
//! the C suite's `noisify`, see its `make_noisify.py`) must come out byte for byte, noise
//! included, except where docs/differences.md says C is wrong; bad input exits 9 naming the
//! flag or file.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_noisify");

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/golden/noisify")
}

/// One case of `cases.json`.
struct Case {
    name: String,
    args: Vec<String>,
    edge_wrap: bool,
    bits: u32,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(golden().join("cases.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().unwrap().to_string(),
            args: c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect(),
            edge_wrap: c["edge_wrap"].as_bool().unwrap_or(false),
            bits: c["bits"].as_u64().unwrap_or(16) as u32,
        })
        .collect()
}

/// Runs our `noisify` on `args` in a fresh directory holding the golden inputs.
fn run_ours(args: &[String]) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    for entry in std::fs::read_dir(golden().join("inputs")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), inputs.join(entry.file_name())).unwrap();
    }
    let out = Command::new(BIN)
        .args(args)
        .args([
            "-intfile",
            "int.img",
            "-noisefile",
            "noise.img",
            "-pgmfile",
            "image.pgm",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    (dir, out)
}

/// Pixels of an SMV file C's noisify wrote (512-byte header).
fn pixels(bytes: &[u8], bits: u32) -> Vec<u32> {
    let data = &bytes[512..];
    match bits {
        16 => data
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32)
            .collect(),
        _ => data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    }
}

/// Ours against C's pixel by pixel: equal, except column 0 of an `edge_wrap` case (C's PSF
/// wraps photons from beyond the right edge there, so C's may only be larger), and C's 32-bit
/// noiseless image saturating at 65535.
fn compare_pixels(case: &Case, file: &str, ours: &[u32], c: &[u32], width: usize, noiseless: bool) {
    assert_eq!(ours.len(), c.len(), "{}: {file} size", case.name);
    for (i, (&o, &w)) in ours.iter().zip(c).enumerate() {
        let o = if noiseless && case.bits == 32 { o.min(65535) } else { o };
        if case.edge_wrap && i % width == 0 {
            assert!(o <= w, "{}: {file} pixel {i}: ours {o} above C's {w}", case.name);
        } else {
            assert_eq!(
                o,
                w,
                "{}: {file} pixel {i} (fast {}, slow {})",
                case.name,
                i % width,
                i / width
            );
        }
    }
}

/// The width of a case's image, from C's header.
fn width_of(header: &[u8]) -> usize {
    let text = String::from_utf8_lossy(&header[..512]);
    let at = text.find("SIZE1=").unwrap() + 6;
    text[at..].split(';').next().unwrap().trim().parse().unwrap()
}

#[test]
fn golden_cases_match_c() {
    for case in cases() {
        let (dir, out) = run_ours(&case.args);
        assert!(
            out.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        for (file, suffix) in [("int.img", "int.img"), ("noise.img", "noise.img"), ("image.pgm", "pgm")] {
            let want = golden().join(format!("{}.{suffix}", case.name));
            let got = dir.path().join(file);
            assert_eq!(
                want.exists(),
                got.exists(),
                "{}: {file} written by one side only",
                case.name
            );
            if !want.exists() {
                continue;
            }
            let (want, got) = (std::fs::read(want).unwrap(), std::fs::read(got).unwrap());
            compare_file(&case, file, &got, &want);
        }
        compare_logs(&case, &String::from_utf8_lossy(&out.stdout));
    }
}

fn compare_file(case: &Case, file: &str, got: &[u8], want: &[u8]) {
    if !(case.edge_wrap || case.bits == 32 && file == "int.img") {
        assert!(got == want, "{}: {file} differs from C's", case.name);
        return;
    }
    if file == "image.pgm" {
        // P5 header lines, then the pixels: the header must match exactly
        let body = got.len() - pgm_pixels(want);
        assert_eq!(got[..body], want[..body], "{}: pgm header", case.name);
        let width = width_of(&std::fs::read(golden().join(format!("{}.int.img", case.name))).unwrap());
        let (o, c): (Vec<u32>, Vec<u32>) = (
            got[body..].iter().map(|&v| v as u32).collect(),
            want[body..].iter().map(|&v| v as u32).collect(),
        );
        return compare_pixels(case, file, &o, &c, width, true);
    }
    assert_eq!(got[..512], want[..512], "{}: {file} header", case.name);
    let width = width_of(want);
    let bits = if file == "int.img" || file == "noise.img" {
        case.bits
    } else {
        16
    };
    compare_pixels(
        case,
        file,
        &pixels(got, bits),
        &pixels(want, bits),
        width,
        file == "int.img",
    );
}

/// The number of pixels of a P5 PGM: width × height from its second line.
fn pgm_pixels(pgm: &[u8]) -> usize {
    let text = String::from_utf8_lossy(&pgm[..pgm.len().min(64)]);
    let dims: Vec<usize> = text
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    dims[0] * dims[1]
}

/// Our log is C's line for line; with `edge_wrap` the photon total after the PSF may be lower
/// (C counts the wrapped photons twice over the edge).
fn compare_logs(case: &Case, ours: &str) {
    let want = std::fs::read_to_string(golden().join(format!("{}.log", case.name))).unwrap();
    let (o, w): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), want.lines().collect());
    assert_eq!(o.len(), w.len(), "{}: log length\nours:\n{ours}\nC:\n{want}", case.name);
    for (a, b) in o.iter().zip(&w) {
        if case.edge_wrap && b.ends_with("overloads)") {
            continue;
        }
        assert_eq!(a, b, "{}: log line", case.name);
    }
}

/// Runs our `noisify` and expects exit status 9 with `needle` in the message.
fn refuses(args: &[&str], needle: &str) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (_dir, out) = run_ours(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: '{err}' does not name {needle}");
}

#[test]
fn bad_input_exits_9_naming_the_flag_or_file() {
    let image = ["-bin", "inputs/spots.f32", "-detpixels_x", "64", "-detpixels_y", "48"];
    let with = |extra: &[&'static str]| [&image[..], extra].concat();
    refuses(&with(&["-bits", "12"]), "-bits");
    refuses(&with(&["-psf", "gauss", "-psf_fwhm", "-5"]), "-psf_fwhm");
    refuses(&with(&["-psf", "box"]), "-psf");
    refuses(&with(&["-readout", "x"]), "-readout");
    refuses(&with(&["-seed"]), "-seed");
    refuses(&with(&["-frobnicate"]), "-frobnicate");
    refuses(&["-bin", "inputs/spots.f32", "-detpixels_x", "50"], "spots.f32");
    refuses(&["-bin", "inputs/missing.f32"], "missing.f32");
    refuses(&[], "-floatfile");
}

#[test]
fn non_finite_input_is_refused_naming_file_and_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nan.f32");
    let mut values = [1.0f32; 12];
    values[5] = f32::NAN;
    std::fs::write(&path, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let out = Command::new(BIN)
        .args(["-bin", path.to_str().unwrap(), "-detpixels_x", "4", "-seed", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("nan.f32") && err.contains("pixel 5"), "{err}");
    assert!(!dir.path().join("intimage.img").exists(), "nothing may be written");
}

/// nanobragg's noise image with noisify's flags is noisify's noise image of nanobragg's float
/// image, pixel for pixel: the same chain, seeds and streams in one run.
#[test]
fn nanobragg_with_the_detector_flags_gives_noisifys_noise_image() {
    let dir = tempfile::tempdir().unwrap();
    let scene = "-default_F 100 -cell 70 80 90 85 95 100 -misset 10 20 30 -lambda 1 -N 6 -distance 80 \
                 -pixel 0.2 -detpixels_x 40 -detpixels_y 32 -fluence 1e26 -nopgm";
    let model =
        "-seed 5 -psf fiber -psf_fwhm 300 -readout 2 -flicker 0.02 -calibration 0.05 -calib_seed 17 -gain 2 -adc 30";
    let run = |program: &str, args: String| {
        let out = Command::new(program)
            .args(args.split_whitespace())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ours = run(
        env!("CARGO_BIN_EXE_nanobragg"),
        format!("{scene} {model} -floatfile f.bin -intfile i.img -noisefile n1.img"),
    );
    run(
        BIN,
        format!("-bin f.bin -detpixels_x 40 -detpixels_y 32 -pixel 0.2 {model} -intfile i2.img -noisefile n2.img"),
    );
    let pixels = |f: &str| pixels(&std::fs::read(dir.path().join(f)).unwrap(), 16);
    let (with_model, noisified) = (pixels("n1.img"), pixels("n2.img"));
    assert_eq!(with_model, noisified);
    // and the model did something: not C's plain Poisson image of the same seed
    run(
        env!("CARGO_BIN_EXE_nanobragg"),
        format!("{scene} -seed 5 -adc 30 -floatfile f.bin -intfile i.img -noisefile n3.img"),
    );
    assert_ne!(with_model, pixels("n3.img"));
    assert!(ours.contains("photons on noise image"), "{ours}");
}

#[test]
fn nanobragg_refuses_bad_detector_flags() {
    for (args, flag) in [
        (["-psf", "box"], "-psf"),
        (["-readout", "-1"], "-readout"),
        (["-psf_fwhm", "x"], "-psf_fwhm"),
        (["-calib_seed", "1e99"], "-calib_seed"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
            .args([
                "-default_F",
                "1",
                "-cell",
                "50",
                "50",
                "50",
                "90",
                "90",
                "90",
                "-detpixels",
                "8",
            ])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}
