//! The fingerprint of the 10,000-host state (`lockstep-canon`'s `benches/support/hosts.rs`,
//! 3,010,219 canonical bytes) on the threads `lockstep` gives it:
//!
//! - `fingerprint/document_python`, `document_jcs`: [`digest_document`] of a parsed
//!   `Document`, SHA-256 on a second thread while the canonical bytes are written (MB/s of
//!   canonical bytes);
//! - `fingerprint/text_sorted`, `text_reversed`: [`digest_text`] of the state's text as
//!   `json.dump` writes it, keys in key order or reversed (`lockstep fingerprint`'s path: the
//!   text read on two threads, SHA-256 after them on two cores and beside them on three or
//!   more; MB/s of text).
//!
//! Run: `cargo bench -p lockstep --bench fingerprint`; `scripts/bench-canon` prints these
//! beside the canon crate's one-thread figures.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lockstep::fingerprint::{digest_document, digest_text};
use lockstep_canon::{to_vec, Document, ParseOptions, Profile};

#[path = "../../canon/benches/support/hosts.rs"]
mod hosts;
use hosts::{host_state, python_dump_text};

fn bench(c: &mut Criterion) {
    let state = host_state();
    let canonical = to_vec(&state, Profile::Python).expect("the state has a canonical form");
    let jcs = to_vec(&state, Profile::Jcs).expect("the state has a jcs form");
    let (mut sorted, mut reversed) = (Vec::new(), Vec::new());
    python_dump_text(&state, false, &mut sorted);
    python_dump_text(&state, true, &mut reversed);
    let options = ParseOptions::default();
    let doc = Document::parse_with(&reversed, &options).expect("the state's text parses");
    let want = digest_document(&doc, Profile::Python).expect("a digest");
    for text in [&sorted, &reversed] {
        let got = digest_text(text, &options, Profile::Python).expect("a digest");
        assert_eq!(got, want, "text and document digests agree");
    }

    let mut group = c.benchmark_group("fingerprint");
    group.throughput(Throughput::Bytes(canonical.len() as u64));
    group.bench_function("document_python", |b| {
        b.iter(|| digest_document(std::hint::black_box(&doc), Profile::Python).unwrap())
    });
    group.throughput(Throughput::Bytes(jcs.len() as u64));
    group.bench_function("document_jcs", |b| {
        b.iter(|| digest_document(std::hint::black_box(&doc), Profile::Jcs).unwrap())
    });
    for (name, text) in [("text_sorted", &sorted), ("text_reversed", &reversed)] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| digest_text(std::hint::black_box(text), &options, Profile::Python).unwrap())
        });
    }
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
