//! How a render runs: threads, memory, progress and the choice of kernel or tensor stages.

use super::drive::Progress;

/// Default memory budget for intermediates (bytes).
pub const DEFAULT_MEMORY_BUDGET: usize = 256 << 20;

/// How to run a render.
#[derive(Clone)]
pub struct RenderOptions {
    /// Budget for intermediate tensors, all threads together (bytes).
    pub memory_budget: usize,
    /// Worker threads (default: `OMP_NUM_THREADS`, else `RAYON_NUM_THREADS`, else the cores;
    /// see [`crate::base::threads`]).
    pub threads: usize,
    /// Cap on the elements of one `[samples, orientations]` intermediate; `None` = cache-sized
    /// (2^15, best for the CPU engine). Accelerators want far larger chunks (bounded by the
    /// memory budget either way); [`crate::engine::Engine::options`] picks it per engine.
    pub max_chunk_elements: Option<usize>,
    /// Keep the finished spans on the device and read the assembled image back once (the
    /// engines with device memory), rather than reading each span back as it finishes (the
    /// CPU engine: its tensors are host memory, and this keeps one copy of the image).
    pub assemble_on_device: bool,
    /// Render [`render`] and [`render_batch`] with one kernel launch where the backend has
    /// the kernel ([`crate::kernel`]); the fused wgpu engine sets it. Off: the tensor stages.
    pub pixel_kernel: bool,
    /// Where `pixel_kernel` renders: gradients and derivative images by the adjoint kernels
    /// (on, the default; f32 on the device). Off: by the tensor stages, on the host in f64 over
    /// the worker threads for a `Simulator`'s backward pass (from the kernel's image), on the
    /// engine's device for `Engine::image_vjp`, `Engine::derivatives` and refinement.
    pub adjoint_kernel: bool,
    pub progress: Option<Progress>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            memory_budget: DEFAULT_MEMORY_BUDGET,
            threads: crate::base::threads::default_count(),
            max_chunk_elements: None,
            assemble_on_device: false,
            pixel_kernel: false,
            adjoint_kernel: true,
            progress: None,
        }
    }
}

impl std::fmt::Debug for RenderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderOptions")
            .field("memory_budget", &self.memory_budget)
            .field("threads", &self.threads)
            .field("max_chunk_elements", &self.max_chunk_elements)
            .field("assemble_on_device", &self.assemble_on_device)
            .field("pixel_kernel", &self.pixel_kernel)
            .field("adjoint_kernel", &self.adjoint_kernel)
            .finish()
    }
}
