//! Refinement through the detector's response, `M = PSF_w(I + s·B)`: the objective's gradient
//! over simulator, PSF and background components against central differences, and recovery of
//! a perturbed PSF FWHM and background scale from an image made as the C suite makes one
//! (Poisson counts of spots plus background, spread by `noisify`'s PSF).

use super::common;

use burn::backend::ndarray::NdArray;
use burn::backend::Autodiff;
use common::f64_device as dev;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::refine::{
    DetectorResponse, ImageObjective, Lbfgs, Loss, Objective, Optimizer, PsfResponse, ResponseComponent, Selection,
};
use nanobragg::render::detector::{apply_psf, Psf, PsfShape};
use nanobragg::render::noise::PoissonNoise;
use nanobragg::{Experiment, SimConfig};

type Ad = Autodiff<NdArray<f64>>;

/// `refine.rs`'s crystal on 128² pixels of 0.4 mm, with a Gaussian PSF of 600 µm (1.5 pixels)
/// rendered within 4 pixels.
const TRUTH: &str = "-default_F 100 -cell 30 35 40 90 90 90 -misset 10 20 30 -lambda 1.0 -N 5 -gauss_xtal \
    -distance 100 -pixel 0.4 -detpixels 128 -mosaic 0.3 -mosaic_dom 4 -oversample 1 \
    -psf gauss -psf_fwhm 600 -psf_radius 4";

const SIDE: usize = 128;

fn config() -> (SimConfig, Experiment) {
    common::setup_as_given(TRUTH)
}

/// Water's amorphous scattering on the same detector (`nonbragg`), scaled to a mean of 2
/// photons per pixel.
fn background() -> Vec<f64> {
    let root = env!("CARGO_MANIFEST_DIR");
    let flags =
        format!("-stol {root}/fixtures/stol/water.stol -lambda 1.0 -distance 100 -pixel 0.4 -detpixels 128 -thick 0.1");
    let args: Vec<String> = flags.split_whitespace().map(String::from).collect();
    let (w, h, pixels) = nanobragg::app::nonbragg::render_image(&args).unwrap();
    assert_eq!((w, h), (SIDE, SIDE));
    let mean = pixels.iter().map(|&v| v as f64).sum::<f64>() / pixels.len() as f64;
    assert!(mean > 0.0);
    pixels.iter().map(|&v| 2.0 * v as f64 / mean).collect()
}

/// What the detector counts at the truth: Poisson(I + B) photons, spread by `noisify`'s PSF.
fn observed(cfg: &SimConfig, exp: &Experiment, bg: &[f64], seed: i64) -> Vec<f32> {
    let mut truth = ImageObjective::<Ad>::new(cfg, exp, Selection::default(), &[], Loss::default(), &dev());
    let clean = truth.image(&[]).unwrap().data;
    let mut noise = PoissonNoise::new(seed);
    let counts: Vec<f32> = clean
        .iter()
        .zip(bg)
        .map(|(&i, &b)| noise.poisson(i + b as f32))
        .collect();
    let psf = Psf {
        shape: PsfShape::Gauss,
        fwhm_px: 1.5,
        radius_px: 4,
    };
    apply_psf(&counts, SIDE, SIDE, &psf).0
}

/// The objective over `labels` (simulator components, then the response's), the PSF and
/// background of the flags and `bg`.
fn objective<'a>(
    cfg: &'a SimConfig,
    exp: &'a Experiment,
    obs: &'a [f32],
    bg: &[f64],
    labels: &[&str],
) -> ImageObjective<'a, Ad> {
    let (response, params): (Vec<_>, Vec<_>) = labels.iter().partition(|l| ResponseComponent::named(l).is_some());
    let mut f = ImageObjective::<Ad>::new(cfg, exp, Selection::default(), obs, Loss::default(), &dev());
    f.selection = Selection::named(&params, &f.base).unwrap();
    let components: Vec<_> = response.iter().filter_map(|l| ResponseComponent::named(l)).collect();
    f.response = DetectorResponse {
        psf: PsfResponse::from_config(cfg, exp, obs),
        background: Some(bg.to_vec()),
        ..DetectorResponse::default()
    }
    .refining(&components)
    .unwrap();
    f
}

#[test]
fn the_flags_psf_and_its_automatic_radius() {
    let (cfg, exp) = config();
    let psf = PsfResponse::from_config(&cfg, &exp, &[]).unwrap();
    assert_eq!((psf.shape, psf.radius_px), (PsfShape::Gauss, 4));
    assert!((psf.fwhm - 600e-6).abs() < 1e-15 && (psf.pixel - 0.4e-3).abs() < 1e-15);
    // radius 0: noisify's radius for the brightest pixel, the one it prints
    let mut auto = cfg.clone();
    auto.output.detector.as_mut().unwrap().psf_radius = 0;
    let bright = [0.0f32, 900.0, 3.0];
    let want = Psf {
        shape: PsfShape::Gauss,
        fwhm_px: 1.5,
        radius_px: 0,
    }
    .image_radius(900.0);
    let got = PsfResponse::from_config(&auto, &exp, &bright).unwrap();
    assert_eq!(got.radius_px as f64, want);
    // without -psf there is none, and refining it is refused naming the component
    let plain = config_without_psf();
    assert!(PsfResponse::from_config(&plain, &exp, &bright).is_none());
    let err = DetectorResponse::default()
        .refining(&[ResponseComponent::PsfFwhm])
        .unwrap_err()
        .to_string();
    assert!(err.contains("psf_fwhm") && err.contains("-psf"), "{err}");
    let err = DetectorResponse::default()
        .refining(&[ResponseComponent::BackgroundScale])
        .unwrap_err()
        .to_string();
    assert!(err.contains("background_scale"), "{err}");
}

fn config_without_psf() -> SimConfig {
    let flags = TRUTH.replace("-psf gauss -psf_fwhm 600 -psf_radius 4", "");
    let args: Vec<&str> = flags.split_whitespace().collect();
    let Parsed::Run(cfg, _) = parse_args(&args).unwrap() else {
        panic!()
    };
    *cfg
}

/// The model at the truth is noisify's PSF applied to the noiseless image plus background
/// (noisify sums in single precision: agreement to its rounding).
#[test]
fn the_model_is_noisify_s_psf_of_the_image_and_background() {
    let (cfg, exp) = config();
    let bg = background();
    let obs = vec![0.0f32; SIDE * SIDE];
    let mut f = objective(&cfg, &exp, &obs, &bg, &["psf_fwhm", "background_scale"]);
    let x = f.response.read();
    assert!((x[0] - 600f64.ln()).abs() < 1e-12 && x[1].abs() < 1e-15);
    let model = f.model(&x).unwrap();
    let clean = f.image(&[]).unwrap().data;
    let sum: Vec<f32> = clean.iter().zip(&bg).map(|(&i, &b)| i + b as f32).collect();
    let psf = Psf {
        shape: PsfShape::Gauss,
        fwhm_px: 1.5,
        radius_px: 4,
    };
    let (want, _) = apply_psf(&sum, SIDE, SIDE, &psf);
    for (p, (m, w)) in model.iter().zip(&want).enumerate() {
        assert!(
            (m - *w as f64).abs() <= 1e-5 * (*w as f64).abs().max(1.0),
            "pixel {p}: {m} vs {w}"
        );
    }
}

/// ∂L/∂x over simulator components (through the PSF's adjoint), the PSF's FWHM and the
/// background's scale, against central differences of the loss. Steps 1e-3 x units; the
/// tolerance is `refine.rs`'s (the simulated image is f32, whose rounding makes the quotient of
/// the simulator's components noisy at ~1 loss unit per x unit); the response's components
/// leave the image unchanged, so theirs are smooth and held to 1e-4.
#[test]
fn response_gradient_matches_central_differences() {
    let (cfg, exp) = config();
    let bg = background();
    let obs = observed(&cfg, &exp, &bg, 5);
    let labels = ["distance", "Xbeam", "cell_a", "fluence", "psf_fwhm", "background_scale"];
    let mut f = objective(&cfg, &exp, &obs, &bg, &labels);
    f.response.psf.as_mut().unwrap().fwhm = 800e-6;
    f.response.background_scale = 0.7;
    let mut x0 = f.selection.read(&f.base).unwrap();
    x0.extend(f.response.read());
    x0[0] += 0.5; // distance, mm
    x0[2] *= 1.005; // cell_a, Å
    assert_eq!(f.dim(), labels.len());
    let (_, g) = f.value_grad(&x0).unwrap();
    for i in 0..x0.len() {
        let fd = common::central_difference(|x| f.value(x).unwrap(), &x0, i, 1e-3);
        let tol = match i >= 4 {
            true => 1e-4 * fd.abs() + 1e-3,
            false => 1e-3 * fd.abs() + 5.0,
        };
        assert!(
            (g[i] - fd).abs() <= tol,
            "{}: gradient {} vs central difference {fd}",
            labels[i],
            g[i]
        );
    }
}

/// L-BFGS from a PSF 1.5× too wide, a background at half its scale and the detector 1 mm off
/// recovers all three from a noisy image: each within 5 standard errors of the truth, the
/// errors from the loss's curvature at the optimum (`H = ∂²L/∂x²` by central differences of
/// the gradient, `σ_i = √(H⁻¹)_ii`; the PSF spreads each count over its neighbours, so the
/// counts vary less than Poisson counts and this σ overstates the error); and the fit's loss
/// may not be worse than the truth's. The start is tens to hundreds of σ away.
#[test]
fn lbfgs_recovers_psf_fwhm_and_background_scale() {
    let (cfg, exp) = config();
    let bg = background();
    let obs = observed(&cfg, &exp, &bg, 1);
    let labels = ["distance", "psf_fwhm", "background_scale"];
    let mut f = objective(&cfg, &exp, &obs, &bg, &labels);
    let mut truth = f.selection.read(&f.base).unwrap();
    truth.extend(f.response.read());
    let truth_loss = f.value(&truth).unwrap();
    let x0 = vec![truth[0] + 1.0, truth[1] + 1.5f64.ln(), truth[2] + 0.5f64.ln()];
    let mut opt = Lbfgs {
        max_iterations: 60,
        ..Lbfgs::default()
    };
    let outcome = opt.minimize(&mut f, &x0, &mut |_, _| {}).unwrap();
    let x = &outcome.x;
    assert!(
        outcome.loss <= truth_loss + 0.5,
        "loss {} against the truth's {truth_loss}",
        outcome.loss
    );
    let sigma = standard_errors(&mut f, x);
    for i in 0..3 {
        let (err, start) = ((x[i] - truth[i]) / sigma[i], (x0[i] - truth[i]) / sigma[i]);
        eprintln!(
            "{}: refined {} truth {} σ {} err/σ {err:.2} start/σ {start:.1}",
            labels[i], x[i], truth[i], sigma[i]
        );
        assert!(
            err.abs() < 5.0,
            "{}: {} for {}, σ {}",
            labels[i],
            x[i],
            truth[i],
            sigma[i]
        );
        assert!(start.abs() > 20.0, "{}: the start must be far", labels[i]);
    }
}

/// √(H⁻¹)_ii of the loss at `x` (3 components), `H` by central differences of the gradient.
fn standard_errors(f: &mut ImageObjective<'_, Ad>, x: &[f64]) -> Vec<f64> {
    let h = 1e-3;
    let mut hess = [[0.0; 3]; 3];
    for j in 0..3 {
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[j] += h;
        xm[j] -= h;
        let (gp, gm) = (f.value_grad(&xp).unwrap().1, f.value_grad(&xm).unwrap().1);
        for i in 0..3 {
            hess[i][j] = (gp[i] - gm[i]) / (2.0 * h);
        }
    }
    let sym = |i: usize, j: usize| 0.5 * (hess[i][j] + hess[j][i]);
    let m: [[f64; 3]; 3] = std::array::from_fn(|i| std::array::from_fn(|j| sym(i, j)));
    let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    assert!(det > 0.0, "the loss must be convex at the optimum: det H = {det}");
    let cofactor = |i: usize| {
        let (a, b) = ((i + 1) % 3, (i + 2) % 3);
        m[a][a] * m[b][b] - m[a][b] * m[b][a]
    };
    (0..3).map(|i| (cofactor(i) / det).sqrt()).collect()
}

/// With `-stol` among the flags, the response's background is the image `nonbragg` renders for
/// the same sample and detector (the one `nanobragg` adds), and the flags' PSF comes with it.
#[test]
fn the_flags_background_is_nonbragg_s_image() {
    let root = env!("CARGO_MANIFEST_DIR");
    let table = format!("{root}/fixtures/stol/water.stol");
    let flags = format!("{TRUTH} -stol {table} -thick 0.05");
    let args: Vec<&str> = flags.split_whitespace().collect();
    let Parsed::Run(cfg, _) = parse_args(&args).unwrap() else {
        panic!()
    };
    let exp = Experiment::new(&cfg).unwrap();
    let response = DetectorResponse::from_config(&cfg, &exp, &[]).unwrap();
    assert_eq!(response.psf.unwrap().radius_px, 4);
    // nanobragg's MOSFLM beam centre, (51.2 + 0.4)/2 + 0.2 mm, in nonBragg's convention
    let water =
        format!("-stol {table} -thick 0.05 -lambda 1.0 -distance 100 -pixel 0.4 -detpixels 128 -Xbeam 26 -Ybeam 26");
    let water: Vec<String> = water.split_whitespace().map(String::from).collect();
    let (_, _, want) = nanobragg::app::nonbragg::render_image(&water).unwrap();
    let got = response.background.unwrap();
    assert_eq!(got.len(), want.len());
    for (p, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(*g, *w as f64, "pixel {p}");
    }
    assert!(DetectorResponse::from_config(&config().0, &config().1, &[])
        .unwrap()
        .background
        .is_none());
}
