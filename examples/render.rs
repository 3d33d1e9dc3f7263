//! Render an image with the library: configuration from C-style flags, host setup, the f64 CPU
//! engine, statistics, and the float image written like `-floatfile`.
//!
//! `cargo run --release --example render -- [OUTPUT.bin]`

use nanobragg::engine::Engine;
use nanobragg::experiment::args::{parse_args, Parsed};
use nanobragg::io::raw::write_float_image;
use nanobragg::render::output::Statistics;
use nanobragg::{Experiment, RenderOptions};

fn main() -> nanobragg::Result<()> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "example.bin".into());
    let hkl = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tiny.hkl");
    let flags = [
        "-hkl",
        hkl,
        "-default_F",
        "10",
        "-cell",
        "60",
        "60",
        "60",
        "90",
        "90",
        "90",
        "-lambda",
        "1.5",
        "-N",
        "8",
        "-distance",
        "80",
        "-pixel",
        "0.1",
        "-detpixels",
        "256",
        "-mosaic",
        "0.2",
        "-mosaic_dom",
        "4",
    ];
    let Parsed::Run(cfg, _) = parse_args(&flags)? else {
        unreachable!("no -h given")
    };
    let exp = Experiment::new(&cfg)?;
    let image = Engine::default().render(&exp, &RenderOptions::default())?;
    let stats = Statistics::new(&exp, &image);
    println!(
        "max {:.4} photons, mean {:.4}, over {} pixels",
        stats.max_i, stats.mean, stats.rendered
    );
    write_float_image(std::path::Path::new(&out), &image.data)?;
    println!("wrote {out}");
    Ok(())
}
