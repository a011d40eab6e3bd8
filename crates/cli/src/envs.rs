//! Resolves the environment names the CLI accepts into factories of fresh instances.
//!
//! Names come in families (`fixture` and `fixture:<fault>` now; `range:<scenario>`,
//! `experiment` and external commands later). Adding a family is adding one line to
//! [`FAMILIES`]: how its names are listed, and how one resolves.

use anyhow::bail;
use lockstep::check::ProcessRunner;
use lockstep::env::EnvFactory;
use lockstep::protocol::{ProcessEnvFactory, ProcessOptions};

/// What resolving a name gives: `None` when the name is not of the family.
type Resolved = Option<anyhow::Result<Box<dyn EnvFactory>>>;

/// A family of env names.
struct Family {
    /// Every name of the family, for help and error messages.
    names: fn() -> Vec<String>,
    /// The factory for `name`, or `None` when the name is not of this family.
    resolve: fn(&str) -> Resolved,
}

const FAMILIES: &[Family] = &[
    Family {
        names: experiment_names,
        resolve: experiment,
    },
    Family {
        names: fixture_names,
        resolve: fixture,
    },
    Family {
        names: range_names,
        resolve: range,
    },
];

fn range_names() -> Vec<String> {
    lockstep_range::scenarios()
        .iter()
        .map(|s| format!("range:{s}"))
        .collect()
}

/// `range:SCENARIO[:PRESET][?KEY=VALUE[&KEY=VALUE]...]`: a scenario, an optional preset
/// (`easy`, `medium`, `hard`), and `Params` fields set by name (values are JSON: numbers,
/// `true`, or a word taken as a string), e.g. `range:ransomware:medium?max_ticks=25`.
fn range(name: &str) -> Resolved {
    let rest = name.strip_prefix("range:")?;
    Some(range_factory(name, rest))
}

fn range_factory(name: &str, rest: &str) -> anyhow::Result<Box<dyn EnvFactory>> {
    use lockstep_canon::{Map, Value};
    let (head, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scenario, preset) = match head.split_once(':') {
        Some((s, p)) => (s, Some(p)),
        None => (head, None),
    };
    let base = lockstep_range::factory(scenario, preset)
        .map_err(|e| anyhow::anyhow!("env {name:?}: {e}"))?;
    let mut overrides = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, text)) = pair.split_once('=') else {
            bail!("env {name:?}: {pair:?} is not KEY=VALUE");
        };
        let value = lockstep_canon::parse(text.as_bytes())
            .unwrap_or_else(|_| Value::String(text.to_string()));
        overrides.insert(key.to_string(), value);
    }
    let params = if overrides.is_empty() {
        base.params().clone()
    } else {
        let mut options = Map::new();
        options.insert("params".into(), Value::Object(overrides));
        lockstep_range::params_from_options(base.params(), &Value::Object(options))
            .map_err(|e| anyhow::anyhow!("env {name:?}: {e}"))?
    };
    let factory = lockstep_range::RangeFactory::new(params)
        .map_err(|e| anyhow::anyhow!("env {name:?}: {e}"))?
        .with_id(name);
    Ok(Box::new(factory))
}

fn experiment_names() -> Vec<String> {
    lockstep::experiment::ENV_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn experiment(name: &str) -> Resolved {
    lockstep::experiment::ResetFixtureEnv::from_name(name)?;
    let id = name.to_string();
    let make = move || -> Result<Box<dyn lockstep::env::Env>, lockstep::env::EnvError> {
        let env =
            lockstep::experiment::ResetFixtureEnv::from_name(&id).expect("resolved once already");
        Ok(Box::new(env))
    };
    Some(Ok(Box::new((name.to_string(), make))))
}

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

/// Where an env comes from: a built-in name, or an external command speaking the protocol.
pub enum EnvSource {
    Named(Box<dyn EnvFactory>, crate::cmd::trace::ChildRunner),
    External(ProcessEnvFactory),
}

impl EnvSource {
    /// Resolves a built-in name, or, with `argv`, the external command.
    pub fn resolve(name: &str, argv: Option<&[String]>) -> anyhow::Result<EnvSource> {
        Ok(match argv {
            Some(argv) => EnvSource::External(ProcessEnvFactory::new(
                argv.to_vec(),
                ProcessOptions::default(),
            )),
            None => EnvSource::Named(resolve(name)?, crate::cmd::trace::ChildRunner::current()?),
        })
    }

    pub fn factory(&self) -> &dyn EnvFactory {
        match self {
            EnvSource::Named(f, _) => f.as_ref(),
            EnvSource::External(f) => f,
        }
    }

    /// The other-process runner: this executable re-run for a built-in env, a fresh child
    /// for an external one.
    pub fn runner(&self) -> &dyn ProcessRunner {
        match self {
            EnvSource::Named(_, runner) => runner,
            EnvSource::External(f) => f,
        }
    }
}

/// What the user named: a built-in env, or an external command.
pub enum EnvTarget {
    Name(String),
    Command(Vec<String>),
}

impl EnvSource {
    /// Resolves `--env NAME` or `--cmd -- ARGV...` (exactly one of them).
    pub fn from_args(
        env: Option<&str>,
        cmd: bool,
        argv: &[String],
    ) -> anyhow::Result<(EnvSource, EnvTarget)> {
        match (env, cmd) {
            (Some(_), true) => bail!("give --env NAME or --cmd -- ARGV..., not both"),
            (None, true) if argv.is_empty() => {
                bail!("--cmd needs the environment's command after `--`")
            }
            (None, true) => Ok((
                EnvSource::resolve("", Some(argv))?,
                EnvTarget::Command(argv.to_vec()),
            )),
            (_, false) if !argv.is_empty() => bail!("a command after `--` needs --cmd"),
            (Some(name), false) => Ok((
                EnvSource::resolve(name, None)?,
                EnvTarget::Name(name.to_string()),
            )),
            (None, false) => bail!("name an env with --env NAME, or --cmd -- ARGV..."),
        }
    }
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
