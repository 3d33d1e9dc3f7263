//! Worker threads for chunked evaluation.
//!
//! burn-ndarray splits its element-wise operations and matrix products over rayon's pool. Called
//! from a thread outside that pool, every such operation is handed to a pool thread and waited
//! for (two context switches per tensor operation); called from a thread of the pool, it runs
//! in place and only idle threads steal from it. So the workers that take chunks run as tasks
//! of a rayon pool of their own, sized to the requested thread count, which also keeps burn's
//! internal parallelism within that count.

use crate::base::error::{Error, Result};

/// Run `threads` copies of `work` on a rayon pool of `threads` threads; their results in
/// order of completion.
pub fn run<T: Send>(threads: usize, work: impl Fn() -> T + Sync) -> Result<Vec<T>> {
    tune_process();
    let threads = threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("nanobragg-worker-{i}"))
        .build()
        .map_err(|e| Error::Engine {
            engine: "cpu worker pool".into(),
            message: e.to_string(),
        })?;
    let results = std::sync::Mutex::new(Vec::with_capacity(threads));
    pool.scope(|s| {
        for _ in 0..threads {
            s.spawn(|_| {
                let out = work();
                results.lock().expect("a worker's result is stored whole").push(out);
            });
        }
    });
    Ok(results.into_inner().expect("a worker's result is stored whole"))
}

/// Process-wide settings for the CPU engine, applied once (by [`crate::base::workers::run`]):
///
/// - **Allocator.** The CPU engine allocates a fresh buffer for nearly every tensor operation
///   (a few hundred KiB each). glibc serves buffers above its mmap threshold (128 KiB at
///   start) with fresh pages and trims freed heap memory back to the OS, so every operation
///   paid page faults (about a fifth of a light render's CPU time, as system time). Raising
///   both thresholds keeps freed buffers for reuse; peak memory is still bounded by the chunk
///   budget.
/// - **Matrix products.** matrixmultiply (under burn-ndarray) splits every product over a
///   thread pool of its own. Our worker threads already keep the cores busy, and the products
///   here are small (K = 1 or 3), so the hand-offs cost more than they gain (a fifth of a
///   forward+backward pass): `MATMUL_NUM_THREADS` is set to 1 unless the user set it.
pub fn tune_process() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only changes allocator parameters; it is thread-safe in glibc.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        }
        // read once, at matrixmultiply's first product; this runs before any render's first
        if std::env::var_os("MATMUL_NUM_THREADS").is_none() {
            std::env::set_var("MATMUL_NUM_THREADS", "1");
        }
    });
}
