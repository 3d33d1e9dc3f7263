//! The binary as a user runs it: outputs, the Fdump.bin cache, help, and errors (message,
//! exit status, no output file left behind).

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn nanobragg(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

const BASE: &[&str] = &[
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
    "5",
    "-detpixels",
    "32",
];

#[test]
fn golden_case_through_the_binary() {
    let Some(golden) = common::golden_dir() else { return };
    let case = common::cases(&golden)
        .into_iter()
        .find(|c| c.name == "hkl_pattern_64")
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    args.extend(["-floatfile", "out.f32"]);
    let out = nanobragg(tmp.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let img = read_f32(&tmp.path().join("out.f32"));
    assert!(common::correlation(&img, &case.image) > 0.9999);
    // as C, -hkl leaves Fdump.bin behind, and a run without -hkl reads it back
    assert!(tmp.path().join("Fdump.bin").is_file());
    let no_hkl: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| **a != "-hkl" && (*i == 0 || args[i - 1] != "-hkl"))
        .map(|(_, a)| *a)
        .collect();
    let out = nanobragg(tmp.path(), &no_hkl);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read_f32(&tmp.path().join("out.f32")), img);
}

#[test]
fn help_exits_zero_with_usage() {
    let tmp = tempfile::tempdir().unwrap();
    for flag in ["-h", "--help"] {
        let out = nanobragg(tmp.path(), &[flag]);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("-floatfile"));
    }
}

/// Run, expect exit 9, a message containing `needle` on stderr, and no float file.
fn expect_error(args: &[&str], needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-floatfile", "out.f32"]);
    let out = nanobragg(tmp.path(), &all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: message {err:?} lacks {needle:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!tmp.path().join("out.f32").exists(), "{args:?} left an output file");
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "{args:?} left files: {leftovers:?}");
}

#[test]
fn errors_name_the_flag_or_file() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v: Vec<&'static str> = BASE.to_vec();
        v.extend_from_slice(extra);
        v
    };
    expect_error(&with(&["-default_F", "100", "-bogus"]), "-bogus");
    expect_error(&with(&["-default_F", "100", "-lambda", "abc"]), "-lambda");
    expect_error(&with(&["-default_F", "100", "-distance"]), "-distance");
    expect_error(&with(&["-hkl", "no_such_file.hkl"]), "no_such_file.hkl");
    expect_error(&with(&["-default_F", "100", "-mat", "missing.mat"]), "missing.mat");
    expect_error(&with(&[]), "structure factors");
    expect_error(&["-default_F", "100", "-detpixels", "16"], "-cell");
    expect_error(&with(&["-default_F", "100", "-pixel", "0"]), "-pixel");
}

#[test]
fn malformed_hkl_names_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("bad.hkl"), "0 0 0 10\n1 0 0 x\n").unwrap();
    let hkl = tmp.path().join("bad.hkl");
    let mut args: Vec<&str> = BASE.to_vec();
    args.extend(["-hkl", hkl.to_str().unwrap(), "-floatfile", "out.f32"]);
    let out = nanobragg(tmp.path(), &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9));
    assert!(err.contains("bad.hkl:2"), "{err}");
    assert!(!tmp.path().join("out.f32").exists());
}

#[test]
fn malformed_input_files_name_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &[u8]| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let mat = write("bad.mat", b"0.01 0 0\n0 0.01 zero\n0 0 0.01\n");
    let src = write("bad_sources.txt", b"-10 0 0 1 6.2e-10\n-10 0.1 abc\n");
    let smv = write("bad.img", b"this is not an SMV file at all");
    let empty_hkl = write("empty.hkl", b"\n\n");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["-default_F".into(), "100".into(), "-mat".into(), mat.clone()],
            "bad.mat:2",
        ),
        (
            vec!["-default_F".into(), "100".into(), "-sourcefile".into(), src.clone()],
            "bad_sources.txt:2",
        ),
        (
            vec!["-default_F".into(), "100".into(), "-mask".into(), smv.clone()],
            "bad.img",
        ),
        (
            vec!["-default_F".into(), "100".into(), "-img".into(), smv.clone()],
            "bad.img",
        ),
        (vec!["-hkl".into(), empty_hkl.clone()], "empty.hkl"),
    ];
    for (extra, needle) in cases {
        let mut args: Vec<&str> = BASE.to_vec();
        args.extend(extra.iter().map(String::as_str));
        args.extend(["-floatfile", "out.f32"]);
        let out = nanobragg(tmp.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err:?} lacks {needle:?}");
        assert!(!tmp.path().join("out.f32").exists());
        assert!(!tmp.path().join("intimage.img").exists());
    }
}

#[test]
fn out_of_range_values_are_refused() {
    for (flag, value) in [
        ("-detpixels", "-5"),
        ("-lambda", "-1"),
        ("-energy", "0"),
        ("-pixel", "nan"),
        ("-N", "x"),
    ] {
        let mut args: Vec<&str> = vec!["-default_F", "100", "-cell", "100", "100", "100", "90", "90", "90"];
        args.extend([flag, value]);
        expect_error(&args, flag);
    }
}

#[test]
fn unwritable_output_is_an_error_without_partial_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = BASE.to_vec();
    args.extend(["-default_F", "100", "-floatfile", "no_such_dir/out.f32"]);
    let out = nanobragg(tmp.path(), &args);
    assert_eq!(out.status.code(), Some(9));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no_such_dir/out.f32"));
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
