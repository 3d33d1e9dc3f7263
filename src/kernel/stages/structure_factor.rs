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

#[cfg(test)]
mod tests {
    //! The kernel's structure factor on the wgpu device (llvmpipe without a GPU) against the
    //! tensor stage `physics::structure_factor` in f64 and burn-autodiff of it, on a 9×9×9 grid
    //! of random values: default_F, nearest neighbour and tricubic interpolation (before and
    //! after C's fall-back) at points inside the grid, on its nodes and half-way between them,
    //! at the edges of tricubic's range, of the grid and of nearest's rounding, and far off it;
    //! tricubic's partials ∂F/∂(h, k, l), and Σ|∂F/∂F_node| against autodiff with respect to
    //! the grid's values.
    use super::*;
    use crate::diff::testing::{dev, host, uniform, Ad, B};
    use crate::io::hkl::HklGrid;
    use crate::kernel::testing::launch_with_grid;
    use crate::physics::structure_factor::{self as stage, HklTensor};
    use burn::backend::ndarray::NdArrayDevice;
    use burn::tensor::{backend::Backend, Tensor, TensorData};
    use cubecl::wgpu::WgpuRuntime;

    /// The grid's index range, the same along h, k and l.
    const LOW: i32 = -4;
    const HIGH: i32 = 4;
    /// Nodes along each axis.
    const SIDE: usize = (HIGH - LOW + 1) as usize;
    /// default_F (electrons), off the grid.
    const DEFAULT: f64 = 17.5;
    /// The grid's values are uniform over [0, F_MAX) (electrons).
    const F_MAX: f64 = 1000.0;
    /// Numbers the forward test kernel writes a point: F before and after C's fall-back
    /// (`nearest_now` false, true), and 1 where tricubic interpolation leaves the grid.
    const FORWARD: usize = 3;
    /// Numbers of a [`CellFactor`]: F, is_default (1 or 0), ∂F/∂(h, k, l), Σ|∂F/∂F_node|.
    const FACTOR: usize = 6;

    /// The test's grid: values from a fixed-seed generator, in f32 values.
    fn hkl_grid() -> HklGrid {
        let values = uniform(SIDE * SIDE * SIDE, 0.0, F_MAX, 42);
        HklGrid {
            h_min: LOW,
            h_max: HIGH,
            k_min: LOW,
            k_max: HIGH,
            l_min: LOW,
            l_max: HIGH,
            values: values.into_iter().map(|v| f64::from(v as f32)).collect(),
            entries: SIDE * SIDE * SIDE,
        }
    }

    /// The kernel's `counts`: the grid's first index and extent along h, k, l.
    fn counts() -> Vec<i32> {
        let mut c = vec![0i32; COUNTS];
        for a in 0..3 {
            c[HKL_MIN + a] = LOW;
            c[HKL_COUNT + a] = SIDE as i32;
        }
        c
    }

    /// The kernel's `params`: default_F.
    fn params() -> Vec<f32> {
        let mut p = vec![0.0f32; PARAMS];
        p[DEFAULT_F] = DEFAULT as f32;
        p
    }

    /// The edges along one axis: tricubic's range (±2), the grid's last nodes (±4), nearest's
    /// rounding off the grid (±4.5, ties rounding down), a hair either side of each, nodes and
    /// half-way points, and far off the grid.
    const EDGES: [f64; 27] = [
        -1e30, -1e6, -5.0, -4.5001, -4.5, -4.4999, -4.0001, -4.0, -3.5, -2.0001, -2.0, -1.9999, -0.5, 0.0, 0.5, 1.9999,
        2.0, 2.0001, 3.5, 3.9999, 4.0, 4.4999, 4.5, 4.5001, 5.0, 1e6, 1e30,
    ];

    /// Points (h, k, l) (f32 values): uniform over the grid and a step beyond it ([−5, 5]³),
    /// uniform over tricubic's range ([−2, 2]³), nodes and half-way points all over, and each
    /// of [`EDGES`] along each axis in turn, the other two inside.
    fn points() -> Vec<[f32; 3]> {
        let wide = uniform(3 * 150, -5.0, 5.0, 3);
        let inner = uniform(3 * 100, -2.0, 2.0, 5);
        let mut out: Vec<[f64; 3]> = wide
            .chunks(3)
            .chain(inner.chunks(3))
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        // h, k, l on the half-integers from −5 to 5 (21 of them), in three orders
        let half = |a: i32| f64::from(a.rem_euclid(21) - 10) / 2.0;
        out.extend((0..21).map(|a| [half(a), half(3 * a + 4), half(5 * a + 7)]));
        out.extend((0..21).map(|a| [half(7 * a + 2), half(a), half(2 * a + 9)]));
        let others = uniform(6 * EDGES.len(), -2.0, 2.0, 13);
        for axis in 0..3 {
            for (j, &edge) in EDGES.iter().enumerate() {
                let o = &others[(2 * axis * EDGES.len() + 2 * j)..];
                let mut p = [o[0], o[1], o[0] + o[1]];
                p[axis] = edge;
                out.push(p);
            }
        }
        out.into_iter().map(|p| p.map(|x| x as f32)).collect()
    }

    /// h, k, l at `points` as columns `[R, 1]`, leaves that keep their gradients under
    /// autodiff.
    fn columns<K: Backend<Device = NdArrayDevice>>(points: &[[f32; 3]]) -> [Tensor<K, 2>; 3] {
        [0, 1, 2].map(|a| {
            let v: Vec<f64> = points.iter().map(|p| f64::from(p[a])).collect();
            Tensor::<K, 2>::from_data(TensorData::new(v, [points.len(), 1]), &dev()).require_grad()
        })
    }

    fn switches(nearest: bool, tricubic: bool) -> Switches {
        Switches {
            nearest,
            tricubic,
            ..crate::kernel::native::pixel::tests_support::switches()
        }
    }

    /// Each point's [`FORWARD`] numbers under `sw`.
    #[cube(launch)]
    fn factor_of_points(
        params: &Array<f32>,
        counts: &Array<i32>,
        hkl: &Array<f32>,
        points: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] sw: Switches,
    ) {
        let i = ABSOLUTE_POS;
        if (i + 1) * FORWARD <= output.len() {
            let (h, k, l) = (points[3 * i], points[3 * i + 1], points[3 * i + 2]);
            output[FORWARD * i] = structure_factor(params, counts, hkl, h, k, l, false, sw);
            output[FORWARD * i + 1] = structure_factor(params, counts, hkl, h, k, l, true, sw);
            let mut out = 0.0;
            if tricubic_out_of_range(counts, h, k, l) {
                out = 1.0;
            }
            output[FORWARD * i + 2] = out;
        }
    }

    /// Each point's [`CellFactor`] under `sw` before C's fall-back, then after it
    /// (2·[`FACTOR`] numbers).
    #[cube(launch)]
    fn partials_of_points(
        params: &Array<f32>,
        counts: &Array<i32>,
        hkl: &Array<f32>,
        points: &Array<f32>,
        output: &mut Array<f32>,
        #[comptime] sw: Switches,
    ) {
        let i = ABSOLUTE_POS;
        if (i + 1) * 2 * FACTOR <= output.len() {
            let (h, k, l) = (points[3 * i], points[3 * i + 1], points[3 * i + 2]);
            let before = structure_factor_partials(params, counts, hkl, h, k, l, false, sw);
            let after = structure_factor_partials(params, counts, hkl, h, k, l, true, sw);
            store_factor(output, 2 * FACTOR * i, before);
            store_factor(output, 2 * FACTOR * i + FACTOR, after);
        }
    }

    /// `f`'s [`FACTOR`] numbers at `output[at..]`.
    #[cube]
    fn store_factor(output: &mut Array<f32>, at: usize, f: CellFactor) {
        output[at] = f.value;
        let mut is_default = 0.0;
        if f.is_default {
            is_default = 1.0;
        }
        output[at + 1] = is_default;
        output[at + 2] = f.dh;
        output[at + 3] = f.dk;
        output[at + 4] = f.dl;
        output[at + 5] = f.weight_sum;
    }

    /// The forward kernel ([`FORWARD`] numbers a point) or, with `partials`, the partials
    /// kernel (2·[`FACTOR`]) under `sw` at `points`; `None` without a wgpu adapter.
    fn run(points: &[[f32; 3]], sw: Switches, partials: bool) -> Option<Vec<f32>> {
        let grid: Vec<f32> = hkl_grid().values.iter().map(|&v| v as f32).collect();
        let flat: Vec<f32> = points.iter().flatten().copied().collect();
        let n = points.len();
        let width = if partials { 2 * FACTOR } else { FORWARD };
        launch_with_grid(&params(), &counts(), &grid, &flat, width * n, n, |c, count, dim, a| {
            if partials {
                partials_of_points::launch::<WgpuRuntime>(c, count, dim, a.0, a.1, a.2, a.3, a.4, sw)
            } else {
                factor_of_points::launch::<WgpuRuntime>(c, count, dim, a.0, a.1, a.2, a.3, a.4, sw)
            }
        })
    }

    /// The tensor stage in f64 at the test's points.
    struct Reference {
        nearest: Vec<f64>,
        tricubic: Vec<f64>,
        out_of_range: Vec<bool>,
        /// Where nearest neighbour leaves the grid (default_F): the stage with default_F NaN.
        off_grid: Vec<bool>,
    }

    fn reference_values(points: &[[f32; 3]]) -> Reference {
        let grid = HklTensor::<B>::new(&hkl_grid(), DEFAULT, &dev());
        let marked = HklTensor::<B>::new(&hkl_grid(), f64::NAN, &dev());
        let hkl = columns::<B>(points);
        let out = host(stage::tricubic_out_of_range(&hkl, &grid).float());
        Reference {
            nearest: host(stage::nearest(&hkl, &grid)),
            tricubic: host(stage::tricubic(&hkl, &grid)),
            out_of_range: out.iter().map(|&x| x != 0.0).collect(),
            off_grid: host(stage::nearest(&hkl, &marked)).iter().map(|x| x.is_nan()).collect(),
        }
    }

    /// Tricubic F's bound relative to [`F_MAX`]: 64 products of three Lagrange weights (a few
    /// f32 roundings each, 6e-8 relative) and the grid values, Σ|w| ≤ 1.25³, summed in f32;
    /// the partials' slopes add one more rounding and Σ|w'| ≤ 2 along their axis (2.7e-7 seen).
    const TRICUBIC_TOL: f64 = 1e-6;

    /// The forward kernel against the tensor stage in f64: default_F without a grid; nearest
    /// neighbour (exact, default_F off the grid); tricubic interpolation before C's fall-back
    /// (also where it leaves the grid, the block clamped as the stage clamps it) and nearest
    /// neighbour after it; and where tricubic leaves its range.
    #[test]
    fn structure_factor_matches_the_tensor_stage() {
        let pts = points();
        let want = reference_values(&pts);
        for (nearest, tricubic) in [(false, false), (true, false), (false, true)] {
            let Some(got) = run(&pts, switches(nearest, tricubic), false) else {
                return;
            };
            let mut worst = 0.0f64;
            for (i, (g, p)) in got.chunks(FORWARD).zip(&pts).enumerate() {
                let case = format!("nearest {nearest}, tricubic {tricubic}, point {p:?}");
                let (before, after, tolerance) = match (nearest, tricubic) {
                    (false, false) => (DEFAULT, DEFAULT, 0.0),
                    (true, false) => (want.nearest[i], want.nearest[i], 0.0),
                    _ => (want.tricubic[i], want.nearest[i], TRICUBIC_TOL * F_MAX),
                };
                let err = (f64::from(g[0]) - before).abs();
                assert!(err <= tolerance, "{case}: F {} vs {before}", g[0]);
                worst = worst.max(err / F_MAX);
                assert_eq!(f64::from(g[1]), after, "{case}: F after C's fall-back");
                assert_eq!(g[2] == 1.0, want.out_of_range[i], "{case}: out of tricubic's range");
            }
            eprintln!("nearest {nearest}, tricubic {tricubic}: worst |ΔF| {worst:.2e} of F_MAX");
        }
    }

    /// ∂F/∂h, ∂F/∂k, ∂F/∂l `[R]` of the tensor stage's tricubic F at `points` by burn-autodiff
    /// (f64).
    fn reference_slopes(points: &[[f32; 3]]) -> [Vec<f64>; 3] {
        let grid = HklTensor::<Ad>::new(&hkl_grid(), DEFAULT, &dev());
        let hkl = columns::<Ad>(points);
        let grads = stage::tricubic(&hkl, &grid).sum().backward();
        hkl.map(|x| host(x.grad(&grads).expect("F moves with h, k, l")))
    }

    /// Σ|∂F/∂F_node| over the grid at `point` by burn-autodiff of the tensor stage's F
    /// (tricubic, or nearest neighbour) with respect to the grid's values (f64).
    fn reference_weight_sum(point: [f32; 3], tricubic: bool) -> f64 {
        let mut grid = HklTensor::<Ad>::new(&hkl_grid(), DEFAULT, &dev());
        grid.values = grid.values.require_grad();
        let hkl = columns::<Ad>(&[point]);
        let f = if tricubic {
            stage::tricubic(&hkl, &grid)
        } else {
            stage::nearest(&hkl, &grid)
        };
        let grads = f.sum().backward();
        grid.values
            .grad(&grads)
            .map_or(0.0, |g| host(g).iter().map(|x| x.abs()).sum())
    }

    /// A nearest-neighbour [`CellFactor`] `got` ([`FACTOR`] numbers) at `point`: F and whether it
    /// is default_F as the tensor stage, no slope (F is constant between rounding edges), and
    /// Σ|∂F/∂F_node| as autodiff of the tensor stage (1 on the grid, 0 off it).
    fn check_nearest_factor(case: &str, got: &[f32], point: [f32; 3], want: &Reference, i: usize) {
        assert_eq!(f64::from(got[0]), want.nearest[i], "{case}: F");
        assert_eq!(got[1] == 1.0, want.off_grid[i], "{case}: is default_F");
        assert_eq!(got[2..5], [0.0; 3], "{case}: ∂F/∂(h, k, l)");
        assert_eq!(
            f64::from(got[5]),
            reference_weight_sum(point, false),
            "{case}: Σ|∂F/∂F_node|"
        );
    }

    /// A tricubic [`CellFactor`] `got` at point `i` against the tensor stage's F, the slopes
    /// of autodiff (`slopes`) and its Σ|∂F/∂F_node| at `point` (relative: it is at least 1,
    /// the weights summing to 1). Returns the worst slope error relative to [`F_MAX`].
    fn check_tricubic_factor(
        case: &str,
        got: &[f32],
        point: [f32; 3],
        want: &Reference,
        slopes: &[Vec<f64>; 3],
        i: usize,
    ) -> f64 {
        let value_err = (f64::from(got[0]) - want.tricubic[i]).abs();
        assert!(
            value_err <= TRICUBIC_TOL * F_MAX,
            "{case}: F {} vs {}",
            got[0],
            want.tricubic[i]
        );
        assert_eq!(got[1], 0.0, "{case}: is default_F");
        let mut worst = 0.0f64;
        for (a, axis) in ["h", "k", "l"].iter().enumerate() {
            let (g, w) = (f64::from(got[2 + a]), slopes[a][i]);
            assert!((g - w).abs() <= TRICUBIC_TOL * F_MAX, "{case}: ∂F/∂{axis} {g} vs {w}");
            worst = worst.max((g - w).abs() / F_MAX);
        }
        let w = reference_weight_sum(point, true);
        assert!(
            (f64::from(got[5]) - w).abs() <= 1e-6 * w,
            "{case}: Σ|∂F/∂F_node| {} vs {w}",
            got[5]
        );
        worst
    }

    /// Tricubic's partials (the adjoint kernels') against burn-autodiff of the tensor stage in
    /// f64: F, ∂F/∂(h, k, l) and Σ|∂F/∂F_node| before C's fall-back, where the block is
    /// clamped into the grid too; nearest neighbour's after it.
    #[test]
    fn tricubic_partials_match_autodiff_of_the_tensor_stage() {
        let pts = points();
        let Some(got) = run(&pts, switches(false, true), true) else {
            return;
        };
        let (want, slopes) = (reference_values(&pts), reference_slopes(&pts));
        let mut worst = 0.0f64;
        for (i, (g, &p)) in got.chunks(2 * FACTOR).zip(&pts).enumerate() {
            let case = format!("tricubic, point {p:?}");
            worst = worst.max(check_tricubic_factor(&case, &g[..FACTOR], p, &want, &slopes, i));
            check_nearest_factor(&format!("{case} after the fall-back"), &g[FACTOR..], p, &want, i);
        }
        eprintln!("tricubic partials: worst |Δ∂F/∂(h, k, l)| {worst:.2e} of F_MAX");
    }

    /// The partials of nearest neighbour (against the tensor stage and autodiff of it) and of
    /// default_F without a grid (default_F, nothing else), before and after C's fall-back.
    #[test]
    fn nearest_and_default_partials_match_the_tensor_stage() {
        let pts = points();
        let want = reference_values(&pts);
        for nearest in [true, false] {
            let Some(got) = run(&pts, switches(nearest, false), true) else {
                return;
            };
            for (i, (g, &p)) in got.chunks(FACTOR).zip(pts.iter().flat_map(|p| [p, p])).enumerate() {
                let case = format!("nearest {nearest}, point {p:?}");
                if nearest {
                    check_nearest_factor(&case, g, p, &want, i / 2);
                } else {
                    assert_eq!(g, [DEFAULT as f32, 1.0, 0.0, 0.0, 0.0, 0.0], "{case}");
                }
            }
        }
    }
}
