//! A named stream of the seed tree that knows where it comes from.
//!
//! The range's `State` must be plain, serialisable data holding everything an episode depends
//! on, including where each random stream stands. An [`Rng`] is a [`lockstep::seed::Stream`]
//! plus its label and episode seed; serialised it is `{label, seed, position}` (32-bit words
//! drawn), and deserialised the stream is derived again and seeked to that position in
//! constant time. Every sampling helper is the seed tree's own (through `Deref`), so the range
//! has exactly one implementation of each algorithm.

use std::ops::{Deref, DerefMut};

use lockstep::seed::{SeedTree, Stream};
use serde::{Deserialize, Serialize};

/// A stream with its origin. Equality compares label, seed and position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RngRepr", into = "RngRepr")]
pub struct Rng {
    label: String,
    seed: u64,
    stream: Stream,
}

/// The serialised form: where the stream comes from and how far it has gone.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RngRepr {
    label: String,
    seed: u64,
    position: u64,
}

impl From<RngRepr> for Rng {
    fn from(r: RngRepr) -> Rng {
        Rng {
            stream: SeedTree::new(r.seed).stream_at(&r.label, u128::from(r.position)),
            label: r.label,
            seed: r.seed,
        }
    }
}

impl From<Rng> for RngRepr {
    fn from(r: Rng) -> RngRepr {
        RngRepr {
            // 2^64 words is beyond any episode (it would take centuries to draw).
            position: u64::try_from(r.stream.position()).unwrap_or(u64::MAX),
            label: r.label,
            seed: r.seed,
        }
    }
}

impl Rng {
    /// The stream `label` of episode seed `seed`.
    pub fn new(seed: u64, label: &str) -> Rng {
        Rng {
            label: label.to_string(),
            seed,
            stream: SeedTree::new(seed).stream(label),
        }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Uniform in `lo..=hi` for small spans (`lo` when `hi <= lo`): `Stream::range_i64`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        self.stream.range_i64(i64::from(lo), i64::from(hi)) as u32
    }
}

impl Deref for Rng {
    type Target = Stream;
    fn deref(&self) -> &Stream {
        &self.stream
    }
}

impl DerefMut for Rng {
    fn deref_mut(&mut self) -> &mut Stream {
        &mut self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trip_restores_the_position() {
        let mut a = Rng::new(7, "siem");
        for _ in 0..37 {
            a.normal(0.0, 1.0);
        }
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"{"label":"siem","seed":7,"position":148}"#);
        let mut b: Rng = serde_json::from_str(&json).unwrap();
        assert_eq!(a, b);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn range_is_inclusive() {
        let mut r = Rng::new(1, "r");
        for _ in 0..200 {
            assert!((3..=5).contains(&r.range(3, 5)));
        }
        assert_eq!(r.range(4, 4), 4);
    }
}
