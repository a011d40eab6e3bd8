//! `lockstep report merge`: shard reports joined into the report one run would have written.

use std::collections::BTreeMap;

use super::{about, Report, ReportError, Shard};

/// Joins shard reports into the report a single run would have written.
///
/// Every input must come from the same run (same schema, version and parameters), each shard
/// at most once; together they must cover every shard of the run.
pub fn merge(reports: Vec<(String, Report)>) -> Result<Report, ReportError> {
    let Some((first_name, first)) = reports.first() else {
        return Err(ReportError::Mismatch {
            what: "report merge".into(),
            message: "no reports given".into(),
        });
    };
    for (name, r) in &reports {
        if let Some(shard) = r.shard {
            shard.validate().map_err(|message| ReportError::Mismatch {
                what: name.clone(),
                message,
            })?;
        }
    }
    let params = first.params.clone();
    let version = first.lockstep_version.clone();
    let count = first.shard.map_or(1, |s| s.count);
    let mut seen = vec![false; count as usize];
    let mut trials = Vec::new();
    let mut goldens = Vec::new();
    for (name, r) in &reports {
        let mismatch = |message: String| ReportError::Mismatch {
            what: name.clone(),
            message,
        };
        if r.params != params {
            return Err(mismatch(format!("run parameters differ from {first_name}")));
        }
        if r.lockstep_version != version {
            return Err(mismatch(format!(
                "written by lockstep {} but {first_name} by {version}",
                r.lockstep_version
            )));
        }
        let shard = r.shard.unwrap_or(Shard { index: 1, count: 1 });
        if shard.count != count {
            return Err(mismatch(format!(
                "is shard {}/{} but {first_name} is of a run in {count} shards",
                shard.index, shard.count
            )));
        }
        let slot = &mut seen[(shard.index - 1) as usize];
        if *slot {
            return Err(mismatch(format!(
                "shard {}/{} given twice",
                shard.index, shard.count
            )));
        }
        *slot = true;
        check_shard_contents(r, shard).map_err(mismatch)?;
        let mut mine = r.trials.clone();
        about::unhoist(&r.envs, &mut mine);
        trials.extend(mine);
        goldens.extend(r.goldens.iter().cloned());
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(ReportError::Mismatch {
            what: "report merge".into(),
            message: format!("shard {}/{count} is missing", missing + 1),
        });
    }
    Ok(Report::assemble(params, None, trials, goldens))
}

/// A shard report holds exactly the trials (env x seed) and goldens its shard owns: a trial
/// removed, added from outside the run, or given twice is refused, naming it.
fn check_shard_contents(r: &Report, shard: Shard) -> Result<(), String> {
    let mut expected: BTreeMap<(&str, u64), bool> = BTreeMap::new();
    for env in &r.params.envs {
        for (pos, &seed) in r.params.seeds.iter().enumerate() {
            if shard.owns(pos) {
                expected.insert((env.as_str(), seed), false);
            }
        }
    }
    for t in &r.trials {
        match expected.get_mut(&(t.env.as_str(), t.seed)) {
            None => {
                return Err(format!(
                    "trial env {:?} seed {} is not one of shard {}/{} of this run",
                    t.env, t.seed, shard.index, shard.count
                ))
            }
            Some(true) => {
                return Err(format!(
                    "trial env {:?} seed {} appears twice",
                    t.env, t.seed
                ))
            }
            Some(seen) => *seen = true,
        }
    }
    if let Some(((env, seed), _)) = expected.iter().find(|(_, seen)| !**seen) {
        return Err(format!(
            "trial env {env:?} seed {seed} of shard {}/{} is missing",
            shard.index, shard.count
        ));
    }
    let owned: Vec<&String> = r
        .params
        .goldens
        .iter()
        .enumerate()
        .filter(|(p, _)| shard.owns(*p))
        .map(|(_, g)| g)
        .collect();
    let mut given: Vec<&String> = r.goldens.iter().map(|g| &g.file).collect();
    given.sort();
    let mut want = owned.clone();
    want.sort();
    if given != want {
        return Err(format!(
            "its goldens {given:?} are not the ones shard {}/{} owns: {owned:?}",
            shard.index, shard.count
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all_trials, sample_params};
    use super::*;

    #[test]
    fn merged_shards_equal_the_single_run() {
        let params = sample_params();
        let full = Report::assemble(params.clone(), None, all_trials(), vec![]);
        let shard_reports: Vec<(String, Report)> = (1..=2)
            .map(|i| {
                let shard = Shard { index: i, count: 2 };
                let trials = all_trials()
                    .into_iter()
                    .filter(|t| shard.owns(params.seeds.iter().position(|&s| s == t.seed).unwrap()))
                    .collect();
                (
                    format!("shard{i}.json"),
                    Report::assemble(params.clone(), Some(shard), trials, vec![]),
                )
            })
            .collect();
        let round_tripped: Vec<(String, Report)> = shard_reports
            .into_iter()
            .map(|(n, r)| {
                let back = Report::from_json(&r.to_json(), &n).unwrap();
                (n, back)
            })
            .collect();
        let merged = merge(round_tripped.clone()).unwrap();
        assert_eq!(merged.to_json(), full.to_json());

        let err = merge(vec![round_tripped[0].clone()]).unwrap_err();
        assert!(err.to_string().contains("shard 2/2 is missing"), "{err}");
        let err = merge(vec![round_tripped[0].clone(), round_tripped[0].clone()]).unwrap_err();
        assert!(err.to_string().contains("given twice"), "{err}");
    }

    /// Issue 9: merge took a shard with a trial removed, or with a seed outside the run.
    #[test]
    fn issue9_merge_refuses_a_shard_with_a_trial_missing_or_foreign() {
        let params = sample_params();
        let shard_of = |i: u32| {
            let shard = Shard { index: i, count: 2 };
            let trials = all_trials()
                .into_iter()
                .filter(|t| shard.owns(params.seeds.iter().position(|&s| s == t.seed).unwrap()))
                .collect();
            Report::assemble(params.clone(), Some(shard), trials, vec![])
        };
        let (one, two) = (shard_of(1), shard_of(2));
        let mut removed = one.clone();
        removed.trials.remove(1);
        let err = merge(vec![
            ("a.json".into(), removed),
            ("b.json".into(), two.clone()),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("a.json: trial env") && err.contains("is missing"),
            "{err}"
        );
        let mut foreign = one.clone();
        foreign.trials[0].seed = 99;
        let err = merge(vec![
            ("a.json".into(), foreign),
            ("b.json".into(), two.clone()),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("seed 99 is not one of shard 1/2"), "{err}");
        let mut stolen = one.clone();
        stolen.trials.push(two.trials[0].clone());
        let err = merge(vec![
            ("a.json".into(), stolen),
            ("b.json".into(), two.clone()),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("is not one of shard 1/2"), "{err}");
        assert!(merge(vec![("a.json".into(), one), ("b.json".into(), two)]).is_ok());
    }

    #[test]
    fn merge_refuses_out_of_range_shards_naming_the_file() {
        let params = sample_params();
        let good = Report::assemble(
            params.clone(),
            Some(Shard { index: 1, count: 2 }),
            vec![],
            vec![],
        );
        for (index, count) in [(0, 2), (3, 2), (0, 0), (1, 0)] {
            let mut bad = good.clone();
            bad.shard = Some(Shard { index, count });
            let json = String::from_utf8(bad.to_json()).unwrap();
            let back = Report::from_json(json.as_bytes(), "bad.json").unwrap();
            for inputs in [
                vec![("bad.json".to_string(), back.clone())],
                vec![
                    ("good.json".to_string(), good.clone()),
                    ("bad.json".to_string(), back),
                ],
            ] {
                let err = merge(inputs).unwrap_err();
                assert!(
                    matches!(&err, ReportError::Mismatch { what, .. } if what == "bad.json"),
                    "{index}/{count}: {err}"
                );
                assert!(err.to_string().contains("needs 1 <= I <= N"), "{err}");
            }
        }
    }

    /// The env records are kept once per env in each report; a merge gives every shard's
    /// trials theirs back first, so the merged report holds them exactly as the single run.
    #[test]
    fn env_records_survive_a_merge_byte_for_byte() {
        use crate::report::{ContractInfo, EnvAbout};
        let about = |id: &str| EnvAbout {
            driver: None,
            provenance: None,
            env_id: id.into(),
            contract: ContractInfo {
                name: "c".into(),
                version: 1,
                profile: "python".into(),
                declared: false,
                skipped: Default::default(),
                layers: vec![],
            },
        };
        let trials = || {
            let mut v = all_trials();
            for t in &mut v {
                t.about = Some(about(&format!("{}-id", t.env)));
            }
            // One seed of a-env (seed 3) says something else about itself.
            v[1].about = Some(about("odd"));
            v
        };
        let params = sample_params();
        let full = Report::assemble(params.clone(), None, trials(), vec![]);
        assert_eq!(full.envs[1].about, Some(about("a-env-id")));
        assert_eq!(full.trials.iter().filter(|t| t.about.is_some()).count(), 1);
        let shards: Vec<(String, Report)> = (1..=2)
            .map(|i| {
                let shard = Shard { index: i, count: 2 };
                let mine = trials()
                    .into_iter()
                    .filter(|t| shard.owns(params.seeds.iter().position(|&s| s == t.seed).unwrap()))
                    .collect();
                let r = Report::assemble(params.clone(), Some(shard), mine, vec![]);
                let name = format!("shard{i}.json");
                let back = Report::from_json(&r.to_json(), &name).unwrap();
                (name, back)
            })
            .collect();
        assert_eq!(merge(shards).unwrap().to_json(), full.to_json());
    }
}
