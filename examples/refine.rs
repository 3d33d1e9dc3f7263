//! Refinement end to end: simulate an "observed" image with Poisson noise from known
//! parameters, start from perturbed ones, and recover them by minimising the Poisson negative
//! log-likelihood with L-BFGS (gradients by autodiff through the simulator), then compare with
//! burn's Adam from the same start. Prints true, start and refined values in CLI units, with
//! the Cramér–Rao standard error of each.
//!
//! `cargo run --release --example refine [-- SEED [stages]]`: `stages` takes the gradients from
//! the tensor stages and burn-autodiff instead of the native loop's reverse pass (the default),
//! to compare their times.

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::refine::uncertainty::{poisson_fisher, standard_errors};
use nanobragg::refine::{optimizer::print_iteration, Adam, ImageObjective, Lbfgs, Loss, Optimizer, Selection};
use nanobragg::render::noise::PoissonNoise;
use nanobragg::{Experiment, SimConfig};
use std::time::Instant;

type Ad = Autodiff<NdArray<f64>>;

/// Orthorhombic cell with misset, 4 mosaic domains, Gaussian spots 4–6 pixels wide, a faint
/// water background; 256² pixels of 0.2 mm at 100 mm.
const TRUTH: &str = "-default_F 100 -cell 30 35 40 90 90 90 -misset 10 20 30 -lambda 1.0 -N 5 -gauss_xtal \
    -distance 100 -pixel 0.2 -detpixels 256 -mosaic 0.3 -mosaic_dom 4 -oversample 1 -water 0.01";

/// Refined components and their perturbations (x units: Å, °, mm, relative fluence).
const START: [(&str, Perturb); 12] = [
    ("cell_a", Perturb::Relative(0.01)),
    ("cell_b", Perturb::Relative(-0.01)),
    ("cell_c", Perturb::Relative(0.01)),
    ("misset_x", Perturb::Add(0.5)),
    ("misset_y", Perturb::Add(-0.5)),
    ("misset_z", Perturb::Add(0.5)),
    ("distance", Perturb::Add(2.0)),
    ("Xbeam", Perturb::Add(0.3)),
    ("Ybeam", Perturb::Add(-0.3)),
    // -gauss_xtal's spot depends on Na·Nb·Nc only: one N is refined, the others fixed
    ("Na", Perturb::Add(1.0)),
    ("mosaic", Perturb::Relative(1.0)),
    ("fluence", Perturb::Relative(0.3)),
];

#[derive(Clone, Copy)]
enum Perturb {
    Add(f64),
    Relative(f64),
}

fn config(flags: &str) -> nanobragg::Result<(SimConfig, Experiment)> {
    let args: Vec<&str> = flags.split_whitespace().collect();
    let Parsed::Run(cfg, _) = parse_args(&args)? else {
        unreachable!("no -h given")
    };
    let exp = Experiment::new(&cfg)?;
    Ok((*cfg, exp))
}

fn main() -> nanobragg::Result<()> {
    let seed: i64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let native = std::env::args().nth(2).as_deref() != Some("stages");
    let device = NdArrayDevice::Cpu;
    burn::tensor::set_default_dtypes::<NdArray<f64>>(&device, burn::tensor::DType::F64, burn::tensor::DType::I64)
        .expect("f64 on the CPU");
    let (cfg, exp) = config(TRUTH)?;
    let labels: Vec<&str> = START.iter().map(|(l, _)| *l).collect();

    let mut truth = ImageObjective::<Ad>::new(&cfg, &exp, Selection::default(), &[], Loss::default(), &device);
    let observed = observe(&mut truth, &exp, seed)?;

    let selection = Selection::named(&labels, &truth.base)?;
    let x_true = selection.read(&truth.base)?;
    let v_true = selection.display(&x_true);
    let v0 = perturbed(&v_true);
    let x0 = selection.x_from_display(&v0);
    let mut objective = ImageObjective::<Ad>::new(&cfg, &exp, selection.clone(), &observed, Loss::default(), &device);
    objective.options.pixel_kernel = native;
    println!(
        "gradients by {}",
        if native {
            "the native reverse pass"
        } else {
            "the tensor stages (burn-autodiff)"
        }
    );

    // L-BFGS: all components at once
    let t = Instant::now();
    let mut lbfgs = Lbfgs {
        max_iterations: 200,
        ..Default::default()
    };
    let out = lbfgs.minimize(&mut objective, &x0, &mut print_iteration)?;
    let lbfgs_time = t.elapsed().as_secs_f64();
    let grad = objective.gradient_passes;
    let loss_true = nanobragg::refine::Objective::value(&mut objective, &x_true)?;

    let (se, corr) = cramer_rao(&mut objective, &selection, &x_true, &v_true)?;

    // burn's Adam from the same start, 200 steps
    let t = Instant::now();
    objective.gradient_passes = 0;
    let mut adam = Adam::<NdArray<f64>>::new(0.1, 200, &device);
    adam.lr_decay = 0.985;
    let adam_out = adam.minimize(&mut objective, &x0, &mut |it, x| {
        if it.iter % 10 == 0 {
            print_iteration(it, x)
        }
    })?;
    let adam_time = t.elapsed().as_secs_f64();

    println!();
    println!(
        "L-BFGS: {} iterations, {grad} gradient passes, {lbfgs_time:.1} s; loss {:.3} (truth {loss_true:.3}, start {:.3})",
        out.history.len() - 1,
        out.loss,
        out.history[0].loss
    );
    println!(
        "Adam:   {} iterations, {adam_time:.1} s; loss {:.3}",
        adam_out.history.len() - 1,
        adam_out.loss
    );
    println!();
    let refined = [selection.display(&out.x), selection.display(&adam_out.x)];
    print_table(&selection, [&v_true, &v0, &refined[0], &refined[1]], &se);
    print_correlations(&selection, &corr);
    Ok(())
}

/// The observed image: the truth's with C's Poisson noise drawn from `seed`.
fn observe(truth: &mut ImageObjective<Ad>, exp: &Experiment, seed: i64) -> nanobragg::Result<Vec<f32>> {
    let clean = truth.image(&[])?.data;
    let mut noise = PoissonNoise::new(seed);
    let observed: Vec<f32> = clean.iter().map(|&v| noise.poisson(v)).collect();
    let photons: f64 = observed.iter().map(|&v| v as f64).sum();
    let max = observed.iter().cloned().fold(0.0f32, f32::max);
    println!(
        "observed: {}x{} pixels, {photons:.3e} photons, max {max} per pixel (noise seed {seed})",
        exp.detector.fpixels, exp.detector.spixels
    );
    Ok(observed)
}

/// The start: each true value (display units) moved by its perturbation in [`START`].
fn perturbed(v_true: &[f64]) -> Vec<f64> {
    v_true
        .iter()
        .zip(&START)
        .map(|(&v, (_, p))| match p {
            Perturb::Add(d) => v + d,
            Perturb::Relative(r) => v * (1.0 + r),
        })
        .collect()
}

/// Cramér–Rao standard errors at the truth (forward differences of the noiseless model), in
/// display units (a log component's σ is relative), and the estimates' correlations.
fn cramer_rao(
    objective: &mut ImageObjective<Ad>,
    selection: &Selection,
    x_true: &[f64],
    v_true: &[f64],
) -> nanobragg::Result<(Vec<f64>, Vec<Vec<f64>>)> {
    let steps: Vec<f64> = selection
        .components
        .iter()
        .map(|c| if c.log { 1e-3 } else { 1e-2 })
        .collect();
    let fisher = poisson_fisher(objective, x_true, &steps, 1e-3)?;
    let (se_x, corr) = standard_errors(&fisher)?;
    let se = selection
        .components
        .iter()
        .zip(&se_x)
        .zip(v_true)
        .map(|((c, s), v)| if c.log { s * v } else { *s })
        .collect();
    Ok((se, corr))
}

/// True, start, L-BFGS and Adam values of each component, with σ and the errors in σ.
fn print_table(selection: &Selection, [v_true, v0, v_lbfgs, v_adam]: [&[f64]; 4], se: &[f64]) {
    println!(
        "{:<10} {:>4} {:>11} {:>11} {:>11} {:>9} {:>7} {:>11} {:>7}",
        "parameter", "unit", "true", "start", "L-BFGS", "σ (CR)", "err/σ", "Adam", "err/σ"
    );
    for (i, c) in selection.components.iter().enumerate() {
        println!(
            "{:<10} {:>4} {:>11.5} {:>11.5} {:>11.5} {:>9.2e} {:>7.2} {:>11.5} {:>7.2}",
            c.label,
            c.unit,
            v_true[i],
            v0[i],
            v_lbfgs[i],
            se[i],
            (v_lbfgs[i] - v_true[i]) / se[i],
            v_adam[i],
            (v_adam[i] - v_true[i]) / se[i]
        );
    }
}

/// The five strongest correlations of the estimates.
fn print_correlations(selection: &Selection, corr: &[Vec<f64>]) {
    println!();
    println!("strongest correlations of the estimates (Cramér–Rao):");
    let mut pairs: Vec<(f64, usize, usize)> = (0..corr.len())
        .flat_map(|i| (0..i).map(move |j| (i, j)))
        .map(|(i, j)| (corr[i][j], i, j))
        .collect();
    pairs.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
    for (r, i, j) in pairs.iter().take(5) {
        println!(
            "  {:>10} ~ {:<10} {r:+.3}",
            selection.components[*i].label, selection.components[*j].label
        );
    }
}
