//! Image parity with the C program on every golden case, on the f64 CPU engine.
//!
//! Thresholds (issue 2): Pearson correlation ≥ 0.9999 and |Σours/ΣC − 1| ≤ 1e-3 per case.

use crate::common;

use nanobragg::config::HklSource;
use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::render::RenderOptions;

#[test]
fn every_golden_case_matches_c() {
    let Some(dir) = common::golden_dir() else { return };
    let cases = common::cases(&dir);
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    println!(
        "{:<36} {:>12} {:>12} {:>12}",
        "case", "correlation", "sum ratio", "max |diff|"
    );
    for case in &cases {
        let Parsed::Run(mut cfg, _) = parse_args(&case.args).unwrap_or_else(|e| panic!("{}: {e}", case.name)) else {
            panic!("{}: help?", case.name)
        };
        // the C images were rendered in empty directories: no Fdump.bin to pick up
        if cfg.crystal.hkl == HklSource::FdumpIfPresent {
            cfg.crystal.hkl = HklSource::None;
        }
        let exp = Experiment::new(&cfg).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let image = Engine::default().render(&exp, &RenderOptions::default()).unwrap();
        assert_eq!(
            (image.fpixels, image.spixels),
            (case.fpixels, case.spixels),
            "{}",
            case.name
        );
        let corr = common::correlation(&image.data, &case.image);
        let ratio = common::sum_ratio(&image.data, &case.image);
        let maxdiff = image
            .data
            .iter()
            .zip(&case.image)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!("{:<36} {:>12.8} {:>12.8} {:>12.4e}", case.name, corr, ratio, maxdiff);
        if !(corr >= 0.9999 && (ratio - 1.0).abs() <= 1e-3) {
            failures.push(format!("{}: correlation {corr}, sum ratio {ratio}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "cases outside the thresholds:\n{}",
        failures.join("\n")
    );
}
