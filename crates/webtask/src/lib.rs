//! `webtask`: the seed-000 experiment (docs: /work/shared seed 000, docs/contract.md) on real
//! systems instead of a three-field dictionary.
//!
//! - the **server** layer: a real HTTP server process ([`server`]) serving the task page and
//!   counting visits in a SQLite file, read by the `sqlite` probe;
//! - the **browser** layer: a real headless Chromium ([`lockstep_layers::chromium`]) that loads
//!   the page, holds cookies and clicks, read by the `browser` probe;
//! - the **client** layer: a cache directory holding the cached choice (`choice.json`), read
//!   by the `files` probe.
//!
//! The env ([`WebTask`]) plays the experiment's scripted policy and contamination; `webtask`
//! resets completely, `webtask:partial-reset` keeps the cache. See docs/layers.md.

pub mod env;
pub mod server;
mod shared_browser;

pub use env::{ResetMode, WebTask, ENV_NAMES};
