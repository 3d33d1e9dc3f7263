//! [`pixel_photons`] for [`PIXEL_LANES`] pixels of a row at once, one per lane.
//!
//! One pixel's loop is a long chain of dependent operations (a square root and a division for
//! the direction, the polarization factor's division, three Chebyshev recurrences), and at one
//! sample per pixel the processor cannot start the next pixel's chain while it waits. Here each
//! step of the loop runs across the lanes before the next step, so the lanes' chains overlap
//! (and the compiler packs them into vector registers). Every pixel still takes exactly
//! [`pixel_photons`]'s operations in their order: the same bits (tested).
//!
//! Tricubic structure factors stay one pixel at a time: C's switch to nearest neighbour at the
//! first point off the grid depends on the pixels' order.

use super::inputs::{Inputs, Params, Row, Source, V3};
use super::lanes::{chebyshev_u, each};
use super::pixel::{
    capture_fraction, counted, curved_position, dot, kahn_factor, lattice_factor, miller_index, on_recurrence,
    sample_position, scaled, solid_angle, stol, structure_factor, term_factor, Pixel, PixelSums,
};
use super::real::Real;
use crate::base::series::SINCG_EPS;
use crate::kernel::job::Switches;
use crate::physics::amorphous::StolCubics;
use std::array::from_fn;

#[cfg(doc)]
use super::pixel::pixel_photons;

/// Pixels of a row rendered together.
pub const PIXEL_LANES: usize = 8;

/// A value per lane.
type Lanes<F> = [F; PIXEL_LANES];

/// Whether the lanes render `inp`'s pixels: every configuration but tricubic structure factors.
pub fn covers<F>(inp: &Inputs<F>) -> bool {
    !inp.sw.tricubic
}

/// [`pixel_photons`] of pixels (slow, `fast[l]`) over the orientation rows `rows` of their shot.
#[inline(always)]
pub fn pixel_photons_lanes<F: Real>(
    inp: &Inputs<F>,
    rows: &[Row<F>],
    slow: usize,
    fast: [usize; PIXEL_LANES],
) -> [Pixel<F>; PIXEL_LANES] {
    lanes_loop(inp, rows, slow, fast, None)
}

/// [`pixel_photons_lanes`] with the amorphous background of `inp` ([`Inputs::background`],
/// which must be set) beside it: each lane's background (photons, f64).
#[inline(always)]
pub fn pixel_photons_and_background_lanes<F: Real>(
    inp: &Inputs<F>,
    rows: &[Row<F>],
    slow: usize,
    fast: [usize; PIXEL_LANES],
) -> ([Pixel<F>; PIXEL_LANES], [f64; PIXEL_LANES]) {
    let mut background = [0.0; PIXEL_LANES];
    let pixels = lanes_loop(inp, rows, slow, fast, Some(&mut background));
    let per_sample = inp.background.as_ref().map_or(0.0, |b| b.photons_per_sample);
    (pixels, background.map(|sum| sum * per_sample))
}

/// The loop of [`pixel_photons_lanes`]; with `background`, each lane's Σ sign(F)·F²·P·ω of the
/// amorphous background over the first layer's samples and sources added to it.
#[inline(always)]
fn lanes_loop<F: Real>(
    inp: &Inputs<F>,
    rows: &[Row<F>],
    slow: usize,
    fast: [usize; PIXEL_LANES],
    mut background: Option<&mut [f64; PIXEL_LANES]>,
) -> [Pixel<F>; PIXEL_LANES] {
    let (sw, p) = (&inp.sw, &inp.p);
    let os = inp.oversample;
    let per_source = rows.len() / inp.sources.len().max(1);
    let mut acc = Accumulators::new(p.i_bg, sw.polar);
    for t in 0..inp.layers {
        for sub_s in 0..os {
            for sub_f in 0..os {
                let layer = F::of(t as f64);
                let sample = Samples::at(inp, slow, &fast, (sub_s, sub_f), layer);
                let first_of_layer = sub_s == 0 && sub_f == 0;
                acc.add_sample(&sample.omega, t == 0 && first_of_layer);
                if sw.sensor {
                    if first_of_layer || sw.oversample_thick {
                        acc.capture = each(|l| capture_fraction(p, dot(sample.d[l], p.odet), layer));
                    }
                    if first_of_layer {
                        acc.capture_last = acc.capture;
                    }
                }
                for (si, source) in inp.sources.iter().enumerate() {
                    let kept: [bool; PIXEL_LANES] = each(|l| !sw.dmin || stol(sample.d[l], source) <= p.stol_max);
                    if !kept.contains(&true) {
                        continue;
                    }
                    let mut polar = [F::ONE; PIXEL_LANES];
                    if sw.polar {
                        polar = each(|l| kahn_factor(source, sample.d[l], p.kahn));
                        acc.first_polarization(&polar, &kept);
                    }
                    let factor = acc.factor(sw, &polar, &sample.omega);
                    for row in &rows[si * per_source..(si + 1) * per_source] {
                        let hkl: [V3<F>; PIXEL_LANES] = each(|l| miller_index(row, sample.d[l]));
                        let f_latt = lattice_factors(p, &hkl, sw);
                        for l in (0..PIXEL_LANES).filter(|&l| kept[l] && counted(f_latt[l], sw)) {
                            let f_cell = structure_factor(inp, hkl[l], false);
                            let term = f_cell * f_cell * f_latt[l] * f_latt[l];
                            acc.running[l] = match sw.products() {
                                true => (acc.running[l] + term) * factor[l],
                                false => acc.running[l] + term,
                            };
                        }
                    }
                    // after the Bragg term, whose values are no longer live
                    if let (Some(sums), Some(table), 0) = (background.as_deref_mut(), &inp.background, t) {
                        add_background(sums, &table.cubics, source, &sample, &polar);
                    }
                }
            }
        }
    }
    acc.finish(sw, inp.layers * os * os)
}

/// Each lane's sign(F)·F²·P·ω into `sums`: F the amorphous structure factor (electrons) of
/// `table` at the sample's sinθ/λ for `source`, P the polarization factor `polar`, ω the
/// sample's solid angle (sr); in precision `F` (C's `nonBragg` order in f64), summed in f64.
#[inline(always)]
fn add_background<F: Real>(
    sums: &mut [f64; PIXEL_LANES],
    table: &StolCubics,
    source: &Source<F>,
    sample: &Samples<F>,
    polar: &Lanes<F>,
) {
    let s: Lanes<F> = each(|l| stol(sample.d[l], source));
    let f = F::f_lanes(table, &s);
    for l in 0..PIXEL_LANES {
        sums[l] += (f[l].abs() * f[l] * polar[l] * sample.omega[l]).to_f64();
    }
}

/// One sample of every lane: its unit diffracted direction and solid angle (sr).
struct Samples<F> {
    d: [V3<F>; PIXEL_LANES],
    omega: Lanes<F>,
}

impl<F: Real> Samples<F> {
    /// The samples at sub-pixel `sub` (slow, fast) of layer `layer` of pixels (slow, `fast[l]`).
    #[inline(always)]
    fn at(inp: &Inputs<F>, slow: usize, fast: &[usize; PIXEL_LANES], sub: (usize, usize), layer: F) -> Self {
        let (p, os) = (&inp.p, inp.oversample);
        let half = p.subpixel * F::of(0.5);
        let sdet = p.subpixel * F::of((slow * os + sub.0) as f64) + half;
        let mut pos: [V3<F>; PIXEL_LANES] = each(|l| {
            let fdet = p.subpixel * F::of((fast[l] * os + sub.1) as f64) + half;
            sample_position(p, fdet, sdet, layer * p.layer_step)
        });
        if inp.sw.curved {
            pos = each(|l| curved_position(p, pos[l]));
        }
        let r: Lanes<F> = each(|l| dot(pos[l], pos[l]).sqrt());
        Self {
            d: each(|l| scaled(pos[l], F::ONE / r[l])),
            omega: each(|l| solid_angle(p, r[l], inp.sw.point_pixel)),
        }
    }
}

/// Each lane's running sum and the factors C caches per pixel (as [`pixel_photons`] keeps them).
struct Accumulators<F> {
    running: Lanes<F>,
    omega_first: Lanes<F>,
    omega_total: Lanes<F>,
    capture: Lanes<F>,
    capture_last: Lanes<F>,
    polar_first: Lanes<F>,
    polar_found: [bool; PIXEL_LANES],
}

impl<F: Real> Accumulators<F> {
    #[inline(always)]
    fn new(i_bg: F, polar: bool) -> Self {
        Self {
            running: [i_bg; PIXEL_LANES],
            omega_first: [F::ZERO; PIXEL_LANES],
            omega_total: [F::ZERO; PIXEL_LANES],
            capture: [F::ONE; PIXEL_LANES],
            capture_last: [F::ONE; PIXEL_LANES],
            polar_first: [if polar { F::ZERO } else { F::ONE }; PIXEL_LANES],
            polar_found: [false; PIXEL_LANES],
        }
    }

    /// A sample's solid angle into Σω, and as the pixel's first where `first`.
    #[inline(always)]
    fn add_sample(&mut self, omega: &Lanes<F>, first: bool) {
        if first {
            self.omega_first = *omega;
        }
        for (total, omega) in self.omega_total.iter_mut().zip(omega) {
            *total += *omega;
        }
    }

    /// The first polarization factor of each lane whose sample was kept.
    #[inline(always)]
    fn first_polarization(&mut self, polar: &Lanes<F>, kept: &[bool; PIXEL_LANES]) {
        for l in 0..PIXEL_LANES {
            if kept[l] && !self.polar_found[l] {
                self.polar_first[l] = polar[l];
                self.polar_found[l] = true;
            }
        }
    }

    /// The `-oversample_*` products' factor of each lane's term.
    #[inline(always)]
    fn factor(&self, sw: &Switches, polar: &Lanes<F>, omega: &Lanes<F>) -> Lanes<F> {
        each(|l| term_factor(sw, self.capture[l], polar[l], omega[l]))
    }

    /// Each lane's [`Pixel`], from its `steps` samples.
    #[inline(always)]
    fn finish(self, sw: &Switches, steps: usize) -> [Pixel<F>; PIXEL_LANES] {
        from_fn(|l| {
            let sums = PixelSums {
                running: self.running[l],
                capture_last: self.capture_last[l],
                polar_first: self.polar_first[l],
                omega_first: self.omega_first[l],
                omega_total: self.omega_total[l],
            };
            sums.finish(sw, steps, false)
        })
    }
}

/// [`lattice_factor`] of each lane's (h, k, l): the SQUARE shape's sincg step by step across
/// the lanes, the other shapes one lane at a time.
#[inline(always)]
fn lattice_factors<F: Real>(p: &Params<F>, hkl: &[V3<F>; PIXEL_LANES], sw: &Switches) -> Lanes<F> {
    if !sw.square {
        return each(|l| lattice_factor(p, hkl[l], sw));
    }
    let mut f = [F::ONE; PIXEL_LANES];
    for (axis, n) in p.n.into_iter().enumerate() {
        if n > F::ONE {
            let g = sincg(each(|l| hkl[l][axis]), n);
            for l in 0..PIXEL_LANES {
                f[l] *= g[l];
            }
        }
    }
    f
}

/// [`super::pixel::sincg`] of each lane's h for one N.
#[inline(always)]
fn sincg<F: Real>(h: Lanes<F>, n: F) -> Lanes<F> {
    if !on_recurrence(n.to_f64()) {
        return each(|l| super::pixel::sincg(h[l], n));
    }
    let delta: Lanes<F> = each(|l| h[l] - (h[l] + F::of(0.5)).floor());
    let u: Lanes<F> = chebyshev_u(each(|l| delta[l].cos_pi_small()), n.to_f64() as usize - 1).1;
    each(|l| match delta[l].abs() < F::of(SINCG_EPS) {
        true => n,
        false => u[l],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::native::pixel::pixel_photons;
    use crate::kernel::native::testing::job_of;
    use crate::tests::common;
    use proptest::prelude::*;

    /// The lanes' lattice sum is the scalar one, bit for bit, for whole N on and off
    /// Chebyshev's recurrence (N below 1 included), at and away from the nodes.
    #[test]
    fn lanes_sincg_is_the_scalar_one() {
        let h: Lanes<f64> = std::array::from_fn(|l| [0.3, -2.49, 7.123, 2.0, 0.5, -0.01, 3.999_999, 12.25][l % 8]);
        for n in [-3.0, -1.0, 0.0, 1.0, 2.0, 5.0, 32.0, 33.0] {
            let lanes = sincg(h, n);
            for l in 0..PIXEL_LANES {
                assert_eq!(
                    lanes[l].to_bits(),
                    super::super::pixel::sincg(h[l], n).to_bits(),
                    "h = {}, N = {n}",
                    h[l]
                );
            }
        }
    }

    /// Every pixel of `flags`' ROI in precision `F`, by lane groups (columns `stride` apart from
    /// a first one, wrapping, so groups repeat and mix columns) against [`pixel_photons`]: the
    /// same bits of photons and Σω. Returns how many pixels were not 0.
    fn lanes_match_one_pixel_at_a_time<F: Real + std::fmt::Debug>(flags: &str, hkl: Option<&std::path::Path>) -> usize {
        let job = job_of(flags, hkl);
        let inp = Inputs::<F>::new(&job);
        assert!(covers(&inp), "{flags}");
        let rows = inp.orientations_of(0);
        let (cols, mut compared) = (inp.cols.clone(), 0);
        for slow in inp.rows.clone() {
            for (i, first) in cols.clone().enumerate() {
                let stride = 1 + i % 3;
                let fast: [usize; PIXEL_LANES] =
                    from_fn(|l| cols.start + (first - cols.start + l * stride) % cols.len());
                let lanes = pixel_photons_lanes(&inp, rows, slow, fast);
                for (l, got) in lanes.iter().enumerate() {
                    let one = pixel_photons(&inp, rows, slow, fast[l], false);
                    let what = format!("{flags}: pixel ({slow}, {})", fast[l]);
                    assert_eq!(
                        got.photons.to_f64().to_bits(),
                        one.photons.to_f64().to_bits(),
                        "photons, {what}"
                    );
                    assert_eq!(got.omega.to_f64().to_bits(), one.omega.to_f64().to_bits(), "Σω, {what}");
                    assert!(!got.left_grid && !one.left_grid, "{what}");
                    compared += usize::from(one.photons != F::ZERO);
                }
            }
        }
        compared
    }

    /// C flags of a random configuration the lanes cover ([`common::pixel_loop_configuration`]),
    /// N whole, on the lattice sum's recurrence or past it, and fractional.
    fn configuration() -> impl Strategy<Value = String> {
        let n = prop::sample::select(vec!["1", "3", "5", "2.5", "40"]).prop_map(String::from);
        common::pixel_loop_configuration(n, 1..3)
    }

    proptest! {
        #![proptest_config(common::fixed_cases(24, 0x6e62_1a9e))]
        #[test]
        fn random_configurations_give_one_pixel_at_a_times_bits(flags in configuration()) {
            // some are blank (a narrow spot between pixels): the cases below are not
            lanes_match_one_pixel_at_a_time::<f64>(&flags, None);
            lanes_match_one_pixel_at_a_time::<f32>(&flags, None);
        }
    }

    /// Spots over the whole detector: mosaic domains, φ steps, two sources, sub-pixels with
    /// every `-oversample_*` product, a thick sensor, polarization; and the light scene.
    #[test]
    fn spots_give_one_pixel_at_a_times_bits() {
        let heavy = "-default_F 100 -cell 70 80 90 80 85 95 -lambda 1.5 -N 4 -distance 80 -pixel 0.4 \
                     -detpixels 21 -mosaic 0.5 -mosaic_dom 3 -osc 2 -phisteps 2 -oversample 2 -hdivrange 0.3 \
                     -hdivsteps 2 -oversample_omega -oversample_polar -oversample_thick -detector_thick 100 \
                     -detector_thicksteps 2 -detector_abs 300 -polar 0.7 -misset 10 20 30";
        let light = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1 \
                     -detpixels 40";
        for flags in [heavy, light] {
            let spots = lanes_match_one_pixel_at_a_time::<f64>(flags, None);
            assert!(spots > 100, "{flags}: {spots} pixels above 0");
            assert!(lanes_match_one_pixel_at_a_time::<f32>(flags, None) > 100);
        }
    }

    /// Nearest-neighbour structure factors from a grid, inside it and off it (default_F).
    #[test]
    fn nearest_neighbour_grid_gives_one_pixel_at_a_times_bits() {
        let dir = tempfile::tempdir().unwrap();
        let path = common::small_hkl_grid(dir.path());
        let flags = "-default_F 5 -cell 60 60 60 90 90 90 -lambda 1.5 -N 2 -distance 120 -pixel 0.4 -detpixels 30 \
                     -nointerpolate -mosaic 0.3 -mosaic_dom 2 -misset 3 7 11";
        assert!(lanes_match_one_pixel_at_a_time::<f64>(flags, Some(&path)) > 100);
        assert!(lanes_match_one_pixel_at_a_time::<f32>(flags, Some(&path)) > 100);
    }

    /// The amorphous background folded into the f32 lanes (sinθ/λ, F and the product in f32)
    /// is the f64 lanes' to f32's rounding, on each shipped table (water's evenly spaced, F
    /// looked up in f32), over a tilted detector with two sources, sub-pixels and polarization.
    #[test]
    fn f32_lanes_fold_the_f64_background() {
        use crate::kernel::job::PixelJob;
        use crate::kernel::native::{folds_background, render_with_background};
        use crate::render::amorphous::BackgroundScene;
        use crate::render::options::RenderOptions;
        use crate::scene::Scene;
        let root = env!("CARGO_MANIFEST_DIR");
        for table in ["water.stol", "ice.stol", "air.stol"] {
            let flags = format!(
                "-default_F 1 -cell 30 30 30 90 90 90 -N 1 -lambda 1.5 -distance 60 -pixel 0.5 -detpixels 48 \
                 -oversample 2 -hdivrange 0.2 -hdivsteps 2 -polar 0.9 -detector_rotx 3 \
                 -stol {root}/fixtures/stol/{table} -thick 0.05 -density 0.92"
            );
            let args: Vec<&str> = flags.split_whitespace().collect();
            let crate::experiment::args::Parsed::Run(cfg, _) = crate::experiment::args::parse_args(&args).unwrap()
            else {
                panic!("no run: {flags}")
            };
            let exp = crate::experiment::Experiment::new(&cfg).unwrap();
            let background = BackgroundScene::of_experiment(&exp, &cfg.crystal.amorphous)
                .unwrap()
                .unwrap();
            let scene = Scene::new(&exp);
            let inputs = Inputs::<f32>::new(&PixelJob::new(&exp, &scene));
            assert!(folds_background(&inputs, &background), "{table}: not folded");
            let opts = RenderOptions::default();
            let single = render_with_background::<f32>(&exp, &scene, &opts, &background).unwrap();
            let double = render_with_background::<f64>(&exp, &scene, &opts, &background).unwrap();
            let (single, double) = (&single[0].data, &double[0].data);
            let peak = double.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert!(peak > 0.0, "{table}: no background");
            for (p, (a, b)) in single.iter().zip(double).enumerate() {
                assert!((a - b).abs() <= 1e-5 * peak, "{table}, pixel {p}: f32 {a} vs f64 {b}");
            }
        }
    }
}
