//! The scalar per-pixel trace (a literal transcription of C's loop on the host) against the
//! tensor engine: the traced value must equal the rendered pixel, for configurations that
//! exercise every stage.

use nanobragg::config::HklSource;
use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::experiment::Experiment;
use nanobragg::render::trace::trace_pixel;
use nanobragg::render::RenderOptions;

fn experiment(args: &str) -> Experiment {
    let args: Vec<&str> = args.split_whitespace().collect();
    let Parsed::Run(mut cfg, _) = parse_args(&args).unwrap() else {
        panic!()
    };
    if cfg.crystal.hkl == HklSource::FdumpIfPresent {
        cfg.crystal.hkl = HklSource::None;
    }
    Experiment::new(&cfg).unwrap()
}

const COMMON: &str = "-default_F 100 -lambda 6.2 -distance 80 -pixel 0.1 -detpixels 48";

#[test]
fn trace_equals_render_for_many_configurations() {
    let configs = [
        "-cell 100 100 100 90 90 90 -N 5",
        "-cell 70 80 90 75 85 95 -misset 10 20 30 -N 4 -oversample 2 -polar 0.7",
        "-cell 100 100 100 90 90 90 -N 5 -mosaic 1 -mosaic_dom 4 -phi 5 -osc 3 -phisteps 3 -xds",
        "-cell 100 100 100 90 90 90 -N 5 -divergence 2 -divsteps 3 -dispersion 2 -dispsteps 2 -dmin 30",
        "-cell 100 100 100 90 90 90 -N 5 -detector_abs 200 -detector_thick 100 -thicksteps 3 -curved_det",
        "-cell 100 100 100 90 90 90 -N 5 -round_xtal -water 20 -detector_rotx 4 -twotheta 8",
        "-cell 100 100 100 90 90 90 -N 5 -gauss_xtal -fudge 0.5 -point_pixel -nopolar",
        "-cell 100 100 100 90 90 90 -N 5 -tophat_spots -oversample 2 -oversample_omega -oversample_polar -polar 0.5",
        "-cell 100 100 100 90 90 90 -N 5 -detector_thick 50 -oversample 2 -oversample_thick -dials",
    ];
    for cfg in configs {
        let exp = experiment(&format!("{COMMON} {cfg}"));
        let image = Engine::default().render(&exp, &RenderOptions::default()).unwrap();
        for (f, s) in [(0, 0), (24, 24), (31, 17), (47, 5), (10, 40)] {
            let t = trace_pixel(&exp, f, s).unwrap();
            let got = image.data[s * image.fpixels + f] as f64;
            let tol = 1e-5 * t.value.abs() + 1e-30;
            assert!(
                (got - t.value).abs() <= tol,
                "{cfg} pixel ({f},{s}): image {got}, trace {}",
                t.value
            );
        }
    }
}
