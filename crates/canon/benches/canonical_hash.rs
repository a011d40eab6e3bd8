//! Canonicalise + SHA-256 of a 10,000-host state (3,010,219 bytes of canonical JSON), both
//! profiles, against serde_jcs on the same state.
//!
//! The state generator is SplitMix64 with a fixed seed; `scripts/bench-fingerprint` builds the
//! same state in Python (same generator, same draw order), so the figures are comparable.
//!
//! Also, from the state's text (as `json.dump` writes it, keys reversed): `from_text/parse`
//! (into the tree), `from_text/serde_json_value` (serde_json into its own tree, for
//! reference) and `from_text/one_pass_*_sha256` (`canonicalize` straight into SHA-256), in
//! input bytes per second.
//!
//! Run: `cargo bench -p lockstep-canon --bench canonical_hash` (`HOSTS=100` for a state that
//! fits in cache, which separates the writer's own cost from memory latency). The setup
//! asserts that our JCS bytes equal serde_jcs's and prints the python-profile SHA-256, which
//! must equal the digest the script prints: `1ebe5079...7519b` for 10,000 hosts.

use std::io;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lockstep_canon::{
    canonicalize, parse_with, to_vec, write_value, Document, Map, ParseOptions, Profile, Value,
};
use sha2::{Digest, Sha256};

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

/// SHA-256 behind a 16 KiB buffer, as lockstep::fingerprint::HashWriter does.
struct HashWriter {
    hasher: Sha256,
    buffer: Vec<u8>,
}

impl HashWriter {
    fn new() -> Self {
        HashWriter {
            hasher: Sha256::new(),
            buffer: Vec::with_capacity(16 * 1024),
        }
    }

    fn finish(mut self) -> [u8; 32] {
        self.hasher.update(&self.buffer);
        self.hasher.finalize().into()
    }
}

impl io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.buffer.len() + bytes.len() > self.buffer.capacity() || bytes.len() >= 4096 {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
            if bytes.len() >= 4096 {
                self.hasher.update(bytes);
                return Ok(());
            }
        }
        self.buffer.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The state as a Python environment would store it (`json.dump`: `", "` and `": "`), with
/// every object's keys in reverse order, so that parsing has whitespace to skip and the
/// one-pass canonicaliser has every object to reorder.
fn python_dump_text(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                python_dump_text(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().rev().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(&to_vec(&Value::from(k.as_str()), Profile::Python).unwrap());
                out.extend_from_slice(b": ");
                python_dump_text(item, out);
            }
            out.push(b'}');
        }
        scalar => out.extend_from_slice(&to_vec(scalar, Profile::Python).unwrap()),
    }
}

fn text_fingerprint(text: &[u8], profile: Profile) -> [u8; 32] {
    let mut w = HashWriter::new();
    canonicalize(text, &ParseOptions::default(), profile, &mut w).expect("valid state text");
    w.finish()
}

fn fingerprint(value: &Value, profile: Profile) -> [u8; 32] {
    let mut w = HashWriter::new();
    write_value(value, profile, &mut w).expect("state has a canonical form");
    w.finish()
}

fn bench(c: &mut Criterion) {
    let state = host_state();
    let python_bytes = to_vec(&state, Profile::Python).unwrap();
    let jcs_bytes = to_vec(&state, Profile::Jcs).unwrap();
    let json_state = serde_json::to_value(&state).unwrap();
    let serde_jcs_bytes = serde_jcs::to_vec(&json_state).unwrap();
    assert_eq!(
        serde_jcs_bytes, jcs_bytes,
        "serde_jcs and our jcs agree on the state"
    );
    eprintln!(
        "state: python {} bytes sha256 {:x}; jcs {} bytes",
        python_bytes.len(),
        Sha256::digest(&python_bytes),
        jcs_bytes.len()
    );

    let mut text = Vec::new();
    python_dump_text(&state, &mut text);
    assert_eq!(
        text_fingerprint(&text, Profile::Python),
        fingerprint(&state, Profile::Python),
        "one pass and tree agree"
    );

    // Text in: parse into the tree, or canonicalise + SHA-256 in one pass (input bytes/s).
    let mut group = c.benchmark_group("from_text");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("parse", |b| {
        b.iter(|| parse_with(std::hint::black_box(&text), &ParseOptions::default()).unwrap())
    });
    // The reference: a well-kept parser into its own tree of heap nodes (serde_json's
    // `Value`, maps as B-trees like ours), on the same text. It runs at our parse's speed,
    // which says the tree's figure is the cost of its allocations, not of the parser
    // (docs/canonical-json.md, "Fifth round").
    group.bench_function("serde_json_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(std::hint::black_box(&text)).unwrap())
    });
    // The flat document (docs/canonical-json.md, "Seventh round"): one entry per value in one
    // vector, strings borrowed from the text.
    group.bench_function("document", |b| {
        b.iter(|| {
            Document::parse_with(std::hint::black_box(&text), &ParseOptions::default()).unwrap()
        })
    });
    group.bench_function("one_pass_python_sha256", |b| {
        b.iter(|| text_fingerprint(std::hint::black_box(&text), Profile::Python))
    });
    group.bench_function("one_pass_jcs_sha256", |b| {
        b.iter(|| text_fingerprint(std::hint::black_box(&text), Profile::Jcs))
    });
    group.finish();

    let mut group = c.benchmark_group("canonical_sha256");
    group.throughput(Throughput::Bytes(python_bytes.len() as u64));
    group.bench_function("python", |b| {
        b.iter(|| fingerprint(std::hint::black_box(&state), Profile::Python))
    });
    group.bench_function("python_no_hash", |b| {
        b.iter(|| {
            write_value(
                std::hint::black_box(&state),
                Profile::Python,
                &mut io::sink(),
            )
        })
    });
    let doc = Document::parse_with(&text, &ParseOptions::default()).unwrap();
    assert_eq!(
        doc.to_vec(Profile::Python).unwrap(),
        python_bytes,
        "document and tree agree"
    );
    group.bench_function("document_python", |b| {
        b.iter(|| {
            let mut w = HashWriter::new();
            std::hint::black_box(&doc)
                .write(Profile::Python, &mut w)
                .unwrap();
            w.finish()
        })
    });
    group.bench_function("document_python_no_hash", |b| {
        b.iter(|| {
            std::hint::black_box(&doc)
                .write(Profile::Python, &mut io::sink())
                .unwrap()
        })
    });
    group.bench_function("sha256_only", |b| {
        b.iter(|| Sha256::digest(std::hint::black_box(&python_bytes)))
    });
    group.throughput(Throughput::Bytes(jcs_bytes.len() as u64));
    group.bench_function("jcs", |b| {
        b.iter(|| fingerprint(std::hint::black_box(&state), Profile::Jcs))
    });
    group.bench_function("document_jcs", |b| {
        b.iter(|| {
            let mut w = HashWriter::new();
            std::hint::black_box(&doc)
                .write(Profile::Jcs, &mut w)
                .unwrap();
            w.finish()
        })
    });
    group.bench_function("serde_jcs", |b| {
        b.iter(|| {
            let bytes = serde_jcs::to_vec(std::hint::black_box(&json_state)).unwrap();
            Sha256::digest(&bytes)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
