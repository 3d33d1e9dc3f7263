//! Image parity with the C program on every golden case, on the f32 CPU engine.
//!
//! In a process of its own (`common::own_process`): burn fixes a device's float dtype per
//! process, so f32 and f64 renders must not share one. Thresholds (f32 engines): correlation
//! ≥ 0.999, sum within 1 %.

use crate::common;

use nanobragg::cli::{parse_args, Parsed};
use nanobragg::config::HklSource;
use nanobragg::engine::{Engine, Precision};
use nanobragg::setup::Experiment;
use nanobragg::simulate::RenderOptions;

#[test]
fn every_golden_case_matches_c_in_single_precision() {
    if !crate::common::own_process(module_path!(), "every_golden_case_matches_c_in_single_precision") {
        return;
    }
    let Some(dir) = common::golden_dir() else { return };
    let engine = Engine::Cpu {
        precision: Precision::F32,
    };
    let mut failures = Vec::new();
    for case in common::cases(&dir) {
        let Parsed::Run(mut cfg, _) = parse_args(&case.args).unwrap() else {
            panic!()
        };
        if cfg.crystal.hkl == HklSource::FdumpIfPresent {
            cfg.crystal.hkl = HklSource::None;
        }
        let exp = Experiment::new(&cfg).unwrap();
        let image = engine.render(&exp, &RenderOptions::default()).unwrap();
        let corr = common::correlation(&image.data, &case.image);
        let ratio = common::sum_ratio(&image.data, &case.image);
        println!("{:<36} {:>12.8} {:>12.8}", case.name, corr, ratio);
        if !(corr >= 0.999 && (ratio - 1.0).abs() <= 1e-2) {
            failures.push(format!("{}: correlation {corr}, sum ratio {ratio}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "cases outside the f32 thresholds:\n{}",
        failures.join("\n")
    );
}
