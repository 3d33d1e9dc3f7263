//! A row's rendered pixels in groups of [`PIXEL_LANES`], one pixel per lane: the order in
//! which the forward lanes ([`super::pixel_lanes`]), the reverse pass and the derivative
//! images ([`super::vjp_lanes`]) take them. Each group is filled as the row is walked (no list
//! of the row's columns is collected); the last one is padded with its last pixel at weight 0.

use super::inputs::Inputs;
use super::is_rendered;
use super::pixel_lanes::PIXEL_LANES;
use std::iter::Enumerate;
use std::ops::Range;

/// Up to [`PIXEL_LANES`] pixels of one row, one a lane.
#[derive(Clone, Copy)]
pub struct PixelGroup {
    /// Each lane's detector column.
    pub fast: [usize; PIXEL_LANES],
    /// Each lane's column within the region of interest.
    pub position: [usize; PIXEL_LANES],
    /// Each lane's weight (∂L/∂I, or 1); 0 on the padding lanes.
    pub weight: [f64; PIXEL_LANES],
    /// How many lanes hold a pixel of the row (the rest repeat the last at weight 0).
    pub filled: usize,
}

impl PixelGroup {
    /// The filled lanes' columns within the region of interest.
    #[inline(always)]
    pub fn positions(&self) -> &[usize] {
        &self.position[..self.filled]
    }

    /// The lanes past the last filled one given its pixel at weight 0.
    #[inline(always)]
    fn padded(mut self) -> Self {
        let last = self.filled - 1;
        for l in self.filled..PIXEL_LANES {
            (self.fast[l], self.position[l], self.weight[l]) = (self.fast[last], self.position[last], 0.0);
        }
        self
    }
}

/// The groups of row `slow`: its rendered (unmasked) columns of the region of interest whose
/// `weight(column)` is not 0, in column order.
pub struct PixelGroups<'a, F, W> {
    inp: &'a Inputs<F>,
    slow: usize,
    columns: Enumerate<Range<usize>>,
    weight: W,
}

/// Row `slow`'s pixels of `inp` in groups, each weighted `weight(column)`; pixels of weight 0
/// are left out.
#[inline(always)]
pub fn pixel_groups<F, W: FnMut(usize) -> f64>(inp: &Inputs<F>, slow: usize, weight: W) -> PixelGroups<'_, F, W> {
    PixelGroups {
        inp,
        slow,
        columns: inp.cols.clone().enumerate(),
        weight,
    }
}

impl<F, W: FnMut(usize) -> f64> Iterator for PixelGroups<'_, F, W> {
    type Item = PixelGroup;

    #[inline(always)]
    fn next(&mut self) -> Option<PixelGroup> {
        let mut group = PixelGroup {
            fast: [0; PIXEL_LANES],
            position: [0; PIXEL_LANES],
            weight: [0.0; PIXEL_LANES],
            filled: 0,
        };
        for (position, column) in &mut self.columns {
            let w = (self.weight)(column);
            if w == 0.0 || !is_rendered(self.inp, self.slow, column) {
                continue;
            }
            let l = group.filled;
            (group.fast[l], group.position[l], group.weight[l]) = (column, position, w);
            group.filled += 1;
            if group.filled == PIXEL_LANES {
                return Some(group);
            }
        }
        (group.filled > 0).then(|| group.padded())
    }
}
