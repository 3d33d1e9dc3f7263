//! Continuous parameters as tensors, and the differentiable scene built from them.
//!
//! [`Params`] holds every continuous parameter the geometry depends on as a `[n]` tensor that
//! may require grad. [`Params::scene`] maps them, in-graph, to the [`SceneTensors`] the physics
//! stages consume (detector basis and origin, orientation coefficients a/λ… for every source,
//! φ step and mosaic domain), using the differentiable geometry of [`crate::diff`]; discrete
//! choices (convention, pivot, counts, the random mosaic axes, divergence directions) are host
//! constants from the [`Experiment`]. With the parameters' initial values the scene equals the
//! host one ([`SceneTensors::new`]) to rounding, so one graph serves rendering and gradients.

use crate::config::SimConfig;
use crate::diff::{crystal::lattice, detector::detector_in_frame, detector::DetectorFrame, mosaic, rotation};
use crate::scene::{tensor2, SceneTensors};
use crate::setup::Experiment;
use burn::tensor::{backend::Backend, Tensor, TensorData};

/// The continuous parameters, each a leaf tensor. Units as the host setup: the cell in Å and
/// rad, other lengths in m, angles in rad, fluence in photons/m².
#[derive(Debug, Clone)]
pub struct Params<B: Backend> {
    /// `[6]`: a, b, c (Å), α, β, γ (rad). Unused (gradient 0) when only `-mat` is given.
    pub cell: Tensor<B, 1>,
    /// `[3]`: misset rotations about x, y, z (rad).
    pub misset: Tensor<B, 1>,
    /// `[2]`: φ0 and the φ step (rad).
    pub phi: Tensor<B, 1>,
    /// `[1]`: mosaic spread (rad); the domain axes are fixed host draws.
    pub mosaic_spread: Tensor<B, 1>,
    /// `[1]`: the `-distance` (m); `[1]` `-close_distance` (m) when given (it then wins).
    pub distance: Tensor<B, 1>,
    pub close_distance: Option<Tensor<B, 1>>,
    /// `[2]`: Xbeam, Ybeam (m) in the convention's axes.
    pub beam_center: Tensor<B, 1>,
    /// `[3]`: detector rotations about x, y, z (rad); `[1]` 2θ (rad).
    pub detector_rotation: Tensor<B, 1>,
    pub twotheta: Tensor<B, 1>,
    /// `[1]`: central wavelength λ0 (m); generated sources scale with it.
    pub lambda0: Tensor<B, 1>,
    /// `[1]`: photons/m².
    pub fluence: Tensor<B, 1>,
}

/// Names and sizes of the parameters, in [`Params::to_vec`] order.
pub const PARAMETERS: [(&str, usize); 11] = [
    ("cell", 6),
    ("misset", 3),
    ("phi", 2),
    ("mosaic_spread", 1),
    ("distance", 1),
    ("close_distance", 1),
    ("beam_center", 2),
    ("detector_rotation", 3),
    ("twotheta", 1),
    ("lambda0", 1),
    ("fluence", 1),
];

fn leaf<B: Backend>(v: Vec<f64>, device: &B::Device) -> Tensor<B, 1> {
    let n = v.len();
    Tensor::from_data(TensorData::new(v, [n]), device)
}

impl<B: Backend> Params<B> {
    /// The parameters of a configuration, at the values the host setup resolved.
    pub fn new(cfg: &SimConfig, exp: &Experiment, device: &B::Device) -> Self {
        let cell = cfg
            .crystal
            .cell
            .map(|[a, b, c, al, be, ga]| vec![a * 1e10, b * 1e10, c * 1e10, al, be, ga])
            .unwrap_or_else(|| vec![0.0; 6]);
        let d = &cfg.detector;
        let det = &exp.detector;
        Self {
            cell: leaf(cell, device),
            misset: leaf(exp.lattice.misset.unwrap_or([0.0; 3]).to_vec(), device),
            phi: leaf(vec![exp.phi0, exp.phi.step], device),
            mosaic_spread: leaf(vec![exp.mosaic_spread], device),
            distance: leaf(vec![d.distance], device),
            close_distance: d.close_distance.map(|c| leaf(vec![c], device)),
            beam_center: leaf(vec![det.xbeam, det.ybeam], device),
            detector_rotation: leaf(vec![d.rotx, d.roty, d.rotz], device),
            twotheta: leaf(vec![d.twotheta], device),
            lambda0: leaf(vec![exp.lambda0], device),
            fluence: leaf(vec![exp.fluence], device),
        }
    }

    /// Apply `f` to every parameter tensor (e.g. `require_grad`).
    pub fn map(self, f: impl Fn(Tensor<B, 1>) -> Tensor<B, 1>) -> Self {
        Self {
            cell: f(self.cell),
            misset: f(self.misset),
            phi: f(self.phi),
            mosaic_spread: f(self.mosaic_spread),
            distance: f(self.distance),
            close_distance: self.close_distance.map(&f),
            beam_center: f(self.beam_center),
            detector_rotation: f(self.detector_rotation),
            twotheta: f(self.twotheta),
            lambda0: f(self.lambda0),
            fluence: f(self.fluence),
        }
    }

    /// The parameter tensors in [`PARAMETERS`] order (`close_distance` may be absent).
    pub fn tensors(&self) -> Vec<(&'static str, Option<Tensor<B, 1>>)> {
        vec![
            ("cell", Some(self.cell.clone())),
            ("misset", Some(self.misset.clone())),
            ("phi", Some(self.phi.clone())),
            ("mosaic_spread", Some(self.mosaic_spread.clone())),
            ("distance", Some(self.distance.clone())),
            ("close_distance", self.close_distance.clone()),
            ("beam_center", Some(self.beam_center.clone())),
            ("detector_rotation", Some(self.detector_rotation.clone())),
            ("twotheta", Some(self.twotheta.clone())),
            ("lambda0", Some(self.lambda0.clone())),
            ("fluence", Some(self.fluence.clone())),
        ]
    }

    /// The differentiable scene: everything the stages consume, as functions of the parameters.
    pub fn scene(&self, cfg: &SimConfig, exp: &Experiment, device: &B::Device) -> SceneTensors<B> {
        self.scene_with(cfg, exp, &SceneTensors::constants(exp, device), device)
    }

    /// [`Params::scene`] taking the constant part (sources, Kahn frames, HKL grid) from `host`,
    /// so a caller rebuilding the graph per chunk uploads those once.
    pub fn scene_with(
        &self,
        cfg: &SimConfig,
        exp: &Experiment,
        host: &SceneTensors<B>,
        device: &B::Device,
    ) -> SceneTensors<B> {
        let hd = &exp.detector;
        let frame = DetectorFrame::from_config(&cfg.detector, hd);
        let det = detector_in_frame(
            &frame,
            self.distance.clone(),
            self.close_distance.clone(),
            self.beam_center.clone(),
            self.detector_rotation.clone(),
            self.twotheta.clone(),
            device,
        );
        let row = |v: Tensor<B, 1>| v.reshape([1, 3]);
        let basis = Tensor::cat(
            vec![row(det.fdet.clone()), row(det.sdet.clone()), row(det.odet.clone())],
            0,
        );

        // crystal orientations: mosaic · φ rotation of the φ = 0 lattice, C's (φ, domain) order
        let matrix = cfg.crystal.matrix.map(|m| {
            let k = 1e-10 / exp.lambda0;
            [0, 1, 2].map(|j| [m[0][j] * k, m[1][j] * k, m[2][j] * k])
        });
        let lat = lattice(
            self.cell.clone(),
            self.misset.clone(),
            matrix,
            cfg.crystal.cell.is_some(),
        );
        let abc = Tensor::cat(vec![row(lat.a), row(lat.b), row(lat.c)], 0); // [3 vectors, 3]
        let phis = self.phi.clone().narrow(0, 0, 1)
            + self.phi.clone().narrow(0, 1, 1) * leaf((0..exp.phi.count).map(|k| k as f64).collect(), device);
        let spindle = leaf(hd.spindle.to_vec(), device)
            .reshape([1, 3])
            .expand([exp.phi.count, 3]);
        let r_phi = rotation::axis_rotations(spindle, phis); // [Φ, 3, 3]
        let domains = exp.mosaic_umats.len();
        let (axes, scales) = mosaic::mosaic_axes(exp.mosaic_spread > 0.0, domains, cfg.crystal.mosaic_seed);
        let axes = tensor2(axes.concat(), [domains, 3], device);
        let u = mosaic::mosaic_rotations(axes, leaf(scales, device), self.mosaic_spread.clone()); // [M, 3, 3]
        let np = exp.phi.count;
        // M_{φ,m} = U_m · R_φ, as [Φ·M, 3, 3]
        let rots = u
            .unsqueeze_dim::<4>(0)
            .expand([np, domains, 3, 3])
            .reshape([np * domains, 3, 3])
            .matmul(
                r_phi
                    .unsqueeze_dim::<4>(1)
                    .expand([np, domains, 3, 3])
                    .reshape([np * domains, 3, 3]),
            );
        let nr = np * domains;
        // rotated vectors v' = M·v for v in a, b, c: [Φ·M, 3 (xyz), 3 (a,b,c)]
        let rotated = rots.matmul(abc.transpose().unsqueeze_dim::<3>(0).expand([nr, 3, 3]));

        // sources: generated ones scale with λ0; a file's λ column is fixed
        let s = exp.sources.len();
        let inv_lambda = self.source_inv_lambda(cfg, exp, device); // [1, S]
        let incident: Vec<f64> = exp.sources.iter().flat_map(|src| src.incident).collect();
        let incident = tensor2(incident, [s, 3], device);
        let c = s * nr;
        let mut coef_cols = Vec::with_capacity(3);
        let mut offset_cols = Vec::with_capacity(3);
        for v in 0..3 {
            let vecs = rotated.clone().narrow(2, v, 1).reshape([nr, 3]); // [Φ·M, 3]
                                                                         // coefficient columns v/λ_s for (s, r): [3, S·Φ·M]
            let cols = vecs.clone().transpose().unsqueeze_dim::<3>(1).expand([3, s, nr])
                * inv_lambda.clone().reshape([1, s, 1]);
            coef_cols.push(cols.reshape([3, c]));
            // offsets v·i_s/λ_s: [1, S·Φ·M]
            let off = incident.clone().matmul(vecs.transpose()) * inv_lambda.clone().reshape([s, 1]);
            offset_cols.push(off.reshape([1, c]));
        }
        SceneTensors {
            coef: Tensor::cat(coef_cols, 1),
            offset: Tensor::cat(offset_cols, 1),
            inv_lambda,
            basis,
            pix0: row(det.pix0),
            fdet: row(det.fdet),
            sdet: row(det.sdet),
            odet_col: det.odet.reshape([3, 1]),
            close_distance: det.close_distance.reshape([1, 1]),
            distance: det.distance.reshape([1, 1]),
            fluence: self.fluence.clone().reshape([1, 1]),
            ..host.clone()
        }
    }

    /// 1/λ of every source `[1, S]` (m⁻¹).
    fn source_inv_lambda(&self, cfg: &SimConfig, exp: &Experiment, device: &B::Device) -> Tensor<B, 2> {
        let s = exp.sources.len();
        // λ_s = λ0·k_s with k_s fixed, or a constant λ from the file
        let (mut scale, mut fixed) = (vec![0.0; s], vec![0.0; s]);
        for (i, src) in exp.sources.iter().enumerate() {
            let from_file = cfg
                .beam
                .sources
                .as_ref()
                .and_then(|rows| rows.get(i))
                .and_then(|r| r.lambda);
            match from_file {
                Some(l) => fixed[i] = l,
                None => scale[i] = src.lambda / exp.lambda0,
            }
        }
        let lambda =
            self.lambda0.clone().reshape([1, 1]) * tensor2(scale, [1, s], device) + tensor2(fixed, [1, s], device);
        lambda.recip()
    }
}

impl<B: Backend> SceneTensors<B> {
    /// The host scene with its structure-factor grid; used for the parts of a differentiable
    /// scene that are constants.
    pub fn constants(exp: &Experiment, device: &B::Device) -> Self {
        SceneTensors::new(&crate::scene::Scene::new(exp), exp, device)
    }
}
