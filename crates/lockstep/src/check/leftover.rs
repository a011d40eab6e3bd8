//! The leftover check: does what one run leaves on disk change the next run?
//!
//! An env that caches its first generated level under `~/.cache/` (or a database file in its
//! working directory) gives every later process that level, whatever the seed. Every process
//! lockstep starts has fresh private directories ([`crate::private_dirs`]), so that no verdict
//! depends on what an earlier run left; this check shows what the env would do without them:
//! seed S+1 plays in a fresh process, then seed S in a second fresh process given the same
//! home, temp and working directories, compared with seed S in a pristine one.

use super::{first_divergence, CheckError, CheckOutcome, Ctx, ProcessRunner};

impl Ctx<'_> {
    pub(super) fn leftover(
        &self,
        runner: Option<&dyn ProcessRunner>,
    ) -> Result<CheckOutcome, CheckError> {
        let (seed, steps) = (self.cfg.seed, self.cfg.steps);
        let earlier = self.cfg.seed_at(1);
        let id = self.factory.id();
        let not_applicable = |why: &str| {
            Ok(CheckOutcome::not_applicable(
                self.kind,
                format!("not applicable: {why}"),
            ))
        };
        let Some(runner) = runner else {
            return not_applicable("the env cannot be started by name in a fresh process");
        };
        let after = |capture| runner.run_after(&id, earlier, seed, steps, capture);
        let pristine = |capture| runner.run_reference(&id, seed, steps, capture);
        let Some(shared) = after(None).map_err(CheckError::Runner)? else {
            return not_applicable(
                "processes of this env do not get private directories (--shared-dirs, or an env object of this interpreter)",
            );
        };
        let Some(clean) = pristine(None).map_err(CheckError::Runner)? else {
            return not_applicable("the env cannot be started by name in a fresh process");
        };
        let l = format!("seed {seed} in a pristine process");
        let r = format!("seed {seed} after seed {earlier} ran with the same home");
        match first_divergence(&clean.trace.step_digests, &shared.trace.step_digests) {
            None => Ok(self.outcome(
                &clean,
                l,
                r,
                None,
                true,
                format!(
                    "seed {seed} gives the same episode in a fresh process whose home, temp and working directories seed {earlier}'s process used first as in a pristine one"
                ),
            )),
            Some(d) => {
                let d = self.localised((&clean, &shared), d, |k| {
                    let gone = || CheckError::Runner("leftover: the runner stopped".into());
                    let left = pristine(Some(k)).map_err(CheckError::Runner)?.ok_or_else(gone)?;
                    let right = after(Some(k)).map_err(CheckError::Runner)?.ok_or_else(gone)?;
                    Ok((left, right))
                })?;
                let summary = format!(
                    "{} (what seed {earlier}'s run left in the home, temp or working directory changed the next run: a cache under ~/.cache, a file the env writes)",
                    self.fail_summary(&d, &l, &r)
                );
                Ok(self.failed((&clean, &shared), l, r, d, summary))
            }
        }
    }
}
