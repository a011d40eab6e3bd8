//! SIEM wiring: writing log lines, releasing them after the log latency into the rolling
//! buffer, and running the correlator on what becomes visible.

use std::cell::RefCell;
use std::sync::Arc;

use crate::params::Params;
use crate::siem::{self, LineCtx, LogLine};

use super::blue::detect;
use super::state::{State, BLUE_SUBNETS};

thread_local! {
    /// The text of the line being rendered, reused for every line this thread renders (its
    /// bytes are copied into the line's `Arc<str>`); nothing of it outlives a line.
    static TEXT: RefCell<String> = RefCell::new(String::with_capacity(512));
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
    let (text, features) = TEXT.with_borrow_mut(|buf| {
        let features = siem::render_line_into(&ctx, rng, buf);
        (Arc::<str>::from(buf.as_str()), features)
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
        state.last.new_logs.push(line.text.clone());
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
            let features = siem::features(&text);
            let subnet = h.subnet;
            detect(state, host);
            state.last.new_logs.push(text.clone());
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
        }
    }
    state.siem.buffer.push_back(line);
}
