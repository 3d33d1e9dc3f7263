//! The structure factor F_cell (the tensor stages' `physics::structure_factor`): default_F,
//! the grid's nearest node, or tricubic interpolation over the 4×4×4 nodes around (h, k, l),
//! each with its partials ∂/∂h, ∂/∂k, ∂/∂l for the adjoint kernels (the grid values' own
//! gradient is the scatter kernel's, [`crate::kernel::scatter`]).

use crate::kernel::job::Switches;
use crate::kernel::layout::*;
use cubecl::prelude::*;

/// F_cell at (h, k, l): default_F without a grid; the grid by nearest neighbour, or by
/// tricubic interpolation until `nearest_now` (C's fall-back).
#[allow(clippy::too_many_arguments)]
#[cube]
pub(crate) fn structure_factor(
    params: &Array<f32>,
    counts: &Array<i32>,
    hkl: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    nearest_now: bool,
    #[comptime] sw: Switches,
) -> f32 {
    let mut f = params[DEFAULT_F];
    if comptime!(sw.tricubic) {
        if nearest_now {
            f = nearest(params, counts, hkl, h, k, l);
        } else {
            f = tricubic(counts, hkl, h, k, l);
        }
    } else if comptime!(sw.nearest) {
        f = nearest(params, counts, hkl, h, k, l);
    }
    f
}

/// F_cell by nearest neighbour: the grid value at ceil(x − ½), default_F outside the grid.
#[cube]
pub(crate) fn nearest(params: &Array<f32>, counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> f32 {
    let node = nearest_node(counts, h, k, l);
    let mut f = params[DEFAULT_F];
    if node >= 0 {
        f = hkl[node as usize];
    }
    f
}

/// The grid offset of the node nearest (h, k, l), ceil(x − ½) along each axis; −1 off the
/// grid.
#[cube]
pub(crate) fn nearest_node(counts: &Array<i32>, h: f32, k: f32, l: f32) -> i32 {
    let ih = grid_offset(counts, (h - 0.5).ceil(), 0usize);
    let ik = grid_offset(counts, (k - 0.5).ceil(), 1usize);
    let il = grid_offset(counts, (l - 0.5).ceil(), 2usize);
    let ch = counts[HKL_COUNT];
    let ck = counts[HKL_COUNT + 1];
    let cl = counts[HKL_COUNT + 2];
    let mut node = (ih * ck + ik) * cl + il;
    if !(ih >= 0 && ih < ch && ik >= 0 && ik < ck && il >= 0 && il < cl) {
        node = -1;
    }
    node
}

/// The offset from the grid's first index of the integral index `x` along `axis`, with `x`
/// clamped to one step outside the grid first (NaN to below it): an index off the grid stays
/// off it, and the cast to i32 is defined for any value (C's `(int)` cast is not).
#[cube]
pub(crate) fn grid_offset(counts: &Array<i32>, x: f32, #[comptime] axis: usize) -> i32 {
    let min = counts[HKL_MIN + axis];
    let below = (min - 1) as f32;
    let above = (min + counts[HKL_COUNT + axis]) as f32;
    let mut v = below;
    if x >= below {
        v = x;
    }
    if v > above {
        v = above;
    }
    v as i32 - min
}

/// F_cell by tricubic interpolation over the 4×4×4 nodes around (h, k, l), summed along l,
/// then k, then h (as the tensor stage), with the node block clamped into the grid.
#[cube]
fn tricubic(counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> f32 {
    let block = tricubic_block(counts, h, k, l);
    let mut f = 0.0;
    #[unroll]
    for i in 0..4u32 {
        let mut fk_sum = 0.0;
        #[unroll]
        for j in 0..4u32 {
            let mut fl_sum = 0.0;
            #[unroll]
            for m in 0..4u32 {
                fl_sum += hkl[block_node(block, i, j, m)] * lagrange_weight(block.tl, m);
            }
            fk_sum += fl_sum * lagrange_weight(block.tk, j);
        }
        f += fk_sum * lagrange_weight(block.th, i);
    }
    f
}

/// Whether tricubic interpolation at (h, k, l) leaves the grid: C needs min + 2 ≤ x ≤ max − 2.
#[cube]
pub(crate) fn tricubic_out_of_range(counts: &Array<i32>, h: f32, k: f32, l: f32) -> bool {
    let mut out = false;
    #[unroll]
    for a in 0..3usize {
        let mut x = l;
        if a == 0 {
            x = h;
        } else if a == 1 {
            x = k;
        }
        let min = counts[HKL_MIN + a] as f32;
        let max = min + (counts[HKL_COUNT + a] - 1) as f32;
        if x < min + 2.0 || x > max - 2.0 {
            out = true;
        }
    }
    out
}

/// x clamped to [0, max(hi, 0)].
#[cube]
pub(crate) fn clamp_index(x: i32, hi: i32) -> i32 {
    let mut v = x;
    if v > hi {
        v = hi;
    }
    if v < 0 {
        v = 0;
    }
    v
}

/// The 4-point Lagrange weight of node `n` (nodes at −1, 0, 1, 2) at t ∈ [0, 1).
#[cube]
pub(crate) fn lagrange_weight(t: f32, n: u32) -> f32 {
    let tm1 = t - 1.0;
    let tm2 = t - 2.0;
    let tp1 = t + 1.0;
    let mut w = tp1 * t * tm1 / 6.0;
    if n == 0 {
        w = t * tm1 * tm2 / -6.0;
    } else if n == 1 {
        w = tp1 * tm1 * tm2 / 2.0;
    } else if n == 2 {
        w = tp1 * t * tm2 / -2.0;
    }
    w
}

/// The 4×4×4 node block around (h, k, l), clamped into the grid: the grid offset of its
/// first node, the grid's strides along k and l, its last offset, and the fractional parts
/// h − ⌊h⌋, k − ⌊k⌋, l − ⌊l⌋ that the Lagrange weights take.
#[derive(CubeType, Clone, Copy)]
pub struct TricubicBlock {
    pub base: i32,
    pub ck: i32,
    pub cl: i32,
    pub last: i32,
    pub th: f32,
    pub tk: f32,
    pub tl: f32,
}

#[cube]
pub(crate) fn tricubic_block(counts: &Array<i32>, h: f32, k: f32, l: f32) -> TricubicBlock {
    let fh = h.floor();
    let fk = k.floor();
    let fl = l.floor();
    let ch = counts[HKL_COUNT];
    let ck = counts[HKL_COUNT + 1];
    let cl = counts[HKL_COUNT + 2];
    let bh = clamp_index(grid_offset(counts, fh, 0usize) - 1, ch - 4);
    let bk = clamp_index(grid_offset(counts, fk, 1usize) - 1, ck - 4);
    let bl = clamp_index(grid_offset(counts, fl, 2usize) - 1, cl - 4);
    TricubicBlock {
        base: (bh * ck + bk) * cl + bl,
        ck,
        cl,
        last: ch * ck * cl - 1,
        th: h - fh,
        tk: k - fk,
        tl: l - fl,
    }
}

/// The grid offset of node (i, j, m) of `block`, clamped into the grid.
#[cube]
pub(crate) fn block_node(block: TricubicBlock, i: u32, j: u32, m: u32) -> usize {
    clamp_index(
        block.base + (i as i32 * block.ck + j as i32) * block.cl + m as i32,
        block.last,
    ) as usize
}

/// F_cell with its partials ∂/∂h, ∂/∂k, ∂/∂l, whether it is default_F, and Σ|∂F/∂F_node|
/// over the grid's nodes it read (1 for nearest neighbour, the product of the axes' Σ|w| for
/// tricubic; 0 for default_F).
#[derive(CubeType, Clone, Copy)]
pub struct CellFactor {
    pub value: f32,
    pub is_default: bool,
    pub dh: f32,
    pub dk: f32,
    pub dl: f32,
    pub weight_sum: f32,
}

/// F_cell as the forward kernel: tricubic interpolation (before C's fall-back, `nearest_now`
/// false), nearest neighbour, or default_F without a grid.
#[allow(clippy::too_many_arguments)]
#[cube]
pub fn structure_factor_partials(
    params: &Array<f32>,
    counts: &Array<i32>,
    hkl: &Array<f32>,
    h: f32,
    k: f32,
    l: f32,
    nearest_now: bool,
    #[comptime] sw: Switches,
) -> CellFactor {
    let mut out = CellFactor {
        value: params[DEFAULT_F],
        is_default: true,
        dh: 0.0,
        dk: 0.0,
        dl: 0.0,
        weight_sum: 0.0,
    };
    if comptime!(sw.tricubic) {
        if nearest_now {
            let t = nearest_factor(params, counts, hkl, h, k, l);
            copy_factor(&mut out, t);
        } else {
            let t = tricubic_partials(counts, hkl, h, k, l);
            copy_factor(&mut out, t);
        }
    } else if comptime!(sw.nearest) {
        let t = nearest_factor(params, counts, hkl, h, k, l);
        copy_factor(&mut out, t);
    }
    out
}

/// `to` = `from`, field by field (a kernel cannot reassign a struct).
#[cube]
fn copy_factor(to: &mut CellFactor, from: CellFactor) {
    to.value = from.value;
    to.is_default = from.is_default;
    to.dh = from.dh;
    to.dk = from.dk;
    to.dl = from.dl;
    to.weight_sum = from.weight_sum;
}

/// F_cell of the nearest node (default_F where (h, k, l) leaves the grid).
#[cube]
fn nearest_factor(params: &Array<f32>, counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> CellFactor {
    let mut out = CellFactor {
        value: nearest(params, counts, hkl, h, k, l),
        is_default: true,
        dh: 0.0,
        dk: 0.0,
        dl: 0.0,
        weight_sum: 0.0,
    };
    if nearest_node(counts, h, k, l) >= 0 {
        out.is_default = false;
        out.weight_sum = 1.0;
    }
    out
}

/// ∂w_n/∂t of [`lagrange_weight`] (nodes at −1, 0, 1, 2).
#[cube]
pub fn lagrange_slope(t: f32, n: u32) -> f32 {
    let t2 = 3.0 * t * t;
    let mut w = (t2 - 1.0) / 6.0;
    if n == 0 {
        w = (t2 - 6.0 * t + 2.0) / -6.0;
    } else if n == 1 {
        w = (t2 - 4.0 * t - 1.0) / 2.0;
    } else if n == 2 {
        w = (t2 - 2.0 * t - 2.0) / -2.0;
    }
    w
}

/// Σ_n |w_n(t)|, the four Lagrange weights' absolute sum.
#[cube]
fn lagrange_abs_sum(t: f32) -> f32 {
    let mut s = 0.0;
    #[unroll]
    for n in 0..4u32 {
        s += lagrange_weight(t, n).abs();
    }
    s
}

/// The adjoint of [`tricubic`]: the same sums in the same order, with ∂/∂h, ∂/∂k, ∂/∂l
/// by the weights' slopes (the block's nodes do not move within a cell).
#[cube]
pub fn tricubic_partials(counts: &Array<i32>, hkl: &Array<f32>, h: f32, k: f32, l: f32) -> CellFactor {
    let block = tricubic_block(counts, h, k, l);
    let mut f = 0.0;
    let mut dh = 0.0;
    let mut dk = 0.0;
    let mut dl = 0.0;
    #[unroll]
    for i in 0..4u32 {
        let mut fk_sum = 0.0;
        let mut fk_dk = 0.0;
        let mut fk_dl = 0.0;
        #[unroll]
        for j in 0..4u32 {
            let mut fl_sum = 0.0;
            let mut fl_dl = 0.0;
            #[unroll]
            for m in 0..4u32 {
                let v = hkl[block_node(block, i, j, m)];
                fl_sum += v * lagrange_weight(block.tl, m);
                fl_dl += v * lagrange_slope(block.tl, m);
            }
            let wj = lagrange_weight(block.tk, j);
            fk_sum += fl_sum * wj;
            fk_dk += fl_sum * lagrange_slope(block.tk, j);
            fk_dl += fl_dl * wj;
        }
        let wi = lagrange_weight(block.th, i);
        f += fk_sum * wi;
        dh += fk_sum * lagrange_slope(block.th, i);
        dk += fk_dk * wi;
        dl += fk_dl * wi;
    }
    CellFactor {
        value: f,
        is_default: false,
        dh,
        dk,
        dl,
        weight_sum: lagrange_abs_sum(block.th) * lagrange_abs_sum(block.tk) * lagrange_abs_sum(block.tl),
    }
}
