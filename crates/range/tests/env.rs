//! The Env-trait wrapper: spec, reset options, errors, factory.

use std::collections::BTreeMap;

use lockstep::env::{Action, EnvFactory, Space};
use lockstep_canon::{Map, Number, Value};
use lockstep_range::{factory, scenarios, RangeError, AGENTS};

fn obj(pairs: &[(&str, Value)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<Map>(),
    )
}

#[test]
fn every_registered_scenario_builds_and_runs() {
    for s in scenarios() {
        let f = factory(s, Some("easy")).unwrap();
        assert_eq!(f.id(), format!("range:{s}"));
        let mut env = f.make().unwrap();
        assert_eq!(env.spec().id, format!("range:{s}"));
        let names: Vec<&str> = env.spec().agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, AGENTS);
        for a in &env.spec().agents {
            assert_eq!(
                a.action_space,
                Space::MultiDiscrete {
                    nvec: vec![32, 100]
                }
            );
        }
        let Value::Object(cfg) = &env.spec().config else {
            panic!()
        };
        assert_eq!(cfg["scenario"], Value::String(s.to_string()));
        assert_eq!(
            cfg["range_version"],
            Value::Number(Number::Int(i64::from(lockstep_range::RANGE_VERSION)))
        );
        assert_eq!(cfg["max_ticks"], Value::Number(Number::Int(200)));
        let t = env.reset(1, &Value::Null).unwrap();
        assert!(t.agents.values().all(|a| a.reward == 0.0 && !a.terminated));
        let mut actions = BTreeMap::new();
        actions.insert(
            "red_operator".to_string(),
            Action::MultiDiscrete(vec![2, 0]),
        );
        let mut steps = 0;
        loop {
            let t = env.step(&actions).unwrap();
            steps += 1;
            if t.is_done() {
                break;
            }
        }
        assert!(steps <= 200);
        let err = env.step(&actions).unwrap_err();
        assert!(err.message.contains("reset"), "{err}");
    }
}

#[test]
fn unknown_scenario_and_preset_are_errors() {
    assert!(matches!(
        factory("nope", None),
        Err(RangeError::UnknownScenario(_))
    ));
    assert!(matches!(
        factory("ransomware", Some("x")),
        Err(RangeError::UnknownPreset(_))
    ));
}

#[test]
fn reset_options_override_preset_and_params() {
    let f = factory("ransomware", None).unwrap();
    let mut env = f.make().unwrap();
    let t = env
        .reset(3, &obj(&[("preset", Value::String("hard".into()))]))
        .unwrap()
        .clone();
    assert_eq!(t.agents.len(), 4);
    let Value::Object(cfg) = &env.spec().config else {
        panic!()
    };
    assert_eq!(cfg["log_latency"], Value::Number(Number::Int(4)));
    let over = obj(&[(
        "params",
        obj(&[
            ("max_hosts", Value::Number(Number::Int(40))),
            ("pcap", Value::Bool(true)),
            (
                "exploit",
                obj(&[("eternal_blue", Value::Number(Number::Float(0.5)))]),
            ),
        ]),
    )]);
    let t = env.reset(3, &over).unwrap();
    let red = &t.agents["red_operator"].obs;
    assert_eq!(red["action_mask"].shape(), [72]);
    assert_eq!(red["adj_matrix"].shape(), [1600]);
    assert_eq!(red["pcap"].shape(), [32, 20]);
    let Value::Object(cfg) = &env.spec().config else {
        panic!()
    };
    let Value::Object(ex) = &cfg["exploit"] else {
        panic!()
    };
    assert_eq!(ex["eternal_blue"], Value::Number(Number::Float(0.5)));
    assert_eq!(ex["blue_keep"], Value::Number(Number::Float(0.58)));
    // Back to the base without options.
    let t = env.reset(3, &Value::Null).unwrap();
    assert_eq!(t.agents["red_operator"].obs["action_mask"].shape(), [132]);
}

#[test]
fn bad_options_and_actions_are_clear_errors() {
    let mut env = factory("iot_grid", None).unwrap().make().unwrap();
    for (opts, needle) in [
        (obj(&[("color", Value::Null)]), "/color"),
        (obj(&[("preset", Value::Bool(true))]), "/preset"),
        (
            obj(&[(
                "params",
                obj(&[("max_hosts", Value::Number(Number::Int(3)))]),
            )]),
            "max_hosts",
        ),
        (obj(&[("params", obj(&[("bogus", Value::Null)]))]), "bogus"),
        (
            obj(&[(
                "params",
                obj(&[("scenario", Value::String("ot_stuxnet".into()))]),
            )]),
            "scenario",
        ),
        (Value::Number(Number::Int(1)), "object"),
    ] {
        let err = env.reset(0, &opts).unwrap_err();
        assert!(err.message.contains(needle), "{needle}: {err}");
    }
    let err = env.step(&BTreeMap::new()).unwrap_err();
    assert!(err.message.contains("before reset"), "{err}");
    env.reset(0, &Value::Null).unwrap();
    let mut a = BTreeMap::new();
    a.insert("mallory".to_string(), Action::MultiDiscrete(vec![0, 0]));
    assert!(env.step(&a).unwrap_err().message.contains("mallory"));
    let mut a = BTreeMap::new();
    a.insert("blue_dmz".to_string(), Action::Discrete(1));
    assert!(env.step(&a).unwrap_err().message.contains("blue_dmz"));
    // Out-of-range values are not errors: they are flagged no-ops.
    let mut a = BTreeMap::new();
    a.insert("blue_dmz".to_string(), Action::MultiDiscrete(vec![99, -5]));
    let t = env.step(&a).unwrap();
    let Value::Object(info) = &t.agents["blue_dmz"].info else {
        panic!()
    };
    assert_eq!(info["invalid_action"], Value::Bool(true));
    assert_eq!(info["target_ip_index"], Value::Number(Number::Int(-5)));
}

#[test]
fn infos_carry_the_reference_metrics() {
    let mut env = factory("ransomware", None).unwrap().make().unwrap();
    let t = env.reset(9, &Value::Null).unwrap();
    let Value::Object(info) = &t.agents["blue_dmz"].info else {
        panic!()
    };
    for key in [
        "false_positives",
        "successful_exploits",
        "hosts_isolated",
        "services_restored",
        "agent_energy",
        "active_hosts",
        "compromised_hosts",
        "isolated_hosts",
        "SLA_Uptime_Percentage",
        "MTTC",
        "Total_Exfiltrated_Data",
        "deception_hits",
        "deception_efficacy",
        "attack_coverage",
        "detection_rate",
        "containment_time",
        "blue_score",
        "red_score",
        "normalized_reward",
        "delta_t",
        "delta_t_norm",
        "target_ip_index",
        "attack_techniques",
        "invalid_action",
    ] {
        assert!(info.contains_key(key), "{key}");
    }
    assert_eq!(info["agent_energy"], Value::Number(Number::Float(50.0)));
}

#[test]
fn reset_state_depends_only_on_seed_and_params() {
    // Seed 000's point: whatever ran before, a reset to seed 5 is the same starting state.
    let f = factory("apt_espionage", Some("hard")).unwrap();
    let mut fresh = f.make().unwrap();
    fresh.reset(5, &Value::Null).unwrap();
    let want = fresh.state().unwrap();
    let mut used = f.make().unwrap();
    used.reset(9, &Value::Null).unwrap();
    let mut actions = BTreeMap::new();
    actions.insert(
        "red_operator".to_string(),
        Action::MultiDiscrete(vec![2, 3]),
    );
    actions.insert("blue_dmz".to_string(), Action::MultiDiscrete(vec![3, 1]));
    for _ in 0..30 {
        if used.step(&actions).unwrap().is_done() {
            break;
        }
    }
    assert_ne!(used.state().unwrap(), want);
    used.reset(5, &Value::Null).unwrap();
    assert_eq!(used.state().unwrap(), want);
}
