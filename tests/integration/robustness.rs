//! Every finite flag value ends a run one of two ways: exit 0 with finite outputs, or exit 9
//! with one message naming the flag. Never a panic (101), an abort, a signal or a hang.
//!
//! A sweep gives each numeric flag each extreme value alone; a property test draws several
//! at once, with and without an `-hkl` grid. Each finding of the kind also has its own
//! regression test here.

use crate::common;
use proptest::prelude::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The longest a run of the tiny detector may take before it counts as a hang.
const BOUND: Duration = Duration::from_secs(30);

/// A tiny run: a cubic crystal on 8 × 8 pixels, every output written.
const BASE: &[&str] = &[
    "-default_F",
    "100",
    "-cell",
    "100",
    "100",
    "100",
    "90",
    "90",
    "90",
    "-lambda",
    "6.2",
    "-N",
    "2",
    "-detpixels",
    "8",
    "-seed",
    "1",
];

/// The numeric flags (one spelling each) with the number of values they take.
const NUMERIC_FLAGS: &[(&str, usize)] = &[
    ("-default_F", 1),
    ("-cell", 6),
    ("-misset", 3),
    ("-pixel", 1),
    ("-detpixels", 1),
    ("-detpixels_f", 1),
    ("-detpixels_s", 1),
    ("-detsize", 1),
    ("-detsize_f", 1),
    ("-detsize_s", 1),
    ("-distance", 1),
    ("-close_distance", 1),
    ("-detector_rotx", 1),
    ("-detector_roty", 1),
    ("-detector_rotz", 1),
    ("-twotheta", 1),
    ("-twotheta_axis", 3),
    ("-fdet_vector", 3),
    ("-sdet_vector", 3),
    ("-odet_vector", 3),
    ("-beam_vector", 3),
    ("-polar_vector", 3),
    ("-spindle_axis", 3),
    ("-pix0_vector", 3),
    ("-Xbeam", 1),
    ("-Ybeam", 1),
    ("-Xclose", 1),
    ("-Yclose", 1),
    ("-ORGX", 1),
    ("-ORGY", 1),
    ("-lambda", 1),
    ("-energy", 1),
    ("-dispersion", 1),
    ("-dispsteps", 1),
    ("-divergence", 1),
    ("-hdivrange", 1),
    ("-vdivrange", 1),
    ("-hdivstep", 1),
    ("-vdivstep", 1),
    ("-hdivsteps", 1),
    ("-vdivsteps", 1),
    ("-divsteps", 1),
    ("-polar", 1),
    ("-fluence", 1),
    ("-flux", 1),
    ("-exposure", 1),
    ("-beamsize", 1),
    ("-water", 1),
    ("-N", 1),
    ("-Na", 1),
    ("-Nb", 1),
    ("-Nc", 1),
    ("-samplesize", 1),
    ("-sample_x", 1),
    ("-sample_y", 1),
    ("-sample_z", 1),
    ("-fudge", 1),
    ("-mosaic", 1),
    ("-mosaic_dom", 1),
    ("-density", 1),
    ("-MW", 1),
    ("-phi", 1),
    ("-osc", 1),
    ("-phistep", 1),
    ("-phisteps", 1),
    ("-dmin", 1),
    ("-oversample", 1),
    ("-roi", 4),
    ("-detector_abs", 1),
    ("-detector_thick", 1),
    ("-thicksteps", 1),
    ("-scale", 1),
    ("-adc", 1),
    ("-pgmscale", 1),
    ("-seed", 1),
    ("-mosaic_seed", 1),
    ("-misset_seed", 1),
    ("-printout_pixel", 2),
    ("-trace_pixel", 2),
    ("-memory_mb", 1),
    ("-nthreads", 1),
];

/// Extreme finite values: zero, the smallest and largest magnitudes of either sign, negative
/// counts and huge counts.
const EXTREMES: &[&str] = &[
    "0",
    "1e-300",
    "-1e-300",
    "1e300",
    "-1e300",
    "-1",
    "-2147483648",
    "2147483647",
    "1000000000",
    "9000000000000000000",
];

/// How a run ended.
#[derive(Debug)]
enum Ending {
    /// Exit 0; every float image finite.
    Finite,
    /// Exit 9 with one message.
    Refused(String),
}

/// Runs the binary in `dir` with `args`, killed after [`BOUND`]; standard output is not kept
/// (a long log cannot block the child).
fn run(dir: &Path, args: &[String]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    let start = std::time::Instant::now();
    let mut child = child;
    loop {
        if child.try_wait().expect("wait works").is_some() {
            return child.wait_with_output().expect("stderr readable");
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `BASE` + `extra` (with `-hkl` the project's tiny table when `hkl`) in a fresh directory
/// and classifies the ending; anything but exit 0 with finite images or exit 9 with one line
/// is an error describing it.
fn ending(extra: &[String], hkl: bool) -> Result<Ending, String> {
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = BASE.iter().map(|s| s.to_string()).collect();
    if hkl {
        let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tiny.hkl");
        args.extend(["-hkl".to_string(), table.to_string_lossy().into_owned()]);
    }
    args.extend(["-floatfile".to_string(), "float.bin".to_string()]);
    args.extend(extra.iter().cloned());
    let out = run(tmp.path(), &args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => {
            let float = tmp.path().join("float.bin");
            let image = common::read_f32(&float);
            if image.is_empty() || image.iter().any(|v| !v.is_finite()) {
                return Err(format!(
                    "{extra:?}: exit 0 with a float image that is not finite: {image:?}"
                ));
            }
            Ok(Ending::Finite)
        }
        Some(9) => {
            let lines: Vec<&str> = err.lines().collect();
            if lines.len() != 1 || !lines[0].starts_with("nanobragg: error: ") {
                return Err(format!("{extra:?}: exit 9 without exactly one message: {err}"));
            }
            let left: Vec<String> = std::fs::read_dir(tmp.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "Fdump.bin")
                .collect();
            if !left.is_empty() {
                return Err(format!("{extra:?}: exit 9 left files behind: {left:?} ({err})"));
            }
            Ok(Ending::Refused(lines[0].to_string()))
        }
        code => Err(format!("{extra:?}: exit {code:?} (signal or panic): {err}")),
    }
}

/// Checks one run: it ends well, and a refusal names one of `flags`.
fn check(extra: &[String], flags: &[&str], hkl: bool) -> Result<(), String> {
    match ending(extra, hkl)? {
        Ending::Finite => Ok(()),
        Ending::Refused(message) => {
            if flags.iter().any(|f| names(&message, f)) {
                Ok(())
            } else {
                Err(format!("{extra:?}: the message names none of {flags:?}: {message}"))
            }
        }
    }
}

/// Whether `message` names `flag` as a word (so `-N` is not found in `-Na`).
fn names(message: &str, flag: &str) -> bool {
    message.match_indices(flag).any(|(at, _)| {
        let next = message[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `flag` followed by its values, each drawn from `value(k)`.
fn with_values(flag: &str, arity: usize, value: impl Fn(usize) -> String) -> Vec<String> {
    std::iter::once(flag.to_string()).chain((0..arity).map(value)).collect()
}

#[test]
fn every_numeric_flag_at_every_extreme_ends_well() {
    // each flag alone, with all its values at one extreme; two runs at a time
    let cases: Vec<(Vec<String>, &str)> = NUMERIC_FLAGS
        .iter()
        .flat_map(|&(flag, arity)| {
            EXTREMES
                .iter()
                .map(move |v| (with_values(flag, arity, |_| v.to_string()), flag))
        })
        .collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let halves: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|(extra, flag)| check(extra, &[flag], false).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A numeric flag with values drawn from [`EXTREMES`] and a few ordinary ones.
fn drawn_flag() -> impl Strategy<Value = (usize, Vec<String>)> {
    let value = prop_oneof![
        3 => proptest::sample::select(EXTREMES).prop_map(String::from),
        1 => proptest::sample::select(&["1", "3", "0.5", "90", "-45"][..]).prop_map(String::from),
    ];
    (0..NUMERIC_FLAGS.len(), proptest::collection::vec(value, 6)).prop_map(|(k, values)| {
        let (flag, arity) = NUMERIC_FLAGS[k];
        (k, with_values(flag, arity, |i| values[i].clone()))
    })
}

proptest! {
    // a fixed seed: the same 48 cases every run (the fuzzers explore; this test must not flake)
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6e62_2026),
        ..ProptestConfig::default()
    })]

    #[test]
    fn extreme_flags_together_end_well(
        drawn in proptest::collection::vec(drawn_flag(), 2..=3),
        hkl in any::<bool>(),
    ) {
        let extra: Vec<String> = drawn.iter().flat_map(|(_, args)| args.clone()).collect();
        let flags: Vec<&str> = drawn.iter().map(|(k, _)| NUMERIC_FLAGS[*k].0).collect();
        if let Err(e) = check(&extra, &flags, hkl) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// Runs `BASE` + `extra` in `dir` and returns (exit code, stderr).
fn status(dir: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let args: Vec<String> = BASE.iter().chain(extra).map(|s| s.to_string()).collect();
    let out = run(dir, &args);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn miller_indices_beyond_the_integers_take_default_f() {
    // λ = 1e-30 Å puts h, k, l near 1e32: the integer cast of the grid lookup used to panic
    // in a burn worker (exit 101). Out of the grid, F is default_F, as C's lookup gives it.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.hkl"), "0 0 0 10\n1 0 0 20\n0 1 0 30\n").unwrap();
    let flags = [
        "-hkl",
        "t.hkl",
        "-cell",
        "100",
        "100",
        "100",
        "90",
        "90",
        "90",
        "-lambda",
        "1e-30",
        "-N",
        "5",
        "-detpixels",
        "32",
        "-floatfile",
        "f.bin",
    ];
    let out = run(tmp.path(), &flags.map(String::from));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // every pixel's h, k, l is ~1e29 or more, far off the grid: F = default_F = 0 everywhere
    let with_grid = common::read_f32(&tmp.path().join("f.bin"));
    assert_eq!(with_grid, vec![0.0; 32 * 32]);
    // the same through the Fdump.bin the run left behind (no -hkl)
    let fdump: Vec<String> = flags[2..].iter().map(|s| s.to_string()).collect();
    let out = run(tmp.path(), &fdump);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(common::read_f32(&tmp.path().join("f.bin")), with_grid);
}

#[test]
fn an_overflowing_intensity_names_its_flag_and_writes_nothing() {
    for (extra, flag) in [
        (&["-fluence", "1e300"][..], "-fluence"),
        (&["-water", "1e30"][..], "-water"),
        (&["-water", "1e300"][..], "-water"),
        (&["-flux", "1e300", "-beamsize", "1e-300"][..], "-flux"),
        (&["-default_F", "1e200"][..], "-default_F"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (code, err) = status(tmp.path(), extra);
        assert_eq!(code, Some(9), "{extra:?}: {err}");
        assert!(names(&err, flag), "{extra:?}: {err}");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "{extra:?}: files written"
        );
    }
    // -allow_nonfinite writes them anyway, with a warning
    let tmp = tempfile::tempdir().unwrap();
    let (code, err) = status(
        tmp.path(),
        &["-fluence", "1e300", "-allow_nonfinite", "-floatfile", "f.bin"],
    );
    assert_eq!(code, Some(0), "{err}");
    let image = common::read_f32(&tmp.path().join("f.bin"));
    assert!(image.iter().any(|v| v.is_infinite()), "{image:?}");
}

#[test]
fn thread_counts_beyond_the_bound_are_refused_at_once() {
    // -nthreads 100000 started threads for minutes; the bound is 1024
    let tmp = tempfile::tempdir().unwrap();
    let start = std::time::Instant::now();
    let (code, err) = status(tmp.path(), &["-nthreads", "100000"]);
    assert_eq!(code, Some(9), "{err}");
    assert!(names(&err, "-nthreads") && err.contains("1024"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    let (code, err) = status(tmp.path(), &["-nthreads", "1024", "-floatfile", "f.bin"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn degenerate_flat_detectors_are_refused_naming_the_flag() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["-fdet_vector", "0", "0", "1", "-sdet_vector", "0", "0", "-2"],
            "-fdet_vector",
        ),
        (&["-odet_vector", "0", "0", "1"], "-odet_vector"),
        (&["-distance", "1e-300"], "-distance"),
        (&["-pixel", "1e-300"], "-pixel"),
        // the plane turned edge-on to the beam about the beam spot: through the sample
        (&["-detector_roty", "90"], "-detector_roty"),
        // turned further: the pixels face away from the sample
        (&["-twotheta", "180"], "-twotheta"),
        // the beam parallel to the plane: C divides by b·o = 0 to find the beam spot
        (
            &["-beam_vector", "0", "0", "1", "-close_distance", "100"],
            "-beam_vector",
        ),
    ];
    for (extra, flag) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let (code, err) = status(tmp.path(), extra);
        assert_eq!(code, Some(9), "{extra:?}: {err}");
        assert!(names(&err, flag), "{extra:?}: {err}");
    }
}

/// A DIALS experiment list of one 8 × 8 panel with the given axes and origin (mm).
fn expt(fast: &str, slow: &str, origin: &str) -> String {
    format!(
        r#"{{"experiment": [{{"beam": 0, "detector": 0}}],
"beam": [{{"direction": [0.0, 0.0, -1.0], "wavelength": 1.0}}],
"detector": [{{"panels": [{{"name": "P", "fast_axis": {fast}, "slow_axis": {slow}, "origin": {origin},
"pixel_size": [0.1, 0.1], "image_size": [8, 8]}}]}}]}}"#
    )
}

#[test]
fn degenerate_panels_are_refused_naming_file_panel_and_key() {
    let cases = [
        // fast and slow parallel
        (expt("[1, 0, 0]", "[-2, 0, 0]", "[0, 0, 100]"), "slow_axis"),
        // the plane through the sample: origin 0, normal ⟂ beam
        (expt("[1, 0, 0]", "[0, 0, 1]", "[0, 0, 0]"), "origin"),
        // the beam parallel to the plane, away from the sample
        (expt("[1, 0, 0]", "[0, 0, 1]", "[0, 50, 0]"), "fast_axis"),
    ];
    for (text, key) in cases {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("d.expt"), &text).unwrap();
        let (code, err) = status(tmp.path(), &["-detector_expt", "d.expt"]);
        assert_eq!(code, Some(9), "{text}: {err}");
        assert!(
            err.contains("d.expt") && err.contains("panel 0 (P)") && err.contains(key),
            "{err}"
        );
    }
    let geom = "clen = 0.1\nres = 10000\nq/min_fs = 0\nq/max_fs = 7\nq/min_ss = 0\nq/max_ss = 7\n\
                q/fs = +1x\nq/ss = +1x\nq/corner_x = 0\nq/corner_y = 0\n";
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("d.geom"), geom).unwrap();
    let (code, err) = status(tmp.path(), &["-geom", "d.geom"]);
    assert_eq!(code, Some(9), "{err}");
    assert!(err.contains("d.geom:8") && err.contains("q/ss"), "{err}");
    let zero_pitch = geom
        .replace("q/ss = +1x", "q/ss = -1y")
        .replace("res = 10000", "pixel_pitch = 0");
    std::fs::write(tmp.path().join("d.geom"), zero_pitch).unwrap();
    let (code, err) = status(tmp.path(), &["-geom", "d.geom"]);
    assert_eq!(code, Some(9), "{err}");
    assert!(err.contains("d.geom:2") && err.contains("pixel_pitch"), "{err}");
}

#[test]
fn automatic_oversampling_of_a_large_crystal_is_bounded() {
    // C's choice for a 0.5 mm crystal is 2420 × 2420 sub-pixels per pixel (minutes even for
    // 8 × 8 pixels); the automatic choice stops at 32, with a warning naming C's
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nanobragg"));
    cmd.args(BASE)
        .args(["-samplesize", "0.5", "-floatfile", "f.bin"])
        .current_dir(tmp.path());
    let out = common::output_within(cmd, BOUND).expect("finishes within the bound");
    let log = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("32x32 pixel oversample steps"), "{log}");
    assert!(
        log.contains("C would oversample 2420x2420") && log.contains("-oversample 2420"),
        "{log}"
    );
}

#[test]
fn too_many_mosaic_domains_name_the_short_spelling() {
    // a proptest draw: the refusal named only -mosaic_domains, not the -mosaic_dom given
    let extra: Vec<String> = ["-mosaic", "2147483647", "-mosaic_dom", "2147483647"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    check(&extra, &["-mosaic", "-mosaic_dom"], false).unwrap();
}
