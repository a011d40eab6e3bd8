//! One panel per env: what it says about itself (its id, the reset contract the audit held it
//! to: name, version, layers and fields), how it was run (an external env's command line),
//! and the per-seed plots of its same-seed rollouts.

use std::fmt::Write;

use super::esc;
use super::plots::{seed_plot, Metric, SEEDS_MAX};
use crate::report::{EnvAbout, EnvParams, EpisodeGroup, Report, Trial};

const LENGTH: Metric = Metric {
    title: "episode length (steps)",
    value: |g| g.steps as f64,
};

const RETURN: Metric = Metric {
    title: "return (sum over agents)",
    value: EpisodeGroup::total_return,
};

/// The `Environments` section (`id="envs"`): a panel per env of the run.
pub(super) fn env_panels(h: &mut String, report: &Report) {
    h.push_str("<h2 id=\"envs\">Environments</h2>\n");
    for (i, env) in report.params.envs.iter().enumerate() {
        let about = report
            .envs
            .iter()
            .find(|r| &r.env == env)
            .and_then(|r| r.about.as_ref());
        let trials: Vec<&Trial> = report.trials.iter().filter(|t| &t.env == env).collect();
        let _ = writeln!(
            h,
            "<section class=\"env\" id=\"env-{i}\"><h3><code>{}</code></h3>",
            esc(env)
        );
        about_table(h, about, &report.params.env_params_of(env));
        let odd: Vec<u64> = trials
            .iter()
            .filter(|t| t.about.is_some())
            .map(|t| t.seed)
            .collect();
        if !odd.is_empty() {
            let _ = writeln!(
                h,
                "<p class=\"fail\">{} said something else about itself (another id or contract): \
                 see the full detail in report.json.</p>",
                esc(&format!("seeds {}", crate::report::seeds_text(&odd)))
            );
        }
        plots(h, &trials);
        h.push_str("</section>\n");
    }
}

fn about_table(h: &mut String, about: Option<&EnvAbout>, params: &EnvParams) {
    h.push_str("<table class=\"about\"><tbody>");
    let row = |h: &mut String, k: &str, v: String| {
        let _ = write!(h, "<tr><th>{k}</th><td>{v}</td></tr>");
    };
    row(
        h,
        "env id",
        about.map_or_else(
            || "<span class=\"na\">unknown: no trial got as far as its audit</span>".into(),
            |a| format!("<code>{}</code>", esc(&a.env_id)),
        ),
    );
    if let Some(c) = &params.command {
        let mut limits = format!("request timeout {}s", c.timeout);
        if let Some(s) = c.startup_timeout {
            let _ = write!(limits, ", start-up timeout {s}s");
        }
        row(
            h,
            "command",
            format!("<code>{}</code> ({limits})", esc(&words(&c.argv))),
        );
    }
    if params.seedless {
        row(
            h,
            "seedless",
            "declared with <code>--seedless</code>".into(),
        );
    }
    if let Some(a) = about {
        let c = &a.contract;
        row(
            h,
            "contract",
            format!(
                "<code>{}</code> version {}, profile <code>{}</code>, {}",
                esc(&c.name),
                c.version,
                esc(&c.profile),
                if c.declared {
                    "declared by the env"
                } else {
                    "inferred: the env declares none, so every top-level field of its state after a reset"
                }
            ),
        );
        let mut layers = String::from(
            "<table class=\"layers\"><thead><tr><th>layer</th><th>fields</th><th>probe</th></tr></thead><tbody>",
        );
        for l in &c.layers {
            let _ = write!(
                layers,
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
                esc(&l.name),
                esc(&l.fields.join(", ")),
                l.probe.as_deref().map_or_else(
                    || "&ndash;".to_string(),
                    |p| format!("<code>{}</code>", esc(p))
                )
            );
        }
        layers.push_str("</tbody></table>");
        row(h, "layers", layers);
    }
    h.push_str("</tbody></table>\n");
}

/// The episode-length and return plots, when the same-seed check ran.
fn plots(h: &mut String, trials: &[&Trial]) {
    let columns: Vec<(u64, &[EpisodeGroup])> = trials
        .iter()
        .filter(|t| !t.episodes.is_empty())
        .map(|t| (t.seed, t.episodes.as_slice()))
        .collect();
    if columns.is_empty() {
        return;
    }
    let rollouts: usize = columns
        .iter()
        .map(|(_, gs)| gs.iter().map(|g| g.rollouts.len()).sum::<usize>())
        .sum();
    let split: Vec<u64> = columns
        .iter()
        .filter(|(_, gs)| gs.len() > 1)
        .map(|(s, _)| *s)
        .collect();
    let verdict = if split.is_empty() {
        format!(
            "<span class=\"pass\">every seed's rollouts ended alike</span> ({rollouts} rollouts of {})",
            count(columns.len())
        )
    } else {
        format!(
            "<span class=\"fail\">rollouts of {} ended differently</span> ({rollouts} rollouts of {})",
            esc(&format!("seeds {}", crate::report::seeds_text(&split))),
            count(columns.len())
        )
    };
    let _ = writeln!(
        h,
        "<p class=\"plots-caption\">Same-seed rollouts per seed: {verdict}. One blue mark per seed \
         for rollout 1 and every rollout that ended like it; a red mark in a shaded column for a \
         rollout that did not.{}</p>",
        if columns.len() > SEEDS_MAX {
            format!(" The first {SEEDS_MAX} of {} seeds are drawn.", columns.len())
        } else {
            String::new()
        }
    );
    h.push_str("<div class=\"plots\">");
    h.push_str(&seed_plot(&LENGTH, &columns));
    h.push_str(&seed_plot(&RETURN, &columns));
    h.push_str("</div>\n");
}

fn count(seeds: usize) -> String {
    if seeds == 1 {
        "1 seed".into()
    } else {
        format!("{seeds} seeds")
    }
}

/// A command line to read: words with spaces or quotes in single quotes.
fn words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::super::tests::{sample_params, trial};
    use super::*;
    use crate::report::{ContractInfo, ExternalCommand, LayerInfo};

    #[test]
    fn a_panel_shows_the_id_the_contract_the_command_and_the_plots() {
        let mut params = sample_params();
        params.env_params = vec![EnvParams {
            env: "b-env".into(),
            seedless: true,
            command: Some(ExternalCommand {
                argv: vec!["python".into(), "-m".into(), "my env".into()],
                timeout: 30.0,
                startup_timeout: None,
                shared_dirs: false,
                contract: None,
            }),
        }];
        let mut t = trial("b-env", 5, true, true);
        t.about = Some(EnvAbout {
            driver: None,
            provenance: None,
            env_id: "gymnasium:CartPole-v1".into(),
            contract: ContractInfo {
                name: "cartpole".into(),
                version: 3,
                profile: "python".into(),
                declared: true,
                skipped: Default::default(),
                layers: vec![LayerInfo {
                    name: "state".into(),
                    fields: vec!["np_random".into(), "state".into()],
                    probe: None,
                }],
            },
        });
        t.episodes = vec![EpisodeGroup {
            rollouts: (1..=10).collect(),
            steps: 12,
            finished: true,
            returns: [("agent".to_string(), 12.0)].into_iter().collect(),
        }];
        let report = Report::assemble(params, None, vec![t], vec![]);
        let mut h = String::new();
        env_panels(&mut h, &report);
        for part in [
            "<section class=\"env\" id=\"env-0\"><h3><code>b-env</code></h3>",
            "<th>env id</th><td><code>gymnasium:CartPole-v1</code>",
            "<code>python -m &#39;my env&#39;</code> (request timeout 30s)",
            "<th>seedless</th>",
            "<code>cartpole</code> version 3, profile <code>python</code>, declared by the env",
            "<td><code>state</code></td><td><code>np_random, state</code></td>",
            "every seed's rollouts ended alike",
            "(10 rollouts of 1 seed)",
            "episode length (steps)</text>",
        ] {
            assert!(h.contains(part), "{part}:\n{h}");
        }
        assert_eq!(h.matches("<svg class=\"plot\"").count(), 2);
        // a-env has no trial: its id is unknown, and it draws no plot.
        assert!(h.contains("<section class=\"env\" id=\"env-1\"><h3><code>a-env</code></h3>"));
        assert!(h.contains("unknown: no trial got as far as its audit"));
    }
}
