//! The binary as a user runs it: outputs, the Fdump.bin cache, help, and errors (message,
//! exit status, no output file left behind).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn nanobragg(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

/// The cubic test crystal (no structure factors: each test adds its own) on 32² pixels.
fn base() -> Vec<&'static str> {
    common::flags(&[common::CUBIC_CELL, "-detpixels 32"])
}

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
    let img = common::read_f32(&tmp.path().join("out.f32"));
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
    assert_eq!(common::read_f32(&tmp.path().join("out.f32")), img);
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
        let mut v: Vec<&'static str> = base();
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
    let mut args: Vec<&str> = base();
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
        let mut args: Vec<&str> = base();
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
    let mut args: Vec<&str> = base();
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

/// [`base`] with `-default_F 100`, no noise image unless asked, and `extra`.
fn base_with(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = base().iter().map(|s| s.to_string()).collect();
    v.extend(["-default_F", "100"].map(String::from));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nanobragg"))
}

#[cfg(target_os = "linux")]
#[test]
fn device_node_outputs_are_written_in_place() {
    // issue 14: as root, an output on a device node used to replace the node by a regular file
    let tmp = tempfile::tempdir().unwrap();
    let Some(null) = common::char_device(tmp.path(), "null", 1, 3) else {
        return;
    };
    let Some(full) = common::char_device(tmp.path(), "full", 1, 7) else {
        return;
    };
    let out = nanobragg(
        tmp.path(),
        &base_with(&[
            "-floatfile",
            "null",
            "-intfile",
            "null",
            "-noisefile",
            "null",
            "-pgmfile",
            "null",
        ])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(common::is_char_device(&null), "the null device node was replaced");
    // a full device reports the failed write, naming the file
    let out = nanobragg(
        tmp.path(),
        &base_with(&["-nonoise", "-floatfile", "full"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("full") && err.contains("No space left"), "{err}");
    assert!(common::is_char_device(&full), "the full device node was replaced");
    assert!(common::temporaries(tmp.path()).is_empty());
}

#[cfg(target_os = "linux")]
#[test]
fn dev_null_is_a_sink() {
    // C accepts /dev/null as an output; written in place this needs no rights on /dev. Not run
    // as root, where a regression would replace the machine's /dev/null (the mknod test above
    // covers root)
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        eprintln!("SKIP: running as root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = nanobragg(
        tmp.path(),
        &base_with(&["-floatfile", "/dev/null", "-intfile", "/dev/null", "-nonoise", "-nopgm"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(common::is_char_device(Path::new("/dev/null")));
}

#[test]
fn nan_producing_inputs_finish_with_an_error() {
    // issue 14: each of these made a NaN pixel, and the noise sampler looped on it forever
    let cases: [(&[&str], &str); 3] = [
        (&["-cell", "100", "100", "100", "180", "90", "90"], "-cell"),
        (&["-mosaic", "1e300", "-mosaic_dom", "3"], "-mosaic"),
        (&["-pixel", "1e300"], "-pixel"),
    ];
    for (extra, flag) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let mut args = vec!["-default_F", "100", "-cell", "100", "100", "100", "90", "90", "90"];
        args.extend(["-lambda", "6.2", "-N", "5", "-detpixels", "1"]);
        args.extend(extra);
        let mut cmd = binary();
        cmd.args(&args).current_dir(tmp.path());
        let start = std::time::Instant::now();
        let out = common::output_within(cmd, std::time::Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{extra:?} still running after 20 s"));
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("{extra:?}: exit {:?} after {:?}", out.status.code(), start.elapsed());
        assert_eq!(out.status.code(), Some(9), "{extra:?}: {err}");
        assert!(err.contains(flag), "{extra:?}: {err}");
        assert!(!tmp.path().join("noiseimage.img").exists());
    }
}

#[test]
fn stdout_on_a_full_device_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("SKIP: no /dev/full");
        return;
    };
    let out = binary()
        .args(base_with(&["-floatfile", "out.f32"]))
        .current_dir(tmp.path())
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(
        err.contains("standard output") && err.contains("No space left"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(common::temporaries(tmp.path()).is_empty());
}

#[test]
fn stdout_to_a_closed_pipe_ends_quietly_with_whole_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = binary()
        .args(base_with(&["-floatfile", "out.f32", "-nonoise", "-nopgm"]))
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the reader goes away before the first line (as `| head -0` would)
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    assert_eq!(common::read_f32(&tmp.path().join("out.f32")).len(), 32 * 32);
    assert!(common::temporaries(tmp.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn allocation_failures_exit_9_naming_the_flag() {
    // issue 14: each of these aborted (SIGABRT, 134) in an allocation; 4 GB of address space
    let cases: [(&[&str], &str); 5] = [
        (&["-oversample", "100000"], "-oversample"),
        (&["-osc", "1", "-phisteps", "1000000000"], "-phisteps"),
        (&["-mosaic", "0.1", "-mosaic_dom", "1000000000"], "-mosaic_dom"),
        (&["-detector_thick", "100", "-thicksteps", "1000000000"], "-thicksteps"),
        (&["-detpixels", "65000", "-roi", "0", "1", "0", "1"], "-detpixels"),
    ];
    for (extra, flag) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let args = base_with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = common::under_ulimit_v(4_000_000, env!("CARGO_BIN_EXE_nanobragg"), &args);
        cmd.current_dir(tmp.path());
        let out = common::output_within(cmd, std::time::Duration::from_secs(60))
            .unwrap_or_else(|| panic!("{extra:?} still running after 60 s"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{extra:?}: {err}");
        // refused before allocating: a size past the address space (on many cores, where the
        // per-thread buffers multiply) or one the allocator cannot give now
        let refused = err.contains("cannot be allocated") || err.contains("cannot be represented");
        assert!(err.contains(flag) && refused, "{extra:?}: {err}");
        assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());
    }
}

/// SIGTERM while the outputs are written: the handler deletes the temporary file and the run
/// ends with 128 + 15. The signal is sent (by the system call, no `kill` process in between) as
/// soon as a temporary output file appears, but it is delivered and handled asynchronously: a
/// run that finishes its last output first ends normally, and is then checked to have written
/// every output whole. Either way no temporary file is left.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn sigterm_while_writing_leaves_no_temporary_files() {
    // a 4096² image with a one-pixel ROI renders at once and then writes ~130 MB of outputs
    let tmp = tempfile::tempdir().unwrap();
    let args = common::flags(&[common::LIGHT_CRYSTAL, "-detpixels 4096 -roi 0 0 0 0 -seed 1 -nopgm"]);
    let mut child = binary()
        .args(args)
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut signalled = false;
    while child.try_wait().unwrap().is_none() {
        if !common::temporaries(tmp.path()).is_empty() {
            let pid = libc::pid_t::try_from(child.id()).unwrap();
            // SAFETY: kill(2) on our own child's pid, which has not been reaped yet
            assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "kill works");
            signalled = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let status = child.wait().unwrap();
    assert!(
        common::temporaries(tmp.path()).is_empty(),
        "{:?}",
        common::temporaries(tmp.path())
    );
    use std::os::unix::process::ExitStatusExt;
    match (signalled, status.code(), status.signal()) {
        // ended by the handler, not killed by the signal itself
        (true, Some(143), None) => {}
        (_, Some(0), None) => {
            eprintln!("note: the run finished before the signal was handled; its outputs are whole");
            let size = |name: &str| std::fs::metadata(tmp.path().join(name)).map_or(0, |m| m.len());
            let pixels = 4096u64 * 4096;
            assert_eq!(size("floatimage.bin"), 4 * pixels);
            for smv in ["intimage.img", "noiseimage.img"] {
                assert!(size(smv) > 2 * pixels, "{smv}: {} bytes", size(smv));
            }
        }
        other => panic!("{other:?}: {status:?}"),
    }
}

#[test]
fn new_input_errors_name_the_flag_or_file() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v: Vec<&'static str> = base();
        v.extend_from_slice(&["-default_F", "100"]);
        v.extend_from_slice(extra);
        v
    };
    expect_error(&with(&["-N", "0"]), "-N");
    expect_error(&with(&["-Na", "-3"]), "-Na");
    expect_error(&with(&["-cell", "100", "100", "100", "120", "120", "120"]), "-cell");
    expect_error(&with(&["-cell", "100", "100", "100", "100", "30", "60"]), "-cell");
    expect_error(&with(&["-distance", "1e12"]), "-distance");
    expect_error(&with(&["-oversample", "4000000000"]), "-oversample");
}

#[test]
fn oversized_img_header_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut header = b"{\nHEADER_BYTES=512;\nSIZE1=100000;\nSIZE2=100000;\n}\n".to_vec();
    header.resize(512, b' ');
    std::fs::write(tmp.path().join("huge.img"), &header).unwrap();
    let mut args: Vec<&str> = base();
    args.extend(["-default_F", "100", "-img", "huge.img", "-floatfile", "out.f32"]);
    let out = nanobragg(tmp.path(), &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("huge.img"), "{err}");
    assert!(!tmp.path().join("out.f32").exists());
}

#[test]
fn output_equal_to_an_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("in.hkl"), "0 0 0 10\n1 0 0 20\n").unwrap();
    std::fs::write(tmp.path().join("A.mat"), "0.01 0 0\n0 0.01 0\n0 0 0.01\n").unwrap();
    let cases: [(&[&str], &str, &str); 3] = [
        (&["-hkl", "in.hkl", "-floatfile", "in.hkl"], "-floatfile", "-hkl"),
        (&["-hkl", "in.hkl", "-intfile", "./sub/../in.hkl"], "-intfile", "-hkl"),
        (
            &["-default_F", "100", "-mat", "A.mat", "-noisefile", "A.mat"],
            "-noisefile",
            "-mat",
        ),
    ];
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    for (extra, out_flag, in_flag) in cases {
        let mut args: Vec<&str> = base();
        args.extend(extra);
        let out = nanobragg(tmp.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{extra:?}: {err}");
        assert!(err.contains(out_flag) && err.contains(in_flag), "{extra:?}: {err}");
    }
    assert_eq!(
        std::fs::read(tmp.path().join("in.hkl")).unwrap(),
        b"0 0 0 10\n1 0 0 20\n"
    );
    assert_eq!(
        std::fs::read(tmp.path().join("A.mat")).unwrap(),
        b"0.01 0 0\n0 0.01 0\n0 0 0.01\n"
    );
}

#[test]
fn roi_outside_the_detector_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let args = base_with(&["-roi", "100", "200", "100", "200", "-nonoise", "-nopgm"]);
    let out = nanobragg(tmp.path(), &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("WARNING") && log.contains("outside"), "{log}");
}

#[test]
fn nonfinite_pixels_are_an_error_unless_allowed() {
    // r_e²·fluence ≈ 8e270 overflows single precision wherever the lattice factor is not 0
    let tmp = tempfile::tempdir().unwrap();
    let args = base_with(&["-fluence", "1e300", "-seed", "3"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = binary();
    cmd.args(&args).current_dir(tmp.path());
    let out = common::output_within(cmd, std::time::Duration::from_secs(20)).expect("finishes");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("-fluence") && err.contains("overflow"), "{err}");
    assert!(!tmp.path().join("noiseimage.img").exists());
    // allowed: written, with a warning, and the noise image finishes
    let mut cmd = binary();
    cmd.args(&args).arg("-allow_nonfinite").current_dir(tmp.path());
    let out = common::output_within(cmd, std::time::Duration::from_secs(20)).expect("finishes");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("WARNING") && log.contains("overflow"), "{log}");
    let noise = std::fs::read(tmp.path().join("noiseimage.img")).unwrap();
    assert_eq!(noise.len(), 512 + 2 * 32 * 32);
}

#[test]
fn an_infinite_fluence_is_refused_before_rendering() {
    let tmp = tempfile::tempdir().unwrap();
    let args = base_with(&["-flux", "1e300", "-exposure", "1e300"]);
    let out = nanobragg(tmp.path(), &args.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("-flux") && err.contains("infinite fluence"), "{err}");
}

#[test]
fn infinite_pixels_from_cs_overflow_name_the_flag() {
    // -point_pixel with -oversample_omega multiplies the running sum by 1/R² per term; C's
    // sum overflows to infinity too
    let tmp = tempfile::tempdir().unwrap();
    let args = base_with(&[
        "-point_pixel",
        "-oversample_omega",
        "-oversample",
        "30",
        "-nonoise",
        "-nopgm",
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = nanobragg(tmp.path(), &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.contains("-oversample_omega") && err.contains("overflow"), "{err}");
    assert!(!tmp.path().join("floatimage.bin").exists());
    // written as C writes it when allowed
    let mut allowed = args.clone();
    allowed.push("-allow_nonfinite");
    let out = nanobragg(tmp.path(), &allowed);
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("WARNING") && log.contains("overflow"), "{log}");
    assert!(!log.contains("NaN"), "{log}");
    let image = common::read_f32(&tmp.path().join("floatimage.bin"));
    assert!(image.iter().all(|v| !v.is_nan()) && image.iter().any(|v| v.is_infinite()));
}
