//! Many shots from one process: shot lists (`-shots FILE`, `-shots_random N`), one set of
//! output files per shot, the manifest, sharding (`-shard I/N`) and resuming.
//! `docs/many-shots.md` describes the design, the file names and the manifest schema.
//!
//! A shot is the base command line plus the shot's own flags: every shot is parsed by the same
//! flag parser (so units, aliases and validation are those of the command line) and rendered
//! through the public API ([`crate::experiment::Experiment`], [`crate::engine::Engine::render`]).
//! Per-shot random numbers (noise seed, random orientation) are functions of the base `-seed`
//! and the shot index only, so any sharding of a list renders the same files.

pub mod args;
pub mod list;
pub mod manifest;
pub mod merge;
pub mod nexus;
pub mod output;
pub mod random;
pub mod run;
pub mod shard;

pub use args::{split_args, ShotOptions, ShotSource};
pub use run::{run, Summary};
pub use shard::Shard;
