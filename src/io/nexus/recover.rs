//! Make a crashed SWMR file openable without `swmr=True` (like `h5clear -s`).
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use rust_hdf5::format::superblock::SuperblockV2V3;

use super::NxError;

/// Clear the superblock's file-consistency flags (open-for-write / SWMR)
/// that a killed writer leaves set, and raise the stored end-of-file to the
/// real file length if it lags. Only version-2/3 superblocks at offset 0
/// (what the writer produces) are handled.
pub fn clear_swmr_flags(path: &Path) -> Result<(), NxError> {
    let e = |m: String| NxError::new(path, m);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|x| e(x.to_string()))?;
    let mut head = [0u8; 12];
    f.read_exact(&mut head).map_err(|x| e(x.to_string()))?;
    if &head[..8] != b"\x89HDF\r\n\x1a\n" || !(head[8] == 2 || head[8] == 3) {
        return Err(e("not an HDF5 file with a version 2/3 superblock at offset 0".into()));
    }
    let mut buf = vec![0u8; SuperblockV2V3::size_for(head[9])];
    f.seek(SeekFrom::Start(0))
        .and_then(|_| f.read_exact(&mut buf))
        .map_err(|x| e(x.to_string()))?;
    let mut sb = SuperblockV2V3::decode(&buf).map_err(|x| e(format!("superblock: {x}")))?;
    let len = f.metadata().map_err(|x| e(x.to_string()))?.len();
    sb.file_consistency_flags = 0;
    sb.end_of_file_address = sb.end_of_file_address.max(len);
    f.seek(SeekFrom::Start(0))
        .and_then(|_| f.write_all(&sb.encode()))
        .map_err(|x| e(x.to_string()))?;
    f.sync_all().map_err(|x| e(x.to_string()))
}
