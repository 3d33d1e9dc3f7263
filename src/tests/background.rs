//! The CPU engine's loop sums the amorphous background (`-stol`) beside the Bragg term, sharing
//! each sample's direction, solid angle and polarization factor: its images equal the render
//! with the background rendered on its own and added (`add_amorphous_background`, itself
//! tested against C's `nonBragg` loop), where it folds and where it does not.

use crate::experiment::args::{parse_args, Parsed};
use crate::experiment::Experiment;
use crate::kernel::job::PixelJob;
use crate::kernel::native::{self, folds_background, inputs::Inputs, Real};
use crate::render::amorphous::{add_amorphous_background, BackgroundScene};
use crate::render::{Image, RenderOptions};
use crate::scene::Scene;

/// The experiment of C flags `flags` with `-stol water.stol`, and its background.
fn experiment(flags: &str) -> (Experiment, BackgroundScene) {
    let water = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/stol/water.stol");
    let mut args: Vec<&str> = flags.split_whitespace().collect();
    args.extend(["-stol", water]);
    let Parsed::Run(cfg, _) = parse_args(&args).unwrap() else {
        panic!("no run: {flags}")
    };
    let exp = Experiment::new(&cfg).unwrap();
    let background = BackgroundScene::of_experiment(&exp, &cfg.crystal.amorphous)
        .unwrap()
        .unwrap();
    (exp, background)
}

/// The image in precision `F` with the background folded in (where it folds), and the image
/// with the background rendered apart and added.
fn both<F: Real>(exp: &Experiment, background: &BackgroundScene) -> (Image, Image) {
    let (scene, opts) = (Scene::new(exp), RenderOptions::default());
    let folded = native::render_with_background::<F>(exp, &scene, &opts, background).unwrap();
    let mut apart = native::render::<F>(exp, &scene, &opts).unwrap();
    add_amorphous_background(exp, background, &mut apart[0]);
    (folded.into_iter().next().unwrap(), apart.swap_remove(0))
}

const BASE: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 \
                    -pixel 0.4 -detpixels 37";

/// Configurations the lanes render: sub-pixels, sources of several wavelengths, `-nopolar`,
/// Kahn's factor, the curved detector, point pixels, a tilted detector, a thick sensor,
/// `-oversample_omega`, a region of interest.
const FOLDED: [&str; 8] = [
    "",
    "-oversample 3",
    "-divergence 0.3 -divsteps 3 -dispersion 5 -dispsteps 2 -nopolar",
    "-polar 0.7 -curved_det",
    "-point_pixel -detector_rotx 4 -detector_rotz 3",
    "-detector_thick 100 -detector_abs 200 -detector_thicksteps 3 -oversample 2 -oversample_omega",
    "-roi 3 30 5 20 -twotheta 10",
    "-mosaic 1 -mosaic_domains 4",
];

/// Each pixel of `folded` equals `apart`'s within `ulps` units in the last place of f32 of the
/// larger of it and the background's peak.
fn assert_close(folded: &Image, apart: &Image, ulps: f32, what: &str) {
    let peak = apart.data.iter().fold(0.0f32, |m, &v| m.max(v.abs()));
    assert!(peak > 0.0, "{what}: an empty image");
    for (p, (&f, &a)) in folded.data.iter().zip(&apart.data).enumerate() {
        let tolerance = ulps * f32::EPSILON * a.abs().max(1e-3 * peak);
        assert!((f - a).abs() <= tolerance, "{what}, pixel {p}: {f} folded vs {a} apart");
    }
    assert_eq!(folded.omega_sum, apart.omega_sum, "{what}: Σω");
}

/// The configurations of [`FOLDED`], with spots and without (`-default_F 1e-10`: the image is the
/// background alone, so each pixel compares the background itself).
fn folded_flags() -> impl Iterator<Item = String> {
    FOLDED
        .iter()
        .flat_map(|extra| [format!("{BASE} {extra}"), format!("{BASE} {extra} -default_F 1e-10")])
}

#[test]
fn the_folded_background_is_the_background_added_in_f64() {
    for extra in folded_flags() {
        let extra = extra.as_str();
        let (exp, background) = experiment(extra);
        let inputs = Inputs::<f64>::new(&PixelJob::new(&exp, &Scene::new(&exp)));
        assert!(folds_background(&inputs, &background), "{extra}: the lanes fold it");
        let (folded, apart) = both::<f64>(&exp, &background);
        // the background's f64 value within a few units of f64 of the one apart: its f32
        // rounding, and the sum's, a unit of f32 each at most
        assert_close(&folded, &apart, 2.0, extra);
    }
}

#[test]
fn the_folded_background_is_the_background_added_in_f32() {
    for extra in folded_flags() {
        let extra = extra.as_str();
        let (exp, background) = experiment(extra);
        let (folded, apart) = both::<f32>(&exp, &background);
        // the f32 loop's directions and solid angles carry f32's error into the background
        assert_close(&folded, &apart, 64.0, extra);
    }
}

/// Where the lanes do not render every sample (tricubic structure factors, `-dmin`), the
/// background is rendered apart and added: the same bits.
#[test]
fn where_the_lanes_do_not_fold_the_background_is_added() {
    let hkl = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tiny.hkl");
    for extra in [format!("-hkl {hkl} -interpolate"), "-dmin 5".to_string()] {
        let (exp, background) = experiment(&format!("{BASE} {extra}"));
        let inputs = Inputs::<f64>::new(&PixelJob::new(&exp, &Scene::new(&exp)));
        assert!(!folds_background(&inputs, &background), "{extra}");
        let (folded, apart) = both::<f64>(&exp, &background);
        assert_eq!(folded.data, apart.data, "{extra}");
    }
}
