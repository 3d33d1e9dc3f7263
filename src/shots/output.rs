//! A shot's output files: the outputs a classic run of the same flags writes, named from the
//! prefix and the shot index, written with the binary's writers (each atomically).
//!
//! | output (flag)            | file                         |
//! |--------------------------|------------------------------|
//! | float image (`-floatfile`) | `{prefix}{index:06}.bin`     |
//! | SMV int image (`-intfile`) | `{prefix}{index:06}.img`     |
//! | SMV noise image (`-noisefile`, on unless `-nonoise`) | `{prefix}{index:06}_noise.img` |
//! | PGM (`-pgmfile`, on unless `-nopgm`) | `{prefix}{index:06}.pgm` |
//! | PNG preview (`-pngfile`)   | `{prefix}{index:06}.png`     |
//! | NumPy array (`-npyfile`)   | `{prefix}{index:06}.npy`     |
//!
//! File names given to those flags only switch the optional outputs on; the names come from
//! the prefix.

use crate::config::OutputConfig;
use crate::error::Result;
use crate::io::{npy::write_npy_f32, pgm::write_pgm, png::write_png_preview, raw::write_float_image, smv::write_smv};
use crate::output::{int_pixels, int_scale, pgm_pixels, pgm_scale, smv_fields, NoisePixels, Statistics};
use crate::setup::Experiment;
use crate::simulate::Image;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The base name of shot `index`: `{prefix}{index:06}` (more digits past 999999).
pub fn shot_stem(prefix: &str, index: usize) -> String {
    format!("{prefix}{index:06}")
}

/// The outputs `out` asks for, as (kind, path) for shot `index`.
pub fn output_files(prefix: &str, index: usize, out: &OutputConfig) -> Vec<(&'static str, PathBuf)> {
    let stem = shot_stem(prefix, index);
    let name = |suffix: &str| PathBuf::from(format!("{stem}{suffix}"));
    let mut files = vec![("float", name(".bin")), ("int", name(".img"))];
    if out.noisefile.is_some() {
        files.push(("noise", name("_noise.img")));
    }
    if out.pgmfile.is_some() {
        files.push(("pgm", name(".pgm")));
    }
    if out.pngfile.is_some() {
        files.push(("png", name(".png")));
    }
    if out.npyfile.is_some() {
        files.push(("npy", name(".npy")));
    }
    files
}

/// Writes shot `index`'s outputs as a classic run would (same scales, same noise for the same
/// `-seed`) and returns the files written and the statistics C prints, as JSON: `max_I`,
/// `max_I_at_m` (fast, slow position in m), `mean`, `rms`, `rmsd`, `rendered_pixels`,
/// `intfile_scale`, `solid_angle_sr`, and where written `pgm_scale`, `noise_photons`,
/// `noise_overloads`.
pub fn write_shot(
    prefix: &str,
    index: usize,
    out: &OutputConfig,
    exp: &Experiment,
    image: &Image,
) -> Result<(Vec<(&'static str, PathBuf)>, Value)> {
    let files = output_files(prefix, index, out);
    let stats = Statistics::of(exp, image);
    let scale = int_scale(out.scale, &stats);
    let fields = smv_fields(exp);
    let mut extra = serde_json::Map::new();
    for (kind, path) in &files {
        match *kind {
            "float" => write_float_image(path, &image.data)?,
            "int" => write_smv(path, &fields, int_pixels(exp, image, scale, out.adc))?,
            "noise" => {
                // the caller always sets a seed in shot runs; C's clock seed otherwise
                let seed = out.seed.unwrap_or_else(crate::setup::crystal::time_seed);
                let mut noisy = NoisePixels::new(exp, image, seed, out.adc);
                write_smv(path, &fields, &mut noisy)?;
                extra.insert("noise_photons".into(), json!(noisy.photons));
                extra.insert("noise_overloads".into(), json!(noisy.overloads));
            }
            "pgm" => {
                let s = pgm_scale(out.pgmscale, scale, &stats);
                extra.insert("pgm_scale".into(), json!(s));
                write_pgm(path, image.fpixels, image.spixels, s, pgm_pixels(exp, image, s))?;
            }
            "png" => write_png_preview(path, image.fpixels, image.spixels, &image.data)?,
            "npy" => write_npy_f32(path, &[image.spixels, image.fpixels], &image.data)?,
            other => unreachable!("unknown output kind {other}"),
        }
    }
    let mut s = json!({
        "max_I": stats.max_i,
        "max_I_at_m": [stats.max_at.0, stats.max_at.1],
        "mean": stats.mean,
        "rms": stats.rms,
        "rmsd": stats.rmsd,
        "rendered_pixels": stats.rendered,
        "intfile_scale": scale,
        "solid_angle_sr": image.omega_sum / exp.steps.max(1) as f64,
    });
    if let Value::Object(m) = &mut s {
        m.extend(extra);
    }
    Ok((files, s))
}
