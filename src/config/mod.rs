//! Plain configuration data: what the user asked for, in SI units, with the C program's defaults.
//!
//! Nothing here is derived. `None` means "not given" (C's `-1` / `NaN` sentinels); the
//! resolution rules (auto-selection of counts and steps, convention and pivot rules, N from the
//! sample size, automatic oversampling...) live in [`crate::experiment`].
//!
//! Units: lengths in metres, angles in radians, wavelengths in metres, fluence in photons/m²,
//! flux in photons/s, exposure in seconds.

pub mod components;
pub mod engine;
pub mod panel_layout;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub use crate::base::vec3::Vec3;

/// Detector convention (`-mosflm`, `-xds`, ...). Selects the detector basis, the default beam
/// centre and, except for `Custom`, forces the pivot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Convention {
    #[default]
    Mosflm,
    Xds,
    Dials,
    Adxv,
    Denzo,
    Custom,
}

/// Point about which detector rotations are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Pivot {
    /// The direct-beam spot stays fixed (`-distance`, `-Xbeam`, `-Ybeam`).
    #[default]
    Beam,
    /// The point of the detector nearest the sample stays fixed (`-close_distance`, `-ORGX`...).
    Sample,
}

/// Crystal shape, i.e. the lattice-factor model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum CrystalShape {
    /// Parallelepiped: sin(πNh)/sin(πh) per axis (`-square_xtal`, default).
    #[default]
    Square,
    /// Sphere: sinc3 of the radius in hkl space (`-round_xtal`).
    Round,
    /// Gaussian in reciprocal space (`-gauss_xtal`).
    Gauss,
    /// Flat-top spots (`-tophat_spots`, `-binary_spots`).
    Tophat,
}

/// Misset orientation of the crystal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub enum Misset {
    #[default]
    None,
    /// Rotations about x, y, z (rad), applied as Rz·Ry·Rx to the reciprocal vectors.
    Angles(Vec3),
    /// Random orientation drawn with C's generator from `misset_seed`.
    Random,
}

/// User-given detector basis vectors (`-fdet_vector` ...). Any vector given selects the
/// CUSTOM convention; vectors not given take CUSTOM's initial defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct CustomVectors {
    pub fdet: Option<Vec3>,
    pub sdet: Option<Vec3>,
    pub odet: Option<Vec3>,
    pub beam: Option<Vec3>,
    pub polar: Option<Vec3>,
    pub spindle: Option<Vec3>,
    pub twotheta_axis: Option<Vec3>,
}

/// Region of interest: inclusive 0-based pixel bounds; x is fast, y is slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roi {
    pub xmin: i64,
    pub xmax: i64,
    pub ymin: i64,
    pub ymax: i64,
}

/// Detector geometry and sensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectorConfig {
    pub convention: Convention,
    /// Pivot as left by the flags (C's `detector_pivot` after parsing; only CUSTOM keeps it).
    pub pivot: Pivot,
    /// Pixel pitch (m). Default 0.1 mm.
    pub pixel_size: f64,
    /// Fast-axis pixel count, if given (`-detpixels`, `-detpixels_f`, header SIZE1).
    pub fpixels: Option<usize>,
    /// Slow-axis pixel count, if given.
    pub spixels: Option<usize>,
    /// Detector size along fast (m). Default 102.4 mm.
    pub detsize_f: f64,
    /// Detector size along slow (m). Default 102.4 mm.
    pub detsize_s: f64,
    /// Sample to beam spot along the beam (m). Default 100 mm.
    pub distance: f64,
    /// Sample to detector plane, perpendicular (m).
    pub close_distance: Option<f64>,
    /// Beam centre (m), `-Xbeam`/`-Ybeam`.
    pub xbeam: Option<f64>,
    pub ybeam: Option<f64>,
    /// Near point (m), `-Xclose`/`-Yclose`.
    pub xclose: Option<f64>,
    pub yclose: Option<f64>,
    /// XDS origin (pixels), `-ORGX`/`-ORGY`.
    pub orgx: Option<f64>,
    pub orgy: Option<f64>,
    /// Detector rotations about lab x, y, z (rad).
    pub rotx: f64,
    pub roty: f64,
    pub rotz: f64,
    /// 2θ swing of the detector (rad).
    pub twotheta: f64,
    pub custom: CustomVectors,
    /// ω = 1/R² without obliquity (`-point_pixel`).
    pub point_pixel: bool,
    /// Spherical detector (`-curved_det`).
    pub curved: bool,
    /// Sensor thickness (m). Default 0.
    pub thickness: f64,
    /// Number of sensor layers, if given.
    pub thicksteps: Option<i64>,
    /// Layer step (m), if given.
    pub thickstep: Option<f64>,
    /// Attenuation coefficient μ (1/m), if given (`-detector_abs`).
    pub mu: Option<f64>,
    pub roi: Option<Roi>,
    /// Mask pixels (fast-major, `fpixels·spixels`), 0 = skip (`-mask`).
    pub mask: Option<Vec<u16>>,
    /// A detector of several panels read from `-geom` or `-detector_expt` (beyond C), in the
    /// file's frame; it replaces the one panel the other detector flags describe.
    #[serde(default)]
    pub panels: Option<crate::config::panel_layout::PanelLayout>,
    /// The grouping whose groups the panel motions move (`-panel_groups`; `None` = each
    /// panel alone), one of the layout's groupings.
    #[serde(default)]
    pub panel_groups: Option<String>,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        Self {
            convention: Convention::Mosflm,
            pivot: Pivot::Beam,
            pixel_size: 0.1e-3,
            fpixels: None,
            spixels: None,
            detsize_f: 102.4e-3,
            detsize_s: 102.4e-3,
            distance: 100.0e-3,
            close_distance: None,
            xbeam: None,
            ybeam: None,
            xclose: None,
            yclose: None,
            orgx: None,
            orgy: None,
            rotx: 0.0,
            roty: 0.0,
            rotz: 0.0,
            twotheta: 0.0,
            custom: CustomVectors::default(),
            point_pixel: false,
            curved: false,
            thickness: 0.0,
            thicksteps: None,
            thickstep: None,
            mu: None,
            roi: None,
            mask: None,
            panels: None,
            panel_groups: None,
        }
    }
}

/// One row of a `-sourcefile`: position (m, any length), weight (ignored, as C), wavelength (m).
/// `None` columns take C's defaults (−10 m·b component, weight 1, λ0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct SourceRow {
    pub x: Option<f64>,
    pub y: Option<f64>,
    pub z: Option<f64>,
    pub weight: Option<f64>,
    pub lambda: Option<f64>,
}

/// Incident beam: spectrum, divergence, polarization, intensity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeamConfig {
    /// Central wavelength λ0 (m). Default 1 Å.
    pub lambda0: f64,
    /// Δλ/λ as a fraction (`-dispersion` in percent / 100). Default 0.
    pub dispersion: f64,
    pub dispsteps: Option<i64>,
    /// Divergence ranges and steps (rad).
    pub hdivrange: Option<f64>,
    pub vdivrange: Option<f64>,
    pub hdivstep: Option<f64>,
    pub vdivstep: Option<f64>,
    pub hdivsteps: Option<i64>,
    pub vdivsteps: Option<i64>,
    /// Elliptical trimming of the divergence grid (`-round_div`, default) vs `-square_div`.
    pub round_div: bool,
    /// Kahn polarization factor K. C's default is 0.
    pub polarization: f64,
    /// Polarization factor forced to 1.
    pub nopolar: bool,
    /// Photons per m². Default ≈ 1.25932e29.
    pub fluence: f64,
    /// Photons per second; when ≠ 0 it overrides the fluence.
    pub flux: f64,
    /// Seconds. Default 1.
    pub exposure: f64,
    /// Beam size (m). Default 0.1 mm.
    pub beamsize: f64,
    /// Rows of `-sourcefile`, if given (already read).
    pub sources: Option<Vec<SourceRow>>,
}

/// C's default fluence (photons/m²).
pub const DEFAULT_FLUENCE: f64 = 125932015286227086360700780544.0;

impl Default for BeamConfig {
    fn default() -> Self {
        Self {
            lambda0: 1.0e-10,
            dispersion: 0.0,
            dispsteps: None,
            hdivrange: None,
            vdivrange: None,
            hdivstep: None,
            vdivstep: None,
            hdivsteps: None,
            vdivsteps: None,
            round_div: true,
            polarization: 0.0,
            nopolar: false,
            fluence: DEFAULT_FLUENCE,
            flux: 0.0,
            exposure: 1.0,
            beamsize: 1e-4,
            sources: None,
        }
    }
}

/// Where structure factors come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub enum HklSource {
    /// `-hkl FILE`: read the text file (and write `Fdump.bin`, as C).
    File(PathBuf),
    /// No `-hkl`: read `Fdump.bin` from the working directory if it exists.
    #[default]
    FdumpIfPresent,
    /// Use only `default_F` (library use; the CLI never produces this).
    None,
}

/// Crystal: cell, orientation, size, mosaicity, structure factors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrystalConfig {
    /// a, b, c (m) and α, β, γ (rad), from `-cell`.
    pub cell: Option<[f64; 6]>,
    /// MOSFLM A matrix as read from `-mat` (rows: x, y, z components of a*, b*, c*), in the
    /// file's units (Å⁻¹ × λ in Å); setup rescales it by 1e-10/λ0.
    pub matrix: Option<[[f64; 3]; 3]>,
    pub misset: Misset,
    /// Seed for `-misset random` (C stores −n). Default: the start-up time, as C.
    pub misset_seed: Option<i64>,
    /// Unit cells along a, b, c (`-N`, `-Na`...). Default 1.
    pub na: f64,
    pub nb: f64,
    pub nc: f64,
    /// Sample size along x, y, z (m); > 0 sets N from the cell. Default 0.
    pub sample_x: f64,
    pub sample_y: f64,
    pub sample_z: f64,
    pub shape: CrystalShape,
    /// Shape-width factor. Default 1.
    pub fudge: f64,
    /// Mosaic spread (rad), if given.
    pub mosaic_spread: Option<f64>,
    pub mosaic_domains: Option<i64>,
    /// Mosaic seed as given (C stores −n). Default 12345678.
    pub mosaic_seed: i64,
    /// Spindle start angle φ0 (rad). Default 0.
    pub phi0: f64,
    /// Oscillation range (rad), if given.
    pub osc: Option<f64>,
    pub phistep: Option<f64>,
    pub phisteps: Option<i64>,
    pub hkl: HklSource,
    /// Structure factor for reflections not in the HKL table. Default 0.
    pub default_f: f64,
    /// An amorphous sample's diffuse scattering added to the image (`-stol`).
    #[serde(default)]
    pub amorphous: AmorphousConfig,
    /// Tricubic interpolation: `Some(true)` = `-interpolate`, `Some(false)` = `-nointerpolate`,
    /// `None` = automatic.
    pub interpolate: Option<bool>,
}

impl Default for CrystalConfig {
    fn default() -> Self {
        Self {
            cell: None,
            matrix: None,
            misset: Misset::None,
            misset_seed: None,
            na: 1.0,
            nb: 1.0,
            nc: 1.0,
            sample_x: 0.0,
            sample_y: 0.0,
            sample_z: 0.0,
            shape: CrystalShape::Square,
            fudge: 1.0,
            mosaic_spread: None,
            mosaic_domains: None,
            mosaic_seed: 12345678,
            phi0: 0.0,
            osc: None,
            phistep: None,
            phisteps: None,
            hkl: HklSource::FdumpIfPresent,
            default_f: 0.0,
            interpolate: None,
            amorphous: AmorphousConfig::default(),
        }
    }
}

/// What a table's abscissa is, with the factor C applies to reach sinθ/λ in m⁻¹.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StolUnits {
    /// `-stol`: sinθ/λ (Å⁻¹).
    Stol,
    /// `-4stol`: 4·sinθ/λ (Å⁻¹).
    FourStol,
    /// `-Q`: Q = 4π·sinθ/λ (Å⁻¹).
    Q,
}

impl StolUnits {
    /// C's multiplier from the file's abscissa to sinθ/λ (m⁻¹).
    pub fn to_stol_per_m(self) -> f64 {
        match self {
            StolUnits::Stol => 1e10,
            StolUnits::FourStol => 1e10 / 4.0,
            StolUnits::Q => 1e10 / std::f64::consts::PI / 4.0,
        }
    }
}

/// An amorphous sample (water, ice, air, …) scattering beside the crystal, from its
/// F(sinθ/λ) table, as the C suite's `nonBragg` renders it: `-stol FILE` (or `-4stol`, `-Q`),
/// `-thick`, `-density`, `-MW`, `-molecules`. The sample is `thickness` along the beam and
/// nonBragg's 0.1 mm across, clipped by the beam.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AmorphousConfig {
    /// The table and its abscissa; `None`: no amorphous background.
    pub table: Option<(std::path::PathBuf, StolUnits)>,
    /// Thickness along the beam (m; `-thick` in mm, default 0.1 mm).
    pub thickness: f64,
    /// Density (g/m³; `-density` in g/cm³, default 1).
    pub density: f64,
    /// Molecular weight (g/mol; `-MW`, default 18).
    pub molecular_weight: f64,
    /// Molecules in the beam (`-molecules`); 0: from the density.
    pub molecules: f64,
}

impl Default for AmorphousConfig {
    fn default() -> Self {
        Self {
            table: None,
            thickness: 1e-4,
            density: 1e6,
            molecular_weight: 18.0,
            molecules: 0.0,
        }
    }
}

/// Sampling of each pixel and culling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SamplingConfig {
    /// Sub-pixels per axis; `None` = C's automatic choice.
    pub oversample: Option<i64>,
    /// Apply capture fraction / polarization / solid angle to the running sum (C's flags).
    pub oversample_thick: bool,
    pub oversample_polar: bool,
    pub oversample_omega: bool,
    /// Skip sub-paths with resolution d < dmin (m). 0 = off.
    pub dmin: f64,
    /// Water background thickness (m). 0 = off.
    pub water_size: f64,
}

/// Output files and image scaling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputConfig {
    pub floatfile: PathBuf,
    pub intfile: PathBuf,
    pub noisefile: Option<PathBuf>,
    pub pgmfile: Option<PathBuf>,
    /// Log-scaled 8-bit PNG preview (`-pngfile`, beyond C).
    pub pngfile: Option<PathBuf>,
    /// The float image as a NumPy `.npy` array `[slow, fast]` (`-npyfile`, beyond C).
    pub npyfile: Option<PathBuf>,
    /// miniCBF image without noise (`-cbffile`, beyond C): the `-intfile` counts as signed
    /// 32-bit integers, not clipped at 65535, with a Pilatus header.
    #[serde(default)]
    pub cbffile: Option<PathBuf>,
    /// miniCBF image with Poisson noise (`-cbf_noisefile`, beyond C): the `-noisefile` counts
    /// (the same draw) as signed 32-bit integers, not clipped at 65535.
    #[serde(default)]
    pub cbf_noisefile: Option<PathBuf>,
    /// NeXus NXmx file (`-nexusfile`, beyond C): int32 counts (the noise image's when noise is
    /// on, else the `-intfile` counts), the float image and the render's geometry; one stack
    /// `[shots, slow, fast]` per shard in shot runs.
    #[serde(default)]
    pub nexusfile: Option<PathBuf>,
    /// Derivative images (`-derivative NAME FILE`, beyond C): raw f32 ∂I/∂NAME per pixel.
    #[serde(default)]
    pub derivatives: Vec<(String, PathBuf)>,
    /// The C suite's detector model on the noise images (`-flicker`, `-calibration`,
    /// `-readout`, `-gain`, `-psf`, …, beyond C's nanoBragg); `None`: C's plain Poisson noise.
    #[serde(default)]
    pub detector: Option<DetectorNoiseConfig>,
    /// Int-image scale; `None` or ≤ 0 = automatic (55000 / max).
    pub scale: Option<f64>,
    /// Offset added to int and noise images. Default 40.
    pub adc: f64,
    pub pgmscale: Option<f64>,
    /// Noise seed as given (C stores −n). Default: the start-up time.
    pub seed: Option<i64>,
    pub printout: bool,
    /// (fast, slow) pixel to print, in the order of `-printout_pixel f s`.
    pub printout_pixel: Option<(i64, i64)>,
    /// (slow, fast) pixel to trace.
    pub trace_pixel: Option<(i64, i64)>,
    pub progress: bool,
}

/// The point-spread function's form (`-psf gauss|fiber`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PsfKind {
    Gauss,
    Fiber,
}

/// `noisify`'s detector model as nanobragg applies it to its noise images: flicker and
/// calibration error on each pixel's mean, the Poisson draw, a point-spread function, gain,
/// the ADC offset (`-adc`) and read-out noise. Every term is off unless its flag is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectorNoiseConfig {
    /// Relative rms of the source's flicker, one draw per pixel (`-flicker`).
    pub flicker: f64,
    /// Relative rms of each pixel's static calibration error (`-calibration`).
    pub calibration: f64,
    /// The calibration error's seed as given (`-calib_seed n`; C's seed variable is −n);
    /// `None`: noisify's fixed default.
    pub calib_seed: Option<i64>,
    /// Gaussian read-out noise (ADU rms, `-readout`).
    pub readout: f64,
    /// ADU per photon (`-gain`).
    pub gain: f64,
    /// The PSF's form (`-psf`); `None`: no PSF.
    pub psf: Option<PsfKind>,
    /// The PSF's FWHM (m; `-psf_fwhm` in µm, default 46 µm).
    pub psf_fwhm: f64,
    /// The PSF's radius (pixels; `-psf_radius`, 0: chosen per pixel).
    pub psf_radius: u32,
}

impl Default for DetectorNoiseConfig {
    fn default() -> Self {
        Self {
            flicker: 0.0,
            calibration: 0.0,
            calib_seed: None,
            readout: 0.0,
            gain: 1.0,
            psf: None,
            psf_fwhm: 46e-6,
            psf_radius: 0,
        }
    }
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            floatfile: PathBuf::from("floatimage.bin"),
            intfile: PathBuf::from("intimage.img"),
            noisefile: Some(PathBuf::from("noiseimage.img")),
            pgmfile: Some(PathBuf::from("image.pgm")),
            pngfile: None,
            npyfile: None,
            cbffile: None,
            cbf_noisefile: None,
            nexusfile: None,
            derivatives: Vec::new(),
            detector: None,
            scale: None,
            adc: 40.0,
            pgmscale: None,
            seed: None,
            printout: false,
            printout_pixel: None,
            trace_pixel: None,
            progress: true,
        }
    }
}

/// Everything a simulation needs, as the user gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SimConfig {
    pub detector: DetectorConfig,
    pub beam: BeamConfig,
    pub crystal: CrystalConfig,
    pub sampling: SamplingConfig,
    pub output: OutputConfig,
}
