//! What tracing costs on the real range (`range:ransomware`, 4 agents, ~168 KB of observations
//! per step), against the range's own step:
//!
//! - `range_trace/step`: the env's step alone (seeded random valid actions, reset when done);
//! - `range_trace/step+trace/cache`: the same step, then [`Tracer::record`] of the transition
//!   with the revision cache (what `lockstep trace` does);
//! - `range_trace/step+trace/no_cache`: the same with [`CacheMode::Off`] (everything hashed).
//!
//! Tracing's cost per step is `step+trace - step`; the budget is 5% of `step`.
//!
//! Run: `cargo bench -p lockstep-range --bench trace_overhead`; with `LOCKSTEP_BENCH_PAIRED=1`
//! it first prints an interleaved measurement (see [`paired`]), the one to trust on a busy
//! machine. Times are the benchmarking
//! thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so that figures taken on a shared,
//! loaded machine count only the time this thread ran; `LOCKSTEP_BENCH_WALL=1` (or a system
//! without that file) measures wall time. Before the benchmarks it prints how often each key
//! changes on the measured episodes (revision moved), to stderr.

use std::collections::BTreeMap;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{black_box, Criterion, Throughput};
use lockstep::env::ArrayData;
use lockstep::trace::{CacheMode, Tracer};
use lockstep_range::{ActionSampler, JointAction, Params, RangeEnv, Scenario, AGENTS};

/// The range driven like `benches/step.rs`: seeded valid actions, a new seed on each reset.
struct Driver {
    env: RangeEnv,
    params: Params,
    sampler: ActionSampler,
    masks: Vec<Vec<i8>>,
    seed: u64,
}

impl Driver {
    fn new() -> Driver {
        let params = Params::new(Scenario::Ransomware);
        let mut env = RangeEnv::new(params.clone()).expect("valid params");
        env.reset_with(0, params.clone()).expect("reset");
        Driver {
            env,
            params,
            sampler: ActionSampler::new(0),
            masks: vec![Vec::new(); AGENTS.len()],
            seed: 0,
        }
    }

    /// One step; returns true when the env was reset after it (the episode ended).
    fn step(&mut self) -> bool {
        let mut joint = JointAction::default();
        for (a, m) in self.masks.iter_mut().enumerate() {
            if let ArrayData::I8(v) =
                self.env.transition().agents[AGENTS[a]].obs["action_mask"].data()
            {
                m.clone_from(v);
            }
            joint.0[a] = self.sampler.sample(a, m);
        }
        self.env.step_joint(&joint).expect("valid step");
        if self.env.core().done() {
            self.seed += 1;
            self.env
                .reset_with(self.seed, self.params.clone())
                .expect("reset");
            return true;
        }
        false
    }
}

/// Prints, over `steps` steps: per key, the share of steps in which its revision moved (for
/// any agent) and the mean number of agents whose array moved; for `adj_matrix`, the share of
/// its 4 KiB blocks whose bytes differ when it moved; the share of infos that changed.
fn change_rates(steps: usize) {
    let mut d = Driver::new();
    type Seen = BTreeMap<(String, String), (u64, Vec<u8>)>;
    let snapshot = |d: &Driver| -> Seen {
        let mut m = BTreeMap::new();
        for (agent, s) in &d.env.transition().agents {
            for (key, a) in &s.obs {
                let bytes = if key == "adj_matrix" {
                    a.to_le_bytes()
                } else {
                    Vec::new()
                };
                m.insert((agent.clone(), key.clone()), (a.revision(), bytes));
            }
        }
        m
    };
    let mut any: BTreeMap<String, usize> = BTreeMap::new();
    let mut agents: BTreeMap<String, usize> = BTreeMap::new();
    let (mut blocks, mut blocks_changed) = (0usize, 0usize);
    let mut infos = 0usize;
    let mut prev = snapshot(&d);
    let info = |d: &Driver| -> Vec<_> {
        d.env
            .transition()
            .agents
            .values()
            .map(|a| a.info.clone())
            .collect()
    };
    let mut prev_info = info(&d);
    for _ in 0..steps {
        if d.step() {
            prev = snapshot(&d);
            prev_info = info(&d);
            continue;
        }
        let now = snapshot(&d);
        let mut keys = std::collections::BTreeSet::new();
        for (k, (r, bytes)) in &now {
            let Some((pr, pbytes)) = prev.get(k) else {
                continue;
            };
            if pr == r {
                continue;
            }
            keys.insert(k.1.clone());
            *agents.entry(k.1.clone()).or_default() += 1;
            if !bytes.is_empty() {
                for (a, b) in bytes.chunks(4096).zip(pbytes.chunks(4096)) {
                    blocks += 1;
                    blocks_changed += usize::from(a != b);
                }
            }
        }
        for k in keys {
            *any.entry(k).or_default() += 1;
        }
        let i = info(&d);
        infos += i.iter().zip(&prev_info).filter(|(a, b)| a != b).count();
        prev = now;
        prev_info = i;
    }
    for (k, n) in &any {
        eprintln!(
            "{k}: moved in {:.1}% of steps, {:.2} agents per step",
            100.0 * *n as f64 / steps as f64,
            agents[k] as f64 / steps as f64
        );
    }
    eprintln!(
        "adj_matrix: {:.1}% of 4 KiB blocks changed when it moved",
        100.0 * blocks_changed as f64 / blocks.max(1) as f64
    );
    eprintln!(
        "infos: {:.1}% of agent-steps differ from the agent's previous info",
        100.0 * infos as f64 / (steps * AGENTS.len()) as f64
    );
}

/// CPU time of the calling thread (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, declared here
/// because this crate does not depend on `libc`); `None` where that clock is not available.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu_ns() -> Option<u64> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec (two 64-bit fields on 64-bit Linux) through
    // a valid pointer.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu_ns() -> Option<u64> {
    None
}

struct ThreadCpu;

static WALL: WallTime = WallTime;

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns().unwrap_or(0)
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().unwrap_or(0).saturating_sub(start)
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
    let mut g = c.benchmark_group("range_trace");
    g.throughput(Throughput::Elements(1));
    g.bench_function("step", |b| {
        let mut d = Driver::new();
        b.iter(|| black_box(d.step()))
    });
    for (label, mode) in [("cache", CacheMode::On), ("no_cache", CacheMode::Off)] {
        g.bench_function(format!("step+trace/{label}"), |b| {
            let mut d = Driver::new();
            let mut tracer = Tracer::new(mode);
            tracer.record(d.env.transition()).expect("canonical info");
            b.iter(|| {
                let reset = d.step();
                if reset || tracer.steps().len() >= 1000 {
                    // A new episode (or a long one cut) starts a new trace; the cache stays.
                    tracer.clear();
                }
                black_box(
                    tracer
                        .record(d.env.transition())
                        .expect("canonical info")
                        .digest,
                )
            })
        });
    }
    g.finish();
}

/// Interleaved measurement, robust to a shared machine: two drivers with the same seeds step
/// the same episodes, one alone and one traced, in alternating blocks of `block` steps; each
/// block's thread CPU time is taken. Prints the median per-step time of each and the median of
/// the per-round overhead `(traced - alone) / alone`.
fn paired(mode: CacheMode, label: &str, rounds: usize, block: usize) {
    let Some(_) = thread_cpu_ns() else { return };
    let now = || thread_cpu_ns().unwrap_or(0);
    let mut alone = Driver::new();
    let mut traced = Driver::new();
    let mut tracer = Tracer::new(mode);
    tracer
        .record(traced.env.transition())
        .expect("canonical info");
    let (mut a, mut t, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds + 2 {
        let start = now();
        for _ in 0..block {
            black_box(alone.step());
        }
        let mid = now();
        for _ in 0..block {
            if traced.step() || tracer.steps().len() >= 1000 {
                tracer.clear();
            }
            black_box(
                tracer
                    .record(traced.env.transition())
                    .expect("canonical info")
                    .digest,
            );
        }
        let end = now();
        if round < 2 {
            continue; // warm-up
        }
        let (ta, tt) = ((mid - start) as f64, (end - mid) as f64);
        a.push(ta / block as f64 / 1000.0);
        t.push(tt / block as f64 / 1000.0);
        ratio.push((tt - ta) / ta);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (q1, q3) = {
        ratio.sort_by(f64::total_cmp);
        (ratio[ratio.len() / 4], ratio[3 * ratio.len() / 4])
    };
    let (ma, mt, mr) = (median(&mut a), median(&mut t), median(&mut ratio));
    eprintln!(
        "paired/{label}: step {ma:.2} µs ({:.0} steps/s), step+trace {mt:.2} µs ({:.0} steps/s), \
         trace {:.2} µs = {:.1}% of the step (quartiles {:.1}%..{:.1}%, {rounds} rounds of {block})",
        1e6 / ma,
        1e6 / mt,
        mt - ma,
        100.0 * mr,
        100.0 * q1,
        100.0 * q3
    );
}

fn config<M: Measurement>(c: Criterion<M>) -> Criterion<M> {
    c.warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
}

fn main() {
    change_rates(2000);
    if std::env::var_os("LOCKSTEP_BENCH_PAIRED").is_some() {
        paired(CacheMode::On, "cache", 60, 500);
        paired(CacheMode::Off, "no_cache", 20, 500);
    }
    if std::env::var_os("LOCKSTEP_BENCH_WALL").is_some() || thread_cpu_ns().is_none() {
        let mut c = config(Criterion::default()).configure_from_args();
        bench(&mut c);
        c.final_summary();
    } else {
        let mut c = config(Criterion::default().with_measurement(ThreadCpu)).configure_from_args();
        bench(&mut c);
        c.final_summary();
    }
}
