//! Canonicalise + SHA-256 of a 10,000-host state (3,010,219 bytes of canonical JSON), both
//! profiles, against serde_jcs on the same state.
//!
//! The state is `support/hosts.rs`'s (shared with `lockstep`'s `fingerprint` bench);
//! `scripts/bench-fingerprint` builds the same state in Python, so the figures compare.
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
    canonicalize, parse_with, to_vec, write_value, Document, ParseOptions, Profile, Value,
};
use sha2::{Digest, Sha256};

#[path = "support/hosts.rs"]
mod hosts;
use hosts::{host_state, python_dump_text};

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
    python_dump_text(&state, true, &mut text);
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
