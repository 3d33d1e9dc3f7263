//! `noisify`: drop-in replacement for the C suite's `noisify`, which turns an ideal float image
//! into the integer images an area detector would record. The run is
//! [`nanobragg::app::noisify::main`].

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(nanobragg::app::noisify::main(&args))
}
