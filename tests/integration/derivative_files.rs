//! The binary's `-derivative` files against central differences of its own `-floatfile`s.

/// The binary: `-derivative` files against central differences of its own `-floatfile`s, on
/// the MOSFLM convention with a Gaussian crystal.
#[test]
fn command_line_derivative_files_match_differences_of_float_files() {
    let dir = tempfile::tempdir().unwrap();
    let base = "-cell 60 70 80 88 92 95 -misset 5 -7 12 -lambda 1.2 -N 5 -default_F 50 -distance 90 \
        -pixel 0.5 -detpixels 20 -mosflm -gauss_xtal -mosaic 0.3 -mosaic_dom 2 -polar 0.9 \
        -phi 3 -osc 1 -phisteps 2 -oversample 2 -nonoise -nopgm -noprogress";
    let run = |extra: &str| {
        let args: Vec<String> = format!("{base} {extra}").split_whitespace().map(String::from).collect();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nanobragg"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let read = |name: &str| -> Vec<f64> {
        let bytes = std::fs::read(dir.path().join(name)).unwrap();
        bytes
            .chunks(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            .collect()
    };
    run("-floatfile f.bin -derivative distance dd.bin -derivative cell_a da.bin -derivative misset_x dm.bin");
    // (derivative file, flag moved in the base command, its value there, step); steps are
    // small because the Gaussian shape is discontinuous where a fractional index crosses ±½
    // (as in C), and a larger step may straddle such a jump
    for (file, flag, value, h) in [
        ("dd.bin", "-distance", 90.0, 1e-3),
        ("da.bin", "-cell", 60.0, 1e-4),
        ("dm.bin", "-misset", 5.0, 1e-4),
    ] {
        let moved = |v: f64| base.replacen(&format!("{flag} {value}"), &format!("{flag} {v}"), 1);
        let image = |v: f64, out: &str| {
            let args: Vec<String> = format!("{} -floatfile {out}", moved(v))
                .split_whitespace()
                .map(String::from)
                .collect();
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_nanobragg"))
                .args(&args)
                .current_dir(dir.path())
                .output()
                .unwrap()
                .status;
            assert!(status.success());
            read(out)
        };
        let (up, down) = (image(value + h, "up.bin"), image(value - h, "down.bin"));
        let fd: Vec<f64> = up.iter().zip(&down).map(|(u, l)| (u - l) / (2.0 * h)).collect();
        let ad = read(file);
        let dot: f64 = fd.iter().zip(&ad).map(|(a, b)| a * b).sum();
        let nf = fd.iter().map(|v| v * v).sum::<f64>().sqrt();
        let na = ad.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(nf > 0.0, "{flag}: no change");
        let cosine = dot / (nf * na);
        assert!(
            cosine >= 0.999 && (na / nf - 1.0).abs() <= 0.02,
            "{flag}: cosine {cosine}, norm ratio {}",
            na / nf
        );
    }
}
