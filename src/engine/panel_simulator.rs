//! A detector of several panels (`-geom`, `-detector_expt`) as one burn [`Module`]: its
//! [`Params`] hold the run's shared parameters and the rigid motions of the panel groups
//! (`panel_motions`), all trainable, and its forward pass renders every panel on the caller's
//! graph.
//!
//! ```no_run
//! use burn::backend::{ndarray::NdArrayDevice, Autodiff, NdArray};
//! use nanobragg::PanelSimulator;
//!
//! type B = Autodiff<NdArray<f64>>;
//! let device = NdArrayDevice::Cpu;
//! let sim = PanelSimulator::<B>::from_args(
//!     &["-default_F", "100", "-cell", "100", "100", "100", "90", "90", "90", "-lambda", "1",
//!       "-N", "5", "-detector_expt", "cspad.expt", "-panel_groups", "level1"],
//!     &device,
//! )?;
//! let images = sim.forward(); // one [slow, fast] tensor a panel
//! let loss = images.into_iter().map(|i| i.sum()).reduce(|a, b| a + b).unwrap();
//! let grads = loss.backward();
//! let motions = sim.params.panel_motions.as_ref().expect("a detector of several panels");
//! let d_motions = motions.grad(&grads); // [groups·6]: per m (X, Y, Z), per rad (O, F, S)
//! # Ok::<(), nanobragg::Error>(())
//! ```
//!
//! See `docs/embedding.md` and `docs/panels.md`.

use super::simulator::{forward_options, render};
use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::config::SimConfig;
use crate::diff::rigid_motion::RigidMotion;
use crate::experiment::args::{parse_args, Parsed};
use crate::experiment::panels::custom::{placed_panel_configs, run_frame};
use crate::experiment::panels::motion::{run_frames, GroupFrame};
use crate::experiment::{load_structure_factors, Experiment};
use crate::io::panels::groups::Grouping;
use crate::kernel::PixelKernel;
use crate::render::scenes::{Scenes, Setup};
use crate::render::RenderOptions;
use crate::scene::params::Params;
use crate::scene::{rendered_positions, Scene, SceneTensors};
use burn::module::{Module, Param};
use burn::tensor::{backend::Backend, Tensor, TensorData};
use std::sync::Arc;

/// What the host resolved once for a detector of several panels. Shared, read-only, by clones
/// of a [`PanelSimulator`].
#[derive(Debug)]
pub struct PanelSetup {
    /// Each panel's setup (its CUSTOM detector at the file's layout, `docs/panels.md`) and
    /// host scene, in the file's order.
    pub panels: Vec<(Arc<Setup>, Scene)>,
    /// The grouping the motions move (`-panel_groups`, default `panels`), in the file's frame.
    pub grouping: Grouping,
    /// The group of each panel (an index into `grouping.groups`).
    pub group_of: Vec<usize>,
    /// Each group's rotation centre (m) and O, F, S axes at the file's layout, and the file's
    /// x, y, z axes, in the run's frame.
    pub frames: Vec<GroupFrame>,
    pub shift_axes: [Vec3; 3],
    /// The run's unit beam direction.
    pub beam: Vec3,
}

/// A detector of several panels as a burn module.
#[derive(Module, Debug)]
pub struct PanelSimulator<B: Backend> {
    /// The parameters, trainable: those every panel shares (cell, misset, λ, fluence, N, …)
    /// and `panel_motions`, `[groups·6]`, each group's rigid motion away from the file's layout
    /// (0 at the start), composed as `R_O·R_F·R_S` about the group's fixed axes
    /// (`crate::experiment::panels::motion`; the motion of `-derivative panel_*`, in m and rad instead of
    /// mm and degrees). The detector fields (`distance`, `close_distance`, `beam_center`,
    /// `detector_rotation`, `twotheta`) are the first panel's and unused: the file and the
    /// motions place the panels (their gradients are absent).
    pub params: Params<B>,
    setup: Arc<PanelSetup>,
}

impl<B: PixelKernel> PanelSimulator<B> {
    /// A simulator from the C program's flags with `-geom` or `-detector_expt` (and
    /// optionally `-panel_groups`); as [`super::Simulator::from_args`] otherwise.
    pub fn from_args(args: &[&str], device: &B::Device) -> Result<Self> {
        match parse_args(args)? {
            Parsed::Run(cfg, _) => Self::new(&cfg, device),
            Parsed::Help => Err(Error::Config("-h asks for the usage text, not a simulation".into())),
        }
    }

    /// A simulator of the configuration's detector of several panels, its motions 0 (the
    /// file's layout) and its other parameters at the values the host setup resolves.
    pub fn new(cfg: &SimConfig, device: &B::Device) -> Result<Self> {
        let layout = cfg.detector.panels.as_ref().ok_or_else(|| {
            Error::Config("PanelSimulator needs a detector of several panels (-geom, -detector_expt)".into())
        })?;
        let grouping = layout.grouping(cfg.detector.panel_groups.as_deref().unwrap_or("panels"))?;
        let (beam, polar) = run_frame(cfg)?;
        let (frames, shift_axes) = run_frames(layout, &grouping, beam, polar);
        let placed = layout.in_run_frame(beam, polar);
        let grid = load_structure_factors(cfg)?;
        let panels = placed_panel_configs(cfg, &placed, "-geom/-detector_expt")?
            .into_iter()
            .map(|pc| {
                let exp = Experiment::with_structure_factors(&pc, grid.clone())?;
                let host = Scene::new(&exp);
                let options = forward_options();
                Ok((Arc::new(Setup { cfg: pc, exp, options }), host))
            })
            .collect::<Result<Vec<_>>>()?;
        let (first, _) = &panels[0];
        let zeros = TensorData::new(vec![0.0f64; grouping.groups.len() * 6], [grouping.groups.len() * 6]);
        Ok(Self {
            params: Params {
                panel_motions: Some(Param::from_tensor(Tensor::from_data(zeros, device))),
                ..Params::new(&first.cfg, &first.exp, device)
            },
            setup: Arc::new(PanelSetup {
                group_of: (0..panels.len())
                    .map(|k| grouping.group_of(k).expect("a grouping covers every panel"))
                    .collect(),
                beam: first.exp.detector.beam,
                panels,
                grouping,
                frames,
                shift_axes,
            }),
        })
    }

    /// The same simulator rendering every panel in chunks planned from `options`.
    pub fn with_options(self, options: RenderOptions) -> Self {
        let s = &*self.setup;
        let panels = s.panels.iter().map(|(setup, host)| {
            let Setup { cfg, exp, .. } = &**setup;
            let options = options.clone();
            (
                Arc::new(Setup {
                    cfg: cfg.clone(),
                    exp: exp.clone(),
                    options,
                }),
                host.clone(),
            )
        });
        Self {
            setup: Arc::new(PanelSetup {
                panels: panels.collect(),
                grouping: s.grouping.clone(),
                group_of: s.group_of.clone(),
                frames: s.frames.clone(),
                shift_axes: s.shift_axes,
                beam: s.beam,
            }),
            params: self.params,
        }
    }

    /// The same simulator with its shared parameters fixed (no gradient, so a burn optimizer
    /// leaves them) and its panel motions still trainable: detector refinement alone.
    pub fn fix_shared(self) -> Self {
        let motions = self.params.panel_motions.clone();
        Self {
            params: Params {
                panel_motions: motions,
                ..self.params.no_grad()
            },
            setup: self.setup,
        }
    }

    /// The host's resolution of the configuration.
    pub fn setup(&self) -> &PanelSetup {
        &self.setup
    }

    /// Every panel's image `[spixels, fpixels]` (photons per pixel, 0 in bad regions), in the
    /// file's order, at the module's own parameters: at motions 0 the values of the binary's
    /// `-floatfile` (up to the backend's precision).
    pub fn forward(&self) -> Vec<Tensor<B, 2>> {
        self.forward_with(&self.params)
    }

    /// [`PanelSimulator::forward`] stacked `[panels, spixels, fpixels]`; an error where the
    /// panels' sizes differ.
    pub fn forward_stacked(&self) -> Result<Tensor<B, 3>> {
        let images = self.forward();
        if images.iter().any(|i| i.dims() != images[0].dims()) {
            return Err(Error::Config(
                "the panels differ in size: their images cannot be stacked (use forward)".into(),
            ));
        }
        Ok(Tensor::stack(images, 0))
    }

    /// Every panel's image at `params`, tensors the caller may have computed (e.g. with
    /// [`Params::replace`]`("panel_motions", …)`); gradients flow back into them. Motions
    /// absent (`None`) are 0. The crystal's and the beam's part of the scene is built once and
    /// shared by the panels; each panel's detector is its file position moved by its group's
    /// motion, and it renders as [`super::Simulator::forward_with`] does.
    pub fn forward_with(&self, params: &Params<B>) -> Vec<Tensor<B, 2>> {
        render(&self.setup, params)
    }
}

impl Scenes for PanelSetup {
    fn images(&self) -> Vec<(&Arc<Setup>, &Scene)> {
        self.panels.iter().map(|(setup, host)| (setup, host)).collect()
    }

    /// The crystal's and the beam's part of the scene is built once and shared by the panels;
    /// each panel's detector is its file position moved by its group's motion.
    fn scenes<K: Backend>(&self, params: &Params<K>) -> Vec<SceneTensors<K>> {
        self.panel_scenes(params, 0..self.panels.len())
    }

    fn scene<K: Backend>(&self, params: &Params<K>, image: usize) -> SceneTensors<K> {
        self.panel_scenes(params, image..image + 1).swap_remove(0)
    }
}

impl PanelSetup {
    /// The scenes of the panels `which` at `params`: the crystal's and the beam's part built
    /// once, then each panel's detector moved by its group's motion.
    fn panel_scenes<K: Backend>(&self, params: &Params<K>, which: std::ops::Range<usize>) -> Vec<SceneTensors<K>> {
        let groups = self.frames.len();
        let motions = match &params.panel_motions {
            Some(m) => m.val().reshape([groups, 6]),
            None => params
                .cell
                .val()
                .zeros_like()
                .narrow(0, 0, 1)
                .repeat_dim(0, groups * 6)
                .reshape([groups, 6]),
        };
        let (first, first_host) = &self.panels[0];
        let device = params.cell.val().device();
        let shared = params.scene_with(
            &first.cfg,
            &first.exp,
            &SceneTensors::new(first_host, &first.exp, (&device, params.dtype())),
            &device,
        );
        // each needed group's motion once, however many of its panels are asked for
        let needed: std::collections::BTreeSet<usize> = which.clone().map(|i| self.group_of[i]).collect();
        let moves: Vec<Option<RigidMotion<K>>> = (0..groups)
            .map(|g| {
                let f = &self.frames[g];
                needed.contains(&g).then(|| {
                    let motion = motions.clone().narrow(0, g, 1).reshape([6]);
                    RigidMotion::new(motion, f.centre, f.axes, self.shift_axes)
                })
            })
            .collect();
        which
            .map(|i| {
                let (setup, _) = &self.panels[i];
                let at_file = setup.exp.detector.tensors(&motions);
                SceneTensors {
                    rendered: rendered_positions(&setup.exp, (&device, params.dtype())),
                    ..shared.clone()
                }
                .with_detector(
                    moves[self.group_of[i]]
                        .as_ref()
                        .expect("a motion for every needed group")
                        .detector(at_file, self.beam),
                )
            })
            .collect()
    }
}
