//! The wgpu engine beyond image parity: gradients against the CPU f64 engine, the CLI's
//! engine flags end to end, and the error when no adapter exists.
//!
//! One binary holds NdArray f64 and wgpu f32: they are different devices, so each keeps its
//! own float dtype (burn fixes it per device). Tests needing an adapter skip with a message
//! when there is none, unless `NANOBRAGG_REQUIRE_WGPU=1`.

mod common;

use nanobragg::cli::{parse_args, Parsed};
use nanobragg::config::{HklSource, SimConfig};
use nanobragg::engine::{Engine, Precision};
use nanobragg::setup::Experiment;
use nanobragg::simulate::RenderOptions;
use std::process::{Command, Output};

/// The small configuration of `tests/gradients.rs`: triclinic, misset, mosaic crystal on a
/// rotated detector with polarization, two φ steps.
const CONFIG: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 -distance 80 \
    -pixel 0.4 -detpixels 24 -detector_rotx 2 -detector_roty 1 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 \
    -phi 5 -osc 2 -phisteps 2 -polar 0.8 -oversample 1";

const CPU: Engine = Engine::Cpu {
    precision: Precision::F64,
};

fn setup(args: &str) -> (SimConfig, Experiment) {
    let args: Vec<&str> = args.split_whitespace().collect();
    let Parsed::Run(mut cfg, _) = parse_args(&args).unwrap() else {
        panic!()
    };
    cfg.crystal.hkl = HklSource::None;
    let exp = Experiment::new(&cfg).unwrap();
    (*cfg, exp)
}

/// Gradients of a weighted image sum on wgpu agree with the CPU f64 ones: per component,
/// |Δ| ≤ 2e-3·|g_cpu| + 1e-4·max|g_cpu| over that parameter's components. f32 carries ~1e-7
/// relative per operation; the tolerance leaves room for the sums over 576 pixels × 6
/// orientations and for components that nearly cancel.
fn gradients_match_cpu(engine: Engine) {
    if !common::engine_available(engine) {
        return;
    }
    let (cfg, exp) = setup(CONFIG);
    let n = exp.detector.pixels();
    let weights: Vec<f32> = (0..n).map(|i| 1.0 + ((i * 7919) % 13) as f32 / 13.0).collect();
    let opts = RenderOptions::default();
    let (img_ref, g_ref) = CPU.image_vjp(&cfg, &exp, Some(&weights), &opts).unwrap();
    let (img, g) = engine.image_vjp(&cfg, &exp, Some(&weights), &opts).unwrap();
    let max = img_ref.data.iter().cloned().fold(0.0f32, f32::max);
    let worst = img
        .data
        .iter()
        .zip(&img_ref.data)
        .map(|(a, b)| (a - b).abs() / max)
        .fold(0.0f32, f32::max);
    println!("{}: image max |Δ|/max = {worst:.2e}", engine.name());
    assert!(
        worst < 1e-4,
        "{}: image differs by {worst} of its maximum",
        engine.name()
    );
    assert_eq!(g.len(), g_ref.len());
    let mut failures = Vec::new();
    for (a, b) in g.iter().zip(&g_ref) {
        assert_eq!(a.name, b.name);
        let scale = b.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (i, (x, y)) in a.values.iter().zip(&b.values).enumerate() {
            let rel = (x - y).abs() / scale.max(f64::MIN_POSITIVE);
            println!(
                "{:<16} {:<18}[{i}] wgpu {x:>14.6e} cpu {y:>14.6e} |Δ|/max {rel:.1e}",
                engine.name(),
                a.name
            );
            if (x - y).abs() > 2e-3 * y.abs() + 1e-4 * scale {
                failures.push(format!("{}[{i}]: {} {x:e}, cpu f64 {y:e}", a.name, engine.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gradients_on_wgpu_fused_match_cpu_f64() {
    gradients_match_cpu(Engine::Wgpu { fusion: true });
}

#[test]
fn gradients_on_wgpu_unfused_match_cpu_f64() {
    gradients_match_cpu(Engine::Wgpu { fusion: false });
}

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

const SMALL: &[&str] = &[
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
    "5",
    "-detpixels",
    "16",
    "-nonoise",
    "-nopgm",
    "-noprogress",
];

fn args(extra: &[&'static str]) -> Vec<&'static str> {
    SMALL.iter().chain(extra).copied().collect()
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
