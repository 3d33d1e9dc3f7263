//! Worker threads for chunked evaluation.
//!
//! burn-ndarray splits its element-wise operations and matrix products over rayon's pool. Called
//! from a thread outside that pool, every such operation is handed to a pool thread and waited
//! for (two context switches per tensor operation); called from a thread of the pool, it runs
//! in place and only idle threads steal from it. So the workers that take chunks run as tasks
//! of a rayon pool of their own, sized to the requested thread count, which also keeps burn's
//! internal parallelism within that count.

use crate::error::{Error, Result};

/// Run `threads` copies of `work` on a rayon pool of `threads` threads; their results in
/// order of completion.
pub fn run<T: Send>(threads: usize, work: impl Fn() -> T + Sync) -> Result<Vec<T>> {
    crate::engine::tune_process();
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
