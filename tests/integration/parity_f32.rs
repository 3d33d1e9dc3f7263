//! Image parity with the C program on every golden case, on the f32 CPU engine: its native
//! loop and its tensor stages.
//!
//! In a process of its own (`common::own_process`): burn fixes a device's float dtype per
//! process, so f32 and f64 renders must not share one. Thresholds (f32 engines): correlation
//! ≥ 0.999, sum within 1 %.

use crate::common;

use nanobragg::config::HklSource;
use nanobragg::engine::{Engine, Precision};
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::render::RenderOptions;

#[test]
fn every_golden_case_matches_c_in_single_precision() {
    if !crate::common::own_process(module_path!(), "every_golden_case_matches_c_in_single_precision") {
        return;
    }
    let Some(dir) = common::golden_dir() else { return };
    let mut failures = Vec::new();
    for (case, fusion) in common::cases(&dir)
        .into_iter()
        .flat_map(|c| [(c.clone(), true), (c, false)])
    {
        let engine = Engine::Cpu {
            precision: Precision::F32,
            fusion,
        };
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
        println!("{:<36} {:<17} {:>12.8} {:>12.8}", case.name, engine.id(), corr, ratio);
        if !(corr >= 0.999 && (ratio - 1.0).abs() <= 1e-2) {
            failures.push(format!(
                "{} ({}): correlation {corr}, sum ratio {ratio}",
                case.name,
                engine.id()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "cases outside the f32 thresholds:\n{}",
        failures.join("\n")
    );
}
