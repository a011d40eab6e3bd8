//! `lockstep golden record|verify|update`: golden trajectory files (docs/golden.md).
//!
//! insta's workflow: a failing verify leaves the would-be file beside the golden as
//! `FILE.new` (never when `CI` is set), and every failure ends with the exact command to run
//! next. Accepting a change is `update`, which refuses to run without a reason.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use lockstep::golden::{self, Golden};

use crate::envs;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Record a new golden file (refuses to overwrite one: use `update`).
    Record {
        /// Environment name (e.g. `fixture`); or `--cmd -- ARGV...` for an external env.
        #[arg(long)]
        env: Option<String>,
        /// The RNG seed the episode is reset with.
        #[arg(long, default_value_t = 0, value_parser = crate::counts::seed, allow_negative_numbers = true)]
        seed: u64,
        /// Steps after the reset (fewer when the episode ends first).
        #[arg(long, default_value_t = 100, value_parser = crate::counts::steps, allow_negative_numbers = true)]
        steps: u64,
        /// Changelog date, YYYY-MM-DD (default: today, UTC).
        #[arg(long)]
        date: Option<String>,
        /// The golden file to write (JSON, docs/golden.md); it must not exist yet.
        file: PathBuf,
        #[command(flatten)]
        external: envs::ExternalEnvArgs,
    },
    /// Re-run the env and compare with the golden file (exit 0 same, 1 diverged).
    Verify {
        /// Env to verify (default: the env recorded in the file, its command line for an
        /// external env).
        #[arg(long)]
        env: Option<String>,
        /// The golden file to verify (it names its env, seed and steps).
        file: PathBuf,
        #[command(flatten)]
        external: envs::ExternalEnvArgs,
    },
    /// Re-record a golden file, appending the reason to its changelog.
    Update {
        /// Why the trajectory changed (required, non-empty).
        #[arg(long)]
        reason: Option<String>,
        /// Env to record (default: the env recorded in the file, its command line for an
        /// external env).
        #[arg(long)]
        env: Option<String>,
        /// Changelog date, YYYY-MM-DD (default: today, UTC).
        #[arg(long)]
        date: Option<String>,
        /// The golden file to re-record in place (written atomically).
        file: PathBuf,
        #[command(flatten)]
        external: envs::ExternalEnvArgs,
    },
}

/// A golden command's env, and the command line of an external one.
type Target = (Box<dyn lockstep::env::EnvFactory>, Option<Vec<String>>);

/// The env a golden command runs and, for an external env, its command line: `--env NAME`,
/// `--cmd -- ARGV...`, or (verify, update) what the file names.
fn target(
    env: Option<&str>,
    external: &envs::ExternalEnvArgs,
    golden: Option<&Golden>,
) -> anyhow::Result<Target> {
    let external_of = |argv: &[String]| -> anyhow::Result<_> {
        let factory: Box<dyn lockstep::env::EnvFactory> =
            Box::new(external.factory_of(argv.to_vec())?);
        Ok((factory, Some(argv.to_vec())))
    };
    match (
        env,
        external.command()?,
        golden.and_then(|g| g.argv.as_deref()),
    ) {
        (Some(_), Some(_), _) => bail!("give --env NAME or --cmd -- ARGV..., not both"),
        (None, Some(argv), _) => external_of(argv),
        (Some(name), None, _) => Ok((envs::resolve(name)?, None)),
        (None, None, Some(argv)) => external_of(argv),
        (None, None, None) => match golden {
            Some(g) => Ok((envs::resolve(&g.env)?, None)),
            None => bail!("name an env with --env NAME, or --cmd -- ARGV..."),
        },
    }
}

/// Today's date in UTC. The date is bookkeeping of the golden file, never env output, so the
/// wall clock is allowed here.
fn today() -> String {
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now();
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    lockstep::clock::format_rfc3339_millis(secs, 0)[..10].to_string()
}

fn header(what: &str) -> anyhow::Result<()> {
    outln!("lockstep {} golden {what}", env!("CARGO_PKG_VERSION"));
    Ok(())
}

fn shell(p: &Path) -> String {
    crate::shell::quote(&p.display().to_string())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Sub::Record {
            env,
            external,
            seed,
            steps,
            date,
            file,
        } => {
            let (factory, argv) = target(env.as_deref(), &external, None)?;
            header(&format!(
                "record --env {} --seed {seed} --steps {steps}",
                factory.id()
            ))?;
            let exists = || {
                anyhow::anyhow!(
                    "{} exists; to change it run: lockstep golden update {} --reason \"...\"",
                    file.display(),
                    shell(&file)
                )
            };
            // Checked first so that no env runs in vain; the write itself refuses to replace a
            // file that appeared meanwhile.
            if file.exists() {
                return Err(exists());
            }
            let mut g = golden::record(factory.as_ref(), seed, steps, &date.unwrap_or_else(today))?;
            g.argv = argv;
            match g.save_new(&file) {
                Err(golden::GoldenError::Exists { .. }) => return Err(exists()),
                other => other?,
            }
            outln!(
                "recorded {}: episode {} ({} transitions, {})",
                file.display(),
                g.episode,
                g.step_digests.len(),
                end_text(&g)
            );
            Ok(ExitCode::SUCCESS)
        }
        Sub::Verify {
            env,
            external,
            file,
        } => {
            let g = Golden::load(&file)?;
            let (factory, _) = target(env.as_deref(), &external, Some(&g))?;
            let name = factory.id();
            header(&format!(
                "verify {} (env {name}, seed {}, steps {})",
                file.display(),
                g.seed,
                g.steps
            ))?;
            let v = golden::verify(factory.as_ref(), &g)?;
            for note in &v.notes {
                outln!("note: {note}");
            }
            if v.passed {
                outln!("ok {}: episode {}", file.display(), g.episode);
                let pending = golden::pending_path(&file);
                if pending.exists() {
                    std::fs::remove_file(&pending)
                        .with_context(|| format!("removing {}", pending.display()))?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            match &v.divergence {
                Some(d) => outln!(
                    "FAIL {}: the episode diverges from the golden at {}",
                    file.display(),
                    d.describe("golden", "now")
                ),
                None => outln!("FAIL {}: the digests cannot be compared", file.display()),
            }
            outln!("golden episode {}, now {}", g.episode, v.current.episode);
            match golden::write_pending(&file, &v)? {
                Some(p) => outln!(
                    "wrote the new trajectory to {} (compare: diff {} {})",
                    p.display(),
                    shell(&file),
                    shell(&p)
                ),
                None => outln!("CI is set: no pending file written"),
            }
            let env_arg = env.map(|e| format!(" --env {e}")).unwrap_or_default();
            outln!(
                "if the change is intended, run: lockstep golden update {}{env_arg} --reason \"<why the trajectory changed>\"",
                shell(&file)
            );
            Ok(ExitCode::from(1))
        }
        Sub::Update {
            reason,
            env,
            external,
            date,
            file,
        } => {
            header(&format!("update {}", file.display()))?;
            let reason = reason.unwrap_or_default();
            if reason.trim().is_empty() {
                bail!(
                    "refusing to update {} without a reason; run: lockstep golden update {} --reason \"<why the trajectory changed>\"",
                    file.display(),
                    shell(&file)
                );
            }
            let g = Golden::load(&file)?;
            let (factory, argv) = target(env.as_deref(), &external, Some(&g))?;
            let mut u = golden::update(factory.as_ref(), &g, &reason, &date.unwrap_or_else(today))?;
            u.argv = argv;
            u.save(&file)?;
            let pending = golden::pending_path(&file);
            if pending.exists() {
                std::fs::remove_file(&pending)
                    .with_context(|| format!("removing {}", pending.display()))?;
            }
            let what = if u.episode == g.episode {
                "unchanged".to_string()
            } else {
                format!("{} -> {}", g.episode, u.episode)
            };
            outln!("updated {}: episode {what}", file.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn end_text(g: &Golden) -> &'static str {
    match g.end {
        lockstep::trace::End::Done => "episode done",
        lockstep::trace::End::StepsExhausted => "steps exhausted",
    }
}
