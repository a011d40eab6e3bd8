//! An agent's last info kept as its canonical text, so that the next step writes only the
//! members whose values changed.
//!
//! An env's info is a small object (the range's has about 26 members) whose members mostly
//! keep their values from one step to the next, while a few (a tick, a score) change every
//! step. Writing the whole object through the canonical writer each step spends most of a
//! traced step on numbers nobody changed. The cache keeps the last text in one piece with
//! each value's place in it: a step compares each member with the last one, writes only the
//! changed values, each over its old text (the rest of the text moves when the length
//! differs), and hands the text over in one copy. The bytes are exactly the canonical JSON of the info (`{` members joined by `,` `}`, profile
//! python), as the writer makes them in one go: the cache changes the cost, never a digest
//! (tested against the writer: `trace::tests::info_cache_matches_the_writer`, and this
//! file's tests).

use std::io;

use lockstep_canon::{Map, Value};

use super::v2::InfoBytes;
use super::{append, value_bytes};

/// One member of the last info: its key and value, and where its value's text is in the
/// last text (`value_at..end`).
#[derive(Debug, Clone)]
struct Member {
    key: String,
    value: Value,
    value_at: usize,
    end: usize,
}

/// The canonical text of one agent's last info, and its members' places in it.
#[derive(Debug, Clone, Default)]
pub(super) struct InfoCache {
    members: Vec<Member>,
    /// The last info's text; empty when there is none to update (the first step, or after
    /// an info the cache could not write).
    text: Vec<u8>,
    /// A changed member's new value text, before it replaces the old one.
    scratch: Vec<u8>,
    /// What `text` holds: canonical JSON, or format v4's value layout.
    bytes: Option<InfoBytes>,
}

impl InfoCache {
    /// Writes `'I' || canonical JSON of info` into `buf` and returns the digest (format v1's
    /// info node).
    pub(super) fn digest(&mut self, map: &Map, buf: &mut Vec<u8>) -> io::Result<super::Digest> {
        buf.clear();
        buf.push(b'I');
        self.append_text(map, buf)?;
        Ok(super::Digest(*blake3::hash(buf).as_bytes()))
    }

    /// Appends the canonical JSON of the info `map` (profile python) to `out`, reusing the
    /// text of every member equal (bitwise) to the same member of the last info. Formats v2
    /// and v3 write infos straight into their step buffer with this.
    pub(super) fn append_text(&mut self, map: &Map, out: &mut Vec<u8>) -> io::Result<()> {
        self.append(map, InfoBytes::Text, out)
    }

    /// Appends the info `map` as `bytes` says (its canonical JSON, or format v4's value
    /// layout), reusing the bytes of every member equal (bitwise) to the same member of the
    /// last info.
    pub(super) fn append(
        &mut self,
        map: &Map,
        bytes: InfoBytes,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        if self.bytes != Some(bytes) {
            self.text.clear();
            self.bytes = Some(bytes);
        }
        let same_keys = !self.text.is_empty()
            && self.members.len() == map.len()
            && self
                .members
                .iter()
                .zip(map.keys())
                .all(|(m, k)| same_key(&m.key, k));
        let written = if same_keys {
            self.update(map, bytes)
        } else {
            self.rewrite(map, bytes)
        };
        if written.is_err() {
            // Start again from nothing next time; the whole writer is the authority: it
            // words the error (with its JSON Pointer) or, for an info too deep for members
            // to be written on their own, gives the text.
            self.members.clear();
            self.text.clear();
            let whole = Value::Object(map.clone());
            return match bytes {
                InfoBytes::Text => append(&whole, out),
                InfoBytes::Layout => value_bytes::append_value_bytes(&whole, out),
            };
        }
        out.extend_from_slice(&self.text);
        Ok(())
    }

    /// Brings the last text up to date with `map`, whose keys are the last info's: each
    /// changed value's text replaces the old one where it is, and the members after it move
    /// by the difference in length.
    fn update(&mut self, map: &Map, bytes: InfoBytes) -> io::Result<()> {
        let mut moved: isize = 0;
        for (m, value) in self.members.iter_mut().zip(map.values()) {
            m.value_at = m.value_at.wrapping_add_signed(moved);
            m.end = m.end.wrapping_add_signed(moved);
            if same_scalar(&m.value, value).unwrap_or_else(|| same_value(&m.value, value)) {
                continue;
            }
            self.scratch.clear();
            write_member_value(value, bytes, &mut self.scratch)?;
            let old = m.end - m.value_at;
            if self.scratch.len() == old {
                self.text[m.value_at..m.end].copy_from_slice(&self.scratch);
            } else {
                self.text
                    .splice(m.value_at..m.end, self.scratch.iter().copied());
                moved += self.scratch.len() as isize - old as isize;
                m.end = m.value_at + self.scratch.len();
            }
            m.value.clone_from(value);
        }
        Ok(())
    }

    /// Writes the text of `map` from nothing (the first info, or one whose keys changed).
    fn rewrite(&mut self, map: &Map, bytes: InfoBytes) -> io::Result<()> {
        self.text.clear();
        self.members.clear();
        match bytes {
            InfoBytes::Text => self.text.push(b'{'),
            InfoBytes::Layout => value_bytes::object_head(map.len(), &mut self.text),
        }
        for (i, (key, value)) in map.iter().enumerate() {
            match bytes {
                InfoBytes::Text => {
                    if i > 0 {
                        self.text.push(b',');
                    }
                    append(&Value::String(key.clone()), &mut self.text)?;
                    self.text.push(b':');
                }
                InfoBytes::Layout => value_bytes::name(key.as_bytes(), &mut self.text),
            }
            let value_at = self.text.len();
            write_member_value(value, bytes, &mut self.text)?;
            self.members.push(Member {
                key: key.clone(),
                value: value.clone(),
                value_at,
                end: self.text.len(),
            });
        }
        if bytes == InfoBytes::Text {
            self.text.push(b'}');
        }
        Ok(())
    }
}

/// Appends a member's value written on its own (its canonical text, or its value layout).
/// The writer refuses
/// values nested deeper than MAX_WRITE_DEPTH counting from the info; a member written alone
/// would start one level lower, so such a member is refused here, and its info goes through
/// the writer whole.
fn write_member_value(value: &Value, bytes: InfoBytes, out: &mut Vec<u8>) -> io::Result<()> {
    if too_deep_alone(value) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "nested deep"));
    }
    match bytes {
        InfoBytes::Text => append(value, out),
        InfoBytes::Layout => value_bytes::append_member_value(value, out),
    }
}

/// Bitwise equality of two JSON values: floats by their bits (`0.0` and `-0.0` differ, and
/// their canonical texts do too), integers and floats never equal (`1` is not `1.0`).
fn same_value(a: &Value, b: &Value) -> bool {
    use lockstep_canon::Number;
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(Number::Int(x)), Value::Number(Number::Int(y))) => x == y,
        (Value::Number(Number::BigInt(x)), Value::Number(Number::BigInt(y))) => x == y,
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (Value::String(x), Value::String(y)) => same_key(x, y),
        // A list of short strings (the range's ATT&CK ids) without a call per element.
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(x, y)| match (x, y) {
                    (Value::String(x), Value::String(y)) => same_key(x, y),
                    _ => same_value(x, y),
                })
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| same_key(kx, ky) && same_value(x, y))
        }
        _ => false,
    }
}

/// [`same_value`] of two numbers, booleans or nulls of the same kind without a call (most
/// members of an info are numbers that keep their value); `None` for anything else.
#[inline(always)]
fn same_scalar(a: &Value, b: &Value) -> Option<bool> {
    use lockstep_canon::Number;
    Some(match (a, b) {
        (Value::Number(Number::Int(x)), Value::Number(Number::Int(y))) => x == y,
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => return None,
    })
}

/// `a == b` for the short strings of an info (its keys, short string values), by at most four
/// overlapping word loads for up to 32 bytes instead of a `memcmp` call per member.
#[inline(always)]
fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let same_word = |at: usize| word(a, at) == word(b, at);
    match n {
        // Every byte of a string of 1 to 7 bytes is in its first four or its last four.
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => {
            let half = |s: &[u8], at: usize| {
                let mut w = [0u8; 4];
                w.copy_from_slice(&s[at..at + 4]);
                u32::from_ne_bytes(w)
            };
            half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4)
        }
        8..=16 => same_word(0) && same_word(n - 8),
        17..=32 => same_word(0) && same_word(8) && same_word(n - 16) && same_word(n - 8),
        _ => a == b,
    }
}

/// Whether the writer, which counts depth from the info, could refuse `v` as a member while
/// accepting it written alone: then the member is not written alone.
fn too_deep_alone(v: &Value) -> bool {
    matches!(v, Value::Array(_) | Value::Object(_)) && nests(v, lockstep_canon::MAX_WRITE_DEPTH - 1)
}

/// True when `v` nests arrays or objects at least `levels` deep (a scalar is 0 deep).
fn nests(v: &Value, levels: usize) -> bool {
    if levels == 0 {
        return true;
    }
    match v {
        Value::Array(items) => items.iter().any(|x| nests(x, levels - 1)),
        Value::Object(map) => map.values().any(|x| nests(x, levels - 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-wise comparison agrees with `==` for every length up to 40 and a difference
    /// at every byte.
    #[test]
    fn same_key_is_equality() {
        for n in 0..40usize {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(same_key(&a, &a.clone()), "len {n}");
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                let b = String::from_utf8(b).unwrap();
                assert!(!same_key(&a, &b), "len {n}, byte {at}");
            }
            let longer = format!("{a}x");
            assert!(!same_key(&a, &longer), "len {n}");
        }
    }

    /// A list of ids that changes in one id of the same length, grows, shrinks, swaps two,
    /// and holds a number among the strings: each step's text is the writer's.
    #[test]
    fn info_cache_follows_a_list_of_ids() {
        let ids = |list: &[&str]| {
            let items = list.iter().map(|s| Value::String(s.to_string())).collect();
            let mut m = Map::new();
            m.insert("attack_techniques".into(), Value::Array(items));
            m.insert("tick".into(), Value::Number(lockstep_canon::Number::Int(1)));
            m
        };
        let mut with_number = ids(&["T1021", "T1486"]);
        if let Some(Value::Array(items)) = with_number.get_mut("attack_techniques") {
            items.push(Value::Number(lockstep_canon::Number::Int(7)));
        }
        let steps = [
            ids(&["T1021"]),
            ids(&["T1486"]),
            ids(&["T1486", "T1021"]),
            ids(&["T1021", "T1486"]),
            ids(&["T1021", "T1190"]),
            ids(&["T1021", "T1190", "T1003.001"]),
            ids(&["T1021", "T1190", "T1003.002"]),
            with_number,
            ids(&["T1021", "T1486", "T1003.002"]),
            ids(&[]),
            ids(&["T1021"]),
        ];
        let mut cache = InfoCache::default();
        for (i, map) in steps.iter().enumerate() {
            let mut out = Vec::new();
            cache.append_text(map, &mut out).unwrap();
            let mut want = Vec::new();
            append(&Value::Object(map.clone()), &mut want).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(want).unwrap(),
                "{i}"
            );
        }
    }

    /// A value whose text may keep or change its length: small and large numbers, both
    /// zeros, strings (short, long, escaped), a list and an object.
    fn random_value(d: &mut crate::seed::Stream) -> Value {
        use lockstep_canon::Number;
        match d.below(9) {
            0 => Value::Number(Number::Int(d.below(12) as i64)),
            1 => Value::Number(Number::Int(d.next_u64() as i64)),
            2 => Value::Number(Number::Float(d.below(4) as f64 * 0.25)),
            3 => Value::Number(Number::Float(f64::from_bits(d.next_u64() >> 2))),
            4 => Value::Number(Number::Float(if d.below(2) == 0 { 0.0 } else { -0.0 })),
            5 => Value::Bool(d.below(2) == 0),
            6 => Value::String(
                [
                    "",
                    "x",
                    "T1021",
                    "\u{e9}\"q\"",
                    "a long string value, 40 bytes....",
                ][d.below(5) as usize]
                    .to_string(),
            ),
            7 => {
                let ids = ["T1021", "T1486", "T1003.001", "T1190"];
                let items = (0..d.below(4))
                    .map(|k| match d.below(3) {
                        0 => Value::Number(Number::Int(k as i64)),
                        pick => Value::String(ids[(k + pick) as usize % ids.len()].to_string()),
                    })
                    .collect();
                Value::Array(items)
            }
            _ => {
                let mut m = Map::new();
                m.insert("n".into(), Value::Number(Number::Int(d.below(3) as i64)));
                Value::Object(m)
            }
        }
    }

    /// Step after step of an info whose members change at random (a few values, sometimes a
    /// key added, removed or renamed, sometimes everything), the cache writes exactly what
    /// the writer writes, into a buffer that already holds other bytes.
    #[test]
    fn info_cache_follows_random_changes() {
        let keys = [
            "MTTC",
            "a",
            "agent_energy",
            "attack_techniques",
            "b\u{e9}",
            "delta_t",
            "k\"",
            "normalized_reward",
            "successful_exploits_in_total",
            "tick",
            "zz",
        ];
        let mut d = crate::seed::SeedTree::new(7).stream("test/infos");
        for episode in 0..50 {
            let mut cache = InfoCache::default();
            // One cache kept in format v4's layout, held to the layout written whole.
            let mut layout_cache = InfoCache::default();
            let mut map = Map::new();
            for k in keys.iter().take(2 + d.below(9) as usize) {
                map.insert((*k).to_string(), random_value(&mut d));
            }
            for step in 0..60 {
                let mut out = b"prefix".to_vec();
                cache.append_text(&map, &mut out).unwrap();
                let mut want = b"prefix".to_vec();
                append(&Value::Object(map.clone()), &mut want).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&out),
                    String::from_utf8_lossy(&want),
                    "episode {episode}, step {step}"
                );
                let mut out = b"prefix".to_vec();
                layout_cache
                    .append(&map, InfoBytes::Layout, &mut out)
                    .unwrap();
                let mut want = b"prefix".to_vec();
                value_bytes::append_value_bytes(&Value::Object(map.clone()), &mut want).unwrap();
                assert_eq!(out, want, "layout: episode {episode}, step {step}");
                match d.below(10) {
                    0 => {
                        let k = keys[d.below(keys.len() as u64) as usize];
                        map.insert(k.to_string(), random_value(&mut d));
                    }
                    1 if map.len() > 1 => {
                        let k = map.keys().nth(d.below(map.len() as u64) as usize).cloned();
                        map.remove(&k.unwrap());
                    }
                    2 => map.values_mut().for_each(|v| *v = random_value(&mut d)),
                    _ => {
                        for _ in 0..d.below(4) {
                            let at = d.below(map.len() as u64) as usize;
                            if let Some(v) = map.values_mut().nth(at) {
                                *v = random_value(&mut d);
                            }
                        }
                    }
                }
            }
        }
    }
}
