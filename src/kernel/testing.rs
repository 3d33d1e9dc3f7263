//! Running a small test kernel on the wgpu device (llvmpipe without a GPU).

use crate::kernel::layout::G_GLOBALS;
use crate::kernel::stages::detector::Ray;
use crate::kernel::stages::vectors::Vec3;
use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};

/// Whether there is a wgpu adapter to test on; without one a message and false, unless
/// `NANOBRAGG_REQUIRE_WGPU=1` makes that a failure.
pub(crate) fn wgpu_or_skip() -> bool {
    let Err(e) = crate::base::gpu::wgpu_probe() else {
        return true;
    };
    let required = std::env::var("NANOBRAGG_REQUIRE_WGPU").is_ok_and(|v| v == "1");
    assert!(!required, "NANOBRAGG_REQUIRE_WGPU=1 but {e}");
    eprintln!("SKIP: {e} (set NANOBRAGG_REQUIRE_WGPU=1 to make this a failure)");
    false
}

/// `values` as a buffer on `client`.
fn upload(client: &ComputeClient<WgpuRuntime>, values: &[f32]) -> cubecl::server::Handle {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    client.create_from_slice(&bytes)
}

/// Launch `launch` over `input` (one invocation per element, into an output of the same
/// length) on the default wgpu device and read the output back. `None` without an adapter
/// ([`wgpu_or_skip`]).
pub(crate) fn launch_unary(
    input: &[f32],
    launch: impl FnOnce(&ComputeClient<WgpuRuntime>, CubeCount, CubeDim, ArrayArg<WgpuRuntime>, ArrayArg<WgpuRuntime>),
) -> Option<Vec<f32>> {
    if !wgpu_or_skip() {
        return None;
    }
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let n = input.len();
    let input_handle = upload(&client, input);
    let output_handle = client.empty(n * 4);
    let dim = CubeDim::new_1d(64);
    let count = CubeCount::Static(n.div_ceil(64) as u32, 1, 1);
    // SAFETY: both buffers hold n f32 values
    let (input_arg, output_arg) = unsafe {
        (
            ArrayArg::from_raw_parts(input_handle, n),
            ArrayArg::from_raw_parts(output_handle.clone(), n),
        )
    };
    launch(&client, count, dim, input_arg, output_arg);
    Some(read_f32(&client, output_handle))
}

/// Launch `launch` with `params` and `input` uploaded and an output of `output_len` values, over
/// `invocations` invocations (64 a workgroup), on the default wgpu device, and read the output
/// back. `None` without an adapter ([`wgpu_or_skip`]).
pub(crate) fn launch_with_params(
    params: &[f32],
    input: &[f32],
    output_len: usize,
    invocations: usize,
    launch: impl FnOnce(
        &ComputeClient<WgpuRuntime>,
        CubeCount,
        CubeDim,
        ArrayArg<WgpuRuntime>,
        ArrayArg<WgpuRuntime>,
        ArrayArg<WgpuRuntime>,
    ),
) -> Option<Vec<f32>> {
    if !wgpu_or_skip() {
        return None;
    }
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let (params_handle, input_handle) = (upload(&client, params), upload(&client, input));
    let output_handle = upload(&client, &vec![0.0; output_len]);
    let dim = CubeDim::new_1d(64);
    let count = CubeCount::Static(invocations.div_ceil(64) as u32, 1, 1);
    // SAFETY: each buffer holds the number of f32 values given with it
    let (params_arg, input_arg, output_arg) = unsafe {
        (
            ArrayArg::from_raw_parts(params_handle, params.len()),
            ArrayArg::from_raw_parts(input_handle, input.len()),
            ArrayArg::from_raw_parts(output_handle.clone(), output_len),
        )
    };
    launch(&client, count, dim, params_arg, input_arg, output_arg);
    Some(read_f32(&client, output_handle))
}

/// The arguments of a test kernel that reads a structure-factor grid: `params`, `counts`, the
/// grid's `hkl` values, `input` and `output`.
pub(crate) type GridArgs = (
    ArrayArg<WgpuRuntime>,
    ArrayArg<WgpuRuntime>,
    ArrayArg<WgpuRuntime>,
    ArrayArg<WgpuRuntime>,
    ArrayArg<WgpuRuntime>,
);

/// [`launch_with_params`] with a structure-factor grid besides: `counts` (i32, the grid's
/// [`HKL_MIN`](crate::kernel::layout::HKL_MIN) and [`HKL_COUNT`](crate::kernel::layout::HKL_COUNT)
/// slots set) and its values `hkl` (f32, h slowest, l fastest), uploaded as the kernels take
/// them; `launch` gets them as [`GridArgs`].
pub(crate) fn launch_with_grid(
    params: &[f32],
    counts: &[i32],
    hkl: &[f32],
    input: &[f32],
    output_len: usize,
    invocations: usize,
    launch: impl FnOnce(&ComputeClient<WgpuRuntime>, CubeCount, CubeDim, GridArgs),
) -> Option<Vec<f32>> {
    if !wgpu_or_skip() {
        return None;
    }
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let counts_bytes: Vec<u8> = counts.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let counts_handle = client.create_from_slice(&counts_bytes);
    let (params_handle, hkl_handle, input_handle) =
        (upload(&client, params), upload(&client, hkl), upload(&client, input));
    let output_handle = upload(&client, &vec![0.0; output_len]);
    let dim = CubeDim::new_1d(64);
    let count = CubeCount::Static(invocations.div_ceil(64) as u32, 1, 1);
    // SAFETY: each buffer holds the number of 4-byte values given with it
    let args = unsafe {
        (
            ArrayArg::from_raw_parts(params_handle, params.len()),
            ArrayArg::from_raw_parts(counts_handle, counts.len()),
            ArrayArg::from_raw_parts(hkl_handle, hkl.len()),
            ArrayArg::from_raw_parts(input_handle, input.len()),
            ArrayArg::from_raw_parts(output_handle.clone(), output_len),
        )
    };
    launch(&client, count, dim, args);
    Some(read_f32(&client, output_handle))
}

/// The f32 values of `handle`.
fn read_f32(client: &ComputeClient<WgpuRuntime>, handle: cubecl::server::Handle) -> Vec<f32> {
    let out = client.read_one(handle).expect("reading the test kernel's output");
    out.chunks_exact(4)
        .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// A ray along the unit direction `d` with air path `r` (m) and detector coordinates 0: the
/// sample position is pix0 = r·d, so an adjoint's ∂/∂d reaches the scene's pix0 alone.
#[cube]
pub(crate) fn ray_from_pix0(d: Vec3, r: f32) -> Ray {
    Ray {
        coords: Vec3 { x: 0.0, y: 0.0, z: 0.0 },
        d,
        r,
    }
}

/// Invocation `i`'s [`G_GLOBALS`] accumulators `acc` into `output[i·G_GLOBALS..]`.
#[cube]
pub(crate) fn store_globals(acc: &Array<f32>, output: &mut Array<f32>, i: usize) {
    for k in 0..G_GLOBALS {
        output[i * G_GLOBALS + k] = acc[k];
    }
}

/// Unit vectors spread over the sphere from a fixed-seed generator (Knuth's MMIX linear
/// congruential constants; points of the unit ball at least 0.1 from its centre, pushed out to
/// the sphere), rounded to f32 so that an f64 reference sees a kernel's inputs.
pub(crate) fn unit_directions(seed: u64) -> impl Iterator<Item = [f64; 3]> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    std::iter::from_fn(move || loop {
        let v = [next(), next(), next()];
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if n > 0.1 && n <= 1.0 {
            return Some(v.map(|x| f64::from((x / n) as f32)));
        }
    })
}

/// Arguments spread over [−10⁴, 10⁴], dense near integers and half-integers (nodes and
/// extrema), and tiny values: f32 values, so the f64 reference sees the same inputs.
pub(crate) fn arguments() -> Vec<f32> {
    let mut h = Vec::new();
    let mut state = 12345u64;
    for _ in 0..20000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        h.push((u * 2e4 - 1e4) as f32);
    }
    for n in -50..=50 {
        for eps in [0.0, 1e-7, -1e-7, 1e-5, -3e-4, 0.01, 0.4999, 0.5, 0.5001] {
            h.push((n as f64 * 173.0 + eps) as f32);
            h.push((n as f64 + eps) as f32);
        }
    }
    h.extend([1e-30f32, -1e-20, 1e-12, 3e-8, 1e4, -1e4, 9999.5, -9999.5]);
    h
}

/// A test kernel's values `got` of function `name` at `arguments` against the f64
/// `reference`, each within `tolerance` of the reference value.
pub(crate) fn check_values(
    name: &str,
    arguments: &[f32],
    got: &[f32],
    reference: impl Fn(f64) -> f64,
    tolerance: impl Fn(f64) -> f64,
) {
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &g) in arguments.iter().zip(got) {
        let want = reference(x as f64);
        let err = (g as f64 - want).abs();
        assert!(err <= tolerance(want), "{name} at {x}: {g} vs {want}");
        if err > worst.0 {
            worst = (err, x);
        }
    }
    eprintln!("{name}: worst abs error {:.3e} at {}", worst.0, worst.1);
}
