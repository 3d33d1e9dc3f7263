//! Regression test for burn 0.21.0's reshape of strided views with unit dimensions, which
//! `vendor/burn-std` patches (see `vendor/README.md`; issue 15). Without the patch, both wgpu
//! engines read `[1, 0, 0]` for a transposed row unsqueezed to `[3, 1, 1]`.
//!
//! Every expectation is computed on the host from the input's values and the view's meaning
//! (transpose, narrow), not by another backend.

use super::common;

use burn::tensor::{backend::Backend, Tensor, TensorData};
use nanobragg::engine::{BackendTask, Engine};

/// The values of each reshaped view, in logical (row-major) order.
struct Views;

fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().to_vec::<f32>().expect("f32 readback")
}

impl BackendTask for Views {
    type Output = Vec<(&'static str, Vec<f32>, Vec<f32>)>;
    fn run<B: nanobragg::PixelKernel>(self, device: &B::Device) -> nanobragg::Result<Self::Output> {
        let mut out = Vec::new();
        // a [1, 3] row, transposed to a [3, 1] view with strides [1, 3], then unsqueezed
        let row = Tensor::<B, 2>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0], [1, 3]), device);
        out.push((
            "[1,3]ᵀ → [3,1,1]",
            host(row.clone().transpose().unsqueeze_dim::<3>(1)),
            vec![1.0, 2.0, 3.0],
        ));
        out.push((
            "[1,3]ᵀ → [1,3,1]",
            host(row.clone().transpose().unsqueeze_dim::<3>(0)),
            vec![1.0, 2.0, 3.0],
        ));
        // a column of a [1, 3, 3] block (narrow on the last axis), as the scene's
        // orientation coefficients are built for one orientation
        let m: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let block = Tensor::<B, 3>::from_data(TensorData::new(m.clone(), [1, 3, 3]), device);
        for v in 0..3 {
            let col = block.clone().narrow(2, v, 1).reshape([1, 3]).transpose(); // [3, 1]
            let want: Vec<f32> = (0..3).map(|axis| m[axis * 3 + v]).collect();
            out.push((
                "narrow [1,3,3] → [3,1] → [3,1,1] × 2",
                host(col.unsqueeze_dim::<3>(1).expand([3, 2, 1])),
                want.iter().flat_map(|&x| [x, x]).collect(),
            ));
        }
        // a transposed [2, 3] (strides [1, 3]) with a unit dim appended, then split
        let t = Tensor::<B, 2>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]), device);
        out.push((
            "[2,3]ᵀ → [3,2,1]",
            host(t.transpose().unsqueeze_dim::<3>(2)),
            vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0],
        ));
        Ok(out)
    }
}

fn check(engine: Engine) {
    if !common::engine_available(engine) {
        return;
    }
    let failures: Vec<String> = engine
        .run(Views)
        .unwrap()
        .into_iter()
        .filter(|(_, got, want)| got != want)
        .map(|(name, got, want)| format!("{name}: got {got:?}, want {want:?}"))
        .collect();
    assert!(failures.is_empty(), "{}:\n{}", engine.name(), failures.join("\n"));
}

#[test]
fn reshaped_views_on_wgpu_fused() {
    check(Engine::Wgpu { fusion: true });
}

#[test]
fn reshaped_views_on_wgpu_unfused() {
    check(Engine::Wgpu { fusion: false });
}

#[test]
fn reshaped_views_on_cpu() {
    if !common::own_process(module_path!(), "reshaped_views_on_cpu") {
        return;
    }
    check(Engine::Cpu {
        precision: nanobragg::engine::Precision::F32,
        fusion: false,
    });
}
