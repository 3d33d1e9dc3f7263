//! Which engine a run asked for: `-engine`, `-precision` and `-fusion` as data (the engines
//! themselves are [`crate::engine::Engine`]).

/// Floating-point precision of the CPU engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    F64,
    F32,
}

/// Which engine family `-engine` named (precision and fusion are separate flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    #[default]
    Cpu,
    Wgpu,
}

/// `on|off` and their spellings; `Ok(None)` for an empty string.
pub fn parse_switch(v: &str) -> std::result::Result<Option<bool>, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" => Ok(None),
        "1" | "on" | "true" | "yes" => Ok(Some(true)),
        "0" | "off" | "false" | "no" => Ok(Some(false)),
        _ => Err("expected on or off (1/0)".into()),
    }
}
