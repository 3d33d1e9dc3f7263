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
use crate::diff::detector::{detector_in_frame, DetectorTensors};
use crate::diff::{crystal::lattice, mosaic, orientation};
use crate::experiment::{Experiment, WATER_BACKGROUND};
use crate::physics::lattice::LatticeTensors;
use crate::physics::structure_factor::HklTensor;
use crate::scene::{tensor2, to_host_all, SceneTensors};
use burn::module::{Module, Param};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, Tensor, TensorCreationOptions, TensorData};

/// The continuous parameters, a burn [`Module`]: each is a [`Param`] holding a `[n]` tensor,
/// trainable (`require_grad`) as burn makes every parameter, so burn's optimizers,
/// [`Module::num_params`], `visit` and `map` see them all. Units as the host setup: the cell in
/// Å and rad, other lengths in m, angles in rad, fluence in photons/m².
#[derive(Module, Debug)]
pub struct Params<B: Backend> {
    /// `[6]`: a, b, c (Å), α, β, γ (rad). Unused (gradient 0) when only `-mat` is given.
    pub cell: Param<Tensor<B, 1>>,
    /// `[3]`: misset rotations about x, y, z (rad).
    pub misset: Param<Tensor<B, 1>>,
    /// `[2]`: φ0 and the φ step (rad).
    pub phi: Param<Tensor<B, 1>>,
    /// `[1]`: mosaic spread (rad); the domain axes are fixed host draws.
    pub mosaic_spread: Param<Tensor<B, 1>>,
    /// `[1]`: the `-distance` (m); `[1]` `-close_distance` (m) when given (it then wins).
    pub distance: Param<Tensor<B, 1>>,
    pub close_distance: Option<Param<Tensor<B, 1>>>,
    /// `[2]`: Xbeam, Ybeam (m) in the convention's axes.
    pub beam_center: Param<Tensor<B, 1>>,
    /// `[3]`: detector rotations about x, y, z (rad); `[1]` 2θ (rad).
    pub detector_rotation: Param<Tensor<B, 1>>,
    pub twotheta: Param<Tensor<B, 1>>,
    /// `[1]`: central wavelength λ0 (m); generated sources scale with it.
    pub lambda0: Param<Tensor<B, 1>>,
    /// `[1]`: photons/m².
    pub fluence: Param<Tensor<B, 1>>,
    /// `[3]`: Na, Nb, Nc, unit cells along a, b, c, as reals.
    pub n_cells: Param<Tensor<B, 1>>,
    /// `[1]`: Kahn polarization factor K (unused with `-nopolar`).
    pub polarization: Param<Tensor<B, 1>>,
    /// `[1]`: water thickness for the background (m).
    pub water_size: Param<Tensor<B, 1>>,
    /// `[1]`: default_F (electrons): F of reflections outside the HKL grid, or of all of them
    /// without one.
    pub default_f: Param<Tensor<B, 1>>,
    /// `[1]`: relative spectral width (fraction); generated sources' wavelengths are
    /// λ0·(1 + u·dispersion) with u ∈ [−½, ½] fixed per source.
    pub dispersion: Param<Tensor<B, 1>>,
    /// `[G]`: the HKL grid's F values (l fastest, [`crate::io::hkl::HklGrid`] layout), when
    /// structure factors were read.
    pub structure_factors: Option<Param<Tensor<B, 1>>>,
    /// `[groups·6]`: the rigid motions of the panel groups of a detector of several panels
    /// ([`crate::PanelSimulator`]; `None` for one panel), group g's at `6g..6g + 6`: shifts X,
    /// Y, Z (m) along the detector file's own x, y, z, then rotations O, F, S (rad,
    /// right-handed) about the group's normal, fast and slow axes through its centre; 0 at the
    /// file's layout (`docs/panels.md`).
    pub panel_motions: Option<Param<Tensor<B, 1>>>,
}

/// Names and sizes of the parameters, in [`Params::tensors`] order.
/// (`structure_factors` has the grid's size and `panel_motions` six a group, 0 here.)
pub const PARAMETERS: [(&str, usize); 18] = [
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
    ("n_cells", 3),
    ("polarization", 1),
    ("water_size", 1),
    ("default_f", 1),
    ("dispersion", 1),
    ("structure_factors", 0),
    ("panel_motions", 0),
];

/// A `[n]` tensor of `v`, made as `options` says (a device alone: the device's float dtype).
fn leaf<B: Backend>(v: Vec<f64>, options: impl Into<TensorCreationOptions<B>>) -> Tensor<B, 1> {
    let n = v.len();
    Tensor::from_data(TensorData::new(v, [n]), options)
}

/// A trainable parameter holding `v`.
fn param<B: Backend>(v: Vec<f64>, options: impl Into<TensorCreationOptions<B>>) -> Param<Tensor<B, 1>> {
    Param::from_tensor(leaf(v, options))
}

impl<B: Backend> Params<B> {
    /// The parameters of a configuration, at the values the host setup resolved, trainable.
    /// (Call [`Module::no_grad`] for constants.) Made as `options` says: a device alone gives
    /// the device's float dtype.
    pub fn new(cfg: &SimConfig, exp: &Experiment, options: impl Into<TensorCreationOptions<B>>) -> Self {
        let o: TensorCreationOptions<B> = options.into();
        let cell = exp.lattice.cell.unwrap_or([0.0; 6]).to_vec();
        let d = &cfg.detector;
        let det = &exp.detector;
        Self {
            cell: param(cell, o.clone()),
            misset: param(exp.lattice.misset.unwrap_or([0.0; 3]).to_vec(), o.clone()),
            phi: param(vec![exp.phi0, exp.phi.step], o.clone()),
            mosaic_spread: param(vec![exp.mosaic_spread], o.clone()),
            distance: param(vec![d.distance], o.clone()),
            close_distance: d.close_distance.map(|c| param(vec![c], o.clone())),
            beam_center: param(vec![det.xbeam, det.ybeam], o.clone()),
            detector_rotation: param(vec![d.rotx, d.roty, d.rotz], o.clone()),
            twotheta: param(vec![d.twotheta], o.clone()),
            lambda0: param(vec![exp.lambda0], o.clone()),
            fluence: param(vec![exp.fluence], o.clone()),
            n_cells: param(exp.n_cells.to_vec(), o.clone()),
            polarization: param(vec![exp.polarization], o.clone()),
            water_size: param(vec![exp.water_size], o.clone()),
            default_f: param(vec![exp.structure_factors.default_f], o.clone()),
            dispersion: param(vec![exp.disp.range], o.clone()),
            structure_factors: exp
                .structure_factors
                .grid
                .as_ref()
                .filter(|g| g.entries > 0)
                .map(|g| param(g.values.clone(), o.clone())),
            panel_motions: None,
        }
    }

    /// The parameters of a configuration ([`Params::new`]) with the named ones set to host
    /// `values` (the units above), trainable: the parameters of a moved copy of the
    /// configuration, e.g. for bindings that hold parameter values as plain numbers.
    pub fn at(
        cfg: &SimConfig,
        exp: &Experiment,
        values: &[(String, Vec<f64>)],
        options: impl Into<TensorCreationOptions<B>>,
    ) -> crate::base::error::Result<Self> {
        let o: TensorCreationOptions<B> = options.into();
        values.iter().try_fold(Self::new(cfg, exp, o.clone()), |p, (name, v)| {
            p.replace(name, leaf(v.clone(), o.clone()).require_grad())
        })
    }

    /// Parameters holding host `values` (names and units of [`PARAMETERS`], as
    /// [`Params::values`] lists them), trainable, on `device`: the same parameters on another
    /// backend (the host's f64 evaluation of a GPU simulator's geometry, say). The optional
    /// ones are present where `values` names them. Made as `options` says ([`Params::new`]).
    pub fn from_values(
        values: &[(&'static str, Vec<f64>)],
        options: impl Into<TensorCreationOptions<B>>,
    ) -> crate::base::error::Result<Self> {
        let o: TensorCreationOptions<B> = options.into();
        let get = |name: &str| {
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| param(v.clone(), o.clone()))
        };
        let need = |name: &str| {
            get(name).ok_or_else(|| crate::base::error::Error::Config(format!("no values for parameter '{name}'")))
        };
        Ok(Self {
            cell: need("cell")?,
            misset: need("misset")?,
            phi: need("phi")?,
            mosaic_spread: need("mosaic_spread")?,
            distance: need("distance")?,
            close_distance: get("close_distance"),
            beam_center: need("beam_center")?,
            detector_rotation: need("detector_rotation")?,
            twotheta: need("twotheta")?,
            lambda0: need("lambda0")?,
            fluence: need("fluence")?,
            n_cells: need("n_cells")?,
            polarization: need("polarization")?,
            water_size: need("water_size")?,
            default_f: need("default_f")?,
            dispersion: need("dispersion")?,
            structure_factors: get("structure_factors"),
            panel_motions: get("panel_motions"),
        })
    }

    /// Apply `f` to every parameter tensor (e.g. `detach().require_grad()`), keeping the
    /// parameters' ids.
    pub fn map_tensors(self, f: impl Fn(Tensor<B, 1>) -> Tensor<B, 1>) -> Self {
        Self {
            cell: self.cell.map(&f),
            misset: self.misset.map(&f),
            phi: self.phi.map(&f),
            mosaic_spread: self.mosaic_spread.map(&f),
            distance: self.distance.map(&f),
            close_distance: self.close_distance.map(|p| p.map(&f)),
            beam_center: self.beam_center.map(&f),
            detector_rotation: self.detector_rotation.map(&f),
            twotheta: self.twotheta.map(&f),
            lambda0: self.lambda0.map(&f),
            fluence: self.fluence.map(&f),
            n_cells: self.n_cells.map(&f),
            polarization: self.polarization.map(&f),
            water_size: self.water_size.map(&f),
            default_f: self.default_f.map(&f),
            dispersion: self.dispersion.map(&f),
            structure_factors: self.structure_factors.map(|p| p.map(&f)),
            panel_motions: self.panel_motions.map(|p| p.map(&f)),
        }
    }

    /// The parameter tensors in [`PARAMETERS`] order (the optional ones may be absent).
    pub fn tensors(&self) -> Vec<(&'static str, Option<Tensor<B, 1>>)> {
        vec![
            ("cell", Some(self.cell.val())),
            ("misset", Some(self.misset.val())),
            ("phi", Some(self.phi.val())),
            ("mosaic_spread", Some(self.mosaic_spread.val())),
            ("distance", Some(self.distance.val())),
            ("close_distance", self.close_distance.as_ref().map(Param::val)),
            ("beam_center", Some(self.beam_center.val())),
            ("detector_rotation", Some(self.detector_rotation.val())),
            ("twotheta", Some(self.twotheta.val())),
            ("lambda0", Some(self.lambda0.val())),
            ("fluence", Some(self.fluence.val())),
            ("n_cells", Some(self.n_cells.val())),
            ("polarization", Some(self.polarization.val())),
            ("water_size", Some(self.water_size.val())),
            ("default_f", Some(self.default_f.val())),
            ("dispersion", Some(self.dispersion.val())),
            ("structure_factors", self.structure_factors.as_ref().map(Param::val)),
            ("panel_motions", self.panel_motions.as_ref().map(Param::val)),
        ]
    }

    /// The tensor of parameter `name` (a [`PARAMETERS`] name), if present.
    pub fn get(&self, name: &str) -> Option<Tensor<B, 1>> {
        self.tensors()
            .into_iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, t)| t)
    }

    /// Replace parameter `name` by `value` (same length), e.g. to refine or perturb it, or to
    /// render from a tensor the caller computed (a network's output, say): `value` is taken as
    /// it is, gradients flow back through it into the caller's graph. The parameter keeps its
    /// id.
    pub fn replace(mut self, name: &str, value: Tensor<B, 1>) -> crate::base::error::Result<Self> {
        let current = self
            .get(name)
            .ok_or_else(|| crate::base::error::Error::Config(format!("no parameter '{name}' in this configuration")))?;
        if current.dims() != value.dims() {
            return Err(crate::base::error::Error::Config(format!(
                "parameter '{name}' has {} components, not {}",
                current.dims()[0],
                value.dims()[0]
            )));
        }
        let slot = match name {
            "cell" => &mut self.cell,
            "misset" => &mut self.misset,
            "phi" => &mut self.phi,
            "mosaic_spread" => &mut self.mosaic_spread,
            "distance" => &mut self.distance,
            "beam_center" => &mut self.beam_center,
            "detector_rotation" => &mut self.detector_rotation,
            "twotheta" => &mut self.twotheta,
            "lambda0" => &mut self.lambda0,
            "fluence" => &mut self.fluence,
            "n_cells" => &mut self.n_cells,
            "polarization" => &mut self.polarization,
            "water_size" => &mut self.water_size,
            "default_f" => &mut self.default_f,
            "dispersion" => &mut self.dispersion,
            "close_distance" => self.close_distance.as_mut().expect("present: checked by get"),
            "structure_factors" => self.structure_factors.as_mut().expect("present: checked by get"),
            "panel_motions" => self.panel_motions.as_mut().expect("present: checked by get"),
            other => unreachable!("{other} is not a parameter but get found it"),
        };
        *slot = Param::initialized(slot.id, value);
        Ok(self)
    }

    /// Every present parameter's values on the host, in [`PARAMETERS`] order (SI units and
    /// radians, the cell in Å).
    pub fn values(&self) -> crate::base::error::Result<Vec<(&'static str, Vec<f64>)>> {
        let (names, tensors): (Vec<_>, Vec<_>) = self
            .tensors()
            .into_iter()
            .filter_map(|(n, t)| t.map(|t| (n, t)))
            .unzip();
        Ok(names.into_iter().zip(to_host_all(tensors)?).collect())
    }

    /// The differentiable scene: everything the stages consume, as functions of the parameters
    /// (in their dtype).
    pub fn scene(&self, cfg: &SimConfig, exp: &Experiment, device: &B::Device) -> SceneTensors<B> {
        self.scene_with(cfg, exp, &SceneTensors::constants(exp, (device, self.dtype())), device)
    }

    /// The parameters' float dtype (the cell's): the dtype every tensor of their scene is made in.
    pub fn dtype(&self) -> DType {
        self.cell.val().dtype()
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
        // host constants are made in the parameters' dtype
        let like = (device, self.dtype());
        let det = detector_in_frame(
            &hd.frame,
            self.distance.val(),
            self.close_distance.as_ref().map(Param::val),
            self.beam_center.val(),
            self.detector_rotation.val(),
            self.twotheta.val(),
        );
        let row = |v: Tensor<B, 1>| v.reshape([1, 3]);

        // crystal orientations: mosaic · φ rotation of the φ = 0 lattice, C's (φ, domain) order
        let lat = lattice(
            self.cell.val(),
            self.misset.val(),
            exp.lattice.matrix,
            exp.lattice.cell.is_some(),
        );
        let abc = Tensor::cat(vec![row(lat.a.clone()), row(lat.b.clone()), row(lat.c.clone())], 0); // [3 vectors, 3]
        let phis = self.phi.val().narrow(0, 0, 1)
            + self.phi.val().narrow(0, 1, 1) * leaf((0..exp.phi.count).map(|k| k as f64).collect(), like);
        let domains = exp.mosaic_umats.len();
        let (axes, scales) = mosaic::mosaic_axes(exp.mosaic_spread > 0.0, domains, cfg.crystal.mosaic_seed);
        let axes = tensor2(axes.concat(), [domains, 3], like);
        let u = mosaic::mosaic_rotations(axes, leaf(scales, like), self.mosaic_spread.val()); // [M, 3, 3]
        let rots = orientation::crystal_rotations(leaf(hd.spindle.to_vec(), like), phis, u);

        // sources: generated ones scale with λ0; a file's λ column is fixed
        let s = exp.sources.len();
        let inv_lambda = self.source_inv_lambda(cfg, exp, device); // [1, S]
        let incident: Vec<f64> = exp.sources.iter().flat_map(|src| src.incident).collect();
        let incident = tensor2(incident, [s, 3], like);
        let (coef, offset) = orientation::orientation_coefficients(rots, abc, inv_lambda.clone(), incident);
        let scalar = |t: &Tensor<B, 1>| t.clone().reshape([1, 1]);
        let default_f = scalar(&self.default_f.val());
        let hkl = host.hkl.as_ref().map(|g| HklTensor {
            values: self
                .structure_factors
                .as_ref()
                .map(Param::val)
                .unwrap_or_else(|| g.values.clone()),
            default_f_tensor: Some(default_f.clone()),
            ..g.clone()
        });
        let recip = Tensor::cat(vec![lat.a_star.clone(), lat.b_star.clone(), lat.c_star.clone()], 0).reshape([1, 9]);
        // C's I_bg = F_w²·r_e²·fluence·(water size)³·10⁶·N_A/M_w
        let i_bg = scalar(&self.fluence.val()) * scalar(&self.water_size.val()).powi_scalar(3) * WATER_BACKGROUND;
        SceneTensors {
            coef,
            offset,
            inv_lambda,
            fluence: self.fluence.val().reshape([1, 1]),
            hkl,
            lattice: Some(LatticeTensors {
                n: self.n_cells.val().reshape([1, 3]),
                recip,
            }),
            kahn: (!exp.nopolar).then(|| scalar(&self.polarization.val())),
            default_f: Some(default_f),
            i_bg: Some(i_bg),
            ..host.clone()
        }
        .with_detector(det)
    }

    /// 1/λ of every source `[1, S]` (m⁻¹).
    fn source_inv_lambda(&self, cfg: &SimConfig, exp: &Experiment, device: &B::Device) -> Tensor<B, 2> {
        let s = exp.sources.len();
        let like = (device, self.dtype());
        // λ_s = λ0·(1 + u_s·dispersion) with u_s fixed, or a constant λ from the file
        let (mut spread, mut unit, mut fixed) = (vec![0.0; s], vec![0.0; s], vec![0.0; s]);
        let width = exp.disp.range;
        for (i, src) in exp.sources.iter().enumerate() {
            let from_file = cfg
                .beam
                .sources
                .as_ref()
                .and_then(|rows| rows.get(i))
                .and_then(|r| r.lambda);
            match from_file {
                Some(l) => fixed[i] = l,
                None => {
                    unit[i] = 1.0;
                    if width > 0.0 {
                        spread[i] = (src.lambda / exp.lambda0 - 1.0) / width;
                    }
                }
            }
        }
        let k = tensor2(unit, [1, s], like) + tensor2(spread, [1, s], like) * self.dispersion.val().reshape([1, 1]);
        let lambda = self.lambda0.val().reshape([1, 1]) * k + tensor2(fixed, [1, s], like);
        lambda.recip()
    }
}

impl<B: AutodiffBackend> Params<B> {
    /// The gradient in `grads` of every present parameter that has one, in [`PARAMETERS`]
    /// order and the units of [`Params::values`] (per metre, per radian, per Å…), read back in
    /// one wait for the device: a refinement step's readback.
    ///
    /// ```
    /// # use burn::backend::{Autodiff, NdArray};
    /// # use nanobragg::Simulator;
    /// let sim = Simulator::<Autodiff<NdArray<f64>>>::from_args(
    ///     &["-default_F", "100", "-cell", "100", "100", "100", "90", "90", "90", "-N", "5", "-detpixels", "16"],
    ///     &Default::default(),
    /// )?;
    /// let grads = sim.forward().sum().backward();
    /// let gradients = sim.params.gradients(&grads)?;
    /// assert!(gradients.iter().any(|(name, _)| *name == "distance"));
    /// # Ok::<(), nanobragg::Error>(())
    /// ```
    pub fn gradients(&self, grads: &B::Gradients) -> crate::base::error::Result<Vec<(&'static str, Vec<f64>)>> {
        let (names, tensors): (Vec<_>, Vec<_>) = self
            .tensors()
            .into_iter()
            .filter_map(|(n, t)| t.and_then(|t| t.grad(grads)).map(|g| (n, g)))
            .unzip();
        Ok(names.into_iter().zip(to_host_all(tensors)?).collect())
    }
}

impl<B: Backend> SceneTensors<B> {
    /// The host scene with its structure-factor grid; used for the parts of a differentiable
    /// scene that are constants, made as `options` says ([`SceneTensors::new`]).
    pub fn constants(exp: &Experiment, options: impl Into<TensorCreationOptions<B>>) -> Self {
        SceneTensors::new(&crate::scene::Scene::new(exp), exp, options)
    }

    /// The scene with the detector `det`: its basis, origin and distances.
    pub fn with_detector(self, det: DetectorTensors<B>) -> Self {
        let row = |v: Tensor<B, 1>| v.reshape([1, 3]);
        Self {
            basis: Tensor::cat(
                vec![row(det.fdet.clone()), row(det.sdet.clone()), row(det.odet.clone())],
                0,
            ),
            pix0: row(det.pix0),
            fdet: row(det.fdet),
            sdet: row(det.sdet),
            odet_col: det.odet.reshape([3, 1]),
            close_distance: det.close_distance.reshape([1, 1]),
            distance: det.distance.reshape([1, 1]),
            ..self
        }
    }
}
