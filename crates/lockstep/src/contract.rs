//! Reset contracts: a versioned list of what a starting state contains.
//!
//! A fingerprint only covers what it hashes, so the contract comes first: it names the layers
//! and fields of the starting state and the canonical profile that hashes them, and a state is
//! checked against it (missing and unexpected fields) before any hash is compared.

/// Which canonical JSON profile a contract's fingerprints use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileName {
    Python,
    Jcs,
}

/// One layer of state (a cookie jar, a server record, a cache) and its top-level fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Layer {
    pub name: String,
    pub fields: Vec<String>,
}

/// A versioned reset contract.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Contract {
    pub name: String,
    pub version: u32,
    pub profile: ProfileName,
    pub layers: Vec<Layer>,
}
