//! The bridge from host setup to tensors: flat f64 arrays of everything the physics stages
//! consume, laid out in the shapes the stages expect, and their upload to a device.

pub mod params;
pub mod probe;

use crate::base::vec3::{cross, unitize, Mat3};
use crate::diff::{host, orientation};
use crate::experiment::Experiment;
use crate::physics::lattice::{LatticeShape, LatticeTensors};
use crate::physics::structure_factor::HklTensor;
use burn::tensor::{backend::Backend, Tensor, TensorCreationOptions, TensorData};

/// Host arrays for the physics stages (row-major).
#[derive(Debug, Clone)]
pub struct Scene {
    /// Number of sources S and orientations C = shots·S·Φ·M (C's loop order within a shot:
    /// source, φ, mosaic).
    pub sources: usize,
    pub orientations: usize,
    /// Shots rendered together ([`Scene::batch`]): their orientations follow one another, shot
    /// by shot, and every shot has C / shots of them. 1 for a single image.
    pub shots: usize,
    /// `[shots]`: the fluence of each shot (photons/m²).
    pub fluence: Vec<f64>,
    /// Source index of each orientation `[C]`.
    pub source_of: Vec<usize>,
    /// `[3, 3C]`: columns a/λ, then b/λ, then c/λ (m⁻¹ per unit direction... dimensionless·m⁻¹·m).
    pub coef: Vec<f64>,
    /// `[3C]`: a·i/λ, b·i/λ, c·i/λ.
    pub offset: Vec<f64>,
    /// `[3, S]`: incident unit vectors as columns.
    pub incident_t: Vec<f64>,
    /// `[S]`: 1/λ (m⁻¹).
    pub inv_lambda: Vec<f64>,
    /// `[3, S]`: E_in and B_in of each source (Kahn frame), as columns.
    pub e_in_t: Vec<f64>,
    pub b_in_t: Vec<f64>,
    /// `[3, 3]` rows f, s, o; `[3]` pix0.
    pub basis: Vec<f64>,
    pub pix0: Vec<f64>,
    pub lattice: LatticeShape,
}

/// Spindle-then-mosaic rotation of every (φ step, domain), in C's order: the tensor
/// [`orientation::crystal_rotations`] evaluated in f64 on the host.
pub fn crystal_rotations(exp: &Experiment) -> Vec<Mat3> {
    let values = host::values(host_rotations(exp));
    values
        .chunks_exact(9)
        .map(|m| [[m[0], m[1], m[2]], [m[3], m[4], m[5]], [m[6], m[7], m[8]]])
        .collect()
}

/// [`crystal_rotations`] as a host tensor `[Φ·M, 3, 3]`.
fn host_rotations(exp: &Experiment) -> Tensor<host::Host, 3> {
    let phis: Vec<f64> = (0..exp.phi.count).map(|p| exp.phi_at(p)).collect();
    let domains = exp.mosaic_umats.len();
    let umats: Vec<f64> = exp.mosaic_umats.iter().flatten().flatten().copied().collect();
    let umats = host::matrix(umats, [domains, 9]).reshape([domains, 3, 3]);
    orientation::crystal_rotations(host::vector(&exp.detector.spindle), host::vector(&phis), umats)
}

impl Scene {
    /// Lay out an experiment for the stages: its orientation coefficients from the tensor
    /// geometry ([`orientation`]) evaluated in f64 on the host, as the differentiable scene
    /// computes them from the parameters.
    pub fn new(exp: &Experiment) -> Self {
        let lat = &exp.lattice;
        let s = exp.sources.len();
        let abc = host::matrix([lat.a, lat.b, lat.c].concat(), [3, 3]);
        let inv_lambda: Vec<f64> = exp.sources.iter().map(|src| 1.0 / src.lambda).collect();
        let incident: Vec<f64> = exp.sources.iter().flat_map(|src| src.incident).collect();
        let (coef, offset) = orientation::orientation_coefficients(
            host_rotations(exp),
            abc,
            host::matrix(inv_lambda.clone(), [1, s]),
            host::matrix(incident, [s, 3]),
        );
        let (coef, offset) = (host::values(coef), host::values(offset));
        let c = offset.len() / 3;
        let per_source = c / s;
        let source_of = (0..c).map(|ci| ci / per_source).collect();
        let mut incident_t = vec![0.0; 3 * s];
        let mut e_in_t = vec![0.0; 3 * s];
        let mut b_in_t = vec![0.0; 3 * s];
        let p = exp.detector.polar;
        for (si, src) in exp.sources.iter().enumerate() {
            let b_in = unitize(cross(p, src.incident)).0;
            let e_in = unitize(cross(src.incident, b_in)).0;
            for axis in 0..3 {
                incident_t[axis * s + si] = src.incident[axis];
                e_in_t[axis * s + si] = e_in[axis];
                b_in_t[axis * s + si] = b_in[axis];
            }
        }
        let d = &exp.detector;
        Self {
            sources: s,
            orientations: c,
            shots: 1,
            fluence: vec![exp.fluence],
            source_of,
            coef,
            offset,
            incident_t,
            inv_lambda,
            e_in_t,
            b_in_t,
            basis: [d.fdet, d.sdet, d.odet].concat(),
            pix0: d.pix0.to_vec(),
            lattice: LatticeShape {
                shape: exp.shape,
                n: exp.n_cells,
                fudge: exp.fudge,
                recip: [lat.a_star, lat.b_star, lat.c_star],
            },
        }
    }
}

impl Scene {
    /// One scene for several shots that differ only in the crystal's orientation and the
    /// fluence (see [`Experiment::batches_with`]): the orientations of every shot in turn,
    /// everything else from the first. The stages then give one image column per shot, each
    /// computed with the same operations, in the same order, as the shot's own scene.
    ///
    /// # Panics
    /// When `scenes` is empty or the scenes differ in their number of sources or orientations.
    pub fn batch(scenes: &[Scene]) -> Scene {
        let first = scenes.first().expect("a batch of at least one scene");
        let per_shot = first.orientations;
        assert!(
            scenes
                .iter()
                .all(|s| s.sources == first.sources && s.orientations == per_shot && s.shots == 1),
            "the scenes of a batch share their sources and orientation count"
        );
        let c = per_shot * scenes.len();
        // [3, 3C] as three blocks (a, b, c) of C columns; [3C] likewise
        let mut coef = Vec::with_capacity(9 * c);
        for axis in 0..3 {
            for v in 0..3 {
                for s in scenes {
                    let row = &s.coef[axis * 3 * per_shot..(axis + 1) * 3 * per_shot];
                    coef.extend_from_slice(&row[v * per_shot..(v + 1) * per_shot]);
                }
            }
        }
        let mut offset = Vec::with_capacity(3 * c);
        for v in 0..3 {
            for s in scenes {
                offset.extend_from_slice(&s.offset[v * per_shot..(v + 1) * per_shot]);
            }
        }
        Scene {
            orientations: c,
            shots: scenes.len(),
            fluence: scenes.iter().map(|s| s.fluence[0]).collect(),
            source_of: scenes.iter().flat_map(|s| s.source_of.iter().copied()).collect(),
            coef,
            offset,
            ..first.clone()
        }
    }
}

/// A 2-D tensor from host f64 data, on the device and in the dtype of `options` (a device
/// alone: the device's float dtype).
pub fn tensor2<B: Backend>(
    data: Vec<f64>,
    shape: [usize; 2],
    options: impl Into<TensorCreationOptions<B>>,
) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(data, shape), options)
}

/// A tensor's values on the host, as f64.
pub fn to_host<B: Backend, const D: usize>(t: Tensor<B, D>) -> crate::base::error::Result<Vec<f64>> {
    data_to_f64(t.into_data())
}

/// [`to_host`] of several tensors in one readback (a burn `Transaction`: one wait for the
/// device instead of one a tensor), in their order.
pub fn to_host_all<B: Backend, const D: usize>(
    tensors: Vec<Tensor<B, D>>,
) -> crate::base::error::Result<Vec<Vec<f64>>> {
    let read = tensors
        .into_iter()
        .fold(burn::tensor::Transaction::default(), |tr, t| tr.register(t))
        .try_execute()
        .map_err(|e| readback_error(format!("{e:?}")))?;
    read.into_iter().map(data_to_f64).collect()
}

/// Tensor data as f64: f64 data as it is, other dtypes converted element by element.
fn data_to_f64(data: TensorData) -> crate::base::error::Result<Vec<f64>> {
    let data = if data.dtype == burn::tensor::DType::F64 {
        data
    } else {
        data.convert::<f64>()
    };
    data.to_vec::<f64>().map_err(|e| readback_error(format!("{e:?}")))
}

fn readback_error(message: String) -> crate::base::error::Error {
    crate::base::error::Error::Engine {
        engine: "tensor readback".into(),
        message,
    }
}

/// [`to_host`] of a tensor whose buffer is also held elsewhere (by an autodiff graph, say):
/// burn-ndarray reads a shared buffer element by element through its n-dimensional iterator,
/// ten times slower than a fresh, untracked copy (`× 1`, at memory speed) read as it is.
pub fn to_host_shared<B: Backend, const D: usize>(t: Tensor<B, D>) -> crate::base::error::Result<Vec<f64>> {
    to_host(t.detach() * 1.0)
}

/// `[ROI positions]`: 1 where rendered, 0 where masked; `None` without a mask (made as
/// `options` says, as [`tensor2`]).
pub fn rendered_positions<B: Backend>(
    exp: &Experiment,
    options: impl Into<TensorCreationOptions<B>>,
) -> Option<Tensor<B, 1>> {
    exp.rendered_positions().map(|m| {
        let n = m.len();
        Tensor::from_data(TensorData::new(m, [n]), options)
    })
}

/// The scene's tensors on a device.
#[derive(Debug, Clone)]
pub struct SceneTensors<B: Backend> {
    /// `[3, 3C]` and `[1, 3C]`, or per orientation block (see [`SceneTensors::block`]).
    pub coef: Tensor<B, 2>,
    pub offset: Tensor<B, 2>,
    pub incident_t: Tensor<B, 2>,
    pub inv_lambda: Tensor<B, 2>,
    pub e_in_t: Tensor<B, 2>,
    pub b_in_t: Tensor<B, 2>,
    pub basis: Tensor<B, 2>,
    pub pix0: Tensor<B, 2>,
    /// `[1, 3]` rows of f, s, beam; `[3, 1]` o.
    pub fdet: Tensor<B, 2>,
    pub sdet: Tensor<B, 2>,
    pub beam: Tensor<B, 2>,
    pub odet_col: Tensor<B, 2>,
    /// `[1, 1]`: close distance and recomputed distance (m); `[1, shots]`: fluence
    /// (photons/m²).
    pub close_distance: Tensor<B, 2>,
    pub distance: Tensor<B, 2>,
    pub fluence: Tensor<B, 2>,
    pub hkl: Option<HklTensor<B>>,
    /// Differentiable forms of host constants; `None` in the host scene (the stages then use
    /// the [`Experiment`]'s f64 values). N and the reciprocal vectors of the lattice factor:
    pub lattice: Option<LatticeTensors<B>>,
    /// `[1, 1]`: the Kahn factor K (used unless `-nopolar`).
    pub kahn: Option<Tensor<B, 2>>,
    /// `[1, 1]`: default_F (electrons), for reflections without an HKL entry.
    pub default_f: Option<Tensor<B, 2>>,
    /// `[1, 1]`: the water background I_bg (C's units, photons·m²/... as [`Experiment::i_bg`]).
    pub i_bg: Option<Tensor<B, 2>>,
    /// `[ROI positions]`: 1 where rendered, 0 where masked; `None` without a mask (a constant).
    pub rendered: Option<Tensor<B, 1>>,
}

impl<B: Backend> SceneTensors<B> {
    /// Upload a scene, on the device and in the dtype of `options` (a device alone: the
    /// device's float dtype).
    pub fn new(scene: &Scene, exp: &Experiment, options: impl Into<TensorCreationOptions<B>>) -> Self {
        let o: TensorCreationOptions<B> = options.into();
        let (s, c) = (scene.sources, scene.orientations);
        let d = &exp.detector;
        let sf = &exp.structure_factors;
        Self {
            coef: tensor2(scene.coef.clone(), [3, 3 * c], o.clone()),
            offset: tensor2(scene.offset.clone(), [1, 3 * c], o.clone()),
            incident_t: tensor2(scene.incident_t.clone(), [3, s], o.clone()),
            inv_lambda: tensor2(scene.inv_lambda.clone(), [1, s], o.clone()),
            e_in_t: tensor2(scene.e_in_t.clone(), [3, s], o.clone()),
            b_in_t: tensor2(scene.b_in_t.clone(), [3, s], o.clone()),
            basis: tensor2(scene.basis.clone(), [3, 3], o.clone()),
            pix0: tensor2(scene.pix0.clone(), [1, 3], o.clone()),
            fdet: tensor2(d.fdet.to_vec(), [1, 3], o.clone()),
            sdet: tensor2(d.sdet.to_vec(), [1, 3], o.clone()),
            beam: tensor2(d.beam.to_vec(), [1, 3], o.clone()),
            odet_col: tensor2(d.odet.to_vec(), [3, 1], o.clone()),
            close_distance: tensor2(vec![d.close_distance], [1, 1], o.clone()),
            distance: tensor2(vec![d.distance], [1, 1], o.clone()),
            fluence: tensor2(scene.fluence.clone(), [1, scene.shots], o.clone()),
            hkl: sf
                .grid
                .as_ref()
                .filter(|g| g.entries > 0)
                .map(|g| HklTensor::new(g, sf.default_f, o.clone())),
            lattice: None,
            kahn: None,
            default_f: None,
            i_bg: None,
            rendered: rendered_positions(exp, o),
        }
    }

    /// Coefficients of orientations `lo..hi`: (`[3, 3n]`, `[1, 3n]`).
    pub fn block(&self, lo: usize, hi: usize) -> (Tensor<B, 2>, Tensor<B, 2>) {
        (block_columns(&self.coef, lo, hi), block_columns(&self.offset, lo, hi))
    }
}

impl<B: Backend> SceneTensors<B> {
    /// The fields a differentiable scene computes from the parameters, flattened, in a fixed
    /// order (every other field is a constant of the experiment). With
    /// [`SceneTensors::with_variables`] the chunk stages can be differentiated with respect to
    /// these few numbers instead of the parameters, and the parameters' gradient follows by one
    /// pass over the small scene graph (see [`crate::gradients`]).
    pub fn variables(&self) -> Vec<Tensor<B, 1>> {
        let mut out = Vec::new();
        self.clone().visit_variables(|v| {
            out.push(match v {
                Variable::Matrix(t) => {
                    let n: usize = t.dims().iter().product();
                    t.clone().reshape([n])
                }
                Variable::Vector(t) => t.clone(),
            })
        });
        out
    }

    /// The scene with its [`SceneTensors::variables`] replaced (same order and sizes).
    pub fn with_variables(mut self, vars: Vec<Tensor<B, 1>>) -> Self {
        let mut it = vars.into_iter();
        self.visit_variables(|v| {
            let t = it.next().expect("one tensor per scene variable");
            match v {
                Variable::Matrix(m) => *m = t.reshape(m.dims()),
                Variable::Vector(x) => *x = t,
            }
        });
        self
    }

    fn visit_variables(&mut self, mut f: impl FnMut(Variable<'_, B>)) {
        for t in [
            &mut self.coef,
            &mut self.offset,
            &mut self.inv_lambda,
            &mut self.basis,
            &mut self.pix0,
            &mut self.fdet,
            &mut self.sdet,
            &mut self.odet_col,
            &mut self.close_distance,
            &mut self.distance,
            &mut self.fluence,
        ] {
            f(Variable::Matrix(t));
        }
        if let Some(l) = &mut self.lattice {
            f(Variable::Matrix(&mut l.n));
            f(Variable::Matrix(&mut l.recip));
        }
        for t in [&mut self.kahn, &mut self.default_f, &mut self.i_bg]
            .into_iter()
            .flatten()
        {
            f(Variable::Matrix(t));
        }
        if let Some(h) = &mut self.hkl {
            f(Variable::Vector(&mut h.values));
            if let Some(t) = &mut h.default_f_tensor {
                f(Variable::Matrix(t));
            }
        }
    }
}

/// A scene variable, as [`SceneTensors::visit_variables`] hands it out.
enum Variable<'a, B: Backend> {
    Matrix(&'a mut Tensor<B, 2>),
    Vector(&'a mut Tensor<B, 1>),
}

/// The columns of orientations `lo..hi` of a `[rows, 3C]` tensor laid out as three blocks of
/// C (a, b, c): `[rows, 3·(hi − lo)]`.
pub fn block_columns<B: Backend>(t: &Tensor<B, 2>, lo: usize, hi: usize) -> Tensor<B, 2> {
    let [rows, c3] = t.dims();
    let c = c3 / 3;
    if lo == 0 && hi == c {
        return t.clone();
    }
    Tensor::cat(
        (0..3)
            .map(|v| t.clone().slice([0..rows, v * c + lo..v * c + hi]))
            .collect(),
        1,
    )
}
