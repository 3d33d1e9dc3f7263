//! The simulator inside a burn model: a small network (one `Linear` layer on a fixed input)
//! predicts the cell length a and the detector distance, the simulator renders from its
//! predictions with `forward_with`, and burn's Adam trains the network on the MSE to an image
//! rendered at the true values, which it recovers.
//!
//! ```sh
//! cargo run --release --example embed            # Autodiff<NdArray<f64>> on the CPU
//! cargo run --release --example embed -- wgpu    # Autodiff<Wgpu> (f32, fused)
//! ```

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::backend::Autodiff;
use burn::module::Module;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use nanobragg::{PixelKernel, Simulator};

/// True values, and where the network starts (its output is 0 at first).
const TRUE_A: f64 = 101.0; // Å
const TRUE_DISTANCE: f64 = 101.0; // mm
const START_A: f64 = 100.0;
const START_DISTANCE: f64 = 100.0;

fn flags(a: f64, distance_mm: f64) -> Vec<String> {
    format!(
        "-default_F 100 -cell {a} 100 100 90 90 90 -lambda 6.2 -N 5 -distance {distance_mm} \
         -pixel 0.4 -detpixels 64 -oversample 1"
    )
    .split_whitespace()
    .map(String::from)
    .collect()
}

/// The network: two outputs, read as Δa (Å) and Δdistance (mm) from the starting point.
#[derive(Module, Debug)]
struct Predictor<B: Backend> {
    linear: Linear<B>,
}

impl<B: Backend> Predictor<B> {
    fn new(device: &B::Device) -> Self {
        let linear = LinearConfig::new(4, 2)
            .with_initializer(Initializer::Zeros)
            .init(device);
        Self { linear }
    }

    /// (cell a `[1]` in Å, distance `[1]` in m), the simulator's units.
    fn forward(&self, device: &B::Device) -> (Tensor<B, 1>, Tensor<B, 1>) {
        let out = self.linear.forward(Tensor::<B, 2>::ones([1, 4], device)).reshape([2]);
        let a = out.clone().narrow(0, 0, 1) + START_A;
        let distance = (out.narrow(0, 1, 1) + START_DISTANCE) * 1e-3;
        (a, distance)
    }
}

fn train<B>(device: &B::Device, label: &str) -> nanobragg::Result<()>
where
    B: AutodiffBackend + PixelKernel,
    B::InnerBackend: PixelKernel,
{
    let args = |a, d| flags(a, d);
    let target_args = args(TRUE_A, TRUE_DISTANCE);
    let target_args: Vec<&str> = target_args.iter().map(String::as_str).collect();
    let target = Simulator::<B::InnerBackend>::from_args(&target_args, device)?.forward();
    let target = Tensor::<B, 2>::from_inner(target);

    let start_args = args(START_A, START_DISTANCE);
    let start_args: Vec<&str> = start_args.iter().map(String::as_str).collect();
    // the simulator's own parameters stay fixed: the network supplies a and the distance
    let sim = Simulator::<B>::from_args(&start_args, device)?.no_grad();
    let mut model = Predictor::<B>::new(device);
    let mut optim = AdamConfig::new().init::<B, Predictor<B>>();
    println!("{label}: target a = {TRUE_A} Å, distance = {TRUE_DISTANCE} mm");
    println!("{:>4} {:>14} {:>10} {:>14}", "step", "MSE", "a (Å)", "distance (mm)");
    for step in 0..=40 {
        let (a, distance) = model.forward(device);
        let cell = Tensor::cat(vec![a.clone(), sim.params.cell.val().narrow(0, 1, 5)], 0);
        let params = sim
            .params
            .clone()
            .replace("cell", cell)?
            .replace("distance", distance.clone())?;
        let loss = (sim.forward_with(&params) - target.clone()).powi_scalar(2).mean();
        let value = |t: Tensor<B, 1>| t.into_data().convert::<f64>().to_vec::<f64>().expect("readback")[0];
        if step % 5 == 0 {
            println!(
                "{step:>4} {:>14.6e} {:>10.4} {:>14.4}",
                value(loss.clone()),
                value(a),
                value(distance) * 1e3
            );
        }
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.1, model, grads);
    }
    Ok(())
}

fn main() -> nanobragg::Result<()> {
    match std::env::args().nth(1).as_deref() {
        None | Some("cpu") => {
            let device = NdArrayDevice::Cpu;
            burn::tensor::set_default_dtypes::<NdArray<f64>>(
                &device,
                burn::tensor::DType::F64,
                burn::tensor::DType::I64,
            )
            .expect("f64 on the CPU");
            train::<Autodiff<NdArray<f64>>>(&device, "cpu (Autodiff<NdArray<f64>>)")
        }
        #[cfg(feature = "gpu")]
        Some("wgpu") => {
            let engine = nanobragg::engine::Engine::Wgpu { fusion: true };
            println!("{}", engine.probe()?);
            let device = burn::backend::wgpu::WgpuDevice::default();
            train::<Autodiff<nanobragg::engine::WgpuFused>>(&device, "wgpu (Autodiff<Wgpu>, fused)")
        }
        Some(other) => Err(nanobragg::Error::Config(format!(
            "unknown engine '{other}' (cpu or wgpu)"
        ))),
    }
}
