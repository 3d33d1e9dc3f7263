//! File readers and writers: structure factors (`-hkl`, `Fdump.bin`), orientation matrices
//! (`-mat`), source lists (`-sourcefile`), SMV images (`-img`, `-mask`, `-intfile`,
//! `-noisefile`), miniCBF images (`-cbffile`, `-cbf_noisefile`: signed 32-bit pixels with a
//! Pilatus header), NeXus NXmx files (`-nexusfile`), raw float images (`-floatfile`) and PGM previews (`-pgmfile`).
//! `docs/outputs.md` lists every output and the programs that read it.
//!
//! Readers never panic: malformed input gives an [`Error`](crate::base::error::Error) naming the file
//! and, where it makes sense, the 1-based line. Writers replace their output atomically.

pub mod atomic;
pub mod cbf;
pub mod fdump;
pub mod hkl;
pub mod matrix;
pub mod nexus;
pub mod npy;
pub mod observed;
pub mod panels;
pub mod pgm;
pub mod png;
pub mod raw;
pub mod smv;
pub mod sourcefile;
pub mod stol;

pub use atomic::{write_atomic, write_atomic_with};
pub use fdump::{read_fdump, write_fdump};
pub use hkl::{read_hkl, HklGrid};
pub use matrix::read_matrix;
pub use observed::{read_image, ImageFormat, ObservedImage};
pub use pgm::write_pgm;
pub use raw::{read_float_image, write_float_image};
pub use smv::{read_smv_header, read_smv_u16, write_smv, SmvFields, SmvHeader};
pub use sourcefile::read_sourcefile;

/// Helpers shared by the unit tests of this module.
#[cfg(test)]
pub(crate) mod test_support {
    use std::io::Write;
    use std::path::PathBuf;

    /// The golden-data directory: `$NANOBRAGG_GOLDEN_DIR`, else `../shared/golden` next to the
    /// crate. `None` (after printing a skip message) when it is absent.
    pub(crate) fn golden_dir() -> Option<PathBuf> {
        let dir = std::env::var_os("NANOBRAGG_GOLDEN_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/golden"));
        if dir.is_dir() {
            Some(dir)
        } else {
            eprintln!("skipped: golden data not found at {}", dir.display());
            None
        }
    }

    /// Writes `bytes` to a fresh temporary file.
    pub(crate) fn write_temp(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("create temp file");
        f.write_all(bytes).expect("write temp file");
        f.flush().expect("flush temp file");
        f
    }
}
