//! Image parity with the C program on every golden case, on the wgpu engine (f32), fused and
//! unfused: the same thresholds as the CPU f32 engine (correlation ≥ 0.999, sum within 1 %).
//! The statistics it reduced on the device equal those reduced on the host from the image it
//! read back (max and its position exactly, sums to f32 accuracy).
//!
//! Skips with a message when no wgpu adapter exists, unless `NANOBRAGG_REQUIRE_WGPU=1` (CI,
//! which installs Mesa's software Vulkan driver, llvmpipe).

use crate::common;

use nanobragg::config::HklSource;
use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::render::output::Statistics;
use nanobragg::render::RenderOptions;
use std::time::Instant;

fn every_golden_case(engine: Engine) {
    let Some(dir) = common::golden_dir() else { return };
    if !common::engine_available(engine) {
        return;
    }
    let mut failures = Vec::new();
    let start = Instant::now();
    for case in common::cases(&dir) {
        let Parsed::Run(mut cfg, _) = parse_args(&case.args).unwrap() else {
            panic!()
        };
        if cfg.crystal.hkl == HklSource::FdumpIfPresent {
            cfg.crystal.hkl = HklSource::None;
        }
        let exp = Experiment::new(&cfg).unwrap();
        let t = Instant::now();
        let image = engine.render(&exp, &RenderOptions::default()).unwrap();
        let corr = common::correlation(&image.data, &case.image);
        let ratio = common::sum_ratio(&image.data, &case.image);
        println!(
            "{:<16} {:<36} {:>12.8} {:>12.8} {:>7.2} s",
            engine.name(),
            case.name,
            corr,
            ratio,
            t.elapsed().as_secs_f64()
        );
        if !(corr >= 0.999 && (ratio - 1.0).abs() <= 1e-2) {
            failures.push(format!("{}: correlation {corr}, sum ratio {ratio}", case.name));
        }
        let host = Statistics::new(&exp, &image);
        match &image.statistics {
            None => failures.push(format!("{}: no statistics reduced on the device", case.name)),
            Some(device) => {
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * b.abs() + 1e-30;
                let agree = device.max_i == host.max_i
                    && device.max_at == host.max_at
                    && device.rendered == host.rendered
                    && close(device.mean, host.mean)
                    && close(device.rms, host.rms)
                    && close(device.rmsd, host.rmsd);
                if !agree {
                    failures.push(format!("{}: device {device:?}, host {host:?}", case.name));
                }
            }
        }
    }
    println!("{}: all cases in {:.1} s", engine.name(), start.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "{}: cases outside the f32 thresholds:\n{}",
        engine.name(),
        failures.join("\n")
    );
}

#[test]
fn every_golden_case_matches_c_on_wgpu_fused() {
    every_golden_case(Engine::Wgpu { fusion: true });
}

#[test]
fn every_golden_case_matches_c_on_wgpu_unfused() {
    every_golden_case(Engine::Wgpu { fusion: false });
}
