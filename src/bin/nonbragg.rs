//! `nonbragg`: drop-in replacement for the C suite's `nonBragg`, which renders the diffuse
//! scattering of an amorphous sample (water, ice, air, …) from its F(sinθ/λ) table. The run is
//! [`nanobragg::app::nonbragg::main`].

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(nanobragg::app::nonbragg::main(&args))
}
