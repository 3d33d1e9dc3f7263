//! The embedding contract on `NdArray<f32>` (in a process of its own, `common::own_process`:
//! burn fixes a device's float dtype per process). `forward()` equals the binary's
//! `-precision f32` and f64 images to f32 rounding.

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::DType;
use nanobragg::Simulator;

const FLAGS: &str = "-default_F 100 -cell 70 80 90 80 85 95 -misset 10 20 30 -lambda 1.5 -N 4 \
    -distance 80 -pixel 0.4 -detpixels 24 -detector_rotx 2 -twotheta 3 -mosaic 0.5 -mosaic_dom 3 \
    -phi 5 -osc 2 -phisteps 2 -polar 0.8 -roi 2 20 1 22 -oversample 1";

#[test]
fn forward_on_ndarray_f32_equals_the_float_image() {
    if !super::common::own_process(module_path!(), "forward_on_ndarray_f32_equals_the_float_image") {
        return;
    }
    let device = NdArrayDevice::Cpu;
    let args: Vec<&str> = FLAGS.split_whitespace().collect();
    // the host setup evaluates the tensor geometry on this CPU device in f64: that must neither
    // fix the device's default dtype (the unwrap below would fail) nor follow it once it is f32
    let before = host_experiment(&args);
    burn::tensor::set_default_dtypes::<NdArray<f32>>(&device, DType::F32, DType::I64).unwrap();
    let after = host_experiment(&args);
    assert_eq!(
        before, after,
        "the host geometry changed with the device's default dtype"
    );
    let fdet = after.detector.fdet;
    assert!(
        fdet.iter().any(|&x| f64::from(x as f32) != x),
        "fdet {fdet:?} is not f64"
    );
    let sim = Simulator::<NdArray<f32>>::from_args(&args, &device).unwrap();
    let got: Vec<f32> = sim.forward().into_data().convert::<f32>().to_vec().unwrap();

    let max = got.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(max > 0.0, "blank image");
    // f32 rounding: both render with the native loop in f32 over a scene evaluated in f64, the
    // binary's from the configuration's values, the simulator's from its f32 parameter tensors
    // (2.0e-5 of the maximum apart, 1.9e-5 from the f64 image, on a 2-core Intel VM)
    let float_image = |precision| super::common::program_float_image(&[&args[..], &["-precision", precision]].concat());
    let (f32_image, f64_image) = (float_image("f32"), float_image("f64"));
    for (precision, want, tolerance) in [("f32", &f32_image, 2e-4f32), ("f64", &f64_image, 1e-3)] {
        assert_eq!(got.len(), want.len());
        let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max) / max;
        println!("NdArray<f32>: forward vs -precision {precision} -floatfile: max |Δ|/max = {worst:.1e}");
        assert!(
            worst <= tolerance,
            "forward differs from the -precision {precision} image by {worst:e} of the maximum"
        );
    }
    // outside the ROI the image is exactly 0
    assert!(got
        .iter()
        .zip(&f64_image)
        .filter(|(_, w)| **w == 0.0)
        .all(|(g, _)| *g == 0.0));
}

/// The host's resolution of `args`.
fn host_experiment(args: &[&str]) -> nanobragg::Experiment {
    let nanobragg::experiment::args::Parsed::Run(cfg, _) = nanobragg::experiment::args::parse_args(args).unwrap()
    else {
        panic!("no run")
    };
    nanobragg::Experiment::new(&cfg).unwrap()
}

/// A `Simulator<Autodiff<NdArray<f32>>>`'s backward pass by the native reverse pass (the
/// default: the scene on the f64 host, the pass over the f32 process's job in f64) equals the
/// tensor stages' product (`adjoint_kernel` off, accumulated in f32), parameter by parameter,
/// to 1e-3 of each gradient's largest component (f32 rounding of the stages' sums: 1.2e-4
/// measured); a wrong term would be off by far more.
#[test]
fn backward_on_ndarray_f32_by_the_native_pass_equals_the_tensor_stages() {
    use burn::backend::Autodiff;
    use burn::tensor::{Tensor, TensorData};
    use nanobragg::render::RenderOptions;
    type Ad = Autodiff<NdArray<f32>>;
    if !super::common::own_process(
        module_path!(),
        "backward_on_ndarray_f32_by_the_native_pass_equals_the_tensor_stages",
    ) {
        return;
    }
    let device = NdArrayDevice::Cpu;
    let args: Vec<&str> = FLAGS.split_whitespace().collect();
    let sim = Simulator::<Ad>::from_args(&args, &device).unwrap();
    // Σ w·I with weights that vary in sign and size, so every pixel's cotangent differs (laid
    // out in memory), and ΣI (one value broadcast over the image)
    let gradients = |options: RenderOptions, weighted: bool| {
        let sim = sim.clone().with_options(options);
        let image = sim.forward();
        let [s, f] = image.dims();
        let w: Vec<f32> = (0..s * f).map(|p| ((p * 37) % 11) as f32 / 5.0 - 1.0).collect();
        let loss = match weighted {
            true => (image * Tensor::<Ad, 2>::from_data(TensorData::new(w, [s, f]), &device)).sum(),
            false => image.sum(),
        };
        sim.params.gradients(&loss.backward()).unwrap()
    };
    let base = sim.setup().options.clone();
    for weighted in [true, false] {
        let native = gradients(base.clone(), weighted);
        let stages = gradients(
            RenderOptions {
                adjoint_kernel: false,
                ..base.clone()
            },
            weighted,
        );
        assert_gradients_agree(&native, &stages);
    }
}

/// Every parameter's gradient in `native` equals the one in `stages` to 1e-3 of its largest
/// component, and at least 10 parameters have one.
fn assert_gradients_agree(native: &[(&str, Vec<f64>)], stages: &[(&str, Vec<f64>)]) {
    assert_eq!(native.len(), stages.len());
    let nonzero = stages.iter().filter(|(_, g)| g.iter().any(|v| *v != 0.0)).count();
    assert!(nonzero >= 10, "{nonzero} parameters with a gradient");
    for ((name, a), (other, b)) in native.iter().zip(stages) {
        assert_eq!(name, other);
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f64, f64::max);
        println!("∂L/∂{name}: native against stages max |Δ| = {worst:.1e} of {scale:.1e}");
        assert!(
            worst <= 1e-3 * scale,
            "∂L/∂{name}: native {a:?} against the tensor stages' {b:?}"
        );
    }
}
