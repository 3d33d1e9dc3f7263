//! The pixels C renders (inside the ROI, not masked), walked in C's order without listing them,
//! so that memory does not grow with the image.

use crate::config::Roi;
use std::ops::Range;

/// The rendered pixels in C's order (slow, then fast), as indices `slow·fpixels + fast`.
///
/// Holds no per-pixel list: walking them costs O(1) memory (the mask, when there is one, is
/// the caller's).
#[derive(Debug, Clone)]
pub struct ActivePixels<'a> {
    fpixels: usize,
    /// The ROI clamped to the detector (slow rows, fast columns); empty when it lies outside.
    rows: Range<usize>,
    cols: Range<usize>,
    /// One value per detector pixel; 0 = masked.
    mask: Option<&'a [u16]>,
}

impl<'a> ActivePixels<'a> {
    /// The pixels of an `fpixels × spixels` detector inside `roi` (inclusive bounds, clamped to
    /// the detector) where `mask` is not 0.
    pub fn new(fpixels: usize, spixels: usize, roi: &Roi, mask: Option<&'a [u16]>) -> Self {
        let clamp = |lo: i64, hi: i64, n: usize| {
            let lo = lo.max(0) as usize;
            let hi = (hi.max(-1) + 1) as usize;
            lo.min(n)..hi.min(n).max(lo.min(n))
        };
        Self {
            fpixels,
            rows: clamp(roi.ymin, roi.ymax, spixels),
            cols: clamp(roi.xmin, roi.xmax, fpixels),
            mask,
        }
    }

    /// All of them, in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + 'a {
        let (fpixels, cols, mask) = (self.fpixels, self.cols.clone(), self.mask);
        self.rows
            .clone()
            .flat_map(move |s| cols.clone().map(move |f| s * fpixels + f))
            .filter(move |&i| mask.is_none_or(|m| m[i] != 0))
    }

    /// Whether pixel `idx` (< fpixels·spixels) is one of them.
    pub fn contains(&self, idx: usize) -> bool {
        let (s, f) = (idx / self.fpixels.max(1), idx % self.fpixels.max(1));
        self.rows.contains(&s) && self.cols.contains(&f) && self.mask.is_none_or(|m| m[idx] != 0)
    }

    /// [`Self::contains`] for every pixel in file order, from pixel 0 on (endless: zip it with
    /// the image), walked without a division per pixel.
    pub fn membership(&self) -> Membership<'a> {
        self.membership_from(0)
    }

    /// [`Self::membership`] from pixel `first` on (a row's first pixel: `slow·fpixels`).
    pub fn membership_from(&self, first: usize) -> Membership<'a> {
        let width = self.fpixels.max(1);
        Membership {
            pixels: self.clone(),
            idx: first,
            slow: first / width,
            fast: first % width,
        }
    }

    /// How many there are.
    pub fn count(&self) -> usize {
        match self.mask {
            None => self.rows.len() * self.cols.len(),
            Some(_) => self.iter().count(),
        }
    }

    /// The ROI rectangle (clamped to the detector), masked pixels included, cut into runs of
    /// `per_chunk` (≥ 1) consecutive positions in C's order: the unit of work of the chunk
    /// driver. A span is two numbers; its pixel coordinates are computed on the device.
    pub fn spans(&self, per_chunk: usize) -> Spans {
        let per_chunk = per_chunk.max(1);
        let total = self.rows.len() * self.cols.len();
        Spans {
            rect: self.rect(),
            per_chunk,
            count: total.div_ceil(per_chunk),
            total,
        }
    }

    /// The ROI rectangle (clamped to the detector).
    pub fn rect(&self) -> RoiRect {
        RoiRect {
            fpixels: self.fpixels,
            rows: self.rows.clone(),
            cols: self.cols.clone(),
        }
    }
}

/// Whether each pixel, in file order, is one of the [`ActivePixels`]
/// ([`ActivePixels::membership`]).
#[derive(Debug, Clone)]
pub struct Membership<'a> {
    pixels: ActivePixels<'a>,
    /// The next pixel's index and its (slow, fast) position.
    idx: usize,
    slow: usize,
    fast: usize,
}

impl Iterator for Membership<'_> {
    type Item = bool;

    fn next(&mut self) -> Option<bool> {
        let p = &self.pixels;
        let inside = p.rows.contains(&self.slow)
            && p.cols.contains(&self.fast)
            && p.mask.is_none_or(|m| m.get(self.idx).is_some_and(|&v| v != 0));
        self.idx += 1;
        self.fast += 1;
        if self.fast >= p.fpixels {
            self.fast = 0;
            self.slow += 1;
        }
        Some(inside)
    }
}

/// The ROI rectangle: detector rows `rows` (slow) × columns `cols` (fast) of a detector
/// `fpixels` wide. Its positions are numbered row by row from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoiRect {
    pub fpixels: usize,
    pub rows: Range<usize>,
    pub cols: Range<usize>,
}

impl RoiRect {
    /// Number of positions.
    pub fn len(&self) -> usize {
        self.rows.len() * self.cols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pieces of `span` that lie in one detector row each: (detector index of the first
    /// pixel, length), in order.
    pub fn segments(&self, span: Span) -> impl Iterator<Item = (usize, usize)> + '_ {
        let w = self.cols.len().max(1);
        let end = span.start + span.len;
        let mut k = span.start;
        std::iter::from_fn(move || {
            (k < end).then(|| {
                let n = ((k / w + 1) * w).min(end) - k;
                let piece = (self.index(k), n);
                k += n;
                piece
            })
        })
    }

    /// Write `values` (one per position of `span`, in order) into `image`, a detector image
    /// (fast-major), as f32, a row segment at a time.
    pub fn store(&self, image: &mut [f32], span: Span, values: impl IntoIterator<Item = f64>) {
        let mut values = values.into_iter();
        for (first, n) in self.segments(span) {
            for (d, v) in image[first..first + n].iter_mut().zip(values.by_ref()) {
                *d = v as f32;
            }
        }
    }

    /// The detector index `slow·fpixels + fast` of position `k` (< [`Self::len`]).
    pub fn index(&self, k: usize) -> usize {
        let w = self.cols.len();
        (self.rows.start + k / w) * self.fpixels + self.cols.start + k % w
    }
}

/// A run of consecutive positions `start..start + len` of the ROI rectangle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub len: usize,
}

impl Span {
    /// The positions it covers.
    pub fn positions(&self) -> Range<usize> {
        self.start..self.start + self.len
    }
}

/// The ROI rectangle cut into [`Span`]s of equal length (the last one shorter), in order.
/// Holds four numbers, whatever the image size.
#[derive(Debug, Clone)]
pub struct Spans {
    pub rect: RoiRect,
    per_chunk: usize,
    count: usize,
    total: usize,
}

impl Spans {
    /// Number of spans.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of positions in all spans (the ROI rectangle's size).
    pub fn total(&self) -> usize {
        self.total
    }

    /// Span `j` (< [`Self::len`]).
    pub fn get(&self, j: usize) -> Span {
        let start = j * self.per_chunk;
        Span {
            start,
            len: self.per_chunk.min(self.total - start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition: every pixel, tested one by one.
    fn listed(f: usize, s: usize, roi: &Roi, mask: Option<&[u16]>) -> Vec<usize> {
        (0..s * f)
            .filter(|&i| {
                let (y, x) = ((i / f) as i64, (i % f) as i64);
                x >= roi.xmin && x <= roi.xmax && y >= roi.ymin && y <= roi.ymax
            })
            .filter(|&i| mask.is_none_or(|m| m[i] != 0))
            .collect()
    }

    proptest! {
        #[test]
        fn walks_and_spans_as_the_definition_lists(
            f in 1usize..9, s in 1usize..9,
            x0 in -2i64..10, w in -1i64..10, y0 in -2i64..10, h in -1i64..10,
            masked in proptest::collection::vec(any::<bool>(), 81),
            use_mask: bool, per_chunk in 1usize..12,
        ) {
            let roi = Roi { xmin: x0, xmax: x0 + w, ymin: y0, ymax: y0 + h };
            let mask: Vec<u16> = masked[..f * s].iter().map(|&m| u16::from(!m)).collect();
            let mask = use_mask.then_some(mask.as_slice());
            let want = listed(f, s, &roi, mask);
            let active = ActivePixels::new(f, s, &roi, mask);
            prop_assert_eq!(active.iter().collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(active.count(), want.len());
            prop_assert!((0..f * s).all(|i| active.contains(i) == want.contains(&i)));
            let walked: Vec<bool> = active.membership().take(f * s).collect();
            prop_assert_eq!(walked, (0..f * s).map(|i| want.contains(&i)).collect::<Vec<_>>());
            let first = per_chunk.min(f * s);
            let from: Vec<bool> = active.membership_from(first).take(f * s - first).collect();
            prop_assert_eq!(from, (first..f * s).map(|i| want.contains(&i)).collect::<Vec<_>>());
            let spans = active.spans(per_chunk);
            prop_assert_eq!(spans.total(), listed(f, s, &roi, None).len());
            let joined: Vec<usize> = (0..spans.len())
                .flat_map(|j| spans.get(j).positions())
                .map(|k| spans.rect.index(k))
                .filter(|&i| active.contains(i))
                .collect();
            prop_assert_eq!(joined, want);
            prop_assert!((0..spans.len()).all(|j| (1..=per_chunk).contains(&spans.get(j).len)));
            for j in 0..spans.len() {
                let span = spans.get(j);
                let pieces: Vec<usize> = spans.rect.segments(span).flat_map(|(i, n)| i..i + n).collect();
                let each: Vec<usize> = span.positions().map(|k| spans.rect.index(k)).collect();
                prop_assert_eq!(&pieces, &each);
                let mut image = vec![-1.0f32; f * s];
                spans.rect.store(&mut image, span, span.positions().map(|k| k as f64));
                for (k, &i) in span.positions().zip(&each) {
                    prop_assert_eq!(image[i], k as f32);
                }
                prop_assert_eq!(image.iter().filter(|&&v| v >= 0.0).count(), span.len);
            }
        }
    }
}
