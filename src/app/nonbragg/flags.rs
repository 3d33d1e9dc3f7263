//! `nonbragg`'s command line: C `nonBragg`'s flags, units and defaults, read from an explicit
//! table of spellings (C matches substrings). Unknown flags, missing or malformed values and
//! impossible settings are errors naming the flag.

use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::io::stol::StolUnits;
use std::path::PathBuf;

/// Degrees per radian, as C computes it (C divides by it).
pub const RTD: f64 = 180.0 * std::f64::consts::FRAC_1_PI;

/// Which point stays put when the detector turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pivot {
    Beam,
    Sample,
}

/// Everything one `nonbragg` run needs, in SI units (m, rad, g/m³) unless named otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct NonBraggArgs {
    /// The F(sinθ/λ) table and what its first column is.
    pub stol: Option<(PathBuf, StolUnits)>,
    /// Sample thickness (along the beam), width and height (m).
    pub sample: Vec3,
    /// Density (g/m³), molecular weight (g/mol), molecules (0: from the density).
    pub density: f64,
    pub molecular_weight: f64,
    pub molecules: f64,
    /// Beam: wavelength (m), fluence (photons/m²), flux (photons/s), exposure (s), beam size (m).
    pub lambda: f64,
    pub fluence: f64,
    pub flux: f64,
    pub exposure: f64,
    pub beamsize: f64,
    /// Divergence ranges and steps (rad), their counts, dispersion (fraction) and its count.
    pub hdiv: (Option<f64>, Option<f64>, Option<i64>),
    pub vdiv: (Option<f64>, Option<f64>, Option<i64>),
    pub dispersion: f64,
    pub dispsteps: Option<i64>,
    pub round_div: bool,
    pub source_distance: f64,
    pub sourcefile: Option<PathBuf>,
    /// Detector.
    pub pixel: f64,
    pub pixels: (usize, usize),
    pub detsize: (f64, f64),
    pub distance: f64,
    pub close_distance: Option<f64>,
    pub beam_center: (Option<f64>, Option<f64>),
    pub close: (Option<f64>, Option<f64>),
    pub org: (Option<f64>, Option<f64>),
    pub pivot: Pivot,
    pub rot: Vec3,
    pub twotheta: f64,
    pub twotheta_axis: Vec3,
    pub fdet: Vec3,
    pub sdet: Vec3,
    pub beam: Vec3,
    pub polar_axis: Vec3,
    pub curved: bool,
    pub point_pixel: bool,
    pub fmap: bool,
    pub kahn: f64,
    pub nopolar: bool,
    pub oversample: i64,
    pub roi: Option<(i64, i64, i64, i64)>,
    /// Spindle, for the header (rad, counts).
    pub phi: f64,
    pub osc: Option<f64>,
    pub phistep: Option<f64>,
    pub phisteps: Option<i64>,
    /// Outputs.
    pub floatfile: PathBuf,
    pub intfile: PathBuf,
    pub pgmfile: PathBuf,
    pub noisefile: PathBuf,
    pub noise: bool,
    pub pgm: bool,
    pub intfile_scale: f64,
    pub pgm_scale: f64,
    pub adc: f64,
    pub progress: bool,
    /// C's seed variable (−n for `-seed n`); `None`: −(seconds since 1970).
    pub seed: Option<i64>,
    pub threads: Option<usize>,
}

impl Default for NonBraggArgs {
    fn default() -> Self {
        Self {
            stol: None,
            sample: [1e-4; 3],
            density: 1.0e6,
            molecular_weight: 18.0,
            molecules: 0.0,
            lambda: 1.0e-10,
            fluence: 125932015286227086360700780544.0,
            flux: 0.0,
            exposure: 1.0,
            beamsize: 1e-4,
            hdiv: (None, None, None),
            vdiv: (None, None, None),
            dispersion: 0.0,
            dispsteps: None,
            round_div: true,
            source_distance: 10.0,
            sourcefile: None,
            pixel: 0.1e-3,
            pixels: (0, 0),
            detsize: (102.4e-3, 102.4e-3),
            distance: 100.0e-3,
            close_distance: None,
            beam_center: (None, None),
            close: (None, None),
            org: (None, None),
            pivot: Pivot::Beam,
            rot: [0.0; 3],
            twotheta: 0.0,
            twotheta_axis: [0.0, 1.0, 0.0],
            fdet: [0.0, 0.0, 1.0],
            sdet: [0.0, -1.0, 0.0],
            beam: [1.0, 0.0, 0.0],
            polar_axis: [0.0, 0.0, 1.0],
            curved: false,
            point_pixel: false,
            fmap: false,
            kahn: 0.0,
            nopolar: false,
            oversample: -1,
            roi: None,
            phi: 0.0,
            osc: None,
            phistep: None,
            phisteps: None,
            floatfile: "floatimage.bin".into(),
            intfile: "intimage.img".into(),
            pgmfile: "image.pgm".into(),
            noisefile: "noiseimage.img".into(),
            noise: true,
            pgm: true,
            intfile_scale: 0.0,
            pgm_scale: 0.0,
            adc: 40.0,
            progress: true,
            seed: None,
            threads: None,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Run(Box<NonBraggArgs>),
    Help,
}

/// Flags without a value.
const SWITCHES: &[&str] = &[
    "-curved_det",
    "-curved_detector",
    "-point_pixel",
    "-Fmap",
    "-nopolar",
    "-round_div",
    "-square_div",
    "-nonoise",
    "-nopgm",
    "-noreject",
    "-coherent",
    "-printout",
    "-noprogress",
    "-progress",
];

/// Flags with three values (a vector).
const VECTORS: &[&str] = &[
    "-fdet_vector",
    "-sdet_vector",
    "-odet_vector",
    "-beam_vector",
    "-polar_vector",
    "-spindle_axis",
    "-twotheta_axis",
    "-pix0_vector",
];

/// Parses `nonbragg`'s arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed> {
    let mut out = NonBraggArgs::default();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let values = |n: usize| -> Result<&[String]> {
            args.get(i + 1..i + 1 + n)
                .ok_or_else(|| Error::flag(flag, format!("needs {n} value{}", if n > 1 { "s" } else { "" })))
        };
        match flag {
            "-h" | "-help" | "--help" => return Ok(Parsed::Help),
            _ if SWITCHES.contains(&flag) => switch(&mut out, flag),
            _ if VECTORS.contains(&flag) => {
                let v = values(3)?;
                let v = [number(flag, &v[0])?, number(flag, &v[1])?, number(flag, &v[2])?];
                vector(&mut out, flag, v);
                i += 3;
            }
            "-roi" => {
                let v = values(4)?;
                let n = |k: usize| whole(flag, &v[k]);
                out.roi = Some((n(0)?, n(1)?, n(2)?, n(3)?));
                i += 4;
            }
            "-printout_pixel" => {
                let v = values(2)?;
                whole(flag, &v[0])?;
                whole(flag, &v[1])?;
                out.progress = false;
                i += 2;
            }
            "-img" | "-ignore" | "-stolout" => {
                return Err(Error::flag(
                    flag,
                    "fitting F(sin(theta)/lambda) to an image is not supported by nonbragg",
                ))
            }
            _ if flag.starts_with('-') => {
                let v = values(1)?;
                valued(&mut out, flag, &v[0])?;
                i += 1;
            }
            _ => return Err(Error::flag(flag, "unexpected value (expected a flag here)")),
        }
        i += 1;
    }
    Ok(Parsed::Run(Box::new(out)))
}

fn switch(out: &mut NonBraggArgs, flag: &str) {
    match flag {
        "-curved_det" | "-curved_detector" => out.curved = true,
        "-point_pixel" => out.point_pixel = true,
        "-Fmap" => out.fmap = true,
        "-nopolar" => out.nopolar = true,
        "-round_div" => out.round_div = true,
        "-square_div" => out.round_div = false,
        "-nonoise" => out.noise = false,
        "-nopgm" => out.pgm = false,
        "-noprogress" | "-printout" => out.progress = false,
        "-progress" => out.progress = true,
        // -noreject: C's outlier rejection is off already; -coherent: read and unused in C
        _ => {}
    }
}

fn vector(out: &mut NonBraggArgs, flag: &str, v: Vec3) {
    match flag {
        "-fdet_vector" => out.fdet = v,
        "-sdet_vector" => out.sdet = v,
        "-beam_vector" => out.beam = v,
        "-polar_vector" => out.polar_axis = v,
        "-twotheta_axis" => out.twotheta_axis = v,
        // C reads these and then overrides them: o = f × s, pix0 from the pivot; the spindle
        // only matters to Bragg scattering
        _ => {}
    }
}

/// A finite number.
fn number(flag: &str, value: &str) -> Result<f64> {
    match value.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Error::flag(flag, format!("'{value}' is not a finite number"))),
    }
}

fn positive(flag: &str, value: &str) -> Result<f64> {
    let v = number(flag, value)?;
    if v <= 0.0 {
        return Err(Error::flag(flag, format!("must be positive (got {value})")));
    }
    Ok(v)
}

fn non_negative(flag: &str, value: &str) -> Result<f64> {
    let v = number(flag, value)?;
    if v < 0.0 {
        return Err(Error::flag(flag, format!("must not be negative (got {value})")));
    }
    Ok(v)
}

/// A whole number that fits a C `int`.
fn whole(flag: &str, value: &str) -> Result<i64> {
    match value.trim().parse::<i32>() {
        Ok(v) => Ok(v as i64),
        _ => Err(Error::flag(flag, format!("'{value}' is not a whole number"))),
    }
}

/// A pixel count from 1 to 2²⁰.
fn pixel_count(flag: &str, value: &str) -> Result<usize> {
    match value.trim().parse::<usize>() {
        Ok(v) if (1..=1 << 20).contains(&v) => Ok(v),
        _ => Err(Error::flag(
            flag,
            format!("'{value}' is not a pixel count from 1 to 1048576"),
        )),
    }
}

fn valued(out: &mut NonBraggArgs, flag: &str, value: &str) -> Result<()> {
    let mm = |v: f64| v / 1000.0;
    let mrad = |v: f64| v / 1000.0;
    match flag {
        "-stol" => out.stol = Some((value.into(), StolUnits::Stol)),
        "-4stol" => out.stol = Some((value.into(), StolUnits::FourStol)),
        "-Q" => out.stol = Some((value.into(), StolUnits::Q)),
        "-samplesize" | "-sample_size" => out.sample = [mm(positive(flag, value)?); 3],
        "-sample_thick" | "-sample_thickness" | "-sample_x" | "-thick" | "-thickness" => {
            out.sample[0] = mm(positive(flag, value)?)
        }
        "-sample_width" | "-sample_y" | "-width" => out.sample[1] = mm(positive(flag, value)?),
        "-sample_height" | "-sample_z" | "-height" => out.sample[2] = mm(positive(flag, value)?),
        "-density" | "-sample_density" => out.density = positive(flag, value)? * 1e6,
        "-molecules" | "-sample_molecules" => out.molecules = non_negative(flag, value)?,
        "-MW" | "-molecular_weight" => out.molecular_weight = positive(flag, value)?,
        "-lambda" | "-wavelength" | "-wave" => out.lambda = positive(flag, value)? / 1e10,
        "-energy" => out.lambda = 12398.42 / positive(flag, value)? / 1e10,
        "-fluence" => out.fluence = non_negative(flag, value)?,
        "-flux" => out.flux = non_negative(flag, value)?,
        "-exposure" => out.exposure = non_negative(flag, value)?,
        "-beamsize" => out.beamsize = mm(positive(flag, value)?),
        "-dispersion" => out.dispersion = non_negative(flag, value)? / 100.0,
        "-dispsteps" => out.dispsteps = Some(whole(flag, value)?),
        "-divergence" => {
            let v = mrad(non_negative(flag, value)?);
            (out.hdiv.0, out.vdiv.0) = (Some(v), Some(v));
        }
        "-hdivrange" => out.hdiv.0 = Some(mrad(non_negative(flag, value)?)),
        "-vdivrange" => out.vdiv.0 = Some(mrad(non_negative(flag, value)?)),
        "-hdivstep" => out.hdiv.1 = Some(mrad(non_negative(flag, value)?)),
        "-vdivstep" => out.vdiv.1 = Some(mrad(non_negative(flag, value)?)),
        "-hdivsteps" => out.hdiv.2 = Some(whole(flag, value)?),
        "-vdivsteps" => out.vdiv.2 = Some(whole(flag, value)?),
        "-divsteps" => {
            let n = whole(flag, value)?;
            (out.hdiv.2, out.vdiv.2) = (Some(n), Some(n));
        }
        "-source_distance" => out.source_distance = mm(positive(flag, value)?),
        "-sourcefile" => out.sourcefile = Some(value.into()),
        _ => return detector_flag(out, flag, value),
    }
    Ok(())
}

fn detector_flag(out: &mut NonBraggArgs, flag: &str, value: &str) -> Result<()> {
    let mm = |v: f64| v / 1000.0;
    let deg = |v: f64| v / RTD;
    match flag {
        "-pixel" => out.pixel = mm(positive(flag, value)?),
        "-detpixels" => {
            let n = pixel_count(flag, value)?;
            out.pixels = (n, n);
        }
        "-detpixels_f" | "-detpixels_x" => out.pixels.0 = pixel_count(flag, value)?,
        "-detpixels_s" | "-detpixels_y" => out.pixels.1 = pixel_count(flag, value)?,
        "-detsize" => {
            let v = mm(positive(flag, value)?);
            out.detsize = (v, v);
        }
        "-detsize_x" | "-detsize_f" => out.detsize.0 = mm(positive(flag, value)?),
        "-detsize_y" | "-detsize_s" => out.detsize.1 = mm(positive(flag, value)?),
        "-distance" => {
            out.distance = mm(positive(flag, value)?);
            out.pivot = Pivot::Beam;
        }
        "-close_distance" => {
            out.close_distance = Some(mm(positive(flag, value)?));
            out.pivot = Pivot::Sample;
        }
        "-Xbeam" | "-Ybeam" => {
            let v = Some(mm(number(flag, value)?));
            match flag {
                "-Xbeam" => out.beam_center.0 = v,
                _ => out.beam_center.1 = v,
            }
            out.pivot = Pivot::Beam;
        }
        "-Xclose" | "-Yclose" => {
            let v = Some(mm(number(flag, value)?));
            match flag {
                "-Xclose" => out.close.0 = v,
                _ => out.close.1 = v,
            }
            out.pivot = Pivot::Sample;
        }
        "-ORGX" | "-ORGY" => {
            let v = Some(number(flag, value)?);
            match flag {
                "-ORGX" => out.org.0 = v,
                _ => out.org.1 = v,
            }
            out.pivot = Pivot::Sample;
        }
        "-pivot" => {
            out.pivot = match value {
                "sample" => Pivot::Sample,
                "beam" => Pivot::Beam,
                _ => return Err(Error::flag(flag, format!("'{value}' is not sample or beam"))),
            }
        }
        "-twotheta" => {
            out.twotheta = deg(number(flag, value)?);
            out.pivot = Pivot::Sample;
        }
        "-detector_rotx" => out.rot[0] = deg(number(flag, value)?),
        "-detector_roty" => out.rot[1] = deg(number(flag, value)?),
        "-detector_rotz" => out.rot[2] = deg(number(flag, value)?),
        "-polar" => {
            out.kahn = number(flag, value)?;
            out.nopolar = false;
        }
        "-oversample" => out.oversample = whole(flag, value)?,
        "-phi" => out.phi = deg(number(flag, value)?),
        "-osc" => out.osc = Some(deg(number(flag, value)?)),
        "-phistep" => out.phistep = Some(deg(number(flag, value)?)),
        "-phisteps" => out.phisteps = Some(whole(flag, value)?),
        _ => return output_flag(out, flag, value),
    }
    Ok(())
}

fn output_flag(out: &mut NonBraggArgs, flag: &str, value: &str) -> Result<()> {
    match flag {
        "-floatfile" | "-floatimage" => out.floatfile = value.into(),
        "-intfile" | "-intimage" => out.intfile = value.into(),
        "-pgmfile" | "-pgmimage" => out.pgmfile = value.into(),
        "-noisefile" | "-noiseimage" => {
            out.noisefile = value.into();
            out.noise = true;
        }
        "-scale" => out.intfile_scale = number(flag, value)?,
        "-pgmscale" => out.pgm_scale = number(flag, value)?,
        "-adc" => out.adc = number(flag, value)?,
        // C reads the gain only to turn an input image back into F
        "-gain" => {
            positive(flag, value)?;
        }
        "-seed" => out.seed = Some(-whole(flag, value)?),
        "-nthreads" => {
            out.threads = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| (1..=1 << 16).contains(&n))
                    .ok_or_else(|| Error::flag(flag, format!("'{value}' is not a thread count from 1 to 65536")))?,
            )
        }
        _ => return Err(Error::UnknownFlag(flag.to_string())),
    }
    Ok(())
}

/// The usage text: C's list of options with their units.
pub const USAGE: &str = "usage: nonBragg -stol water.stol
options:
\t-stol filename.stol\ttext file containing sin(theta)/lambda and F for one molecule
\t-4stol filename\t the same, its first column 4*sin(theta)/lambda
\t-Q filename\t the same, its first column Q = 4*pi*sin(theta)/lambda
\t-thickness\tthickness of the sample in mm
\t-samplesize\tlinear dimension of the (cube shaped) sample in mm
\t-density\tdensity of the sample in g/cm^3
\t-MW\tmolecular weight of the sample material in g/mol
\t-molecules\tnumber of molecules in the beam (overrides -density)
\t-hdivrange\thorizontal angular spread of source points in mrad
\t-vdivrange\tvertical angular spread of source points in mrad
\t-hdivstep\tnumber of source points in the horizontal
\t-vdivstep\tnumber of source points in the vertical
\t-distance\tdistance from origin to detector center in mm
\t-detsize\tdetector size in mm
\t-pixel\tdetector pixel size in mm
\t-oversample\tnumber of sub-pixels per pixel
\t-lambda\tincident x-ray wavelength in Angstrom
\t-dispersion\tspectral dispersion: delta-lambda/lambda in percent
\t-dispsteps\tnumber of wavelengths in above range
\t-fluence\tintegrated beam intensity in photons/m^2
\t-flux\t beam intensity in photons/s
\t-exposure\t exposure time in s
\t-beamsize\t linear dimension of the (square) beam profile in mm
\t-sourcefile filename.txt\ttext file containing source positions in mm
\t-floatfile\tname of binary output file (4-byte floats)
\t-intfile\tname of smv-formatted output file (arbitrary scale)
\t-pgmfile\tname of pgm-formatted output file (arbitrary scale)
\t-noisefile\tname of smv-formatted output file (with Poisson noise)
\t-Xbeam\timage X coordinate of direct-beam spot (mm)
\t-Ybeam\timage Y coordinate of direct-beam spot (mm)
\t-printout\tprint pixel values out to the screen
\t-noprogress\tturn off the progress meter
\t-nthreads\tthreads (default: every core)
";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn reads_cs_units_and_the_last_pivot() {
        let Parsed::Run(a) = parse(&args(
            "-stol w.stol -thick 0.5 -density 0.92 -twotheta 20 -distance 90 -lambda 1.5",
        ))
        .unwrap() else {
            panic!()
        };
        assert_eq!(a.sample[0], 0.5e-3);
        assert_eq!(a.density, 0.92e6);
        assert_eq!(a.pivot, Pivot::Beam);
        assert_eq!(a.distance, 0.09);
        assert_eq!(a.lambda, 1.5e-10);
        assert_eq!(a.twotheta, 20.0 / RTD);
    }

    #[test]
    fn bad_values_name_the_flag() {
        for (line, flag) in [
            ("-stol w.stol -thick -1", "-thick"),
            ("-stol w.stol -density x", "-density"),
            ("-stol w.stol -roi 1 2 3", "-roi"),
            ("-stol w.stol -pivot middle", "-pivot"),
            ("-stol w.stol -detpixels 0", "-detpixels"),
            ("-stol", "-stol"),
        ] {
            let e = parse(&args(line)).unwrap_err().to_string();
            assert!(e.contains(flag), "{line}: {e}");
        }
        assert!(matches!(parse(&args("-stol w -bogus 1")), Err(Error::UnknownFlag(_))));
    }
}
