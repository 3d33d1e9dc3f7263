//! SMV, CBF and NeXus files of an image, written as the binary writes them: integer counts
//! scaled by the flags' `-scale` (else C's automatic scale from the image's statistics) with
//! the flags' `-adc` offset, and the geometry of the simulator's detector in the headers.

use nanobragg::io::{cbf::write_cbf_from, smv::write_smv};
use nanobragg::render::nexus::write_nexus_image;
use nanobragg::render::output::{cbf_header, int_counts, int_pixels, int_scale, smv_fields, Statistics};
use nanobragg::render::Image;
use nanobragg::{Experiment, Result, SimConfig};
use std::path::Path;

/// Which file.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    Smv,
    Cbf,
    Nexus,
}

/// Write `data` (photons per pixel, the detector's size) as `format` at `path`; returns the
/// scale of the integer counts.
pub fn write(format: Format, path: &Path, cfg: &SimConfig, exp: &Experiment, data: Vec<f32>) -> Result<f64> {
    let d = &exp.detector;
    let image = Image {
        fpixels: d.fpixels,
        spixels: d.spixels,
        data,
        omega_sum: 0.0,
        interpolation_fell_back: false,
        statistics: None,
    };
    let out = &cfg.output;
    let scale = int_scale(out.scale, &Statistics::new(exp, &image));
    match format {
        Format::Smv => write_smv(path, &smv_fields(exp), int_pixels(exp, &image, scale, out.adc))?,
        Format::Cbf => {
            let counts = int_counts(exp, &image, scale, out.adc);
            write_cbf_from(path, &cbf_header(exp), counts, d.fpixels, d.spixels)?
        }
        Format::Nexus => write_nexus_image(path, exp, int_counts(exp, &image, scale, out.adc), &image.data)?,
    }
    Ok(scale)
}
