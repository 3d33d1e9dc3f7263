//! What a simulator renders, as functions of its parameters: each image's setup and host
//! scene, and each image's differentiable scene built from [`Params`] by the one geometry of
//! [`crate::diff`], on any backend.
//!
//! The same description serves three evaluations: on the caller's backend (the tensor stages,
//! on the caller's graph), on the host in f64 without a graph (the values a kernel renders),
//! and on the host with a graph (the backward pass of a kernel's image, see
//! [`crate::kernel::PixelKernel::render_params`]).

use crate::config::SimConfig;
use crate::experiment::Experiment;
use crate::render::RenderOptions;
use crate::scene::params::Params;
use crate::scene::{Scene, SceneTensors};
use burn::tensor::backend::Backend;
use std::sync::Arc;

/// What the host resolved once: the configuration, the experiment (conventions, counts, random
/// draws) and how to chunk. Shared, read-only, by clones of a [`crate::Simulator`].
#[derive(Debug)]
pub struct Setup {
    pub cfg: SimConfig,
    pub exp: Experiment,
    pub options: RenderOptions,
}

/// A simulator's images and how their scenes follow from the parameters.
pub trait Scenes: std::fmt::Debug + Send + Sync + 'static {
    /// Each image's setup and host scene ([`Scene::new`] of its experiment), in image order.
    fn images(&self) -> Vec<(&Arc<Setup>, &Scene)>;

    /// Each image's scene at `params`, on their device and graph, in image order.
    fn scenes<K: Backend>(&self, params: &Params<K>) -> Vec<SceneTensors<K>> {
        (0..self.images().len()).map(|i| self.scene(params, i)).collect()
    }

    /// Image `image`'s scene at `params` alone (what a backward step of that image needs),
    /// building no other image's part.
    fn scene<K: Backend>(&self, params: &Params<K>, image: usize) -> SceneTensors<K>;
}

/// One image of one detector: [`super::Simulator`]'s scene.
#[derive(Debug)]
pub struct OneImage {
    pub setup: Arc<Setup>,
    pub host: Scene,
}

impl Scenes for OneImage {
    fn images(&self) -> Vec<(&Arc<Setup>, &Scene)> {
        vec![(&self.setup, &self.host)]
    }

    fn scene<K: Backend>(&self, params: &Params<K>, _image: usize) -> SceneTensors<K> {
        let Setup { cfg, exp, .. } = &*self.setup;
        let device = params.cell.val().device();
        // the constants from the one host scene (Params::scene would lay it out again)
        let constants = SceneTensors::new(&self.host, exp, (&device, params.dtype()));
        params.scene_with(cfg, exp, &constants, &device)
    }
}
