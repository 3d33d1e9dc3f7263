use super::*;
use crate::config::{Convention, CrystalShape, HklSource, Misset, Pivot, Roi};
use crate::engine::Engine;
use std::io::Write;

const DEG: f64 = std::f64::consts::PI / 180.0;

fn run(args: &[&str]) -> (SimConfig, RunOptions) {
    match parse_args(args) {
        Ok(Parsed::Run(cfg, opts)) => (*cfg, opts),
        Ok(Parsed::Help) => panic!("{args:?} gave Help"),
        Err(e) => panic!("{args:?} failed: {e}"),
    }
}

fn cfg(args: &[&str]) -> SimConfig {
    run(args).0
}

fn err(args: &[&str]) -> Error {
    match parse_args(args) {
        Err(e) => e,
        Ok(p) => panic!("{args:?} should fail, gave {p:?}"),
    }
}

/// Asserts a `Error::Flag` naming `flag` whose message contains `text`.
fn assert_flag_err(args: &[&str], flag: &str, text: &str) {
    match err(args) {
        Error::Flag { flag: f, message } => {
            assert_eq!(f, flag, "{args:?}: wrong flag in '{message}'");
            assert!(message.contains(text), "{args:?}: message '{message}' lacks '{text}'");
        }
        e => panic!("{args:?}: expected a flag error, got {e:?}"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
}

fn assert_close(a: f64, b: f64) {
    assert!(close(a, b), "{a} != {b}");
}

fn golden_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("NANOBRAGG_GOLDEN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/golden"));
    if dir.join("cases.json").is_file() {
        Some(dir)
    } else {
        eprintln!("skipping: no golden cases at {}", dir.display());
        None
    }
}

/// The golden cases' (name, args), with `inputs/...` made absolute (they are relative to the
/// golden directory).
fn golden_cases(dir: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(dir.join("cases.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let args = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    let a = a.as_str().unwrap();
                    if a.starts_with("inputs/") {
                        dir.join(a).to_string_lossy().into_owned()
                    } else {
                        a.to_string()
                    }
                })
                .collect();
            (c["name"].as_str().unwrap().to_string(), args)
        })
        .collect()
}

fn golden(name: &str) -> Option<SimConfig> {
    let dir = golden_dir()?;
    let (_, args) = golden_cases(&dir).into_iter().find(|(n, _)| n == name)?;
    Some(run(&args.iter().map(String::as_str).collect::<Vec<_>>()).0)
}

#[test]
fn every_golden_case_parses() {
    let Some(dir) = golden_dir() else { return };
    let cases = golden_cases(&dir);
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    for (name, args) in &cases {
        match parse_args(args) {
            Ok(Parsed::Run(..)) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn golden_mosflm_cubic_values() {
    let Some(c) = golden("mosflm_cubic_64") else {
        return;
    };
    assert_eq!(c.crystal.default_f, 100.0);
    let cell = c.crystal.cell.unwrap();
    assert_close(cell[0], 100e-10);
    assert_close(cell[2], 100e-10);
    assert_close(cell[3], 90.0 * DEG);
    assert_close(c.beam.lambda0, 6.2e-10);
    assert_eq!((c.crystal.na, c.crystal.nb, c.crystal.nc), (3.0, 3.0, 3.0));
    assert_close(c.detector.pixel_size, 1e-4);
    assert_close(c.detector.distance, 0.1);
    assert_eq!(c.detector.convention, Convention::Mosflm);
    assert_eq!(c.detector.pivot, Pivot::Beam);
    assert_eq!(c.detector.fpixels, Some(64));
    assert_eq!(c.detector.spixels, Some(64));
    assert_close(c.detector.xbeam.unwrap(), 3.2e-3);
    assert_close(c.detector.ybeam.unwrap(), 3.2e-3);
    assert_eq!(c.crystal.hkl, HklSource::FdumpIfPresent);
    assert_eq!(c.detector.mask, None);
}

#[test]
fn golden_misset_xds_custom_values() {
    if let Some(c) = golden("triclinic_misset_256") {
        let Misset::Angles(a) = c.crystal.misset else {
            panic!("{:?}", c.crystal.misset)
        };
        assert_close(a[0], 10.0 * DEG);
        assert_close(a[1], 20.0 * DEG);
        assert_close(a[2], 30.0 * DEG);
        let cell = c.crystal.cell.unwrap();
        assert_close(cell[1], 80e-10);
        assert_close(cell[5], 95.0 * DEG);
    }
    if let Some(c) = golden("xds_orgx_256") {
        assert_eq!(c.detector.convention, Convention::Xds);
        assert_eq!(c.detector.pivot, Pivot::Sample);
        assert_eq!(c.detector.orgx, Some(100.0));
        assert_eq!(c.detector.orgy, Some(140.0));
    }
    if let Some(c) = golden("custom_vectors_sample_pivot_128") {
        let d = &c.detector;
        assert_eq!(d.convention, Convention::Custom);
        assert_eq!(d.pivot, Pivot::Sample);
        assert_eq!(d.custom.sdet, Some([0.0, -1.0, 0.0]));
        assert_eq!(d.custom.twotheta_axis, Some([0.0, 0.0, -1.0]));
        assert_close(d.twotheta, 12.0 * DEG);
        assert_close(d.close_distance.unwrap(), 0.095);
        assert_close(d.xclose.unwrap(), 4e-3);
    }
    if let Some(c) = golden("dials_128") {
        // The parser sets BEAM for -dials (setup forces SAMPLE), and -Xbeam keeps BEAM.
        assert_eq!(c.detector.convention, Convention::Dials);
        assert_eq!(c.detector.pivot, Pivot::Beam);
    }
    if let Some(c) = golden("tilted_beam_pivot_256") {
        assert_eq!(c.detector.pivot, Pivot::Sample); // -twotheta comes last
        assert_close(c.detector.rotx, 5.0 * DEG);
        assert_close(c.detector.twotheta, 15.0 * DEG);
        assert_eq!(c.sampling.oversample, Some(1));
    }
}

#[test]
fn golden_file_inputs_are_read() {
    let Some(dir) = golden_dir() else { return };
    if let Some(c) = golden("matrix_file_256") {
        let m = c.crystal.matrix.unwrap();
        assert_eq!(m[0][0], 0.0144784634);
        assert_eq!(m[0][1], -0.0051971093);
        assert_eq!(m[2][2], 0.0121357080);
        assert_eq!(c.crystal.cell, None);
    }
    if let Some(c) = golden("sourcefile_128") {
        let s = c.beam.sources.unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].y, Some(0.02));
        assert_eq!(s[2].lambda, Some(6.3e-10));
    }
    if let Some(c) = golden("hkl_pattern_64") {
        assert_eq!(c.crystal.hkl, HklSource::File(dir.join("inputs/pattern.hkl")));
    }
    if let Some(c) = golden("roi_mask_128") {
        let d = &c.detector;
        assert_eq!(
            d.roi,
            Some(Roi {
                xmin: 20,
                xmax: 100,
                ymin: 30,
                ymax: 90
            })
        );
        let mask = d.mask.as_ref().unwrap();
        assert_eq!(mask.len(), 128 * 128);
        assert!(mask.contains(&0) && mask.iter().any(|&m| m != 0));
        assert_eq!((d.fpixels, d.spixels), (Some(128), Some(128)));
    }
}

#[test]
fn golden_beam_and_output_values() {
    if let Some(c) = golden("energy_spindle_128") {
        assert_close(c.beam.lambda0, 12398.42 / 9000.0 * 1e-10);
        assert_eq!(c.detector.convention, Convention::Custom);
        assert_eq!(c.detector.custom.spindle, Some([0.0, 1.0, 0.0]));
        assert_close(c.crystal.phi0, 30.0 * DEG);
        assert_close(c.crystal.osc.unwrap(), 2.0 * DEG);
        assert_eq!(c.crystal.phisteps, Some(2));
    }
    if let Some(c) = golden("divergence_dispersion_128") {
        assert_close(c.beam.hdivrange.unwrap(), 2e-3);
        assert_close(c.beam.vdivrange.unwrap(), 2e-3);
        assert_eq!((c.beam.hdivsteps, c.beam.vdivsteps), (Some(3), Some(3)));
        assert_close(c.beam.dispersion, 0.02);
        assert_eq!(c.beam.dispsteps, Some(3));
    }
    if let Some(c) = golden("absorption_128") {
        assert_close(c.detector.mu.unwrap(), 1.0 / 300e-6);
        assert_close(c.detector.thickness, 100e-6);
        assert_eq!(c.detector.thicksteps, Some(3));
    }
    if let Some(c) = golden("flux_beamsize_128") {
        assert_eq!(c.beam.flux, 1e12);
        assert_eq!(c.beam.exposure, 2.0);
        assert_close(c.beam.beamsize, 5e-5);
    }
    if let Some(c) = golden("smv_noise_pgm_64") {
        assert_eq!(c.output.seed, Some(1234));
        assert_eq!(c.output.intfile, PathBuf::from("int.img"));
        assert_eq!(c.output.noisefile, Some(PathBuf::from("noise.img")));
        assert_eq!(c.output.pgmfile, Some(PathBuf::from("image.pgm")));
    }
    if let Some(c) = golden("smv_scale_adc_64") {
        assert_eq!(c.output.scale, Some(0.5));
        assert_eq!(c.output.adc, 10.0);
        assert_eq!(c.output.noisefile, None);
        assert_eq!(c.output.pgmfile, None);
    }
    if let Some(c) = golden("mosaic_phi_128") {
        assert_close(c.crystal.mosaic_spread.unwrap(), 0.5 * DEG);
        assert_eq!(c.crystal.mosaic_domains, Some(5));
        assert_eq!(c.crystal.mosaic_seed, 777);
    }
    if let Some(c) = golden("rect_detector_128x96") {
        assert_eq!((c.detector.fpixels, c.detector.spixels), (Some(128), Some(96)));
    }
}

#[test]
fn defaults_without_flags() {
    let c = cfg(&[]);
    assert_eq!(c, SimConfig::default());
    let (_, o) = run(&[]);
    assert_eq!(o, RunOptions::default());
}

#[test]
fn help_flags() {
    for h in ["-h", "-help", "--help"] {
        assert_eq!(parse_args(&[h]).unwrap(), Parsed::Help);
        assert_eq!(parse_args(&["-N", "3", h, "-bogus"]).unwrap(), Parsed::Help);
    }
}

#[test]
fn unit_conversions() {
    let c = cfg(&[
        "-distance",
        "250",
        "-pixel",
        "0.172",
        "-detsize",
        "40",
        "-Xbeam",
        "-3",
        "-dmin",
        "2",
        "-water",
        "50",
        "-detector_thick",
        "320",
        "-beamsize",
        "0.02",
        "-dispersion",
        "0.5",
        "-hdivstep",
        "0.02",
        "-vdivrange",
        "0.3",
        "-mosaic",
        "0.25",
        "-phistep",
        "0.1",
        "-detector_rotz",
        "-7",
        "-samplesize",
        "0.4",
        "-ORGX",
        "12.5",
    ]);
    assert_close(c.detector.distance, 0.25);
    assert_close(c.detector.pixel_size, 0.172e-3);
    assert_close(c.detector.detsize_f, 0.04);
    assert_close(c.detector.detsize_s, 0.04);
    assert_close(c.detector.xbeam.unwrap(), -3e-3);
    assert_close(c.sampling.dmin, 2e-10);
    assert_close(c.sampling.water_size, 50e-6);
    assert_close(c.detector.thickness, 320e-6);
    assert_close(c.beam.beamsize, 2e-5);
    assert_close(c.beam.dispersion, 0.005);
    assert_close(c.beam.hdivstep.unwrap(), 2e-5);
    assert_close(c.beam.vdivrange.unwrap(), 3e-4);
    assert_eq!(c.beam.hdivrange, None);
    assert_close(c.crystal.mosaic_spread.unwrap(), 0.25 * DEG);
    assert_close(c.crystal.phistep.unwrap(), 0.1 * DEG);
    assert_close(c.detector.rotz, -7.0 * DEG);
    assert_close(c.crystal.sample_x, 4e-4);
    assert_close(c.crystal.sample_z, 4e-4);
    assert_eq!(c.detector.orgx, Some(12.5));
    assert_eq!(c.detector.pivot, Pivot::Sample); // -ORGX after -distance/-Xbeam
}

#[test]
fn negative_values_are_values() {
    let c = cfg(&["-phi", "-5", "-misset", "-10", "20", "-30", "-twotheta", "-2.5"]);
    assert_close(c.crystal.phi0, -5.0 * DEG);
    assert_eq!(c.crystal.misset, Misset::Angles([-10.0 / RTD, 20.0 / RTD, -30.0 / RTD]));
    assert_close(c.detector.twotheta, -2.5 * DEG);
    let c = cfg(&["-fdet_vector", "-1", "0", "0", "-roi", "-1", "5", "-2", "7"]);
    assert_eq!(c.detector.custom.fdet, Some([-1.0, 0.0, 0.0]));
    assert_eq!(
        c.detector.roi,
        Some(Roi {
            xmin: -1,
            xmax: 5,
            ymin: -2,
            ymax: 7
        })
    );
}

#[test]
fn cell_forms() {
    let full = cfg(&["-cell", "70", "80", "90", "75", "85", "95"])
        .crystal
        .cell
        .unwrap();
    assert_close(full[0], 70e-10);
    assert_close(full[4], 85.0 * DEG);
    // Missing values take C's defaults; a following flag ends the list.
    let c = cfg(&["-cell", "50", "-N", "2"]);
    assert_eq!(
        c.crystal.cell,
        cfg(&["-cell", "50", "50", "50", "90", "90", "90"]).crystal.cell
    );
    assert_eq!(c.crystal.na, 2.0);
    let c = cfg(&["-cell", "50", "60", "0", "-1", "100"]).crystal.cell.unwrap();
    assert_close(c[2], 50e-10);
    assert_close(c[3], 90.0 * DEG);
    assert_close(c[4], 100.0 * DEG);
    assert_close(c[5], 90.0 * DEG);
    assert_flag_err(&["-cell"], "-cell", "found none");
    assert_flag_err(&["-cell", "-N", "3"], "-cell", "-N");
    assert_flag_err(&["-cell", "0", "10"], "-cell", "'0'");
    assert_flag_err(&["-cell", "10", "abc"], "-cell", "'abc'");
    assert_flag_err(&["-cell", "1", "2", "3", "4", "5", "6", "7"], "-cell", "'7'");
}

#[test]
fn misset_forms() {
    assert_eq!(cfg(&["-misset", "random"]).crystal.misset, Misset::Random);
    assert_eq!(cfg(&["-misset", "rand"]).crystal.misset, Misset::Random);
    // Later wins, both ways.
    let c = cfg(&["-misset", "random", "-misset", "1", "2", "3"]);
    assert!(matches!(c.crystal.misset, Misset::Angles(_)));
    let c = cfg(&["-misset", "1", "2", "3", "-misset", "random", "-misset_seed", "-42"]);
    assert_eq!(c.crystal.misset, Misset::Random);
    assert_eq!(c.crystal.misset_seed, Some(-42));
    assert_flag_err(&["-misset", "1", "2"], "-misset", "3 values");
    assert_flag_err(&["-misset", "1", "x", "3"], "-misset", "'x'");
    assert_flag_err(&["-misset"], "-misset", "found none");
}

#[test]
fn aliases_give_the_same_config() {
    let groups: &[&[&[&str]]] = &[
        &[&["-lambda", "1.5"], &["-wave", "1.5"], &["-wavelength", "1.5"]],
        &[&["-energy", "8265.6133"], &["-lambda", "1.5"]],
        &[
            &["-mosaic", "0.3"],
            &["-mosaici", "0.3"],
            &["-mosaicity", "0.3"],
            &["-mosaic_spr", "0.3"],
            &["-mosaic_spread", "0.3"],
        ],
        &[&["-mosaic_dom", "7"], &["-mosaic_domains", "7"]],
        &[
            &["-detector_abs", "200"],
            &["-detector_absorb", "200"],
            &["-detector_absorption", "200"],
        ],
        &[
            &["-detector_abs", "inf"],
            &["-detector_abs", "0"],
            &["-detector_abs", "Inf"],
        ],
        &[&["-detector_thicksteps", "4"], &["-thicksteps", "4"]],
        &[&["-detpixels_f", "30"], &["-detpixels_x", "30"]],
        &[&["-detpixels_s", "30"], &["-detpixels_y", "30"]],
        &[&["-detpixels", "30"], &["-detpixels_f", "30", "-detpixels_s", "30"]],
        &[&["-detsize", "30"], &["-detsize_f", "30", "-detsize_s", "30"]],
        &[
            &["-samplesize", "0.1"],
            &["-sample_size", "0.1"],
            &["-xtalsize", "0.1"],
            &["-xtal_size", "0.1"],
            &["-sample_x", "0.1", "-sample_y", "0.1", "-sample_z", "0.1"],
        ],
        &[
            &["-sample_thick", "0.1"],
            &["-sample_x", "0.1"],
            &["-xtal_thick", "0.1"],
            &["-xtal_x", "0.1"],
        ],
        &[
            &["-sample_width", "0.1"],
            &["-sample_y", "0.1"],
            &["-width", "0.1"],
            &["-xtal_width", "0.1"],
            &["-xtal_y", "0.1"],
        ],
        &[
            &["-sample_heigh", "0.1"],
            &["-sample_height", "0.1"],
            &["-sample_z", "0.1"],
            &["-heigh", "0.1"],
            &["-height", "0.1"],
            &["-xtal_heigh", "0.1"],
            &["-xtal_height", "0.1"],
            &["-xtal_z", "0.1"],
        ],
        &[&["-binary_spots"], &["-tophat_spots"]],
        &[&["-floatfile", "f"], &["-floatimage", "f"]],
        &[&["-intfile", "f"], &["-intimage", "f"]],
        &[&["-noisefile", "f"], &["-noiseimage", "f"]],
        &[&["-pgmfile", "f"], &["-pgmimage", "f"]],
        &[&["-trace_pixel", "3", "4"], &["-dump_pixel", "3", "4"]],
        &[&["-N", "4"], &["-Na", "4", "-Nb", "4", "-Nc", "4"], &["-N", "4.9"]],
        &[&["-divsteps", "5"], &["-hdivsteps", "5", "-vdivsteps", "5"]],
        &[&["-divergence", "0.2"], &["-hdivrange", "0.2", "-vdivrange", "0.2"]],
        &[&["-pix0_vector", "1", "2", "3"], &["-pix0_vector_mm", "1", "2", "3"]],
        &[
            &["-density", "1.2"],
            &["-sample_den", "1.2"],
            &["-sample_density", "1.2"],
        ],
        &[&["-thick", "0.2"], &["-thickness", "0.2"]],
        &[&["-MW", "20"], &["-molec", "20"], &["-molecular_weight", "20"]],
        &[
            &[],
            &["-stolout", "x"],
            &["-coherent"],
            &["-density", "1"],
            &["-thick", "0.1"],
            &["-molecules", "0"],
            &["-MW", "18"],
            &["-molec", "18"],
            &["-molecular_weight", "18"],
            &["-engine", "cpu"],
            &["-round_div"],
            &["-square_xtal"],
            &["-progress"],
        ],
    ];
    for group in groups {
        let parse = |a: &[&str]| -> SimConfig {
            match parse_args(a) {
                Ok(Parsed::Run(c, _)) => *c,
                other => panic!("{a:?}: {other:?}"),
            }
        };
        let first = parse(group[0]);
        for other in &group[1..] {
            let c = parse(other);
            if group[0] == ["-energy", "8265.6133"] {
                assert!((first.beam.lambda0 - c.beam.lambda0).abs() < 1e-18);
            } else {
                assert_eq!(first, c, "{:?} vs {other:?}", group[0]);
            }
        }
    }
}

#[test]
fn matrix_aliases_read_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("A.mat");
    std::fs::write(&p, "1 2 3\n4 5 6\n7 8 9\n").unwrap();
    let p = p.to_str().unwrap();
    let a = cfg(&["-mat", p]);
    let b = cfg(&["-matrix", p]);
    assert_eq!(a, b);
    assert_eq!(
        a.crystal.matrix,
        Some([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    );
    // Only the last -mat is read, as in C.
    let c = cfg(&["-mat", "/nonexistent/first.mat", "-mat", p]);
    assert_eq!(c.crystal.matrix, a.crystal.matrix);
    assert!(matches!(
        err(&["-mat", "/nonexistent/x.mat"]),
        Error::Io { .. } | Error::Parse { .. }
    ));
    assert!(matches!(
        err(&["-sourcefile", "/nonexistent/s.txt"]),
        Error::Io { .. } | Error::Parse { .. }
    ));
}

#[test]
fn unknown_flags_are_errors() {
    for bad in [
        "-source_distance",
        "-lambd",
        "-hdiv",
        "-dispstep",
        "-custom",
        "--lambda",
        "-polarization",
        "-Nabc",
        "-",
    ] {
        match err(&["-N", "1", bad, "3"]) {
            Error::UnknownFlag(f) => assert_eq!(f, bad),
            e => panic!("{bad}: {e:?}"),
        }
    }
    let msg = err(&["-bogus"]).to_string();
    assert!(msg.contains("-bogus"), "{msg}");
    // A stray value names the flag before it.
    assert_flag_err(&["-distance", "100", "200"], "-distance", "'200'");
    assert_flag_err(&["-nonoise", "-5"], "-nonoise", "'-5'");
    assert!(matches!(err(&["stray"]), Error::UnknownFlag(f) if f == "stray"));
}

#[test]
fn missing_values_are_errors() {
    assert_flag_err(&["-distance"], "-distance", "found none");
    assert_flag_err(&["-lambda", "-N", "5"], "-lambda", "'-N'");
    assert_flag_err(&["-roi", "1", "2", "3"], "-roi", "4 values");
    assert_flag_err(&["-fdet_vector", "1", "0"], "-fdet_vector", "3 values");
    assert_flag_err(&["-printout_pixel", "1"], "-printout_pixel", "2 values");
    assert_flag_err(&["-hkl", "-mosflm"], "-hkl", "'-mosflm'");
    assert_flag_err(&["-detector_abs"], "-detector_abs", "found none");
    assert_flag_err(&["-img"], "-img", "found none");
}

#[test]
fn malformed_values_are_errors() {
    assert_flag_err(&["-distance", "abc"], "-distance", "'abc'");
    assert_flag_err(&["-distance", "0"], "-distance", "'0'");
    assert_flag_err(&["-lambda", "NaN"], "-lambda", "'NaN'");
    assert_flag_err(&["-lambda", "0"], "-lambda", "> 0");
    assert_flag_err(&["-lambda", "-1"], "-lambda", "'-1'");
    assert_flag_err(&["-energy", "0"], "-energy", "'0'");
    assert_flag_err(&["-energy", "-9000"], "-energy", "'-9000'");
    assert_flag_err(&["-pixel", "0"], "-pixel", "'0'");
    assert_flag_err(&["-pixel", "-0.1"], "-pixel", "'-0.1'");
    assert_flag_err(&["-detsize", "0"], "-detsize", "'0'");
    assert_flag_err(&["-detpixels", "-5"], "-detpixels", "'-5'");
    assert_flag_err(&["-detpixels_s", "ten"], "-detpixels_s", "'ten'");
    assert_flag_err(&["-N", "x"], "-N", "'x'");
    assert_flag_err(&["-N", "inf"], "-N", "'inf'");
    assert_flag_err(&["-phi", "inf"], "-phi", "'inf'");
    assert_flag_err(&["-phi", "10deg"], "-phi", "'10deg'");
    assert_flag_err(&["-seed", "99999999999"], "-seed", "'99999999999'");
    assert_flag_err(&["-roi", "0", "1", "y", "3"], "-roi", "'y'");
    assert_flag_err(&["-pivot", "detector"], "-pivot", "'detector'");
    assert_flag_err(&["-detector_abs", "-3"], "-detector_abs", "'-3'");
    assert_flag_err(&["-detector_abs", "thick"], "-detector_abs", "'thick'");
    assert_flag_err(&["-beam_vector", "0", "0", "0"], "-beam_vector", "zero");
    assert_flag_err(&["-twotheta_axis", "0", "nan", "1"], "-twotheta_axis", "'nan'");
    assert_flag_err(&["-engine", "cuda"], "-engine", "'cuda'");
    assert_flag_err(&["-fusion", "maybe"], "-fusion", "'maybe'");
    assert_flag_err(&["-precision", "f16"], "-precision", "'f16'");
    assert_flag_err(&["-memory_mb", "0"], "-memory_mb", "'0'");
    assert_flag_err(&["-memory_mb", "-4"], "-memory_mb", "'-4'");
    assert_flag_err(&["-nthreads", "0"], "-nthreads", "'0'");
    assert_flag_err(&["-nthreads", "-2"], "-nthreads", "'-2'");
    // The error text names the flag.
    let msg = err(&["-distance", "abc"]).to_string();
    assert!(msg.contains("-distance") && msg.contains("abc"), "{msg}");
}

#[test]
fn integer_values_truncate_like_atoi() {
    let c = cfg(&["-N", "3.7", "-phisteps", "-2.9", "-detpixels", "100.6", "-seed", "12.9"]);
    assert_eq!(c.crystal.na, 3.0);
    assert_eq!(c.crystal.phisteps, Some(-2));
    assert_eq!(c.detector.fpixels, Some(100));
    assert_eq!(c.output.seed, Some(12));
    // 0 pixels means "not given" in C; 0 or negative oversample means automatic.
    let c = cfg(&["-detpixels", "0", "-oversample", "0"]);
    assert_eq!((c.detector.fpixels, c.sampling.oversample), (None, None));
    assert_eq!(cfg(&["-oversample", "-1"]).sampling.oversample, None);
    assert_eq!(cfg(&["-oversample", "4"]).sampling.oversample, Some(4));
    // C turns N ≤ 0 into 1 silently; here it is an error naming the flag
    for (flag, value) in [("-N", "0"), ("-Nb", "-3"), ("-Na", "0.5")] {
        let e = parse_args(&[flag, value]).unwrap_err();
        assert!(e.to_string().contains(flag), "{e}");
    }
    assert_eq!(cfg(&["-Nc", "7"]).crystal.nc, 7.0);
}

#[test]
fn pivot_side_effects_follow_argv_order() {
    let p = |a: &[&str]| cfg(a).detector.pivot;
    assert_eq!(p(&[]), Pivot::Beam);
    assert_eq!(p(&["-close_distance", "100"]), Pivot::Sample);
    assert_eq!(p(&["-close_distance", "100", "-distance", "100"]), Pivot::Beam);
    assert_eq!(p(&["-Xbeam", "1", "-Yclose", "2"]), Pivot::Sample);
    assert_eq!(p(&["-Xclose", "1", "-Ybeam", "2"]), Pivot::Beam);
    assert_eq!(p(&["-ORGY", "10"]), Pivot::Sample);
    assert_eq!(p(&["-twotheta", "10"]), Pivot::Sample);
    assert_eq!(p(&["-twotheta", "10", "-pivot", "beam"]), Pivot::Beam);
    assert_eq!(p(&["-pivot", "sample"]), Pivot::Sample);
    assert_eq!(p(&["-pivot", "SAMPLE", "-mosflm"]), Pivot::Beam);
    assert_eq!(p(&["-xds"]), Pivot::Sample);
    assert_eq!(p(&["-xds", "-distance", "50"]), Pivot::Beam);
    assert_eq!(p(&["-pivot", "sample", "-dials"]), Pivot::Beam);
    assert_eq!(p(&["-pivot", "sample", "-adxv"]), Pivot::Beam);
    assert_eq!(p(&["-pivot", "sample", "-denzo"]), Pivot::Beam);
    // Vector flags leave the pivot alone.
    assert_eq!(p(&["-pivot", "sample", "-fdet_vector", "0", "0", "1"]), Pivot::Sample);
}

#[test]
fn conventions_and_custom_vectors() {
    let c = cfg(&["-fdet_vector", "0", "0", "1", "-mosflm"]);
    assert_eq!(c.detector.convention, Convention::Mosflm);
    // The stored vector survives a later convention flag (setup decides what it means).
    assert_eq!(c.detector.custom.fdet, Some([0.0, 0.0, 1.0]));
    let c = cfg(&["-mosflm", "-beam_vector", "0", "0", "1"]);
    assert_eq!(c.detector.convention, Convention::Custom);
    assert_eq!(c.detector.custom.beam, Some([0.0, 0.0, 1.0]));
    for (flag, conv) in [
        ("-mosflm", Convention::Mosflm),
        ("-xds", Convention::Xds),
        ("-adxv", Convention::Adxv),
        ("-denzo", Convention::Denzo),
        ("-dials", Convention::Dials),
    ] {
        assert_eq!(cfg(&[flag]).detector.convention, conv);
    }
    let c = cfg(&["-pix0_vector", "0.1", "0.2", "0.3"]);
    assert_eq!(c.detector.convention, Convention::Custom);
    assert_eq!(c.detector.custom, Default::default());
    let c = cfg(&[
        "-sdet_vector",
        "0",
        "-1",
        "0",
        "-odet_vector",
        "1",
        "0",
        "0",
        "-polar_vector",
        "0",
        "0",
        "1",
    ]);
    assert_eq!(c.detector.custom.sdet, Some([0.0, -1.0, 0.0]));
    assert_eq!(c.detector.custom.odet, Some([1.0, 0.0, 0.0]));
    assert_eq!(c.detector.custom.polar, Some([0.0, 0.0, 1.0]));
}

#[test]
fn twotheta_axis_does_not_clobber_twotheta() {
    let c = cfg(&["-twotheta", "5", "-twotheta_axis", "0", "0", "-1"]);
    assert_close(c.detector.twotheta, 5.0 * DEG);
    assert_eq!(c.detector.custom.twotheta_axis, Some([0.0, 0.0, -1.0]));
    assert_eq!(c.detector.convention, Convention::Custom);
    let c = cfg(&["-distance", "100", "-twotheta_axis", "7", "0", "0"]);
    assert_eq!(c.detector.twotheta, 0.0);
    assert_eq!(c.detector.pivot, Pivot::Sample);
}

#[test]
fn order_effects() {
    // -polar after -nopolar re-enables polarization; -nopolar after -polar wins.
    let c = cfg(&["-nopolar", "-polar", "0.9"]);
    assert!(!c.beam.nopolar);
    assert_eq!(c.beam.polarization, 0.9);
    let c = cfg(&["-polar", "0.9", "-nopolar"]);
    assert!(c.beam.nopolar);
    assert_eq!(c.beam.polarization, 0.9);
    // -detector_abs inf zeroes the thickness; a later -detector_thick sets it again.
    let c = cfg(&["-detector_thick", "100", "-detector_abs", "inf"]);
    assert_eq!((c.detector.mu, c.detector.thickness), (Some(0.0), 0.0));
    let c = cfg(&["-detector_abs", "inf", "-detector_thick", "100"]);
    assert_eq!(c.detector.mu, Some(0.0));
    assert_close(c.detector.thickness, 100e-6);
    let c = cfg(&["-detector_thick", "100", "-detector_abs", "250"]);
    assert_close(c.detector.mu.unwrap(), 1.0 / 250e-6);
    assert_close(c.detector.thickness, 100e-6);
    // Later values win.
    let c = cfg(&[
        "-lambda",
        "2",
        "-energy",
        "12398.42",
        "-distance",
        "50",
        "-distance",
        "70",
    ]);
    assert_close(c.beam.lambda0, 1e-10);
    assert_close(c.detector.distance, 0.07);
    assert_close(cfg(&["-energy", "12398.42", "-lambda", "2"]).beam.lambda0, 2e-10);
    let c = cfg(&["-detpixels", "100", "-detpixels_s", "50"]);
    assert_eq!((c.detector.fpixels, c.detector.spixels), (Some(100), Some(50)));
    let c = cfg(&["-interpolate", "-nointerpolate"]);
    assert_eq!(c.crystal.interpolate, Some(false));
    let c = cfg(&["-round_xtal", "-gauss_xtal"]);
    assert_eq!(c.crystal.shape, CrystalShape::Gauss);
    assert!(!cfg(&["-round_div", "-square_div"]).beam.round_div);
    assert!(!cfg(&["-progress", "-noprogress"]).output.progress);
    assert!(cfg(&["-noprogress", "-progress"]).output.progress);
}

#[test]
fn output_switches() {
    let o = |a: &[&str]| cfg(a).output;
    // the CBF images only when asked for; -nonoise drops the SMV noise image only
    assert_eq!((o(&[]).cbffile, o(&[]).cbf_noisefile), (None, None));
    let c = o(&["-cbffile", "i.cbf", "-cbf_noisefile", "n.cbf", "-nonoise"]);
    assert_eq!(c.cbffile, Some(PathBuf::from("i.cbf")));
    assert_eq!(c.cbf_noisefile, Some(PathBuf::from("n.cbf")));
    assert_eq!(c.noisefile, None);
    assert_eq!(o(&[]).noisefile, Some(PathBuf::from("noiseimage.img")));
    assert_eq!(o(&["-nonoise"]).noisefile, None);
    assert_eq!(o(&["-noisefile", "n.img", "-nonoise"]).noisefile, None);
    assert_eq!(
        o(&["-nonoise", "-noisefile", "n.img"]).noisefile,
        Some(PathBuf::from("n.img"))
    );
    assert_eq!(o(&["-nopgm"]).pgmfile, None);
    assert_eq!(
        o(&["-nopgm", "-pgmscale", "2"]).pgmfile,
        Some(PathBuf::from("image.pgm"))
    );
    assert_eq!(o(&["-nopgm", "-pgmscale", "2"]).pgmscale, Some(2.0));
    assert_eq!(
        o(&["-nopgm", "-pgmfile", "p.pgm"]).pgmfile,
        Some(PathBuf::from("p.pgm"))
    );
    assert_eq!(o(&["-pgmfile", "p.pgm", "-nopgm"]).pgmfile, None);
    let out = o(&["-printout_pixel", "10", "20", "-trace_pixel", "30", "40"]);
    assert!(out.printout);
    assert_eq!(out.printout_pixel, Some((10, 20)));
    assert_eq!(out.trace_pixel, Some((30, 40)));
    assert!(o(&["-printout"]).printout);
    assert!(!o(&["-trace_pixel", "1", "2"]).printout);
    let c = cfg(&["-seed", "-7", "-mosaic_seed", "5", "-misset_seed", "0"]);
    assert_eq!(c.output.seed, Some(-7));
    assert_eq!(c.crystal.mosaic_seed, 5);
    assert_eq!(c.crystal.misset_seed, Some(0));
    let c = cfg(&["-hkl", "P1.hkl", "-hkl", "dir/P2.hkl"]);
    assert_eq!(c.crystal.hkl, HklSource::File(PathBuf::from("dir/P2.hkl")));
}

#[test]
fn run_options() {
    let (_, o) = run(&[
        "-engine",
        "cpu",
        "-precision",
        "f32",
        "-memory_mb",
        "512",
        "-nthreads",
        "3",
    ]);
    assert_eq!(
        o,
        RunOptions {
            engine: EngineKind::Cpu,
            precision: Some(Precision::F32),
            fusion: None,
            memory_budget_bytes: Some(512 << 20),
            threads: Some(3),
            allow_nonfinite: false,
            gpu: None,
        }
    );
    assert_eq!(run(&[]).1.threads, None);
    assert!(run(&["-allow_nonfinite"]).1.allow_nonfinite);
    let (_, o) = run(&["-precision", "f32", "-precision", "f64"]);
    assert_eq!(o.precision, Some(Precision::F64));
    let (_, o) = run(&["-engine", "wgpu", "-fusion", "off"]);
    assert_eq!((o.engine, o.fusion), (EngineKind::Wgpu, Some(false)));
    assert_eq!(o.engine().unwrap(), Engine::Wgpu { fusion: false });
    let (_, o) = run(&["-engine", "wgpu", "-fusion", "on", "-precision", "f32"]);
    assert_eq!(o.engine().unwrap(), Engine::Wgpu { fusion: true });
    let (_, o) = run(&["-engine", "wgpu", "-precision", "f64"]);
    assert!(o.engine().unwrap_err().to_string().contains("engine wgpu"));
    let (_, o) = run(&[]);
    assert_eq!(o.engine().unwrap(), Engine::default());
}

#[test]
fn curved_det_and_flags_without_values() {
    // C ignores -curved_det when it is the last argument; the port does not.
    assert!(cfg(&["-curved_det"]).detector.curved);
    let c = cfg(&[
        "-point_pixel",
        "-oversample_thick",
        "-oversample_polar",
        "-oversample_omega",
    ]);
    assert!(c.detector.point_pixel);
    assert!(c.sampling.oversample_thick && c.sampling.oversample_polar);
    assert!(c.sampling.oversample_omega);
    assert_eq!(c.sampling.oversample, None);
}

/// Writes an SMV file: 512-byte header with `keys`, then `w·h` native-endian u16 values.
fn write_smv(path: &Path, keys: &str, w: usize, h: usize, data: &[u16]) {
    let mut header = format!(
        "{{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\n\
         SIZE1={w};\nSIZE2={h};\n{keys}}}\x0c"
    );
    assert!(header.len() <= 512);
    header.push_str(&" ".repeat(512 - header.len()));
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(header.as_bytes()).unwrap();
    for &v in data.iter().take(w * h) {
        f.write_all(&v.to_ne_bytes()).unwrap();
    }
}

#[test]
fn mask_and_img_headers() {
    let dir = tempfile::tempdir().unwrap();
    let mask = dir.path().join("mask.img");
    let img = dir.path().join("img.img");
    let data: Vec<u16> = (0..12).map(|i| (i % 3) as u16).collect();
    write_smv(
        &mask,
        "PIXEL_SIZE=0.2;\nDISTANCE=150;\nWAVELENGTH=1.5;\nBEAM_CENTER_X=0.3;\nBEAM_CENTER_Y=0.5;\n\
         XDS_ORGX=7;\nXDS_ORGY=8;\nPHI=11;\nOSC_RANGE=0.5;\nTWOTHETA=20;\n",
        4,
        3,
        &data,
    );
    write_smv(
        &img,
        "PIXEL_SIZE=0.1;\nWAVELENGTH=2.0;\nBEAM_CENTER_Y=0.5;\nCLOSE_DISTANCE=90;\n",
        6,
        5,
        &[0; 30],
    );
    let (m, i) = (mask.to_str().unwrap(), img.to_str().unwrap());

    // The mask alone.
    let c = cfg(&["-mask", m]);
    let d = &c.detector;
    assert_eq!((d.fpixels, d.spixels), (Some(4), Some(3)));
    assert_close(d.pixel_size, 0.2e-3);
    assert_close(d.detsize_f, 0.8e-3);
    assert_close(d.detsize_s, 0.6e-3);
    assert_close(d.distance, 0.15);
    assert_close(c.beam.lambda0, 1.5e-10);
    assert_close(d.xbeam.unwrap(), 0.3e-3);
    assert_close(d.ybeam.unwrap(), 0.6e-3 - 0.5e-3); // flipped for a mask
    assert_eq!((d.orgx, d.orgy), (Some(7.0), Some(8.0)));
    assert_close(c.crystal.phi0, 11.0 * DEG);
    assert_close(c.crystal.osc.unwrap(), 0.5 * DEG);
    assert_eq!(d.twotheta, 0.0); // TWOTHETA is ignored, as in C
    assert_eq!(d.pivot, Pivot::Beam); // headers do not touch the pivot
    assert_eq!(d.mask.as_deref(), Some(&data[..]));

    // -img is applied after -mask whatever the order on the command line.
    for args in [["-mask", m, "-img", i], ["-img", i, "-mask", m]] {
        let c = cfg(&args);
        let d = &c.detector;
        assert_eq!((d.fpixels, d.spixels), (Some(6), Some(5)));
        assert_close(d.pixel_size, 0.1e-3);
        assert_close(d.detsize_s, 0.5e-3);
        assert_close(c.beam.lambda0, 2e-10);
        assert_close(d.ybeam.unwrap(), 0.5e-3); // not flipped for -img
        assert_close(d.xbeam.unwrap(), 0.3e-3); // from the mask
                                                // "DISTANCE" matches CLOSE_DISTANCE last (C's ValueOf).
        assert_close(d.distance, 0.09);
        assert_close(d.close_distance.unwrap(), 0.09);
        assert_eq!(d.mask.as_deref(), Some(&data[..]));
    }

    // Command-line flags override the headers, wherever they stand.
    let c = cfg(&["-lambda", "3", "-mask", m, "-detpixels", "9", "-img", i, "-Ybeam", "1"]);
    assert_close(c.beam.lambda0, 3e-10);
    assert_eq!(c.detector.fpixels, Some(9));
    assert_close(c.detector.ybeam.unwrap(), 1e-3);
    assert_close(c.detector.pixel_size, 0.1e-3);

    // Errors name the file.
    let missing = dir.path().join("nope.img");
    let e = err(&["-mask", missing.to_str().unwrap()]);
    assert!(e.to_string().contains("nope.img"), "{e}");
    let bad = dir.path().join("bad.img");
    std::fs::write(&bad, vec![b'x'; 600]).unwrap();
    let e = err(&["-img", bad.to_str().unwrap()]);
    assert!(e.to_string().contains("bad.img"), "{e}");
}

#[test]
fn golden_mask_file_header() {
    let Some(dir) = golden_dir() else { return };
    let mask = dir.join("inputs/mask.img");
    let m = mask.to_str().unwrap();
    let c = cfg(&["-mask", m, "-distance", "80"]);
    let d = &c.detector;
    assert_eq!((d.fpixels, d.spixels), (Some(128), Some(128)));
    assert_close(d.pixel_size, 1e-4);
    assert_close(d.detsize_f, 128.0 * 1e-4);
    assert_close(d.distance, 0.08); // the flag beats the header's 100 mm
    assert_eq!(d.xbeam, None);
    assert_eq!(d.mask.as_ref().map(Vec::len), Some(128 * 128));
    // With the header only, DISTANCE applies.
    assert_close(cfg(&["-mask", m]).detector.distance, 0.1);
    // An -img with the same file: same geometry, no mask.
    let c = cfg(&["-img", m]);
    assert_eq!(c.detector.mask, None);
    assert_eq!(c.detector.fpixels, Some(128));
}

#[test]
fn usage_lists_every_spelling() {
    let text = usage();
    let words: std::collections::HashSet<&str> = text
        .split(|ch: char| ch.is_whitespace() || ",()|".contains(ch))
        .collect();
    for (name, _) in flags::FLAGS {
        assert!(words.contains(name), "usage() does not list {name}");
    }
}

#[test]
fn table_has_no_duplicates() {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in flags::FLAGS {
        assert!(seen.insert(*name), "{name} listed twice");
        assert!(name.starts_with('-'));
        assert!(name.parse::<f64>().is_err());
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn token() -> impl Strategy<Value = String> {
        let flag =
            proptest::sample::select(flags::FLAGS.iter().map(|f| f.0).collect::<Vec<_>>()).prop_map(String::from);
        prop_oneof![
            4 => flag,
            2 => any::<f64>().prop_map(|v| v.to_string()),
            2 => (-1000i64..1000).prop_map(|v| v.to_string()),
            1 => proptest::sample::select(vec![
                "inf", "-inf", "NaN", "random", "beam", "sample", "cpu", "f32", "", "-", "1e999",
                "0", "-0", "1e-320", "9223372036854775808", "-cell", "x.hkl",
            ])
            .prop_map(String::from),
            1 => "\\PC{0,8}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn random_argument_lists_never_panic(args in proptest::collection::vec(token(), 0..14)) {
            // File-reading flags get paths that do not exist: that must be an error, not a panic.
            let _ = parse_args(&args);
        }
    }
}

#[test]
fn apply_args_equals_appending_the_flags() {
    // split points through command lines with side effects (pivot, noise/pgm switches, -mat)
    let dir = tempfile::tempdir().unwrap();
    let mat = dir.path().join("a.mat");
    std::fs::write(&mat, "0.01 0 0\n0 0.01 0\n0 0 0.01\n").unwrap();
    let mat = mat.to_str().unwrap();
    let lines: [&[&str]; 4] = [
        &[
            "-cell",
            "100",
            "-distance",
            "80",
            "-close_distance",
            "90",
            "-Xbeam",
            "5",
            "-nonoise",
            "-pgmscale",
            "2",
        ],
        &[
            "-mat", mat, "-lambda", "1.2", "-misset", "1", "2", "3", "-phi", "4", "-seed", "5", "-engine", "cpu",
        ],
        &[
            "-cell",
            "50",
            "60",
            "70",
            "-nopgm",
            "-noisefile",
            "n.img",
            "-twotheta",
            "5",
            "-N",
            "3",
            "-energy",
            "9000",
        ],
        &[
            "-cell",
            "100",
            "-xds",
            "-ORGX",
            "10",
            "-detector_abs",
            "inf",
            "-memory_mb",
            "64",
            "-mosaic_seed",
            "9",
        ],
    ];
    for line in lines {
        let whole = run(line);
        for k in 0..=line.len() {
            // only split between flags
            if k < line.len() && !line[k].starts_with('-') || k < line.len() && line[k].parse::<f64>().is_ok() {
                continue;
            }
            let (head, tail) = line.split_at(k);
            if head.is_empty() {
                continue;
            }
            let base = run(head);
            let split = apply_args(&base.0, base.1, tail).unwrap_or_else(|e| panic!("{line:?} at {k}: {e}"));
            assert_eq!(split, whole, "{line:?} split at {k}");
        }
    }
    // -img/-mask and -h are refused
    let base = run(&["-cell", "100"]);
    assert!(apply_args(&base.0, base.1.clone(), &["-mask", "m.img"]).is_err());
    assert!(apply_args(&base.0, base.1.clone(), &["-h"]).is_err());
    assert_flag_err_apply(&base, &["-lambda", "-1"], "-lambda", "must be > 0");
}

fn assert_flag_err_apply(base: &(SimConfig, RunOptions), args: &[&str], flag: &str, text: &str) {
    match apply_args(&base.0, base.1.clone(), args) {
        Err(Error::Flag { flag: f, message }) => {
            assert_eq!(f, flag);
            assert!(message.contains(text), "{message}");
        }
        other => panic!("expected a flag error, got {other:?}"),
    }
}

/// Every flag the parser accepts belongs to one section of `apply` (the sections' matches end
/// in a catch-all, so the compiler cannot check this): with four dummy values, exactly one
/// section takes it, or refuses its values.
#[test]
fn every_flag_belongs_to_exactly_one_section() {
    for &(flag, opt) in super::flags::FLAGS {
        let values = vec!["1"; 4];
        let it = super::Item { flag, opt, values };
        let v = super::Values {
            flag,
            values: &it.values,
        };
        let taken = super::sections::SECTIONS
            .iter()
            .filter(|section| !matches!(section(&mut super::State::new(), &it, &v), Ok(false)))
            .count();
        assert_eq!(taken, 1, "{flag} is taken by {taken} sections");
    }
}

#[test]
fn stol_tables_name_their_abscissa_and_the_sample_its_amount() {
    use crate::io::stol::StolUnits;
    for (flag, units) in [
        ("-stol", StolUnits::Stol),
        ("-4stol", StolUnits::FourStol),
        ("-Q", StolUnits::Q),
    ] {
        let c = cfg(&[
            flag,
            "w.stol",
            "-thick",
            "0.5",
            "-density",
            "0.92",
            "-MW",
            "20",
            "-molecules",
            "1e18",
        ]);
        let a = &c.crystal.amorphous;
        assert_eq!(a.table, Some((std::path::PathBuf::from("w.stol"), units)));
        assert_eq!(
            (a.thickness, a.density, a.molecular_weight, a.molecules),
            (0.5e-3, 0.92e6, 20.0, 1e18)
        );
    }
    assert_eq!(cfg(&[]).crystal.amorphous.table, None);
    for bad in [
        &["-thick", "0"][..],
        &["-density", "-1"],
        &["-molecules", "-5"],
        &["-MW", "x"],
    ] {
        let e = err(bad).to_string();
        assert!(e.contains(bad[0]), "{bad:?}: {e}");
    }
}
