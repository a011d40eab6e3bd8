//! Resolves the environment names the CLI accepts into factories of fresh instances.
//!
//! Names come in families (`fixture` and `fixture:<fault>` now; `range:<scenario>`,
//! `experiment` and external commands later). Adding a family is adding one line to
//! [`FAMILIES`]: how its names are listed, and how one resolves.

use anyhow::bail;
use lockstep::env::EnvFactory;

/// What resolving a name gives: `None` when the name is not of the family.
type Resolved = Option<anyhow::Result<Box<dyn EnvFactory>>>;

/// A family of env names.
struct Family {
    /// Every name of the family, for help and error messages.
    names: fn() -> Vec<String>,
    /// The factory for `name`, or `None` when the name is not of this family.
    resolve: fn(&str) -> Resolved,
}

const FAMILIES: &[Family] = &[Family {
    names: fixture_names,
    resolve: fixture,
}];

fn fixture_names() -> Vec<String> {
    lockstep::fixtures::NAMES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn fixture(name: &str) -> Resolved {
    let f = lockstep::fixtures::factory(name)?;
    Some(Ok(Box::new(f)))
}

/// Every env name the CLI knows, in registration order.
pub fn known() -> Vec<String> {
    FAMILIES.iter().flat_map(|f| (f.names)()).collect()
}

/// The factory for `name`; an unknown name is an error listing the known ones.
pub fn resolve(name: &str) -> anyhow::Result<Box<dyn EnvFactory>> {
    for family in FAMILIES {
        if let Some(found) = (family.resolve)(name) {
            return found;
        }
    }
    bail!("unknown env {name:?}; known envs: {}", known().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_resolves_to_itself() {
        for name in known() {
            assert_eq!(resolve(&name).unwrap().id(), name);
        }
        let err = resolve("nope").err().unwrap().to_string();
        assert!(err.contains("unknown env \"nope\"") && err.contains("fixture:global-rng"));
    }
}
