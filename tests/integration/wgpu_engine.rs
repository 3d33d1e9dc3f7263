//! The wgpu engine from the command line: the engine and fusion flags end to end, the adapter
//! picked by `-gpu`, and the error when no adapter exists. (Its scene, derivative images,
//! gradients and batches against the CPU f64 engine are tested in the crate, `src/tests/wgpu.rs`.)
//!
//! Tests needing an adapter skip with a message when there is none, unless
//! `NANOBRAGG_REQUIRE_WGPU=1`.

use crate::common;

use nanobragg::engine::Engine;
use std::process::{Command, Output};

/// Run the binary in a temporary directory.
fn nanobragg(args: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nanobragg"));
    cmd.args(args).current_dir(dir.path()).env_remove("NANOBRAGG_FUSION");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}

/// The light crystal on 16² pixels, float image only, then `extra`.
fn args(extra: &[&'static str]) -> Vec<&'static str> {
    let mut a = common::flags(&[common::LIGHT_CRYSTAL, "-detpixels 16 -nonoise -nopgm -noprogress"]);
    a.extend_from_slice(extra);
    a
}

/// Extra flags, environment, and the engine line expected on stdout.
type FusionCase = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
);

#[test]
fn cli_selects_fusion_by_flag_then_environment() {
    if !common::engine_available(Engine::Wgpu { fusion: true }) {
        return;
    }
    let cases: [FusionCase; 4] = [
        (&["-engine", "wgpu"], &[], "engine: wgpu (fused)"),
        (
            &["-engine", "wgpu"],
            &[("NANOBRAGG_FUSION", "0")],
            "engine: wgpu (unfused)",
        ),
        (
            &["-engine", "wgpu", "-fusion", "on"],
            &[("NANOBRAGG_FUSION", "0")],
            "engine: wgpu (fused)",
        ),
        (
            &["-engine", "wgpu", "-fusion", "off", "-precision", "f32"],
            &[],
            "engine: wgpu (unfused)",
        ),
    ];
    for (extra, env, expected) in cases {
        let out = nanobragg(&args(extra), env);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(expected), "{extra:?} {env:?}: {stdout}");
    }
}

#[test]
fn wgpu_asked_for_f64_names_the_engine() {
    let out = nanobragg(&args(&["-engine", "wgpu", "-precision", "f64"]), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{stderr}");
    assert!(stderr.contains("engine wgpu") && stderr.contains("f32"), "{stderr}");
    let out = nanobragg(&args(&["-engine", "wgpu"]), &[("NANOBRAGG_FUSION", "perhaps")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{stderr}");
    assert!(stderr.contains("NANOBRAGG_FUSION"), "{stderr}");
}

/// With the Vulkan loader pointed at no driver there is no adapter: the binary must say so,
/// naming the engine, and exit non-zero without a panic. (This forces the failure on the
/// platform's API, Vulkan on Linux; other platforms skip.)
#[test]
#[cfg(target_os = "linux")]
fn no_adapter_is_an_engine_error_not_a_panic() {
    for fusion in ["on", "off"] {
        let out = nanobragg(
            &args(&["-engine", "wgpu", "-fusion", fusion]),
            &[
                ("VK_ICD_FILENAMES", "/nonexistent/icd.json"),
                ("VK_DRIVER_FILES", "/nonexistent/icd.json"),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{stderr}");
        assert!(stderr.contains("engine wgpu"), "{stderr}");
        assert!(stderr.contains("adapter"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `-gpu` picks an adapter of `nanobragg::gpu_adapters()` by index or by a part of its name;
/// the image is the same as on the default adapter when that is the one picked, and a wrong
/// choice exits 9 naming the flag and listing the adapters.
#[test]
fn cli_picks_the_adapter_by_index_or_name() {
    if !common::engine_available(Engine::Wgpu { fusion: true }) {
        return;
    }
    let adapters = nanobragg::gpu_adapters().expect("the adapters are listed where wgpu starts");
    assert!(!adapters.is_empty());
    let first = &adapters[0];
    let floatfile = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let out_path = dir.path().join("float.bin");
        let mut a: Vec<String> = args(&["-engine", "wgpu"]).iter().map(|s| s.to_string()).collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(["-floatfile".to_string(), out_path.display().to_string()]);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = nanobragg(&refs, &[]);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        (std::fs::read(&out_path).unwrap(), stdout)
    };
    let (by_index, stdout) = floatfile(&["-gpu", "0"]);
    assert!(stdout.contains(&format!("on {} (", first.name)), "{stdout}");
    // a unique word of the name picks it too, whatever its case
    let word = first
        .name
        .split_whitespace()
        .find(|w| adapters.iter().filter(|a| a.name.contains(*w)).count() == 1)
        .map(|w| w.to_uppercase());
    if let Some(word) = word {
        let (by_name, stdout) = floatfile(&["-gpu", &word]);
        assert!(stdout.contains(&format!("on {} (", first.name)), "{stdout}");
        assert_eq!(by_name, by_index, "the same adapter renders the same image");
    }
    for wrong in ["99", "no-such-adapter"] {
        let out = nanobragg(&args(&["-engine", "wgpu", "-gpu", wrong]), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{stderr}");
        assert!(stderr.contains(&format!("-gpu {wrong}")), "{stderr}");
        assert!(
            stderr.contains(&format!("0: {}", first.name)),
            "lists the adapters: {stderr}"
        );
    }
}
