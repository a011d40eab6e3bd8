//! Errors of the range.

/// What went wrong building or driving the range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RangeError {
    #[error("unknown scenario {0:?} (known: ransomware, apt_espionage, cloud_hybrid, iot_grid, ot_stuxnet)")]
    UnknownScenario(String),
    #[error("unknown preset {0:?} (known: easy, medium, hard)")]
    UnknownPreset(String),
    #[error("invalid parameter /{field}: {why}")]
    InvalidParam { field: String, why: String },
    #[error("invalid reset options at {pointer}: {why}")]
    BadOptions { pointer: String, why: String },
    #[error("invalid action for {agent}: {why}")]
    BadAction { agent: String, why: String },
}
