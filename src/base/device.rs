//! Process-wide facts about the devices, fixed on first use and asked for by every layer above:
//! the CPU device's float dtype. (The GPU adapter's facts are in [`crate::base::gpu`].)

use burn::tensor::backend::Backend;
use burn::tensor::DType;

/// Fix the CPU device's default float dtype once per process; asking for another one later
/// fails (it would silently compute in the first one). The CPU engines and the host's
/// evaluation of a GPU simulator's scene ([`crate::kernel::launch::images_at`], f64) ask for it.
pub(crate) fn init_cpu_dtype<B: Backend>(device: &B::Device, dtype: DType) -> std::result::Result<(), String> {
    static CHOSEN: std::sync::OnceLock<DType> = std::sync::OnceLock::new();
    let chosen = *CHOSEN.get_or_init(|| {
        let _ = burn::tensor::set_default_dtypes::<B>(device, dtype, DType::I64);
        dtype
    });
    if chosen == dtype {
        Ok(())
    } else {
        Err(format!(
            "this process already renders on the CPU in {chosen:?}; f32 and f64 cannot be mixed in one process"
        ))
    }
}
