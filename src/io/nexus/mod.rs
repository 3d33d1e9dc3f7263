//! NeXus / NXmx (HDF5) output (`-nexusfile`, beyond C): the image as int32 counts and float
//! photons with the geometry it was rendered in, written with the pure-Rust `rust-hdf5` crate
//! (no C library). `docs/outputs.md` tells what DIALS, CrystFEL and h5py read of it.
//!
//! # Frames
//! nanoBragg's lab frame has y up in every convention (MOSFLM/DENZO/ADXV:
//! beam along +x; XDS/DIALS: beam along +z). NeXus uses the McStas frame:
//! z along the beam propagation, y up, x = y × z. The rotation
//! `R_lab→NeXus` ([`frame::LabToNexus`]) has rows
//! `Z = beam`, `X = unit(ŷ × Z)`, `Y = Z × X` (ŷ = lab (0,1,0); if the beam is
//! parallel to ŷ, lab x̂ replaces ŷ). It is proper (det = +1) and every
//! vector and position written to the file is `R·(lab vector)`.
//!
//! # Detector chain (see [`chain`])
//! `fast_pixel_direction`/`slow_pixel_direction` (translations of one pixel
//! along the *unrotated* basis) → `module_offset` (unrotated position of the
//! outer corner of pixel (0,0)) → `rot_x` → `rot_y` → `rot_z` → `two_theta`
//! → `.`; so the innermost `rot_x` acts first, as in nanoBragg. Following
//! dxtbx (`dxtbx.nexus.get_dxtbx_detector` uses the translation part of the
//! cumulative `module_offset` chain as the dxtbx panel origin, which in
//! dxtbx is the corner of the first pixel), `module_offset` is the pixel
//! **corner**: the centre of pixel (i, j) lies at `(i+0.5)` fast and
//! `(j+0.5)` slow pixel steps from it.
//!
//! # Files
//! [`writer::NxmxWriter`] streams shots with SWMR; see its docs for crash
//! safety and [`recover::clear_swmr_flags`] for making a crashed file
//! openable without `swmr=True`.
pub mod chain;
pub mod error;
pub mod frame;
pub mod recover;
pub mod writer;

pub use error::NxError;

pub use writer::NxmxWriter;

/// A 3-vector (lab or NeXus frame, metres or unitless).
pub type Vec3 = [f64; 3];

/// The render's detector, in nanoBragg's lab frame, SI units.
#[derive(Clone, Debug, PartialEq)]
pub struct NxDetector {
    pub fpixels: usize,
    pub spixels: usize,
    /// Pixel pitch (m).
    pub pixel_size: f64,
    /// UNrotated unit basis of the convention (fast, slow, normal).
    pub fdet0: Vec3,
    pub sdet0: Vec3,
    pub odet0: Vec3,
    /// Detector rotations (rad), applied as [`frame::rotate_xyz`].
    pub rotx: f64,
    pub roty: f64,
    pub rotz: f64,
    /// 2θ (rad), applied after rotx/y/z, right-handed about the unit axis.
    pub twotheta: f64,
    pub twotheta_axis: Vec3,
    /// Lab position (m) of the OUTER CORNER of pixel (fast 0, slow 0), after all rotations.
    pub pix0: Vec3,
    /// Sensor thickness (m); 0 = none.
    pub sensor_thickness: f64,
    /// e.g. "Si".
    pub sensor_material: String,
    /// Sample to beam spot along the beam (m).
    pub distance: f64,
    /// Beam spot from the corner of pixel (0,0) along fast/slow (m).
    pub beam_center_fast: f64,
    pub beam_center_slow: f64,
}

/// The incident beam, lab frame.
#[derive(Clone, Debug, PartialEq)]
pub struct NxBeam {
    /// Unit propagation direction (lab).
    pub direction: Vec3,
    /// Wavelengths (m).
    pub wavelengths_m: Vec<f64>,
    /// Relative weights, one per wavelength.
    pub weights: Vec<f64>,
    /// E-vector direction (lab); zero vector = unknown/unpolarised.
    pub polarization: Vec3,
    /// Photons per second, if known.
    pub flux: Option<f64>,
}

/// The sample goniometer.
#[derive(Clone, Debug, PartialEq)]
pub struct NxGoniometer {
    /// Unit spindle axis (lab), right-handed.
    pub spindle: Vec3,
    /// φ at the start of the first shot (deg).
    pub phi_start_deg: f64,
    /// Oscillation per shot (deg).
    pub osc_deg: f64,
    /// Exposure per shot (s).
    pub exposure_s: f64,
}

#[cfg(test)]
mod tests;
