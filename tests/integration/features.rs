//! The library without its default features: an embedding crate's dependency tree holds none
//! of the application's crates (the `app` feature: the programs, shot lists, progress bars,
//! signal handling, manifests).

use std::process::Command;

/// The names of the packages in nanobragg's normal dependency tree, with `extra` flags.
fn dependency_names(extra: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "-p",
            "nanobragg",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args(extra)
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    tree.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
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
