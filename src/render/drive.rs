//! The one chunk driver: render, vector–Jacobian products and derivative images all walk the
//! ROI in [`Span`]s through [`drive`], so the order of work, the worker threads, error handling
//! and C's interpolation rule are written once.
//!
//! C's rule: tricubic interpolation of the structure factors is switched off for good at the
//! first out-of-range point, in C's loop order. Spans run in parallel, so a span rendered with
//! interpolation is held back until every span before it has finished; if one of those met an
//! out-of-range point first, it is rendered again with nearest-neighbour lookup. Results reach
//! the caller's `fold` only once they are final, in any order, each exactly once.

use crate::base::error::Result;
use crate::experiment::pixels::{Span, Spans};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Progress callback: (pixels done, pixels in total).
pub type Progress = std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>;

/// One unit of work: span `index` of the ROI, and whether to interpolate structure factors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub index: usize,
    pub span: Span,
    pub tricubic: bool,
}

/// A chunk's result, as `work` returns it: its value and whether interpolation met an
/// out-of-range point in it.
pub struct Rendered<T> {
    pub value: T,
    pub out_of_range: bool,
}

/// Run `work` over every span of `spans` and hand each final result to `fold`; returns whether
/// interpolation fell back to nearest neighbour (C's warning). `init` makes each worker's own
/// state (its scene tensors, say); `interpolate` is whether the run starts with tricubic
/// interpolation. The workers are a pool of `threads` threads ([`crate::base::workers`]). The
/// first error stops the workers and is returned.
pub fn drive<W, T: Send>(
    spans: &Spans,
    threads: usize,
    interpolate: bool,
    init: impl Fn() -> W + Sync,
    work: impl Fn(&mut W, Chunk) -> Result<Rendered<T>> + Sync,
    fold: impl FnMut(Chunk, T) + Send,
    progress: Option<&Progress>,
) -> Result<bool> {
    let n = spans.len();
    drive_with(spans, interpolate, init, work, fold, progress, |worker| {
        crate::base::workers::run(threads.clamp(1, n.max(1)), worker).map(drop)
    })
}

/// [`drive`] on the caller's thread with work that cannot fail: nothing can, so it returns
/// whether interpolation fell back, with no `Result` (the forward pass of
/// [`crate::Simulator`]).
pub fn drive_here<T: Send>(
    spans: &Spans,
    interpolate: bool,
    work: impl Fn(Chunk) -> Rendered<T> + Sync,
    fold: impl FnMut(Chunk, T) + Send,
) -> bool {
    let run = drive_with(
        spans,
        interpolate,
        || (),
        |_, chunk| Ok::<_, std::convert::Infallible>(work(chunk)),
        fold,
        None,
        |worker| {
            worker();
            Ok(())
        },
    );
    match run {
        Ok(fell_back) => fell_back,
        Err(never) => match never {},
    }
}

/// The driver itself: `launch` runs the worker loop it is given (once, or on each thread of
/// a pool); errors of type `E` come from `work` and `launch`.
fn drive_with<W, T: Send, E: Send>(
    spans: &Spans,
    interpolate: bool,
    init: impl Fn() -> W + Sync,
    work: impl Fn(&mut W, Chunk) -> std::result::Result<Rendered<T>, E> + Sync,
    fold: impl FnMut(Chunk, T) + Send,
    progress: Option<&Progress>,
    launch: impl FnOnce(&(dyn Fn() + Sync)) -> std::result::Result<(), E>,
) -> std::result::Result<bool, E> {
    let n = spans.len();
    let state = Mutex::new(State {
        next: 0,
        redo: Vec::new(),
        finished: vec![false; n],
        out_of_range: vec![false; n],
        prefix: 0,
        first_out_of_range: None,
        earliest_known: usize::MAX,
        pending: BTreeMap::new(),
        failure: None,
        positions_done: 0,
        fold,
    });
    let worker = || {
        let mut own = init();
        loop {
            let chunk = {
                let mut s = state.lock().expect("no worker panicked");
                if s.failure.is_some() {
                    break;
                }
                match s.redo.pop() {
                    Some(index) => Chunk {
                        index,
                        span: spans.get(index),
                        tricubic: false,
                    },
                    None if s.next < n => {
                        let index = s.next;
                        s.next += 1;
                        Chunk {
                            index,
                            span: spans.get(index),
                            tricubic: interpolate && index < s.earliest_known,
                        }
                    }
                    None => break,
                }
            };
            let result = work(&mut own, chunk);
            let mut s = state.lock().expect("no worker panicked");
            match result {
                Ok(r) => {
                    if let Some(done) = s.complete(chunk, r) {
                        if let Some(p) = progress {
                            p(done, spans.total());
                        }
                    }
                }
                Err(e) => {
                    s.failure.get_or_insert(e);
                    break;
                }
            }
        }
    };
    launch(&worker)?;
    let s = state.into_inner().expect("no worker panicked");
    if let Some(e) = s.failure {
        return Err(e);
    }
    // every worker stops only when no span is left to start or redo, and a span's result is
    // folded once every span before it is final: nothing can be left (property-tested below)
    assert!(
        s.pending.is_empty() && s.redo.is_empty() && s.prefix == n,
        "the chunk driver left spans unsettled"
    );
    Ok(s.first_out_of_range.is_some())
}

/// Values handed over in any order, passed on in index order (0, 1, 2, …): for sums that must
/// not depend on which worker finished first. Holds only the values that arrived early (with
/// the driver's in-order hand-out, about one per worker).
pub struct InOrder<T> {
    next: usize,
    early: BTreeMap<usize, T>,
}

impl<T> Default for InOrder<T> {
    fn default() -> Self {
        Self {
            next: 0,
            early: BTreeMap::new(),
        }
    }
}

impl<T> InOrder<T> {
    /// Take value `index`; `f` gets it, and every held value it unblocks, in index order.
    pub fn push(&mut self, index: usize, value: T, mut f: impl FnMut(T)) {
        self.early.insert(index, value);
        while let Some(v) = self.early.remove(&self.next) {
            f(v);
            self.next += 1;
        }
    }

    /// Whether every value pushed so far has been passed on.
    #[cfg(test)]
    pub fn is_drained(&self) -> bool {
        self.early.is_empty()
    }
}

/// The driver's books, behind one lock.
struct State<T, F, E> {
    /// The next span never started.
    next: usize,
    /// Spans to render again without interpolation.
    redo: Vec<usize>,
    finished: Vec<bool>,
    out_of_range: Vec<bool>,
    /// Every span before it has finished.
    prefix: usize,
    /// The first span, in order, that met an out-of-range point (final once known).
    first_out_of_range: Option<usize>,
    /// The earliest span seen so far to meet one (later spans start without interpolation).
    earliest_known: usize,
    /// Interpolated results waiting for every span before them.
    pending: BTreeMap<usize, (Chunk, T)>,
    failure: Option<E>,
    positions_done: usize,
    fold: F,
}

impl<T, F: FnMut(Chunk, T), E> State<T, F, E> {
    /// Book a result; returns the positions done so far when the span is new.
    fn complete(&mut self, chunk: Chunk, r: Rendered<T>) -> Option<usize> {
        let j = chunk.index;
        let first_time = !self.finished[j];
        self.finished[j] = true;
        if r.out_of_range {
            self.out_of_range[j] = true;
            self.earliest_known = self.earliest_known.min(j);
        }
        if chunk.tricubic {
            self.pending.insert(j, (chunk, r.value));
        } else {
            (self.fold)(chunk, r.value);
        }
        while self.prefix < self.finished.len() && self.finished[self.prefix] {
            if self.out_of_range[self.prefix] && self.first_out_of_range.is_none() {
                self.first_out_of_range = Some(self.prefix);
            }
            self.prefix += 1;
        }
        self.settle();
        if first_time {
            self.positions_done += chunk.span.len;
            Some(self.positions_done)
        } else {
            None
        }
    }

    /// Fold the interpolated results that are final; queue again those that are not. Once the
    /// first out-of-range span f is known every span up to f has finished: results up to f are
    /// final, later ones are redone.
    fn settle(&mut self) {
        let ready: Vec<usize> = match self.first_out_of_range {
            Some(_) => self.pending.keys().copied().collect(),
            None => self.pending.range(..self.prefix).map(|(&j, _)| j).collect(),
        };
        for j in ready {
            let (chunk, value) = self.pending.remove(&j).expect("listed above");
            match self.first_out_of_range {
                Some(f) if j > f => self.redo.push(j),
                _ => (self.fold)(chunk, value),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::Error;
    use crate::config::Roi;
    use crate::experiment::pixels::ActivePixels;
    use proptest::prelude::*;

    proptest! {
        /// Each span is folded once, interpolated exactly when no earlier span (in order) met an
        /// out-of-range point, whatever the threads' timing.
        #[test]
        fn applies_cs_interpolation_rule_once(
            spans in 1usize..40,
            hits in proptest::collection::vec(any::<bool>(), 40),
            interpolate: bool,
            threads in 1usize..4,
        ) {
            let roi = Roi { xmin: 0, xmax: spans as i64 - 1, ymin: 0, ymax: 0 };
            let spans = ActivePixels::new(spans, 1, &roi, None).spans(1);
            let folded = Mutex::new(Vec::new());
            let fell_back = drive(
                &spans,
                threads,
                interpolate,
                || (),
                |_, c| Ok(Rendered { value: c.tricubic, out_of_range: c.tricubic && hits[c.index] }),
                |c, tri| folded.lock().unwrap().push((c.index, tri)),
                None,
            )
            .unwrap();
            let first = interpolate.then(|| (0..spans.len()).find(|&j| hits[j])).flatten();
            let mut folded = folded.into_inner().unwrap();
            folded.sort();
            let want: Vec<(usize, bool)> =
                (0..spans.len()).map(|j| (j, interpolate && first.is_none_or(|f| j <= f))).collect();
            prop_assert_eq!(folded, want);
            prop_assert_eq!(fell_back, first.is_some());
        }
    }

    proptest! {
        /// Values pushed in any order come out in index order, each once, and nothing stays
        /// held once every index has arrived.
        #[test]
        fn in_order_passes_values_on_in_index_order(order in Just((0..40usize).collect::<Vec<_>>()).prop_shuffle()) {
            let mut buffer = InOrder::default();
            let mut out = Vec::new();
            for &i in &order {
                buffer.push(i, i, |v| out.push(v));
            }
            prop_assert_eq!(out, (0..40).collect::<Vec<_>>());
            prop_assert!(buffer.is_drained());
        }
    }

    #[test]
    fn the_first_error_stops_the_run() {
        let roi = Roi {
            xmin: 0,
            xmax: 99,
            ymin: 0,
            ymax: 0,
        };
        let spans = ActivePixels::new(100, 1, &roi, None).spans(1);
        let r = drive(
            &spans,
            2,
            false,
            || (),
            |_, c| match c.index {
                7 => Err(Error::Config("span 7".into())),
                _ => Ok(Rendered {
                    value: (),
                    out_of_range: false,
                }),
            },
            |_, _| (),
            None,
        );
        assert!(matches!(r, Err(Error::Config(m)) if m == "span 7"));
    }
}
