//! The manifest `docs/embedding.md` gives a crate outside this repository ("Use from your
//! crate"), taken from the page as it is: `tests/external-crate`'s sources are copied to a
//! directory outside the repository, the manifest written beside them with its placeholder URL
//! replaced by this checkout's (`file://…`: cargo clones the committed HEAD), and the copy built
//! and tested with its own target directory. It fails when the page's manifest no longer
//! builds: a wrong patch line, a missing feature, a dependency the contract needs.
//!
//! Offline: the lock file is resolved first with `cargo --offline` against the checkout's
//! folders (the workspace's `Cargo.lock` and cargo's caches, which the workspace's own build
//! filled), then its three packages are pinned to the checkout's HEAD as git sources. The build
//! then runs with an HTTP proxy that refuses every connection: a step that would reach the
//! network (crates.io's index, a crate not yet downloaded) fails the test. Cloning a `file://`
//! repository needs none.
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
    lock_offline(&krate, &manifest);
    std::fs::write(krate.join("Cargo.toml"), manifest.replace(PLACEHOLDER, &url)).unwrap();
    let locked = std::fs::read_to_string(krate.join("Cargo.lock")).unwrap();
    let mut cmd = cargo(&krate);
    cmd.args(["test", "--quiet"])
        .env("CARGO_TARGET_DIR", root().join("target/outside-crate"))
        // the contract compares with the binary this repository's build made
        .env("NANOBRAGG_BIN", env!("CARGO_BIN_EXE_nanobragg"))
        .env_remove("RUSTFLAGS")
        // a one-off build of the manifest, not a developer's: no debug information and no
        // incremental caches (the manifest and the profile's other settings are the page's)
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_INCREMENTAL", "0");
    for proxy in [
        "CARGO_HTTP_PROXY",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        cmd.env(proxy, REFUSING_PROXY);
    }
    cmd.env("CARGO_NET_RETRY", "0");
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
    let after = std::fs::read_to_string(krate.join("Cargo.lock")).unwrap();
    assert!(after == locked, "the build changed the offline lock file");
}

/// An HTTP proxy nothing listens on (the discard port of this machine): every connection
/// through it is refused at once.
const REFUSING_PROXY: &str = "http://127.0.0.1:9";

/// `cargo` (the one running the tests) in `dir`.
fn cargo(dir: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(dir);
    cmd
}

/// Writes `krate`'s `Cargo.lock` for `manifest` without the network: resolved by
/// `cargo fetch --offline` with the three repository lines as paths into this checkout (the
/// workspace's `Cargo.lock` giving every crates.io version), then those three packages
/// given the git source the manifest names, at the checkout's HEAD.
fn lock_offline(krate: &Path, manifest: &str) {
    let as_path = |line: &str| {
        let folder = match line.split_whitespace().next() {
            Some("nanobragg") => root(),
            Some(name) => root().join("vendor").join(name),
            None => return line.to_string(),
        };
        line.replace(
            &format!("git = \"{PLACEHOLDER}\""),
            &format!("path = {:?}", folder.display().to_string()),
        )
    };
    let paths: Vec<String> = manifest.lines().map(as_path).collect();
    std::fs::write(krate.join("Cargo.toml"), paths.join("\n")).unwrap();
    std::fs::copy(root().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    // fetch (not metadata) for the host alone: other platforms' crates were never downloaded
    let out = cargo(krate)
        .args(["fetch", "--offline", "--target", &host()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "offline resolution: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(head.status.success(), "git rev-parse HEAD in the checkout");
    let source = format!(
        "git+file://{}#{}",
        root().display(),
        String::from_utf8_lossy(&head.stdout).trim()
    );
    let lock = std::fs::read_to_string(krate.join("Cargo.lock")).unwrap();
    std::fs::write(krate.join("Cargo.lock"), with_git_source(&lock, &source)).unwrap();
}

/// This machine's target triple, as rustc names it.
fn host() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let host = text.lines().find_map(|l| l.strip_prefix("host: "));
    host.expect("rustc -vV names the host").trim().to_string()
}

/// `lock` with `source` added to the packages nanobragg, burn-std and burn-autodiff that have
/// none (path packages).
fn with_git_source(lock: &str, source: &str) -> String {
    let blocks: Vec<String> = lock
        .split("\n[[package]]\n")
        .map(|block| {
            let mut lines: Vec<&str> = block.lines().collect();
            let named = ["nanobragg", "burn-std", "burn-autodiff"]
                .iter()
                .any(|n| lines.first() == Some(&format!("name = \"{n}\"").as_str()));
            let sourced = lines.get(2).is_some_and(|l| l.starts_with("source = "));
            let line = format!("source = \"{source}\"");
            if named && !sourced && lines.len() > 1 {
                lines.insert(2, &line);
                return lines.join("\n") + "\n";
            }
            block.to_string()
        })
        .collect();
    blocks.join("\n[[package]]\n")
}
