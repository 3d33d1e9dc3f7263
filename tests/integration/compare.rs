//! The `nanobragg-compare` tool, with nanobragg itself standing in for the C program (it takes
//! the same flags), so the two images must agree exactly.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

/// The light crystal on 32² pixels.
fn tiny() -> Vec<&'static str> {
    common::flags(&[common::LIGHT_CRYSTAL, "-detpixels 32"])
}

fn compare(cwd: &Path, options: &[&str], flags: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanobragg-compare"))
        .args(options)
        .arg("--")
        .args(flags)
        .current_dir(cwd)
        .env_remove("NB_C_BIN")
        .env_remove("NANOBRAGG_C_BIN")
        .output()
        .expect("compare binary runs")
}

#[test]
fn nanobragg_against_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let nb = env!("CARGO_BIN_EXE_nanobragg");
    let out = tmp.path().join("out");
    let o = compare(
        tmp.path(),
        &["--c-bin", nb, "--nanobragg", nb, "--out", out.to_str().unwrap()],
        &tiny(),
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("Pearson r"), "{stdout}");

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["fpixels"], 32);
    assert_eq!(summary["spixels"], 32);
    assert_eq!(summary["pixels"], 1024);
    assert_eq!(summary["exit_code"]["c"], 0);
    assert_eq!(summary["exit_code"]["nanobragg"], 0);
    let r = summary["pearson_r"].as_f64().unwrap();
    assert!((r - 1.0).abs() < 1e-12, "{r}");
    let ratio = summary["sum_ratio_nanobragg_over_c"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() < 1e-12, "{ratio}");
    assert_eq!(summary["max_abs_diff"].as_f64(), Some(0.0));
    assert!(summary["sum"]["c"].as_f64().unwrap() > 0.0);
    assert!(summary["runtime_s"]["c"].as_f64().unwrap() > 0.0);
    assert!(summary["speed_ratio_c_over_nanobragg"].as_f64().unwrap() > 0.0);
    assert_eq!(summary["flags"].as_array().unwrap().len(), tiny().len());

    for name in ["c.png", "nanobragg.png", "diff.png"] {
        let bytes = std::fs::read(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}");
    }
    // Identical images give identical previews.
    assert_eq!(
        std::fs::read(out.join("c.png")).unwrap(),
        std::fs::read(out.join("nanobragg.png")).unwrap()
    );
    for name in ["c.npy", "nanobragg.npy"] {
        assert_eq!(
            std::fs::metadata(out.join(name)).unwrap().len(),
            128 + 4 * 1024,
            "{name}"
        );
    }
    // Nothing but the output directory was created in the working directory.
    let entries: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["out"]);
}

#[test]
fn default_nanobragg_and_relative_input_file() {
    // A relative -hkl path is resolved against the caller's directory; nanobragg is found next
    // to the compare binary; --out defaults to ./compare_out.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("p.hkl"), "0 0 0 50\n1 0 0 100\n0 1 0 100\n0 0 1 100\n").unwrap();
    let flags: Vec<&str> = tiny()[2..].iter().copied().chain(["-hkl", "p.hkl"]).collect();
    let o = compare(tmp.path(), &["--c-bin", env!("CARGO_BIN_EXE_nanobragg")], &flags);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("compare_out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["max_abs_diff"].as_f64(), Some(0.0));
    let hkl = summary["run_flags"][summary["run_flags"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f == "-hkl")
        .unwrap()
        + 1]
    .as_str()
    .unwrap()
    .to_string();
    assert!(Path::new(&hkl).is_absolute(), "{hkl}");
}

#[test]
fn missing_c_binary_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-nanoBragg");
    let out = tmp.path().join("out");
    let o = compare(
        tmp.path(),
        &["--c-bin", missing.to_str().unwrap(), "--out", out.to_str().unwrap()],
        &tiny(),
    );
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("no-such-nanoBragg"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn no_c_binary_given() {
    let tmp = tempfile::tempdir().unwrap();
    let o = compare(tmp.path(), &[], &tiny());
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("NB_C_BIN"), "{stderr}");
}

#[test]
fn failing_program_reports_exit_codes() {
    // Both runs fail (the structure-factor file does not exist); the summary records why.
    let tmp = tempfile::tempdir().unwrap();
    let nb = env!("CARGO_BIN_EXE_nanobragg");
    let flags: Vec<&str> = tiny()[2..].iter().copied().chain(["-hkl", "missing.hkl"]).collect();
    let o = compare(tmp.path(), &["--c-bin", nb], &flags);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("missing.hkl"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("compare_out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["exit_code"]["c"], 9);
    assert_eq!(summary["exit_code"]["nanobragg"], 9);
    assert!(summary["error"].as_str().unwrap().contains("failed"));
}

#[test]
fn bad_flags_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let nb = env!("CARGO_BIN_EXE_nanobragg");
    let o = compare(tmp.path(), &["--c-bin", nb], &["-no_such_flag"]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("-no_such_flag"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn size_mismatch_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    // A stand-in "C program" that renders a smaller detector than asked for.
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("fake-c.sh");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" -detpixels 16\n",
            env!("CARGO_BIN_EXE_nanobragg")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = compare(tmp.path(), &["--c-bin", fake.to_str().unwrap()], &tiny());
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("C wrote 256 pixels, expected 1024"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("compare_out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["exit_code"]["c"], 0);
    assert!(summary["error"].as_str().unwrap().contains("256 pixels"));
    assert!(!tmp.path().join("compare_out/diff.png").exists());
}
