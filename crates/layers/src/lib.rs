//! Probes that read real state layers for lockstep: a directory tree, a SQLite file, a
//! PostgreSQL database, an HTTP service, and a Chromium over the DevTools protocol.
//!
//! Each probe implements [`lockstep::probe::Probe`]: it reads the system a contract layer
//! points at (`probe = "sqlite"`, `path = "app.db"`) into a canonical snapshot, so that the
//! same state gives the same fingerprint however it was built (rows inserted in another order,
//! files created in another order), and a difference is located inside the layer
//! (`/server/visits/1/count`). Probes only read: SQLite is opened read-only, PostgreSQL in a
//! read-only transaction, HTTP is a GET, the browser is asked, never driven. A probe that
//! cannot read its system fails with the cause (file missing, not a SQLite database,
//! connection refused, DevTools not answering, a body that is not JSON); it never answers
//! with an empty snapshot. The snapshot formats are specified in docs/layers.md.
//!
//! ```no_run
//! use lockstep::contract::Contract;
//! use lockstep::probe::snapshot_layers;
//!
//! let contract = Contract::load("contract.toml".as_ref()).unwrap();
//! for (layer, snapshot) in snapshot_layers(&contract, &lockstep_layers::probes()).unwrap() {
//!     println!("{layer}: {}", lockstep::fingerprint::fingerprint(&snapshot, contract.profile.profile()).unwrap());
//! }
//! ```
//!
//! [`cdp`] (a small DevTools client) and [`chromium`] (a headless Chromium started and always
//! stopped by its owner) are public for environments that drive a browser themselves.

use lockstep::probe::ProbeSet;

pub mod browser;
pub mod cdp;
pub mod chromium;
pub mod files;
pub mod http;
pub mod postgres;
pub mod process;
mod rows;
pub mod sqlite;

/// Every probe of this crate: `files`, `sqlite`, `postgres`, `http`, `browser`.
pub fn probes() -> ProbeSet {
    ProbeSet::new()
        .with(Box::new(files::FilesProbe))
        .with(Box::new(sqlite::SqliteProbe))
        .with(Box::new(postgres::PostgresProbe))
        .with(Box::new(http::HttpProbe))
        .with(Box::new(browser::BrowserProbe))
}
