//! Refuses to build nanobragg against the releases of burn-autodiff and burn-std that it patches.
//!
//! burn-autodiff 0.21.0 as released silently loses gradients when two threads run autodiff at
//! once (a refinement on threads gets gradients of exactly 0), and burn-std 0.21.0 gives some
//! reshaped views wrong strides on wgpu (`vendor/README.md`). nanobragg's own workspace patches
//! both (`[patch.crates-io]` in its `Cargo.toml`), but Cargo applies a patch only in the
//! workspace where it is written: a crate that depends on nanobragg builds the releases unless it
//! patches them too. The patched copies declare a `links` key and announce themselves to this
//! script (`DEP_<KEY>_FIXES`); where one is missing, the build stops here and says what to add,
//! rather than produce a library whose gradients can silently be wrong.

use std::path::Path;

/// (crate, the `links` key of its patched copy in `vendor/`)
const PATCHED: [(&str, &str); 2] = [
    ("burn-std", "NANOBRAGG_PATCH_BURN_STD"),
    ("burn-autodiff", "NANOBRAGG_PATCH_BURN_AUTODIFF"),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let missing: Vec<&str> = PATCHED
        .iter()
        .filter(|(_, key)| std::env::var_os(format!("DEP_{key}_FIXES")).is_none())
        .map(|(krate, _)| *krate)
        .collect();
    if missing.is_empty() {
        return;
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| "<path to nanobragg>".into());
    let vendor = Path::new(&root).join("vendor");
    let entries: String = PATCHED
        .iter()
        .map(|(krate, _)| format!("{krate} = {{ path = \"{}\" }}\n", vendor.join(krate).display()))
        .collect();
    eprintln!(
        "error: nanobragg needs its patched {} (the releases 0.21.0 can silently lose gradients \
         under threads and mis-stride reshapes on wgpu; see {}).\n\
         Cargo applies patches only in the top-level workspace: add to the Cargo.toml at the root \
         of yours\n\n[patch.crates-io]\n{entries}",
        missing.join(" and "),
        vendor.join("README.md").display(),
    );
    std::process::exit(1);
}
