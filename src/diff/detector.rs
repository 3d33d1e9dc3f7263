//! The detector as tensors: [`DetectorGeometry::new`] from the distance, beam centre,
//! rotations and 2θ, for every convention and both pivots.
//!
//! Parameter → geometry map (units):
//! * `rotations` `[3]` (rad) and `twotheta` `[1]` (rad) → the orientation
//!   `R = R_2θ(axis)·Rz·Ry·Rx`; `fdet, sdet, odet = R·(f₀, s₀, o₀)`.
//! * `ratio = b·(Rz·Ry·Rx·o₀)` (2θ excluded, as C); `close = -close_distance` if given, else
//!   `|ratio·distance|` (m); `distance₀ = close/ratio` (m).
//! * `beam_center` `[2]` = (Xbeam, Ybeam) (m) in the convention's own axes → the beam spot
//!   (Fbeam, Sbeam) on the detector (m): MOSFLM (Ybeam + ½px, Xbeam + ½px), DENZO
//!   (Ybeam, Xbeam), ADXV (Xbeam, detsize_s − Ybeam), CUSTOM (Xbeam, Ybeam); XDS and DIALS do
//!   not use it. CUSTOM also takes its near point (Fclose, Sclose) = (Xbeam, Ybeam); XDS and
//!   DIALS take theirs from ORGX/ORGY or the detector centre (host constants).
//! * pivot SAMPLE: `pix0 = R·(−Fclose·f₀ − Sclose·s₀ + close·o₀)`;
//!   pivot BEAM: `pix0 = −Fbeam·fdet − Sbeam·sdet + distance₀·b` (m).
//! * recomputed: `close_distance = pix0·odet`, `distance = close_distance/ratio` (m).
//!
//! Discrete choices (convention, pivot, the unrotated basis, the near point) are constants of
//! a [`DetectorFrame`], decided by [`DetectorGeometry::new`]. That host setup evaluates this
//! same function in f64 ([`super::host`]) for the numbers C prints: there is one detector
//! geometry.
//!
//! `ratio = 0` (detector normal perpendicular to the beam, no image) is replaced by
//! `f64::MIN_POSITIVE`, as C's guard. `|ratio·distance|` is differentiated as
//! `sign(ratio·distance)·d(ratio·distance)`.
//!
//! [`DetectorGeometry::new`]: crate::experiment::detector::DetectorGeometry::new

use super::rotation::{axis_rotation, rotation_xyz};
use super::{const_scalar, const_vec3, dot3, elem, mat_vec3};
use crate::base::vec3::Vec3;
use crate::config::{Convention, Pivot};
use burn::tensor::{backend::Backend, Tensor};

/// The detector's geometry as tensors.
#[derive(Debug, Clone)]
pub struct DetectorTensors<B: Backend> {
    /// Rotated unit basis: fast, slow, normal (away from the sample), `[3]` each.
    pub fdet: Tensor<B, 1>,
    pub sdet: Tensor<B, 1>,
    pub odet: Tensor<B, 1>,
    /// Lab position of the corner of pixel (0, 0), `[3]` (m).
    pub pix0: Tensor<B, 1>,
    /// Sample to detector plane, recomputed as `pix0·odet`, `[1]` (m).
    pub close_distance: Tensor<B, 1>,
    /// Sample to beam spot along the beam, recomputed as `close_distance/ratio`, `[1]` (m).
    pub distance: Tensor<B, 1>,
    /// `b·(Rz·Ry·Rx·o₀)` (2θ excluded, as C), `[1]`.
    pub ratio: Tensor<B, 1>,
}

impl<B: Backend> DetectorTensors<B> {
    /// The detector of unit basis `[fdet, sdet, odet]`, origin `pix0` (m) and `ratio`, its
    /// distances recomputed: `close_distance = pix0·odet`, `distance = close_distance/ratio`.
    pub fn placed(basis: [Tensor<B, 1>; 3], pix0: Tensor<B, 1>, ratio: Tensor<B, 1>) -> Self {
        let [fdet, sdet, odet] = basis;
        let close_distance = dot3(pix0.clone(), odet.clone());
        Self {
            distance: close_distance.clone() / ratio.clone(),
            ratio,
            close_distance,
            fdet,
            sdet,
            odet,
            pix0,
        }
    }
}

/// The constants of a detector: what stays fixed while its continuous parameters vary.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorFrame {
    pub convention: Convention,
    /// The pivot used (forced by the convention except for CUSTOM).
    pub pivot: Pivot,
    /// Pixel pitch (m).
    pub pixel_size: f64,
    /// Detector size along slow (m); ADXV measures Ybeam from the far edge.
    pub detsize_s: f64,
    /// Unrotated unit basis f₀, s₀, o₀ (o₀ as C uses it: rebuilt as f₀ × s₀ when the given
    /// normal is not a unit vector).
    pub f0: Vec3,
    pub s0: Vec3,
    pub o0: Vec3,
    /// Beam direction b (unit).
    pub beam: Vec3,
    /// 2θ rotation axis (unit).
    pub twotheta_axis: Vec3,
    /// Near point (Fclose, Sclose) (m) for pivot SAMPLE in XDS and DIALS (from ORGX/ORGY or the
    /// detector centre); CUSTOM takes it from the beam centre instead, BEAM pivots ignore it.
    pub fclose: f64,
    pub sclose: f64,
}

/// The detector in `frame` (the constants [`DetectorGeometry::new`] decides) as a function of
/// its continuous parameters:
///
/// * `distance` `[1]` (m): the user's `-distance` (sample to beam spot along the beam).
/// * `close_distance` `[1]` (m): the user's `-close_distance`, if given; it overrides
///   `distance`.
/// * `beam_center` `[2]` (m): (Xbeam, Ybeam) as the convention sees them; unused by XDS and
///   DIALS.
/// * `rotations` `[3]` (rad): detector rotations about lab x, y, z.
/// * `twotheta` `[1]` (rad): 2θ swing about the frame's 2θ axis.
///
/// Constants are made on the device and in the dtype of `distance`.
///
/// [`DetectorGeometry::new`]: crate::experiment::detector::DetectorGeometry::new
pub fn detector_in_frame<B: Backend>(
    frame: &DetectorFrame,
    distance: Tensor<B, 1>,
    close_distance: Option<Tensor<B, 1>>,
    beam_center: Tensor<B, 1>,
    rotations: Tensor<B, 1>,
    twotheta: Tensor<B, 1>,
) -> DetectorTensors<B> {
    let like = distance.clone();
    let vec = |v: Vec3| const_vec3(v, &like);
    let (f0, s0, o0, beam) = (vec(frame.f0), vec(frame.s0), vec(frame.o0), vec(frame.beam));
    let r_xyz = rotation_xyz(rotations);
    let orient = axis_rotation(vec(frame.twotheta_axis), twotheta).matmul(r_xyz.clone());
    let ratio = nonzero(dot3(beam.clone(), mat_vec3(r_xyz, o0.clone())));
    let close0 = close_distance.unwrap_or_else(|| (ratio.clone() * distance).abs());
    let distance0 = close0.clone() / ratio.clone();
    let [fdet, sdet, odet] = [&f0, &s0, &o0].map(|v| mat_vec3(orient.clone(), v.clone()));
    let pix0 = match frame.pivot {
        Pivot::Sample => {
            let [fclose, sclose] = near_point(frame, &beam_center, &like);
            let unrotated = f0 * fclose.neg() - s0 * sclose + o0 * close0;
            mat_vec3(orient, unrotated)
        }
        Pivot::Beam => {
            let [fbeam, sbeam] = beam_spot(frame, &beam_center);
            fdet.clone() * fbeam.neg() - sdet.clone() * sbeam + beam * distance0
        }
    };
    DetectorTensors::placed([fdet, sdet, odet], pix0, ratio)
}

/// Beam spot (Fbeam, Sbeam), `[1]` each (m), from (Xbeam, Ybeam) `[2]` in the convention's axes.
fn beam_spot<B: Backend>(frame: &DetectorFrame, beam_center: &Tensor<B, 1>) -> [Tensor<B, 1>; 2] {
    let (xbeam, ybeam) = (elem(beam_center, 0), elem(beam_center, 1));
    match frame.convention {
        Convention::Mosflm => {
            let half = 0.5 * frame.pixel_size;
            [ybeam + half, xbeam + half]
        }
        Convention::Denzo => [ybeam, xbeam],
        Convention::Adxv => [xbeam, ybeam.neg() + frame.detsize_s],
        Convention::Xds | Convention::Dials | Convention::Custom => [xbeam, ybeam],
    }
}

/// Near point (Fclose, Sclose), `[1]` each (m): CUSTOM's is the beam centre, the other
/// conventions' a constant of the frame.
fn near_point<B: Backend>(frame: &DetectorFrame, beam_center: &Tensor<B, 1>, like: &Tensor<B, 1>) -> [Tensor<B, 1>; 2] {
    match frame.convention {
        Convention::Custom => [elem(beam_center, 0), elem(beam_center, 1)],
        _ => [frame.fclose, frame.sclose].map(|x| const_scalar(x, like)),
    }
}

/// `ratio`, or the smallest positive f64 where it is exactly 0 (a detector normal
/// perpendicular to the beam: no image, but finite numbers, as C's guard), without comparisons
/// (a comparison would fix the device's default dtypes, see [`super::host`]). Rounds to 0 in f32.
pub(crate) fn nonzero<B: Backend>(ratio: Tensor<B, 1>) -> Tensor<B, 1> {
    let zero = ratio.clone().sign().abs().neg() + 1.0;
    ratio + zero * f64::MIN_POSITIVE
}
