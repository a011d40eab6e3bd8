//! The action catalogue: type ids, names, MITRE ATT&CK techniques, durations and costs.
//!
//! An action is `[type, target slot]`. Red uses ids 0..=19, blue 0..=15; every other id of the
//! 32 is unused and a no-op flagged `invalid_action`. Id 0 is `Sleep` for everyone: always
//! valid, never in flight.

/// One action type.
pub struct ActionKind {
    pub name: &'static str,
    /// MITRE ATT&CK (Enterprise or ICS) technique; blue actions name the D3FEND-like verb.
    pub technique: &'static str,
    /// Mean duration in ticks.
    pub duration: f64,
    pub energy: f64,
}

const fn k(name: &'static str, technique: &'static str, duration: f64, energy: f64) -> ActionKind {
    ActionKind {
        name,
        technique,
        duration,
        energy,
    }
}

pub const SLEEP: usize = 0;

pub const R_DISCOVERY: usize = 1;
pub const R_SCAN: usize = 2;
pub const R_ETERNAL_BLUE: usize = 3;
pub const R_BLUE_KEEP: usize = 4;
pub const R_HTTP_RFI: usize = 5;
pub const R_REMOTE_SERVICE: usize = 6;
pub const R_PRIV_ESC: usize = 7;
pub const R_DUMP_LSASS: usize = 8;
pub const R_PASS_THE_TICKET: usize = 9;
pub const R_LATERAL_SMB: usize = 10;
pub const R_PHISHING: usize = 11;
pub const R_PERSISTENCE: usize = 12;
pub const R_CLEAR_LOGS: usize = 13;
pub const R_EXFILTRATE: usize = 14;
pub const R_RANSOMWARE: usize = 15;
pub const R_KINETIC: usize = 16;
pub const R_KERBEROAST: usize = 17;
pub const R_DISABLE_EDR: usize = 18;
pub const R_PROCESS_INJECTION: usize = 19;
pub const RED_TYPES: usize = 20;

pub const RED: [ActionKind; RED_TYPES] = [
    k("Sleep", "", 1.0, 0.0),
    k("RemoteSystemDiscovery", "T1018", 2.0, 1.0),
    k("NetworkServiceScan", "T1046", 1.0, 1.0),
    k("ExploitEternalBlue", "T1210", 3.0, 3.0),
    k("ExploitBlueKeep", "T1210", 4.0, 3.0),
    k("ExploitHTTP_RFI", "T1190", 2.0, 2.0),
    k("ExploitRemoteService", "T1021", 3.0, 2.0),
    k("PrivilegeEscalation", "T1068", 2.0, 2.0),
    k("DumpLSASS", "T1003.001", 2.0, 2.0),
    k("PassTheTicket", "T1550.003", 1.0, 2.0),
    k("LateralMovementSMB", "T1021.002", 2.0, 2.0),
    k("SpearPhishing", "T1566.001", 5.0, 2.0),
    k("ScheduledTaskPersistence", "T1053.005", 1.0, 1.0),
    k("ClearEventLogs", "T1070.001", 1.0, 1.0),
    k("Exfiltration", "T1041", 3.0, 2.0),
    k("RansomwareImpact", "T1486", 4.0, 4.0),
    k("KineticPLCAttack", "T0831", 3.0, 5.0),
    k("Kerberoasting", "T1558.003", 3.0, 2.0),
    k("DisableEDR", "T1562.001", 2.0, 2.0),
    k("ProcessInjection", "T1055", 1.0, 1.0),
];

pub const B_MONITOR: usize = 1;
pub const B_ANALYSE: usize = 2;
pub const B_ISOLATE: usize = 3;
pub const B_RESTORE: usize = 4;
pub const B_DEPLOY_EDR: usize = 5;
pub const B_DEPLOY_DECOY: usize = 6;
pub const B_HONEYTOKEN: usize = 7;
pub const B_ROTATE_CREDS: usize = 8;
pub const B_BLOCK: usize = 9;
pub const B_RECONNECT: usize = 10;
pub const B_PATCH: usize = 11;
pub const B_HUNT: usize = 12;
pub const B_KILL_PROCESS: usize = 13;
pub const B_STABILISE: usize = 14;
pub const B_SHARE_INTEL: usize = 15;
pub const BLUE_TYPES: usize = 16;

pub const BLUE: [ActionKind; BLUE_TYPES] = [
    k("Sleep", "", 1.0, 0.0),
    k("Monitor", "D3-NTA", 1.0, 0.5),
    k("Analyse", "D3-FA", 3.0, 2.0),
    k("Isolate", "D3-NI", 1.0, 2.0),
    k("Restore", "D3-RE", 5.0, 4.0),
    k("DeployEDR", "D3-PM", 2.0, 3.0),
    k("DeployDecoy", "D3-DE", 2.0, 3.0),
    k("DeployHoneytoken", "D3-DUC", 1.0, 1.0),
    k("RotateCredentials", "D3-CRO", 2.0, 2.0),
    k("BlockTraffic", "D3-ITF", 1.0, 1.0),
    k("Reconnect", "D3-NI", 1.0, 0.5),
    k("PatchService", "D3-SU", 3.0, 2.0),
    k("ThreatHunt", "D3-PA", 4.0, 3.0),
    k("KillProcess", "D3-PT", 1.0, 1.0),
    k("StabiliseController", "D3-OTP", 2.0, 2.0),
    k("ShareIntel", "D3-NTA", 1.0, 0.0),
];

/// Success rates of red actions that the hypervisor does not model as exploits.
pub fn red_base_success(kind: usize) -> f64 {
    match kind {
        R_DISCOVERY => 0.95,
        R_SCAN => 0.98,
        R_PHISHING => 0.35,
        R_PERSISTENCE => 0.90,
        R_CLEAR_LOGS => 0.90,
        R_EXFILTRATE => 0.85,
        R_RANSOMWARE => 0.90,
        R_KINETIC => 0.80,
        R_KERBEROAST => 0.50,
        R_DISABLE_EDR => 0.60,
        R_PROCESS_INJECTION => 0.85,
        _ => 1.0,
    }
}

/// The hypervisor's exploit kind of a red action, if it is one.
pub fn exploit_of(kind: usize) -> Option<usize> {
    use crate::topology::*;
    Some(match kind {
        R_ETERNAL_BLUE => EX_ETERNAL_BLUE,
        R_BLUE_KEEP => EX_BLUE_KEEP,
        R_HTTP_RFI => EX_HTTP_RFI,
        R_REMOTE_SERVICE => EX_REMOTE_SERVICE,
        R_PRIV_ESC => EX_PRIV_ESC,
        R_DUMP_LSASS => EX_DUMP_LSASS,
        R_PASS_THE_TICKET | R_LATERAL_SMB => EX_PASS_THE_TICKET,
        _ => return None,
    })
}
