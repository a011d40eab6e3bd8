//! The scenario configuration: every knob of an episode, serialisable, with the defaults of the
//! Python original (RANGE.md) and its three presets.

use serde::{Deserialize, Serialize};

use crate::RangeError;

/// The five scenarios. Same topology generator; they differ in rewards and termination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    Ransomware,
    AptEspionage,
    CloudHybrid,
    IotGrid,
    OtStuxnet,
}

/// The scenario registry: one list, in a fixed order. Tests run a matrix over it.
pub const SCENARIOS: [Scenario; 5] = [
    Scenario::Ransomware,
    Scenario::AptEspionage,
    Scenario::CloudHybrid,
    Scenario::IotGrid,
    Scenario::OtStuxnet,
];

const SCENARIO_NAMES: [&str; 5] = [
    "ransomware",
    "apt_espionage",
    "cloud_hybrid",
    "iot_grid",
    "ot_stuxnet",
];

/// Names of the presets, in order of difficulty.
pub const PRESETS: [&str; 3] = ["easy", "medium", "hard"];

impl Scenario {
    pub fn name(self) -> &'static str {
        SCENARIO_NAMES[self.index()]
    }

    /// Position in [`SCENARIOS`]; also the hot entry of the objective vector in `obs`.
    pub fn index(self) -> usize {
        match self {
            Scenario::Ransomware => 0,
            Scenario::AptEspionage => 1,
            Scenario::CloudHybrid => 2,
            Scenario::IotGrid => 3,
            Scenario::OtStuxnet => 4,
        }
    }

    pub fn from_name(name: &str) -> Result<Scenario, RangeError> {
        SCENARIO_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| SCENARIOS[i])
            .ok_or_else(|| RangeError::UnknownScenario(name.to_string()))
    }

    /// The divisor inside `normalized_reward = tanh(reward / scale)`.
    pub fn reward_scale(self) -> f64 {
        match self {
            Scenario::Ransomware => 5.0,
            Scenario::AptEspionage => 20.0,
            Scenario::CloudHybrid => 30.0,
            Scenario::IotGrid => 250.0,
            Scenario::OtStuxnet => 10_000.0,
        }
    }
}

/// The scenario names of the registry (`range:<name>` env ids).
pub fn scenarios() -> &'static [&'static str] {
    &SCENARIO_NAMES
}

/// Base success rates of the simulated hypervisor, per exploit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExploitRates {
    pub eternal_blue: f64,
    pub blue_keep: f64,
    pub http_rfi: f64,
    pub remote_service: f64,
    pub priv_esc: f64,
    pub dump_lsass: f64,
    pub pass_the_ticket: f64,
}

impl ExploitRates {
    pub fn as_array(&self) -> [f64; 7] {
        [
            self.eternal_blue,
            self.blue_keep,
            self.http_rfi,
            self.remote_service,
            self.priv_esc,
            self.dump_lsass,
            self.pass_the_ticket,
        ]
    }
}

impl Default for ExploitRates {
    fn default() -> ExploitRates {
        ExploitRates {
            eternal_blue: 0.72,
            blue_keep: 0.58,
            http_rfi: 0.65,
            remote_service: 0.55,
            priv_esc: 0.70,
            dump_lsass: 0.80,
            pass_the_ticket: 0.90,
        }
    }
}

/// Every knob of an episode. With the seed, `Params` determines the episode completely; it is
/// the `config` of the env's spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub scenario: Scenario,
    /// Host slots (action targets, rows of `adj_matrix`). 8..=124.
    pub max_hosts: usize,
    /// Cap on active hosts produced by the generator (the presets' `max_active_hosts`).
    pub max_active_hosts: usize,
    /// Truncation: the episode ends when the clock reaches this tick.
    pub max_ticks: u64,
    /// Probability that the OT subnet exists (1.0 for `ot_stuxnet`, which needs it).
    pub ot_probability: f64,
    pub decoy_probability: f64,
    /// Every `dhcp_interval` ticks Guest hosts get new addresses (0 = never).
    pub dhcp_interval: u64,
    /// Per tick and host: probability an online host drops off (it returns with p 0.1 a tick).
    pub churn: f64,
    /// Per tick: probability that one Corporate/Guest host moves to the other subnet.
    pub migration: f64,
    /// Per tick: probability that a new host arrives in a free slot.
    pub arrival: f64,
    /// SIEM lines become visible this many ticks after they are written.
    pub log_latency: u64,
    /// Lines kept in the SIEM's rolling buffer.
    pub log_buffer: usize,
    pub log_p_success: f64,
    pub log_p_failure: f64,
    pub log_p_background: f64,
    /// Lines an embedding encodes (the last ones the agent can see).
    pub embedding_lines: usize,
    pub green_cycle: u64,
    pub green_day: u64,
    pub green_noise_day: f64,
    pub green_noise_night: f64,
    pub green_fp_day: f64,
    pub green_fp_night: f64,
    pub energy_start: f64,
    /// Energy regained per tick, up to `energy_start`.
    pub energy_regen: f64,
    pub blue_max_in_flight: usize,
    pub red_max_in_flight: usize,
    /// Simulated seconds per tick (timestamps only).
    pub tick_seconds: u64,
    /// Adds the `pcap` observation (32 packets x 20 features).
    pub pcap: bool,
    /// Adds the `node_features` observation (max_hosts x 8, each agent's own view).
    #[serde(default)]
    pub node_features: bool,
    pub exploit: ExploitRates,
    /// Time constants (ticks) of temperature, pressure, flow.
    pub physics_tau: [f64; 3],
    /// Per-tick noise sd of temperature, pressure, flow.
    pub physics_noise: [f64; 3],
}

impl Params {
    /// The defaults of RANGE.md for `scenario` (no preset: max_ticks 1000, 100 slots).
    pub fn new(scenario: Scenario) -> Params {
        Params {
            scenario,
            max_hosts: 100,
            max_active_hosts: 100,
            max_ticks: 1000,
            ot_probability: if scenario == Scenario::OtStuxnet {
                1.0
            } else {
                0.25
            },
            decoy_probability: 0.15,
            dhcp_interval: 0,
            churn: 0.0,
            migration: 0.0,
            arrival: 0.0,
            log_latency: 0,
            log_buffer: 64,
            log_p_success: 0.90,
            log_p_failure: 0.50,
            log_p_background: 0.15,
            embedding_lines: 8,
            green_cycle: 150,
            green_day: 100,
            green_noise_day: 0.8,
            green_noise_night: 0.1,
            green_fp_day: 0.05,
            green_fp_night: 0.01,
            energy_start: 50.0,
            energy_regen: 0.5,
            blue_max_in_flight: 2,
            red_max_in_flight: 1,
            tick_seconds: 1,
            pcap: false,
            node_features: false,
            exploit: ExploitRates::default(),
            physics_tau: [20.0, 10.0, 5.0],
            physics_noise: [0.1, 0.2, 0.3],
        }
    }

    /// Applies a named preset (`easy`, `medium`, `hard`) of RANGE.md's table.
    pub fn with_preset(mut self, preset: &str) -> Result<Params, RangeError> {
        match preset {
            "easy" => {
                self.max_active_hosts = 6;
                self.dhcp_interval = 0;
                self.churn = 0.0;
                self.log_latency = 0;
            }
            "medium" => {
                self.max_active_hosts = 15;
                self.dhcp_interval = 80;
                self.churn = 0.01;
                self.log_latency = 2;
            }
            "hard" => {
                self.max_active_hosts = 100;
                self.dhcp_interval = 40;
                self.churn = 0.02;
                self.migration = 0.01;
                self.arrival = 0.005;
                self.log_latency = 4;
            }
            other => return Err(RangeError::UnknownPreset(other.to_string())),
        }
        self.max_ticks = 200;
        Ok(self)
    }

    /// Checks ranges so that `reset` and `step` can never index out of bounds.
    pub fn validate(&self) -> Result<(), RangeError> {
        let bad = |field: &str, why: &str| {
            Err(RangeError::InvalidParam {
                field: field.to_string(),
                why: why.to_string(),
            })
        };
        if !(8..=124).contains(&self.max_hosts) {
            return bad("max_hosts", "must be in 8..=124");
        }
        if self.max_active_hosts < 5 {
            return bad(
                "max_active_hosts",
                "must be at least 5 (one host per subnet)",
            );
        }
        if self.max_ticks == 0 || self.max_ticks > 100_000_000 {
            return bad("max_ticks", "must be in 1..=100000000");
        }
        if self.tick_seconds == 0 || self.tick_seconds > 86_400 {
            return bad("tick_seconds", "must be in 1..=86400");
        }
        if self.log_latency > 10_000 {
            return bad("log_latency", "must be at most 10000 ticks");
        }
        if self.log_buffer == 0 || self.log_buffer > 4096 {
            return bad("log_buffer", "must be in 1..=4096");
        }
        if self.embedding_lines == 0 || self.embedding_lines > self.log_buffer {
            return bad("embedding_lines", "must be in 1..=log_buffer");
        }
        if self.green_cycle == 0 {
            return bad("green_cycle", "must be positive");
        }
        if self.blue_max_in_flight == 0 || self.red_max_in_flight == 0 {
            return bad("blue_max_in_flight", "in-flight limits must be positive");
        }
        let probs = [
            ("ot_probability", self.ot_probability),
            ("decoy_probability", self.decoy_probability),
            ("churn", self.churn),
            ("migration", self.migration),
            ("arrival", self.arrival),
            ("log_p_success", self.log_p_success),
            ("log_p_failure", self.log_p_failure),
            ("log_p_background", self.log_p_background),
            ("green_noise_day", self.green_noise_day),
            ("green_noise_night", self.green_noise_night),
            ("green_fp_day", self.green_fp_day),
            ("green_fp_night", self.green_fp_night),
        ];
        for (name, p) in probs {
            if !(0.0..=1.0).contains(&p) {
                return bad(name, "must be a probability in 0..=1");
            }
        }
        for (i, p) in self.exploit.as_array().iter().enumerate() {
            if !(0.0..=1.0).contains(p) {
                return bad(&format!("exploit/{i}"), "must be a probability in 0..=1");
            }
        }
        if !(self.energy_start > 0.0 && self.energy_start.is_finite()) {
            return bad("energy_start", "must be positive");
        }
        if !(self.energy_regen >= 0.0 && self.energy_regen.is_finite()) {
            return bad("energy_regen", "must be non-negative");
        }
        if self
            .physics_tau
            .iter()
            .any(|t| !(*t >= 1.0 && t.is_finite()))
        {
            return bad("physics_tau", "time constants must be at least 1 tick");
        }
        if self
            .physics_noise
            .iter()
            .any(|s| !(*s >= 0.0 && s.is_finite()))
        {
            return bad("physics_noise", "must be non-negative");
        }
        Ok(())
    }

    /// Length of `action_mask`: 32 type bits and one bit per host slot.
    pub fn mask_len(&self) -> usize {
        crate::N_TYPES + self.max_hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_round_trip() {
        for s in SCENARIOS {
            assert_eq!(Scenario::from_name(s.name()).unwrap(), s);
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.name()));
        }
        assert!(Scenario::from_name("nope").is_err());
    }

    #[test]
    fn presets_follow_the_table() {
        let p = Params::new(Scenario::Ransomware);
        let e = p.clone().with_preset("easy").unwrap();
        assert_eq!(
            (e.max_active_hosts, e.log_latency, e.max_ticks),
            (6, 0, 200)
        );
        let h = p.clone().with_preset("hard").unwrap();
        assert_eq!((h.dhcp_interval, h.log_latency), (40, 4));
        assert!(p.with_preset("insane").is_err());
        for s in SCENARIOS {
            for pr in PRESETS {
                Params::new(s).with_preset(pr).unwrap().validate().unwrap();
            }
        }
    }

    #[test]
    fn validation_names_the_field() {
        let mut p = Params::new(Scenario::IotGrid);
        p.max_hosts = 3;
        let err = p.validate().unwrap_err().to_string();
        assert!(err.contains("max_hosts"), "{err}");
    }
}
