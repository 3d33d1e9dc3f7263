//! Schedule perturbation for hunting races in the graph bookkeeping (nanobragg patch).
//!
//! Off unless the environment variable `BURN_AUTODIFF_CHAOS_US` holds a positive number of
//! microseconds when the first pause point is reached; then every pause point, at random,
//! yields the thread or sleeps up to that long, widening the windows between a lookup and a
//! lock, an operation's inputs and its registration, a sweep's snapshot and its frees. Off, a
//! pause point costs one relaxed atomic load.

use core::sync::atomic::{AtomicU32, Ordering};

/// 0: not read yet; 1: off; n + 2: on, at most n microseconds.
static MAX_US: AtomicU32 = AtomicU32::new(0);

fn max_us() -> u32 {
    match MAX_US.load(Ordering::Relaxed) {
        0 => {
            let us = std::env::var("BURN_AUTODIFF_CHAOS_US")
                .ok()
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(0)
                .min(u32::MAX - 2);
            MAX_US.store(if us == 0 { 1 } else { us + 2 }, Ordering::Relaxed);
            us
        }
        1 => 0,
        n => n - 2,
    }
}

std::thread_local! {
    static STATE: core::cell::Cell<u64> = core::cell::Cell::new({
        let t = std::thread::current().id();
        let h = format!("{t:?}").bytes().fold(0x9e37_79b9_7f4a_7c15u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        h | 1
    });
}

fn next() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

/// A point where another thread may run.
#[inline]
pub(crate) fn pause() {
    let max = max_us();
    if max == 0 {
        return;
    }
    let r = next();
    match r % 4 {
        0 => std::thread::yield_now(),
        1 => std::thread::sleep(std::time::Duration::from_micros((r >> 8) % max as u64)),
        _ => {}
    }
}
