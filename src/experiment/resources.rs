//! Memory a run will need, estimated from the resolved counts before anything of that size is
//! allocated. Sizes that cannot be represented, or that the allocator refuses now, are errors
//! naming the flag responsible, instead of an abort (SIGABRT) halfway through the run.
//!
//! The estimate covers every allocation that scales with user input: the sources, the mosaic
//! domains, the orientation table (sources × φ steps × domains, on the host and once per worker
//! on the device), the working set of the smallest pixel chunk (one pixel's sub-pixel samples
//! × sensor layers, times the orientations evaluated together) and the image buffers. The
//! total is tried with [`Vec::try_reserve_exact`] and released at once: with Linux's default
//! overcommit this refuses sizes beyond RAM + swap or a `ulimit -v`, which would otherwise
//! abort later. It is a check, not a reservation: memory taken by others meanwhile can still
//! run out.

use crate::base::error::{Error, Result};
use crate::base::vec3::Mat3;
use crate::experiment::Source;

/// Bytes assumed per element of a `[samples, orientations]` intermediate, summed over the
/// tensors alive at once (conservative, f64).
pub(crate) const BYTES_PER_ELEMENT: usize = 8 * 24;

/// Bytes per detector pixel alive at once: the f32 image plus one encoded output copy or the
/// u32 list of rendered pixels.
const PIXEL_BYTES: usize = 8;
/// Bytes per orientation on the host (3×3 coefficients, 3 offsets, the source index).
const ORIENTATION_HOST_BYTES: usize = 13 * 8;
/// Bytes per orientation uploaded by each worker (coefficients and offsets, f64).
const ORIENTATION_DEVICE_BYTES: usize = 12 * 8;

/// The counts a run was resolved to.
#[derive(Debug, Clone, Copy)]
pub struct Demand {
    /// Detector pixels (fast × slow).
    pub pixels: usize,
    /// Sources: the file's rows, or divergence points × wavelengths before elliptical trimming.
    pub sources: usize,
    /// Whether the sources come from `-sourcefile`.
    pub source_file: bool,
    /// Divergence points (h × v) and wavelengths, for naming the flag.
    pub divergence_points: usize,
    pub wavelengths: usize,
    pub phi_steps: usize,
    pub domains: usize,
    /// Sub-pixels per axis, and whether the user gave it (else automatic).
    pub oversample: usize,
    pub oversample_given: bool,
    pub layers: usize,
    /// Whether a chunk evaluates all orientations at once (the `-oversample_*` factors and
    /// interpolation need the whole running sum).
    pub all_orientations: bool,
    /// Worker threads, each with its own chunk and device scene.
    pub threads: usize,
}

/// One estimated allocation: the flag to blame, what it is, its size (`None`: not representable).
struct Term {
    flag: &'static str,
    what: String,
    bytes: Option<usize>,
}

/// Whether `bytes` can be allocated right now (the memory is released at once).
pub fn can_allocate(bytes: usize) -> bool {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).is_ok()
}

/// A byte count for messages.
fn size(bytes: Option<usize>) -> String {
    match bytes {
        Some(b) if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        Some(b) => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        None => "more bytes than this machine can address".to_string(),
    }
}

fn mul(factors: &[usize]) -> Option<usize> {
    factors.iter().try_fold(1usize, |acc, &f| acc.checked_mul(f))
}

/// Checks that the memory `d` implies can be represented and allocated; the error names the
/// flag behind the largest (or the unrepresentable) part.
pub fn check(d: &Demand) -> Result<()> {
    let terms = terms(d);
    for t in &terms {
        if t.bytes.is_none() {
            return Err(Error::flag(
                t.flag,
                format!("{} cannot be represented: more than this machine can address", t.what),
            ));
        }
    }
    let total = terms.iter().try_fold(0usize, |acc, t| acc.checked_add(t.bytes?));
    if total.is_some_and(can_allocate) {
        return Ok(());
    }
    let worst = terms.iter().max_by_key(|t| t.bytes).expect("there are always terms");
    Err(Error::flag(
        worst.flag,
        format!(
            "{}: {} needed ({} for the run in all), which cannot be allocated",
            worst.what,
            size(worst.bytes),
            size(total)
        ),
    ))
}

fn terms(d: &Demand) -> Vec<Term> {
    let mut out = Vec::new();
    let source_flag = if d.source_file {
        "-sourcefile"
    } else if d.wavelengths > d.divergence_points {
        "-dispsteps (or -dispersion)"
    } else {
        crate::experiment::DIVERGENCE_FLAGS
    };
    out.push(Term {
        flag: source_flag,
        what: format!("{} sources", d.sources),
        bytes: mul(&[d.sources, std::mem::size_of::<Source>()]),
    });
    out.push(Term {
        flag: crate::experiment::MOSAIC_DOMAINS_FLAGS,
        what: format!("{} mosaic domains", d.domains),
        bytes: mul(&[d.domains, std::mem::size_of::<Mat3>()]),
    });
    let orientations = mul(&[d.sources, d.phi_steps, d.domains]);
    let orientation_flag = if d.phi_steps >= d.domains && d.phi_steps >= d.sources {
        "-phisteps (or -osc, -phistep)"
    } else if d.domains >= d.sources {
        crate::experiment::MOSAIC_DOMAINS_FLAGS
    } else {
        source_flag
    };
    let per_orientation = ORIENTATION_DEVICE_BYTES
        .checked_mul(d.threads)
        .and_then(|b| b.checked_add(ORIENTATION_HOST_BYTES));
    out.push(Term {
        flag: orientation_flag,
        what: format!(
            "{} sources x {} phi steps x {} mosaic domains = {} orientations",
            d.sources,
            d.phi_steps,
            d.domains,
            orientations.map_or("too many".to_string(), |c| c.to_string())
        ),
        bytes: orientations.zip(per_orientation).and_then(|(c, b)| {
            c.checked_mul(b)?
                .checked_add(mul(&[d.phi_steps, d.domains, std::mem::size_of::<Mat3>()])?)
        }),
    });
    let samples = mul(&[d.layers, d.oversample, d.oversample]);
    let width = if d.all_orientations {
        orientations.map(|c| c.max(4))
    } else {
        Some(d.sources.max(4))
    };
    let (width_flag, width_what) = if d.all_orientations {
        (orientation_flag, "orientations")
    } else {
        (source_flag, "sources")
    };
    let (flag, auto) = if width.unwrap_or(usize::MAX) > samples.unwrap_or(usize::MAX) {
        (width_flag, String::new())
    } else if d.layers > d.oversample.saturating_mul(d.oversample) {
        ("-thicksteps", String::new())
    } else if d.oversample_given {
        ("-oversample", String::new())
    } else {
        (
            "-oversample",
            format!(
                " (chosen automatically: 3 × the crystal's size, from {} and -cell, over λ·distance/pixel, from -lambda or -energy, -distance and -pixel; give -oversample to override)",
                crate::experiment::N_FLAGS
            ),
        )
    };
    out.push(Term {
        flag,
        what: format!(
            "{os}x{os} sub-pixels{auto} x {} sensor layers = {} samples per pixel, evaluated for {} {width_what} together",
            d.layers,
            samples.map_or("too many".to_string(), |s| s.to_string()),
            width.map_or("too many".to_string(), |w| w.to_string()),
            os = d.oversample,
        ),
        bytes: samples
            .zip(width)
            .and_then(|(s, w)| mul(&[s, w, BYTES_PER_ELEMENT, d.threads])),
    });
    out.push(Term {
        flag: "-detpixels (or -detpixels_f, -detpixels_s)",
        what: format!("{} detector pixels", d.pixels),
        bytes: mul(&[d.pixels, PIXEL_BYTES]),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Demand {
        Demand {
            pixels: 64 * 64,
            sources: 1,
            source_file: false,
            divergence_points: 1,
            wavelengths: 1,
            phi_steps: 1,
            domains: 1,
            oversample: 2,
            oversample_given: true,
            layers: 1,
            all_orientations: false,
            threads: 2,
        }
    }

    fn flag_of(d: Demand) -> String {
        match check(&d) {
            Err(Error::Flag { flag, .. }) => flag,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ordinary_runs_pass() {
        check(&small()).unwrap();
    }

    #[test]
    fn impossible_sizes_name_their_flag() {
        // the allocator refuses these anywhere: far beyond any machine's memory
        let huge = 1usize << 50;
        assert_eq!(
            flag_of(Demand {
                oversample: 100_000,
                ..small()
            }),
            "-oversample"
        );
        assert_eq!(
            flag_of(Demand {
                oversample: 1 << 31,
                oversample_given: false,
                ..small()
            }),
            "-oversample"
        );
        assert_eq!(
            flag_of(Demand {
                phi_steps: huge,
                ..small()
            }),
            "-phisteps (or -osc, -phistep)"
        );
        assert_eq!(
            flag_of(Demand {
                domains: huge,
                ..small()
            }),
            crate::experiment::MOSAIC_DOMAINS_FLAGS
        );
        assert_eq!(
            flag_of(Demand {
                pixels: huge,
                ..small()
            }),
            "-detpixels (or -detpixels_f, -detpixels_s)"
        );
        assert_eq!(
            flag_of(Demand {
                layers: huge,
                ..small()
            }),
            "-thicksteps"
        );
        let divergence = Demand {
            sources: huge,
            divergence_points: huge,
            ..small()
        };
        assert_eq!(flag_of(divergence), crate::experiment::DIVERGENCE_FLAGS);
        let dispersion = Demand {
            sources: huge,
            wavelengths: huge,
            ..small()
        };
        assert_eq!(flag_of(dispersion), "-dispsteps (or -dispersion)");
    }

    #[test]
    fn unrepresentable_sizes_say_so() {
        let e = check(&Demand {
            oversample: usize::MAX / 2,
            ..small()
        })
        .unwrap_err();
        assert!(e.to_string().contains("cannot be represented"), "{e}");
        let e = check(&Demand {
            oversample: 100_000,
            ..small()
        })
        .unwrap_err();
        assert!(e.to_string().contains("cannot be allocated"), "{e}");
    }
}
