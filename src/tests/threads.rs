//! A `Simulator` renders and takes its gradients on the worker count its options give: by
//! default the process's (every core), else the count a refinement running one simulator per
//! thread sets each to, so that the threads together do not oversubscribe the cores.

use super::common::f64_device as dev;

use burn::backend::{ndarray::NdArray, Autodiff};
use nanobragg::render::RenderOptions;
use nanobragg::Simulator;

type Ad = Autodiff<NdArray<f64>>;

const FLAGS: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 \
                     -pixel 0.4 -detpixels 32";

/// The worker pool the calling thread kept after `step` (each calling thread keeps its own).
fn pool_after(step: impl FnOnce() + Send) -> Option<usize> {
    std::thread::scope(|s| {
        s.spawn(|| {
            step();
            crate::base::workers::kept_pool_size()
        })
        .join()
        .unwrap()
    })
}

/// The worker pools a forward pass of `sim`, then a forward and backward pass, left on fresh
/// threads: (forward, gradient step).
fn pools_of(sim: &Simulator<Ad>) -> (Option<usize>, Option<usize>) {
    let forward = pool_after(|| {
        let _ = sim.forward().into_data();
    });
    let step = pool_after(|| {
        let image = sim.forward();
        let _ = sim.params.gradients(&image.sum().backward()).unwrap();
    });
    (forward, step)
}

fn simulator() -> Simulator<Ad> {
    let args: Vec<&str> = FLAGS.split_whitespace().collect();
    Simulator::<Ad>::from_args(&args, &dev()).unwrap()
}

#[test]
fn a_simulator_renders_and_differentiates_on_its_own_worker_count() {
    // a count the process default cannot be
    let threads = crate::base::threads::default_count() + 1;
    let sim = simulator();
    let sim = sim.clone().with_options(RenderOptions {
        threads,
        ..sim.setup().options.clone()
    });
    assert_eq!(
        pools_of(&sim),
        (Some(threads), Some(threads)),
        "(forward, gradient step) workers"
    );
}

#[test]
fn a_simulator_takes_the_process_worker_count_by_default() {
    let expected = Some(crate::base::threads::default_count());
    assert_eq!(
        pools_of(&simulator()),
        (expected, expected),
        "(forward, gradient step) workers"
    );
}
