//! Worker threads for chunked evaluation.
//!
//! burn-ndarray splits its element-wise operations and matrix products over rayon's pool. Called
//! from a thread outside that pool, every such operation is handed to a pool thread and waited
//! for (two context switches per tensor operation); called from a thread of the pool, it runs
//! in place and only idle threads steal from it. So the workers that take chunks run as tasks
//! of a rayon pool of their own, sized to the requested thread count, which also keeps burn's
//! internal parallelism within that count; the host's small scene graphs run on a pool of one
//! ([`on_host`]).

use crate::base::error::{Error, Result};

/// Run `threads` copies of `work` on a rayon pool of `threads` threads; their results in
/// order of completion. The pool is the calling thread's own, started at its first run of this
/// size and kept for the next (starting threads costs about a tenth of a millisecond a pass).
pub fn run<T: Send>(threads: usize, work: impl Fn() -> T + Sync) -> Result<Vec<T>> {
    tune_process();
    let threads = threads.max(1);
    let pool = pool_of(threads)?;
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

thread_local! {
    /// The calling thread's worker pool, with its size.
    static WORKERS: std::cell::RefCell<Option<(usize, std::sync::Arc<rayon::ThreadPool>)>> =
        const { std::cell::RefCell::new(None) };
    /// The calling thread's host thread ([`on_host`]): `None` until first asked for, and where
    /// it could not be started.
    static HOST: std::cell::OnceCell<Option<rayon::ThreadPool>> = const { std::cell::OnceCell::new() };
}

/// The size of the calling thread's kept worker pool ([`run`]'s last size); `None` before its
/// first run.
#[cfg(test)]
pub(crate) fn kept_pool_size() -> Option<usize> {
    WORKERS.with_borrow(|kept| kept.as_ref().map(|(n, _)| *n))
}

/// The calling thread's pool of `threads` workers: the kept one when it has that size, else a
/// new one, kept in its place. Each calling thread has its own, so threads that render at once
/// do not queue behind each other's chunks.
fn pool_of(threads: usize) -> Result<std::sync::Arc<rayon::ThreadPool>> {
    let kept = WORKERS.with_borrow(|kept| kept.as_ref().filter(|(n, _)| *n == threads).map(|(_, p)| p.clone()));
    if let Some(pool) = kept {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("nanobragg-worker-{i}"))
        .build()
        .map_err(|e| Error::Engine {
            engine: "cpu worker pool".into(),
            message: e.to_string(),
        })?;
    let pool = std::sync::Arc::new(pool);
    WORKERS.set(Some((threads, pool.clone())));
    Ok(pool)
}

/// `work`'s result, computed where burn-ndarray's operations run in place: on a thread of a
/// rayon pool. burn-ndarray wraps each operation in `rayon::scope`; called from a thread
/// outside every pool, that hands the operation to rayon's global pool and waits for it, two
/// context switches per operation. The host's small scene graphs (a few hundred operations on
/// tensors of a few numbers) spent most of their time so. From outside a pool, `work` runs on
/// the calling thread's own host thread (one, kept); inside a pool, in place.
pub fn on_host<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if rayon::current_thread_index().is_some() {
        return work();
    }
    HOST.with(|host| match host_pool(host) {
        Some(pool) => pool.install(work),
        None => work(),
    })
}

/// `host_work`'s result, computed as [`on_host`] computes it, and `here`'s, computed meanwhile
/// on the calling thread: a scene graph built on the host thread while the workers take the
/// chunks (the calling thread only waits for them). Inside a pool, or where the host thread
/// could not be started, one after the other on the calling thread.
pub fn on_host_beside<T: Send, U>(host_work: impl FnOnce() -> T + Send, here: impl FnOnce() -> U) -> (T, U) {
    if rayon::current_thread_index().is_some() {
        return (host_work(), here());
    }
    HOST.with(|host| match host_pool(host) {
        Some(pool) => {
            let mut hosted = None;
            let beside = pool.in_place_scope(|s| {
                s.spawn(|_| hosted = Some(host_work()));
                here()
            });
            (hosted.expect("the scope waits for the host's work"), beside)
        }
        None => (host_work(), here()),
    })
}

/// The calling thread's host thread, started at the first call (`None` where it could not be).
fn host_pool(host: &std::cell::OnceCell<Option<rayon::ThreadPool>>) -> Option<&rayon::ThreadPool> {
    host.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "nanobragg-host".into())
            .build()
            .ok()
    })
    .as_ref()
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
