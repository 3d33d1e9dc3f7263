//! Structure factor of the unit cell F_cell: nearest-neighbour lookup or tricubic
//! interpolation in the HKL grid (physics reference §8).

use burn::tensor::{backend::Backend, Bool, Int, Tensor, TensorCreationOptions, TensorData};

/// The HKL grid as a tensor: values `[G]` over the inclusive index ranges.
#[derive(Debug, Clone)]
pub struct HklTensor<B: Backend> {
    pub values: Tensor<B, 1>,
    /// Minimum index and count along h, k, l.
    pub min: [i64; 3],
    pub count: [i64; 3],
    /// F for reflections outside the grid.
    pub default_f: f64,
    /// `[1, 1]`: default_F as a tensor (differentiable); replaces `default_f` when given.
    pub default_f_tensor: Option<Tensor<B, 2>>,
}

impl<B: Backend> HklTensor<B> {
    /// Upload a host grid, on the device and in the dtype of `options`.
    pub fn new(grid: &crate::io::hkl::HklGrid, default_f: f64, options: impl Into<TensorCreationOptions<B>>) -> Self {
        let values = Tensor::from_data(TensorData::new(grid.values.clone(), [grid.values.len()]), options);
        let c = grid.counts();
        Self {
            values,
            min: [grid.h_min as i64, grid.k_min as i64, grid.l_min as i64],
            count: [c[0] as i64, c[1] as i64, c[2] as i64],
            default_f,
            default_f_tensor: None,
        }
    }

    fn max(&self, axis: usize) -> f64 {
        (self.min[axis] + self.count[axis] - 1) as f64
    }

    /// Integral indices `[R, C]` along `axis` as integers, clamped to one step outside the
    /// grid (NaN to below it): every index off the grid stays off it, and the cast is defined
    /// for any value, where the backend's cast panics beyond its integer range (C's `(int)`
    /// cast is undefined there; x86 gives INT_MIN, off the grid too).
    fn integer_index(&self, x: Tensor<B, 2>, axis: usize) -> Tensor<B, 2, Int> {
        let below = self.min[axis] as f64 - 1.0;
        let nan = x.clone().is_nan();
        x.clamp(below, self.max(axis) + 1.0).mask_fill(nan, below).int()
    }

    /// Flat grid index of integer indices `[R, C]` (clamped into the grid).
    fn flat_index(&self, idx: [Tensor<B, 2, Int>; 3]) -> Tensor<B, 2, Int> {
        let [h, k, l] = idx.map(|t| t);
        let clamp = |t: Tensor<B, 2, Int>, a: usize| (t - self.min[a]).clamp(0, self.count[a] - 1);
        (clamp(h, 0) * self.count[1] + clamp(k, 1)) * self.count[2] + clamp(l, 2)
    }

    fn lookup(&self, flat: Tensor<B, 2, Int>) -> Tensor<B, 2> {
        let [r, c] = flat.dims();
        self.values.clone().select(0, flat.reshape([r * c])).reshape([r, c])
    }
}

/// Nearest integer indices h0 = ceil(h − ½) (ties round down, as C).
pub fn nearest_index<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    (x - 0.5).ceil()
}

/// Nearest-neighbour F `[R, C]`: the grid value at (h0, k0, l0), or default_F outside it.
pub fn nearest<B: Backend>(hkl: &[Tensor<B, 2>; 3], grid: &HklTensor<B>) -> Tensor<B, 2> {
    let idx = [0, 1, 2].map(|a| nearest_index(hkl[a].clone()));
    let mut outside: Option<Tensor<B, 2, Bool>> = None;
    for (a, i) in idx.iter().enumerate() {
        let o = i
            .clone()
            .lower_elem(grid.min[a] as f64)
            .bool_or(i.clone().greater_elem(grid.max(a)));
        outside = Some(match outside {
            Some(p) => p.bool_or(o),
            None => o,
        });
    }
    let [h0, k0, l0] = idx;
    let flat = grid.flat_index([
        grid.integer_index(h0, 0),
        grid.integer_index(k0, 1),
        grid.integer_index(l0, 2),
    ]);
    let inside = grid.lookup(flat);
    let outside = outside.expect("three axes");
    match &grid.default_f_tensor {
        None => inside.mask_fill(outside, grid.default_f),
        Some(f) => {
            let f = f.clone().expand(inside.dims());
            inside.mask_where(outside, f)
        }
    }
}

/// Where tricubic interpolation is impossible `[R, C]`: C needs h_min + 2 ≤ h ≤ h_max − 2 on
/// every axis (tested on the fractional index).
pub fn tricubic_out_of_range<B: Backend>(hkl: &[Tensor<B, 2>; 3], grid: &HklTensor<B>) -> Tensor<B, 2, Bool> {
    let mut out: Option<Tensor<B, 2, Bool>> = None;
    for (a, x) in hkl.iter().enumerate() {
        let lo = x.clone().lower_elem(grid.min[a] as f64 + 2.0);
        let hi = x.clone().greater_elem(grid.max(a) - 2.0);
        let o = lo.bool_or(hi);
        out = Some(match out {
            Some(p) => p.bool_or(o),
            None => o,
        });
    }
    out.expect("three axes")
}

/// Weights `[R, C]` of the 4-point Lagrange interpolation at nodes ⌊x⌋−1 … ⌊x⌋+2 for
/// t = x − ⌊x⌋.
fn lagrange_weights<B: Backend>(t: Tensor<B, 2>) -> [Tensor<B, 2>; 4] {
    let (tm1, tm2, tp1) = (t.clone() - 1.0, t.clone() - 2.0, t.clone() + 1.0);
    [
        t.clone() * tm1.clone() * tm2.clone() / -6.0,
        tp1.clone() * tm1.clone() * tm2.clone() / 2.0,
        tp1.clone() * t.clone() * tm2 / -2.0,
        tp1 * t * tm1 / 6.0,
    ]
}

/// Tricubic (4×4×4 Lagrange) interpolation of F `[R, C]` at fractional h, k, l. Points out of
/// range (see [`tricubic_out_of_range`]) get clamped, meaningless values: mask them.
pub fn tricubic<B: Backend>(hkl: &[Tensor<B, 2>; 3], grid: &HklTensor<B>) -> Tensor<B, 2> {
    let floor = [0, 1, 2].map(|a| hkl[a].clone().floor());
    let w: Vec<[Tensor<B, 2>; 4]> = (0..3)
        .map(|a| lagrange_weights(hkl[a].clone() - floor[a].clone()))
        .collect();
    let [floor_h, floor_k, floor_l] = floor;
    let base = [
        grid.integer_index(floor_h, 0) - 1,
        grid.integer_index(floor_k, 1) - 1,
        grid.integer_index(floor_l, 2) - 1,
    ];
    // clamp the first node so all four stay in the grid
    let clamp = |t: Tensor<B, 2, Int>, a: usize| (t - grid.min[a]).clamp(0, (grid.count[a] - 4).max(0));
    let [bh, bk, bl] = [0, 1, 2].map(|a| clamp(base[a].clone(), a));
    let (kc, lc) = (grid.count[1], grid.count[2]);
    let last = grid.values.dims()[0] as i64 - 1;
    let base_flat = (bh * kc + bk) * lc + bl;
    let mut f = hkl[0].zeros_like();
    for (i, wh) in w[0].iter().enumerate() {
        let mut fk = hkl[0].zeros_like();
        for (j, wk) in w[1].iter().enumerate() {
            let mut fl = hkl[0].zeros_like();
            for (m, wl) in w[2].iter().enumerate() {
                let off = (i as i64 * kc + j as i64) * lc + m as i64;
                let idx = (base_flat.clone() + off).clamp(0, last);
                fl = fl + grid.lookup(idx) * wl.clone();
            }
            fk = fk + fl * wk.clone();
        }
        f = f + fk * wh.clone();
    }
    f
}
