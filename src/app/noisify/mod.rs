//! The `noisify` program: the C suite's detector model applied to a float image. It reads a
//! raw float image (photons/pixel, e.g. `nanobragg -floatfile`), writes the noiseless
//! integer image, a PGM preview and the noisy integer image, and prints C's log.
//!
//! The steps themselves are [`crate::render::detector`]; this module reads the flags, works out
//! the image's size, prints and writes.

pub mod flags;

use crate::app::console::Console;
use crate::base::cfmt::fmt_g;
use crate::base::error::{Error, Result};
use crate::io::smv::{pad_header, write_smv_block, SmvPixels};
use crate::render::detector::{
    adu_pixels, apply_psf, noiseless_photons, noisy_photons, Counts, PixelBits, Psf, PsfReport,
};
use crate::render::noise::Deviates;
use flags::{NoisifyArgs, Parsed};
use std::path::Path;

type Out = Console<std::io::Stdout>;

/// Runs `noisify` on `args` (without the program name); returns the exit status: 0, or 9 after
/// printing `noisify: error: …` to standard error.
pub fn main(args: &[String]) -> u8 {
    crate::app::console::exit_status("noisify", &mut Console::stdout(), |con| run(args, con))
}

/// The detector's size and header values, after the flags, the `-header` file and the input's
/// length have been reconciled as C does.
struct Frame {
    width: usize,
    height: usize,
    /// Pixel size, distance, detector size and beam centre (m).
    pixel: f64,
    distance: f64,
    detsize: (f64, f64),
    beam: (f64, f64),
    /// The `-header` file's header block, copied to the outputs.
    header: Option<Vec<u8>>,
}

fn run(args: &[String], con: &mut Out) -> Result<()> {
    let a = match flags::parse(args)? {
        Parsed::Help => {
            write!(con, "{}", flags::USAGE)?;
            return Ok(());
        }
        Parsed::Run(a) => *a,
    };
    let mut a = a;
    // one clock reading, as C's `seed = -time()`
    a.seed = Some(seed_of(&a));
    writeln!(con, "noisify - add noise to pixels - James Holton 3-19-16")?;
    let Some(input) = a.input.clone() else {
        write!(con, "{}", flags::USAGE)?;
        return Err(Error::Config("no input image: give -floatfile FILE".into()));
    };
    crate::base::threads::apply_process_wide(crate::base::threads::resolve(a.threads)?);
    let header = read_header(&a, con)?;
    let image = crate::io::raw::read_float_image(&input, None)?;
    let frame = frame(&a, header, image.len(), &input, con)?;
    writeln!(con, "importing {} pixel intensites: {}", image.len(), input.display())?;
    check_finite(&image, &input)?;
    if !a.noise {
        a.model.calibration = 0.0;
        a.model.readout_adu = 0.0;
        a.model.flicker = 0.0;
    }
    print_settings(&a, &frame, con)?;
    let photons = photon_image(&a, &image, &input, con)?;
    let blurred = match psf_of(&a, &frame).filter(|_| !a.noise) {
        Some(psf) => {
            writeln!(
                con,
                "  applying PSF to noiseless image width = {} pixels",
                fmt_g(psf.fwhm_px)
            )?;
            Some(blur(&photons, &frame, &psf, con)?)
        }
        None => None,
    };
    let counts = adu_pixels(blurred.as_deref().unwrap_or(&photons), &a.model, a.bits, None);
    write_image(&a.intfile, &a, &frame, &counts, true, con)?;
    if !a.nopgm {
        let pgm = &a.pgmfile;
        writeln!(con, "writing {} as 1-byte integers", pgm.display())?;
        let bytes = counts.adu16.iter().map(|&v| v.min(255) as u8);
        crate::io::pgm::write_pgm(pgm, frame.width, frame.height, 1.0, bytes)?;
    }
    if a.noise {
        noise_image(&a, &frame, &photons, con)?;
    }
    Ok(())
}

/// `-header FILE`: its header block, announced as C does.
fn read_header(a: &NoisifyArgs, con: &mut Out) -> Result<Option<(crate::io::smv::SmvHeader, Vec<u8>)>> {
    let Some(path) = &a.header else {
        return Ok(None);
    };
    writeln!(con, "taking header from {}", path.display())?;
    use std::io::Read;
    let header = crate::io::smv::read_smv_header(path)?;
    let mut block = Vec::with_capacity(header.header_bytes);
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    file.take(header.header_bytes as u64)
        .read_to_end(&mut block)
        .map_err(|e| Error::io(path, e))?;
    writeln!(con, "reading {}", path.display())?;
    let wants = match a.bits {
        PixelBits::U16 => "unsigned_short",
        PixelBits::U32 => "long_integer",
    };
    match header.string_of("TYPE") {
        Some(t) if t != wants => Err(Error::flag(
            "-header",
            format!(
                "{} declares TYPE={t}, but -bits asks for {wants} pixels",
                path.display()
            ),
        )),
        _ => Ok(Some((header, block))),
    }
}

/// The image size and header geometry: `-header` values win over flags, a missing size is
/// guessed from the number of values as C does, and the file must hold exactly the image.
fn frame(
    a: &NoisifyArgs,
    header: Option<(crate::io::smv::SmvHeader, Vec<u8>)>,
    values: usize,
    input: &Path,
    con: &mut Out,
) -> Result<Frame> {
    let (mut width, mut height) = a.pixels;
    let (mut pixel, mut distance, mut beam) = (a.pixel, a.distance, a.beam);
    let mut block = None;
    if let Some((h, bytes)) = header {
        let size = |k: &str| h.value_of(k).filter(|v| *v >= 1.0).map(|v| v as usize);
        let (Some(w), Some(hgt)) = (size("SIZE1"), size("SIZE2")) else {
            return Err(Error::flag("-header", "the header has no SIZE1 and SIZE2"));
        };
        (width, height) = (w, hgt);
        pixel = h.value_of("PIXEL_SIZE").map_or(pixel, |v| v / 1000.0);
        distance = h.value_of("DISTANCE").map_or(distance, |v| v / 1000.0);
        beam.0 = h.value_of("BEAM_CENTER_X").map(|v| v / 1000.0).or(beam.0);
        beam.1 = h
            .value_of("BEAM_CENTER_Y")
            .map(|v| pixel * height as f64 - v / 1000.0)
            .or(beam.1);
        block = Some(bytes);
    }
    if values == 0 {
        return Err(Error::parse(input, None, "the float image is empty"));
    }
    if width == 0 && height == 0 {
        writeln!(con, "WARNING: guessing xy pixel dimensions.")?;
        (width, height) = guess_size(values);
    }
    if height == 0 {
        height = values / width;
    }
    if width == 0 {
        width = values / height;
    }
    if width.checked_mul(height) != Some(values) {
        return Err(Error::parse(
            input,
            None,
            format!("holds {values} values, but the detector is {width}×{height} pixels (-detpixels_x, -detpixels_y)"),
        ));
    }
    let detsize = (pixel * width as f64, pixel * height as f64);
    Ok(Frame {
        width,
        height,
        pixel,
        distance,
        detsize,
        beam: (beam.0.unwrap_or(detsize.0 / 2.0), beam.1.unwrap_or(detsize.1 / 2.0)),
        header: block,
    })
}

/// C's guess of width × height for `n` values: the widest divisor of `n` not above √n.
fn guess_size(n: usize) -> (usize, usize) {
    let mut w = ((n as f64).sqrt() as usize).max(1);
    while !n.is_multiple_of(w) {
        w -= 1;
    }
    (w, n / w)
}

/// Non-finite input values are an error naming the file and the pixel.
fn check_finite(image: &[f32], input: &Path) -> Result<()> {
    match image.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(Error::parse(
            input,
            None,
            format!("value {} (pixel {i}) is not finite", image[i]),
        )),
        None => Ok(()),
    }
}

fn print_settings(a: &NoisifyArgs, f: &Frame, con: &mut Out) -> Result<()> {
    let g = fmt_g;
    writeln!(
        con,
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        g(f.distance),
        g(f.detsize.0),
        g(f.detsize.1),
        g(f.pixel),
        f.width,
        f.height
    )?;
    writeln!(con, "  Xbeam={} Ybeam={}", g(f.beam.0), g(f.beam.1))?;
    if let Some(shape) = a.psf {
        let name = match shape {
            crate::render::detector::PsfShape::Gauss => "Gaussian",
            crate::render::detector::PsfShape::Fiber => "fiber",
        };
        write!(con, "  {name} PSF fwhm = {} um ", g(a.psf_fwhm as f64 * 1e6))?;
        if a.psf_radius == 0 {
            writeln!(con, "  with automatic rendering radius")?;
        }
        writeln!(con, "  with rendering radius: {}", a.psf_radius)?;
    }
    let m = &a.model;
    writeln!(con, "  seed: {}", seed_of(a))?;
    writeln!(con, "  calibration noise seed: {}", a.calib_seed)?;
    writeln!(con, "  calibration_noise = {} %", g(m.calibration * 100.0))?;
    writeln!(con, "  input file scale = {}", g(m.photon_scale))?;
    writeln!(con, "  readout_noise = {} ADU", g(m.readout_adu))?;
    writeln!(con, "  flicker_noise = {} %", g(m.flicker * 100.0))?;
    writeln!(con, "  quantum_gain = {} ADU/photon", g(m.gain))?;
    writeln!(con, "  adc_offset = {} ADU", g(m.adc_offset))?;
    writeln!(con)?;
    Ok(())
}

/// C's seed variable: `-seed n` gives −n, else −(seconds since 1970) as C's `-time()`.
fn seed_of(a: &NoisifyArgs) -> i64 {
    a.seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        -(now.map_or(0, |d| d.as_secs()) as i64)
    })
}

/// The input on the photon scale, with C's warnings and summary line.
fn photon_image(a: &NoisifyArgs, image: &[f32], input: &Path, con: &mut Out) -> Result<Vec<f32>> {
    let mut max = 0.0f64;
    for &v in image {
        max = max.max(v as f64);
        if v < 0.0 {
            writeln!(
                con,
                "WARNING: negative intensity in {}: {}",
                input.display(),
                fmt_g(v as f64)
            )?;
        }
    }
    let m = &a.model;
    let on_scale = max * m.photon_scale * m.fluence * crate::experiment::R_E_SQR;
    writeln!(
        con,
        "maximum value in input file: {} ( {} on photon scale)",
        fmt_g(max),
        fmt_g(on_scale)
    )?;
    Ok(noiseless_photons(image, m))
}

/// The PSF on the pixel grid, when one is asked for and has a width.
fn psf_of(a: &NoisifyArgs, f: &Frame) -> Option<Psf> {
    let shape = a.psf?;
    (a.psf_fwhm > 0.0).then(|| Psf {
        shape,
        fwhm_px: a.psf_fwhm as f64 / f.pixel,
        radius_px: a.psf_radius,
    })
}

/// [`apply_psf`] with C's log of what it decided.
fn blur(photons: &[f32], f: &Frame, psf: &Psf, con: &mut Out) -> Result<Vec<f32>> {
    let (out, report) = apply_psf(photons, f.width, f.height, psf);
    print_psf_report(&report, con)?;
    Ok(out)
}

fn print_psf_report(r: &PsfReport, con: &mut Out) -> Result<()> {
    if let Some(max) = r.max_photons {
        writeln!(con, "  maximum input photon/pixel: {}", fmt_g(max))?;
    }
    if r.no_photons {
        writeln!(con, "WARNING: no photons, PSF skipped")?;
        return Ok(());
    }
    if let Some(radius) = r.auto_radius {
        writeln!(
            con,
            "  auto-selected psf_radius = {} pixels",
            radius.min(i32::MAX as f64) as i64
        )?;
    }
    writeln!(con, "adding back {} lost photons", fmt_g(r.lost_photons))?;
    Ok(())
}

/// The noise pass: flicker, calibration and Poisson noise, the PSF, then read-out noise into
/// the noisy integer image.
fn noise_image(a: &NoisifyArgs, f: &Frame, photons: &[f32], con: &mut Out) -> Result<()> {
    let mut deviates = Deviates::default();
    let (mut seed, mut calib_seed) = (seed_of(a), a.calib_seed);
    let (mut counted, sum) = noisy_photons(photons, &a.model, &mut deviates, &mut seed, &mut calib_seed);
    if let Some(psf) = psf_of(a, f) {
        writeln!(con, "{sum:.0} photons on noise image before PSF")?;
        writeln!(con, "  applying PSF width = {} um", fmt_g(a.psf_fwhm as f64 * 1e6))?;
        counted = blur(&counted, f, &psf, con)?;
    }
    let counts = adu_pixels(&counted, &a.model, a.bits, Some((&mut deviates, &mut seed)));
    writeln!(
        con,
        "{:.0} photons on noise image ({} overloads)",
        counts.photons, counts.overloads
    )?;
    write_image(&a.noisefile, a, f, &counts, false, con)
}

/// Writes one integer image with C's header (or the `-header` file's), announcing it as C.
fn write_image(path: &Path, a: &NoisifyArgs, f: &Frame, c: &Counts, count_pixels: bool, con: &mut Out) -> Result<()> {
    let bytes = match a.bits {
        PixelBits::U16 => 2,
        PixelBits::U32 => 4,
    };
    match count_pixels {
        true => writeln!(
            con,
            "writing {} as {} {bytes}-byte integers",
            path.display(),
            c.adu.len()
        )?,
        false => writeln!(con, "writing {} as {bytes}-byte integers", path.display())?,
    }
    let header = match &f.header {
        Some(block) => block.clone(),
        None => pad_header(&header_text(a, f)),
    };
    match a.bits {
        PixelBits::U16 => write_smv_block(path, &header, SmvPixels::U16(&c.adu16)),
        PixelBits::U32 => write_smv_block(path, &header, SmvPixels::U32(&c.adu)),
    }
}

/// The header C's `noisify` makes up (lengths in mm, wavelength in Å, angles in degrees).
fn header_text(a: &NoisifyArgs, f: &Frame) -> String {
    let g = fmt_g;
    let kind = match a.bits {
        PixelBits::U16 => "unsigned_short",
        PixelBits::U32 => "long_integer",
    };
    format!(
        "{{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE={kind};\n\
         SIZE1={};\nSIZE2={};\nPIXEL_SIZE={};\nDISTANCE={};\n\
         WAVELENGTH={};\nBEAM_CENTER_X={};\nBEAM_CENTER_Y={};\n\
         PHI={};\nOSC_START={};\nOSC_RANGE={};\nDETECTOR_SN=000;\nBEAMLINE=fake;\n}}\x0c",
        f.width,
        f.height,
        g(f.pixel * 1000.0),
        g(f.distance * 1000.0),
        g(a.lambda),
        g(f.beam.0 * 1000.0),
        g((f.detsize.1 - f.beam.1) * 1000.0),
        g(a.phi),
        g(a.phi),
        g(a.osc),
    )
}
