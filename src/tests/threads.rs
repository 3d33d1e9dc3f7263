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

#[test]
fn a_simulator_renders_and_differentiates_on_its_own_worker_count() {
    // a count the process default cannot be
    let threads = crate::base::threads::default_count() + 1;
    let args: Vec<&str> = FLAGS.split_whitespace().collect();
    let sim = Simulator::<Ad>::from_args(&args, &dev()).unwrap();
    let sim = sim.clone().with_options(RenderOptions {
        threads,
        ..sim.setup().options.clone()
    });
    let forward = pool_after(|| {
        let _ = sim.forward().into_data();
    });
    assert_eq!(forward, Some(threads), "the forward render's workers");
    let backward = pool_after(|| {
        let image = sim.forward();
        let _ = sim.params.gradients(&image.sum().backward()).unwrap();
    });
    assert_eq!(backward, Some(threads), "the forward and backward passes' workers");
}

#[test]
fn a_simulator_takes_the_process_worker_count_by_default() {
    let args: Vec<&str> = FLAGS.split_whitespace().collect();
    let sim = Simulator::<Ad>::from_args(&args, &dev()).unwrap();
    let expected = Some(crate::base::threads::default_count());
    let forward = pool_after(|| {
        let _ = sim.forward().into_data();
    });
    assert_eq!(forward, expected, "the forward render's workers");
    let backward = pool_after(|| {
        let image = sim.forward();
        let _ = sim.params.gradients(&image.sum().backward()).unwrap();
    });
    assert_eq!(backward, expected, "the forward and backward passes' workers");
}
