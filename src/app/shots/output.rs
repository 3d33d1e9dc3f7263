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
//! | miniCBF image (`-cbffile`) | `{prefix}{index:06}.cbf`     |
//! | miniCBF noise image (`-cbf_noisefile`) | `{prefix}{index:06}_noise.cbf` |
//! | NeXus stack (`-nexusfile`) | `{prefix}shots.nxs`, one per shard ([`super::nexus`]) |
//!
//! File names given to those flags only switch the optional outputs on; the names come from
//! the prefix.
//!
//! With a detector of several panels (`-geom`, `-detector_expt`) the float image and the NumPy
//! array hold every panel, `[P, slow, fast]`, and the other images are written per panel as
//! `{prefix}{index:06}_{PANEL}.img` and so on, with one int scale for the whole detector and
//! panel k's noise drawn from the shot's seed + k, as a classic multi-panel run writes them
//! ([`write_panel_shot`]).

use crate::base::error::Result;
use crate::config::OutputConfig;
use crate::experiment::Experiment;
use crate::io::{
    cbf::write_cbf, npy::write_npy_f32, pgm::write_pgm, png::write_png_preview, raw::write_float_image, smv::write_smv,
};
use crate::render::output::{
    cbf_header, clip_to_u16, int_counts, int_pixels, int_scale, int_scale_of_max, pgm_pixels, pgm_scale, smv_fields,
    NoisePixels, Statistics,
};
use crate::render::Image;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The base name of shot `index`: `{prefix}{index:06}` (more digits past 999999).
pub fn shot_stem(prefix: &str, index: usize) -> String {
    format!("{prefix}{index:06}")
}

/// The outputs `out` asks for, as (kind, path) for shot `index`.
pub fn output_files(prefix: &str, index: usize, out: &OutputConfig) -> Vec<(&'static str, PathBuf)> {
    files_of_stem(&shot_stem(prefix, index), out)
}

/// The outputs `out` asks for, as (kind, path) with base name `stem`.
fn files_of_stem(stem: &str, out: &OutputConfig) -> Vec<(&'static str, PathBuf)> {
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
    if out.cbffile.is_some() {
        files.push(("cbf", name(".cbf")));
    }
    if out.cbf_noisefile.is_some() {
        files.push(("cbf_noise", name("_noise.cbf")));
    }
    files
}

/// A shot's files (kind, path), its statistics and, with `-nexusfile`, its int32 counts.
pub type ShotWritten = (Vec<(&'static str, PathBuf)>, Value, Option<Vec<i32>>);

/// Writes shot `index`'s outputs as a classic run would (same scales, same noise for the same
/// `-seed`) and returns the files written and the statistics C prints, as JSON: `max_I`,
/// `max_I_at_m` (fast, slow position in m), `mean`, `rms`, `rmsd`, `rendered_pixels`,
/// `intfile_scale`, `solid_angle_sr`, and where written `pgm_scale`, `noise_photons`,
/// `noise_overloads`. The SMV and CBF noise images are one draw. With `-nexusfile` it also
/// returns the counts for the run's NeXus stack (the noise image's when noise is on).
pub fn write_shot(
    prefix: &str,
    index: usize,
    out: &OutputConfig,
    exp: &Experiment,
    image: &Image,
) -> Result<ShotWritten> {
    write_image(
        output_files(prefix, index, out),
        out,
        exp,
        image,
        Statistics::of(exp, image),
    )
}

/// Writes shot `index` of a detector of several panels (`panels`: each panel's file-name part,
/// experiment and image): the float image and NumPy array of every panel `[P, slow, fast]`,
/// the other images per panel with the detector's int scale and seed + k for panel k. The
/// statistics are the detector's (`max_I`, `intfile_scale`) with every panel's under
/// `"panels"`; the NeXus counts are the panels' one after the other.
pub fn write_panel_shot(
    prefix: &str,
    index: usize,
    out: &OutputConfig,
    panels: &[(&str, &Experiment, &Image)],
) -> Result<ShotWritten> {
    let stem = shot_stem(prefix, index);
    // each panel's statistics once: the detector's brightest pixel, then its own line
    let stats: Vec<Statistics> = panels
        .iter()
        .map(|(_, exp, image)| Statistics::of(exp, image))
        .collect();
    let brightest = stats.iter().map(|s| s.max_i).fold(0.0, f64::max);
    let scale = int_scale_of_max(out.scale, brightest);
    let mut files = Vec::new();
    let floats: Vec<f32> = panels
        .iter()
        .flat_map(|(_, _, image)| image.data.iter().copied())
        .collect();
    let float_path = PathBuf::from(format!("{stem}.bin"));
    write_float_image(&float_path, &floats)?;
    files.push(("float", float_path));
    if out.npyfile.is_some() {
        let (_, _, first) = panels[0];
        let npy = PathBuf::from(format!("{stem}.npy"));
        write_npy_f32(&npy, &[panels.len(), first.spixels, first.fpixels], &floats)?;
        files.push(("npy", npy));
    }
    let seed = out.seed.unwrap_or_else(crate::experiment::crystal::time_seed);
    let (mut per_panel, mut nexus) = (Vec::new(), out.nexusfile.as_ref().map(|_| Vec::new()));
    for (k, ((name, exp, image), stats)) in panels.iter().zip(stats).enumerate() {
        let panel_out = OutputConfig {
            scale: Some(scale),
            seed: Some(seed.wrapping_add(k as i64)),
            ..out.clone()
        };
        let panel_files = files_of_stem(&format!("{stem}_{name}"), &panel_out)
            .into_iter()
            .filter(|(kind, _)| !matches!(*kind, "float" | "npy"))
            .collect();
        let (written, stats, counts) = write_image(panel_files, &panel_out, exp, image, stats)?;
        files.extend(written);
        per_panel.push(stats);
        if let (Some(all), Some(c)) = (nexus.as_mut(), counts) {
            all.extend(c);
        }
    }
    let stats = json!({ "max_I": brightest, "intfile_scale": scale, "panels": per_panel });
    Ok((files, stats, nexus))
}

/// Writes `files` (kind, path) of one image whose statistics are `stats` and gives (files,
/// statistics as JSON, NeXus counts) as [`write_shot`] describes.
fn write_image(
    files: Vec<(&'static str, PathBuf)>,
    out: &OutputConfig,
    exp: &Experiment,
    image: &Image,
    stats: Statistics,
) -> Result<ShotWritten> {
    let scale = int_scale(out.scale, &stats);
    let fields = smv_fields(exp);
    let mut extra = serde_json::Map::new();
    // the noise image, drawn once for both noise files (kept whole only when a CBF wants it)
    let mut noisy = NoisePixels::for_output(
        exp,
        image,
        // the caller always sets a seed in shot runs; C's clock seed otherwise
        out.seed.unwrap_or_else(crate::experiment::crystal::time_seed),
        out,
    );
    // a NeXus stack holds the noise image's counts when noise is on (no -nonoise)
    let nexus_noise = out.nexusfile.is_some() && out.noisefile.is_some();
    let noise_counts: Option<Vec<i32>> = (out.cbf_noisefile.is_some() || nexus_noise).then(|| noisy.by_ref().collect());
    for (kind, path) in &files {
        match *kind {
            "float" => write_float_image(path, &image.data)?,
            "int" => write_smv(path, &fields, int_pixels(exp, image, scale, out.adc))?,
            "noise" => match &noise_counts {
                Some(c) => write_smv(path, &fields, c.iter().map(|&c| clip_to_u16(c)))?,
                None => write_smv(path, &fields, noisy.by_ref().map(clip_to_u16))?,
            },
            "pgm" => {
                let s = pgm_scale(out.pgmscale, scale, &stats);
                extra.insert("pgm_scale".into(), json!(s));
                write_pgm(path, image.fpixels, image.spixels, s, pgm_pixels(exp, image, s))?;
            }
            "png" => write_png_preview(path, image.fpixels, image.spixels, &image.data)?,
            "npy" => write_npy_f32(path, &[image.spixels, image.fpixels], &image.data)?,
            "cbf" => {
                let counts: Vec<i32> = int_counts(exp, image, scale, out.adc).collect();
                write_cbf(path, &cbf_header(exp), &counts, image.fpixels, image.spixels)?;
            }
            "cbf_noise" => {
                let counts = noise_counts.as_deref().unwrap_or_default();
                write_cbf(path, &cbf_header(exp), counts, image.fpixels, image.spixels)?;
            }
            other => unreachable!("unknown output kind {other}"),
        }
    }
    if out.noisefile.is_some() || out.cbf_noisefile.is_some() {
        extra.insert("noise_photons".into(), json!(noisy.photons));
        extra.insert("noise_overloads".into(), json!(noisy.overloads));
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
    let nexus_counts = out
        .nexusfile
        .as_ref()
        .map(|_| match noise_counts.filter(|_| nexus_noise) {
            Some(c) => c,
            None => int_counts(exp, image, scale, out.adc).collect(),
        });
    Ok((files, s, nexus_counts))
}
