//! The library without its default features: an embedding crate's dependency tree holds none
//! of the application's crates (the `app` feature: the programs, shot lists, progress bars,
//! signal handling, manifests).

use std::process::Command;

#[test]
fn the_library_alone_depends_on_no_application_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--no-default-features",
            "-p",
            "nanobragg",
        ])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(
        names.contains(&"burn"),
        "the tree lists the library's dependencies:\n{tree}"
    );
    for app in ["clap", "indicatif", "signal-hook", "sha2"] {
        assert!(
            !names.contains(&app),
            "{app} is in the library's tree without the app feature"
        );
    }
    // with the default features the application's crates are there (the check can fail)
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
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
        .output()
        .expect("cargo runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.lines().any(|l| l.starts_with("clap ")), "{tree}");
}
