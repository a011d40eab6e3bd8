//! A named stream of the seed tree that counts the words it hands out.
//!
//! [`lockstep::seed::Stream`] wraps ChaCha8 and keeps its position private. The range's `State`
//! must be plain, serialisable data that records everything an episode depends on, including
//! where each random stream stands. So every draw goes through [`Rng`], which takes 64-bit
//! words from the stream one at a time and counts them. Serialised, an `Rng` is
//! `{label, seed, words}`; deserialised, the stream is derived again and `words` words are
//! skipped, which puts it at exactly the same position.
//!
//! The sampling helpers are the algorithms of `lockstep::seed::Stream` (documented there),
//! rebuilt on top of `next_u64` so that the count is exact; a unit test checks that both give
//! the same values for the same stream.

use lockstep::seed::{SeedTree, Stream};
use serde::{Deserialize, Serialize};

/// A counted stream. Equality compares label, seed and position.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "RngRepr", into = "RngRepr")]
pub struct Rng {
    label: String,
    seed: u64,
    words: u64,
    stream: Stream,
}

impl PartialEq for Rng {
    fn eq(&self, other: &Rng) -> bool {
        self.label == other.label && self.seed == other.seed && self.words == other.words
    }
}

/// The serialised form: where the stream comes from and how far it has gone.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RngRepr {
    label: String,
    seed: u64,
    words: u64,
}

impl From<RngRepr> for Rng {
    fn from(r: RngRepr) -> Rng {
        let mut rng = Rng::new(r.seed, &r.label);
        for _ in 0..r.words {
            rng.next_u64();
        }
        rng
    }
}

impl From<Rng> for RngRepr {
    fn from(r: Rng) -> RngRepr {
        RngRepr {
            label: r.label,
            seed: r.seed,
            words: r.words,
        }
    }
}

impl Rng {
    /// The stream `label` of episode seed `seed`.
    pub fn new(seed: u64, label: &str) -> Rng {
        Rng {
            label: label.to_string(),
            seed,
            words: 0,
            stream: SeedTree::new(seed).stream(label),
        }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// 64-bit words drawn so far.
    pub fn words(&self) -> u64 {
        self.words
    }

    pub fn next_u64(&mut self) -> u64 {
        self.words += 1;
        self.stream.next_u64()
    }

    /// Uniform in `0..n` (Lemire's widening multiply with rejection; 0 when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// Uniform in `lo..=hi` for small spans (`lo` when `hi <= lo`).
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(u64::from(hi - lo) + 1) as u32
    }

    /// Uniform in `[0, 1)` from the top 53 bits of one word.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }

    /// True with probability `p`; always one word.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// An index in `0..len` (`None` when empty).
    pub fn index(&mut self, len: usize) -> Option<usize> {
        (len > 0).then(|| self.below(len as u64) as usize)
    }

    /// Index with probability proportional to `weights[i]`; non-positive weights never win.
    pub fn weighted_index(&mut self, weights: &[f64]) -> Option<usize> {
        let clean = |w: f64| if w > 0.0 { w } else { 0.0 };
        let total: f64 = weights.iter().map(|&w| clean(w)).sum();
        if total <= 0.0 || !total.is_finite() {
            return None;
        }
        let r = self.f64() * total;
        let mut acc = 0.0;
        let mut last = None;
        for (i, &w) in weights.iter().enumerate() {
            let w = clean(w);
            if w > 0.0 {
                acc += w;
                last = Some(i);
                if r < acc {
                    return Some(i);
                }
            }
        }
        last
    }

    /// Fisher-Yates from the back.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// Box-Muller, cosine branch, through `libm`.
    pub fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = 1.0 - self.f64();
        let u2 = self.f64();
        let radius = libm::sqrt(-2.0 * libm::log(u1));
        let z = radius * libm::cos(2.0 * std::f64::consts::PI * u2);
        mean + sd * z
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_values_as_the_seed_stream() {
        let mut ours = Rng::new(42, "golden");
        let mut theirs = SeedTree::new(42).stream("golden");
        for _ in 0..50 {
            assert_eq!(ours.next_u64(), theirs.next_u64());
            assert_eq!(ours.below(10), theirs.below(10));
            assert_eq!(ours.f64().to_bits(), theirs.f64().to_bits());
            assert_eq!(ours.bernoulli(0.3), theirs.bernoulli(0.3));
            assert_eq!(
                ours.weighted_index(&[1.0, 0.0, 2.0]),
                theirs.weighted_index(&[1.0, 0.0, 2.0])
            );
            assert_eq!(
                ours.normal(1.0, 2.0).to_bits(),
                theirs.normal(1.0, 2.0).to_bits()
            );
            let (mut a, mut b) = ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]);
            ours.shuffle(&mut a);
            theirs.shuffle(&mut b);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn serde_round_trip_restores_the_position() {
        let mut a = Rng::new(7, "siem");
        for _ in 0..37 {
            a.normal(0.0, 1.0);
        }
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"{"label":"siem","seed":7,"words":74}"#);
        let mut b: Rng = serde_json::from_str(&json).unwrap();
        assert_eq!(a, b);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
