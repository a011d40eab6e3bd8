//! The range: a deterministic multi-agent network-defence environment.
