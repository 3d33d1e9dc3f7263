//! The reverse pass ([`super::vjp`]) for [`PIXEL_LANES`] pixels of a row at once, one per lane.
//!
//! As in [`super::pixel_lanes`], each step of a term's adjoint (the Miller indices, the lattice
//! sum's partials, the cotangents of N and of the orientation row) runs across the lanes before
//! the next, so the compiler packs the pixels into vector registers. The terms' slots are kept
//! per lane ([`LaneSums::wide`], one vector of lanes a slot): a term adds its numbers for the
//! eight pixels with one vector operation each. The per-pixel factors and the pushes of the
//! directions' cotangents to the detector run lane by lane, with [`super::adjoint`]'s helpers,
//! into each lane's own globals ([`LaneSums::narrow`]).
//!
//! A lane's sums are its pixel's, in [`super::vjp`]'s order; only the order of the additions
//! differs (per lane, then across lanes in lane order; the cotangents of a pixel's first ray,
//! from its terms and from the cached factors, summed before one push back to the detector),
//! so results agree with the one-pixel pass to rounding (tested), and the same inputs give the
//! same bits on any thread count.
//!
//! Covered: every configuration without tricubic interpolation (C's fall-back depends on the
//! pixels' order) and without the `-oversample_*` products (their running products are per
//! term); those take [`super::vjp`]'s pass one pixel at a time.

// lanes and axes are indexed by number across several arrays at once, as the formulas read
#![allow(clippy::needless_range_loop)]

use super::adjoint::{self, LatticePartials, Nodes, Ray};
use super::groups::pixel_groups;
use super::inputs::{Inputs, Params, Source, V3};
use super::lanes::{each, sincg};
use super::pixel::{self as forward, dot, stol};
use super::pixel_lanes::PIXEL_LANES;
use super::vjp::{factor_adjoints, factors_at, Cotangent, Factors};
use crate::kernel::job::Switches;
use crate::kernel::layout as at;
use multiversion::multiversion;

/// A value per lane.
type Lanes = [f64; PIXEL_LANES];

/// `[e(0), e(1), e(2)]` for the expression `e` of axis `v`, written out (a closure called
/// three times may stay out of line, in the baseline build's code).
macro_rules! three {
    ($v:ident => $e:expr) => {
        [
            {
                let $v = 0usize;
                $e
            },
            {
                let $v = 1usize;
                $e
            },
            {
                let $v = 2usize;
                $e
            },
        ]
    };
}

/// `[e(0), …, e(PIXEL_LANES − 1)]` for the expression `e` of lane `l`, as a loop in the caller's
/// body: for a step too large for [`each`]'s closure to be inlined, which would leave it in the
/// baseline build's code, called lane by lane through memory.
macro_rules! across {
    ($l:ident => $e:expr) => {{
        let mut lanes = [Default::default(); PIXEL_LANES];
        for $l in 0..PIXEL_LANES {
            lanes[$l] = $e;
        }
        lanes
    }};
}

/// Whether the lanes take `inp`'s reverse pass.
pub fn covers(inp: &Inputs<f64>) -> bool {
    !inp.sw.tricubic && !inp.sw.products()
}

/// Each lane's Σ w·∂I/∂z over the scene variables z `[G_GLOBALS + 12·C]`.
pub struct LaneSums {
    /// The slots the terms add to, all lanes of a slot together `[G_GLOBALS + 12·C][lanes]`.
    wide: Vec<Lanes>,
    /// The globals the per-pixel helpers add to, lane by lane `[lanes][G_GLOBALS]`.
    narrow: [[f64; at::G_GLOBALS]; PIXEL_LANES],
}

impl LaneSums {
    /// Zero sums of `width` slots.
    pub fn new(width: usize) -> Self {
        Self {
            wide: vec![[0.0; PIXEL_LANES]; width],
            narrow: [[0.0; at::G_GLOBALS]; PIXEL_LANES],
        }
    }

    pub fn clear(&mut self) {
        self.wide.fill([0.0; PIXEL_LANES]);
        self.narrow = [[0.0; at::G_GLOBALS]; PIXEL_LANES];
    }

    /// Every slot's sum over the lanes (in lane order) added into `acc` `[width]`.
    pub fn add_to(&self, acc: &mut [f64]) {
        for (z, (a, wide)) in acc.iter_mut().zip(&self.wide).enumerate() {
            let narrow = self.narrow.iter().map(|n| n.get(z).copied().unwrap_or(0.0));
            *a += wide.iter().zip(narrow).map(|(w, n)| w + n).sum::<f64>();
        }
    }

    /// Each lane's globals added into the wide slots, and cleared: each lane's sums are
    /// unchanged (up to the order of additions), and [`Folded::contract`] runs across the lanes.
    #[inline(always)]
    fn folded(&mut self) -> Folded<'_> {
        for (z, wide) in self.wide.iter_mut().enumerate().take(at::G_GLOBALS) {
            for l in 0..PIXEL_LANES {
                wide[l] += self.narrow[l][z];
            }
        }
        self.narrow = [[0.0; at::G_GLOBALS]; PIXEL_LANES];
        Folded(self)
    }

    /// `wide[z]` += g.
    #[inline(always)]
    fn add(&mut self, z: usize, g: Lanes) {
        let slot = &mut self.wide[z];
        for l in 0..PIXEL_LANES {
            slot[l] += g[l];
        }
    }
}

/// [`LaneSums`] with every sum in its wide slot ([`LaneSums::folded`]).
struct Folded<'a>(&'a LaneSums);

impl Folded<'_> {
    /// Each lane's Σ_z sums_z·t_z for the tangent `t` `[width]`.
    #[inline(always)]
    fn contract(&self, t: &[f64]) -> Lanes {
        let mut out = [0.0; PIXEL_LANES];
        for (wide, &t) in self.0.wide.iter().zip(t) {
            for l in 0..PIXEL_LANES {
                out[l] += wide[l] * t;
            }
        }
        out
    }
}

/// The adjoint of pixels (slow, `fast[l]`) of the one-shot `inp` for their ∂L/∂I `weight[l]`
/// into `sums`, and the grid's into `grid` where given.
#[inline(always)]
pub fn pixels_adjoint(
    inp: &Inputs<f64>,
    slow: usize,
    fast: [usize; PIXEL_LANES],
    weight: Lanes,
    sums: &mut LaneSums,
    mut grid: Option<&mut [f64]>,
) {
    let os = inp.oversample;
    // the first sample's rays serve the cached factors and the first terms
    let first = RayLanes::at(inp, slow, &fast, (0, 0, 0));
    let factors = PixelFactors::of(inp, slow, &fast, first);
    let product = factors.product();
    let scale = inp.scales[0];
    let g_term: Lanes = each(|l| weight[l] * scale * product[l]);
    sums.add(at::G_I_BG, g_term);
    let mut running = [inp.p.i_bg; PIXEL_LANES];
    // the first sample's direction cotangent waits for the factors' (the same ray), so the
    // first ray is pushed back to the detector once
    let mut g_first = [[0.0; PIXEL_LANES]; 3];
    for t in 0..inp.layers {
        for sub_s in 0..os {
            for sub_f in 0..os {
                let mut sample = Sample {
                    ray: match (t, sub_s, sub_f) {
                        (0, 0, 0) => first,
                        sample => RayLanes::at(inp, slow, &fast, sample),
                    },
                    g_d: [[0.0; PIXEL_LANES]; 3],
                };
                for (si, source) in inp.sources.iter().enumerate() {
                    sample.source_terms(inp, si, source, &g_term, &mut running, sums, grid.as_deref_mut());
                }
                match (t, sub_s, sub_f) {
                    (0, 0, 0) => g_first = sample.g_d,
                    _ => push_directions(&inp.p, &inp.sw, sums, &sample.ray, sample.g_d),
                }
            }
        }
    }
    factors.adjoint(inp, &running, &weight, g_first, sums);
}

/// A sample of every lane, as [`adjoint::ray`] computes it, by axis: its detector coordinates
/// (m), its unit direction, its air path (m).
#[derive(Clone, Copy)]
struct RayLanes {
    coords: [Lanes; 3],
    d: [Lanes; 3],
    r: Lanes,
}

impl RayLanes {
    /// Layer `t`, sub-pixel (`sub_s`, `sub_f`) of pixels (slow, `fast[l]`): [`adjoint::ray`]'s
    /// operations in its order, each step across the lanes.
    #[inline(always)]
    fn at(
        inp: &Inputs<f64>,
        slow: usize,
        fast: &[usize; PIXEL_LANES],
        (t, sub_s, sub_f): (usize, usize, usize),
    ) -> Self {
        let (p, os) = (&inp.p, inp.oversample);
        let half = p.subpixel * 0.5;
        let coords = [
            each(|l| p.subpixel * (fast[l] * os + sub_f) as f64 + half),
            [p.subpixel * (slow * os + sub_s) as f64 + half; PIXEL_LANES],
            [t as f64 * p.layer_step; PIXEL_LANES],
        ];
        // the position, as `adjoint::ray`: `forward::sample_position` by axis, bent by
        // `forward::curved_position` on a curved detector (lane by lane)
        let mut pos: [Lanes; 3] =
            three!(j => each(|l| forward::sample_position_axis(p, j, coords[0][l], coords[1][l], coords[2][l])));
        if inp.sw.curved {
            for l in 0..PIXEL_LANES {
                let bent = forward::curved_position(p, three!(j => pos[j][l]));
                for j in 0..3 {
                    pos[j][l] = bent[j];
                }
            }
        }
        let r: Lanes = each(|l| {
            let at = three!(j => pos[j][l]);
            dot(at, at).sqrt()
        });
        let inv_r: Lanes = each(|l| 1.0 / r[l]);
        Self {
            coords,
            d: three!(j => each(|l| pos[j][l] * inv_r[l])),
            r,
        }
    }

    /// Lane `l`'s unit direction.
    #[inline(always)]
    fn d(&self, l: usize) -> V3<f64> {
        three!(j => self.d[j][l])
    }

    #[inline(always)]
    fn lane(&self, l: usize) -> Ray {
        Ray {
            coords: three!(j => self.coords[j][l]),
            d: three!(j => self.d[j][l]),
            r: self.r[l],
        }
    }
}

/// Every lane's ∂L/∂P (by axis) at its ray's position into the detector frame, as
/// [`adjoint::lab_position`]: across the lanes on a flat detector, lane by lane on the curved.
#[inline(always)]
fn push_positions(p: &Params<f64>, sw: &Switches, sums: &mut LaneSums, ray: &RayLanes, g_pos: [Lanes; 3]) {
    if sw.curved {
        for l in 0..PIXEL_LANES {
            let g = three!(j => g_pos[j][l]);
            adjoint::lab_position(p, sw, &mut sums.narrow[l], ray.lane(l).coords, g);
        }
        return;
    }
    for j in 0..3 {
        sums.add(at::G_FDET + j, each(|l| g_pos[j][l] * ray.coords[0][l]));
        sums.add(at::G_SDET + j, each(|l| g_pos[j][l] * ray.coords[1][l]));
        sums.add(at::G_ODET + j, each(|l| g_pos[j][l] * ray.coords[2][l]));
        sums.add(at::G_PIX0 + j, g_pos[j]);
    }
}

/// Every lane's cotangent of its ray's direction pushed back to the detector, as
/// [`adjoint::push_direction`].
#[inline(always)]
fn push_directions(p: &Params<f64>, sw: &Switches, sums: &mut LaneSums, ray: &RayLanes, g_d: [Lanes; 3]) {
    push_positions(p, sw, sums, ray, direction_to_position(ray, g_d));
}

/// As [`push_directions`], with `g_r` the cotangent of the ray's length (∂r/∂P = d) added to
/// the position's: both cotangents of one ray in one push.
#[inline(always)]
fn push_ray(p: &Params<f64>, sw: &Switches, sums: &mut LaneSums, ray: &RayLanes, g_d: [Lanes; 3], g_r: Lanes) {
    let d = &ray.d;
    let g_pos = direction_to_position(ray, g_d);
    let g_pos = three!(j => each(|l| g_pos[j][l] + d[j][l] * g_r[l]));
    push_positions(p, sw, sums, ray, g_pos);
}

/// Every lane's cotangent of its ray's position from that of its direction d = P/r:
/// (g_d − d·(d·g_d))/r.
#[inline(always)]
fn direction_to_position(ray: &RayLanes, g_d: [Lanes; 3]) -> [Lanes; 3] {
    let d = &ray.d;
    let along: Lanes = each(|l| d[0][l] * g_d[0][l] + d[1][l] * g_d[1][l] + d[2][l] * g_d[2][l]);
    let inv_r: Lanes = each(|l| 1.0 / ray.r[l]);
    three!(j => each(|l| (g_d[j][l] + d[j][l] * -along[l]) * inv_r[l]))
}

/// C's cached per-pixel factors (ω, capture fraction, Kahn factor) of every lane: across the
/// lanes ([`FactorLanes`]), or lane by lane ([`Factors`]) where `-dmin` can drop the first
/// samples the polarization factor would be taken on.
// one a group of pixels, on the stack: the large variant is the common one
#[allow(clippy::large_enum_variant)]
enum PixelFactors {
    Lanes(FactorLanes),
    /// Each lane's factors, and the first samples' rays.
    OneByOne(Box<[Factors; PIXEL_LANES]>, RayLanes),
}

impl PixelFactors {
    #[inline(always)]
    fn of(inp: &Inputs<f64>, slow: usize, fast: &[usize; PIXEL_LANES], first: RayLanes) -> Self {
        match inp.sw.dmin && inp.sw.polar {
            false => Self::Lanes(FactorLanes::of(inp, slow, fast, first)),
            true => Self::OneByOne(Box::new(std::array::from_fn(|l| factors_at(inp, slow, fast[l]))), first),
        }
    }

    /// ω·P·C of every lane.
    #[inline(always)]
    fn product(&self) -> Lanes {
        match self {
            Self::Lanes(f) => each(|l| f.omega[l] * f.polar[l] * f.capture[l]),
            Self::OneByOne(f, _) => each(|l| f[l].omega * f[l].polar * f[l].capture),
        }
    }

    /// The factors' adjoints, once each lane's running sum `total` is known, and the first
    /// sample's direction cotangent `g_first` pushed back to the detector.
    #[inline(always)]
    fn adjoint(&self, inp: &Inputs<f64>, total: &Lanes, weight: &Lanes, g_first: [Lanes; 3], sums: &mut LaneSums) {
        match self {
            Self::Lanes(f) => f.adjoint(inp, total, weight, g_first, sums),
            Self::OneByOne(f, first) => {
                for l in 0..PIXEL_LANES {
                    factor_adjoints(inp, &f[l], total[l], weight[l], &mut sums.narrow[l]);
                }
                push_directions(&inp.p, &inp.sw, sums, first, g_first);
            }
        }
    }
}

/// The cached factors across the lanes, without the products and without `-dmin` under
/// polarization: ω of the first sample, the capture fraction of the last layer's first sample,
/// the Kahn factor of the first sample with the first source (1 where a flag turns it off).
struct FactorLanes {
    omega: Lanes,
    capture: Lanes,
    polar: Lanes,
    first: RayLanes,
    last: RayLanes,
}

impl FactorLanes {
    /// The factors of pixels (slow, `fast[l]`), whose first samples' rays are `first`.
    #[inline(always)]
    fn of(inp: &Inputs<f64>, slow: usize, fast: &[usize; PIXEL_LANES], first: RayLanes) -> Self {
        let (sw, p) = (&inp.sw, &inp.p);
        let last = match inp.layers {
            1 => first,
            n => RayLanes::at(inp, slow, fast, (n - 1, 0, 0)),
        };
        let mut out = Self {
            omega: each(|l| forward::solid_angle(p, first.r[l], sw.point_pixel)),
            capture: [1.0; PIXEL_LANES],
            polar: [1.0; PIXEL_LANES],
            first,
            last,
        };
        if sw.sensor {
            let layer = (inp.layers - 1) as f64;
            let d = &last.d;
            let parallax: Lanes = each(|l| d[0][l] * p.odet[0] + d[1][l] * p.odet[1] + d[2][l] * p.odet[2]);
            out.capture = across!(l => forward::capture_fraction(p, parallax[l], layer));
        }
        if sw.polar {
            out.polar = across!(l => forward::kahn_factor(&inp.sources[0], first.d(l), p.kahn));
        }
        out
    }

    /// As [`factor_adjoints`], across the lanes, with the first samples' direction cotangent
    /// `g_first`: the cotangents of the first rays (the terms', ω's, the Kahn factor's and, in a
    /// single layer, the capture fraction's) are pushed back to the detector together.
    #[inline(always)]
    fn adjoint(&self, inp: &Inputs<f64>, total: &Lanes, weight: &Lanes, g_first: [Lanes; 3], sums: &mut LaneSums) {
        let (sw, p) = (&inp.sw, &inp.p);
        let (omega, capture, polar) = (&self.omega, &self.capture, &self.polar);
        sums.add(
            at::G_SCALE,
            each(|l| weight[l] * total[l] * omega[l] * polar[l] * capture[l]),
        );
        let g: Lanes = each(|l| weight[l] * inp.scales[0] * total[l]);
        let (first, last) = (&self.first, &self.last);
        let mut g_first = g_first;
        let omega_partials: [(f64, f64); PIXEL_LANES] =
            across!(l => adjoint::solid_angle_partials(p, sw.point_pixel, first.r[l], g[l] * polar[l] * capture[l]));
        sums.add(at::G_CLOSE_DISTANCE, each(|l| omega_partials[l].0));
        if sw.sensor {
            let layer = (inp.layers - 1) as f64;
            let g_parallax: Lanes =
                across!(l => adjoint::capture_partial(p, last.d(l), layer, g[l] * omega[l] * polar[l]));
            for j in 0..3 {
                sums.add(at::G_ODET_COL + j, each(|l| last.d[j][l] * g_parallax[l]));
            }
            let g_last = three!(j => each(|l| p.odet[j] * g_parallax[l]));
            match inp.layers {
                1 => g_first = three!(j => each(|l| g_first[j][l] + g_last[j][l])),
                _ => push_directions(p, sw, sums, last, g_last),
            }
        }
        if sw.polar {
            let source = &inp.sources[0];
            let kahn: [(f64, V3<f64>); PIXEL_LANES] =
                across!(l => adjoint::kahn_partials(p.kahn, source, first.d(l), g[l] * omega[l] * capture[l]));
            sums.add(at::G_KAHN, each(|l| kahn[l].0));
            g_first = three!(j => each(|l| g_first[j][l] + kahn[l].1[j]));
        }
        push_ray(p, sw, sums, first, g_first, each(|l| omega_partials[l].1));
    }
}

/// One sample of every lane: its ray, and its direction's cotangent so far by axis.
struct Sample {
    ray: RayLanes,
    g_d: [Lanes; 3],
}

impl Sample {
    /// The terms of source `si` (its orientation rows), with cotangent `g_term` for each lane
    /// that keeps the sample (`-dmin`): their values into `running`, their adjoints into `sums`
    /// and `grid`, their directions' cotangents into `g_d`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn source_terms(
        &mut self,
        inp: &Inputs<f64>,
        si: usize,
        source: &Source<f64>,
        g_term: &Lanes,
        running: &mut Lanes,
        sums: &mut LaneSums,
        mut grid: Option<&mut [f64]>,
    ) {
        let (sw, p, d) = (&inp.sw, &inp.p, self.ray.d);
        let kept: [bool; PIXEL_LANES] = across!(l => !sw.dmin || stol(self.ray.d(l), source) <= p.stol_max);
        if !kept.contains(&true) {
            return;
        }
        let g: Lanes = each(|l| if kept[l] { g_term[l] } else { 0.0 });
        let q: [Lanes; 3] = three!(j => each(|l| d[j][l] - source.incident[j]));
        let rows = inp.orientations_of(0);
        let per_source = rows.len() / inp.sources.len().max(1);
        for (o, row) in rows[si * per_source..(si + 1) * per_source].iter().enumerate() {
            // the Miller indices d·(a_v/λ) − a_v·i/λ, as `miller_index`
            let (axes, offset) = (&row.axes, &row.offset);
            let hkl: [Lanes; 3] = three!(v => each(|l| {
                d[0][l] * axes[v][0] + d[1][l] * axes[v][1] + d[2][l] * axes[v][2] - offset[v]
            }));
            let lat = lattice_lanes(p, &hkl, sw);
            let cell = CellLanes::of(inp, &hkl, sw);
            // ∂L/∂F_cell and ∂L/∂F_latt
            let g_f: Lanes = each(|l| g[l] * 2.0 * cell.value[l] * lat.value[l] * lat.value[l]);
            let g_l: Lanes = each(|l| g[l] * 2.0 * lat.value[l] * cell.value[l] * cell.value[l]);
            cell.adjoint(inp, &g_f, sums, grid.as_deref_mut());
            for a in 0..3 {
                sums.add(at::G_N_CELLS + a, each(|l| g_l[l] * lat.d_n[a][l]));
            }
            if sw.gauss {
                lat.shape_adjoint(&g_l, sums);
            }
            let gh: [Lanes; 3] = three!(v => each(|l| g_l[l] * lat.d_hkl[v][l]));
            // the a/λ slots take (d − i)·∂L/∂h and the offsets −∂L/∂h (as `vjp`)
            let slot = at::G_GLOBALS + at::ORIENTATION_WIDTH * (si * per_source + o);
            for v in 0..3 {
                for j in 0..3 {
                    sums.add(slot + 3 * v + j, each(|l| q[j][l] * gh[v][l]));
                }
                sums.add(slot + at::OFFSET + v, each(|l| -gh[v][l]));
            }
            for j in 0..3 {
                let g_d = &mut self.g_d[j];
                for l in 0..PIXEL_LANES {
                    g_d[l] += axes[0][j] * gh[0][l] + axes[1][j] * gh[1][l] + axes[2][j] * gh[2][l];
                }
            }
            let (f, lat) = (&cell.value, &lat.value);
            // the term in every lane, then chosen (a select keeps the lanes in vectors)
            let term: Lanes = each(|l| f[l] * f[l] * lat[l] * lat[l]);
            *running = each(|l| running[l] + if kept[l] { term[l] } else { 0.0 });
        }
    }
}

/// [`LatticeLanes::of`] as a function of its own, compiled for the widest vector instructions
/// the CPU has and called out of line. Inlined into the whole reverse pass, which holds many
/// values at once, the lattice sum's steps were packed four, two and one lanes at a time (the
/// compiler packs lanes function by function); alone, its eight lanes fill whole vectors.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
fn lattice_lanes(p: &Params<f64>, hkl: &[Lanes; 3], sw: &Switches) -> LatticeLanes {
    LatticeLanes::of(p, hkl, sw)
}

/// [`adjoint::lattice_factor`] of each lane, as lanes: SQUARE's sums across the lanes step by
/// step, the other shapes lane by lane.
struct LatticeLanes {
    value: Lanes,
    d_hkl: [Lanes; 3],
    d_n: [Lanes; 3],
    kappa: Lanes,
    c: [Lanes; 3],
    frac: [Lanes; 3],
}

impl LatticeLanes {
    #[inline(always)]
    fn of(p: &Params<f64>, hkl: &[Lanes; 3], sw: &Switches) -> Self {
        if !sw.square {
            return Self::lane_by_lane(p, hkl, sw);
        }
        // written out: a closure called three times would stay out of line, in baseline code
        let a = sincg(hkl[0], p.n[0]);
        let b = sincg(hkl[1], p.n[1]);
        let c = sincg(hkl[2], p.n[2]);
        let zero = [0.0; PIXEL_LANES];
        Self {
            value: each(|l| a.0[l] * b.0[l] * c.0[l]),
            d_hkl: [
                each(|l| a.1[l] * b.0[l] * c.0[l]),
                each(|l| a.0[l] * b.1[l] * c.0[l]),
                each(|l| a.0[l] * b.0[l] * c.1[l]),
            ],
            d_n: [
                each(|l| a.2[l] * b.0[l] * c.0[l]),
                each(|l| a.0[l] * b.2[l] * c.0[l]),
                each(|l| a.0[l] * b.0[l] * c.2[l]),
            ],
            kappa: zero,
            c: [zero; 3],
            frac: [zero; 3],
        }
    }

    /// The other shapes, lane by lane. Out of line: inlined, its lane-by-lane results would
    /// meet SQUARE's in [`Self::of`], and the compiler would then pack neither shape's lanes
    /// into whole vectors.
    #[inline(never)]
    fn lane_by_lane(p: &Params<f64>, hkl: &[Lanes; 3], sw: &Switches) -> Self {
        let one: [LatticePartials; PIXEL_LANES] =
            across!(l => adjoint::lattice_factor(p, [hkl[0][l], hkl[1][l], hkl[2][l]], sw));
        Self {
            value: each(|l| one[l].value),
            d_hkl: three!(v => each(|l| one[l].d_hkl[v])),
            d_n: three!(v => each(|l| one[l].d_n[v])),
            kappa: each(|l| one[l].kappa),
            c: three!(v => each(|l| one[l].c[v])),
            frac: three!(v => each(|l| one[l].frac[v])),
        }
    }

    /// GAUSS: ∂F/∂c = κ·c, with c = Σ_v δ_v·recip_v, into a*, b*, c* for the cotangent `g_l`.
    #[inline(always)]
    fn shape_adjoint(&self, g_l: &Lanes, sums: &mut LaneSums) {
        let g_c: [Lanes; 3] = three!(j => each(|l| self.c[j][l] * (g_l[l] * self.kappa[l])));
        for v in 0..3 {
            for j in 0..3 {
                sums.add(at::G_RECIP + 3 * v + j, each(|l| g_c[j][l] * self.frac[v][l]));
            }
        }
    }
}

/// [`adjoint::structure_factor`] of each lane (no tricubic interpolation: no slopes in h, k, l).
struct CellLanes {
    value: Lanes,
    /// The grid node each lane read (`None`: default_F).
    node: [Option<usize>; PIXEL_LANES],
}

impl CellLanes {
    #[inline(always)]
    fn of(inp: &Inputs<f64>, hkl: &[Lanes; 3], sw: &Switches) -> Self {
        let Some(grid) = &inp.grid else {
            return Self {
                value: [inp.p.default_f; PIXEL_LANES],
                node: [None; PIXEL_LANES],
            };
        };
        let one: [adjoint::CellFactor; PIXEL_LANES] = std::array::from_fn(|l| {
            let hkl = [hkl[0][l], hkl[1][l], hkl[2][l]];
            adjoint::structure_factor(&inp.p, Some(grid), sw, hkl, true)
        });
        Self {
            value: each(|l| one[l].value),
            node: std::array::from_fn(|l| match one[l].nodes {
                Nodes::One(node) => Some(node),
                _ => None,
            }),
        }
    }

    /// ∂L/∂F_cell `g_f` into default_F, or into the node each lane read (in lane order).
    #[inline(always)]
    fn adjoint(&self, inp: &Inputs<f64>, g_f: &Lanes, sums: &mut LaneSums, grid: Option<&mut [f64]>) {
        if inp.grid.is_none() {
            sums.add(at::G_DEFAULT_F, *g_f);
            return;
        }
        sums.add(
            at::G_DEFAULT_F,
            each(|l| if self.node[l].is_none() { g_f[l] } else { 0.0 }),
        );
        if let Some(into) = grid {
            for l in 0..PIXEL_LANES {
                if let Some(node) = self.node[l] {
                    into[node] += g_f[l];
                }
            }
        }
    }
}

/// The rendered pixels of weight other than 0 of row `slow` (weights `[spixels·fpixels]`) into
/// `sums`, and the grid's gradient into `grid` where given, [`PIXEL_LANES`] at a time (the last
/// group padded with weight 0). Compiled for the widest vector instructions the CPU has.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
pub fn row_adjoint(inp: &Inputs<f64>, slow: usize, weights: Cotangent, sums: &mut LaneSums, grid: Option<&mut [f64]>) {
    let mut grid = grid;
    for group in pixel_groups(inp, slow, |column| weights.at(slow * inp.fpixels + column)) {
        pixels_adjoint(inp, slow, group.fast, group.weight, sums, grid.as_deref_mut());
    }
}

/// Row `slow`'s derivative images for the `n` tangents `tangents` `[n, width]` into `row`
/// `[n, ROI columns]` (rendered pixels only), [`PIXEL_LANES`] pixels at a time, with `sums`
/// as scratch. Compiled for the widest vector instructions the CPU has.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma"))]
pub fn row_derivatives(
    inp: &Inputs<f64>,
    slow: usize,
    tangents: &[f64],
    n: usize,
    sums: &mut LaneSums,
    row: &mut [f64],
) {
    let (width, cols) = (sums.wide.len(), inp.cols.len());
    for group in pixel_groups(inp, slow, |_| 1.0) {
        sums.clear();
        pixels_adjoint(inp, slow, group.fast, group.weight, sums, None);
        let sums = sums.folded();
        for (k, t) in tangents.chunks_exact(width).enumerate().take(n) {
            for (&c, d) in group.positions().iter().zip(sums.contract(t)) {
                row[k * cols + c] = d;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::job::PixelJob;
    use crate::kernel::native::testing::job_of;
    use crate::kernel::native::vjp::{job_derivatives, job_vjp, one_pixel_at_a_time};
    use crate::tests::common;
    use proptest::prelude::*;

    /// A weight per pixel that varies in sign and size, 0 on some.
    fn weights(job: &PixelJob) -> Vec<f64> {
        let inp = Inputs::<f64>::new(job);
        (0..inp.fpixels * inp.spixels)
            .map(|p| match p % 7 {
                3 => 0.0,
                k => (k as f64 - 2.5) * (1.0 + (p % 13) as f64 / 13.0),
            })
            .collect()
    }

    /// `got` against `want` slot by slot within 1e-12 of the slot's Σ|contributions| `scale`.
    fn assert_sums_close(what: &str, got: &[f64], want: &[f64], scale: &[f64]) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (z, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * s + 1e-300,
                "{what}: slot {z}: {g} against {w} (scale {s})"
            );
        }
    }

    /// The lanes' vector–Jacobian product and derivative images of `flags` against the pass one
    /// pixel at a time: every slot and the grid's gradient within 1e-12 of its Σ|contributions|,
    /// every derivative image's pixel within 1e-12 of Σ_z |∂I/∂z·t_z|.
    fn lanes_match_one_pixel_at_a_time(flags: &str, hkl: Option<&std::path::Path>) {
        let job = job_of(flags, hkl);
        let inp = Inputs::<f64>::new(&job);
        assert!(covers(&inp), "{flags}");
        let w = weights(&job);
        let [(sums, scale), (grid_sums, grid_scale)] = one_pixel_at_a_time(&job, Cotangent::PerPixel(&w));
        let lanes = job_vjp(&job, Cotangent::PerPixel(&w), true, 2, 1 << 20).unwrap();
        assert_sums_close(&format!("{flags}: sums"), &lanes.sums, &sums, &scale);
        if let Some(grid) = &lanes.grid {
            assert_sums_close(&format!("{flags}: grid"), grid, &grid_sums, &grid_scale);
        }
        // a derivative image's tangent: one per slot, varying, so every slot shows
        let width = sums.len();
        let tangent: Vec<f64> = (0..width)
            .map(|z| 1.0 + (z % 5) as f64 * 0.3 - 0.7 * (z % 2) as f64)
            .collect();
        let images = job_derivatives(&job, &tangent, 1, 2).unwrap();
        for slow in inp.rows.clone() {
            for fast in inp.cols.clone() {
                let p = slow * inp.fpixels + fast;
                let mut one = vec![0.0; inp.fpixels * inp.spixels];
                one[p] = 1.0;
                let [(acc, _), _] = one_pixel_at_a_time(&job, Cotangent::PerPixel(&one));
                let want: f64 = acc.iter().zip(&tangent).map(|(a, t)| a * t).sum();
                let scale: f64 = acc.iter().zip(&tangent).map(|(a, t)| (a * t).abs()).sum();
                let got = images[p];
                assert!(
                    (got - want).abs() <= 1e-12 * scale + 1e-300,
                    "{flags}: pixel {p}: {got} against {want}"
                );
            }
        }
    }

    /// Spots over the whole detector: mosaic domains, φ steps, two sources, sub-pixels, a thick
    /// sensor, polarization, a resolution cut, water; each crystal shape; a curved detector.
    #[test]
    fn spots_match_one_pixel_at_a_time() {
        let base = "-default_F 100 -cell 70 80 90 80 85 95 -lambda 1.5 -N 4 -distance 80 -pixel 0.4 -detpixels 13 \
                    -misset 10 20 30";
        for extra in [
            "-mosaic 0.5 -mosaic_dom 3 -osc 2 -phisteps 2 -oversample 2 -hdivrange 0.3 -hdivsteps 2 \
             -detector_thick 100 -detector_thicksteps 2 -detector_abs 300 -polar 0.7 -water 50",
            "-round_xtal -dmin 3 -roi 2 11 1 12",
            "-gauss_xtal -fudge 0.8 -curved_det",
            "-tophat_spots -point_pixel -nopolar",
        ] {
            lanes_match_one_pixel_at_a_time(&format!("{base} {extra}"), None);
        }
    }

    /// Every lane's ray, sub-pixel and layer, is [`adjoint::ray`]'s to the bit: on a flat and
    /// a curved detector, tilted, with sub-pixels and sensor layers.
    #[test]
    fn ray_lanes_are_one_pixel_rays() {
        let base = "-default_F 100 -cell 70 80 90 80 85 95 -lambda 1.5 -N 4 -distance 80 -pixel 0.4 -detpixels 13 \
                    -oversample 3 -detector_thick 100 -detector_thicksteps 3 -detector_abs 300 -detector_rotx 5 \
                    -detector_rotz 11 -twotheta 7";
        for flags in [base.to_string(), format!("{base} -curved_det")] {
            let job = job_of(&flags, None);
            let inp = Inputs::<f64>::new(&job);
            let (p, sw) = (&inp.p, &inp.sw);
            let fast: [usize; PIXEL_LANES] = std::array::from_fn(|l| (3 * l + 1) % inp.fpixels);
            for sample in [(0, 0, 0), (1, 2, 1), (2, 1, 2)] {
                let lanes = RayLanes::at(&inp, 5, &fast, sample);
                for (l, &f) in fast.iter().enumerate() {
                    let (t, sub_s, sub_f) = sample;
                    let one = adjoint::ray(p, sw, inp.oversample, 5, f, t, sub_s, sub_f);
                    let got = lanes.lane(l);
                    let bits = |r: &Ray| [r.coords, r.d, [r.r; 3]].map(|v| v.map(f64::to_bits));
                    assert_eq!(bits(&got), bits(&one), "{flags}: lane {l}, sample {sample:?}");
                }
            }
        }
    }

    /// Nearest-neighbour structure factors from a grid, inside it and off it (default_F), with
    /// the grid's gradient.
    #[test]
    fn nearest_neighbour_grid_matches_one_pixel_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = common::small_hkl_grid(dir.path());
        let flags = "-default_F 5 -cell 60 60 60 90 90 90 -lambda 1.5 -N 2 -distance 120 -pixel 0.4 -detpixels 17 \
                     -nointerpolate -mosaic 0.3 -mosaic_dom 2 -misset 3 7 11";
        lanes_match_one_pixel_at_a_time(flags, Some(&path));
    }

    /// C flags of a random configuration the lanes cover: no `-oversample_*` products.
    fn configuration() -> impl Strategy<Value = String> {
        let n = prop::sample::select(vec!["1", "3", "5", "2.5", "40"]).prop_map(String::from);
        common::pixel_loop_configuration(n, 1..3).prop_filter("no products", |f| !f.contains("-oversample_"))
    }

    proptest! {
        #![proptest_config(common::fixed_cases(16, 0x6e62_1b53))]
        #[test]
        fn random_configurations_match_one_pixel_at_a_time(flags in configuration()) {
            lanes_match_one_pixel_at_a_time(&flags, None);
        }
    }
}
