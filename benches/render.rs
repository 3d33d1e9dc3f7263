//! Render timings on the f64 CPU engine, printed as JSON lines (`cargo bench --bench render`).
//!
//! Each configuration is rendered once cold and three times warm in the same process; the
//! figures in docs/performance.md come from the `nanobragg` binary with `/usr/bin/time`.

use nanobragg::cli::{parse_args, Parsed};
use nanobragg::config::HklSource;
use nanobragg::engine::Engine;
use nanobragg::{Experiment, RenderOptions};
use std::time::Instant;

const LIGHT: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
const HEAVY: &str = "-mosaic 0.5 -mosaic_dom 10 -phisteps 5 -osc 0.5 -oversample 2";

fn main() {
    for (name, extra) in [("light", ""), ("heavy", HEAVY)] {
        for size in [256usize, 512] {
            let args = format!("{LIGHT} {extra} -detpixels {size}");
            let args: Vec<&str> = args.split_whitespace().collect();
            let Ok(Parsed::Run(mut cfg, _)) = parse_args(&args) else {
                panic!("bad bench flags")
            };
            cfg.crystal.hkl = HklSource::None;
            let exp = Experiment::new(&cfg).expect("valid bench configuration");
            let mut times = Vec::new();
            for _ in 0..4 {
                let t = Instant::now();
                Engine::default()
                    .render(&exp, &RenderOptions::default())
                    .expect("render");
                times.push(t.elapsed().as_secs_f64());
            }
            let warm = times[1..].iter().cloned().fold(f64::INFINITY, f64::min);
            println!(
                "{{\"config\":\"{name}\",\"pixels\":{size},\"engine\":\"cpu-f64\",\"cold_s\":{:.4},\"warm_min_s\":{warm:.4}}}",
                times[0]
            );
        }
    }
}
