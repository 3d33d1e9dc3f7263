//! SMV, noise and PGM outputs against the C program's files for the golden cases that have
//! them: same header keys and values, integer pixels within one count, the noise image
//! identical for the same seed, PGM bytes equal.

use crate::common;

use nanobragg::io::smv::read_smv_u16;
use std::process::Command;

#[test]
fn outputs_match_c_files() {
    let Some(golden) = common::golden_dir() else { return };
    let mut checked = 0;
    for case in common::cases(&golden) {
        let outputs = case.other_outputs.as_object().cloned().unwrap_or_default();
        if outputs.is_empty() {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let mut args = case.args.clone();
        args.extend(["-floatfile".into(), "float.bin".into()]);
        let out = Command::new(env!("CARGO_BIN_EXE_nanobragg"))
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        for (ours_name, theirs) in outputs {
            let ours = tmp.path().join(&ours_name);
            let theirs = golden.join(theirs.as_str().unwrap());
            if ours_name.ends_with(".pgm") {
                assert_eq!(
                    std::fs::read(&ours).unwrap(),
                    std::fs::read(&theirs).unwrap(),
                    "{}: {ours_name}",
                    case.name
                );
            } else {
                let (h1, d1) = read_smv_u16(&ours).unwrap();
                let (h2, d2) = read_smv_u16(&theirs).unwrap();
                // the same keys with the same values, in the same order
                let keys = |t: &str| -> Vec<String> {
                    t.lines()
                        .filter(|l| l.contains('='))
                        .map(|l| l.trim_end_matches(';').to_string())
                        .collect()
                };
                assert_eq!(keys(&h1.text), keys(&h2.text), "{}: {ours_name} header", case.name);
                let exact = ours_name.contains("noise");
                for (i, (a, b)) in d1.iter().zip(&d2).enumerate() {
                    let tol = if exact { 0 } else { 1 };
                    assert!(
                        a.abs_diff(*b) <= tol,
                        "{}: {ours_name} pixel {i}: {a} vs {b}",
                        case.name
                    );
                }
                assert_eq!(d1.len(), d2.len());
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "expected the golden SMV/PGM files, checked {checked}");
}
