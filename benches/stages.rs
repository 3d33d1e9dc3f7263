//! Criterion benches of the physics stages on one cache-sized chunk (2¹⁵ samples, the render's
//! chunk size) and of small whole renders, on the f64 CPU engine (`cargo bench --bench stages`).
//! One precision per process (burn's float dtype is fixed per device).
//!
//! Timings of whole-image renders against the C program come from the benchmark command
//! (`cargo run --release --example bench`, see docs/benchmarks.md).

use burn::backend::ndarray::{NdArray, NdArrayDevice};
use burn::tensor::{DType, Tensor, TensorData};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nanobragg::config::CrystalShape;
use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::io::hkl::HklGrid;
use nanobragg::physics::detector::{diffracted_directions, pixel_positions, solid_angle};
use nanobragg::physics::lattice::{lattice_factor, sincg, LatticeShape};
use nanobragg::physics::polarization::kahn_factor;
use nanobragg::physics::scattering::{cos_two_theta, miller_indices};
use nanobragg::physics::structure_factor::{nearest, tricubic, HklTensor};
use nanobragg::{Experiment, RenderOptions};
use std::hint::black_box;

type B = NdArray<f64>;
const R: usize = 1 << 15;

fn dev() -> NdArrayDevice {
    let d = NdArrayDevice::Cpu;
    burn::tensor::set_default_dtypes::<B>(&d, DType::F64, DType::I64).expect("f64 device");
    d
}

fn t2(v: Vec<f64>, shape: [usize; 2]) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(v, shape), &dev())
}

/// Deterministic values in [lo, hi).
fn values(n: usize, lo: f64, hi: f64, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|i| lo + (hi - lo) * ((i as f64 * 0.618_033_988_75 + seed).fract()))
        .collect()
}

/// Unit directions `[R, 3]` spread over a 2048² detector 0.1 m away.
fn directions() -> Tensor<B, 2> {
    let coords = values(3 * R, 0.0, 0.2, 0.1);
    let pos = pixel_positions(
        t2(coords, [R, 3]),
        t2(vec![0.0, 0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0], [3, 3]),
        t2(vec![0.1, 0.1, -0.1], [1, 3]),
    );
    diffracted_directions(pos).0.rows()
}

fn stages(c: &mut Criterion) {
    let mut g = c.benchmark_group("stages (2^15 samples)");
    g.throughput(Throughput::Elements(R as u64));
    let coords = t2(values(3 * R, 0.0, 0.2, 0.1), [R, 3]);
    let basis = t2(vec![0.0, 0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0], [3, 3]);
    let pix0 = t2(vec![0.1, 0.1, -0.1], [1, 3]);
    g.bench_function("detector: positions + directions", |b| {
        b.iter(|| diffracted_directions(pixel_positions(coords.clone(), basis.clone(), pix0.clone())))
    });
    let airpath = t2(values(R, 0.1, 0.2, 0.3), [R, 1]);
    let close = t2(vec![0.1], [1, 1]);
    g.bench_function("detector: solid angle", |b| {
        b.iter(|| solid_angle(airpath.clone(), 1e-4, close.clone(), false))
    });
    let dir = directions();
    let incident = t2(vec![1.0, 0.0, 0.0], [3, 1]);
    g.bench_function("scattering: cos 2θ + Kahn factor (K = 0)", |b| {
        b.iter(|| {
            kahn_factor(
                cos_two_theta(dir.clone(), incident.clone()),
                dir.clone(),
                dir.clone(),
                0.0,
            )
        })
    });
    let coef = t2(values(9, -1.6e9, 1.6e9, 0.7), [3, 3]);
    let offset = t2(values(3, -10.0, 10.0, 0.2), [1, 3]);
    g.bench_function("scattering: Miller indices", |b| {
        b.iter(|| miller_indices(dir.clone(), coef.clone(), offset.clone()))
    });
    let hkl = [0.1, 0.4, 0.8].map(|s| t2(values(R, -30.0, 30.0, s), [R, 1]));
    g.bench_function("lattice: sincg (one axis)", |b| b.iter(|| sincg(hkl[0].clone(), 5.0)));
    for shape in [CrystalShape::Square, CrystalShape::Round, CrystalShape::Gauss] {
        let p = LatticeShape {
            shape,
            n: [5.0; 3],
            fudge: 1.0,
            recip: [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]],
        };
        g.bench_function(format!("lattice: F_latt {shape:?}"), |b| {
            b.iter(|| lattice_factor(&hkl, &p, None))
        });
    }
    let grid = HklGrid {
        h_min: -32,
        h_max: 32,
        k_min: -32,
        k_max: 32,
        l_min: -32,
        l_max: 32,
        values: values(65 * 65 * 65, 10.0, 100.0, 0.5),
        entries: 65 * 65 * 65,
    };
    let grid = HklTensor::<B>::new(&grid, 0.0, &dev());
    g.bench_function("structure factor: nearest", |b| b.iter(|| nearest(&hkl, &grid)));
    g.bench_function("structure factor: tricubic", |b| b.iter(|| tricubic(&hkl, &grid)));
    g.finish();
}

const LIGHT: &str = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
const HEAVY: &str = "-mosaic 0.5 -mosaic_dom 10 -phisteps 5 -osc 0.5 -oversample 2";

fn renders(c: &mut Criterion) {
    let mut g = c.benchmark_group("render");
    g.sample_size(10);
    for (name, extra, size) in [("light", "", 256usize), ("heavy", HEAVY, 64)] {
        let flags = format!("{LIGHT} {extra} -detpixels {size}");
        let words: Vec<&str> = flags.split_whitespace().collect();
        let Ok(Parsed::Run(cfg, _)) = parse_args(&words) else {
            panic!("bad bench flags")
        };
        let exp = Experiment::new(&cfg).expect("valid bench configuration");
        dev();
        g.bench_function(format!("{name} {size}²"), |b| {
            b.iter(|| black_box(Engine::default().render(&exp, &RenderOptions::default())))
        });
    }
    g.finish();
}

criterion_group!(benches, stages, renders);
criterion_main!(benches);
