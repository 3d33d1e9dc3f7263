//! Refinement of a detector of many panels: the loss of every panel's image against the
//! observed one, as a function of the rigid motions of the panel groups
//! ([`crate::experiment::panels::motion`]) and of components the panels share (cell, misset, λ, …).
//!
//! Each evaluation moves the layout by the motions, renders each panel as its CUSTOM detector
//! and takes each panel's gradient with [`crate::gradients::weighted_vjp`]. A motion's gradient
//! is the combination of its panels' `Xbeam`, `Ybeam`, `close_distance` and `detector_rot*`
//! gradients that [`crate::experiment::panels::motion::base_coefficients`] gives; a shared component's is
//! the sum over panels.

use super::loss::Loss;
use super::objective::{render_params, Objective};
use super::selection::Selection;
use crate::base::error::{Error, Result};
use crate::base::vec3::Vec3;
use crate::config::components::find;
use crate::config::SimConfig;
use crate::experiment::panels::custom::{placed_panel_configs, run_frame};
use crate::experiment::panels::motion::{base_coefficients, run_frames, GroupFrame, Motion, BASE};
use crate::experiment::Experiment;
use crate::gradients::{weighted_vjp, ParamGradient};
use crate::io::hkl::HklGrid;
use crate::io::panels::groups::Grouping;
use crate::io::panels::PanelLayout;
use crate::render::RenderOptions;
use crate::scene::params::Params;
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;

/// One refined motion component: group `group` of the grouping, motion `motion` (0–5:
/// X, Y, Z in mm, O, F, S in degrees; see [`crate::experiment::panels::motion::MOTIONS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MotionComponent {
    pub group: usize,
    pub motion: usize,
}

/// Loss of a multi-panel image. `x` = the shared selection's components, then the motion
/// components (in mm and degrees from the file's layout).
pub struct PanelObjective<'a, B: AutodiffBackend> {
    /// The run; its detector is `layout`.
    pub cfg: &'a SimConfig,
    pub grid: Option<HklGrid>,
    /// The starting layout, in the file's frame.
    pub layout: PanelLayout,
    pub grouping: Grouping,
    pub motions: Vec<MotionComponent>,
    /// Components shared by every panel (may be empty).
    pub selection: Selection,
    /// Photons per pixel, `[P, slow, fast]` as `-floatfile` writes them.
    pub observed: &'a [f32],
    pub loss: Loss,
    pub options: RenderOptions,
    pub device: B::Device,
}

impl<B: AutodiffBackend> PanelObjective<'_, B> {
    /// The motion of every group at `x`.
    pub fn group_motions(&self, x: &[f64]) -> Vec<Motion> {
        let mut out = vec![[0.0; 6]; self.grouping.groups.len()];
        for (c, &v) in self.motions.iter().zip(&x[self.selection.len()..]) {
            out[c.group][c.motion] = v;
        }
        out
    }

    /// The layout at `motions`, placed in the run's frame, with each panel's configuration
    /// and experiment.
    fn place(&self, motions: &[Motion]) -> Result<Placed> {
        let (beam, polar) = run_frame(self.cfg)?;
        let (frames, shift_axes) = run_frames(&self.layout, &self.grouping, beam, polar);
        let moved = self.layout.moved(&self.grouping, motions).in_run_frame(beam, polar);
        let panels = placed_panel_configs(self.cfg, &moved, "refine")?
            .into_iter()
            .map(|pc| {
                let exp = Experiment::with_structure_factors(&pc, self.grid.clone())?;
                Ok((pc, exp))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Placed {
            frames,
            shift_axes,
            moved,
            panels,
        })
    }

    /// The loss at `x` and its gradient.
    fn evaluate(&self, x: &[f64], with_gradient: bool) -> Result<(f64, Vec<f64>)> {
        if x.len() != self.dim() {
            return Err(Error::Config(format!(
                "refine: {} values for {} components",
                x.len(),
                self.dim()
            )));
        }
        let (shared, motions) = (&x[..self.selection.len()], self.group_motions(x));
        let placed = self.place(&motions)?;
        let pixels: usize = placed.panels.iter().map(|(_, e)| e.detector.pixels()).sum();
        if self.observed.len() != pixels {
            return Err(Error::Config(format!(
                "refine: observed image has {} pixels, the panels {pixels}",
                self.observed.len()
            )));
        }
        let (prior, prior_grad) = self.selection.prior(shared);
        let mut total = prior;
        let mut grad = vec![0.0; self.dim()];
        grad[..shared.len()].copy_from_slice(&prior_grad);
        let mut offset = 0;
        for (k, (pc, exp)) in placed.panels.iter().enumerate() {
            let n = exp.detector.pixels();
            let observed = &self.observed[offset..offset + n];
            offset += n;
            let base = Params::<B>::new(pc, exp, &self.device).no_grad();
            let params = self.selection.write(&base, shared)?;
            if !with_gradient {
                let image = render_params(pc, exp, &params, &self.options, &self.device)?;
                total += self.loss.evaluate(&image.data, observed, None)?.value;
                continue;
            }
            let params = params.map_tensors(|t| t.detach().require_grad());
            let loss = self.loss;
            let weigh = |idx: &[u32], values: &[f64]| loss.chunk_terms(idx, values, observed, None);
            let vjp = weighted_vjp(pc, exp, &params, &weigh, &self.options, &self.device)?;
            total += vjp.loss;
            for (g, v) in grad.iter_mut().zip(self.selection.gradient(&vjp.gradients, shared)?) {
                *g += v;
            }
            let Some(group) = self.grouping.group_of(k) else {
                continue;
            };
            let frame = &placed.frames[group];
            let rows = base_coefficients(&placed.moved.panels[k], frame, &motions[group], &placed.shift_axes);
            let base_grad = base_gradient(&vjp.gradients)?;
            for (j, c) in self.motions.iter().enumerate().filter(|(_, c)| c.group == group) {
                grad[shared.len() + j] += (0..6).map(|b| rows[c.motion][b] * base_grad[b]).sum::<f64>();
            }
        }
        Ok((total, grad))
    }
}

/// The layout of one evaluation: the groups' frames at the start and the shift axes (the
/// file's x, y, z), the moved panels, all in the run's frame, and each panel's configuration.
struct Placed {
    frames: Vec<GroupFrame>,
    shift_axes: [Vec3; 3],
    moved: PanelLayout,
    panels: Vec<(SimConfig, Experiment)>,
}

/// ∂L/∂b per flag unit (mm, degree) of each of a panel's [`BASE`] components, from its
/// parameter gradients (per m and rad).
fn base_gradient(grads: &[ParamGradient]) -> Result<[f64; 6]> {
    let mut out = [0.0; 6];
    for (o, name) in out.iter_mut().zip(BASE) {
        let c = find(name, "refine")?;
        let g = grads.iter().find(|g| g.name == c.param);
        *o = g.and_then(|g| g.values.get(c.index)).copied().unwrap_or(0.0) * c.per_unit;
    }
    Ok(out)
}

impl<B: AutodiffBackend> Objective for PanelObjective<'_, B> {
    fn dim(&self) -> usize {
        self.selection.len() + self.motions.len()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64> {
        Ok(self.evaluate(x, false)?.0)
    }

    fn value_grad(&mut self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        self.evaluate(x, true)
    }
}
