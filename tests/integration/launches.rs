//! Kernel launches of whole `nanobragg -engine wgpu` processes, from cubecl's profile log: a
//! render is the image kernel and the statistics kernel, whatever its size.

use crate::common;
use nanobragg::engine::Engine;

const FUSED: Engine = Engine::Wgpu { fusion: true };

/// Kernel launches of one whole `nanobragg -engine wgpu` process, from cubecl's profile log.
fn launches_of_a_process(flags: &str) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("launches.log");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nanobragg"))
        .args(flags.split_whitespace())
        .args(["-engine", "wgpu", "-floatfile", "image.bin"])
        .current_dir(dir.path())
        .env("CUBECL_DEBUG_OPTION", "profile")
        .env("CUBECL_DEBUG_LOG", &log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    common::launches_in_profile_log(&std::fs::read_to_string(&log).unwrap())
}

#[test]
fn a_render_is_two_kernel_launches_whatever_the_size() {
    if !common::engine_available(FUSED) {
        return;
    }
    let light = "-default_F 100 -cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -distance 100 -pixel 0.1";
    let heavy = "-mosaic 0.5 -mosaic_dom 10 -phisteps 5 -osc 0.5 -oversample 2";
    for flags in [
        format!("{light} -detpixels 64"),
        format!("{light} -detpixels 512"),
        format!("{light} {heavy} -detpixels 128 -roi 10 100 20 90 -dmin 20 -water 10"),
    ] {
        // the render and the statistics; uploads and readbacks are no launches
        assert_eq!(launches_of_a_process(&flags), 2, "{flags}");
    }
}
