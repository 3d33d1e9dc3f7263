/// Autodiff config module.
pub mod autodiff;
/// Fusion config module.
pub mod fusion;

mod base;
mod logger;

pub use base::*;
pub use cubecl_common::config::RuntimeConfig;
pub use cubecl_common::config::logger::{LogCrateLevel, LogLevel, LoggerConfig, LoggerSinks};
pub use logger::*;
