//! How many threads a run may keep busy.
//!
//! In order: `-nthreads N`; else `OMP_NUM_THREADS`, which the C program's OpenMP build reads
//! (its first value when it is a list such as `4,2`), so job scripts that set it for C (SLURM's
//! `--cpus-per-task`, say) bound this port the same way; else `RAYON_NUM_THREADS` (0 means
//! unset, as for rayon); else every core this process may run on (its CPU affinity and cgroup
//! quota). The count bounds the CPU engine's worker pool and burn-ndarray's own parallel
//! operations, the default number of shot writers, and Mesa's llvmpipe (the wgpu engine
//! without a GPU, through `LP_NUM_THREADS`).

use crate::base::error::{Error, Result};

/// The most threads a run may be given (`-nthreads`, the environment, `-shot_writers`): far
/// more than the cores of any machine this runs on. Each thread is started and holds its own
/// chunk, so an absurd count (`-nthreads 100000`) would spend minutes only starting them.
pub const MAX_THREADS: usize = 1024;

/// The environment variables read, in order of precedence.
pub const ENVIRONMENT: [&str; 2] = ["OMP_NUM_THREADS", "RAYON_NUM_THREADS"];

/// The cores this process may run on (at least 1).
pub fn available_cores() -> usize {
    // asked once: the standard library reads the cgroup's quota files on every call, and
    // every default RenderOptions asks
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The count an environment variable's value asks for: `None` when it sets nothing (empty,
/// or `RAYON_NUM_THREADS=0`), an error naming the variable when it is not a count.
fn parse_variable(name: &str, value: &str) -> Result<Option<usize>> {
    // OpenMP's list form "outer,inner": the outer level is the one that runs in parallel here
    let first = value.split(',').next().unwrap_or("").trim();
    if first.is_empty() {
        return Ok(None);
    }
    match first.parse::<usize>() {
        Ok(0) if name == "RAYON_NUM_THREADS" => Ok(None),
        Ok(n) if n > 0 && n <= MAX_THREADS => Ok(Some(n)),
        _ => Err(Error::Config(format!(
            "environment variable {name}='{value}': expected a positive number of threads, at most {MAX_THREADS}"
        ))),
    }
}

/// The count the environment sets (see the module documentation), if any.
pub fn from_environment() -> Result<Option<usize>> {
    for name in ENVIRONMENT {
        if let Some(value) = std::env::var_os(name) {
            let value = value.to_string_lossy();
            if let Some(n) = parse_variable(name, &value)? {
                return Ok(Some(n));
            }
        }
    }
    Ok(None)
}

/// The thread count of a run: `flag` (`-nthreads`), else the environment, else the cores.
pub fn resolve(flag: Option<usize>) -> Result<usize> {
    match flag {
        Some(n) => Ok(n.max(1)),
        None => Ok(from_environment()?.unwrap_or_else(available_cores)),
    }
}

/// The count for library defaults ([`crate::render::RenderOptions::default`]): the
/// environment's when it is valid, else the cores (a library call cannot fail over a variable
/// the caller may not control; the binary reports a bad one through [`resolve`]).
pub fn default_count() -> usize {
    from_environment().ok().flatten().unwrap_or_else(available_cores)
}

/// Applies `threads` to what the process shares, once, before any thread pool or GPU adapter
/// starts (the binary calls it right after parsing its flags):
///
/// - rayon's global pool, where burn-ndarray runs operations called from outside every rayon
///   pool (readbacks, a caller's own tensor operations), gets `threads` threads;
/// - Mesa's llvmpipe, when the wgpu engine runs without a GPU, gets `LP_NUM_THREADS=threads`
///   unless the user set it.
///
/// Later calls change nothing. It sets an environment variable, so it must run while no other
/// thread reads the environment (the binary's signal thread only waits for signals).
pub fn apply_process_wide(threads: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // the allocator and matrixmultiply settings set an environment variable too: here,
        // before any other thread may read the environment, rather than at the first render
        crate::base::workers::tune_process();
        if std::env::var_os("LP_NUM_THREADS").is_none() {
            std::env::set_var("LP_NUM_THREADS", threads.to_string());
        }
        // fails only when the global pool already exists: it keeps its size
        let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    });
}

/// Shot writers when `-shot_writers` is not given: half the threads, at least two (measured
/// in docs/many-shots.md; idle writers cost nothing), but never more than the threads.
pub fn default_writers(threads: usize) -> usize {
    (threads / 2).max(2).min(threads.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_parse_as_openmp_and_rayon_read_them() {
        assert_eq!(parse_variable("OMP_NUM_THREADS", "3").unwrap(), Some(3));
        assert_eq!(parse_variable("OMP_NUM_THREADS", " 4,2 ").unwrap(), Some(4));
        assert_eq!(parse_variable("OMP_NUM_THREADS", "").unwrap(), None);
        assert_eq!(parse_variable("RAYON_NUM_THREADS", "0").unwrap(), None);
        for bad in ["0", "-1", "two", "1.5", "1025"] {
            let e = parse_variable("OMP_NUM_THREADS", bad).unwrap_err().to_string();
            assert!(e.contains("OMP_NUM_THREADS") && e.contains(bad), "{e}");
        }
        assert!(parse_variable("RAYON_NUM_THREADS", "x").is_err());
    }

    #[test]
    fn writers_follow_the_thread_count() {
        assert_eq!(
            [1, 2, 3, 4, 16].map(default_writers),
            [1, 2, 2, 2, 8],
            "half the threads, at least 2, at most the threads"
        );
    }
}
