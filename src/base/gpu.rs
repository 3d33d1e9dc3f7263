//! The wgpu adapter the GPU engines run on: the adapters this machine offers, the one a
//! process chose (`-gpu N|NAME`, [`select_gpu`], `nanobragg.select_gpu` in Python), and
//! whether it is a CPU (Mesa's llvmpipe, SwiftShader). Facts about the process's device, which
//! every layer above may ask and which asks none of them.
//!
//! Without a choice the engines take the adapter burn-wgpu's default device takes (the
//! platform's graphics API, high-performance preference). A process renders on one adapter:
//! choose it before the first wgpu render.

use std::sync::OnceLock;

/// The fused wgpu backend (burn-fusion over the cube backend), f32.
#[cfg(feature = "gpu")]
pub type WgpuFused = burn::backend::wgpu::Wgpu<f32, i32>;
/// The unfused wgpu backend: every tensor op is its own kernel, f32.
#[cfg(feature = "gpu")]
pub type WgpuUnfused = burn::backend::wgpu::CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>;

/// One adapter of the platform's graphics API (Vulkan; Metal on macOS), as wgpu lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapter {
    /// Its position in [`gpu_adapters`]: what `-gpu N` takes.
    pub index: usize,
    /// The adapter's name (`NVIDIA H200`, `llvmpipe (LLVM 15.0.6, 256 bits)`, …).
    pub name: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` or `Other`.
    pub device_type: String,
    /// The graphics API (`Vulkan`, `Metal`, …).
    pub backend: String,
    /// The driver and its version.
    pub driver: String,
}

impl std::fmt::Display for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} ({}, {}, {})",
            self.index, self.name, self.device_type, self.backend, self.driver
        )
    }
}

/// The adapter chosen for this process, by index in [`gpu_adapters`].
static CHOSEN: OnceLock<usize> = OnceLock::new();

/// Choose the adapter the wgpu engines use in this process: `choice` is an index in
/// [`gpu_adapters`] (`"0"`, `"1"`, …) or a case-insensitive part of one adapter's name
/// (`"nvidia"`, `"llvmpipe"`). Returns the adapter. `"list"` is an error whose message lists
/// the adapters (`-gpu list`).
///
/// Errors (the message lists the adapters): no adapter matches, a name matches several, or the
/// process already chose, or already rendered on, another adapter.
pub fn select_gpu(choice: &str) -> Result<Adapter, String> {
    let adapters = gpu_adapters()?;
    let adapter = find(&adapters, choice)?;
    if adapter.device_type == "Cpu"
        && adapters
            .iter()
            .any(|a| a.device_type == "Cpu" && a.index < adapter.index)
    {
        return Err(format!(
            "-gpu {choice}: {} is not the first CPU adapter, and burn-wgpu opens only the first; adapters:\n{}",
            adapter.name,
            listing(&adapters)
        ));
    }
    let chosen = *CHOSEN.get_or_init(|| adapter.index);
    if chosen != adapter.index {
        return Err(format!(
            "-gpu {choice}: this process already uses adapter {}; a process renders on one adapter",
            adapters[chosen]
        ));
    }
    if PROBE.get().is_some() && !probe_was_of(adapter) {
        return Err(format!(
            "-gpu {choice}: this process already rendered on another adapter; choose it before the first wgpu render"
        ));
    }
    Ok(adapter.clone())
}

/// The adapter `choice` names (an index, or a part of exactly one name).
fn find<'a>(adapters: &'a [Adapter], choice: &str) -> Result<&'a Adapter, String> {
    let choice = choice.trim();
    if adapters.is_empty() {
        return Err(format!("-gpu {choice}: no adapter found{}", no_adapter_hint()));
    }
    if choice == "list" {
        return Err(format!("-gpu list: the adapters are\n{}", listing(adapters)));
    }
    if let Ok(i) = choice.parse::<usize>() {
        return adapters
            .get(i)
            .ok_or_else(|| format!("-gpu {choice}: no adapter {i}; adapters:\n{}", listing(adapters)));
    }
    let wanted = choice.to_lowercase();
    let matching: Vec<&Adapter> = adapters
        .iter()
        .filter(|a| !wanted.is_empty() && a.name.to_lowercase().contains(&wanted))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "-gpu {choice}: no adapter's name contains '{choice}'; adapters:\n{}",
            listing(adapters)
        )),
        _ => Err(format!(
            "-gpu {choice}: several adapters' names contain '{choice}' (give an index); adapters:\n{}",
            listing(adapters)
        )),
    }
}

fn listing(adapters: &[Adapter]) -> String {
    adapters.iter().map(|a| format!("  {a}\n")).collect()
}

fn no_adapter_hint() -> &'static str {
    "; install a GPU driver, or Mesa's software Vulkan driver (Debian: apt-get install mesa-vulkan-drivers libvulkan1)"
}

/// [`Adapter::device_type`] of a wgpu device type.
#[cfg(feature = "gpu")]
fn type_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::DiscreteGpu => "DiscreteGpu",
        wgpu::DeviceType::IntegratedGpu => "IntegratedGpu",
        wgpu::DeviceType::VirtualGpu => "VirtualGpu",
        wgpu::DeviceType::Cpu => "Cpu",
        wgpu::DeviceType::Other => "Other",
    }
}

/// The adapters of the platform's graphics API, in wgpu's order (the order burn-wgpu counts
/// them in). An error when the graphics API cannot be asked at all.
#[cfg(feature = "gpu")]
pub fn gpu_adapters() -> Result<Vec<Adapter>, String> {
    let listed = std::panic::catch_unwind(|| {
        let instance = instance();
        block_on(instance.enumerate_adapters(graphics_backend().into()))
            .into_iter()
            .map(|a| a.get_info())
            .collect::<Vec<_>>()
    })
    .map_err(|p| {
        format!(
            "listing the adapters failed: {}",
            crate::base::error::panic_message(&*p)
        )
    })?;
    Ok(listed
        .into_iter()
        .enumerate()
        .map(|(index, i)| Adapter {
            index,
            name: i.name,
            device_type: type_name(i.device_type).into(),
            backend: format!("{:?}", i.backend),
            driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
        })
        .collect())
}

#[cfg(not(feature = "gpu"))]
pub fn gpu_adapters() -> Result<Vec<Adapter>, String> {
    Err("this build has no wgpu support (build with the cargo feature `gpu`, on by default)".into())
}

#[cfg(feature = "gpu")]
fn graphics_backend() -> wgpu::Backend {
    use burn::backend::wgpu::graphics::{AutoGraphicsApi, GraphicsApi};
    AutoGraphicsApi::backend()
}

#[cfg(feature = "gpu")]
fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: graphics_backend().into(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    })
}

/// burn-wgpu's device for the chosen adapter: the k-th adapter of its type, as burn-wgpu
/// counts them; the default device when none was chosen. Worked out once per process (the
/// engines call it before every render; a process renders on one adapter).
#[cfg(feature = "gpu")]
pub(crate) fn wgpu_device() -> burn::backend::wgpu::WgpuDevice {
    static DEVICE: OnceLock<burn::backend::wgpu::WgpuDevice> = OnceLock::new();
    DEVICE.get_or_init(chosen_device).clone()
}

#[cfg(feature = "gpu")]
fn chosen_device() -> burn::backend::wgpu::WgpuDevice {
    use burn::backend::wgpu::WgpuDevice;
    let Some(&chosen) = CHOSEN.get() else {
        return WgpuDevice::default();
    };
    let Ok(adapters) = gpu_adapters() else {
        return WgpuDevice::default();
    };
    let a = &adapters[chosen];
    let k = adapters[..chosen]
        .iter()
        .filter(|b| b.device_type == a.device_type)
        .count();
    match a.device_type.as_str() {
        "DiscreteGpu" => WgpuDevice::DiscreteGpu(k),
        "IntegratedGpu" => WgpuDevice::IntegratedGpu(k),
        "VirtualGpu" => WgpuDevice::VirtualGpu(k),
        "Cpu" => WgpuDevice::Cpu,
        _ => WgpuDevice::default(),
    }
}

/// The probed adapter: its description and whether it is a CPU, or why there is none.
type Probe = Result<(String, bool), String>;
static PROBE: OnceLock<Probe> = OnceLock::new();

/// Whether the probe (already made) described `adapter`.
fn probe_was_of(adapter: &Adapter) -> bool {
    matches!(PROBE.get(), Some(Ok((description, _))) if description.starts_with(&format!("{} (", adapter.name)))
}

/// Look for the adapter the wgpu engines take (the chosen one, else burn-wgpu's default), once
/// per process: its description, or why there is none. burn itself panics when there is none;
/// this turns that into an error before it starts.
pub(crate) fn wgpu_probe() -> Result<String, String> {
    wgpu_adapter().map(|(description, _)| description)
}

/// Whether the adapter the wgpu engines take is a CPU (Mesa's llvmpipe, SwiftShader): a few
/// cores running SIMD lanes, not a GPU's thousands of threads. False where there is none.
pub fn wgpu_adapter_is_cpu() -> bool {
    wgpu_adapter().is_ok_and(|(_, cpu)| cpu)
}

#[cfg(not(feature = "gpu"))]
fn wgpu_adapter() -> Probe {
    Err("this build has no wgpu support (build with the cargo feature `gpu`, on by default)".into())
}

#[cfg(feature = "gpu")]
fn wgpu_adapter() -> Probe {
    PROBE.get_or_init(probe).clone()
}

#[cfg(feature = "gpu")]
fn probe() -> Probe {
    if let Some(&chosen) = CHOSEN.get() {
        let adapters = gpu_adapters()?;
        let a = &adapters[chosen];
        return Ok((
            format!("{} ({}, {}, {})", a.name, a.device_type, a.backend, a.driver),
            a.device_type == "Cpu",
        ));
    }
    let backend = graphics_backend();
    let found = std::panic::catch_unwind(|| {
        block_on(instance().request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
        }))
        .map(|a| a.get_info())
    });
    match found {
        Ok(Ok(i)) => Ok((
            format!(
                "{} ({}, {:?}, {})",
                i.name,
                type_name(i.device_type),
                i.backend,
                format!("{} {}", i.driver, i.driver_info).trim()
            ),
            i.device_type == wgpu::DeviceType::Cpu,
        )),
        Ok(Err(e)) => Err(format!("no {backend:?} adapter ({e}){}", no_adapter_hint())),
        Err(p) => Err(format!(
            "looking for a {backend:?} adapter failed: {}",
            crate::base::error::panic_message(&*p)
        )),
    }
}

/// Poll a future to completion on this thread (wgpu's native adapter requests resolve at once).
#[cfg(feature = "gpu")]
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark()
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(index: usize, name: &str, device_type: &str) -> Adapter {
        Adapter {
            index,
            name: name.into(),
            device_type: device_type.into(),
            backend: "Vulkan".into(),
            driver: "test".into(),
        }
    }

    #[test]
    fn an_adapter_is_found_by_index_or_by_a_unique_part_of_its_name() {
        let list = [
            adapter(0, "NVIDIA H200", "DiscreteGpu"),
            adapter(1, "NVIDIA H100", "DiscreteGpu"),
            adapter(2, "llvmpipe (LLVM 15.0.6, 256 bits)", "Cpu"),
        ];
        assert_eq!(find(&list, "1").unwrap().name, "NVIDIA H100");
        assert_eq!(find(&list, "LLVMpipe").unwrap().index, 2);
        assert_eq!(find(&list, " h200 ").unwrap().index, 0);
        let several = find(&list, "nvidia").unwrap_err();
        assert!(
            several.contains("several") && several.contains("1: NVIDIA H100"),
            "{several}"
        );
        let missing = find(&list, "3").unwrap_err();
        assert!(
            missing.contains("no adapter 3") && missing.contains("2: llvmpipe"),
            "{missing}"
        );
        assert!(find(&list, "radeon")
            .unwrap_err()
            .contains("no adapter's name contains 'radeon'"));
        assert!(find(&[], "0").unwrap_err().contains("mesa-vulkan-drivers"));
        assert!(find(&list, "list")
            .unwrap_err()
            .contains("the adapters are\n  0: NVIDIA H200"));
    }
}
