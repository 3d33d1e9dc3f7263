//! What an area detector does to the ideal image, as the C suite's `noisify` models it: the
//! photon scale, source flicker, per-pixel calibration error and photon-counting (Poisson)
//! noise, the point-spread function, then gain, ADC offset and read-out noise into integer
//! pixels.
//!
//! Every step runs in C's order and precision with C's random streams, so the same seeds give
//! the same images bit for bit.

pub mod chain;
pub mod noise_image;
pub mod psf;

pub use chain::{adu_pixels, noiseless_photons, noisy_photons, Counts, DetectorModel, PixelBits, PHOTON_SCALE_FLUENCE};
pub use noise_image::detector_counts;
pub use psf::{apply_psf, Psf, PsfReport, PsfShape};
