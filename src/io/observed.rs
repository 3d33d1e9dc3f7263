//! An observed (or simulated) detector image read back from any format nanobragg writes: SMV,
//! miniCBF or NeXus NXmx, told apart by the file's first bytes. For refinement against real
//! data, and for Python (`nanobragg.read_image`).

use crate::base::error::{Error, Result};
use std::path::Path;

/// The formats [`read_image`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// SMV (ADSC): `{\nHEADER_BYTES=…`, unsigned 16-bit pixels.
    Smv,
    /// miniCBF: `###CBF`, byte-offset compressed 32-bit pixels.
    Cbf,
    /// NeXus NXmx (HDF5): `/entry/instrument/detector/data`, one frame or a stack.
    Nexus,
}

impl ImageFormat {
    /// `smv`, `cbf` or `nexus`.
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Smv => "smv",
            ImageFormat::Cbf => "cbf",
            ImageFormat::Nexus => "nexus",
        }
    }
}

/// A detector image as stored: integer counts (ADU) per pixel, with the file's header.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedImage {
    pub format: ImageFormat,
    /// Frames (1 for SMV and CBF; a NeXus stack may hold several), slow and fast sizes.
    pub frames: usize,
    pub spixels: usize,
    pub fpixels: usize,
    /// Counts, frame by frame, fast-major within a frame (`slow·fpixels + fast`).
    pub counts: Vec<f64>,
    /// The header as (key, value) text pairs, in the file's order: SMV's `KEY=value;` lines,
    /// CBF's `# Key value` lines and MIME lines, NeXus's detector and beam values.
    pub header: Vec<(String, String)>,
}

impl ObservedImage {
    /// The header value of `key` (the last one, as C reads SMV headers).
    pub fn header_value(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Photons per pixel: counts minus the ADC offset `adc` (ADU; nanoBragg's `-adc`, 40 by
    /// default for its noise images, is not recorded in its headers), divided by the gain
    /// (ADU per photon; nanoBragg writes 1).
    pub fn photons(&self, adc: f64, gain: f64) -> Vec<f64> {
        self.counts.iter().map(|c| (c - adc) / gain).collect()
    }
}

/// The SMV, miniCBF or NeXus image at `path`, by its first bytes. Errors name the file: not
/// one of the three formats, or a malformed one.
pub fn read_image(path: &Path) -> Result<ObservedImage> {
    let mut magic = [0u8; 8];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        f.read(&mut magic).map_err(|e| Error::io(path, e))?
    };
    let magic = &magic[..n];
    if magic.starts_with(b"{\nHEADER") || magic.starts_with(b"{\r\nHEADE") {
        read_smv(path)
    } else if magic.starts_with(b"###CBF") {
        read_cbf(path)
    } else if magic.starts_with(b"\x89HDF\r\n\x1a\n") {
        read_nexus(path)
    } else {
        Err(Error::parse(
            path,
            None,
            "not an SMV, miniCBF or NeXus (HDF5) image: the file starts with neither '{\\nHEADER_BYTES', '###CBF' nor HDF5's signature",
        ))
    }
}

fn read_smv(path: &Path) -> Result<ObservedImage> {
    let (header, pixels) = super::smv::read_smv_u16(path)?;
    let pairs: Vec<(String, String)> = header
        .text
        .lines()
        .filter_map(|line| {
            let (k, v) = line.split_once('=')?;
            Some((k.trim().to_string(), v.trim().trim_end_matches(';').trim().to_string()))
        })
        .collect();
    let size = |key: &str| {
        pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    // read_smv_u16 checked the sizes (or C's DETECTOR_DIMENSIONS fallback)
    let (fpixels, spixels) = match (size("SIZE1").filter(|&s| s > 0), size("SIZE2")) {
        (Some(f), Some(s)) => (f, s),
        _ => {
            let d = size("DETECTOR_DIMENSIONS").unwrap_or(0);
            (d, d)
        }
    };
    Ok(ObservedImage {
        format: ImageFormat::Smv,
        frames: 1,
        spixels,
        fpixels,
        counts: pixels.into_iter().map(f64::from).collect(),
        header: pairs,
    })
}

fn read_cbf(path: &Path) -> Result<ObservedImage> {
    let cbf = super::cbf::read_cbf(path)?;
    let mut header = cbf.header_lines;
    header.extend(cbf.mime);
    Ok(ObservedImage {
        format: ImageFormat::Cbf,
        frames: 1,
        spixels: cbf.slow,
        fpixels: cbf.fast,
        counts: cbf.data.into_iter().map(f64::from).collect(),
        header,
    })
}

/// The NXmx values copied into the header: (key, dataset path).
const NEXUS_HEADER: [(&str, &str); 5] = [
    ("incident_wavelength", "entry/instrument/beam/incident_wavelength"),
    ("distance", "entry/instrument/detector/distance"),
    ("beam_center_x", "entry/instrument/detector/beam_center_x"),
    ("beam_center_y", "entry/instrument/detector/beam_center_y"),
    ("count_time", "entry/instrument/detector/count_time"),
];

fn read_nexus(path: &Path) -> Result<ObservedImage> {
    let bad = |e: rust_hdf5::Hdf5Error| Error::parse(path, None, format!("NeXus: {e}"));
    let file = rust_hdf5::H5File::open(path).map_err(bad)?;
    let data_path = super::nexus::writer::DATA.trim_start_matches('/');
    let data = file
        .dataset(data_path)
        .map_err(|e| Error::parse(path, None, format!("NeXus: no {data_path} ({e})")))?;
    let (frames, spixels, fpixels) = match data.shape()[..] {
        [s, f] => (1, s, f),
        [n, s, f] => (n, s, f),
        ref other => {
            return Err(Error::parse(
                path,
                None,
                format!("NeXus: {data_path} has shape {other:?}, not (slow, fast) or (frames, slow, fast)"),
            ))
        }
    };
    // counts are integers (NXmx int32); other writers may store floats
    let counts = match data.read_numeric_as::<i64>() {
        Ok(ints) => ints.into_iter().map(|c| c as f64).collect(),
        Err(_) => data.read_numeric_as::<f64>().map_err(bad)?,
    };
    let mut header = vec![("data".to_string(), data_path.to_string())];
    for (key, at) in NEXUS_HEADER {
        let Ok(ds) = file.dataset(at) else { continue };
        let Ok(values) = ds.read_numeric_as::<f64>() else {
            continue;
        };
        let text: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
        let units = ds.attr("units").and_then(|a| a.read_string()).unwrap_or_default();
        let value = format!("{} {}", text.join(","), units);
        header.push((key.to_string(), value.trim().to_string()));
    }
    Ok(ObservedImage {
        format: ImageFormat::Nexus,
        frames,
        spixels,
        fpixels,
        counts,
        header,
    })
}
