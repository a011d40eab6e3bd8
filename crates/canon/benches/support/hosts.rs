//! The benchmark state of `canonical_hash.rs` and `lockstep`'s `fingerprint` bench: 10,000
//! hosts (3,010,219 bytes of canonical JSON), and its text as `json.dump` writes it.
//!
//! The state generator is SplitMix64 with a fixed seed; `scripts/bench-fingerprint` builds the
//! same state in Python (same generator, same draw order), so the figures are comparable.

use lockstep_canon::{to_vec, Map, Profile, Value};

pub const HOSTS: u64 = 10_000;
pub const SEED: u64 = 2026;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `next() % n`: the same draw the Python generator makes (bias is irrelevant here).
    fn r(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const OS: [&str; 4] = ["linux", "windows", "bsd", "macos"];
const SERVICES: [&str; 6] = ["ssh", "http", "https", "smb", "rdp", "postgres"];
const TAGS: [&str; 5] = ["dmz", "prod", "dev", "db", "edge"];

/// The benchmark state. Keep in step with `scripts/bench-fingerprint`.
pub fn host_state() -> Value {
    host_state_n(
        std::env::var("HOSTS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(HOSTS),
    )
}

pub fn host_state_n(hosts_n: u64) -> Value {
    let mut rng = SplitMix64(SEED);
    let mut hosts = Map::new();
    for i in 0..hosts_n {
        let mut host = Map::new();
        let ip = format!("10.{}.{}.{}", rng.r(256), rng.r(256), rng.r(256));
        host.insert("ip".into(), ip.into());
        host.insert("os".into(), OS[rng.r(4) as usize].into());
        let n_ports = rng.r(6);
        let ports: Vec<Value> = (0..n_ports).map(|_| Value::from(rng.r(65536))).collect();
        host.insert("ports".into(), Value::Array(ports));
        let mut services = Map::new();
        for _ in 0..rng.r(4) {
            let name = SERVICES[rng.r(6) as usize];
            let version = format!("{}.{}.{}", rng.r(10), rng.r(20), rng.r(100));
            let vulnerable = rng.r(4) == 0;
            let service: Value = [
                ("version", Value::from(version)),
                ("vulnerable", Value::from(vulnerable)),
            ]
            .into_iter()
            .collect();
            services.insert(name.into(), service);
        }
        host.insert("services".into(), Value::Object(services));
        host.insert("compromised".into(), Value::from(rng.r(10) == 0));
        host.insert("risk".into(), Value::from(rng.r(1_000_001) as f64 / 1e6));
        host.insert(
            "uptime_s".into(),
            Value::from(rng.r(1_000_000_000) as f64 / 1000.0),
        );
        let load: Vec<Value> = (0..3)
            .map(|_| Value::from(rng.r(100_000) as f64 / 1000.0))
            .collect();
        host.insert("load".into(), Value::Array(load));
        let n_tags = rng.r(3);
        let tags: Vec<Value> = (0..n_tags)
            .map(|_| Value::from(TAGS[rng.r(5) as usize]))
            .collect();
        host.insert("tags".into(), Value::Array(tags));
        host.insert("owner".into(), format!("équipe-{}", rng.r(50)).into());
        host.insert(
            "last_seen".into(),
            Value::from(1_767_225_600 + rng.r(86_400 * 30)),
        );
        hosts.insert(format!("host-{i:05}"), Value::Object(host));
    }
    [
        ("hosts", Value::Object(hosts)),
        ("seed", Value::from(SEED)),
        ("step", Value::from(0)),
    ]
    .into_iter()
    .collect()
}

/// The state as a Python environment would store it (`json.dump`: `", "` and `": "`), with
/// every object's keys in reverse order when `reversed` (then parsing has whitespace to skip
/// and the one-pass canonicaliser has every object to reorder), else in key order
/// (`sort_keys=True`).
pub fn python_dump_text(v: &Value, reversed: bool, out: &mut Vec<u8>) {
    match v {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                python_dump_text(item, reversed, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            let members: Vec<_> = if reversed {
                map.iter().rev().collect()
            } else {
                map.iter().collect()
            };
            for (i, (k, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(&to_vec(&Value::from(k.as_str()), Profile::Python).unwrap());
                out.extend_from_slice(b": ");
                python_dump_text(item, reversed, out);
            }
            out.push(b'}');
        }
        scalar => out.extend_from_slice(&to_vec(scalar, Profile::Python).unwrap()),
    }
}
