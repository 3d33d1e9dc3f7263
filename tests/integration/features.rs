//! Feature resolution, read from `cargo tree`:
//! - the library without its default features: an embedding crate's dependency tree holds none
//!   of the application's crates (the `app` feature: the programs, shot lists, progress bars,
//!   signal handling, manifests);
//! - the wheel's build (`maturin build`, the Python package alone) resolves every crate it
//!   shares with the test build (`cargo test --workspace`) with the same features, so it reuses
//!   the compiled burn and nanobragg instead of building them a second time.

use std::collections::BTreeMap;
use std::process::Command;

/// `cargo tree --offline --prefix none` with `args`, one line a package.
fn cargo_tree(args: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "--prefix", "none"])
        .args(args)
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect()
}

/// The names of the packages in nanobragg's normal dependency tree, with `extra` flags.
fn dependency_names(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["-e", "normal", "-p", "nanobragg", "--format", "{p}"];
    args.extend_from_slice(extra);
    cargo_tree(&args)
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// Each package (name and version) of a tree with the features it is built with.
fn features_by_package(args: &[&str]) -> BTreeMap<String, String> {
    let mut args = args.to_vec();
    args.extend_from_slice(&["--format", "{p}|{f}"]);
    cargo_tree(&args)
        .iter()
        .filter_map(|l| {
            let (package, features) = l.split_once('|')?;
            let id = package.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            Some((id, features.trim_end_matches(" (*)").to_string()))
        })
        .collect()
}

#[test]
fn the_library_alone_depends_on_no_application_crate() {
    let alone = dependency_names(&["--no-default-features"]);
    assert!(
        alone.iter().any(|n| n == "burn"),
        "the tree lists the library's dependencies: {alone:?}"
    );
    for app in ["clap", "indicatif", "signal-hook", "sha2"] {
        assert!(
            !alone.iter().any(|n| n == app),
            "{app} is in the library's tree without the app feature"
        );
    }
    // with the default features the application's crates are there (the check can fail)
    assert!(dependency_names(&[]).iter().any(|n| n == "clap"));
}

#[test]
fn the_wheel_build_resolves_shared_crates_as_the_test_build_does() {
    // tests/run-all.sh: `cargo test --release --workspace --exclude nanobragg-external-user
    // --tests`, then `maturin build` of the Python package alone (its normal and build
    // dependencies)
    let tests = features_by_package(&[
        "--workspace",
        "--exclude",
        "nanobragg-external-user",
        "-e",
        "normal,build,dev",
    ]);
    let wheel = features_by_package(&["-p", "nanobragg-python", "-e", "normal,build"]);
    assert!(
        wheel.keys().any(|p| p.starts_with("burn ")),
        "the wheel's tree: {wheel:?}"
    );
    let differing: Vec<String> = wheel
        .iter()
        .filter_map(|(package, features)| {
            let in_tests = tests.get(package)?;
            (in_tests != features).then(|| format!("{package}: tests [{in_tests}], wheel [{features}]"))
        })
        .collect();
    assert!(
        differing.is_empty(),
        "the wheel's build would compile these (and all that depends on them) again; turn the \
         same features on in python/Cargo.toml's dependencies:\n{}",
        differing.join("\n")
    );
}
