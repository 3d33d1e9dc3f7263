//! nanobragg patch: no native library is linked; the `links` key of this package exists so that
//! a package depending on it directly can tell, in its build script, that this patched copy
//! (and not the release on crates.io) is the one being built.

fn main() {
    println!("cargo:fixes=concurrent backward passes lose no step and wait on no lock (tracel-ai/burn#5573)");
}
