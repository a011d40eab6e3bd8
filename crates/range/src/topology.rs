//! The network: subnets, hosts, services with CVEs, and who can reach whom.
//!
//! Generated at reset from the `topology` stream. Host slots are sorted by address once, at
//! reset; later address changes (DHCP, migration) rewrite a slot in place so that an action's
//! target keeps naming the same machine.

use serde::{Deserialize, Serialize};

use crate::params::Params;
use crate::rng::Rng;

/// Subnet indices.
pub const DMZ: u8 = 0;
pub const CORPORATE: u8 = 1;
pub const SECURE: u8 = 2;
pub const GUEST: u8 = 3;
pub const OT: u8 = 4;
/// The subnet of an inactive, padded slot (link-local 169.254.0.0/16).
pub const NONE: u8 = 5;

pub const SUBNET_NAMES: [&str; 6] = ["dmz", "corporate", "secure", "guest", "ot", "none"];
/// Network address of each subnet (/24), as a u32.
pub const SUBNET_BASE: [u32; 6] = [
    ip(192, 168, 1, 0),
    ip(10, 0, 0, 0),
    ip(10, 0, 1, 0),
    ip(172, 16, 0, 0),
    ip(10, 0, 99, 0),
    ip(169, 254, 0, 0),
];
/// Inclusive host-count ranges per subnet: Corporate and Secure 3..8, the others 2..5.
const HOSTS_PER_SUBNET: [(u32, u32); 5] = [(2, 5), (3, 8), (3, 8), (2, 5), (2, 5)];

/// Which subnets a host in subnet `from` can reach (bit per subnet); index 5 is the internet.
const REACH: [u8; 6] = [
    (1 << DMZ) | (1 << CORPORATE),
    (1 << CORPORATE) | (1 << DMZ) | (1 << SECURE),
    (1 << SECURE) | (1 << CORPORATE) | (1 << OT),
    (1 << GUEST) | (1 << DMZ),
    (1 << OT) | (1 << SECURE),
    (1 << DMZ) | (1 << GUEST),
];

/// Subnets reachable from the internet: where the red operator starts.
pub const INTERNET: usize = 5;

pub const fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    ((a as u32) << 24) | ((b as u32) << 16) | ((c as u32) << 8) | d as u32
}

/// Dotted-quad text of an address.
pub fn ip_string(addr: u32) -> String {
    let mut s = String::with_capacity(15);
    push_ip(&mut s, addr);
    s
}

/// Appends the dotted quad without an intermediate allocation or the formatter (every SIEM
/// line has one or two).
pub fn push_ip(out: &mut String, addr: u32) {
    for (k, shift) in [24, 16, 8, 0].into_iter().enumerate() {
        if k > 0 {
            out.push('.');
        }
        let o = (addr >> shift) as u8;
        if o >= 100 {
            out.push(char::from(b'0' + o / 100));
        }
        if o >= 10 {
            out.push(char::from(b'0' + (o / 10) % 10));
        }
        out.push(char::from(b'0' + o % 10));
    }
}

/// True when traffic from subnet `from` (or [`INTERNET`]) may go to subnet `to`.
pub fn subnet_reaches(from: usize, to: u8) -> bool {
    to < 5 && REACH[from] & (1 << to) != 0
}

/// The four OS profiles.
pub const OS_NAMES: [&str; 4] = [
    "windows_server_2008",
    "windows_10",
    "ubuntu_20_04",
    "embedded_rtos",
];
pub const OS_LEGACY: u8 = 0;
pub const OS_WIN10: u8 = 1;
pub const OS_LINUX: u8 = 2;
pub const OS_EMBEDDED: u8 = 3;

pub fn is_windows(os: u8) -> bool {
    os == OS_LEGACY || os == OS_WIN10
}

/// Exploit kinds of the simulated hypervisor (index into `ExploitRates::as_array`).
pub const EX_ETERNAL_BLUE: usize = 0;
pub const EX_BLUE_KEEP: usize = 1;
pub const EX_HTTP_RFI: usize = 2;
pub const EX_REMOTE_SERVICE: usize = 3;
pub const EX_PRIV_ESC: usize = 4;
pub const EX_DUMP_LSASS: usize = 5;
pub const EX_PASS_THE_TICKET: usize = 6;

/// One vulnerable service of the catalogue.
pub struct ServiceKind {
    pub port: u16,
    pub name: &'static str,
    pub cve: &'static str,
    /// The exploit kind that uses it.
    pub exploit: usize,
}

pub const SERVICES: [ServiceKind; 9] = [
    ServiceKind {
        port: 445,
        name: "smb",
        cve: "CVE-2017-0144",
        exploit: EX_ETERNAL_BLUE,
    },
    ServiceKind {
        port: 3389,
        name: "rdp",
        cve: "CVE-2019-0708",
        exploit: EX_BLUE_KEEP,
    },
    ServiceKind {
        port: 80,
        name: "http",
        cve: "CVE-2021-41773",
        exploit: EX_HTTP_RFI,
    },
    ServiceKind {
        port: 443,
        name: "https",
        cve: "CVE-2021-44228",
        exploit: EX_HTTP_RFI,
    },
    ServiceKind {
        port: 22,
        name: "ssh",
        cve: "CVE-2018-15473",
        exploit: EX_REMOTE_SERVICE,
    },
    ServiceKind {
        port: 5985,
        name: "winrm",
        cve: "CVE-2021-31166",
        exploit: EX_REMOTE_SERVICE,
    },
    ServiceKind {
        port: 1433,
        name: "mssql",
        cve: "CVE-2020-0618",
        exploit: EX_REMOTE_SERVICE,
    },
    ServiceKind {
        port: 502,
        name: "modbus",
        cve: "CVE-2015-5374",
        exploit: EX_REMOTE_SERVICE,
    },
    ServiceKind {
        port: 88,
        name: "kerberos",
        cve: "CVE-2020-1472",
        exploit: EX_REMOTE_SERVICE,
    },
];
const SVC_SMB: u8 = 0;
const SVC_HTTP: u8 = 2;
const SVC_MODBUS: u8 = 7;
const SVC_KERBEROS: u8 = 8;

/// Services an OS may run (indices into [`SERVICES`]), before DC and PLC extras.
const OS_SERVICES: [&[u8]; 4] = [&[0, 1, 2, 3, 5, 6], &[0, 1, 2, 3, 5], &[2, 3, 4], &[2, 7]];

/// A service on a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Service {
    /// Index into [`SERVICES`].
    pub kind: u8,
    pub cvss: f32,
    pub patched: bool,
}

/// One host slot: the generated machine and everything that happens to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub active: bool,
    pub addr: u32,
    pub subnet: u8,
    pub os: u8,
    pub services: Vec<Service>,
    pub decoy: bool,
    pub dc: bool,
    pub plc: bool,
    /// False while churned off the network.
    pub online: bool,
    /// Red's foothold: 0 none, 1 user, 2 root.
    pub privilege: u8,
    pub persistent: bool,
    pub encrypted: bool,
    pub isolated: bool,
    pub blocked: bool,
    pub restoring: bool,
    pub edr: bool,
    pub honeytoken: bool,
    /// Red's process injection hides it from monitoring until this tick.
    pub stealth_until: u64,
    /// Red cleared the logs: fewer lines until this tick.
    pub quiet_until: u64,
    /// Red knows the host exists / has scanned its services.
    pub discovered: bool,
    pub scanned: bool,
    /// Blue's view: something suspicious was seen (true or false positive).
    pub alert: bool,
    /// Blue's view after analysis: 0 unknown, 1 clean, 2 compromised.
    pub confirmed: u8,
    /// Correlator stage reached on this host (0..=4).
    pub corr_stage: u8,
    /// Tick of the current compromise, if compromised.
    pub compromised_at: Option<u64>,
    /// The current compromise was seen by blue.
    pub detected: bool,
    /// Blue's misinformation: a scan shows red a decoy profile (Linux, HTTP and SSH) instead of
    /// the host's real services.
    pub misinformed: bool,
}

impl Host {
    fn blank(addr: u32, subnet: u8) -> Host {
        Host {
            active: false,
            addr,
            subnet,
            os: OS_LINUX,
            services: Vec::new(),
            decoy: false,
            dc: false,
            plc: false,
            online: true,
            privilege: 0,
            persistent: false,
            encrypted: false,
            isolated: false,
            blocked: false,
            restoring: false,
            edr: false,
            honeytoken: false,
            stealth_until: 0,
            quiet_until: 0,
            discovered: false,
            scanned: false,
            alert: false,
            confirmed: 0,
            corr_stage: 0,
            compromised_at: None,
            detected: false,
            misinformed: false,
        }
    }

    /// Can send and receive at all (not isolated, online, not being rebuilt).
    pub fn up(&self) -> bool {
        self.active && self.online && !self.isolated && !self.restoring
    }

    pub fn compromised(&self) -> bool {
        self.active && self.privilege > 0
    }

    /// Has a service used by exploit kind `ex`.
    pub fn has_exploit_service(&self, ex: usize) -> bool {
        self.services
            .iter()
            .any(|s| SERVICES[s.kind as usize].exploit == ex)
    }

    pub fn has_service(&self, kind: u8) -> bool {
        self.services.iter().any(|s| s.kind == kind)
    }
}

/// The host slots of an episode, with 128-bit slot sets (`max_hosts` <= 124) derived from the
/// records kept beside them: the active slots, each subnet's slots and one set per flag the
/// per-tick passes and [`crate::sim::host_sets_with`] read ([`HostFlags`]). At thousands of
/// sub-envs a step's state is cold memory: the sets are a few cache lines where the records
/// they summarise are 88 bytes per slot, and most slots are inactive padding.
///
/// Serialises, compares and prints exactly as the `Vec<Host>` it holds (the sets are derived
/// from it). Reads deref to that `Vec`; a record is written through `hosts[i]` (which marks the
/// slot for [`Hosts::sync`]), [`Hosts::iter_mut`] (every slot), [`Hosts::put`] or
/// [`Hosts::set_subnet`]. `active()` and `subnet()` are exact at all times (only `put` and
/// `set_subnet` change a slot's activity or subnet in the core); [`Hosts::flags`] after
/// [`Hosts::sync`] (`is_synced`). A test checks every set after every step of every scenario.
#[derive(Clone, Default)]
pub struct Hosts {
    list: Vec<Host>,
    active: u128,
    subnet: [u128; 6],
    flags: HostFlags,
    /// Slots written through `hosts[i]` / `iter_mut` since their sets were derived.
    dirty: u128,
}

/// One set of slots per host flag (over every slot, active or not: take them with
/// [`Hosts::active`] where only active hosts count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostFlags {
    pub online: u128,
    pub isolated: u128,
    pub restoring: u128,
    pub blocked: u128,
    pub discovered: u128,
    pub scanned: u128,
    /// `privilege == 1`, `== 2`, `> 0`.
    pub user: u128,
    pub root: u128,
    pub privileged: u128,
    /// `is_windows(os)`, `os == OS_LINUX`.
    pub windows: u128,
    pub linux: u128,
    pub dc: u128,
    pub misinformed: u128,
    pub plc: u128,
    pub edr: u128,
    pub persistent: u128,
    pub encrypted: u128,
    pub honeytoken: u128,
    pub decoy: u128,
}

impl Hosts {
    pub fn new(list: Vec<Host>) -> Hosts {
        let mut hosts = Hosts {
            list,
            ..Hosts::default()
        };
        hosts.dirty = low_slots(hosts.list.len());
        hosts.sync();
        hosts
    }

    /// Derives slot `i`'s bits of every set from its record.
    fn derive(&mut self, i: usize) {
        let b = 1u128 << i;
        let h = &self.list[i];
        let put = |set: &mut u128, on: bool| *set = (*set & !b) | (b & (on as u128).wrapping_neg());
        put(&mut self.active, h.active);
        for (s, set) in self.subnet.iter_mut().enumerate() {
            put(set, usize::from(h.subnet) == s);
        }
        let f = &mut self.flags;
        put(&mut f.online, h.online);
        put(&mut f.isolated, h.isolated);
        put(&mut f.restoring, h.restoring);
        put(&mut f.blocked, h.blocked);
        put(&mut f.discovered, h.discovered);
        put(&mut f.scanned, h.scanned);
        put(&mut f.user, h.privilege == 1);
        put(&mut f.root, h.privilege == 2);
        put(&mut f.privileged, h.privilege > 0);
        put(&mut f.windows, is_windows(h.os));
        put(&mut f.linux, h.os == OS_LINUX);
        put(&mut f.dc, h.dc);
        put(&mut f.misinformed, h.misinformed);
        put(&mut f.plc, h.plc);
        put(&mut f.edr, h.edr);
        put(&mut f.persistent, h.persistent);
        put(&mut f.encrypted, h.encrypted);
        put(&mut f.honeytoken, h.honeytoken);
        put(&mut f.decoy, h.decoy);
    }

    /// Brings the sets of the slots written since up to date (reading only their records,
    /// which were just written).
    pub fn sync(&mut self) {
        let dirty = self.dirty;
        self.dirty = 0;
        for i in slots(dirty) {
            self.derive(i);
        }
    }

    /// True when [`Hosts::flags`] is exact (no record written since the last sync).
    pub fn is_synced(&self) -> bool {
        self.dirty == 0
    }

    /// The active slots.
    pub fn active(&self) -> u128 {
        self.active
    }

    /// The slots of subnet `s` (active or not; inactive padding is [`NONE`]).
    pub fn subnet(&self, s: u8) -> u128 {
        self.subnet[s as usize]
    }

    /// The slots of every subnet.
    pub fn subnets(&self) -> &[u128; 6] {
        &self.subnet
    }

    /// The flag sets as of the last [`Hosts::sync`].
    pub fn flags(&self) -> &HostFlags {
        &self.flags
    }

    /// Replaces slot `i`'s record.
    pub fn put(&mut self, i: usize, h: Host) {
        self.list[i] = h;
        self.derive(i);
    }

    /// Moves slot `i` to subnet `s`.
    pub fn set_subnet(&mut self, i: usize, s: u8) {
        self.list[i].subnet = s;
        self.derive(i);
    }

    /// Every record, mutably (every slot is marked for [`Hosts::sync`]).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Host> {
        self.dirty = low_slots(self.list.len());
        self.list.iter_mut()
    }

    /// True when every kept set is that of the records (after a sync; for tests).
    pub fn sets_consistent(&self) -> bool {
        let mut fresh = Hosts::new(self.list.clone());
        fresh.sync();
        let mut me = self.clone();
        me.sync();
        fresh.active == self.active
            && fresh.subnet == self.subnet
            && fresh.flags == me.flags
            && (!self.is_synced() || fresh.flags == self.flags)
    }
}

/// Slots `0..n` (n <= 128).
fn low_slots(n: usize) -> u128 {
    if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    }
}

/// The set bits of `set`, lowest first.
pub fn slots(mut set: u128) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if set == 0 {
            return None;
        }
        let i = set.trailing_zeros() as usize;
        set &= set - 1;
        Some(i)
    })
}

impl std::ops::Deref for Hosts {
    type Target = Vec<Host>;
    fn deref(&self) -> &Vec<Host> {
        &self.list
    }
}

impl<I: std::slice::SliceIndex<[Host]>> std::ops::Index<I> for Hosts {
    type Output = I::Output;
    fn index(&self, i: I) -> &I::Output {
        &self.list[i]
    }
}

impl std::ops::IndexMut<usize> for Hosts {
    fn index_mut(&mut self, i: usize) -> &mut Host {
        let h = &mut self.list[i];
        self.dirty |= 1 << i;
        h
    }
}

impl PartialEq for Hosts {
    fn eq(&self, other: &Hosts) -> bool {
        self.list == other.list
    }
}

impl std::fmt::Debug for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.list.fmt(f)
    }
}

impl Serialize for Hosts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.list.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Hosts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Hosts, D::Error> {
        Vec::<Host>::deserialize(d).map(Hosts::new)
    }
}

impl IntoIterator for Hosts {
    type Item = Host;
    type IntoIter = std::vec::IntoIter<Host>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.into_iter()
    }
}

impl<'a> IntoIterator for &'a Hosts {
    type Item = &'a Host;
    type IntoIter = std::slice::Iter<'a, Host>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

/// Can host `a` send to host `b`? Both up, the subnet rule allows it, and a blocked host talks
/// only inside its own subnet.
pub fn reaches(a: &Host, b: &Host) -> bool {
    if !a.up() || !b.up() || a.subnet >= 5 || b.subnet >= 5 {
        return false;
    }
    if a.subnet == b.subnet {
        return true;
    }
    !a.blocked && !b.blocked && subnet_reaches(a.subnet as usize, b.subnet)
}

/// Can the internet (the red operator without a foothold) reach `b`?
pub fn internet_reaches(b: &Host) -> bool {
    b.up() && !b.blocked && subnet_reaches(INTERNET, b.subnet)
}

/// A free host address in `subnet` (octets 10..=250), drawn from `rng`; `None` when full.
/// `active`: the active slots of `hosts` (only their records are read).
pub fn free_address(hosts: &[Host], active: u128, subnet: u8, rng: &mut Rng) -> Option<u32> {
    let used = |a: u32| slots(active).any(|i| hosts[i].addr == a);
    let base = SUBNET_BASE[subnet as usize];
    for _ in 0..64 {
        let a = base | rng.range(10, 250);
        if !used(a) {
            return Some(a);
        }
    }
    // Dense subnet: first free octet, deterministic.
    (10..=250).map(|o| base | o).find(|&a| !used(a))
}

/// Fills a host with a generated machine of `subnet`. `active`: the active slots of `hosts`.
pub fn make_host(
    hosts: &[Host],
    active: u128,
    subnet: u8,
    params: &Params,
    rng: &mut Rng,
) -> Option<Host> {
    let addr = free_address(hosts, active, subnet, rng)?;
    let mut h = Host::blank(addr, subnet);
    h.active = true;
    let weights: [f64; 3] = match subnet {
        DMZ => [0.3, 0.2, 0.5],
        CORPORATE => [0.3, 0.6, 0.1],
        SECURE => [0.4, 0.3, 0.3],
        _ => [0.1, 0.7, 0.2],
    };
    h.os = if subnet == OT {
        // One HMI runs Windows; the controllers are PLCs on an RTOS.
        if slots(active).any(|i| hosts[i].subnet == OT && hosts[i].plc) && rng.bernoulli(0.3) {
            OS_WIN10
        } else {
            OS_EMBEDDED
        }
    } else {
        rng.weighted_index(&weights).unwrap_or(0) as u8
    };
    h.plc = h.os == OS_EMBEDDED;
    let mut pool: Vec<u8> = OS_SERVICES[h.os as usize].to_vec();
    rng.shuffle(&mut pool);
    let k = rng.range(1, pool.len().min(3) as u32) as usize;
    for &kind in &pool[..k] {
        h.services.push(Service {
            kind,
            cvss: cvss(rng),
            patched: false,
        });
    }
    if h.plc && !h.has_service(SVC_MODBUS) {
        h.services.push(Service {
            kind: SVC_MODBUS,
            cvss: cvss(rng),
            patched: false,
        });
    }
    h.services.sort_by_key(|s| SERVICES[s.kind as usize].port);
    h.decoy = !h.plc && rng.bernoulli(params.decoy_probability);
    Some(h)
}

fn cvss(rng: &mut Rng) -> f32 {
    // 3.5..=9.8 in steps of 0.1, as scores are published.
    rng.range(35, 98) as f32 / 10.0
}

fn make_dc(h: &mut Host, rng: &mut Rng) {
    h.dc = true;
    h.decoy = false;
    h.os = if rng.bernoulli(0.5) {
        OS_LEGACY
    } else {
        OS_WIN10
    };
    h.services
        .retain(|s| OS_SERVICES[h.os as usize].contains(&s.kind));
    for kind in [SVC_SMB, SVC_KERBEROS] {
        if !h.has_service(kind) {
            h.services.push(Service {
                kind,
                cvss: cvss(rng),
                patched: false,
            });
        }
    }
    h.services.sort_by_key(|s| SERVICES[s.kind as usize].port);
}

/// Generates the hosts of an episode: active hosts sorted by address, padded with inactive
/// link-local slots to `max_hosts`, the whole sorted by address. Returns hosts and whether the
/// OT subnet exists.
pub fn generate(params: &Params, rng: &mut Rng) -> (Vec<Host>, bool) {
    let has_ot = rng.bernoulli(params.ot_probability);
    let n_subnets = if has_ot { 5 } else { 4 };
    let mut counts = [0u32; 5];
    for (s, count) in counts.iter_mut().enumerate().take(n_subnets) {
        let (lo, hi) = HOSTS_PER_SUBNET[s];
        *count = rng.range(lo, hi);
    }
    let cap = params.max_active_hosts.min(params.max_hosts) as u32;
    while counts.iter().sum::<u32>() > cap {
        // Trim the largest subnet (first in subnet order on ties), keeping one host each.
        let (i, _) = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 1)
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
            .expect("cap >= 5 leaves a subnet above one host");
        counts[i] -= 1;
    }
    let mut hosts: Vec<Host> = Vec::with_capacity(params.max_hosts);
    for (s, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            // Every host generated so far is active (the padding comes last).
            let active = (1u128 << hosts.len()) - 1;
            if let Some(h) = make_host(&hosts, active, s as u8, params, rng) {
                hosts.push(h);
            }
        }
    }
    // At least one domain controller, in Corporate; sometimes a second in Secure.
    let corp: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].subnet == CORPORATE)
        .collect();
    if let Some(&i) = rng.choose_index(&corp) {
        make_dc(&mut hosts[i], rng);
    }
    let secure: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].subnet == SECURE)
        .collect();
    if rng.bernoulli(0.3) {
        if let Some(&i) = rng.choose_index(&secure) {
            make_dc(&mut hosts[i], rng);
        }
    }
    ensure_dmz_web(&mut hosts, rng);
    let mut octet = 1u32;
    while hosts.len() < params.max_hosts {
        hosts.push(Host::blank(SUBNET_BASE[NONE as usize] | octet, NONE));
        octet += 1;
    }
    hosts.sort_by_key(|h| h.addr);
    // Red starts outside and knows the public-facing addresses.
    for h in hosts.iter_mut() {
        h.discovered = h.active && (h.subnet == DMZ || h.subnet == GUEST);
    }
    (hosts, has_ot)
}

impl Rng {
    /// A uniformly chosen element of a slice of indices.
    pub fn choose_index<'a>(&mut self, items: &'a [usize]) -> Option<&'a usize> {
        self.index(items.len()).map(|i| &items[i])
    }
}

/// Keeps HTTP reachable on every DMZ host (they are the public web tier).
pub fn ensure_dmz_web(hosts: &mut [Host], rng: &mut Rng) {
    for h in hosts.iter_mut() {
        if h.active && h.subnet == DMZ && !h.has_service(SVC_HTTP) && !h.has_service(3) {
            h.services.push(Service {
                kind: SVC_HTTP,
                cvss: cvss(rng),
                patched: false,
            });
            h.services.sort_by_key(|s| SERVICES[s.kind as usize].port);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Scenario;

    #[test]
    fn addresses_print_as_dotted_quads() {
        assert_eq!(ip_string(SUBNET_BASE[DMZ as usize] | 20), "192.168.1.20");
        assert_eq!(ip_string(ip(10, 0, 99, 7)), "10.0.99.7");
        // Every octet value in every position, against the formatter.
        for o in 0..=255u32 {
            let addr = o << 24 | (255 - o) << 16 | (o * 7 % 256) << 8 | (o * 13 % 256);
            let want = format!("{}.{}.{}.{}", o, 255 - o, o * 7 % 256, o * 13 % 256);
            assert_eq!(ip_string(addr), want);
        }
    }

    #[test]
    fn reach_rules() {
        assert!(subnet_reaches(INTERNET, DMZ));
        assert!(!subnet_reaches(INTERNET, SECURE));
        assert!(subnet_reaches(SECURE as usize, OT));
        assert!(!subnet_reaches(CORPORATE as usize, OT));
        assert!(!subnet_reaches(DMZ as usize, NONE));
    }

    #[test]
    fn caps_active_hosts() {
        let mut p = Params::new(Scenario::Ransomware);
        p.max_active_hosts = 6;
        for seed in 0..50 {
            let (hosts, _) = generate(&p, &mut Rng::new(seed, "topology"));
            let active = hosts.iter().filter(|h| h.active).count();
            assert!((4..=6).contains(&active), "{active}");
            assert_eq!(hosts.len(), 100);
        }
    }
}
