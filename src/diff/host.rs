//! The host's view of the tensor geometry: the generic functions of this module evaluated on
//! `NdArray<f64>`, so the numbers the C program resolves and prints before its pixel loop
//! (detector basis and origin, lattice vectors, mosaic rotations) come from the same code that
//! renders and differentiates.
//!
//! Every tensor made here carries an explicit `F64` dtype, so the values are double precision
//! whatever the CPU device's default float dtype is (burn fixes that once per process; an
//! `NdArray<f32>` embedding or `-precision f32` sets it to F32), and no default is read here,
//! so a later `set_default_dtypes` still succeeds.

use crate::base::vec3::Vec3;
use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorCreationOptions, TensorData};

/// The backend the host evaluates geometry on.
pub type Host = NdArray<f64>;

/// Tensors on the host's CPU device in f64, whatever the device's default float dtype: every
/// tensor this module makes, and the `Host` and `Autodiff<Host>` parameters
/// ([`crate::scene::params::Params::from_values`]) whose scene the kernels or the native loop
/// take.
pub fn f64_options<B: Backend<Device = NdArrayDevice>>() -> TensorCreationOptions<B> {
    TensorCreationOptions::new(NdArrayDevice::Cpu).with_dtype(DType::F64)
}

/// A `[n]` f64 tensor of `values` on the host.
pub fn vector(values: &[f64]) -> Tensor<Host, 1> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), f64_options())
}

/// A `[rows, cols]` f64 tensor of `values` (row-major) on the host.
pub fn matrix(values: Vec<f64>, shape: [usize; 2]) -> Tensor<Host, 2> {
    Tensor::from_data(TensorData::new(values, shape), f64_options())
}

/// The values of a host tensor, row-major.
pub fn values<const D: usize>(t: Tensor<Host, D>) -> Vec<f64> {
    let data = t.into_data();
    debug_assert_eq!(data.dtype, DType::F64, "host geometry stays in f64");
    data.convert::<f64>().to_vec::<f64>().expect("f64 host tensor")
}

/// A `[3]` host tensor as a vector.
pub fn vec3(t: Tensor<Host, 1>) -> Vec3 {
    let v = values(t);
    [v[0], v[1], v[2]]
}

/// A `[1]` host tensor as a number.
pub fn scalar(t: Tensor<Host, 1>) -> f64 {
    values(t)[0]
}
