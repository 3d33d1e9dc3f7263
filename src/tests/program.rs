//! The `nanobragg` program inside the unit-test binary: cargo builds no binary for a crate's
//! unit tests, so the tests here that compare with the program's files
//! (`common::run_program`) run this binary again as the program, through this module's test.
#![cfg(feature = "app")]

use super::common;
use std::io::Write;

/// In a child started by `common::run_program`, the program itself: its exit status is the
/// process's. Otherwise it checks that child against the binary's contract: a bad value is
/// refused with the flag's name and status 9, and a run writes its float image.
#[test]
fn the_test_binary_runs_as_the_program() {
    if let Ok(args) = std::env::var(common::AS_PROGRAM) {
        let args: Vec<String> = serde_json::from_str(&args).expect("the program's arguments as JSON");
        let status = nanobragg::app::program::main(&args);
        std::io::stdout().flush().unwrap();
        std::process::exit(status.into());
    }
    let dir = tempfile::tempdir().unwrap();
    let refused = common::run_program(dir.path(), &["-distance".into(), "far".into()]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(9), "{stderr}");
    assert!(stderr.contains("-distance"), "{stderr}");
    let flags = "-default_F 100 -cell 70 80 90 90 90 90 -N 2 -detpixels 12";
    let image = common::program_float_image(&flags.split_whitespace().collect::<Vec<_>>());
    assert_eq!(image.len(), 12 * 12);
    assert!(image.iter().all(|v| v.is_finite()) && image.iter().any(|&v| v > 0.0));
}
