//! The flags applied to the configuration, one function per section of `-h`: C's units and
//! side effects (which pivot or convention a flag selects).

use super::flags::Opt;
use super::{Item, State, Values, RTD};
use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::config::engine::{EngineKind, Precision};
use crate::config::{Convention, DetectorNoiseConfig, Misset, Pivot, PsfKind, Roi};
use std::path::PathBuf;

/// The photon energy × wavelength constant C uses for `-energy` (eV·Å).
const EV_ANGSTROM: f64 = 12398.42;

/// Applies one flag, with C's units and side effects.
///
/// Deliberate fix of a C bug: C's substring matching makes `-twotheta_axis x y z` also run the
/// `-twotheta` branch, which sets 2θ to `x` degrees (`-twotheta 5 -twotheta_axis 0 0 -1` ends
/// with 2θ = 0 in C). Here `-twotheta_axis` leaves 2θ alone; it keeps that branch's other side
/// effect (pivot = SAMPLE) and, as C, selects the CUSTOM convention and stores the axis.
pub(super) fn apply(st: &mut State, it: &Item<'_>) -> Result<()> {
    let v = Values {
        flag: it.flag,
        values: &it.values,
    };
    for section in SECTIONS {
        if section(st, it, &v)? {
            return Ok(());
        }
    }
    Err(Error::flag(
        it.flag,
        "belongs to no section of the parser (a bug: please report it)",
    ))
}

/// A section of the flags: applies a flag of its own and says so.
pub(super) type Section = fn(&mut State, &Item<'_>, &Values<'_, '_>) -> Result<bool>;

/// Every flag's section, in the order of `-h`.
pub(super) const SECTIONS: [Section; 8] = [
    apply_input,
    apply_detector_size,
    apply_detector_orientation,
    apply_beam,
    apply_crystal,
    apply_sampling,
    apply_output,
    apply_port,
];

/// Applies `it` if it is a flag of the section "input files and structure factors"; whether it was.
fn apply_input(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let xtal = &mut st.cfg.crystal;
    match it.opt {
        Opt::Help => {}
        Opt::Hkl => xtal.hkl = crate::config::HklSource::File(v.path()),
        Opt::Mat => st.matfile = Some(v.path()),
        Opt::Sourcefile => st.sourcefile = Some(v.path()),
        Opt::Stol(units) => xtal.amorphous.table = Some((v.path(), units)),
        Opt::Img | Opt::Mask | Opt::StolIgnored | Opt::Geom | Opt::DetectorExpt | Opt::PanelGroups => {}
        Opt::Cell => {
            let mut c = [0.0; 6];
            for (k, slot) in c.iter_mut().enumerate().take(it.values.len()) {
                *slot = v.num(k)?;
            }
            if c[0] <= 0.0 {
                return Err(v.err(format!("cell length a must be > 0, got '{}'", v.text(0))));
            }
            // C's defaults for what is missing or ≤ 0: b = c = a, angles 90°.
            for k in 1..3 {
                if c[k] <= 0.0 {
                    c[k] = c[0];
                }
            }
            for angle in &mut c[3..] {
                if *angle <= 0.0 {
                    *angle = 90.0;
                }
            }
            xtal.cell = Some([
                c[0] * 1e-10,
                c[1] * 1e-10,
                c[2] * 1e-10,
                c[3] / RTD,
                c[4] / RTD,
                c[5] / RTD,
            ]);
        }
        Opt::DefaultF => xtal.default_f = v.num(0)?,
        Opt::Misset => {
            xtal.misset = if it.values.len() == 1 {
                Misset::Random
            } else {
                let a = v.vec3()?;
                Misset::Angles([a[0] / RTD, a[1] / RTD, a[2] / RTD])
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies `it` if it is a flag of the section "detector size and pixels"; whether it was.
fn apply_detector_size(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let det = &mut st.cfg.detector;
    let mm = |x: f64| x / 1000.0;
    match it.opt {
        Opt::Pixel => det.pixel_size = mm(v.positive(0)?),
        Opt::Detpixels => {
            let n = v.pixel_count(0)?;
            det.fpixels = n;
            det.spixels = n;
        }
        Opt::DetpixelsF => det.fpixels = v.pixel_count(0)?,
        Opt::DetpixelsS => det.spixels = v.pixel_count(0)?,
        Opt::Detsize => {
            let s = mm(v.positive(0)?);
            det.detsize_f = s;
            det.detsize_s = s;
        }
        Opt::DetsizeF => det.detsize_f = mm(v.positive(0)?),
        Opt::DetsizeS => det.detsize_s = mm(v.positive(0)?),
        Opt::Distance => {
            det.distance = mm(v.positive(0)?);
            det.pivot = Pivot::Beam;
        }
        Opt::CloseDistance => {
            det.close_distance = Some(mm(v.positive(0)?));
            det.pivot = Pivot::Sample;
        }
        Opt::PointPixel => det.point_pixel = true,
        Opt::CurvedDet => det.curved = true,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies `it` if it is a flag of the section "orientation, conventions, beam centre"; whether it was.
fn apply_detector_orientation(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let det = &mut st.cfg.detector;
    let mm = |x: f64| x / 1000.0;
    match it.opt {
        Opt::RotX => det.rotx = v.num(0)? / RTD,
        Opt::RotY => det.roty = v.num(0)? / RTD,
        Opt::RotZ => det.rotz = v.num(0)? / RTD,
        Opt::Twotheta => {
            det.twotheta = v.num(0)? / RTD;
            det.pivot = Pivot::Sample;
        }
        Opt::TwothetaAxis => {
            det.custom.twotheta_axis = Some(v.direction()?);
            det.convention = Convention::Custom;
            det.pivot = Pivot::Sample;
        }
        Opt::Conv(conv) => {
            det.convention = conv;
            det.pivot = if conv == Convention::Xds {
                Pivot::Sample
            } else {
                Pivot::Beam
            };
        }
        Opt::Pivot => {
            det.pivot = match v.text(0).to_ascii_lowercase().as_str() {
                "beam" => Pivot::Beam,
                "sample" => Pivot::Sample,
                _ => return Err(v.err(format!("expected 'beam' or 'sample', got '{}'", v.text(0)))),
            }
        }
        Opt::FdetVector => set_custom(det, |c| &mut c.fdet, v.direction()?),
        Opt::SdetVector => set_custom(det, |c| &mut c.sdet, v.direction()?),
        Opt::OdetVector => set_custom(det, |c| &mut c.odet, v.direction()?),
        Opt::BeamVector => set_custom(det, |c| &mut c.beam, v.direction()?),
        Opt::PolarVector => set_custom(det, |c| &mut c.polar, v.direction()?),
        Opt::SpindleAxis => set_custom(det, |c| &mut c.spindle, v.direction()?),
        Opt::Pix0Vector => {
            // C stores it, then its geometry code overwrites pix0: only CUSTOM remains.
            v.vec3()?;
            det.convention = Convention::Custom;
        }
        Opt::Xbeam => {
            det.xbeam = Some(mm(v.num(0)?));
            det.pivot = Pivot::Beam;
        }
        Opt::Ybeam => {
            det.ybeam = Some(mm(v.num(0)?));
            det.pivot = Pivot::Beam;
        }
        Opt::Xclose => {
            det.xclose = Some(mm(v.num(0)?));
            det.pivot = Pivot::Sample;
        }
        Opt::Yclose => {
            det.yclose = Some(mm(v.num(0)?));
            det.pivot = Pivot::Sample;
        }
        Opt::Orgx => {
            det.orgx = Some(v.num(0)?);
            det.pivot = Pivot::Sample;
        }
        Opt::Orgy => {
            det.orgy = Some(v.num(0)?);
            det.pivot = Pivot::Sample;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies `it` if it is a flag of the section "beam"; whether it was.
fn apply_beam(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let beam = &mut st.cfg.beam;
    let samp = &mut st.cfg.sampling;
    let mm = |x: f64| x / 1000.0;
    match it.opt {
        Opt::Lambda => beam.lambda0 = v.positive(0)? / 1.0e10,
        Opt::Energy => beam.lambda0 = (EV_ANGSTROM / v.positive(0)?) / 1.0e10,
        Opt::Dispersion => beam.dispersion = v.num(0)? / 100.0,
        Opt::Dispsteps => beam.dispsteps = Some(v.int(0)?),
        Opt::Divergence => {
            let r = v.num(0)? / 1000.0;
            beam.hdivrange = Some(r);
            beam.vdivrange = Some(r);
        }
        Opt::Hdivrange => beam.hdivrange = Some(v.num(0)? / 1000.0),
        Opt::Vdivrange => beam.vdivrange = Some(v.num(0)? / 1000.0),
        Opt::Hdivstep => beam.hdivstep = Some(v.num(0)? / 1000.0),
        Opt::Vdivstep => beam.vdivstep = Some(v.num(0)? / 1000.0),
        Opt::Hdivsteps => beam.hdivsteps = Some(v.int(0)?),
        Opt::Vdivsteps => beam.vdivsteps = Some(v.int(0)?),
        Opt::Divsteps => {
            let n = v.int(0)?;
            beam.hdivsteps = Some(n);
            beam.vdivsteps = Some(n);
        }
        Opt::RoundDiv => beam.round_div = true,
        Opt::SquareDiv => beam.round_div = false,
        Opt::Polar => {
            beam.polarization = v.num(0)?;
            beam.nopolar = false;
        }
        Opt::Nopolar => beam.nopolar = true,
        Opt::Fluence => beam.fluence = v.num(0)?,
        Opt::Flux => beam.flux = v.num(0)?,
        Opt::Exposure => beam.exposure = v.num(0)?,
        Opt::Beamsize => beam.beamsize = mm(v.num(0)?),
        Opt::Water => samp.water_size = v.num(0)? / 1e6,
        Opt::Coherent => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies `it` if it is a flag of the section "crystal"; whether it was.
fn apply_crystal(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let xtal = &mut st.cfg.crystal;
    let mm = |x: f64| x / 1000.0;
    match it.opt {
        Opt::N => {
            let n = v.cell_count()?;
            xtal.na = n;
            xtal.nb = n;
            xtal.nc = n;
        }
        Opt::Na => xtal.na = v.cell_count()?,
        Opt::Nb => xtal.nb = v.cell_count()?,
        Opt::Nc => xtal.nc = v.cell_count()?,
        Opt::SampleSize => {
            let s = mm(v.num(0)?);
            xtal.sample_x = s;
            xtal.sample_y = s;
            xtal.sample_z = s;
        }
        Opt::SampleX => xtal.sample_x = mm(v.num(0)?),
        Opt::SampleY => xtal.sample_y = mm(v.num(0)?),
        Opt::SampleZ => xtal.sample_z = mm(v.num(0)?),
        Opt::Shape(shape) => xtal.shape = shape,
        Opt::Fudge => xtal.fudge = v.num(0)?,
        Opt::Mosaic => xtal.mosaic_spread = Some(v.num(0)? / RTD),
        Opt::MosaicDomains => xtal.mosaic_domains = Some(v.int(0)?),
        Opt::AmorphousDensity => xtal.amorphous.density = v.positive(0)? * 1e6,
        Opt::AmorphousMw => xtal.amorphous.molecular_weight = v.positive(0)?,
        Opt::AmorphousThickness => xtal.amorphous.thickness = mm(v.positive(0)?),
        Opt::AmorphousMolecules => {
            let n = v.num(0)?;
            if !(n >= 0.0 && n.is_finite()) {
                return Err(v.err(format!("must be a number ≥ 0, got '{}'", v.text(0))));
            }
            xtal.amorphous.molecules = n;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies `it` if it is a flag of the section "sampling, roi, interpolation, sensor"; whether it was.
fn apply_sampling(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let det = &mut st.cfg.detector;
    let xtal = &mut st.cfg.crystal;
    let samp = &mut st.cfg.sampling;
    match it.opt {
        Opt::Phi => xtal.phi0 = v.num(0)? / RTD,
        Opt::Osc => xtal.osc = Some(v.num(0)? / RTD),
        Opt::Phistep => xtal.phistep = Some(v.num(0)? / RTD),
        Opt::Phisteps => xtal.phisteps = Some(v.int(0)?),
        Opt::Dmin => samp.dmin = v.num(0)? * 1e-10,
        Opt::Oversample => {
            // C treats 0 or a negative count as "automatic".
            let n = v.int(0)?;
            samp.oversample = (n > 0).then_some(n);
        }
        Opt::OversampleThick => samp.oversample_thick = true,
        Opt::OversamplePolar => samp.oversample_polar = true,
        Opt::OversampleOmega => samp.oversample_omega = true,
        Opt::Roi => {
            det.roi = Some(Roi {
                xmin: v.int(0)?,
                xmax: v.int(1)?,
                ymin: v.int(2)?,
                ymax: v.int(3)?,
            })
        }
        Opt::Interpolate => xtal.interpolate = Some(true),
        Opt::NoInterpolate => xtal.interpolate = Some(false),
        Opt::DetectorAbs => {
            let t = v.text(0).trim();
            let depth = if t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity") {
                0.0
            } else {
                v.num(0)?
            };
            if depth < 0.0 {
                return Err(v.err(format!(
                    "attenuation depth must be > 0 µm, 0 or 'inf', got '{}'",
                    v.text(0)
                )));
            }
            if depth == 0.0 {
                // `inf` or 0: no absorption, and no sensor thickness (a later
                // -detector_thick still sets one, as in C).
                det.mu = Some(0.0);
                det.thickness = 0.0;
            } else {
                det.mu = Some(1.0 / (depth * 1e-6));
            }
        }
        Opt::DetectorThick => det.thickness = v.num(0)? * 1e-6,
        Opt::Thicksteps => det.thicksteps = Some(v.int(0)?),
        _ => return Ok(false),
    }
    Ok(true)
}

/// One of noisify's flags on the noise images' detector model (its units: µm for the PSF's
/// FWHM, pixels for its radius).
fn apply_detector_noise(d: &mut DetectorNoiseConfig, opt: Opt, v: &Values<'_, '_>) -> Result<()> {
    let x = || -> Result<f64> {
        let x = v.num(0)?;
        if x < 0.0 {
            return Err(v.err(format!("must not be negative (got {x})")));
        }
        Ok(x)
    };
    match opt {
        Opt::Psf => {
            d.psf = Some(match v.values[0] {
                "gauss" | "gaussian" => PsfKind::Gauss,
                "fiber" => PsfKind::Fiber,
                other => return Err(v.err(format!("'{other}' is not gauss or fiber"))),
            })
        }
        Opt::PsfFwhm => d.psf_fwhm = x()? * 1e-6,
        Opt::PsfRadius => d.psf_radius = u32::try_from(v.int(0)?).map_err(|_| v.err("must be a pixel count from 0"))?,
        Opt::Flicker => d.flicker = x()?,
        Opt::Calibration => d.calibration = x()?,
        Opt::CalibSeed => d.calib_seed = Some(v.int32(0)?),
        Opt::Readout => d.readout = x()?,
        _ => d.gain = x()?,
    }
    Ok(())
}

/// Applies `it` if it is a flag of the section "output, noise, misc"; whether it was.
fn apply_output(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let xtal = &mut st.cfg.crystal;
    let out = &mut st.cfg.output;
    match it.opt {
        Opt::Floatfile => out.floatfile = v.path(),
        Opt::Intfile => out.intfile = v.path(),
        Opt::Noisefile => {
            st.noisefile = v.path();
            st.write_noise = true;
        }
        Opt::Nonoise => st.write_noise = false,
        Opt::Pgmfile => {
            st.pgmfile = v.path();
            st.write_pgm = true;
        }
        Opt::Nopgm => st.write_pgm = false,
        Opt::Scale => out.scale = Some(v.num(0)?),
        Opt::Adc => out.adc = v.num(0)?,
        Opt::Flicker
        | Opt::Calibration
        | Opt::CalibSeed
        | Opt::Readout
        | Opt::Gain
        | Opt::Psf
        | Opt::PsfFwhm
        | Opt::PsfRadius => apply_detector_noise(out.detector.get_or_insert_with(Default::default), it.opt, v)?,
        Opt::Pgmscale => {
            out.pgmscale = Some(v.num(0)?);
            st.write_pgm = true;
        }
        Opt::Seed => out.seed = Some(v.int32(0)?),
        Opt::MosaicSeed => xtal.mosaic_seed = v.int32(0)?,
        Opt::MissetSeed => xtal.misset_seed = Some(v.int32(0)?),
        Opt::Printout => out.printout = true,
        Opt::PrintoutPixel => {
            out.printout_pixel = Some((v.int(0)?, v.int(1)?));
            out.printout = true;
        }
        Opt::TracePixel => out.trace_pixel = Some((v.int(0)?, v.int(1)?)),
        Opt::Progress => out.progress = true,
        Opt::NoProgress => out.progress = false,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Applies `it` if it is a flag of the section "port-only options"; whether it was.
fn apply_port(st: &mut State, it: &Item<'_>, v: &Values<'_, '_>) -> Result<bool> {
    let out = &mut st.cfg.output;
    match it.opt {
        Opt::Pngfile => out.pngfile = Some(v.path()),
        Opt::Derivative => {
            let name = match crate::experiment::panels::motion::motion_index(v.values[0]) {
                Some(m) => crate::experiment::panels::motion::MOTIONS[m].0,
                None => crate::config::components::find(v.values[0], "-derivative")?.name,
            };
            out.derivatives.push((name.to_string(), PathBuf::from(v.values[1])));
        }
        Opt::Npyfile => out.npyfile = Some(v.path()),
        Opt::Cbffile => out.cbffile = Some(v.path()),
        Opt::CbfNoisefile => out.cbf_noisefile = Some(v.path()),
        Opt::Nexusfile => out.nexusfile = Some(v.path()),
        Opt::Engine => {
            st.opts.engine = match v.text(0) {
                "cpu" => EngineKind::Cpu,
                "wgpu" => EngineKind::Wgpu,
                other => return Err(v.err(format!("unknown engine '{other}' (available: cpu, wgpu)"))),
            }
        }
        Opt::Gpu => st.opts.gpu = Some(v.text(0).to_string()),
        Opt::Fusion => {
            st.opts.fusion = match crate::config::engine::parse_switch(v.text(0)) {
                Ok(Some(f)) => Some(f),
                _ => return Err(v.err(format!("expected 'on' or 'off', got '{}'", v.text(0)))),
            }
        }
        Opt::Precision => {
            st.opts.precision = Some(match v.text(0) {
                "f64" => Precision::F64,
                "f32" => Precision::F32,
                other => {
                    return Err(v.err(format!("expected 'f64' or 'f32', got '{other}'")));
                }
            })
        }
        Opt::MemoryMb => {
            let n = v.int(0)?;
            let bytes = usize::try_from(n)
                .ok()
                .filter(|&n| n > 0)
                .and_then(|n| n.checked_mul(1 << 20))
                .ok_or_else(|| v.err(format!("expected a positive number of MiB, got '{}'", v.text(0))))?;
            st.opts.memory_budget_bytes = Some(bytes);
        }
        Opt::Nthreads => {
            let n = v.int(0)?;
            let max = crate::base::threads::MAX_THREADS;
            let n = usize::try_from(n).ok().filter(|&n| n > 0 && n <= max).ok_or_else(|| {
                v.err(format!(
                    "expected a positive number of threads, at most {max}, got '{}'",
                    v.text(0)
                ))
            })?;
            st.opts.threads = Some(n);
        }
        Opt::AllowNonfinite => st.opts.allow_nonfinite = true,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Stores a user vector and selects the CUSTOM convention (the pivot is left as it is).
fn set_custom(
    det: &mut crate::config::DetectorConfig,
    field: impl FnOnce(&mut crate::config::CustomVectors) -> &mut Option<Vec3>,
    value: Vec3,
) {
    *field(&mut det.custom) = Some(value);
    det.convention = Convention::Custom;
}
