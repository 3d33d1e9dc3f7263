//! The `nonbragg` program: the C suite's `nonBragg`, the diffuse scattering of an amorphous
//! sample (water, ice, air, …) from its F(sinθ/λ) table. It writes the float image
//! (photons/pixel), a scaled SMV image, a PGM preview and a Poisson-noise SMV image, and prints
//! C's log.
//!
//! The image itself is [`crate::render::amorphous`]; this module reads the flags, resolves the
//! detector, the sources and the sample as C does, prints and writes.

pub mod flags;
mod setup;

/// F(sinθ/λ) of a `.stol` table, the curve the image is drawn from.
pub use crate::physics::amorphous::StolCurve;

use crate::app::console::Console;
use crate::base::cfmt::fmt_g;
use crate::base::error::{Error, Result};
use crate::io::smv::{pad_header, write_smv_block, SmvPixels};
use crate::render::amorphous::{render_background, BackgroundImage};
use crate::render::noise::Deviates;
use flags::{NonBraggArgs, Parsed};
use setup::Setup;

/// Where the log goes: standard output for the program, nowhere for [`render_image`].
type Out = Console<Box<dyn std::io::Write>>;

/// Runs `nonbragg` on `args` (without the program name); returns the exit status: 0, or 9 after
/// printing `nonbragg: error: …` to standard error.
pub fn main(args: &[String]) -> u8 {
    let mut con: Out = Console::new(Box::new(std::io::stdout()));
    crate::app::console::exit_status("nonbragg", &mut con, |con| run(args, con))
}

/// The image `nonbragg` would render for `args` (its flags), without printing or writing
/// anything: (width, height, photons per pixel fast-major; F with `-Fmap`).
pub fn render_image(args: &[String]) -> Result<(usize, usize, Vec<f32>)> {
    let Parsed::Run(a) = flags::parse(args)? else {
        return Err(Error::flag("-h", "asks for the usage, not an image"));
    };
    if a.stol.is_none() {
        return Err(Error::flag(
            "-stol",
            "no structure-factor table: give -stol FILE (or -4stol, -Q)",
        ));
    }
    let setup = setup::resolve(&a, &mut Console::new(Box::new(std::io::sink())))?;
    let image = match a.threads {
        None => render_background(&setup.scene),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| Error::flag("-nthreads", e.to_string()))?
            .install(|| render_background(&setup.scene)),
    };
    Ok((setup.scene.width, setup.scene.height, image.pixels))
}

fn run(args: &[String], con: &mut Out) -> Result<()> {
    let mut a = match flags::parse(args)? {
        Parsed::Help => {
            write!(con, "{}", flags::USAGE)?;
            return Ok(());
        }
        Parsed::Run(a) => *a,
    };
    // one clock reading, as C's `seed = -time()`
    a.seed = Some(a.seed.unwrap_or_else(clock_seed));
    writeln!(
        con,
        "nonBragg amorphous material diffraction simulator - James Holton and Ken Frankel 3-19-16"
    )?;
    if a.stol.is_none() {
        write!(con, "{}", flags::USAGE)?;
        return Err(Error::flag(
            "-stol",
            "no structure-factor table: give -stol FILE (or -4stol, -Q)",
        ));
    }
    crate::base::threads::apply_process_wide(crate::base::threads::resolve(a.threads)?);
    let setup = setup::resolve(&a, con)?;
    print_settings(&a, &setup, con)?;
    let image = render_background(&setup.scene);
    print_progress(&a, &setup, con)?;
    writeln!(con)?;
    writeln!(
        con,
        "solid angle subtended by detector = {} steradian ( {}% sphere)",
        fmt_g(image.omega_sum),
        fmt_g(100.0 * image.omega_sum / 4.0 / std::f64::consts::PI)
    )?;
    write_outputs(&a, &setup, &image, con)
}

/// C's `-time()`: minus the seconds since 1970.
fn clock_seed() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    -(now.map_or(0, |d| d.as_secs()) as i64)
}

fn print_settings(a: &NonBraggArgs, s: &Setup, con: &mut Out) -> Result<()> {
    let g = fmt_g;
    let sc = &s.scene;
    writeln!(
        con,
        "  {} initialized F points (will cubic-spline interpolate between them)",
        sc.curve.len()
    )?;
    writeln!(
        con,
        "  wave={} meters +/- {}% in {} steps",
        g(a.lambda),
        g(s.dispersion.range * 100.0),
        s.dispersion.count
    )?;
    match sc.polarization {
        None => writeln!(con, "  polarization effect disabled")?,
        Some((k, _)) => writeln!(con, "  Kahn polarization factor: {k:.6}")?,
    }
    if sc.curved {
        writeln!(con, "  curved detector: all pixels same distance from origin")?;
    }
    if sc.point_pixel {
        writeln!(con, "  pixel obliquity effect disabled")?;
    }
    if sc.fmap {
        writeln!(con, "  Fmap mode: plotting structure factor at every pixel")?;
    }
    writeln!(con, "  incident fluence: {} photons/m^2", g(sc.fluence))?;
    writeln!(
        con,
        "  sample is {} m thick x {} m high x {} m wide, {} g/cm^3 and {} g/mol ({} molecules)",
        g(s.sample[0]),
        g(s.sample[1]),
        g(s.sample[2]),
        g(s.density / 1e6),
        g(a.molecular_weight),
        g(sc.molecules)
    )?;
    writeln!(
        con,
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        g(sc.distance),
        g(s.detsize.0),
        g(s.detsize.1),
        g(sc.pixel),
        sc.width,
        sc.height
    )?;
    writeln!(con, "  Xbeam={} Ybeam={}", g(s.beam_center.0), g(s.beam_center.1))?;
    let v = |v: [f64; 3]| format!("{} {} {}", g(v[0]), g(v[1]), g(v[2]));
    writeln!(con, "  detector origin: {}", v(sc.pix0))?;
    writeln!(con, "  DIRECTION_OF_DETECTOR_X-AXIS= {}", v(sc.fdet))?;
    writeln!(con, "  DIRECTION_OF_DETECTOR_Y-AXIS= {}", v(sc.sdet))?;
    writeln!(con, "  INCIDENT_BEAM_DIRECTION= {}", v(sc.beam))?;
    writeln!(con, "  POLARIZATION_PLANE_NORMAL= {}", v(s.polar_axis))?;
    let r = sc.roi;
    writeln!(con, "  roi: {} < x < {} && {} < y < {}", r.0, r.1, r.2, r.3)?;
    writeln!(
        con,
        "  hdivrange={} hdivstep={}  radians",
        g(s.hdiv.range),
        g(s.hdiv.step)
    )?;
    writeln!(
        con,
        "  vdivrange={} vdivstep={}  radians",
        g(s.vdiv.range),
        g(s.vdiv.step)
    )?;
    writeln!(con, "  {} divergence steps", s.divsteps)?;
    writeln!(con, "  {} sources", sc.sources.len())?;
    writeln!(con, "  {} pixel oversample steps", sc.oversample)?;
    if a.noise {
        writeln!(con, "\n  noise image paramters:")?;
        writeln!(con, "  seed: {}", a.seed.unwrap_or_default())?;
    }
    Ok(())
}

/// C's progress meter: every 5 %, and every 1 % in the first and last tenth, of the ROI's
/// `(xmax − xmin + 1)·(ymax − ymin + 1)` pixels (C counts one row and column too many).
fn print_progress(a: &NonBraggArgs, s: &Setup, con: &mut Out) -> Result<()> {
    let r = s.scene.roi;
    let total = ((r.1 - r.0 + 1) * (r.3 - r.2 + 1)).max(0) as u64;
    if !a.progress || total / 100 == 0 {
        return Ok(());
    }
    let rendered = (0..s.scene.width * s.scene.height).filter(|&j| s.in_roi(j)).count() as u64;
    for p in 0..rendered {
        let edge = 10 * p < total || 10 * p > 9 * total;
        if p % (total / 20).max(1) == 0 || (edge && p % (total / 100) == 0) {
            writeln!(con, "{}% done", p * 100 / total)?;
        }
    }
    Ok(())
}

/// Statistics of the ROI's pixels, as C prints them.
struct Stats {
    max: f64,
    max_at: (f64, f64),
    mean: f64,
    rms: f64,
    rmsd: f64,
}

fn stats(s: &Setup, image: &BackgroundImage) -> Stats {
    let sc = &s.scene;
    let roi: Vec<usize> = (0..sc.width * sc.height).filter(|&j| s.in_roi(j)).collect();
    let (mut max, mut max_at, mut sum, mut sumsqr) = (0.0f64, (0.0, 0.0), 0.0f64, 0.0f64);
    for &j in &roi {
        let v = image.pixels[j] as f64;
        if v > max {
            (max, max_at) = (v, image.last_sample[j]);
        }
        sum += v;
        // C squares the float pixel in single precision
        sumsqr += (image.pixels[j] * image.pixels[j]) as f64;
    }
    let n = roi.len() as f64;
    let mean = sum / n.max(1.0);
    let dof = if roi.len() <= 1 { 1.0 } else { n - 1.0 };
    let deviations: f64 = roi.iter().map(|&j| (image.pixels[j] as f64 - mean).powi(2)).sum();
    Stats {
        max,
        max_at,
        mean,
        rms: (sumsqr / dof).sqrt(),
        rmsd: (deviations / dof).sqrt(),
    }
}

fn write_outputs(a: &NonBraggArgs, s: &Setup, image: &BackgroundImage, con: &mut Out) -> Result<()> {
    let sc = &s.scene;
    let pixels = sc.width * sc.height;
    let st = stats(s, image);
    writeln!(con, "writing {} as {pixels} 4-byte floats", a.floatfile.display())?;
    crate::io::raw::write_float_image(&a.floatfile, &image.pixels)?;
    writeln!(
        con,
        "max_I = {}  at {} {}",
        fmt_g(st.max),
        fmt_g(st.max_at.0),
        fmt_g(st.max_at.1)
    )?;
    writeln!(
        con,
        "mean= {} rms= {} rmsd= {}",
        fmt_g(st.mean),
        fmt_g(st.rms),
        fmt_g(st.rmsd)
    )?;
    let mut scale = a.intfile_scale;
    if scale <= 0.0 {
        scale = if st.max > 0.0 { 55000.0 / st.max } else { 1.0 };
    }
    writeln!(con, "intfile_scale = {}", fmt_g(scale))?;
    let roi_only = |value: &dyn Fn(f32) -> u16| -> Vec<u16> {
        (0..pixels)
            .map(|j| match s.in_roi(j) {
                true => value(image.pixels[j]),
                false => 0,
            })
            .collect()
    };
    let ints = roi_only(&|v| {
        let test = (v as f64 * scale + a.adc).clamp(0.0, 65535.0);
        crate::render::output::floor_to_i32((test + 0.5) as f32) as u16
    });
    writeln!(con, "writing {} as 2-byte integers", a.intfile.display())?;
    let header = pad_header(&s.header_text());
    write_smv_block(&a.intfile, &header, SmvPixels::U16(&ints))?;
    let mut pgm_scale = a.pgm_scale;
    if pgm_scale <= 0.0 {
        pgm_scale = if st.rmsd > 0.0 { 250.0 / (5.0 * st.rmsd) } else { scale };
    }
    writeln!(con, "pgm_scale = {}", fmt_g(pgm_scale))?;
    if a.pgm {
        writeln!(con, "writing {} as 1-byte integers", a.pgmfile.display())?;
        let bytes = roi_only(&|v| (v as f64 * pgm_scale).clamp(0.0, 255.0) as u16);
        crate::io::pgm::write_pgm(
            &a.pgmfile,
            sc.width,
            sc.height,
            pgm_scale,
            bytes.into_iter().map(|b| b as u8),
        )?;
    }
    if a.noise {
        noise_image(a, s, image, &header, con)?;
    }
    Ok(())
}

/// Poisson noise on the photons, plus the ADC offset, into a 16-bit SMV image.
fn noise_image(a: &NonBraggArgs, s: &Setup, image: &BackgroundImage, header: &[u8], con: &mut Out) -> Result<()> {
    let (mut deviates, mut seed) = (Deviates::default(), a.seed.unwrap_or_default());
    let (mut photons, mut overloads) = (0.0f64, 0usize);
    let counts: Vec<u16> = (0..image.pixels.len())
        .map(|j| {
            if !s.in_roi(j) {
                return 0;
            }
            let drawn = deviates.poisson(image.pixels[j], &mut seed) as f64;
            photons += drawn;
            let mut test = drawn + a.adc;
            if test > 65535.0 {
                test = 65535.0;
                overloads += 1;
            }
            test as u16
        })
        .collect();
    writeln!(con, "{photons:.0} photons on noise image ({overloads} overloads)")?;
    writeln!(con, "writing {} as 2-byte integers", a.noisefile.display())?;
    write_smv_block(&a.noisefile, header, SmvPixels::U16(&counts))
}
