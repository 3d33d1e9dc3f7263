//! NeXus stacks of a shot run (`-nexusfile` with `-shots`/`-shots_random`): the shots of a shard
//! go into one NXmx file as a stack `[shots, slow, fast]` (`[shots, panels, slow, fast]`, one
//! NXdetector_module per panel, for a detector of several panels), appended and flushed as each shot's
//! manifest line goes in, so the file holds every shot its manifest lists even after a crash.
//!
//! A stack keeps one detector, beam and goniometer axis: a shot whose geometry differs (a shot
//! list may change the distance or λ) starts the next file. Files are never appended to across
//! runs: a resumed run starts a new file. Names: `{prefix}shots.nxs`, then
//! `{prefix}shots.1.nxs`, `{prefix}shots.2.nxs`, … (the first name not yet taken); with
//! `-shard I/N`, `{prefix}shots.shard-I-of-N.nxs` and so on.

use super::manifest::relative_name;
use super::Shard;
use crate::base::error::Result;
use crate::experiment::Experiment;
use crate::io::nexus::{NxBeam, NxDetector, NxGoniometer, NxmxWriter};
use crate::render::nexus::{nx_beam, nx_detector, nx_goniometer};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What shots must share to share a stack: the geometry the file's header describes.
#[derive(Clone, Debug, PartialEq)]
pub struct StackGeometry {
    /// One module per panel (one for a flat detector).
    modules: Vec<NxDetector>,
    beam: NxBeam,
    /// φ start is per shot (in the stack's φ dataset); this holds the first shot's.
    goniometer: NxGoniometer,
}

impl StackGeometry {
    /// The geometry `exp` was rendered with.
    pub fn of(exp: &Experiment) -> Self {
        Self::of_panels(std::slice::from_ref(exp))
    }

    /// The geometry of a detector whose panels were rendered with `panels` (they share the
    /// beam and the crystal: the first gives those).
    pub fn of_panels(panels: &[Experiment]) -> Self {
        Self {
            modules: panels.iter().map(nx_detector).collect(),
            beam: nx_beam(&panels[0]),
            goniometer: nx_goniometer(&panels[0]),
        }
    }

    /// Equal but for φ start.
    fn shares_stack_with(&self, other: &Self) -> bool {
        let phi_free = |g: &NxGoniometer| NxGoniometer {
            phi_start_deg: 0.0,
            ..g.clone()
        };
        self.modules == other.modules
            && self.beam == other.beam
            && phi_free(&self.goniometer) == phi_free(&other.goniometer)
    }
}

/// One shot for the stack: int32 counts, float photons (fast-major), its geometry.
pub struct NexusShot {
    pub geometry: StackGeometry,
    pub counts: Vec<i32>,
    pub photons: Vec<f32>,
}

/// The open stack and where the next one goes.
pub struct NexusStacks {
    /// `{prefix}shots` or `{prefix}shots.shard-I-of-N`.
    base: String,
    manifest: PathBuf,
    open: Option<(StackGeometry, NxmxWriter, PathBuf)>,
}

impl NexusStacks {
    pub fn new(prefix: &str, shard: &Shard, manifest: &Path) -> Self {
        let base = if shard.count > 1 {
            format!("{prefix}shots.shard-{}-of-{}", shard.index, shard.count)
        } else {
            format!("{prefix}shots")
        };
        Self {
            base,
            manifest: manifest.to_path_buf(),
            open: None,
        }
    }

    /// The first of `{base}.nxs`, `{base}.1.nxs`, … that does not exist.
    fn free_name(&self) -> PathBuf {
        (0..)
            .map(|k| match k {
                0 => PathBuf::from(format!("{}.nxs", self.base)),
                k => PathBuf::from(format!("{}.{k}.nxs", self.base)),
            })
            .find(|p| !p.exists())
            .expect("an unused file name")
    }

    /// Appends the shot (flushed when this returns) and gives its manifest entry:
    /// `{"file": name relative to the manifest, "index": place in the stack}`.
    pub fn append(&mut self, shot: NexusShot) -> Result<Value> {
        let fits = matches!(&self.open, Some((g, _, _)) if g.shares_stack_with(&shot.geometry));
        if !fits {
            self.finish_open()?;
            let path = self.free_name();
            let g = &shot.geometry;
            let writer = NxmxWriter::create_modules(&path, &g.modules, &g.beam, &g.goniometer)?;
            self.open = Some((shot.geometry.clone(), writer, path));
        }
        let (_, writer, path) = self.open.as_mut().expect("a stack is open");
        let phi = shot.geometry.goniometer.phi_start_deg;
        let index = writer.append_shot(&shot.counts, &shot.photons, phi)?;
        Ok(json!({ "file": relative_name(&self.manifest, path), "index": index }))
    }

    fn finish_open(&mut self) -> Result<()> {
        match self.open.take() {
            Some((_, writer, _)) => Ok(writer.finish()?),
            None => Ok(()),
        }
    }

    /// Closes the open stack cleanly.
    pub fn finish(mut self) -> Result<()> {
        self.finish_open()
    }
}
