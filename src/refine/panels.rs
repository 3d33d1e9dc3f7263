//! Refinement of a detector of many panels: the loss of every panel's image against the
//! observed one, as a function of the rigid motions of the panel groups
//! ([`crate::panels::motion`]) and of components the panels share (cell, misset, λ, …).
//!
//! Each evaluation moves the layout by the motions, renders each panel as its CUSTOM detector
//! and takes each panel's gradient with [`crate::gradient::weighted_vjp`]. A motion's gradient
//! is the combination of its panels' `Xbeam`, `Ybeam`, `close_distance` and `detector_rot*`
//! gradients that [`crate::panels::motion::base_coefficients`] gives; a shared component's is
//! the sum over panels.

use super::loss::Loss;
use super::objective::Objective;
use super::selection::Selection;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::gradient::{weighted_vjp, ParamGradient};
use crate::io::hkl::HklGrid;
use crate::panels::custom::{panel_configs, run_frame};
use crate::panels::groups::Grouping;
use crate::panels::motion::{base_coefficients, GroupFrame, Motion};
use crate::panels::PanelLayout;
use crate::params::Params;
use crate::scene::{Scene, SceneTensors};
use crate::setup::Experiment;
use crate::simulate::{render_scene, RenderOptions};
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;

/// One refined motion component: group `group` of the grouping, motion `motion` (0–5:
/// X, Y, Z in mm, O, F, S in degrees; see [`crate::panels::motion::MOTIONS`]).
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

    /// The panels' configurations and experiments at `x`.
    fn panels_at(&self, motions: &[Motion]) -> Result<Vec<(SimConfig, Experiment)>> {
        let moved = self.layout.moved(&self.grouping, motions);
        let mut cfg = self.cfg.clone();
        cfg.detector.panels = Some(moved.clone());
        panel_configs(&cfg, &moved, "refine")?
            .into_iter()
            .map(|pc| {
                let exp = Experiment::with_structure_factors(&pc, self.grid.clone())?;
                Ok((pc, exp))
            })
            .collect()
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
        let panels = self.panels_at(&motions)?;
        let pixels: usize = panels.iter().map(|(_, e)| e.detector.pixels()).sum();
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
        let (beam, polar) = run_frame(self.cfg)?;
        let rotation = self.layout.frame_rotation(beam, polar);
        let start = self.layout.in_run_frame(beam, polar);
        let moved = self.layout.moved(&self.grouping, &motions).in_run_frame(beam, polar);
        let shift_axes = std::array::from_fn(|j| std::array::from_fn(|i| rotation[i][j]));
        let mut offset = 0;
        for (k, (pc, exp)) in panels.iter().enumerate() {
            let n = exp.detector.pixels();
            let observed = &self.observed[offset..offset + n];
            offset += n;
            let base = Params::<B>::new(pc, exp, &self.device).no_grad();
            let params = self.selection.write(&base, shared)?;
            if !with_gradient {
                let constants = SceneTensors::<B>::constants(exp, &self.device);
                let scene = || params.scene_with(pc, exp, &constants, &self.device);
                let image = render_scene(exp, &Scene::new(exp), &self.options, &self.device, &scene)?;
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
            let frame = GroupFrame::of(&self.grouping.groups[group], &start);
            let rows = base_coefficients(&moved.panels[k], &frame, &motions[group], &shift_axes);
            let base_grad = base_gradient(&vjp.gradients);
            for (j, c) in self.motions.iter().enumerate().filter(|(_, c)| c.group == group) {
                grad[shared.len() + j] += (0..6).map(|b| rows[c.motion][b] * base_grad[b]).sum::<f64>();
            }
        }
        Ok((total, grad))
    }
}

/// ∂L/∂(Xbeam, Ybeam, close_distance) per mm and ∂L/∂(detector_rotx, y, z) per degree of one
/// panel, from its parameter gradients (per m and rad).
fn base_gradient(grads: &[ParamGradient]) -> [f64; 6] {
    let get = |name: &str, i: usize| {
        grads
            .iter()
            .find(|g| g.name == name)
            .and_then(|g| g.values.get(i).copied())
            .unwrap_or(0.0)
    };
    let deg = std::f64::consts::PI / 180.0;
    [
        get("beam_center", 0) * 1e-3,
        get("beam_center", 1) * 1e-3,
        get("close_distance", 0) * 1e-3,
        get("detector_rotation", 0) * deg,
        get("detector_rotation", 1) * deg,
        get("detector_rotation", 2) * deg,
    ]
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
