//! The manifest `docs/embedding.md` gives a crate outside this repository ("Use from your
//! crate"), taken from the page as it is: `tests/external-crate`'s sources are copied to a
//! directory outside the repository, the manifest written beside them with its placeholder URL
//! replaced by this checkout's (`file://…`: cargo clones the committed HEAD), and the copy built
//! and tested with its own target directory. It fails when the page's manifest no longer
//! builds: a wrong patch line, a missing feature, a dependency the contract needs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The placeholder the page writes for the repository's URL.
const PLACEHOLDER: &str = "https://example.org/your-lab/nanobragg.git";
/// The comment the manifest follows on the page.
const MARKER: &str = "<!-- outside-crate manifest";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The ```toml block after [`MARKER`] in `docs/embedding.md`.
fn documented_manifest() -> String {
    let page = std::fs::read_to_string(root().join("docs/embedding.md")).unwrap();
    let after = &page[page
        .find(MARKER)
        .expect("docs/embedding.md marks the outside-crate manifest")..];
    let start = after.find("```toml\n").expect("a toml block after the marker") + "```toml\n".len();
    let len = after[start..].find("```").expect("the block ends");
    after[start..start + len].to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_documented_manifest_builds_the_external_crate_outside_the_repository() {
    if !root().join(".git").exists() {
        eprintln!(
            "SKIP: {} is not a git checkout: the manifest's git URL needs one",
            root().display()
        );
        return;
    }
    let manifest = documented_manifest();
    assert_eq!(
        manifest.matches(PLACEHOLDER).count(),
        3,
        "nanobragg and the two patches:\n{manifest}"
    );
    assert!(manifest.contains("burn = { version = \"=0.21.0\""), "{manifest}");
    let url = format!("file://{}", root().display());
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("my-refinement");
    copy_dir(&root().join("tests/external-crate/src"), &krate.join("src"));
    copy_dir(&root().join("tests/external-crate/tests"), &krate.join("tests"));
    std::fs::write(krate.join("Cargo.toml"), manifest.replace(PLACEHOLDER, &url)).unwrap();
    // the workspace's versions of every crates.io dependency
    std::fs::copy(root().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["test", "--quiet"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", root().join("target/outside-crate"))
        // the contract compares with the binary this repository's build made
        .env("NANOBRAGG_BIN", env!("CARGO_BIN_EXE_nanobragg"))
        .env_remove("RUSTFLAGS");
    let out =
        crate::common::output_within(cmd, Duration::from_secs(40 * 60)).expect("the build finished within 40 minutes");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "cargo test of the outside crate failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("test result: ok"), "{stdout}\n{stderr}");
}
