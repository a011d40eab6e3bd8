//! The actions of NetForge_RL's catalogue the range added, the decoy stream, and the
//! `node_features` observation.

use lockstep_range::actions::*;
use lockstep_range::obs::{self, NODE_FEATURES};
use lockstep_range::sim::{self, AgentAction, JointAction, State};
use lockstep_range::{reset, scripted_action, step, topology, Params, Scenario, N_TYPES, RED};

fn act(kind: usize, target: usize) -> AgentAction {
    AgentAction {
        kind: kind as i64,
        target: target as i64,
    }
}

/// Starts `a` for `agent` (everyone else sleeps) and sleeps until it completes.
fn run_to_completion(st: &mut State, p: &Params, agent: usize, a: AgentAction) {
    let mut j = JointAction::default();
    j.0[agent] = a;
    step(st, &j, p);
    assert!(!st.last.invalid[agent], "{a:?} rejected");
    while st.agents[agent].in_flight > 0 && !st.done() {
        step(st, &JointAction::default(), p);
    }
}

fn valid_on(st: &State, p: &Params, agent: usize, kind: usize) -> u128 {
    let mut sets = [0u128; N_TYPES];
    sim::target_sets(st, p, agent, &mut sets);
    sets[kind]
}

#[test]
fn absent_agents_and_the_default_action_sleep() {
    assert_eq!(AgentAction::default().kind, SLEEP as i64);
    let p = Params::new(Scenario::Ransomware);
    let mut st = reset(3, &p);
    step(&mut st, &JointAction::default(), &p);
    assert_eq!(st.last.invalid, [false; 4]);
    assert!(st.in_flight.is_empty());
    assert_eq!(st.last.target, [-1; 4]);
}

#[test]
fn deploying_a_decoy_draws_from_its_own_stream() {
    // Churn draws every tick in the medium preset: a decoy drawn from the churn stream would
    // shift every later churn draw.
    let p = Params::new(Scenario::Ransomware)
        .with_preset("medium")
        .unwrap();
    for kind in [B_DEPLOY_DECOY, B_DECOY_APACHE, B_DECOY_SSHD, B_DECOY_TOMCAT] {
        let st0 = reset(11, &p);
        let slot = valid_on(&st0, &p, 1, kind).trailing_zeros() as usize;
        assert!(slot < p.max_hosts, "no free slot");
        let mut with = st0.clone();
        run_to_completion(&mut with, &p, 1, act(kind, slot));
        let mut without = st0.clone();
        while without.tick < with.tick {
            step(&mut without, &JointAction::default(), &p);
        }
        assert!(with.hosts[slot].active && with.hosts[slot].decoy);
        assert_eq!(with.decoys_deployed[1], 1);
        assert_eq!(with.rng.churn, without.rng.churn, "decoy moved churn");
        assert_ne!(with.rng.decoy, without.rng.decoy, "decoy stream unused");
        let h = &with.hosts[slot];
        let ports: Vec<u16> = h
            .services
            .iter()
            .map(|s| topology::SERVICES[s.kind as usize].port)
            .collect();
        let (os, want): (u8, &[u16]) = match kind {
            B_DECOY_APACHE => (topology::OS_LINUX, &[80]),
            B_DECOY_SSHD => (topology::OS_LINUX, &[22]),
            B_DECOY_TOMCAT => (topology::OS_WIN10, &[80, 443]),
            _ => (topology::OS_LEGACY, &[445, 3389]),
        };
        assert_eq!((h.os, ports.as_slice()), (os, want), "{}", BLUE[kind].name);
    }
}

/// A state where red has scanned DMZ host `slot`, which runs SMB.
fn scanned_smb_host(p: &Params) -> (State, usize) {
    for seed in 0..200 {
        let mut st = reset(seed, p);
        let found = st.hosts.iter().position(|h| {
            h.active
                && h.subnet == topology::DMZ
                && !h.decoy
                && h.has_exploit_service(topology::EX_ETERNAL_BLUE)
        });
        if let Some(i) = found {
            st.hosts[i].discovered = true;
            st.hosts[i].scanned = true;
            return (st, i);
        }
    }
    panic!("no DMZ host with SMB");
}

#[test]
fn configure_acl_drops_smb_exploits_from_outside_the_subnet() {
    let p = Params::new(Scenario::Ransomware);
    let (st0, slot) = scanned_smb_host(&p);
    let mut landed = [0, 0];
    for (i, acl) in [false, true].into_iter().enumerate() {
        for k in 0..40 {
            let mut st = st0.clone();
            // Different hypervisor rolls per try.
            st.rng.hypervisor = lockstep_range::Rng::new(k, "hypervisor");
            if acl {
                let blue = 0; // blue_dmz defends the DMZ
                run_to_completion(&mut st, &p, blue, act(B_CONFIGURE_ACL, slot));
                assert_eq!(st.acl_smb, 1 << topology::DMZ);
                assert_eq!(valid_on(&st, &p, blue, B_CONFIGURE_ACL) >> slot & 1, 0);
            }
            // Red's mask does not show the firewall.
            assert_eq!(valid_on(&st, &p, RED, R_ETERNAL_BLUE) >> slot & 1, 1);
            run_to_completion(&mut st, &p, RED, act(R_ETERNAL_BLUE, slot));
            landed[i] += u32::from(st.hosts[slot].privilege > 0);
        }
    }
    assert!(landed[0] > 0, "EternalBlue never landed without the ACL");
    assert_eq!(landed[1], 0, "EternalBlue landed through the ACL");
}

#[test]
fn misinformation_shows_red_a_decoy_profile() {
    let p = Params::new(Scenario::Ransomware);
    let (mut st, slot) = scanned_smb_host(&p);
    assert_eq!(valid_on(&st, &p, RED, R_ETERNAL_BLUE) >> slot & 1, 1);
    run_to_completion(&mut st, &p, 0, act(B_MISINFORM, slot));
    assert!(st.hosts[slot].misinformed);
    // The scan now shows Linux with HTTP and SSH: red aims web and remote-service exploits.
    assert_eq!(valid_on(&st, &p, RED, R_ETERNAL_BLUE) >> slot & 1, 0);
    assert_eq!(valid_on(&st, &p, RED, R_HTTP_RFI) >> slot & 1, 1);
    assert_eq!(valid_on(&st, &p, RED, R_REMOTE_SERVICE) >> slot & 1, 1);
}

#[test]
fn awareness_training_and_restore_host_act_on_the_network() {
    let p = Params::new(Scenario::Ransomware);
    let (mut st, slot) = scanned_smb_host(&p);
    run_to_completion(&mut st, &p, 0, act(B_AWARENESS, slot));
    assert_eq!(st.awareness[topology::DMZ as usize], 1);
    // RestoreHost brings an isolated host back and drops red's session on it.
    st.hosts[slot].privilege = 1;
    st.hosts[slot].compromised_at = Some(st.tick);
    run_to_completion(&mut st, &p, 0, act(B_ISOLATE, slot));
    assert!(st.hosts[slot].isolated);
    assert_eq!(valid_on(&st, &p, 0, B_RESTORE_HOST) >> slot & 1, 1);
    run_to_completion(&mut st, &p, 0, act(B_RESTORE_HOST, slot));
    assert!(!st.hosts[slot].isolated);
    assert_eq!(st.hosts[slot].privilege, 0);
}

#[test]
fn starting_an_action_costs_reward_as_the_original_documents() {
    // cloud_hybrid rewards only Secure breaches, so a scan's step reward is the cost term.
    let p = Params::new(Scenario::CloudHybrid);
    let (mut st, slot) = scanned_smb_host(&p);
    let mut j = JointAction::default();
    j.0[RED] = act(R_SCAN, slot);
    step(&mut st, &j, &p);
    assert!(!st.last.invalid[RED]);
    assert_eq!(
        st.last.rewards[RED],
        -0.05 * lockstep_range::actions::RED[R_SCAN].energy
    );
    assert_eq!(st.last.rewards[0], 0.0);
}

#[test]
fn node_features_show_each_agent_only_what_it_can_know() {
    let mut p = Params::new(Scenario::Ransomware)
        .with_preset("medium")
        .unwrap();
    assert!(!obs::keys(&p, RED).contains(&"node_features"));
    p.node_features = true;
    assert!(obs::keys(&p, RED).contains(&"node_features"));
    assert_eq!(obs::shape(&p, "node_features"), [100, 8]);
    let mut saw = [false; 3]; // a red foothold, a blue-confirmed compromise, a blue decoy
    for seed in 0..6 {
        let mut st = reset(seed, &p);
        while !st.done() {
            let mut j = JointAction::default();
            for a in 0..4 {
                j.0[a] = scripted_action(&st, &p, a);
            }
            step(&mut st, &j, &p);
            let mut out = vec![0f32; p.max_hosts * NODE_FEATURES];
            for agent in 0..4 {
                obs::write_node_features(&st, &p, agent, &mut out);
                for (i, h) in st.hosts.iter().enumerate() {
                    let row = &out[i * NODE_FEATURES..(i + 1) * NODE_FEATURES];
                    let visible = h.active
                        && if agent == RED {
                            h.discovered
                        } else {
                            sim::BLUE_SUBNETS[agent] & (1 << h.subnet) != 0
                        };
                    if !visible {
                        assert!(row.iter().all(|v| *v == 0.0), "hidden row {i} shown");
                        continue;
                    }
                    assert!(row[5] > 0.0, "subnet code");
                    if agent == RED {
                        assert_eq!(row[3], 0.0, "red told a host is a decoy");
                        assert_eq!(row[0], f32::from(h.privilege) / 2.0);
                        saw[0] |= h.privilege > 0;
                    } else {
                        // Blue's compromise columns are its analysis verdict, not the truth.
                        let confirmed = if h.confirmed == 2 { 1.0 } else { 0.0 };
                        assert_eq!((row[0], row[2]), (confirmed, confirmed), "slot {i}");
                        assert_eq!(row[3], if h.decoy { 1.0 } else { 0.0 });
                        saw[1] |= h.confirmed == 2;
                        saw[2] |= h.decoy;
                    }
                }
            }
        }
    }
    assert_eq!(saw, [true; 3], "the episodes never exercised every view");
}
