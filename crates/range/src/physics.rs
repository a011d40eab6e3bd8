//! OT process physics: temperature, pressure and flow follow their setpoints with a first-order
//! lag and Gaussian noise. A kinetic attack pushes the setpoints; a critical value is a kinetic
//! event.

use serde::{Deserialize, Serialize};

use crate::params::Params;
use crate::rng::Rng;

/// Nominal setpoints: temperature (C), pressure (kPa), flow (l/s).
pub const NOMINAL: [f64; 3] = [70.0, 100.0, 60.0];
/// What one successful kinetic attack does to the setpoints.
pub const ATTACK_PUSH: [f64; 3] = [30.0, 50.0, -35.0];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Physics {
    /// Temperature, pressure, flow.
    pub value: [f64; 3],
    pub setpoint: [f64; 3],
    /// Latched once a value went critical.
    pub kinetic: bool,
}

impl Physics {
    pub fn new() -> Physics {
        Physics {
            value: NOMINAL,
            setpoint: NOMINAL,
            kinetic: false,
        }
    }

    /// Advances one tick. Returns true on the tick the process first goes critical.
    pub fn tick(&mut self, params: &Params, rng: &mut Rng) -> bool {
        for i in 0..3 {
            let lag = (self.setpoint[i] - self.value[i]) / params.physics_tau[i];
            self.value[i] += lag + rng.normal(0.0, params.physics_noise[i]);
        }
        if !self.kinetic && critical(&self.value) {
            self.kinetic = true;
            return true;
        }
        false
    }

    pub fn attack(&mut self) {
        for (sp, push) in self.setpoint.iter_mut().zip(ATTACK_PUSH) {
            *sp += push;
        }
    }

    pub fn stabilise(&mut self) {
        self.setpoint = NOMINAL;
    }
}

impl Default for Physics {
    fn default() -> Physics {
        Physics::new()
    }
}

/// Temperature above 120, pressure outside 30..180 or flow outside 5..150.
pub fn critical(v: &[f64; 3]) -> bool {
    v[0] > 120.0 || !(30.0..=180.0).contains(&v[1]) || !(5.0..=150.0).contains(&v[2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Scenario;

    #[test]
    fn stays_nominal_without_attack() {
        let p = Params::new(Scenario::OtStuxnet);
        let mut ph = Physics::new();
        let mut rng = Rng::new(3, "physics");
        for _ in 0..5000 {
            assert!(!ph.tick(&p, &mut rng));
        }
        assert!((ph.value[0] - 70.0).abs() < 5.0);
    }

    #[test]
    fn two_attacks_go_critical_and_latch() {
        let p = Params::new(Scenario::OtStuxnet);
        let mut ph = Physics::new();
        let mut rng = Rng::new(3, "physics");
        ph.attack();
        ph.attack();
        let events: usize = (0..200).filter(|_| ph.tick(&p, &mut rng)).count();
        assert_eq!(events, 1);
        assert!(ph.kinetic);
    }

    #[test]
    fn one_attack_then_stabilise_is_safe() {
        let p = Params::new(Scenario::OtStuxnet);
        let mut ph = Physics::new();
        let mut rng = Rng::new(4, "physics");
        ph.attack();
        for _ in 0..300 {
            assert!(!ph.tick(&p, &mut rng), "{:?}", ph.value);
        }
        ph.stabilise();
        for _ in 0..300 {
            ph.tick(&p, &mut rng);
        }
        assert!((ph.value[1] - 100.0).abs() < 10.0);
    }

    #[test]
    fn limits() {
        assert!(critical(&[120.5, 100.0, 60.0]));
        assert!(critical(&[70.0, 29.9, 60.0]));
        assert!(critical(&[70.0, 100.0, 150.1]));
        assert!(!critical(&[120.0, 180.0, 5.0]));
    }
}
