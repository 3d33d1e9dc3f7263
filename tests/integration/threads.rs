//! `-nthreads N`, `OMP_NUM_THREADS` and `RAYON_NUM_THREADS` bound the threads a run keeps
//! busy. Counted from outside: the test samples `/proc/PID/task/*` of the running binary
//! (each thread's name and CPU time) and counts the threads that did work.
#![cfg(target_os = "linux")]

use crate::common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A render of about a second on two cores: long enough for every worker to take spans.
const WORK: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1 \
    -detpixels 1024 -mosaic 0.5 -mosaic_domains 20 -floatfile f.bin -nonoise -nopgm";

/// One thread as last seen: its name (15 characters at most, as the kernel keeps it) and CPU
/// time (user + system, clock ticks).
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    ticks: u64,
}

/// The CPU time of a thread from its `/proc/PID/task/TID/stat` (fields 14 and 15).
fn ticks(stat: &str) -> Option<u64> {
    // the name (field 2) is in parentheses and may hold spaces: count fields after it
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Runs `cmd` to the end, sampling its threads every few milliseconds; every thread seen.
fn observe(mut cmd: Command) -> (std::process::Output, Vec<Seen>) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let tasks = format!("/proc/{}/task", child.id());
    let mut seen: HashMap<String, Seen> = HashMap::new();
    loop {
        if let Ok(dir) = std::fs::read_dir(&tasks) {
            for task in dir.flatten() {
                let path = task.path();
                let (Ok(name), Ok(stat)) = (
                    std::fs::read_to_string(path.join("comm")),
                    std::fs::read_to_string(path.join("stat")),
                ) else {
                    continue; // the thread ended between the listing and the read
                };
                if let Some(t) = ticks(&stat) {
                    let id = task.file_name().to_string_lossy().into_owned();
                    let name = name.trim_end().to_string();
                    seen.insert(id, Seen { name, ticks: t });
                }
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    (out, seen.into_values().collect())
}

/// The binary on [`WORK`] with `extra` flags and `env`, OpenMP's and rayon's variables removed
/// unless `env` sets them; the threads that did work, and all threads seen.
fn busy(extra: &[&str], env: &[(&str, &str)]) -> (Vec<Seen>, Vec<Seen>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nanobragg"));
    cmd.args(WORK.split_whitespace()).args(extra).current_dir(dir.path());
    for name in ["OMP_NUM_THREADS", "RAYON_NUM_THREADS", "LP_NUM_THREADS"] {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    let (out, seen) = observe(cmd);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let worked = seen.iter().filter(|t| t.ticks > 0).cloned().collect();
    (worked, seen)
}

fn named<'a>(threads: &'a [Seen], prefix: &str) -> Vec<&'a Seen> {
    threads.iter().filter(|t| t.name.starts_with(prefix)).collect()
}

/// Extra flags and environment variables of one run.
type Setting = (&'static [&'static str], &'static [(&'static str, &'static str)]);

/// The CPU engine's worker threads are named `nanobragg-worker-I` (the kernel keeps
/// `nanobragg-worke`).
const WORKER: &str = "nanobragg-worke";

#[test]
fn cpu_workers_follow_nthreads_then_openmp_then_rayon_then_the_cores() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cases: [(Setting, usize); 6] = [
        ((&["-nthreads", "1"], &[]), 1),
        ((&["-nthreads", "3"], &[("OMP_NUM_THREADS", "1")]), 3),
        ((&[], &[("OMP_NUM_THREADS", "1"), ("RAYON_NUM_THREADS", "3")]), 1),
        ((&[], &[("OMP_NUM_THREADS", "3,1")]), 3),
        ((&[], &[("RAYON_NUM_THREADS", "1")]), 1),
        ((&[], &[]), cores),
    ];
    for ((flags, env), want) in cases {
        let (worked, _) = busy(flags, env);
        let workers = named(&worked, WORKER);
        eprintln!("{flags:?} {env:?}: {worked:?}");
        assert_eq!(workers.len(), want, "{flags:?} {env:?}: busy threads {worked:?}");
        if want == 1 {
            // nothing else ran in parallel with the one worker (burn-ndarray's own pool, say)
            let others: u64 = worked
                .iter()
                .filter(|t| !t.name.starts_with(WORKER))
                .map(|t| t.ticks)
                .sum();
            assert!(
                others * 2 <= workers[0].ticks,
                "{flags:?} {env:?}: other threads worked {others} ticks beside the worker's {}: {worked:?}",
                workers[0].ticks
            );
        }
    }
}

#[test]
fn shot_writers_follow_nthreads() {
    for (n, want) in [("1", 1), ("4", 2)] {
        let flags = ["-detpixels", "64", "-shots_random", "4", "-seed", "3", "-nthreads", n];
        let (_, seen) = busy(&flags, &[]);
        let writers = named(&seen, "shot-writer-");
        assert_eq!(writers.len(), want, "-nthreads {n}: {seen:?}");
        let workers = named(&seen, WORKER).len();
        assert!(workers <= n.parse().unwrap(), "-nthreads {n}: {workers} workers");
    }
}

#[test]
fn llvmpipe_follows_nthreads() {
    let engine = nanobragg::engine::Engine::Wgpu { fusion: true };
    if !common::engine_available(engine) {
        return;
    }
    for n in [1usize, 3] {
        let flags = ["-engine", "wgpu", "-detpixels", "256", "-nthreads", &n.to_string()];
        let (_, seen) = busy(&flags, &[]);
        let rasterisers = named(&seen, "llvmpipe-");
        if rasterisers.is_empty() {
            eprintln!("SKIP: the adapter is not llvmpipe (no llvmpipe threads): {seen:?}");
            return;
        }
        assert_eq!(rasterisers.len(), n, "-nthreads {n}: {seen:?}");
    }
}

#[test]
fn bad_thread_counts_are_errors_naming_their_source() {
    let cases: [(Setting, &str); 4] = [
        ((&["-nthreads", "0"], &[]), "-nthreads"),
        ((&["-nthreads", "two"], &[]), "-nthreads"),
        ((&[], &[("OMP_NUM_THREADS", "lots")]), "OMP_NUM_THREADS"),
        ((&[], &[("RAYON_NUM_THREADS", "-2")]), "RAYON_NUM_THREADS"),
    ];
    for ((flags, env), name) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
            .args([
                "-default_F",
                "100",
                "-cell",
                "100",
                "100",
                "100",
                "90",
                "90",
                "90",
                "-detpixels",
                "8",
            ])
            .args(flags)
            .envs(env.iter().copied())
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{flags:?} {env:?}: {err}");
        assert!(err.contains(name), "{flags:?} {env:?}: {err}");
        let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(written.is_empty(), "{flags:?} {env:?}: wrote {written:?}");
    }
}
