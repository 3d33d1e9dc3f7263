//! Running a small test kernel on the wgpu device (llvmpipe without a GPU).

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
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let input_handle = client.create_from_slice(&bytes);
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
    let out = client
        .read_one(output_handle)
        .expect("reading the test kernel's output");
    Some(
        out.chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}
