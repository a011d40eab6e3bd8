//! The packet synthesiser behind the `pcap` observation.

use crate::params::Params;

use super::events::Events;
use super::state::{State, PCAP_FEATURES, PCAP_PACKETS};

/// The packet synthesiser: this step's red traffic first, then benign packets, from the
/// `pcap` stream.
pub(super) fn synth_pcap(state: &mut State, params: &Params, ev: &Events) {
    let active: Vec<usize> = crate::topology::slots(state.hosts.active()).collect();
    let max = params.max_hosts as f32;
    let rng = &mut state.rng.pcap;
    for p in 0..PCAP_PACKETS {
        let row = &mut state.pcap[p * PCAP_FEATURES..(p + 1) * PCAP_FEATURES];
        row.fill(0.0);
        let (src, dst, port, red) = match ev.packets.get(p) {
            Some(&(s, d, port)) => (s as usize, d as usize, port, true),
            None => {
                let s = active.get(rng.below(active.len() as u64) as usize).copied();
                let d = active.get(rng.below(active.len() as u64) as usize).copied();
                let port = [443u16, 80, 53, 445, 88][rng.below(5) as usize];
                (s.unwrap_or(0), d.unwrap_or(0), port, false)
            }
        };
        row[0] = src as f32 / max;
        row[1] = dst as f32 / max;
        let ss = state.hosts[src].subnet.min(4) as usize;
        let ds = state.hosts[dst].subnet.min(4) as usize;
        row[2 + ss] = 1.0;
        row[7 + ds] = 1.0;
        row[12] = f32::from(port) / 65535.0;
        row[13] = if port == 53 { 0.0 } else { 1.0 };
        row[14] = rng.range(60, 1500) as f32 / 1500.0;
        let flags = rng.below(32) as u8;
        row[15] = f32::from(flags & 1);
        row[16] = f32::from((flags >> 1) & 1);
        row[17] = f32::from((flags >> 2) & 1);
        row[18] = rng.f64() as f32;
        row[19] = if red { 1.0 } else { 0.0 };
    }
}
