//! Images of an experiment on any backend, by the backend's choice of kernel or tensor stages
//! ([`PixelKernel::render`]).

use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::kernel::PixelKernel;
use crate::render::amorphous::BackgroundScene;
use crate::render::{Image, RenderOptions};
use crate::scene::Scene;

/// Render the image on backend `B` ([`PixelKernel::render`]: its one-kernel render where it
/// has one and `opts.pixel_kernel` asks for it, else the tensor stages).
pub fn render<B: PixelKernel>(exp: &Experiment, opts: &RenderOptions, device: &B::Device) -> Result<Image> {
    let mut images = B::render(exp, &Scene::new(exp), opts, device)?;
    Ok(images.swap_remove(0))
}

/// [`render`] with the amorphous background of `background` (`-stol`) added, as the
/// `nanobragg` program writes the image ([`PixelKernel::render_with_background`]).
pub fn render_with_background<B: PixelKernel>(
    exp: &Experiment,
    opts: &RenderOptions,
    background: &BackgroundScene,
    device: &B::Device,
) -> Result<Image> {
    let mut images = B::render_with_background(exp, &Scene::new(exp), opts, background, device)?;
    Ok(images.swap_remove(0))
}

/// Render several shots in one batched graph on backend `B`: `shots` must pairwise pass
/// [`Experiment::batches_with`] with the first (they differ only in orientation and fluence).
/// On the CPU engine in f64 each image is bit-identical to rendering its shot alone.
///
/// # Panics
/// When `shots` is empty.
pub fn render_batch<B: PixelKernel>(
    shots: &[Experiment],
    opts: &RenderOptions,
    device: &B::Device,
) -> Result<Vec<Image>> {
    let exp = shots.first().expect("a batch of at least one shot");
    debug_assert!(shots.iter().all(|s| exp.batches_with(s)), "shots that batch together");
    let scenes: Vec<Scene> = shots.iter().map(Scene::new).collect();
    B::render(exp, &Scene::batch(&scenes), opts, device)
}
