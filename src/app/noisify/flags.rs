//! `noisify`'s command line: C's flags, units and defaults, read from an explicit table of
//! spellings (C matches substrings). Unknown flags, missing or malformed values and impossible
//! settings are errors naming the flag.

use crate::base::error::{Error, Result};
use crate::render::detector::{DetectorModel, PixelBits, PsfShape};
use std::path::PathBuf;

/// Everything one `noisify` run needs, in C's units unless named otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisifyArgs {
    /// The raw float image (`-bin`, `-floatfile`, `-floatimage`, or an argument naming a
    /// `floatimage.bin`).
    pub input: Option<PathBuf>,
    /// An SMV file whose header is copied to the outputs and gives the geometry (`-header`).
    pub header: Option<PathBuf>,
    /// Noiseless integer image (`-intfile`).
    pub intfile: PathBuf,
    /// Noisy integer image (`-noisefile`).
    pub noisefile: PathBuf,
    /// PGM preview of the noiseless image (`-pgmfile`).
    pub pgmfile: PathBuf,
    /// `-nopgm` (wherever it stands): no PGM preview.
    pub nopgm: bool,
    /// `-nonoise`: only the noiseless outputs.
    pub noise: bool,
    /// Width and height (pixels), 0 when not given.
    pub pixels: (usize, usize),
    /// Pixel size (m).
    pub pixel: f64,
    /// Detector distance (m), for the header.
    pub distance: f64,
    /// Detector size (m), used when no pixel count is known.
    pub detsize: (f64, f64),
    /// Beam centre (m), `None`: the detector's centre.
    pub beam: (Option<f64>, Option<f64>),
    /// Wavelength (Å), for the header.
    pub lambda: f64,
    /// Start and width of the oscillation (degrees), for the header.
    pub phi: f64,
    /// Oscillation range (degrees).
    pub osc: f64,
    /// The PSF's form, `None`: no PSF.
    pub psf: Option<PsfShape>,
    /// PSF FWHM (m, a C `float`).
    pub psf_fwhm: f32,
    /// PSF radius (pixels), 0: automatic.
    pub psf_radius: u32,
    /// Noise, gain and offset.
    pub model: DetectorModel,
    /// Pixel type written.
    pub bits: PixelBits,
    /// C's seed variable of the noise (−n for `-seed n`); `None`: −(seconds since 1970).
    pub seed: Option<i64>,
    /// C's seed variable of the calibration error (C's default 123456789, −n for `-calib_seed n`).
    pub calib_seed: i64,
    /// `-nthreads`.
    pub threads: Option<usize>,
}

impl Default for NoisifyArgs {
    fn default() -> Self {
        Self {
            input: None,
            header: None,
            intfile: "intimage.img".into(),
            noisefile: "noiseimage.img".into(),
            pgmfile: "image.pgm".into(),
            nopgm: false,
            noise: true,
            pixels: (0, 0),
            pixel: 0.1e-3,
            distance: 100.0e-3,
            detsize: (102.4e-3, 102.4e-3),
            beam: (None, None),
            lambda: 1.0,
            phi: 0.0,
            osc: 1.0,
            psf: None,
            psf_fwhm: 46e-6,
            psf_radius: 0,
            model: DetectorModel::default(),
            bits: PixelBits::U16,
            seed: None,
            calib_seed: 123456789,
            threads: None,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Run with these settings.
    Run(Box<NoisifyArgs>),
    /// `-h`: print the usage.
    Help,
}

/// The flags with a value, each spelling C accepts in practice.
const VALUED: &[&str] = &[
    "-bin",
    "-floatfile",
    "-floatimage",
    "-header",
    "-intfile",
    "-intimage",
    "-noisefile",
    "-noiseimage",
    "-pgmfile",
    "-pgmimage",
    "-lambda",
    "-Xbeam",
    "-Ybeam",
    "-distance",
    "-detsize",
    "-detsize_x",
    "-detsize_y",
    "-detpixels",
    "-detpixels_x",
    "-detpixels_y",
    "-pixel",
    "-psf",
    "-psf_radius",
    "-psf_rad",
    "-psf_fwhm",
    "-psf_size",
    "-psf_width",
    "-fluence",
    "-bits",
    "-readout",
    "-readout_noise",
    "-readnoise",
    "-flicker",
    "-calibration",
    "-scale",
    "-seed",
    "-calib_seed",
    "-badpix_seed",
    "-hotpix_seed",
    "-adc",
    "-gain",
    "-phi",
    "-osc",
    "-nthreads",
];

/// Parses `noisify`'s arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed> {
    let mut out = NoisifyArgs::default();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "-h" | "-help" | "--help" => return Ok(Parsed::Help),
            "-nonoise" => out.noise = false,
            "-nopgm" => out.nopgm = true,
            _ if !flag.starts_with('-') && flag.contains("floatimage.bin") => out.input = Some(flag.into()),
            _ if VALUED.contains(&flag) => {
                let value = args.get(i + 1).ok_or_else(|| Error::flag(flag, "needs a value"))?;
                apply(&mut out, flag, value)?;
                i += 1;
            }
            _ if flag.starts_with('-') => return Err(Error::UnknownFlag(flag.to_string())),
            _ => return Err(Error::flag(flag, "unexpected value (expected a flag here)")),
        }
        i += 1;
    }
    Ok(Parsed::Run(Box::new(out)))
}

/// A finite number.
fn number(flag: &str, value: &str) -> Result<f64> {
    match value.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Error::flag(flag, format!("'{value}' is not a finite number"))),
    }
}

/// A number ≥ 0.
fn non_negative(flag: &str, value: &str) -> Result<f64> {
    let v = number(flag, value)?;
    if v < 0.0 {
        return Err(Error::flag(flag, format!("must not be negative (got {value})")));
    }
    Ok(v)
}

/// A number > 0.
fn positive(flag: &str, value: &str) -> Result<f64> {
    let v = number(flag, value)?;
    if v <= 0.0 {
        return Err(Error::flag(flag, format!("must be positive (got {value})")));
    }
    Ok(v)
}

/// A whole number in `0..=max`.
fn count(flag: &str, value: &str, max: u64) -> Result<u64> {
    match value.trim().parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(Error::flag(
            flag,
            format!("'{value}' is not a whole number from 0 to {max}"),
        )),
    }
}

/// C's seed variable for `-seed n`: −n, n a C `int`.
fn seed(flag: &str, value: &str) -> Result<i64> {
    match value.trim().parse::<i32>() {
        Ok(n) => Ok(-(n as i64)),
        _ => Err(Error::flag(
            flag,
            format!("'{value}' is not a whole number that fits a C int"),
        )),
    }
}

fn apply(out: &mut NoisifyArgs, flag: &str, value: &str) -> Result<()> {
    let mm = |v: f64| v / 1000.0;
    match flag {
        "-bin" | "-floatfile" | "-floatimage" => out.input = Some(value.into()),
        "-header" => out.header = Some(value.into()),
        "-intfile" | "-intimage" => out.intfile = value.into(),
        "-noisefile" | "-noiseimage" => out.noisefile = value.into(),
        "-pgmfile" | "-pgmimage" => out.pgmfile = value.into(),
        "-lambda" => out.lambda = positive(flag, value)?,
        "-Xbeam" => out.beam.0 = Some(mm(number(flag, value)?)),
        "-Ybeam" => out.beam.1 = Some(mm(number(flag, value)?)),
        "-distance" => out.distance = mm(positive(flag, value)?),
        "-detsize" => out.detsize = (mm(positive(flag, value)?), mm(positive(flag, value)?)),
        "-detsize_x" => out.detsize.0 = mm(positive(flag, value)?),
        "-detsize_y" => out.detsize.1 = mm(positive(flag, value)?),
        "-detpixels" => {
            let n = count(flag, value, i32::MAX as u64)? as usize;
            out.pixels = (n, n);
        }
        "-detpixels_x" => out.pixels.0 = count(flag, value, i32::MAX as u64)? as usize,
        "-detpixels_y" => out.pixels.1 = count(flag, value, i32::MAX as u64)? as usize,
        "-pixel" => out.pixel = mm(positive(flag, value)?),
        _ => return apply_noise(out, flag, value),
    }
    Ok(())
}

fn apply_noise(out: &mut NoisifyArgs, flag: &str, value: &str) -> Result<()> {
    match flag {
        "-psf" => {
            out.psf = Some(match value {
                "gauss" | "gaussian" => PsfShape::Gauss,
                "fiber" => PsfShape::Fiber,
                _ => return Err(Error::flag(flag, format!("'{value}' is not gauss or fiber"))),
            })
        }
        "-psf_radius" | "-psf_rad" => out.psf_radius = count(flag, value, i32::MAX as u64)? as u32,
        "-psf_fwhm" | "-psf_size" | "-psf_width" => out.psf_fwhm = (non_negative(flag, value)? / 1e6) as f32,
        "-fluence" => out.model.fluence = positive(flag, value)?,
        "-bits" => {
            out.bits = match value.trim() {
                "16" => PixelBits::U16,
                "32" => PixelBits::U32,
                _ => return Err(Error::flag(flag, format!("'{value}' is not 16 or 32"))),
            }
        }
        "-readout" | "-readout_noise" | "-readnoise" => out.model.readout_adu = non_negative(flag, value)?,
        "-flicker" => out.model.flicker = non_negative(flag, value)?,
        "-calibration" => out.model.calibration = non_negative(flag, value)?,
        "-scale" => out.model.photon_scale = non_negative(flag, value)?,
        "-seed" => out.seed = Some(seed(flag, value)?),
        "-calib_seed" => out.calib_seed = seed(flag, value)?,
        // C reads these two and never uses them
        "-badpix_seed" | "-hotpix_seed" => {
            seed(flag, value)?;
        }
        "-adc" => out.model.adc_offset = number(flag, value)?,
        "-gain" => out.model.gain = non_negative(flag, value)?,
        "-phi" => out.phi = number(flag, value)?,
        "-osc" => out.osc = number(flag, value)?,
        "-nthreads" => out.threads = Some(count(flag, value, 1 << 16)?.max(1) as usize),
        _ => return Err(Error::UnknownFlag(flag.to_string())),
    }
    Ok(())
}

/// The usage text, C's list of options with their units.
pub const USAGE: &str = "usage: noisify -floatfile floatimage.bin
options:
\tfloatimage.bin\t nearBragg-style binary dump file
\t-scale\tscale factor to put floatimage.bin in photons/pixel
\t-gain\tpixel units per photon
\t-readout_noise\tgaussian noise added to every pixel
\t-flicker\t fractional 1/f noise in source
\t-calibration\t static fractional error per pixel
\t-calib_seed\t change seed for calibration error
\t-seed\t specify seed for all non-calibration errors
\t-gain\t pixel units per photon
\t-adc\t offset added to each pixel after noise
\t-distance\t distance from origin to detector center in mm
\t-detsize\t detector size in mm
\t-pixel\t detector pixel size in mm
\t-psf gauss|fiber\t point spread function type (gaussian or fiber)
\t-psf_fwhm\t point spread function size in um
\t-psf_radius\t radius to render PSF in pixels (default automatic)
\t-lambda\t incident x-ray wavelength in Angstrom
\t-intfile\t name of smv-formatted output file (arbitrary scale)
\t-pgmfile\tname of pgm-formatted output file (arbitrary scale)
\t-noisefile\t name of smv-formatted output file (with noise)
\t-Xbeam\t image X coordinate of direct-beam spot (mm)
\t-Ybeam\t image Y coordinate of direct-beam spot (mm)
\t-header\t import 512-byte header from specified SMV file
\t-bits 16|32\t integer type of the output images (default 16)
\t-nonoise\t write only the noiseless image
\t-nopgm\t do not write the PGM preview
\t-nthreads\t threads for the PSF (default: every core)
";
