//! The fuzz targets' corpus (`fixtures/fuzz/<target>/`: seeds, and every input a fuzzer found
//! to crash or hang a reader once) replayed through the same functions the targets call
//! (`tests/fuzz/src/readers.rs`), on every test run: no reader may panic on any of them.

#[path = "../fuzz/src/readers.rs"]
mod readers;

use std::path::Path;

#[test]
fn every_fuzz_corpus_input_is_read_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fuzz");
    let mut failures = Vec::new();
    for (name, target) in readers::TARGETS {
        let mut files: Vec<_> = std::fs::read_dir(root.join(name))
            .unwrap_or_else(|e| panic!("fixtures/fuzz/{name}: {e}"))
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "fixtures/fuzz/{name} holds no inputs");
        for file in files {
            let data = std::fs::read(&file).unwrap();
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failures.push(file.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "readers panicked on: {failures:?}");
}
