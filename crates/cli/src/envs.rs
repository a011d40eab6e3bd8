//! Resolves the environment names the CLI accepts into factories of fresh instances.
//!
//! Names come in families (`fixture` and `fixture:<fault>` now; `range:<scenario>`,
//! `experiment` and external commands later). Adding a family is adding one line to
//! [`FAMILIES`]: how its names are listed, and how one resolves.

use anyhow::bail;
use lockstep::check::ProcessRunner;
use lockstep::env::EnvFactory;
use lockstep_protocol::{ProcessEnvFactory, ProcessOptions};

use crate::child_runner::ChildRunner;

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
    Family {
        names: webtask_names,
        resolve: webtask,
    },
];

fn webtask_names() -> Vec<String> {
    lockstep_webtask::ENV_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// `webtask` and `webtask:partial-reset`: each instance starts its server as this executable
/// re-run with the hidden `webtask-server` subcommand (cmd/webtask_server.rs), so the name
/// alone makes a working env in any process. Chromium is only needed when one is made.
fn webtask(name: &str) -> Resolved {
    let mode = lockstep_webtask::WebTask::mode_of(name)?;
    let make = move || -> Result<Box<dyn lockstep::env::Env>, lockstep::env::EnvError> {
        let exe = std::env::current_exe().map_err(|e| {
            lockstep::env::EnvError::new(format!("webtask: cannot find this executable: {e}"))
        })?;
        let command = [exe.into_os_string(), "webtask-server".into()];
        Ok(Box::new(lockstep_webtask::WebTask::new(mode, &command)?))
    };
    Some(Ok(Box::new((name.to_string(), make))))
}

fn range_names() -> Vec<String> {
    lockstep_range::scenarios()
        .iter()
        .map(|s| format!("range:{s}"))
        .collect()
}

/// `range:SCENARIO[:PRESET][?KEY=VALUE&...]` (see `lockstep_range::name`).
fn range(name: &str) -> Resolved {
    let found = lockstep_range::factory_from_name(name)?;
    Some(
        found
            .map(|f| Box::new(f) as Box<dyn EnvFactory>)
            .map_err(|e| anyhow::anyhow!("env {name:?}: {e}")),
    )
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

/// The factory for `name`; an unknown name is an error listing the known ones. A golden of an
/// external env names it `cmd:["ARGV", ...]` ([`lockstep::golden::Golden::env_name`]): its
/// command line, run with the default limits.
pub fn resolve(name: &str) -> anyhow::Result<Box<dyn EnvFactory>> {
    if let Some(argv) = name.strip_prefix(lockstep::golden::CMD_PREFIX) {
        let argv: Vec<String> = serde_json::from_str(argv)
            .map_err(|e| anyhow::anyhow!("env {name:?}: not a JSON array of strings: {e}"))?;
        if argv.is_empty() {
            bail!("env {name:?}: an empty command line");
        }
        return Ok(Box::new(ProcessEnvFactory::new(
            argv,
            ProcessOptions::default(),
        )));
    }
    for family in FAMILIES {
        if let Some(found) = (family.resolve)(name) {
            return found;
        }
    }
    bail!("unknown env {name:?}; known envs: {}", known().join(", "))
}

// The flags that name an external environment, shared by `check`, `replay` and `trace`.
// (A plain comment: the commands' arguments are built deferred, so a doc comment here
// would become the `about` of every command that flattens these flags.)
#[derive(clap::Args, Debug, Clone)]
pub struct ExternalEnvArgs {
    /// Check an external environment: the command after `--` serves it over the lockstep
    /// protocol (docs/protocol.md), e.g. `--cmd -- python -m lockstep_adapter gymnasium CartPole-v1`.
    #[arg(long)]
    pub cmd: bool,
    /// Seconds an external environment may take to answer one request before it is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Seconds an external environment may take to start and send its handshake (interpreter
    /// start, imports). Default: the `--timeout` value.
    #[arg(long, value_name = "SECONDS")]
    pub startup_timeout: Option<f64>,
    /// Run the external environment's processes in the caller's home, temp and working
    /// directories, instead of fresh private ones for each (the default: nothing an earlier
    /// run left on disk reaches a check). The leftover check then does not apply.
    #[arg(long)]
    pub shared_dirs: bool,
    /// Hold the external environment to this reset contract (TOML or JSON, docs/contract.md)
    /// instead of the fields it declares or the attributes inferred from its state: the
    /// contract's probed layers (files, sqlite, http, postgres, browser) are read after every
    /// reset. `lockstep contract infer` proposes one.
    #[arg(long, value_name = "FILE")]
    pub contract: Option<std::path::PathBuf>,
    /// The external environment's command line (after `--`), never passed through a shell.
    #[arg(last = true)]
    pub argv: Vec<String>,
}

impl ExternalEnvArgs {
    /// The factory of `argv` with these flags' limits (goldens of external envs).
    pub fn factory_of(&self, argv: Vec<String>) -> anyhow::Result<ProcessEnvFactory> {
        if self.contract.is_some() {
            bail!("--contract holds an env to a contract in `lockstep check`; it would be ignored here");
        }
        Ok(ProcessEnvFactory::new(argv, self.options()?))
    }

    /// The command line, when `--cmd` names one; an error for half of the pair.
    pub fn command(&self) -> anyhow::Result<Option<&[String]>> {
        match (self.cmd, self.argv.is_empty()) {
            (true, true) => bail!("--cmd needs the environment's command after `--`"),
            (false, false) => bail!("a command after `--` needs --cmd"),
            (true, false) => Ok(Some(&self.argv)),
            (false, true) => Ok(None),
        }
    }

    fn options(&self) -> anyhow::Result<ProcessOptions> {
        let seconds = |flag: &str, value: f64| {
            if !(value.is_finite() && value > 0.0 && value <= 86_400.0) {
                bail!("{flag} {value} must be a number of seconds in (0, 86400]");
            }
            Ok(std::time::Duration::from_secs_f64(value))
        };
        let request_timeout = seconds("--timeout", self.timeout)?;
        let startup_timeout = match self.startup_timeout {
            Some(s) => seconds("--startup-timeout", s)?,
            None => request_timeout,
        };
        Ok(ProcessOptions {
            request_timeout,
            startup_timeout,
            private_dirs: !self.shared_dirs,
            // The layers an env's state names (a browser's DevTools endpoint) are read with
            // the probes contracts use.
            probes: lockstep_protocol::LayerProbes(Some(std::sync::Arc::new(
                lockstep_layers::probes(),
            ))),
            ..ProcessOptions::default()
        })
    }
}

// `--ignore POINTER`, repeatable: shared by `check`, `replay`, `trace` and the worker.
// (A plain comment: the commands' arguments are built deferred, so a doc comment here
// would become the `about` of every command that flattens these flags.)
#[derive(clap::Args, Debug, Clone, Default)]
pub struct IgnoreArgs {
    /// Leave this field out of every comparison and digest, and go on comparing the rest: a
    /// JSON Pointer into each agent's step, `/obs/KEY/...` or `/info/...`, or into the starting
    /// state the audit fingerprints, `/state/FIELD/...`; `*` is one level, `**` any depth (e.g.
    /// `/obs/chat_messages/*/timestamp`, `/info/elapsed_time`; docs/replay.md, "Fields meant
    /// to vary"). Repeatable; a contract's `[compare] ignore` adds to it.
    #[arg(long, value_name = "POINTER")]
    pub ignore: Vec<String>,
}

impl IgnoreArgs {
    /// These patterns, then `contract`'s `[compare] ignore`, each once.
    pub fn with_contract(
        &self,
        contract: Option<&lockstep::contract::Contract>,
    ) -> anyhow::Result<lockstep::ignore::Ignore> {
        let mut all = self.ignore.clone();
        if let Some(c) = contract {
            all.extend(c.compare.ignore.iter().cloned());
        }
        lockstep::ignore::Ignore::parse(&all).map_err(|e| anyhow::anyhow!("--ignore: {e}"))
    }

    /// The `--ignore` flags of `ignore`, for a command line lockstep runs or prints.
    pub fn flags(ignore: &lockstep::ignore::Ignore) -> Vec<String> {
        ignore
            .texts()
            .iter()
            .flat_map(|p| ["--ignore".to_string(), p.clone()])
            .collect()
    }
}

// `--env NAME` or `--cmd -- ARGV...`: the one environment of `replay` and `trace`.
// (A plain comment: the commands' arguments are built deferred, so a doc comment here
// would become the `about` of every command that flattens these flags.)
#[derive(clap::Args, Debug, Clone)]
pub struct EnvArgs {
    /// Environment name (e.g. `fixture`, `fixture:global-rng`, `range:ransomware`).
    #[arg(long)]
    pub env: Option<String>,
    #[command(flatten)]
    pub external: ExternalEnvArgs,
}

impl EnvArgs {
    pub fn source(&self) -> anyhow::Result<EnvSource> {
        EnvSource::one(self.env.as_deref(), &self.external)
    }
}

/// Where an env comes from: a built-in name, or an external command speaking the protocol.
pub enum EnvSource {
    Named(Box<dyn EnvFactory>, ChildRunner),
    External(ProcessEnvFactory),
    /// An external env held to `--contract FILE`.
    Contracted(lockstep::contracted::Contracted<ProcessEnvFactory>),
}

impl EnvSource {
    /// A built-in env by name.
    pub fn named(name: &str) -> anyhow::Result<EnvSource> {
        Ok(EnvSource::Named(resolve(name)?, ChildRunner::current()?))
    }

    /// The external env of `--cmd -- ARGV...`.
    pub fn external(args: &ExternalEnvArgs) -> anyhow::Result<Option<EnvSource>> {
        let Some(argv) = args.command()? else {
            if args.contract.is_some() {
                bail!("--contract holds an external env to a contract: it needs --cmd -- ARGV...");
            }
            return Ok(None);
        };
        let factory = ProcessEnvFactory::new(argv.to_vec(), args.options()?);
        let Some(path) = &args.contract else {
            return Ok(Some(EnvSource::External(factory)));
        };
        let contract = lockstep::contract::Contract::load(path)?;
        Ok(Some(EnvSource::Contracted(
            lockstep::contracted::Contracted {
                inner: factory,
                contract,
                probes: lockstep_layers::probes,
            },
        )))
    }

    /// `--env NAME` or `--cmd -- ARGV...`, exactly one of them.
    pub fn one(env: Option<&str>, external: &ExternalEnvArgs) -> anyhow::Result<EnvSource> {
        match (env, EnvSource::external(external)?) {
            (Some(_), Some(_)) => bail!("give --env NAME or --cmd -- ARGV..., not both"),
            (Some(name), None) => EnvSource::named(name),
            (None, Some(source)) => Ok(source),
            (None, None) => bail!("name an env with --env NAME, or --cmd -- ARGV..."),
        }
    }

    /// Starts an external env once and reads its handshake, so that an env that cannot start
    /// (a missing program, an import error, an unknown env id) is one error, said once, before
    /// any trial or check starts it again. Built-in envs need no probe. Gives an external
    /// env's handshake `env_id`, the name its report gives it.
    pub fn probe(&self) -> anyhow::Result<Option<String>> {
        match self {
            EnvSource::Named(..) => Ok(None),
            EnvSource::External(f)
            | EnvSource::Contracted(lockstep::contracted::Contracted { inner: f, .. }) => {
                let mut env = f.spawn().map_err(|e| anyhow::anyhow!("{}", e.message))?;
                let id = env.handshake().env_id.clone();
                lockstep::env::Env::close(&mut env)
                    .map_err(|e| anyhow::anyhow!("{}", e.message))?;
                Ok(Some(id))
            }
        }
    }

    /// The contract an external env is held to (`--contract FILE`).
    pub fn contract(&self) -> Option<&lockstep::contract::Contract> {
        match self {
            EnvSource::Contracted(c) => Some(&c.contract),
            _ => None,
        }
    }

    /// This source with its fresh-process runner leaving out `ignore`, as the checks do.
    pub fn ignoring(mut self, ignore: &lockstep::ignore::Ignore) -> EnvSource {
        match &mut self {
            EnvSource::Named(_, runner) => runner.ignore = ignore.clone(),
            EnvSource::External(f) => f.options.ignore = ignore.clone(),
            EnvSource::Contracted(c) => c.inner.options.ignore = ignore.clone(),
        }
        self
    }

    pub fn factory(&self) -> &dyn EnvFactory {
        match self {
            EnvSource::Named(f, _) => f.as_ref(),
            EnvSource::External(f) => f,
            EnvSource::Contracted(f) => f,
        }
    }

    /// The other-process runner: this executable re-run for a built-in env, a fresh child
    /// for an external one.
    pub fn runner(&self) -> &dyn ProcessRunner {
        match self {
            EnvSource::Named(_, runner) => runner,
            EnvSource::External(f) => f,
            EnvSource::Contracted(f) => &f.inner,
        }
    }
}

/// Probes every env of a `check` run ([`EnvSource::probe`]); prints each failure once, with
/// its traceback as lines, and returns, per env, the first line of its error, or what it
/// started as (an external env's handshake `env_id`).
pub fn probe_all(sources: &[(String, EnvSource)]) -> Vec<Result<Option<String>, String>> {
    sources
        .iter()
        .map(|(id, source)| {
            source.probe().map_err(|e| {
                let text = format!("{e:#}");
                eprintln!("error: env {id} cannot start; its trials are not run:\n{text}");
                text.lines().next().unwrap_or_default().to_string()
            })
        })
        .collect()
}

/// The trials of `work` in run order: those that ran (in the order of `ran`), and for each
/// env that could not start an error trial that says so.
pub fn with_unstarted(
    work: &[(usize, u64)],
    broken: &[Option<String>],
    ids: &[String],
    ran: Vec<lockstep::report::Trial>,
) -> Vec<lockstep::report::Trial> {
    let mut ran = ran.into_iter();
    work.iter()
        .filter_map(|&(e, seed)| match &broken[e] {
            Some(why) => Some(lockstep::report::Trial::errored(
                &ids[e],
                seed,
                format!("not run: the env cannot start: {why}"),
            )),
            None => ran.next(),
        })
        .collect()
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
