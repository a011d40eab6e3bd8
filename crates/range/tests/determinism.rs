//! Same seed, same bytes: the range's determinism guarantees, over every scenario.

mod common;

use common::*;
use lockstep::env::{Array, ArrayData};
use lockstep_range::actions::SLEEP;
use lockstep_range::obs;
use lockstep_range::sim::{self, AgentAction, JointAction, State};
use lockstep_range::{
    reset, step, topology, ActionSampler, Params, RangeEnv, Scenario, AGENTS, N_AGENTS, N_TYPES,
    RED, SCENARIOS,
};
use sha2::{Digest, Sha256};

const STEPS: usize = 120;

#[test]
fn same_seed_same_bytes_in_every_scenario() {
    for p in matrix() {
        let a = digest(&p, 123, STEPS);
        let b = digest(&p, 123, STEPS);
        assert_eq!(a, b, "{:?}", p.scenario);
    }
}

#[test]
fn different_seeds_diverge() {
    for s in SCENARIOS {
        let p = Params::new(s);
        assert_ne!(digest(&p, 1, 30), digest(&p, 2, 30), "{s:?}");
    }
}

#[test]
fn interleaved_envs_match_solo_runs() {
    let p = Params::new(Scenario::Ransomware)
        .with_preset("medium")
        .unwrap();
    let solo_a = digest(&p, 5, STEPS);
    let solo_b = digest(&p, 6, STEPS);
    let mut envs = [
        RangeEnv::new(p.clone()).unwrap(),
        RangeEnv::new(p.clone()).unwrap(),
    ];
    let mut samplers = [ActionSampler::new(5), ActionSampler::new(6)];
    let mut hashes = [Sha256::new(), Sha256::new()];
    for (i, seed) in [5u64, 6].into_iter().enumerate() {
        absorb(&mut hashes[i], envs[i].reset_with(seed, p.clone()).unwrap());
    }
    let mut live = [true, true];
    for _ in 0..STEPS {
        for i in 0..2 {
            if !live[i] {
                continue;
            }
            let j = sample_joint(&mut samplers[i], envs[i].transition());
            absorb(&mut hashes[i], envs[i].step_joint(&j).unwrap());
            live[i] = !envs[i].core().done();
        }
    }
    let [ha, hb] = hashes;
    assert_eq!(hex(&ha.finalize()), solo_a);
    assert_eq!(hex(&hb.finalize()), solo_b);
}

#[test]
fn thread_parallel_runs_match_sequential() {
    let p = Params::new(Scenario::AptEspionage);
    let seeds: Vec<u64> = (0..8).collect();
    let sequential: Vec<String> = seeds.iter().map(|&s| digest(&p, s, 60)).collect();
    let parallel: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds
            .iter()
            .map(|&s| {
                let p = p.clone();
                scope.spawn(move || digest(&p, s, 60))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(sequential, parallel);
}

#[test]
fn topology_invariants_over_500_seeds() {
    let p = Params::new(Scenario::Ransomware);
    let mut ot = 0;
    let mut total_active = 0;
    for seed in 0..500u64 {
        let st = reset(seed, &p);
        assert_eq!(st.hosts.len(), p.max_hosts);
        let active: Vec<_> = st.hosts.iter().filter(|h| h.active).collect();
        assert!(
            (10..=31).contains(&active.len()),
            "seed {seed}: {}",
            active.len()
        );
        total_active += active.len();
        assert!(
            active.iter().any(|h| h.dc),
            "seed {seed}: no domain controller"
        );
        assert!(
            st.hosts.windows(2).all(|w| w[0].addr < w[1].addr),
            "slots sorted"
        );
        for h in &active {
            assert!(!h.services.is_empty());
            for s in &h.services {
                assert!((3.5..=9.8).contains(&s.cvss));
            }
            assert!(h.os < 4);
        }
        let has_ot = active.iter().any(|h| h.subnet == topology::OT);
        assert_eq!(has_ot, st.has_ot);
        ot += usize::from(has_ot);
        // Shapes are fixed whatever the topology.
        let t = lockstep_range::RangeEnv::new(p.clone())
            .unwrap()
            .reset_with(seed, p.clone())
            .unwrap()
            .clone();
        if seed < 20 {
            for a in AGENTS {
                let o = &t.agents[a].obs;
                assert_eq!(o["obs"].shape(), [256]);
                assert_eq!(o["action_mask"].shape(), [132]);
                assert_eq!(o["siem_embedding"].shape(), [128]);
                assert_eq!(o["adj_matrix"].shape(), [10_000]);
                assert_eq!(o["delta_t"].shape(), [1]);
                assert_eq!(o.contains_key("blue_comm"), a != "red_operator");
            }
        }
    }
    let frac = ot as f64 / 500.0;
    assert!((0.20..=0.30).contains(&frac), "OT in {frac}");
    let mean = total_active as f64 / 500.0;
    assert!((17.0..=21.0).contains(&mean), "mean active {mean}");
}

#[test]
fn exploit_odds_match_the_hypervisor_table() {
    let p = Params::new(Scenario::Ransomware);
    let st = reset(11, &p);
    let host = st
        .hosts
        .iter()
        .find(|h| h.active && h.os == topology::OS_LEGACY && h.has_exploit_service(0))
        .cloned()
        .or_else(|| {
            (0..200)
                .flat_map(|s| reset(s, &p).hosts)
                .find(|h| h.active && h.os == topology::OS_LEGACY && h.has_exploit_service(0))
        })
        .expect("a legacy host with SMB");
    let prob = sim::exploit_probability(&p, topology::EX_ETERNAL_BLUE, &host);
    let cvss = host
        .services
        .iter()
        .filter(|s| s.kind == 0)
        .map(|s| f64::from(s.cvss))
        .fold(0.0, f64::max);
    assert!((prob - (0.72 + (cvss - 6.65) * 0.02)).abs() < 1e-12);
    // Empirical rate from the hypervisor's stream agrees within 4 sd.
    let mut rng = lockstep_range::Rng::new(99, "hypervisor");
    let n = 20_000;
    let hits = (0..n).filter(|_| rng.f64() < prob).count();
    let rate = hits as f64 / n as f64;
    let sd = (prob * (1.0 - prob) / n as f64).sqrt();
    assert!((rate - prob).abs() < 4.0 * sd, "{rate} vs {prob}");
    // Clamping.
    let mut p2 = p.clone();
    p2.exploit.eternal_blue = 1.0;
    assert!(sim::exploit_probability(&p2, 0, &host) <= 0.98);
    p2.exploit.eternal_blue = 0.0;
    assert_eq!(sim::exploit_probability(&p2, 0, &host), 0.02);
}

/// Reads the tick a line was written at from its timestamp.
fn written_tick(st: &State, p: &Params, text: &str) -> u64 {
    let i = text.find("SystemTime=\"").expect("timestamp") + 12;
    let ts = &text[i..i + 24];
    let secs = |s: &str| -> i64 {
        // 20YY-MM-DDTHH:MM:SS.000Z, only Dec 31 / Jan 1 / Jan 2 occur near the epoch.
        let day: i64 = match &ts[5..10] {
            "12-31" => -1,
            "01-01" => 0,
            "01-02" => 1,
            other => panic!("unexpected day {other}"),
        };
        let _ = s;
        let h: i64 = ts[11..13].parse().unwrap();
        let m: i64 = ts[14..16].parse().unwrap();
        let sec: i64 = ts[17..19].parse().unwrap();
        lockstep::clock::DEFAULT_EPOCH_UNIX + day * 86_400 + h * 3600 + m * 60 + sec
    };
    ((secs(ts) - st.siem.start_unix) / p.tick_seconds as i64) as u64
}

#[test]
fn logger_latency_delays_lines_exactly() {
    for latency in [0u64, 2, 4] {
        let mut p = Params::new(Scenario::Ransomware);
        p.log_latency = latency;
        p.max_ticks = 300;
        let mut st = reset(8, &p);
        let mut sampler = ActionSampler::new(8);
        let mut mask = vec![0i8; p.mask_len()];
        let mut seen = 0;
        while !st.done() {
            let mut j = JointAction::default();
            for a in 0..N_AGENTS {
                sim::write_mask(&st, &p, a, &mut mask);
                j.0[a] = sampler.sample(a, &mask);
            }
            step(&mut st, &j, &p);
            for l in &st.siem.pending {
                assert!(l.visible_at > st.tick, "pending line already due");
            }
            for l in st
                .siem
                .buffer
                .iter()
                .filter(|l| l.text.starts_with("<Event>"))
            {
                assert!(l.visible_at <= st.tick);
                assert_eq!(l.visible_at, written_tick(&st, &p, &l.text) + latency);
                seen += 1;
            }
        }
        assert!(seen > 100, "{seen}");
    }
}

#[test]
fn timestamps_use_the_seeded_epoch_offset() {
    let p = Params::new(Scenario::Ransomware);
    for seed in 0..50 {
        let st = reset(seed, &p);
        let off = lockstep::clock::DEFAULT_EPOCH_UNIX - st.siem.start_unix;
        assert!((0..24 * 3600).contains(&off), "{off}");
    }
    assert_ne!(reset(1, &p).siem.start_unix, reset(2, &p).siem.start_unix);
}

/// The state after stepping `act` for `agent` equals the state after Sleep, but for the
/// action's own record (target, invalid flag).
fn assert_no_op(st: &State, p: &Params, others: &JointAction, agent: usize, act: AgentAction) {
    let mut with = st.clone();
    let mut j = *others;
    j.0[agent] = act;
    step(&mut with, &j, p);
    assert!(
        with.last.invalid[agent],
        "{act:?} of {} not flagged",
        AGENTS[agent]
    );
    let mut sleep = st.clone();
    j.0[agent] = AgentAction::default();
    step(&mut sleep, &j, p);
    with.last.invalid[agent] = sleep.last.invalid[agent];
    with.last.target[agent] = sleep.last.target[agent];
    assert!(
        with == sleep,
        "{act:?} of {} changed the episode",
        AGENTS[agent]
    );
}

#[test]
fn masked_actions_are_flagged_no_ops_and_valid_actions_are_unmasked() {
    for s in SCENARIOS {
        let p = Params::new(s).with_preset("medium").unwrap();
        let mut st = reset(21, &p);
        let mut sampler = ActionSampler::new(21);
        let mut probe = lockstep_range::Rng::new(21, "probe");
        let mut masks = vec![vec![0i8; p.mask_len()]; N_AGENTS];
        for n in 0..60 {
            if st.done() {
                break;
            }
            let mut j = JointAction::default();
            for (a, m) in masks.iter_mut().enumerate() {
                sim::write_mask(&st, &p, a, m);
                j.0[a] = sampler.sample(a, m);
            }
            for (a, m) in masks.iter().enumerate() {
                // Soundness: every valid action is inside the mask.
                let mut sets = [0u128; N_TYPES];
                sim::target_sets(&st, &p, a, &mut sets);
                for kind in (0..N_TYPES).filter(|&k| k != SLEEP) {
                    for t in 0..p.max_hosts {
                        let act = AgentAction {
                            kind: kind as i64,
                            target: t as i64,
                        };
                        if sim::is_valid_with(&st, &p, a, &sets, act) {
                            assert!(m[kind] == 1 && m[N_TYPES + t] == 1);
                        }
                    }
                }
                let act = j.0[a];
                assert_eq!(
                    sim::is_valid(&st, &p, a, act),
                    sim::is_valid_with(&st, &p, a, &sets, act)
                );
                if n % 6 != 0 {
                    continue;
                }
                // A few masked actions (and out-of-range ones) are no-ops with the flag.
                let masked_type = (0..N_TYPES).find(|&k| k != SLEEP && m[k] == 0).unwrap();
                let t = probe.below(p.max_hosts as u64) as i64;
                assert_no_op(
                    &st,
                    &p,
                    &j,
                    a,
                    AgentAction {
                        kind: masked_type as i64,
                        target: t,
                    },
                );
                if let Some(h) = (0..p.max_hosts).find(|&h| m[N_TYPES + h] == 0) {
                    if let Some(k) = (0..N_TYPES).find(|&k| k != SLEEP && m[k] == 1) {
                        assert_no_op(
                            &st,
                            &p,
                            &j,
                            a,
                            AgentAction {
                                kind: k as i64,
                                target: h as i64,
                            },
                        );
                    }
                }
                assert_no_op(
                    &st,
                    &p,
                    &j,
                    a,
                    AgentAction {
                        // An id neither the original nor the range uses.
                        kind: 30,
                        target: 0,
                    },
                );
                assert_no_op(
                    &st,
                    &p,
                    &j,
                    a,
                    AgentAction {
                        kind: 1,
                        target: -1,
                    },
                );
                assert_no_op(
                    &st,
                    &p,
                    &j,
                    a,
                    AgentAction {
                        kind: 1,
                        target: 1000,
                    },
                );
            }
            step(&mut st, &j, &p);
        }
    }
}

fn same_bits(a: &Array, b: &Array) -> bool {
    a.shape() == b.shape() && a.to_le_bytes() == b.to_le_bytes()
}

fn assert_same_as_fresh(t: &lockstep::env::Transition, st: &State, p: &Params) {
    let fresh = lockstep_range::render_transition(st, p);
    assert_eq!(t.logs, fresh.logs);
    for (name, a) in &t.agents {
        let f = &fresh.agents[name];
        // Debug form: tells -0.0 from 0.0, as canonical JSON does.
        assert_eq!(
            format!("{:?}", a.info),
            format!("{:?}", f.info),
            "{name} info"
        );
        for (k, arr) in &a.obs {
            assert!(
                same_bits(arr, &f.obs[k]),
                "{name}/{k} differs from fresh after reset"
            );
        }
    }
}

#[test]
fn incremental_observations_equal_fresh_rendering() {
    let mut reused = 0usize;
    let mut rewritten = 0usize;
    for p in matrix() {
        // One env across episodes: what a reset leaves behind must not leak into the arrays.
        let mut env = RangeEnv::new(p.clone()).unwrap();
        for seed in [3u64, 4] {
            env.reset_with(seed, p.clone()).unwrap();
            assert_same_as_fresh(env.transition(), env.core(), env.params());
            let mut sampler = ActionSampler::new(seed);
            let mut prev = env.transition().clone();
            for _ in 0..150 {
                let j = sample_joint(&mut sampler, env.transition());
                let t = env.step_joint(&j).unwrap().clone();
                let fresh = lockstep_range::render_transition(env.core(), env.params());
                assert_eq!(t.logs, fresh.logs);
                for (name, a) in &t.agents {
                    let f = &fresh.agents[name];
                    // Debug form: tells -0.0 from 0.0, as canonical JSON does.
                    assert_eq!(
                        format!("{:?}", a.info),
                        format!("{:?}", f.info),
                        "{name} info"
                    );
                    assert_eq!(a.reward.to_bits(), f.reward.to_bits());
                    assert_eq!((a.terminated, a.truncated), (f.terminated, f.truncated));
                    for (k, arr) in &a.obs {
                        assert!(same_bits(arr, &f.obs[k]), "{name}/{k} differs from fresh");
                        let old = &prev.agents[name].obs[k];
                        if arr.revision() == old.revision() {
                            reused += 1;
                        } else {
                            rewritten += 1;
                        }
                    }
                }
                prev = t;
                if env.core().done() {
                    break;
                }
            }
        }
    }
    // The point of revisions: most arrays are not rewritten on most steps.
    assert!(
        reused > rewritten / 2,
        "reused {reused}, rewritten {rewritten}"
    );
}

#[test]
fn unchanged_revisions_mean_unchanged_contents() {
    let p = Params::new(Scenario::Ransomware)
        .with_preset("hard")
        .unwrap();
    let mut env = RangeEnv::new(p.clone()).unwrap();
    env.reset_with(17, p.clone()).unwrap();
    let mut sampler = ActionSampler::new(17);
    let mut prev = env.transition().clone();
    let mut adj_reused = 0;
    for _ in 0..200 {
        let j = sample_joint(&mut sampler, env.transition());
        let t = env.step_joint(&j).unwrap().clone();
        for (name, a) in &t.agents {
            for (k, arr) in &a.obs {
                let old = &prev.agents[name].obs[k];
                if arr.revision() == old.revision() {
                    assert!(same_bits(arr, old));
                    adj_reused += usize::from(k == "adj_matrix");
                }
            }
        }
        prev = t;
        if env.core().done() {
            break;
        }
    }
    assert!(adj_reused > 0, "adj_matrix was rewritten on every step");
}

#[test]
fn state_round_trips_through_serde_mid_episode() {
    for s in SCENARIOS {
        let p = Params::new(s).with_preset("hard").unwrap();
        let mut st = reset(31, &p);
        let mut sampler = ActionSampler::new(31);
        let mut mask = vec![0i8; p.mask_len()];
        let mut run = |st: &mut State, sampler: &mut ActionSampler, n: usize| {
            for _ in 0..n {
                if st.done() {
                    break;
                }
                let mut j = JointAction::default();
                for a in 0..N_AGENTS {
                    sim::write_mask(st, &p, a, &mut mask);
                    j.0[a] = sampler.sample(a, &mask);
                }
                step(st, &j, &p);
            }
        };
        run(&mut st, &mut sampler, 40);
        let json = serde_json::to_string(&st).unwrap();
        let mut back: State = serde_json::from_str(&json).unwrap();
        assert!(back == st);
        let mut sampler2 = sampler.clone();
        run(&mut st, &mut sampler, 40);
        run(&mut back, &mut sampler2, 40);
        assert!(back == st, "{s:?}: restored state diverged");
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&st).unwrap()
        );
    }
}

#[test]
fn env_state_is_the_whole_core_state() {
    let f = lockstep_range::factory("iot_grid", Some("easy")).unwrap();
    let mut env = lockstep::env::EnvFactory::make(&f).unwrap();
    env.reset(4, &lockstep_canon::Value::Null).unwrap();
    let lockstep_canon::Value::Object(m) = env.state().unwrap() else {
        panic!("state is an object")
    };
    for key in [
        "hosts",
        "siem",
        "rng",
        "in_flight",
        "physics",
        "metrics",
        "tick",
        "seed",
    ] {
        assert!(m.contains_key(key), "{key}");
    }
    let lockstep_canon::Value::Object(rng) = &m["rng"] else {
        panic!()
    };
    assert!(rng.contains_key("hypervisor") && rng.contains_key("green"));
}

#[test]
fn red_embedding_is_zero_and_blue_sees_only_its_subnets() {
    let p = Params::new(Scenario::Ransomware);
    let mut env = RangeEnv::new(p.clone()).unwrap();
    env.reset_with(2, p.clone()).unwrap();
    let mut sampler = ActionSampler::new(2);
    for _ in 0..50 {
        let j = sample_joint(&mut sampler, env.transition());
        env.step_joint(&j).unwrap();
    }
    let t = env.transition();
    let ArrayData::F32(red) = t.agents["red_operator"].obs["siem_embedding"].data() else {
        panic!()
    };
    assert!(red.iter().all(|x| *x == 0.0));
    let ArrayData::F32(blue) = t.agents["blue_internal"].obs["siem_embedding"].data() else {
        panic!()
    };
    let norm: f32 = blue.iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
}

#[test]
fn ot_stuxnet_ends_on_a_kinetic_event() {
    let p = Params::new(Scenario::OtStuxnet);
    let mut ended = 0;
    for seed in 0..6 {
        let mut st = reset(seed, &p);
        assert!(st.has_ot, "ot_stuxnet always has the plant");
        while !st.done() {
            let mut j = lockstep_range::sampler::scripted_joint(&st, &p);
            for b in 0..RED {
                j.0[b] = AgentAction::default();
            }
            step(&mut st, &j, &p);
        }
        if st.terminated {
            ended += 1;
            assert!(st.physics.as_ref().unwrap().kinetic);
            assert_eq!(st.last.rewards[RED], 10_000.0);
            assert_eq!(st.last.rewards[0], -10_000.0);
        }
    }
    assert!(ended > 0, "scripted red never reached the plant");
}

#[test]
fn value_stability() {
    // Pins the trajectory of a short episode: topology, hypervisor, SIEM text, embeddings,
    // rewards and infos. If this moves, episodes have changed: that is a new range version
    // and a changelog entry, never a silent update. Range version 2 (CHANGELOG.md, 2026-12-01:
    // NetForge_RL's action catalogue).
    let p = Params::new(Scenario::Ransomware)
        .with_preset("easy")
        .unwrap();
    assert_eq!(
        digest(&p, 42, 40),
        "badb56831b0bb7e130ac4c92cd48d151946bfadca7ecbaad6e13d0d3963ab411"
    );
}

#[test]
fn obs_keys_and_info_are_stable() {
    let p = Params::new(Scenario::CloudHybrid);
    let st = reset(1, &p);
    let mut keys = Vec::new();
    obs::info_items(&st, &p, 0, |k, _| keys.push(k));
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted, "info items must come in key order");
    assert!(keys.contains(&"normalized_reward") && keys.contains(&"attack_techniques"));
    assert!(lockstep_range::EVAL_SEEDS.start() > &1000);
}
