//! [`PixelKernel`] for burn's cube backend, on any cubecl runtime: two launches on the
//! backend's own compute client.

use super::adjoint::{pixel_derivatives, pixel_vjp, sum_partials};
use super::backend::{KernelInputs, KernelOutputs, KernelShape, PixelKernel, VjpShape};
use super::layout::{PARTIAL_WIDTH, WORKGROUP};
use super::pixel::{image_statistics, render_pixels};
use super::scatter::pixel_grid_vjp;
use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::gradients::derivative::DerivativeImage;
use crate::gradients::{At, ChunkWeights, Vjp};
use crate::render::image::Image;
use crate::render::RenderOptions;
use crate::scene::Scene;
use burn::tensor::DType;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use cubecl::calculate_cube_count_elemwise;
use cubecl::prelude::*;

impl<R, F, I, BT> PixelKernel for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    super::dispatch::cube_jobs!();

    fn has_pixel_kernel() -> bool {
        true
    }

    fn render(exp: &Experiment, scene: &Scene, opts: &RenderOptions, device: &Self::Device) -> Result<Vec<Image>> {
        super::dispatch::render::<Self>(exp, scene, opts, device)
    }

    fn vjp(at: &At<'_>, weigh: &ChunkWeights<'_>, device: &Self::Device) -> Result<Vjp> {
        super::dispatch::vjp::<Self>(at, weigh, device)
    }

    fn derivative_images(at: &At<'_>, names: &[&str], device: &Self::Device) -> Result<(Image, Vec<DerivativeImage>)> {
        super::dispatch::derivative_images::<Self>(at, names, device)
    }

    fn render_pixels(inputs: KernelInputs<Self>, shape: KernelShape) -> Option<KernelOutputs<Self>> {
        Some(KernelOutputs::from_array(launch(inputs.into_array(), shape)))
    }

    fn pixel_vjp(inputs: KernelInputs<Self>, weights: CubeTensor<R>, shape: VjpShape) -> Option<CubeTensor<R>> {
        Some(launch_vjp(inputs.into_array(), weights, shape))
    }

    fn pixel_derivatives(
        inputs: KernelInputs<Self>,
        tangents: CubeTensor<R>,
        shape: VjpShape,
    ) -> Option<CubeTensor<R>> {
        Some(launch_derivatives(inputs.into_array(), tangents, shape))
    }

    fn pixel_grid_vjp(
        inputs: KernelInputs<Self>,
        weights: CubeTensor<R>,
        shape: VjpShape,
        nodes: usize,
    ) -> Option<CubeTensor<R>> {
        Some(launch_grid_vjp(inputs.into_array(), weights, shape, nodes))
    }
}

/// A contiguous f32 or i32 tensor of `len` elements, uninitialised.
fn empty<R: CubeRuntime>(like: &CubeTensor<R>, dims: Vec<usize>, dtype: DType) -> CubeTensor<R> {
    empty_device_dtype(like.client.clone(), like.device.clone(), dims.into(), dtype)
}

/// An i32 tensor `[len]` on `like`'s device, every element `value`.
fn filled_i32<R: CubeRuntime>(like: &CubeTensor<R>, len: usize, value: i32) -> CubeTensor<R> {
    let bytes: Vec<u8> = (0..len).flat_map(|_| value.to_ne_bytes()).collect();
    let client = like.client.clone();
    let data = client.create_from_slice(&bytes);
    CubeTensor::new_contiguous(client, like.device.clone(), vec![len].into(), data, DType::I32)
}

/// The two launches, from the inputs in [`KernelInputs`]' order; the outputs in
/// [`KernelOutputs`]' order.
fn launch<R: CubeRuntime>(inputs: [CubeTensor<R>; 7], shape: KernelShape) -> [CubeTensor<R>; 4] {
    let [params, counts, sources, orientations, scales, hkl, mask] = inputs;
    assert!(
        [&params, &sources, &orientations, &scales, &hkl, &mask]
            .iter()
            .all(|t| t.dtype == DType::F32)
            && counts.dtype == DType::I32,
        "the pixel kernel reads f32 and i32 inputs"
    );
    let client = params.client.clone();
    let pixels = shape.spixels * shape.fpixels;
    let image = empty(&params, vec![shape.shots, shape.spixels, shape.fpixels], DType::F32);
    let omega = empty(&params, vec![pixels], DType::F32);
    let partials = empty(&params, vec![shape.blocks, PARTIAL_WIDTH], DType::F32);
    let first_max = empty(&params, vec![shape.blocks], DType::I32);
    let first_out_of_range = filled_i32(&params, 1, i32::MAX);
    let dim = CubeDim::new_1d(WORKGROUP as u32);
    // SAFETY: every index the kernels form lies inside its array: invocations past the
    // outputs' lengths return at once, structure-factor indices are clamped into the grid, mask
    // indices are ROI positions, and every other array has the length `super::layout` gives it
    unsafe {
        render_pixels::launch_unchecked::<R>(
            &client,
            CubeCount::Static(
                shape.fpixels.div_ceil(WORKGROUP) as u32,
                shape.spixels as u32,
                shape.shots as u32,
            ),
            dim,
            params.into_array_arg(),
            counts.clone().into_array_arg(),
            sources.into_array_arg(),
            orientations.into_array_arg(),
            scales.into_array_arg(),
            hkl.into_array_arg(),
            mask.into_array_arg(),
            image.clone().into_array_arg(),
            omega.clone().into_array_arg(),
            first_out_of_range.clone().into_array_arg(),
            shape.switches,
        );
        image_statistics::launch_unchecked::<R>(
            &client,
            calculate_cube_count_elemwise(&client, shape.blocks, dim),
            dim,
            image.clone().into_array_arg(),
            omega.into_array_arg(),
            counts.into_array_arg(),
            partials.clone().into_array_arg(),
            first_max.clone().into_array_arg(),
        );
    }
    [image, partials, first_max, first_out_of_range]
}

/// The vector–Jacobian kernel and the reduction of its per-workgroup partials, from the inputs
/// in [`KernelInputs`]' order and the weights `[spixels, fpixels]`: the sums `[width]`.
fn launch_vjp<R: CubeRuntime>(inputs: [CubeTensor<R>; 7], weights: CubeTensor<R>, shape: VjpShape) -> CubeTensor<R> {
    let [params, counts, sources, orientations, scales, hkl, mask] = inputs;
    // the cotangent may be a broadcast or strided view: the kernel reads it row-major
    let weights = into_contiguous(weights);
    assert!(
        weights.dtype == DType::F32 && counts.dtype == DType::I32,
        "the vector–Jacobian kernel reads f32 weights"
    );
    let client = params.client.clone();
    let rows = shape.spixels.div_ceil(shape.switches.image_rows);
    let groups = shape.fpixels.div_ceil(WORKGROUP) * rows;
    let partials = empty(&params, vec![groups, shape.width], DType::F32);
    let sums = empty(&params, vec![shape.width], DType::F32);
    let dim = CubeDim::new_1d(WORKGROUP as u32);
    // SAFETY: as for the render: every invocation indexes its own pixel (weights, mask) only
    // inside the image, its workgroup's row of `partials` and the inputs' layout
    unsafe {
        pixel_vjp::launch_unchecked::<R>(
            &client,
            CubeCount::Static(shape.fpixels.div_ceil(WORKGROUP) as u32, rows as u32, 1),
            dim,
            params.into_array_arg(),
            counts.into_array_arg(),
            sources.into_array_arg(),
            orientations.into_array_arg(),
            scales.into_array_arg(),
            hkl.into_array_arg(),
            mask.into_array_arg(),
            weights.into_array_arg(),
            partials.clone().into_array_arg(),
            shape.switches,
        );
        sum_partials::launch_unchecked::<R>(
            &client,
            calculate_cube_count_elemwise(&client, shape.width, dim),
            dim,
            partials.into_array_arg(),
            sums.clone().into_array_arg(),
        );
    }
    sums
}

/// The derivative-image kernel, from the inputs in [`KernelInputs`]' order and the tangents
/// `[derivatives, width]`: the images `[derivatives, spixels·fpixels]`.
fn launch_derivatives<R: CubeRuntime>(
    inputs: [CubeTensor<R>; 7],
    tangents: CubeTensor<R>,
    shape: VjpShape,
) -> CubeTensor<R> {
    let [params, counts, sources, orientations, scales, hkl, mask] = inputs;
    let tangents = into_contiguous(tangents);
    assert!(tangents.dtype == DType::F32, "the derivative kernel reads f32 tangents");
    let client = params.client.clone();
    let pixels = shape.spixels * shape.fpixels;
    let images = empty(&params, vec![shape.derivatives, pixels], DType::F32);
    // SAFETY: as for the render: invocations past the image return at once, and each writes
    // its own pixel of every derivative image
    unsafe {
        pixel_derivatives::launch_unchecked::<R>(
            &client,
            CubeCount::Static(shape.fpixels.div_ceil(WORKGROUP) as u32, shape.spixels as u32, 1),
            CubeDim::new_1d(WORKGROUP as u32),
            params.into_array_arg(),
            counts.into_array_arg(),
            sources.into_array_arg(),
            orientations.into_array_arg(),
            scales.into_array_arg(),
            hkl.into_array_arg(),
            mask.into_array_arg(),
            tangents.into_array_arg(),
            images.clone().into_array_arg(),
            shape.switches,
        );
    }
    images
}

/// The grid's scatter kernel, from the inputs in [`KernelInputs`]' order and the weights
/// `[spixels, fpixels]`: the fixed-point words `[2·nodes]` (i32, zeroed before the launch).
fn launch_grid_vjp<R: CubeRuntime>(
    inputs: [CubeTensor<R>; 7],
    weights: CubeTensor<R>,
    shape: VjpShape,
    nodes: usize,
) -> CubeTensor<R> {
    let [params, counts, sources, orientations, scales, hkl, mask] = inputs;
    let weights = into_contiguous(weights);
    assert!(weights.dtype == DType::F32, "the scatter kernel reads f32 weights");
    let client = params.client.clone();
    let words = filled_i32(&params, 2 * nodes, 0);
    // SAFETY: as for the render: invocations past the image return at once, structure-factor
    // nodes are clamped into the grid (nearest neighbour's are checked), and each node owns
    // words 2·node and 2·node + 1 of `words`
    unsafe {
        pixel_grid_vjp::launch_unchecked::<R>(
            &client,
            CubeCount::Static(shape.fpixels.div_ceil(WORKGROUP) as u32, shape.spixels as u32, 1),
            CubeDim::new_1d(WORKGROUP as u32),
            params.into_array_arg(),
            counts.into_array_arg(),
            sources.into_array_arg(),
            orientations.into_array_arg(),
            scales.into_array_arg(),
            hkl.into_array_arg(),
            mask.into_array_arg(),
            weights.into_array_arg(),
            words.clone().into_array_arg(),
            shape.switches,
        );
    }
    words
}
