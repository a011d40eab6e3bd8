//! What happened during one step, counted for the scenario's rewards and termination.

#[derive(Default)]
pub(super) struct Events {
    pub(super) user_gained: u32,
    pub(super) root_gained: u32,
    pub(super) compromised_new: u32,
    pub(super) secure_breach: u32,
    pub(super) dc_breach: u32,
    pub(super) kinetic: bool,
    pub(super) correct_isolation: [u32; 3],
    pub(super) false_positive: [u32; 3],
    pub(super) infected_isolated: u32,
    pub(super) persistence_ticks: u32,
    /// Red's packets: source slot, destination slot, port.
    pub(super) packets: Vec<(u16, u16, u16)>,
    /// Energy each agent paid for the action it started this step (the action-cost term).
    pub(super) cost: [f64; crate::N_AGENTS],
    /// Some host's services may have changed (a patch, a decoy, an arrival): callers keeping
    /// [`super::host_sets::ServiceSets`] recompute them. Set whenever it might be so.
    pub(super) services_changed: bool,
    /// The slots whose services may have changed (set with `services_changed`): kept
    /// service sets are brought up to date by reading these hosts only.
    pub(super) services_slots: u128,
    /// The caller's service sets of the state the step started from: exact until
    /// `services_changed` is set, so that a red completion before then validates its target
    /// without reading every host's services (cold heap memory at thousands of sub-envs).
    pub(super) kept_services: Option<super::host_sets::ServiceSets>,
}
