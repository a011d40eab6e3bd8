//! The action catalogue: type ids, names, MITRE ATT&CK techniques, durations and costs.
//!
//! An action is `[type, target slot]`. The ids and names are NetForge_RL's wherever the range
//! implements the same action (so a script or policy written for the original means the same
//! here); the range's own actions take ids the original leaves free; [`SLEEP`] (31, unused by
//! the original for either team) is the explicit no-op. Every other id is unused: a no-op
//! flagged `invalid_action`. docs/range.md lists the catalogue and where it differs.

/// One action type.
pub struct ActionKind {
    /// Empty for an unused id.
    pub name: &'static str,
    /// MITRE ATT&CK (Enterprise or ICS) technique for red (the original's mapping where it has
    /// one); blue actions name a D3FEND technique.
    pub technique: &'static str,
    /// Mean duration in ticks.
    pub duration: f64,
    /// Energy paid when the action starts (the original's `cost`).
    pub energy: f64,
}

impl ActionKind {
    pub const fn used(&self) -> bool {
        !self.name.is_empty()
    }
}

const fn k(name: &'static str, technique: &'static str, duration: f64, energy: f64) -> ActionKind {
    ActionKind {
        name,
        technique,
        duration,
        energy,
    }
}

const UNUSED: ActionKind = k("", "", 1.0, 0.0);

/// The explicit no-op of both teams: always valid, target ignored, never in flight.
pub const SLEEP: usize = 31;

// Red, the original's ids.
pub const R_REMOTE_SERVICE: usize = 0;
pub const R_PRIV_ESC: usize = 1;
pub const R_SCAN: usize = 2;
pub const R_BLUE_KEEP: usize = 3;
pub const R_ETERNAL_BLUE: usize = 4;
pub const R_HTTP_RFI: usize = 5;
pub const R_JUICY_POTATO: usize = 6;
pub const R_DUMP_LSASS: usize = 7;
pub const R_PASS_THE_TICKET: usize = 8;
pub const R_PASS_THE_HASH: usize = 9;
pub const R_V4L2: usize = 10;
pub const R_RANSOMWARE: usize = 11;
pub const R_KILL_PROCESS: usize = 12;
pub const R_EXFILTRATE: usize = 13;
pub const R_NETWORK_SCAN: usize = 14;
pub const R_DISCOVERY: usize = 15;
// 16 ShareIntelligence (red-to-red coordination) is unused: the range has one red agent.
pub const R_IP_FRAGMENTATION: usize = 17;
pub const R_KINETIC: usize = 20;
pub const R_PHISHING: usize = 21;
// Red, the range's own, on ids the original leaves free.
pub const R_LATERAL_SMB: usize = 18;
pub const R_PERSISTENCE: usize = 19;
pub const R_CLEAR_LOGS: usize = 22;
pub const R_KERBEROAST: usize = 23;
pub const R_PROCESS_INJECTION: usize = 24;

/// Red's catalogue by id.
pub const RED: [ActionKind; 32] = {
    let mut t = [UNUSED; 32];
    t[R_REMOTE_SERVICE] = k("ExploitRemoteService", "T1210", 3.0, 2.0);
    t[R_PRIV_ESC] = k("PrivilegeEscalate", "T1068", 2.0, 2.0);
    t[R_SCAN] = k("DiscoverNetworkServices", "T1046", 1.0, 1.0);
    t[R_BLUE_KEEP] = k("ExploitBlueKeep", "T1210", 4.0, 3.0);
    t[R_ETERNAL_BLUE] = k("ExploitEternalBlue", "T1210", 3.0, 3.0);
    t[R_HTTP_RFI] = k("ExploitHTTP_RFI", "T1190", 2.0, 2.0);
    t[R_JUICY_POTATO] = k("JuicyPotato", "T1134", 2.0, 2.0);
    t[R_DUMP_LSASS] = k("DumpLSASS", "T1003.001", 2.0, 2.0);
    t[R_PASS_THE_TICKET] = k("PassTheTicket", "T1550.003", 1.0, 2.0);
    t[R_PASS_THE_HASH] = k("PassTheHash", "T1550.002", 1.0, 1.0);
    t[R_V4L2] = k("V4L2KernelExploit", "T1068", 2.0, 2.0);
    t[R_RANSOMWARE] = k("Impact", "T1486", 4.0, 4.0);
    t[R_KILL_PROCESS] = k("KillProcess", "T1489", 2.0, 2.0);
    t[R_EXFILTRATE] = k("ExfiltrateData", "T1041", 3.0, 2.0);
    t[R_NETWORK_SCAN] = k("NetworkScan", "T1046", 3.0, 5.0);
    t[R_DISCOVERY] = k("DiscoverRemoteSystems", "T1018", 2.0, 1.0);
    t[R_IP_FRAGMENTATION] = k("IPFragmentation", "T1027", 2.0, 2.0);
    t[R_LATERAL_SMB] = k("LateralMovementSMB", "T1021.002", 2.0, 2.0);
    t[R_PERSISTENCE] = k("ScheduledTaskPersistence", "T1053.005", 1.0, 1.0);
    t[R_KINETIC] = k("OverloadPLC", "T0831", 3.0, 5.0);
    t[R_PHISHING] = k("SpearPhishing", "T1566", 5.0, 2.0);
    t[R_CLEAR_LOGS] = k("ClearEventLogs", "T1070.001", 1.0, 1.0);
    t[R_KERBEROAST] = k("Kerberoasting", "T1558.003", 3.0, 2.0);
    t[R_PROCESS_INJECTION] = k("ProcessInjection", "T1055", 1.0, 1.0);
    t[SLEEP] = k("Sleep", "", 1.0, 0.0);
    t
};

// Blue, the original's ids.
pub const B_ISOLATE: usize = 0;
pub const B_RESTORE_HOST: usize = 1;
pub const B_MONITOR: usize = 2;
pub const B_ANALYSE: usize = 3;
pub const B_REMOVE: usize = 4;
pub const B_RESTORE_BACKUP: usize = 5;
pub const B_CONFIGURE_ACL: usize = 6;
pub const B_AWARENESS: usize = 7;
pub const B_DEPLOY_EDR: usize = 8;
pub const B_DEPLOY_DECOY: usize = 9;
pub const B_DECOY_APACHE: usize = 10;
pub const B_DECOY_SSHD: usize = 11;
pub const B_DECOY_TOMCAT: usize = 12;
pub const B_MISINFORM: usize = 13;
pub const B_HONEYTOKEN: usize = 14;
pub const B_ROTATE_CREDS: usize = 15;
// Blue, the range's own.
pub const B_BLOCK: usize = 16;
pub const B_PATCH: usize = 17;
pub const B_HUNT: usize = 18;
pub const B_STABILISE: usize = 19;
pub const B_SHARE_INTEL: usize = 20;

/// Blue's catalogue by id.
pub const BLUE: [ActionKind; 32] = {
    let mut t = [UNUSED; 32];
    t[B_ISOLATE] = k("IsolateHost", "D3-NI", 1.0, 2.0);
    t[B_RESTORE_HOST] = k("RestoreHost", "D3-NI", 1.0, 1.0);
    t[B_MONITOR] = k("Monitor", "D3-NTA", 1.0, 0.5);
    t[B_ANALYSE] = k("Analyze", "D3-FA", 3.0, 2.0);
    t[B_REMOVE] = k("Remove", "D3-PT", 1.0, 1.0);
    t[B_RESTORE_BACKUP] = k("RestoreFromBackup", "D3-RE", 5.0, 4.0);
    t[B_CONFIGURE_ACL] = k("ConfigureACL", "D3-NTF", 1.0, 2.0);
    t[B_AWARENESS] = k("SecurityAwarenessTraining", "D3-UAP", 3.0, 2.0);
    t[B_DEPLOY_EDR] = k("DeployEDR", "D3-PM", 2.0, 3.0);
    t[B_DEPLOY_DECOY] = k("DeployDecoy", "D3-DE", 2.0, 3.0);
    t[B_DECOY_APACHE] = k("DecoyApache", "D3-DE", 2.0, 3.0);
    t[B_DECOY_SSHD] = k("DecoySSHD", "D3-DE", 2.0, 3.0);
    t[B_DECOY_TOMCAT] = k("DecoyTomcat", "D3-DE", 2.0, 3.0);
    t[B_MISINFORM] = k("Misinform", "D3-DF", 1.0, 1.0);
    t[B_HONEYTOKEN] = k("DeployHoneytoken", "D3-DUC", 1.0, 1.0);
    t[B_ROTATE_CREDS] = k("RotateKerberos", "D3-CRO", 2.0, 2.0);
    t[B_BLOCK] = k("BlockTraffic", "D3-ITF", 1.0, 1.0);
    t[B_PATCH] = k("PatchService", "D3-SU", 3.0, 2.0);
    t[B_HUNT] = k("ThreatHunt", "D3-PA", 4.0, 3.0);
    t[B_STABILISE] = k("StabiliseController", "D3-OTP", 2.0, 2.0);
    t[B_SHARE_INTEL] = k("ShareIntel", "D3-NTA", 1.0, 0.0);
    t[SLEEP] = k("Sleep", "", 1.0, 0.0);
    t
};

/// Number of red action types in use, Sleep excluded (the denominator of `attack_coverage`).
pub const RED_ACTIONS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < 32 {
        if RED[i].used() && i != SLEEP {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Whether a blue type deploys a decoy (generic or typed).
pub fn is_decoy_deploy(kind: usize) -> bool {
    matches!(
        kind,
        B_DEPLOY_DECOY | B_DECOY_APACHE | B_DECOY_SSHD | B_DECOY_TOMCAT
    )
}

/// Success rates of red actions that the hypervisor does not model as exploits.
pub fn red_base_success(kind: usize) -> f64 {
    match kind {
        R_DISCOVERY => 0.95,
        R_SCAN => 0.98,
        R_NETWORK_SCAN => 0.90,
        R_PHISHING => 0.35,
        R_PERSISTENCE => 0.90,
        R_CLEAR_LOGS => 0.90,
        R_EXFILTRATE => 0.85,
        R_RANSOMWARE => 0.90,
        R_KINETIC => 0.80,
        R_KERBEROAST => 0.50,
        R_KILL_PROCESS => 0.60,
        R_PROCESS_INJECTION => 0.85,
        R_JUICY_POTATO => 0.75,
        R_V4L2 => 0.60,
        R_PASS_THE_HASH => 0.85,
        R_IP_FRAGMENTATION => 0.30,
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

/// The catalogue of an agent's team.
pub fn catalogue(red: bool) -> &'static [ActionKind; 32] {
    if red {
        &RED
    } else {
        &BLUE
    }
}
