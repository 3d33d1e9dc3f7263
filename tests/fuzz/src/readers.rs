//! What each fuzz target does with its bytes: write them where a reader expects a file, read
//! them as that kind of input, and, where the reader accepts them, go on as a run would (set
//! the experiment up, place the panels, check the shots). Errors are the expected outcome for
//! most inputs; the property fuzzed is that nothing panics, hangs or aborts.
//!
//! The integration tests include this file too (`tests/integration/fuzz_replay.rs`) and replay
//! the corpus in `fixtures/fuzz/<target>/` through the same functions on every test run.

use nanobragg::config::{HklSource, SimConfig};
use nanobragg::experiment::args::{parse_args, Parsed, RunOptions};
use nanobragg::Experiment;
use std::path::PathBuf;

/// A fuzz target: reads its bytes as one kind of input.
pub type Target = fn(&[u8]);

/// Every target: its name (the directory of its corpus) and its function.
pub const TARGETS: [(&str, Target); 9] = [
    ("hkl", hkl),
    ("fdump", fdump),
    ("mat", mat),
    ("sourcefile", sourcefile),
    ("smv", smv),
    ("geom", geom),
    ("expt", expt),
    ("shots", shots),
    ("manifest", manifest),
];

/// `data` written to a file named `name` in a directory of this process and thread (the
/// integration tests run targets on several threads at once).
fn scratch(name: &str, data: &[u8]) -> PathBuf {
    let thread: String = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let dir = std::env::temp_dir().join(format!("nanobragg-fuzz-{}-{thread}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("scratch file");
    path
}

/// The flags of a tiny run (a cubic cell, 4 × 4 pixels) plus `extra`, parsed; `None` when they
/// are refused. No structure factors are read from the working directory.
fn tiny_run(extra: &[&str]) -> Option<(SimConfig, RunOptions)> {
    let mut args = vec![
        "-default_F",
        "100",
        "-cell",
        "100",
        "100",
        "100",
        "90",
        "90",
        "90",
        "-N",
        "2",
        "-detpixels",
        "4",
    ];
    args.extend_from_slice(extra);
    match parse_args(&args) {
        Ok(Parsed::Run(cfg, opts)) => {
            let mut cfg = *cfg;
            if cfg.crystal.hkl == HklSource::FdumpIfPresent {
                cfg.crystal.hkl = HklSource::None;
            }
            Some((cfg, opts))
        }
        _ => None,
    }
}

/// Sets up the experiment of a configuration the parser accepted (the result is not needed).
fn set_up(cfg: &SimConfig) {
    let _ = Experiment::new(cfg);
}

/// Grid points up to which the `hkl` target writes and reads back the `Fdump.bin` (a few
/// lines may span a grid of up to 2³¹ points, which the reader fills as C does: seconds of
/// work, not a finding).
const ROUND_TRIP_POINTS: usize = 1 << 20;

/// `-hkl FILE`: the text reader, then the `Fdump.bin` it would cache, read back.
pub fn hkl(data: &[u8]) {
    let path = scratch("in.hkl", data);
    if let Ok(grid) = nanobragg::io::hkl::read_hkl(&path, 1.0) {
        if grid.values.len() > ROUND_TRIP_POINTS {
            return;
        }
        let dump = path.with_file_name("Fdump.bin");
        if nanobragg::io::fdump::write_fdump(&dump, &grid).is_ok() {
            let back = nanobragg::io::fdump::read_fdump(&dump).expect("an Fdump.bin just written reads back");
            assert_eq!(back.values.len(), grid.values.len());
        }
    }
}

/// `Fdump.bin` (read from the working directory when there is no `-hkl`).
pub fn fdump(data: &[u8]) {
    let path = scratch("Fdump.bin", data);
    let _ = nanobragg::io::fdump::read_fdump(&path);
}

/// `-mat FILE`: the matrix, then the crystal it sets up.
pub fn mat(data: &[u8]) {
    let path = scratch("A.mat", data);
    if let Some((cfg, _)) = tiny_run(&["-mat", path.to_str().expect("UTF-8 path")]) {
        set_up(&cfg);
    }
}

/// `-sourcefile FILE`: the rows, then the sources they set up.
pub fn sourcefile(data: &[u8]) {
    let path = scratch("sources.txt", data);
    if let Some((cfg, _)) = tiny_run(&["-sourcefile", path.to_str().expect("UTF-8 path")]) {
        set_up(&cfg);
    }
}

/// An SMV file as `-img` (its header seeds the detector) and as `-mask` (header and pixels),
/// then the detector each sets up.
pub fn smv(data: &[u8]) {
    let path = scratch("in.img", data);
    let path = path.to_str().expect("UTF-8 path");
    for flag in ["-img", "-mask"] {
        let args = [
            "-default_F",
            "100",
            "-cell",
            "100",
            "100",
            "100",
            "90",
            "90",
            "90",
            flag,
            path,
        ];
        if let Ok(Parsed::Run(cfg, _)) = parse_args(&args) {
            let mut cfg = *cfg;
            cfg.crystal.hkl = HklSource::None;
            set_up(&cfg);
        }
    }
}

/// A detector of panels (`-geom` or `-detector_expt`): the layout, each grouping it names,
/// and each panel's own detector.
fn panels(flag: &str, name: &str, data: &[u8]) {
    let path = scratch(name, data);
    let Some((cfg, _)) = tiny_run(&[flag, path.to_str().expect("UTF-8 path")]) else {
        return;
    };
    let layout = cfg.detector.panels.as_ref().expect("a layout was read");
    for g in layout.grouping_names() {
        let _ = layout.grouping(&g);
    }
    if let Ok(configs) = nanobragg::experiment::panels::custom::panel_configs(&cfg, layout, flag) {
        for pc in configs.iter().take(4) {
            set_up(pc);
        }
    }
}

/// `-geom FILE` (CrystFEL).
pub fn geom(data: &[u8]) {
    panels("-geom", "in.geom", data);
}

/// `-detector_expt FILE` (DIALS).
pub fn expt(data: &[u8]) {
    panels("-detector_expt", "in.expt", data);
}

/// `-shots FILE`: every line parsed and checked against a tiny run's flags.
pub fn shots(data: &[u8]) {
    let path = scratch("shots.jsonl", data);
    if let Some((cfg, opts)) = tiny_run(&[]) {
        let _ = nanobragg::app::shots::list::read_shot_list(&path, 0, &cfg, opts);
    }
}

/// A shot run's manifest: its lines, and the files each names checked as a resumed run checks
/// them.
pub fn manifest(data: &[u8]) {
    let path = scratch("manifest.jsonl", data);
    if let Ok(Some(loaded)) = nanobragg::app::shots::manifest::read_manifest(&path) {
        for r in loaded.records.iter().take(16) {
            let _ = nanobragg::app::shots::manifest::verify_files(&path, &r.head);
        }
    }
}
