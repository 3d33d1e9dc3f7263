//! The statistics the binary prints (solid angle, max_I and where, mean, rms, rmsd, int-file
//! scale) against the lines the C program printed for every golden case (its `.log` files,
//! `%g` with 6 significant digits), both as reduced on the host from the float image and as
//! reduced on a device from the image tensor (`Statistics::of_tensor`, what the engines that
//! keep the image on their device print).

use crate::common;

use burn::backend::ndarray::NdArray;
use burn::tensor::{Tensor, TensorData};
use nanobragg::config::HklSource;
use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::render::output::{int_scale, Statistics};
use nanobragg::render::RenderOptions;

/// The numbers after `key` on the first line starting with `key`.
fn numbers_after(log: &str, key: &str) -> Vec<f64> {
    let line = log
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no line {key}"));
    line[key.len()..]
        .split(|c: char| c.is_whitespace() || c == '(' || c == '%')
        .filter_map(|t| t.parse::<f64>().ok())
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    // C printed 6 significant digits
    (a - b).abs() <= 1e-5 * b.abs().max(1e-30) + 1e-12
}

#[test]
fn printed_statistics_match_c() {
    let Some(dir) = common::golden_dir() else { return };
    // f64 on the CPU device before the engine's first render (which keeps it)
    let cpu = common::f64_device();
    for case in common::cases(&dir) {
        let log = &case.c_stdout;
        let Parsed::Run(mut cfg, _) = parse_args(&case.args).unwrap() else {
            panic!()
        };
        if cfg.crystal.hkl == HklSource::FdumpIfPresent {
            cfg.crystal.hkl = HklSource::None;
        }
        let exp = Experiment::new(&cfg).unwrap();
        let image = Engine::default().render(&exp, &RenderOptions::default()).unwrap();
        let host = Statistics::new(&exp, &image);
        let values: Vec<f64> = image.data.iter().map(|&v| f64::from(v)).collect();
        let tensor =
            Tensor::<NdArray<f64>, 2>::from_data(TensorData::new(values, [image.spixels, image.fpixels]), &cpu);
        let device = Statistics::of_tensor(&exp, tensor).unwrap();
        for (stats, how) in [(host, "host"), (device, "device")] {
            let name = &format!("{} ({how})", case.name);

            let sr = numbers_after(log, "solid angle subtended by detector =")[0];
            assert!(close(image.omega_sum / exp.steps as f64, sr), "{name}: solid angle");
            let max = numbers_after(log, "max_I =");
            assert!(
                close(stats.max_i, max[0]),
                "{name}: max_I {} vs {}",
                stats.max_i,
                max[0]
            );
            assert!(
                close(stats.max_at.0, max[1]) && close(stats.max_at.1, max[2]),
                "{name}: max_I position"
            );
            let m = numbers_after(log, "mean=");
            // "mean= M rms= R rmsd= D": the numbers in order
            assert!(close(stats.mean, m[0]), "{name}: mean {} vs {}", stats.mean, m[0]);
            assert!(close(stats.rms, m[1]), "{name}: rms");
            assert!(close(stats.rmsd, m[2]), "{name}: rmsd {} vs {}", stats.rmsd, m[2]);
            let scale = numbers_after(log, "intfile_scale =")[0];
            assert!(
                close(int_scale(cfg.output.scale, &stats), scale),
                "{name}: intfile_scale"
            );
        }
    }
}
