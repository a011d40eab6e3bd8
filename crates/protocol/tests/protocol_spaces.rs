//! Issue 10 item 8: composite spaces served by the Python adapter. Tuple and Dict actions
//! (lockstep samples each part from its space), Sequence actions and observations (the
//! elements stacked along a first axis whose length changes), driven end to end through a
//! real Gymnasium env (`lockstep_adapter.testing:courier`).

mod protocol_common;

use std::collections::BTreeSet;

use lockstep::actions::ActionSampler;
use lockstep::check::{run_check, run_checks, CheckConfig, CheckKind, Detail};
use lockstep::env::{Action, DType, Env, Space};
use lockstep_canon::Value;
use lockstep_protocol::ProcessEnvFactory;
use protocol_common::{adapter_argv, honest, options, require};

fn courier(bug: Option<&str>) -> ProcessEnvFactory {
    let kwargs = bug.map_or("{}".to_string(), |b| format!("{{\"bug\": \"{b}\"}}"));
    ProcessEnvFactory::new(
        adapter_argv(&[
            "factory",
            "lockstep_adapter.testing:courier",
            "--kwargs",
            &kwargs,
        ]),
        options(),
    )
}

/// The handshake declares the composite action space part by part; every sampled action is
/// one the env's own `action_space.contains` accepts (the courier raises otherwise), and the
/// Sequence observations change length during the episode.
#[test]
fn dict_tuple_and_sequence_actions_reach_the_env_and_sequences_vary_in_length() {
    require(&["gymnasium"]);
    let f = courier(None);
    let mut env = f.spawn().unwrap();
    let spec = env.spec().clone();
    let Space::Dict { spaces } = &spec.agents[0].action_space else {
        panic!("{:?}", spec.agents[0].action_space)
    };
    assert_eq!(
        spaces.keys().collect::<Vec<_>>(),
        ["drop", "move", "pick", "push"]
    );
    assert!(matches!(&spaces["pick"], Space::Tuple { spaces } if spaces.len() == 2));
    assert!(matches!(&spaces["drop"], Space::Sequence { .. }));
    assert!(matches!(
        &spec.agents[0].observation_space["parcels"],
        Space::Sequence { space } if matches!(**space, Space::Box { .. })
    ));

    let mut sampler = ActionSampler::new(3, &spec);
    let mut t = env.reset(3, &Value::Null).unwrap().clone();
    let (mut parcels, mut dropped) = (BTreeSet::new(), BTreeSet::new());
    let mut steps = 0;
    while !t.is_done() {
        let actions = sampler.sample(&t);
        let Action::Dict(parts) = &actions["agent"] else {
            panic!("{actions:?}")
        };
        let Action::Tuple(drops) = &parts["drop"] else {
            panic!()
        };
        t = env
            .step(&actions)
            .unwrap_or_else(|e| panic!("step {}: {e}", steps + 1))
            .clone();
        steps += 1;
        let obs = &t.agents["agent"].obs;
        let p = &obs["parcels"];
        assert_eq!(
            (p.dtype(), p.shape().len(), p.shape()[1]),
            (DType::F64, 2, 2)
        );
        parcels.insert(p.shape()[0]);
        let d = &obs["dropped"];
        assert_eq!(d.dtype(), DType::I64);
        assert_eq!(
            d.shape(),
            &[drops.len()],
            "the drops of this step, one per element"
        );
        dropped.insert(d.shape()[0]);
    }
    assert_eq!(steps, 40);
    assert!(parcels.len() > 3, "parcel counts seen: {parcels:?}");
    assert!(dropped.contains(&0) && dropped.len() > 2, "{dropped:?}");
    env.close().unwrap();
}

/// An honest env with composite spaces passes every check, its instances in one child.
#[test]
fn the_courier_passes_every_check() {
    require(&["gymnasium"]);
    let f = courier(None);
    let session = f.session();
    let outcomes = run_checks(
        &CheckKind::ALL,
        &session,
        &CheckConfig::new(7, 40),
        Some(&f),
    )
    .unwrap();
    for o in &outcomes {
        assert!(honest(o), "{:?}: {}", o.check, o.summary);
    }
}

/// A Sequence observation disturbed by another instance is localised to its key; the detail
/// is an element `[i, j]` (parcel i, coordinate j) when the lengths agree, a shape mismatch
/// (`float64[3, 2]` against `float64[4, 2]`) when they do not.
#[test]
fn a_disturbed_sequence_observation_is_localised_to_its_key() {
    require(&["gymnasium"]);
    let f = courier(Some("process_random"));
    let session = f.session();
    let cfg = CheckConfig::new(5, 40);
    let same = run_check(CheckKind::SameSeed, &session, &cfg, Some(&f)).unwrap();
    assert!(same.passed, "{}", same.summary);
    let o = run_check(CheckKind::Interleaved, &session, &cfg, Some(&f)).unwrap();
    assert!(!o.passed, "{}", o.summary);
    let d = o.divergence.expect("a failure carries its divergence");
    assert_eq!(
        (d.agent().unwrap_or(""), d.key()),
        ("agent", "parcels"),
        "{}",
        o.summary
    );
    match &d.detail {
        Some(Detail::Element { multi_index, .. }) => {
            assert_eq!(multi_index.len(), 2, "{}", o.summary)
        }
        Some(Detail::Layout {
            left_shape,
            right_shape,
            ..
        }) => assert_ne!(left_shape[0], right_shape[0], "{}", o.summary),
        other => panic!("{other:?}: {}", o.summary),
    }
}

/// Issue 10 item 8's motivating case: every MiniGrid env was refused at the handshake (its
/// `mission` is a Text space, `MissionSpace`). DoorKey's Dict observation of `direction`
/// (Discrete), `image` (uint8 7x7x3) and `mission` (Text, as its UTF-8 bytes) is served, and
/// the env passes every check. `minigrid:` makes Gymnasium import the module that registers
/// the env.
#[test]
fn minigrid_doorkey_text_and_dict_observations_pass_every_check() {
    require(&["minigrid"]);
    let f = ProcessEnvFactory::new(
        adapter_argv(&["gymnasium", "minigrid:MiniGrid-DoorKey-5x5-v0"]),
        options(),
    );
    let mut env = f.spawn().unwrap();
    let keys: Vec<_> = env.spec().agents[0]
        .observation_space
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["direction", "image", "mission"]);
    let t = env.reset(2, &Value::Null).unwrap();
    let obs = &t.agents["agent"].obs;
    assert_eq!(
        (obs["image"].dtype(), obs["image"].shape()),
        (DType::U8, &[7, 7, 3][..])
    );
    let mission = String::from_utf8(obs["mission"].to_le_bytes()).unwrap();
    assert_eq!(
        mission,
        "use the key to open the door and then get to the goal"
    );
    env.close().unwrap();
    let session = f.session();
    let outcomes = run_checks(
        &CheckKind::ALL,
        &session,
        &CheckConfig::new(7, 60),
        Some(&f),
    )
    .unwrap();
    for o in &outcomes {
        assert!(honest(o), "{:?}: {}", o.check, o.summary);
    }
}
