//! The NXmx file writer: metadata at creation, then one shot per append.
//!
//! # Crash safety
//! The file is written with rust-hdf5's SWMR writer: every group, metadata
//! dataset, attribute and link is committed by `start_swmr` at creation;
//! each [`NxmxWriter::append_shot`] then appends one chunk to each stack and
//! flushes the chunk indices and extents in SWMR order before returning. A
//! process killed (even SIGKILL) after `append_shot` returned therefore
//! leaves a file in which every appended shot is readable. Because the
//! superblock still carries the "open for SWMR write" consistency flags,
//! libhdf5 (h5py) opens such a file only with `h5py.File(p, "r", swmr=True)`;
//! [`super::recover::clear_swmr_flags`] (the equivalent of `h5clear -s`)
//! makes it openable normally. [`NxmxWriter::finish`] closes cleanly.
//!
//! # File name
//! [`NxmxWriter::create`] writes to the final name from the start, so a
//! long multi-shot run is readable (SWMR) while it is written and after a
//! crash. [`NxmxWriter::create_atomic`] writes `<path>.partial` and renames
//! it to `<path>` in `finish` (for single images: the final name never holds
//! an incomplete file; a crash leaves only `<path>.partial`).
use std::path::{Path, PathBuf};

use rust_hdf5::swmr::SwmrFileWriter;
use rust_hdf5::{DatatypeMessage, FilterPipeline};

use super::chain::{self, Transformation};
use super::frame::{self, LabToNexus};
use super::{NxBeam, NxDetector, NxError, NxGoniometer};

/// Fixed timestamps so that files are reproducible.
pub const FIXED_TIME: &str = "1970-01-01T00:00:00Z";
/// `saturation_value` written for the int32 counts.
pub const SATURATION: i32 = i32::MAX;
/// Counts stack `[shots, slow, fast]`, or `[shots, modules, slow, fast]` for a detector of
/// several modules (int32).
pub const DATA: &str = "/entry/instrument/detector/data";
/// Noiseless photon image stack, shaped as [`DATA`] (float32).
pub const DATA_FLOAT: &str = "/entry/instrument/detector/data_float";
/// Goniometer axis, one φ start (deg) per shot.
pub const PHI: &str = "/entry/sample/transformations/phi";

/// Streaming NXmx writer; see the module docs for crash safety.
pub struct NxmxWriter {
    w: Option<SwmrFileWriter>,
    path: PathBuf,
    rename_to: Option<PathBuf>,
    npix: usize,
    osc_deg: f64,
    ds: Streams,
    tiles: Tiles,
    shots: usize,
}

/// How a shot's image is cut into the stored chunks: each module in bands of whole rows, so
/// that a shot is written one band at a time and never needs the whole image in file order.
#[derive(Clone, Copy, Debug)]
struct Tiles {
    /// Modules in a shot (1 for a flat detector).
    modules: usize,
    /// Rows of a module.
    spixels: usize,
    /// Pixels in a row.
    fpixels: usize,
    /// Rows in a band (the last band of a module is zero-padded to this height).
    rows: usize,
}

/// Pixels in one stored chunk at most (4 MiB of 4-byte pixels), unless a single row is longer.
pub const TILE_PIXELS: usize = 1 << 20;

impl Tiles {
    fn of(modules: &[NxDetector], tile_pixels: usize) -> Self {
        let d = &modules[0];
        let rows = (tile_pixels / d.fpixels).clamp(1, d.spixels);
        Tiles {
            modules: modules.len(),
            spixels: d.spixels,
            fpixels: d.fpixels,
            rows,
        }
    }

    /// The per-frame dimensions: `[slow, fast]`, or `[modules, slow, fast]`.
    fn frame_dims(&self) -> Vec<u64> {
        let (s, f) = (self.spixels as u64, self.fpixels as u64);
        match self.modules {
            1 => vec![s, f],
            n => vec![n as u64, s, f],
        }
    }

    /// The chunk within a frame, of the rank of [`Self::frame_dims`].
    fn frame_chunk(&self) -> Vec<u64> {
        let (r, f) = (self.rows as u64, self.fpixels as u64);
        match self.modules {
            1 => vec![r, f],
            _ => vec![1, r, f],
        }
    }

    /// Chunk-grid coordinates of band `band` of module `module` in shot `shot`.
    fn coords(&self, shot: usize, module: usize, band: usize) -> Vec<u64> {
        let (t, k, b) = (shot as u64, module as u64, band as u64);
        match self.modules {
            1 => vec![t, b, 0],
            _ => vec![t, k, b, 0],
        }
    }

    fn bands(&self) -> usize {
        self.spixels.div_ceil(self.rows)
    }
}

/// Indices of the appendable datasets.
struct Streams {
    counts: usize,
    photons: usize,
    phi: usize,
    phi_end: usize,
}

/// Strip the leading '/' (rust-hdf5 names datasets by relative path).
fn rel(p: &str) -> &str {
    p.trim_start_matches('/')
}

impl NxmxWriter {
    /// Create `path` (overwriting) and write all metadata; shots follow via
    /// [`Self::append_shot`]. The file has its final name from the start.
    pub fn create(path: &Path, det: &NxDetector, beam: &NxBeam, gonio: &NxGoniometer) -> Result<Self, NxError> {
        Self::create_modules(path, std::slice::from_ref(det), beam, gonio)
    }

    /// Like [`Self::create`] for a detector of several modules (see
    /// [`Self::create_atomic_modules`]).
    pub fn create_modules(
        path: &Path,
        modules: &[NxDetector],
        beam: &NxBeam,
        gonio: &NxGoniometer,
    ) -> Result<Self, NxError> {
        Self::create_at(path, None, modules, beam, gonio, TILE_PIXELS)
    }

    /// Like [`Self::create`] but writes `<path>.partial`, renamed to `path` by [`Self::finish`].
    pub fn create_atomic(path: &Path, det: &NxDetector, beam: &NxBeam, gonio: &NxGoniometer) -> Result<Self, NxError> {
        Self::create_atomic_modules(path, std::slice::from_ref(det), beam, gonio)
    }

    /// Like [`Self::create_atomic`] for a detector of several modules (panels) of one size:
    /// one `NXdetector_module` per module, each with its own `fast_pixel_direction`,
    /// `slow_pixel_direction` and `module_offset` and with `data_origin` `[k, 0, 0]`, and the
    /// stacks `[shots, modules, slow, fast]`. A shot's pixels are the modules' one after the
    /// other.
    pub fn create_atomic_modules(
        path: &Path,
        modules: &[NxDetector],
        beam: &NxBeam,
        gonio: &NxGoniometer,
    ) -> Result<Self, NxError> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        Self::create_at(
            Path::new(&tmp),
            Some(path.to_path_buf()),
            modules,
            beam,
            gonio,
            TILE_PIXELS,
        )
    }

    /// [`Self::create_modules`] with chunks of at most `tile_pixels` pixels (whole rows).
    #[cfg(test)]
    pub(crate) fn create_tiled(
        path: &Path,
        modules: &[NxDetector],
        beam: &NxBeam,
        gonio: &NxGoniometer,
        tile_pixels: usize,
    ) -> Result<Self, NxError> {
        Self::create_at(path, None, modules, beam, gonio, tile_pixels)
    }

    fn create_at(
        path: &Path,
        rename_to: Option<PathBuf>,
        modules: &[NxDetector],
        beam: &NxBeam,
        gonio: &NxGoniometer,
        tile_pixels: usize,
    ) -> Result<Self, NxError> {
        let err = |e: String| NxError::new(path, e);
        validate(modules, beam).map_err(err)?;
        let r = LabToNexus::from_beam(beam.direction).map_err(err)?;
        let chains = (0..modules.len())
            .map(|k| chain::detector_chain_at(&modules[k], &r, &chain::module_path(k, modules.len())))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let mut w = SwmrFileWriter::create(path).map_err(|e| NxError::new(path, e))?;
        let tiles = Tiles::of(modules, tile_pixels);
        let ds = Layout { w: &mut w, tiles }
            .write_all(modules, beam, gonio, &r, &chains)
            .map_err(err)?;
        w.start_swmr().map_err(|e| NxError::new(path, e))?;
        w.flush().map_err(|e| NxError::new(path, e))?;
        let npix = modules.iter().map(|d| d.fpixels * d.spixels).sum();
        Ok(NxmxWriter {
            w: Some(w),
            path: path.to_path_buf(),
            rename_to,
            npix,
            osc_deg: gonio.osc_deg,
            ds,
            tiles,
            shots: 0,
        })
    }

    /// The path being written (the `.partial` name for an atomic writer).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Shots appended so far.
    pub fn shots(&self) -> usize {
        self.shots
    }

    /// Append one shot: int32 `counts` and float32 noiseless `photons`, both
    /// `[slow][fast]` row-major, and the φ at the shot's start (deg). On
    /// return the shot is flushed (SWMR) and survives a SIGKILL. Returns the shot index.
    pub fn append_shot(&mut self, counts: &[i32], photons: &[f32], phi_start_deg: f64) -> Result<usize, NxError> {
        if counts.len() != self.npix || photons.len() != self.npix {
            let m = format!(
                "shot has {}/{} pixels, detector has {}",
                counts.len(),
                photons.len(),
                self.npix
            );
            return Err(NxError::new(&self.path, m));
        }
        self.append_shot_from(counts.iter().copied(), photons.iter().copied(), phi_start_deg)
    }

    /// [`Self::append_shot`] from pixels as they come, in file order (the modules one after
    /// the other, each `[slow][fast]`): each is written one band of rows at a time, so the
    /// shot never needs to be held whole. The counts are all consumed before the first photon
    /// value is asked for. A shot of the wrong size is an error, and leaves the stacks'
    /// extents as they were.
    pub fn append_shot_from(
        &mut self,
        counts: impl IntoIterator<Item = i32>,
        photons: impl IntoIterator<Item = f32>,
        phi_start_deg: f64,
    ) -> Result<usize, NxError> {
        let (path, ds, osc, tiles, shot) = (self.path.clone(), &self.ds, self.osc_deg, self.tiles, self.shots);
        let w = self
            .w
            .as_mut()
            .ok_or_else(|| NxError::new(&path, "writer already finished"))?;
        let e = |e: rust_hdf5::Hdf5Error| NxError::new(&path, e);
        write_bands(w, ds.counts, &tiles, shot, counts.into_iter().map(i32::to_le_bytes))
            .map_err(|m| NxError::new(&path, m))?;
        write_bands(w, ds.photons, &tiles, shot, photons.into_iter().map(f32::to_le_bytes))
            .map_err(|m| NxError::new(&path, m))?;
        let mut extent = vec![shot as u64 + 1];
        extent.extend(tiles.frame_dims());
        w.set_extent(ds.counts, &extent).map_err(e)?;
        w.set_extent(ds.photons, &extent).map_err(e)?;
        w.append_frame(ds.phi, &phi_start_deg.to_le_bytes()).map_err(e)?;
        w.append_frame(ds.phi_end, &(phi_start_deg + osc).to_le_bytes())
            .map_err(e)?;
        w.flush().map_err(e)?;
        self.shots += 1;
        Ok(self.shots - 1)
    }

    /// Close the file cleanly (clears the SWMR flags) and, for an atomic
    /// writer, rename it to its final name.
    pub fn finish(mut self) -> Result<(), NxError> {
        let w = self
            .w
            .take()
            .ok_or_else(|| NxError::new(&self.path, "writer already finished"))?;
        w.close().map_err(|e| NxError::new(&self.path, e))?;
        if let Some(dst) = self.rename_to.take() {
            std::fs::rename(&self.path, &dst)
                .map_err(|e| NxError::new(&dst, format!("rename from {}: {e}", self.path.display())))?;
        }
        Ok(())
    }
}

/// Writes shot `shot` of the stack `ds` band by band from `pixels` (4-byte values in file
/// order); an error when there are more or fewer than the shot's pixels.
fn write_bands(
    w: &mut SwmrFileWriter,
    ds: usize,
    tiles: &Tiles,
    shot: usize,
    mut pixels: impl Iterator<Item = [u8; 4]>,
) -> Result<(), String> {
    let npix = tiles.modules * tiles.spixels * tiles.fpixels;
    let mut written = 0;
    let mut band = Vec::with_capacity(4 * tiles.rows * tiles.fpixels);
    for module in 0..tiles.modules {
        for b in 0..tiles.bands() {
            let rows = tiles.rows.min(tiles.spixels - b * tiles.rows);
            band.clear();
            band.extend(pixels.by_ref().take(rows * tiles.fpixels).flatten());
            written += band.len() / 4;
            if band.len() != 4 * rows * tiles.fpixels {
                return Err(format!("shot has {written} pixels, detector has {npix}"));
            }
            // the last band of a module is padded to the chunk's height
            band.resize(4 * tiles.rows * tiles.fpixels, 0);
            w.write_chunk_at(ds, &tiles.coords(shot, module, b), &band)
                .map_err(|e| e.to_string())?;
        }
    }
    match pixels.next() {
        Some(_) => Err(format!("shot has more than the detector's {npix} pixels")),
        None => Ok(()),
    }
}

/// Reject inputs that cannot make a valid file.
fn validate(modules: &[NxDetector], beam: &NxBeam) -> Result<(), String> {
    let Some(first) = modules.first() else {
        return Err("a detector needs at least one module".into());
    };
    for det in modules {
        if det.fpixels == 0 || det.spixels == 0 || !det.pixel_size.is_finite() || det.pixel_size <= 0.0 {
            return Err("detector needs pixels and a positive pixel size".into());
        }
        if (det.fpixels, det.spixels) != (first.fpixels, first.spixels) {
            return Err(format!(
                "the modules' images are stacked [modules, slow, fast]: every module needs {}x{} pixels, not {}x{}",
                first.fpixels, first.spixels, det.fpixels, det.spixels
            ));
        }
        let rotations = (det.rotx, det.roty, det.rotz, det.twotheta, det.twotheta_axis);
        if rotations != (first.rotx, first.roty, first.rotz, first.twotheta, first.twotheta_axis) {
            return Err("the modules of a detector share its rotations and 2θ".into());
        }
    }
    if beam.wavelengths_m.is_empty() {
        return Err("beam has no wavelength".into());
    }
    if beam.wavelengths_m.len() > 1 && beam.weights.len() != beam.wavelengths_m.len() {
        return Err("one weight per wavelength is required".into());
    }
    Ok(())
}

/// Writes the static layout (everything but the shots) before SWMR starts.
struct Layout<'a> {
    w: &'a mut SwmrFileWriter,
    tiles: Tiles,
}

type R<T> = Result<T, String>;

impl Layout<'_> {
    fn write_all(
        &mut self,
        modules: &[NxDetector],
        beam: &NxBeam,
        gonio: &NxGoniometer,
        r: &LabToNexus,
        chains: &[Vec<Transformation>],
    ) -> R<Streams> {
        self.entry()?;
        self.beam(beam, r)?;
        let (counts, photons) = self.detector(modules, gonio, chains)?;
        let (phi, phi_end) = self.sample(gonio, r)?;
        self.w.create_group("/entry", "data").map_err(s)?;
        self.class("/entry/data", "NXdata")?;
        self.w
            .set_group_attr_string("/entry/data", "signal", "data")
            .map_err(s)?;
        self.w.create_hard_link("/entry/data", "data", DATA).map_err(s)?;
        Ok(Streams {
            counts,
            photons,
            phi,
            phi_end,
        })
    }

    fn class(&mut self, group: &str, class: &str) -> R<()> {
        self.w.set_group_attr_string(group, "NX_class", class).map_err(s)
    }

    fn group(&mut self, parent: &str, name: &str, class: &str) -> R<()> {
        self.w.create_group(parent, name).map_err(s)?;
        self.class(&format!("{}/{name}", parent.trim_end_matches('/')), class)
    }

    /// Scalar fixed-length string dataset.
    fn string(&mut self, path: &str, value: &str) -> R<usize> {
        let bytes = if value.is_empty() {
            vec![0u8]
        } else {
            value.as_bytes().to_vec()
        };
        let dt = DatatypeMessage::fixed_string(bytes.len() as u32);
        self.w.write_dataset_typed(rel(path), dt, &[], &bytes).map_err(s)
    }

    /// Scalar float64 dataset with a `units` attribute ("" = none).
    fn scalar(&mut self, path: &str, value: f64, units: &str) -> R<usize> {
        let i = self.w.write_dataset::<f64>(rel(path), &[], &[value]).map_err(s)?;
        if !units.is_empty() {
            self.w.set_dataset_attr_string(i, "units", units).map_err(s)?;
        }
        Ok(i)
    }

    /// 1-D float64 dataset with a `units` attribute ("" = none).
    fn array(&mut self, path: &str, values: &[f64], units: &str) -> R<usize> {
        let i = self
            .w
            .write_dataset::<f64>(rel(path), &[values.len() as u64], values)
            .map_err(s)?;
        if !units.is_empty() {
            self.w.set_dataset_attr_string(i, "units", units).map_err(s)?;
        }
        Ok(i)
    }

    fn entry(&mut self) -> R<()> {
        self.w.set_group_attr_string("/", "default", "entry").map_err(s)?;
        self.group("/", "entry", "NXentry")?;
        self.w.set_group_attr_string("/entry", "default", "data").map_err(s)?;
        self.string("/entry/definition", "NXmx")?;
        self.string("/entry/start_time", FIXED_TIME)?;
        self.string("/entry/end_time", FIXED_TIME)?;
        self.group("/entry", "source", "NXsource")?;
        self.string("/entry/source/name", "nanoBragg simulated source")?;
        self.group("/entry", "instrument", "NXinstrument")?;
        self.string("/entry/instrument/name", "nanoBragg").map(|_| ())
    }

    fn beam(&mut self, b: &NxBeam, r: &LabToNexus) -> R<()> {
        self.group("/entry/instrument", "beam", "NXbeam")?;
        let wl_a: Vec<f64> = b.wavelengths_m.iter().map(|w| w / 1e-10).collect();
        if wl_a.len() == 1 {
            self.scalar("/entry/instrument/beam/incident_wavelength", wl_a[0], "angstrom")?;
        } else {
            self.array("/entry/instrument/beam/incident_wavelength", &wl_a, "angstrom")?;
            self.array("/entry/instrument/beam/incident_wavelength_weights", &b.weights, "")?;
        }
        if let Some(flux) = b.flux {
            self.scalar("/entry/instrument/beam/total_flux", flux, "Hz")?;
        }
        if let Some(p) = frame::unit(r.apply(b.polarization)) {
            // Fully linearly polarised along p (NeXus x/y plane): Stokes [I, Q, U, V].
            let psi = p[1].atan2(p[0]);
            let stokes = [1.0, (2.0 * psi).cos(), (2.0 * psi).sin(), 0.0];
            self.array("/entry/instrument/beam/incident_polarisation_stokes", &stokes, "")?;
        }
        Ok(())
    }

    /// The detector: its own fields from the first module (distance and beam centre only for
    /// a single one: a detector of several panels has no one plane), its shared
    /// transformations, then the modules and the stacks.
    fn detector(
        &mut self,
        modules: &[NxDetector],
        g: &NxGoniometer,
        chains: &[Vec<Transformation>],
    ) -> R<(usize, usize)> {
        const D: &str = "/entry/instrument/detector";
        let d = &modules[0];
        self.group("/entry/instrument", "detector", "NXdetector")?;
        self.group(D, "transformations", "NXtransformations")?;
        self.string(&format!("{D}/depends_on"), &format!("{}/rot_x", chain::DET_TRANSFORMS))?;
        self.string(&format!("{D}/description"), "nanoBragg simulated detector")?;
        self.string(&format!("{D}/sensor_material"), &d.sensor_material)?;
        self.scalar(&format!("{D}/sensor_thickness"), d.sensor_thickness, "m")?;
        self.scalar(&format!("{D}/x_pixel_size"), d.pixel_size, "m")?;
        self.scalar(&format!("{D}/y_pixel_size"), d.pixel_size, "m")?;
        if modules.len() == 1 {
            self.scalar(&format!("{D}/distance"), d.distance, "m")?;
            self.scalar(
                &format!("{D}/beam_center_x"),
                d.beam_center_fast / d.pixel_size,
                "pixel",
            )?;
            self.scalar(
                &format!("{D}/beam_center_y"),
                d.beam_center_slow / d.pixel_size,
                "pixel",
            )?;
        }
        self.scalar(&format!("{D}/count_time"), g.exposure_s, "s")?;
        self.scalar(&format!("{D}/frame_time"), g.exposure_s, "s")?;
        self.w
            .write_dataset::<i32>(rel(&format!("{D}/saturation_value")), &[], &[SATURATION])
            .map_err(s)?;
        for (k, (module, chain)) in modules.iter().zip(chains).enumerate() {
            self.module(k, modules.len(), module, chain)?;
        }
        self.stacks(modules)
    }

    /// Module `k` of `count`: where its pixels lie in the stacks, and its transformations (the
    /// detector's shared ones with the first module).
    fn module(&mut self, k: usize, count: usize, d: &NxDetector, chain: &[Transformation]) -> R<()> {
        let m = chain::module_path(k, count);
        let name = m.rsplit('/').next().unwrap_or("module");
        self.group("/entry/instrument/detector", name, "NXdetector_module")?;
        let (origin, size) = match count {
            1 => (vec![0, 0], vec![d.spixels as i32, d.fpixels as i32]),
            _ => (vec![k as i32, 0, 0], vec![1, d.spixels as i32, d.fpixels as i32]),
        };
        let rank = [origin.len() as u64];
        self.w
            .write_dataset::<i32>(rel(&format!("{m}/data_origin")), &rank, &origin)
            .map_err(s)?;
        self.w
            .write_dataset::<i32>(rel(&format!("{m}/data_size")), &rank, &size)
            .map_err(s)?;
        chain
            .iter()
            .filter(|t| k == 0 || t.path.starts_with(&m))
            .try_for_each(|t| self.transformation(t).map(|_| ()))
    }

    /// One scalar transformation dataset with its NXtransformations attributes.
    fn transformation(&mut self, t: &Transformation) -> R<usize> {
        let i = self.scalar(&t.path, t.value, t.units())?;
        self.axis_attrs(i, t)
    }

    fn axis_attrs(&mut self, i: usize, t: &Transformation) -> R<usize> {
        let kind = match t.kind {
            chain::Kind::Translation => "translation",
            chain::Kind::Rotation => "rotation",
        };
        self.w
            .set_dataset_attr_string(i, "transformation_type", kind)
            .map_err(s)?;
        self.w
            .set_dataset_attr_array::<f64>(i, "vector", &[3], &t.vector)
            .map_err(s)?;
        self.w
            .set_dataset_attr_array::<f64>(i, "offset", &[3], &t.offset)
            .map_err(s)?;
        self.w.set_dataset_attr_string(i, "offset_units", "m").map_err(s)?;
        self.w
            .set_dataset_attr_string(i, "depends_on", &t.depends_on)
            .map_err(s)?;
        Ok(i)
    }

    /// The appendable image stacks, chunked in bands of rows of one module of one shot
    /// ([`Tiles`]), shuffle+deflate.
    fn stacks(&mut self, modules: &[NxDetector]) -> R<(usize, usize)> {
        debug_assert_eq!(self.tiles.modules, modules.len());
        let (dims, chunk) = (self.tiles.frame_dims(), self.tiles.frame_chunk());
        let deflate = || FilterPipeline::shuffle_deflate(4, 4);
        let counts = self
            .w
            .create_streaming_dataset_tiled_compressed::<i32>(rel(DATA), &dims, &chunk, deflate())
            .map_err(s)?;
        self.w.set_dataset_attr_string(counts, "units", "counts").map_err(s)?;
        let photons = self
            .w
            .create_streaming_dataset_tiled_compressed::<f32>(rel(DATA_FLOAT), &dims, &chunk, deflate())
            .map_err(s)?;
        self.w.set_dataset_attr_string(photons, "units", "counts").map_err(s)?;
        let doc = "noiseless expected photons per pixel, same shape as data";
        self.w.set_dataset_attr_string(photons, "long_name", doc).map_err(s)?;
        Ok((counts, photons))
    }

    fn sample(&mut self, g: &NxGoniometer, r: &LabToNexus) -> R<(usize, usize)> {
        self.group("/entry", "sample", "NXsample")?;
        self.string("/entry/sample/name", "nanoBragg simulated crystal")?;
        self.string("/entry/sample/depends_on", PHI)?;
        self.group("/entry/sample", "transformations", "NXtransformations")?;
        self.w
            .create_hard_link("/entry/sample", "beam", "/entry/instrument/beam")
            .map_err(s)?;
        let axis = frame::unit(r.apply(g.spindle)).ok_or("spindle is a zero vector")?;
        let t = Transformation {
            path: PHI.into(),
            kind: chain::Kind::Rotation,
            vector: axis,
            value: 0.0,
            offset: [0.0; 3],
            depends_on: ".".into(),
        };
        let phi = self.w.create_streaming_dataset::<f64>(rel(PHI), &[]).map_err(s)?;
        self.w.set_dataset_attr_string(phi, "units", "deg").map_err(s)?;
        self.axis_attrs(phi, &t)?;
        let phi_end = self
            .w
            .create_streaming_dataset::<f64>(&format!("{}_end", rel(PHI)), &[])
            .map_err(s)?;
        self.w.set_dataset_attr_string(phi_end, "units", "deg").map_err(s)?;
        self.scalar(&format!("{PHI}_increment_set"), g.osc_deg, "deg")?;
        Ok((phi, phi_end))
    }
}

/// Error to string.
fn s(e: rust_hdf5::Hdf5Error) -> String {
    e.to_string()
}
