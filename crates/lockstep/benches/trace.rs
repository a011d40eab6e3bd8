//! Trace overhead per step on a synthetic env: 4 agents x 12 KiB of observations (three keys
//! per agent: float32[1024], float32[1024], uint8[4096]), an info object and two log lines.
//!
//! - `hash_12KiB/{sha256,blake3,xxh3}`: the candidate hashes on one agent's bytes (v1 and v2
//!   use BLAKE3, v3 XXH3-128);
//! - `env_step`: the synthetic env's own step (rewrites every array): the baseline;
//! - `trace/all_changed/{cache,no_cache}`: tracing a step where every array changed;
//! - `trace/one_key_changed/{cache,no_cache}`: only one key per agent changed (the revision
//!   cache skips the other two);
//! - `adj_40000B/*`: what a chunk cache for the range's 40 KB `adj_matrix` would cost: hashing
//!   it whole (`whole`), comparing it with the previous copy (`memcmp`), and hashing it as ten
//!   4 KiB BLAKE3 subtrees merged into the same root (`4KiB_subtrees`, `blake3::hazmat`), of
//!   which a chunk cache would rehash only the changed ones (43% of them on the range), and
//!   XXH3-128 of it (`xxh3`, what v3 does when it changed).
//!
//! Run: `cargo bench -p lockstep --bench trace` (thread CPU time; `LOCKSTEP_BENCH_WALL=1` for
//! wall time).

use std::collections::BTreeMap;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{black_box, Criterion};
use lockstep::env::{AgentStep, Array, ArrayData, DType, Transition};
use lockstep::trace::{CacheMode, Tracer};
use lockstep_canon::{Map, Number, Value};

const AGENTS: [&str; 4] = ["blue_0", "blue_1", "red_0", "red_1"];

fn transition() -> Transition {
    let mut t = Transition::default();
    for name in AGENTS {
        let mut obs = BTreeMap::new();
        obs.insert("adj".to_string(), Array::zeros(DType::U8, &[64, 64]));
        obs.insert("obs".to_string(), Array::zeros(DType::F32, &[1024]));
        obs.insert("siem".to_string(), Array::zeros(DType::F32, &[16, 64]));
        let mut info = Map::new();
        info.insert("alerts".into(), Value::Number(Number::Int(3)));
        info.insert("phase".into(), Value::String("recon".into()));
        info.insert("score".into(), Value::Number(Number::Float(0.25)));
        t.agents.insert(
            name.to_string(),
            AgentStep {
                obs,
                reward: 0.0,
                terminated: false,
                truncated: false,
                info: Value::Object(info),
            },
        );
    }
    // Distinct contents per agent, so that no agent's array equals another's (the tracer would
    // reuse the digest of an equal array).
    step(&mut t, 1, &["adj", "obs", "siem"]);
    t
}

/// Rewrites the arrays named in `keys` (all elements, like an env that recomputes them).
fn step(t: &mut Transition, n: u32, keys: &[&str]) {
    let mut x = n.wrapping_mul(2_654_435_761);
    for a in t.agents.values_mut() {
        for key in keys {
            match a.obs.get_mut(*key).map(Array::data_mut) {
                Some(ArrayData::F32(v)) => v.iter_mut().for_each(|e| {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    *e = (x >> 8) as f32;
                }),
                Some(ArrayData::U8(v)) => v.iter_mut().for_each(|e| {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    *e = (x >> 24) as u8;
                }),
                _ => {}
            }
        }
        a.reward = f64::from(n % 7) * 0.5;
    }
    t.logs = vec![
        format!("2026-01-01T00:00:{:02}.000Z ids alert host=db-01", n % 60),
        format!(
            "2026-01-01T00:00:{:02}.500Z fw deny port={}",
            n % 60,
            n % 1024
        ),
    ];
}

/// CPU time of the benchmarking thread (`CLOCK_THREAD_CPUTIME_ID`), so that figures taken on a
/// shared, loaded machine count only the time this thread actually ran; set
/// `LOCKSTEP_BENCH_WALL=1` to measure wall time instead.
struct ThreadCpu;

static WALL: WallTime = WallTime;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}

fn bench<M: Measurement + 'static>(c: &mut Criterion<M>) {
    let all = ["adj", "obs", "siem"];
    let one = ["obs"];
    // The candidate hashes on one agent's worth of bytes (v1 and v2 use BLAKE3, v3 XXH3-128).
    let data = vec![7u8; 12 * 1024];
    c.bench_function("hash_12KiB/sha256", |b| {
        use sha2::Digest as _;
        b.iter(|| black_box(sha2::Sha256::digest(black_box(&data))))
    });
    c.bench_function("hash_12KiB/blake3", |b| {
        b.iter(|| black_box(blake3::hash(black_box(&data))))
    });
    c.bench_function("hash_12KiB/xxh3", |b| {
        b.iter(|| black_box(twox_hash::XxHash3_128::oneshot(black_box(&data))))
    });
    let adj: Vec<u8> = (0..40_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let copy = adj.clone();
    c.bench_function("adj_40000B/whole", |b| {
        b.iter(|| black_box(blake3::hash(black_box(&adj))))
    });
    c.bench_function("adj_40000B/xxh3", |b| {
        b.iter(|| black_box(twox_hash::XxHash3_128::oneshot(black_box(&adj))))
    });
    c.bench_function("adj_40000B/memcmp", |b| {
        b.iter(|| black_box(black_box(&adj[..]) == black_box(&copy[..])))
    });
    assert_eq!(subtrees(&adj, 4096), blake3::hash(&adj));
    c.bench_function("adj_40000B/4KiB_subtrees", |b| {
        b.iter(|| black_box(subtrees(black_box(&adj), 4096)))
    });
    c.bench_function("env_step", |b| {
        let mut t = transition();
        let mut n = 0;
        b.iter(|| {
            n += 1;
            step(&mut t, n, &all);
            black_box(&t);
        })
    });
    for (group, keys) in [("all_changed", &all[..]), ("one_key_changed", &one[..])] {
        for (label, mode) in [("cache", CacheMode::On), ("no_cache", CacheMode::Off)] {
            c.bench_function(&format!("trace/{group}/{label}"), |b| {
                let mut t = transition();
                let mut tracer = Tracer::new(mode);
                let mut n = 0;
                // Only the arrays' revisions move here: the element rewrite is the env's cost,
                // measured by `env_step`.
                b.iter(|| {
                    n += 1;
                    for a in t.agents.values_mut() {
                        for key in keys {
                            if let Some(arr) = a.obs.get_mut(*key) {
                                arr.data_mut();
                            }
                        }
                        a.reward = f64::from(n % 7) * 0.5;
                    }
                    if tracer.steps().len() >= 1000 {
                        tracer.clear();
                    }
                    black_box(tracer.record(&t).expect("canonical info").digest);
                })
            });
        }
    }
}

/// BLAKE3 of `bytes` computed as fixed `block`-byte subtrees (a power of two of chunks) merged
/// up the BLAKE3 tree: the same root as `blake3::hash`, and what an incremental cache would do.
fn subtrees(bytes: &[u8], block: usize) -> blake3::Hash {
    use blake3::hazmat::{merge_subtrees_non_root, merge_subtrees_root, HasherExt, Mode};
    let cvs: Vec<[u8; 32]> = bytes
        .chunks(block)
        .enumerate()
        .map(|(i, b)| {
            blake3::Hasher::new()
                .set_input_offset((i * block) as u64)
                .update(b)
                .finalize_non_root()
        })
        .collect();
    // BLAKE3's left subtree is the largest power of two of blocks strictly below the count.
    fn left(n: usize) -> usize {
        1 << (usize::BITS - 1 - (n - 1).leading_zeros())
    }
    fn merge(cvs: &[[u8; 32]]) -> [u8; 32] {
        if cvs.len() == 1 {
            return cvs[0];
        }
        let l = left(cvs.len());
        merge_subtrees_non_root(&merge(&cvs[..l]), &merge(&cvs[l..]), Mode::Hash)
    }
    let l = left(cvs.len());
    merge_subtrees_root(&merge(&cvs[..l]), &merge(&cvs[l..]), Mode::Hash)
}

fn config<M: Measurement>(c: Criterion<M>) -> Criterion<M> {
    c.warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
}

fn main() {
    if std::env::var_os("LOCKSTEP_BENCH_WALL").is_some() {
        let mut c = config(Criterion::default()).configure_from_args();
        bench(&mut c);
        c.final_summary();
    } else {
        let mut c = config(Criterion::default().with_measurement(ThreadCpu)).configure_from_args();
        bench(&mut c);
        c.final_summary();
    }
}
