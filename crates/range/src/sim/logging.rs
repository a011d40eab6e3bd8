//! SIEM wiring: writing log lines, releasing them after the log latency into the rolling
//! buffer, and running the correlator on what becomes visible.

use std::cell::RefCell;
use std::sync::Arc;

use crate::params::Params;
use crate::siem::{self, LineCtx, LogLine};

use super::blue::detect;
use super::state::{State, BLUE_SUBNETS};

thread_local! {
    /// The text and features of the line being rendered, reused for every line this thread
    /// renders (their bytes are copied into the line's `Arc<str>` and `Features`); nothing of
    /// them outlives a line.
    static LINE: RefCell<(String, Vec<u8>)> =
        RefCell::new((String::with_capacity(512), Vec::with_capacity(64)));
}

/// Writes a SIEM line (visible after the log latency).
#[allow(clippy::too_many_arguments)]
pub(super) fn emit(
    state: &mut State,
    params: &Params,
    host: usize,
    source: u8,
    peer: u32,
    flavor: &siem::Flavor,
    benign_image: Option<&'static str>,
    success: bool,
) {
    let ctx = LineCtx {
        unix: state.siem.start_unix + (state.tick * params.tick_seconds) as i64,
        record: state.siem.next_record,
        computer: state.hosts[host].addr,
        peer,
        flavor,
        benign_image,
        success,
    };
    state.siem.next_record += 1;
    let rng = &mut state.rng.siem;
    let (text, features) = LINE.with_borrow_mut(|(text, features)| {
        siem::render_line_reusing(&ctx, rng, text, features);
        (
            Arc::<str>::from(text.as_str()),
            siem::Features::from_slice(features),
        )
    });
    state.siem.pending.push_back(LogLine {
        visible_at: state.tick + params.log_latency,
        host: host as u16,
        subnet: state.hosts[host].subnet,
        source,
        text,
        features,
    });
}

/// Moves lines whose time has come into the buffer, runs the correlator on them, and records
/// them as new logs of the step.
pub(super) fn release_logs(state: &mut State, params: &Params) {
    while state
        .siem
        .pending
        .front()
        .is_some_and(|l| l.visible_at <= state.tick)
    {
        let line = state.siem.pending.pop_front().expect("front exists");
        if line.source != 0 {
            for (b, subs) in BLUE_SUBNETS.iter().enumerate() {
                if subs & (1 << line.subnet) != 0 {
                    state.metrics.seen_techniques[b] |= 1 << (line.source - 1);
                }
            }
        }
        let host = line.host as usize;
        let incident = siem::stage_match(state.hosts[host].corr_stage, &line.text);
        push_buffer(state, params, line);
        if let Some(keyword) = incident {
            let h = &mut state.hosts[host];
            h.corr_stage += 1;
            let text: Arc<str> = siem::incident_text(
                state.siem.start_unix + (state.tick * params.tick_seconds) as i64,
                h.corr_stage,
                h.addr,
                keyword,
            )
            .into();
            let features = siem::features(&text).into();
            let subnet = h.subnet;
            detect(state, host);
            push_buffer(
                state,
                params,
                LogLine {
                    visible_at: state.tick,
                    host: host as u16,
                    subnet,
                    source: 0,
                    text,
                    features,
                },
            );
        }
    }
}

pub(super) fn push_buffer(state: &mut State, params: &Params, line: LogLine) {
    if state.siem.buffer.len() >= params.log_buffer {
        if let Some(old) = state.siem.buffer.pop_front() {
            state.last.evicted_subnets |= 1 << old.subnet;
            state.last.new_logs.evicted(old, state.siem.buffer.len());
        }
    }
    state.siem.buffer.push_back(line);
    state.last.new_logs.pushed();
}

#[cfg(test)]
mod tests {
    use crate::params::SCENARIOS;
    use crate::sampler::ActionSampler;
    use crate::sim::{reset, step, State};
    use crate::Params;

    /// The step's new logs, referred to in the buffer, are the lines released whatever the
    /// buffer's size: with a buffer of 1..3 lines (lines of a step leave it within the step and
    /// are kept aside) they equal those of a buffer too large to lose one; a state serialised
    /// and read back (every line then kept aside) equals it and serialises to the same text.
    #[test]
    fn new_logs_survive_a_small_buffer() {
        let (mut spilled, mut checked) = (0, 0);
        for scenario in SCENARIOS {
            let mut big = Params::new(scenario);
            big.log_buffer = 4096;
            for seed in 0..3 {
                for small in [1, 2, 3] {
                    let mut params = Params::new(scenario);
                    params.log_buffer = small;
                    params.embedding_lines = params.embedding_lines.min(small);
                    let mut a = reset(seed, &big);
                    let mut b = reset(seed, &params);
                    let mut sampler = ActionSampler::new(seed);
                    let mut mask = vec![0i8; big.mask_len()];
                    for n in 0..300 {
                        let want: Vec<&str> = a.new_logs().collect();
                        let got: Vec<&str> = b.new_logs().collect();
                        assert_eq!(
                            got, want,
                            "{scenario:?} seed {seed} buffer {small} step {n}"
                        );
                        assert_eq!(b.last.new_logs.len(), want.len());
                        spilled += usize::from(want.len() > small);
                        if n % 7 == 0 {
                            let json = serde_json::to_string(&b).unwrap();
                            let back: State = serde_json::from_str(&json).unwrap();
                            assert_eq!(back, b);
                            assert_eq!(serde_json::to_string(&back).unwrap(), json);
                            assert!(back.new_logs().eq(b.new_logs()));
                            checked += 1;
                        }
                        if a.done() {
                            break;
                        }
                        let joint = sampler.joint(&a, &big, &mut mask);
                        step(&mut a, &joint, &big);
                        step(&mut b, &joint, &params);
                    }
                }
            }
        }
        assert!(
            spilled > 50,
            "lines left the buffer within their step only {spilled} times"
        );
        assert!(checked > 50);
    }
}
