//! [`PixelKernel`] for burn-fusion: the render and the statistics registered as one custom
//! operation (`CustomOpIr`) in the fusion stream, executed by the inner backend's kernel when
//! the stream runs (burn-vision 0.21's `backends/cube/ops.rs` is the pattern). The operation's
//! inputs and outputs are ordinary fusion tensors: what comes before and after it (uploads,
//! readbacks) stays ordered.

use super::backend::{KernelInputs, KernelOutputs, KernelShape, PixelKernel, VjpShape};
use super::layout::PARTIAL_WIDTH;
use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::gradients::derivative::DerivativeImage;
use crate::gradients::{At, ChunkWeights, Vjp};
use crate::render::image::Image;
use crate::render::RenderOptions;
use crate::scene::Scene;
use burn::tensor::{DType, Shape};
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use std::marker::PhantomData;

/// A fusion tensor of backend `B`.
type FusionTensorOf<B> = burn_fusion::FusionTensor<<B as FusionBackend>::FusionRuntime>;

/// The custom operation: its IR (7 inputs, 4 outputs) and the launch's shape.
#[derive(Debug, Clone)]
struct RenderPixels<B> {
    desc: CustomOpIr,
    shape: KernelShape,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend + PixelKernel> Operation<B::FusionRuntime> for RenderPixels<B> {
    fn execute(&self, handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>) {
        let (inputs, [image, partials, first_max, first_out]) = self.desc.as_fixed::<7, 4>();
        let inputs = kernel_inputs::<B>(handles, inputs);
        let out = B::render_pixels(inputs, self.shape).expect("the inner backend has the pixel kernel");
        handles.register_float_tensor::<B>(&image.id, out.image);
        handles.register_float_tensor::<B>(&partials.id, out.partials);
        handles.register_int_tensor::<B>(&first_max.id, out.first_max);
        handles.register_int_tensor::<B>(&first_out.id, out.first_out_of_range);
    }
}

/// The render's inputs, in [`KernelInputs`]' order, from the custom operation's handles.
fn kernel_inputs<B: FusionBackend>(
    handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>,
    inputs: &[TensorIr; 7],
) -> KernelInputs<B> {
    let [params, counts, sources, orientations, scales, hkl, mask] = inputs;
    KernelInputs::<B> {
        params: handles.get_float_tensor::<B>(params),
        counts: handles.get_int_tensor::<B>(counts),
        sources: handles.get_float_tensor::<B>(sources),
        orientations: handles.get_float_tensor::<B>(orientations),
        scales: handles.get_float_tensor::<B>(scales),
        hkl: handles.get_float_tensor::<B>(hkl),
        mask: handles.get_float_tensor::<B>(mask),
    }
}

/// Which adjoint kernel a custom operation runs.
#[derive(Debug, Clone, Copy)]
enum AdjointKind {
    /// The vector–Jacobian product: f32 sums.
    Vjp,
    /// The derivative images: f32 images.
    Derivatives,
    /// The structure-factor grid's scatter over this many nodes: i32 words.
    Grid(usize),
}

/// The custom operation of an adjoint kernel (8 inputs, 1 output).
#[derive(Debug, Clone)]
struct Adjoint<B> {
    desc: CustomOpIr,
    shape: VjpShape,
    kind: AdjointKind,
    _backend: PhantomData<B>,
}

impl<B: FusionBackend + PixelKernel> Operation<B::FusionRuntime> for Adjoint<B> {
    fn execute(&self, handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>) {
        let (inputs, [out]) = self.desc.as_fixed::<8, 1>();
        let extra = handles.get_float_tensor::<B>(&inputs[7]);
        let inputs = kernel_inputs::<B>(handles, inputs[..7].try_into().expect("seven inputs"));
        let expect = "the inner backend has the pixel kernel";
        match self.kind {
            AdjointKind::Vjp => {
                let sums = B::pixel_vjp(inputs, extra, self.shape).expect(expect);
                handles.register_float_tensor::<B>(&out.id, sums);
            }
            AdjointKind::Derivatives => {
                let images = B::pixel_derivatives(inputs, extra, self.shape).expect(expect);
                handles.register_float_tensor::<B>(&out.id, images);
            }
            AdjointKind::Grid(nodes) => {
                let words = B::pixel_grid_vjp(inputs, extra, self.shape, nodes).expect(expect);
                handles.register_int_tensor::<B>(&out.id, words);
            }
        }
    }
}

/// Register an adjoint kernel in the fusion stream: the render's inputs, `extra` (weights or
/// tangents), one output of `dims` (i32 for the grid's words, else f32).
fn register_adjoint<B: FusionBackend + PixelKernel>(
    inputs: KernelInputs<Fusion<B>>,
    extra: FusionTensorOf<B>,
    shape: VjpShape,
    kind: AdjointKind,
    dims: Vec<usize>,
) -> FusionTensorOf<B> {
    let [params, counts, sources, orientations, scales, hkl, mask] = inputs.into_array();
    let inputs = [params, counts, sources, orientations, scales, hkl, mask, extra];
    let client = inputs[0].client.clone();
    let streams = OperationStreams::with_inputs(&inputs);
    let dtype = match kind {
        AdjointKind::Grid(_) => DType::I32,
        _ => DType::F32,
    };
    let outputs = [TensorIr::uninit(client.create_empty_handle(), Shape::from(dims), dtype)];
    let inputs = inputs.map(|t| t.into_ir());
    let desc = CustomOpIr::new("nanobragg_adjoint", &inputs, &outputs);
    let op = Adjoint::<B> {
        desc: desc.clone(),
        shape,
        kind,
        _backend: PhantomData,
    };
    let [out]: [_; 1] = client
        .register(streams, OperationIr::Custom(desc), op)
        .try_into()
        .expect("one output");
    out
}

impl<B: FusionBackend + PixelKernel> PixelKernel for Fusion<B> {
    super::dispatch::cube_jobs!();

    fn has_pixel_kernel() -> bool {
        B::has_pixel_kernel()
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
        if !B::has_pixel_kernel() {
            return None;
        }
        let inputs = inputs.into_array();
        let client = inputs[0].client.clone();
        let streams = OperationStreams::with_inputs(&inputs);
        let uninit =
            |dims: Vec<usize>, dtype: DType| TensorIr::uninit(client.create_empty_handle(), Shape::from(dims), dtype);
        let outputs = [
            uninit(vec![shape.shots, shape.spixels, shape.fpixels], DType::F32),
            uninit(vec![shape.blocks, PARTIAL_WIDTH], DType::F32),
            uninit(vec![shape.blocks], DType::I32),
            uninit(vec![1], DType::I32),
        ];
        let inputs = inputs.map(|t| t.into_ir());
        let desc = CustomOpIr::new("nanobragg_render_pixels", &inputs, &outputs);
        let op = RenderPixels::<B> {
            desc: desc.clone(),
            shape,
            _backend: PhantomData,
        };
        let outputs: [_; 4] = client
            .register(streams, OperationIr::Custom(desc), op)
            .try_into()
            .expect("four outputs");
        Some(KernelOutputs::from_array(outputs))
    }

    fn pixel_vjp(inputs: KernelInputs<Self>, weights: FusionTensorOf<B>, shape: VjpShape) -> Option<FusionTensorOf<B>> {
        B::has_pixel_kernel()
            .then(|| register_adjoint::<B>(inputs, weights, shape, AdjointKind::Vjp, vec![shape.width]))
    }

    fn pixel_derivatives(
        inputs: KernelInputs<Self>,
        tangents: FusionTensorOf<B>,
        shape: VjpShape,
    ) -> Option<FusionTensorOf<B>> {
        let dims = vec![shape.derivatives, shape.spixels * shape.fpixels];
        B::has_pixel_kernel().then(|| register_adjoint::<B>(inputs, tangents, shape, AdjointKind::Derivatives, dims))
    }

    fn pixel_grid_vjp(
        inputs: KernelInputs<Self>,
        weights: FusionTensorOf<B>,
        shape: VjpShape,
        nodes: usize,
    ) -> Option<FusionTensorOf<B>> {
        let kind = AdjointKind::Grid(nodes);
        B::has_pixel_kernel().then(|| register_adjoint::<B>(inputs, weights, shape, kind, vec![2 * nodes]))
    }
}
