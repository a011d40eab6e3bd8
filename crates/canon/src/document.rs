//! A parsed document in a few flat buffers: the tree for reading a large state and writing
//! its canonical bytes, without an allocation per value.
//!
//! Why beside [`Value`]: a `Value` tree costs an allocation for every string, key, array and
//! object, and as much again to free them; parsing a state into it is bound by the allocator,
//! and walking it by cache misses (the nodes are scattered over a heap several times the
//! text's size). A [`Document`] holds one 16-byte entry per value, in the text's order, in one
//! vector; strings are spans of the text it borrows (only those with escapes are decoded, into
//! one buffer); an object whose keys did not come in order keeps its key order as a list of
//! indices. It is read-only: build values by hand with [`Value`], and convert with
//! [`Document::to_value`] where a tree to change is needed.
//!
//! The contract is the two-step path's: [`Document::parse_with`] accepts exactly the texts
//! [`parse_with`](crate::parse_with) accepts, with the same errors, and
//! [`Document::write`] writes exactly the bytes (or the error) of
//! [`write_value`](crate::write_value) on that tree. `tests/stream_differential.rs` runs it
//! beside the tree on every generated and mutated document.

mod build;
mod write;

use std::io;

use crate::parser::Parser;
use crate::writer::Num;
use crate::{Error, Map, Number, ParseError, ParseOptions, Profile, Value, WriteError};

/// A JSON document parsed from `'t` text it borrows.
///
/// ```
/// use lockstep_canon::{Document, Profile};
///
/// let doc = Document::parse(br#"{"hosts": {"h1": {"os": "bsd"}}, "step": 3}"#)?;
/// let root = doc.root();
/// assert_eq!(root.pointer("/hosts/h1/os").and_then(|n| n.as_str()), Some("bsd"));
/// assert_eq!(root.members().map(|(k, _)| k).collect::<Vec<_>>(), ["hosts", "step"]);
/// assert_eq!(doc.to_vec(Profile::Jcs)?, br#"{"hosts":{"h1":{"os":"bsd"}},"step":3}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Document<'t> {
    text: &'t [u8],
    /// One entry per value (and per key), in the text's order: a container's entry comes
    /// before its contents, an object's members are key entry then value entries.
    entries: Vec<Entry>,
    /// The strings and keys that had escapes, decoded, one after another.
    decoded: String,
    /// For each object whose keys did not come in byte order, or came in order but are more
    /// than a few: its key entries in key order.
    orders: Vec<u32>,
    options: ParseOptions,
}

/// One value. 16 bytes; what `len`, `a`, `b` and `raw` hold depends on `tag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    tag: Tag,
    flags: u8,
    /// String or key with [`PY_RAW`]: the length of its token in the text, quotes included.
    raw: u16,
    /// String, key, number text: its length. Container: how many elements or members.
    len: u32,
    /// String, key, number text: where it starts (in the text, or in `decoded` with
    /// [`DECODED`]). Container: the index just after its last entry. Int and float: the low
    /// half of the value's bits.
    a: u32,
    /// Object: where its key order starts in `orders` ([`IN_ORDER`] when its keys came in
    /// order and are few: the entries are walked). String and key: where its token (its
    /// opening quote) is in the text. Int and float: the high half of the value's bits.
    b: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Tag {
    Null,
    True,
    False,
    /// A number whose text is its canonical text in every profile (see
    /// `stream::verbatim_number`): copied when written.
    NumberText,
    Int,
    /// An integer beyond `i64`: its digits, a span of the text.
    BigInt,
    Float,
    String,
    Key,
    Array,
    Object,
}

/// String and key flags: which of three forms it has.
const PRINTABLE: u8 = 1;
const DECODED: u8 = 2;
/// String and key flag, beside [`DECODED`]: its token in the text, escapes and all, is
/// already its canonical text in profile python (ASCII, and only the escapes `json.dumps`
/// writes; how Python's `json.dump` writes every non-ASCII char of a state file), so that
/// profile copies it. Its length is in `raw`.
const PY_RAW: u8 = 8;
/// Object flag: a key has an astral char, whose UTF-16 order (profile jcs) is not its byte
/// order.
const ASTRAL_KEYS: u8 = 4;
const IN_ORDER: u32 = u32::MAX;

impl Entry {
    fn bits(self) -> u64 {
        u64::from(self.a) | u64::from(self.b) << 32
    }
}

impl<'t> Document<'t> {
    /// Parses `text` with the default [`ParseOptions`].
    pub fn parse(text: &'t [u8]) -> Result<Self, ParseError> {
        Self::parse_with(text, &ParseOptions::default())
    }

    /// Parses `text` strictly: the texts and the errors of
    /// [`parse_with`](crate::parse_with). Texts of 4 GiB or more are refused (entries
    /// hold 32-bit offsets); use [`canonicalize`](crate::canonicalize) for those.
    pub fn parse_with(text: &'t [u8], options: &ParseOptions) -> Result<Self, ParseError> {
        build::build(text, options)
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &'t [u8] {
        self.text
    }

    /// The outermost value.
    pub fn root(&self) -> Node<'_, 't> {
        Node {
            doc: self,
            index: 0,
        }
    }

    /// Writes the canonical bytes in `profile` to `out`: those of
    /// [`write_value`](crate::write_value) on [`Document::to_value`]. On an error `out` has
    /// received a prefix of the document; discard it.
    pub fn write<W: io::Write>(&self, profile: Profile, out: &mut W) -> Result<(), Error> {
        let mut sink = crate::sink::Sink::new(out);
        write::walk(self, profile, &mut sink).map_err(|e| Error::Value(*e))?;
        sink.finish()?;
        Ok(())
    }

    /// The canonical bytes in `profile`.
    pub fn to_vec(&self, profile: Profile) -> Result<Vec<u8>, WriteError> {
        let mut out = Vec::with_capacity(self.text.len());
        let mut sink = crate::sink::Sink::new(&mut out);
        write::walk(self, profile, &mut sink).map_err(|e| *e)?;
        // A `Vec` takes every write.
        let _ = sink.finish();
        Ok(out)
    }

    /// The document as a [`Value`] tree: what [`parse_with`](crate::parse_with) returns for
    /// the same text and options.
    pub fn to_value(&self) -> Value {
        self.root().to_value()
    }

    /// The index of the entry after `index` and everything inside it.
    fn next(&self, index: u32) -> u32 {
        let e = self.entries[index as usize];
        match e.tag {
            Tag::Array | Tag::Object => e.a,
            _ => index + 1,
        }
    }

    /// The bytes of a string or key entry.
    #[inline]
    fn bytes_of(&self, e: Entry) -> &[u8] {
        let (start, end) = (e.a as usize, e.a as usize + e.len as usize);
        if e.flags & DECODED != 0 {
            &self.decoded.as_bytes()[start..end]
        } else {
            &self.text[start..end]
        }
    }

    /// The UTF-8 of a string or key entry.
    #[inline]
    fn str_of(&self, e: Entry) -> &str {
        // SAFETY: only the builder makes entries, and a string or key entry spans either
        // decoded text (a `String`) or a string token's bytes between its quotes, which the
        // parser checked as UTF-8 (`Parser::string_token` returns them as `&str`).
        unsafe { std::str::from_utf8_unchecked(self.bytes_of(e)) }
    }

    /// An object's key entries in key order.
    fn keys_in_order(&self, index: u32) -> KeysInOrder<'_, 't> {
        let e = self.entries[index as usize];
        if e.b == IN_ORDER {
            KeysInOrder::Text {
                doc: self,
                next: index + 1,
                left: e.len,
            }
        } else {
            let start = e.b as usize;
            KeysInOrder::Listed(self.orders[start..start + e.len as usize].iter())
        }
    }

    /// A number entry as the writers see it.
    fn num(&self, e: Entry) -> Num<'_> {
        match e.tag {
            Tag::Int => Num::Int(e.bits() as i64),
            Tag::Float => Num::Float(f64::from_bits(e.bits())),
            Tag::BigInt => Num::Big(self.str_of(e)),
            _ => {
                // A verbatim number's text, read again: the parser accepted it once, and
                // it is an integer below 10^15 or a decimal of at most 15 digits, so this
                // reading cannot fail or overflow.
                let text = &self.text[e.a as usize..(e.a + e.len) as usize];
                let num = Parser::new(text, self.options).number_token();
                debug_assert!(num.is_ok(), "a verbatim number reads again");
                num.unwrap_or(Num::Int(0))
            }
        }
    }
}

/// The key entries of one object, in key order.
enum KeysInOrder<'d, 't> {
    /// The keys came in order: walk the entries.
    Text {
        doc: &'d Document<'t>,
        next: u32,
        left: u32,
    },
    Listed(std::slice::Iter<'d, u32>),
}

impl Iterator for KeysInOrder<'_, '_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            KeysInOrder::Text { doc, next, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let key = *next;
                *next = doc.next(key + 1);
                Some(key)
            }
            KeysInOrder::Listed(keys) => keys.next().copied(),
        }
    }
}

/// What a [`Node`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

/// One value of a [`Document`]: a cheap handle (a reference and an index).
#[derive(Clone, Copy)]
pub struct Node<'d, 't> {
    doc: &'d Document<'t>,
    index: u32,
}

impl std::fmt::Debug for Node<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("kind", &self.kind())
            .field("index", &self.index)
            .finish()
    }
}

impl<'d, 't> Node<'d, 't> {
    fn entry(&self) -> Entry {
        self.doc.entries[self.index as usize]
    }

    fn at(&self, index: u32) -> Node<'d, 't> {
        Node {
            doc: self.doc,
            index,
        }
    }

    pub fn kind(&self) -> Kind {
        match self.entry().tag {
            Tag::Null => Kind::Null,
            Tag::True | Tag::False => Kind::Bool,
            Tag::NumberText | Tag::Int | Tag::BigInt | Tag::Float => Kind::Number,
            Tag::String | Tag::Key => Kind::String,
            Tag::Array => Kind::Array,
            Tag::Object => Kind::Object,
        }
    }

    pub fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.entry().tag {
            Tag::True => Some(true),
            Tag::False => Some(false),
            _ => None,
        }
    }

    /// A string's text, decoded (borrowed from the text when it had no escapes).
    pub fn as_str(&self) -> Option<&'d str> {
        let e = self.entry();
        (e.tag == Tag::String).then(|| self.doc.str_of(e))
    }

    /// A number as the tree holds it.
    pub fn as_number(&self) -> Option<Number> {
        (self.kind() == Kind::Number).then(|| owned_number(self.doc.num(self.entry())))
    }

    /// An integer that fits `i64` (never a float, even a whole one), as [`Value::as_i64`].
    pub fn as_i64(&self) -> Option<i64> {
        match self.as_number()? {
            Number::Int(i) => Some(i),
            _ => None,
        }
    }

    /// Any number as a double, as [`Value::as_f64`].
    pub fn as_f64(&self) -> Option<f64> {
        Value::Number(self.as_number()?).as_f64()
    }

    /// How many elements or members a container has; `None` for a scalar.
    pub fn count(&self) -> Option<usize> {
        let e = self.entry();
        matches!(e.tag, Tag::Array | Tag::Object).then_some(e.len as usize)
    }

    /// An array's elements in order; empty for anything else.
    pub fn elements(&self) -> impl Iterator<Item = Node<'d, 't>> + 'd {
        let e = self.entry();
        let (doc, left) = match e.tag {
            Tag::Array => (self.doc, e.len),
            _ => (self.doc, 0),
        };
        let mut next = self.index + 1;
        (0..left).map(move |_| {
            let item = next;
            next = doc.next(item);
            Node { doc, index: item }
        })
    }

    /// An object's members in key order (UTF-8 byte order, as [`Map`] iterates); empty for
    /// anything else.
    pub fn members(&self) -> impl Iterator<Item = (&'d str, Node<'d, 't>)> + 'd {
        let doc = self.doc;
        let keys = match self.entry().tag {
            Tag::Object => Some(doc.keys_in_order(self.index)),
            _ => None,
        };
        keys.into_iter().flatten().map(move |key| {
            (
                doc.str_of(doc.entries[key as usize]),
                Node {
                    doc,
                    index: key + 1,
                },
            )
        })
    }

    /// The member `key` of an object; `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<Node<'d, 't>> {
        let e = self.entry();
        if e.tag != Tag::Object {
            return None;
        }
        let doc = self.doc;
        let key_of = |k: u32| doc.str_of(doc.entries[k as usize]);
        if e.b == IN_ORDER {
            doc.keys_in_order(self.index)
                .find(|&k| key_of(k) == key)
                .map(|k| self.at(k + 1))
        } else {
            let start = e.b as usize;
            let listed = &doc.orders[start..start + e.len as usize];
            let i = listed.binary_search_by(|&k| key_of(k).cmp(key)).ok()?;
            Some(self.at(listed[i] + 1))
        }
    }

    /// The value at an RFC 6901 JSON Pointer, as [`Value::pointer`].
    pub fn pointer(&self, pointer: &str) -> Option<Node<'d, 't>> {
        if pointer.is_empty() {
            return Some(*self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(*self, |cur, raw| {
            let segment = raw.replace("~1", "/").replace("~0", "~");
            match cur.kind() {
                Kind::Object => cur.get(&segment),
                Kind::Array => {
                    // RFC 6901: no leading zeros, no signs.
                    if segment.is_empty()
                        || (segment.len() > 1 && segment.starts_with('0'))
                        || !segment.bytes().all(|b| b.is_ascii_digit())
                    {
                        return None;
                    }
                    cur.elements().nth(segment.parse::<usize>().ok()?)
                }
                _ => None,
            }
        })
    }

    /// This value as a [`Value`] tree. Built without recursion, whatever the depth: its
    /// entries are read backwards, so every container finds its contents, already built, on
    /// top of a stack (its first element or member topmost).
    pub fn to_value(&self) -> Value {
        enum Built {
            Value(Value),
            Member(String, Value),
        }
        let doc = self.doc;
        let mut stack: Vec<Built> = Vec::new();
        for index in (self.index..doc.next(self.index)).rev() {
            let e = doc.entries[index as usize];
            let value = match e.tag {
                Tag::Null => Value::Null,
                Tag::True => Value::Bool(true),
                Tag::False => Value::Bool(false),
                Tag::NumberText | Tag::Int | Tag::BigInt | Tag::Float => {
                    Value::Number(owned_number(doc.num(e)))
                }
                Tag::String => Value::String(doc.str_of(e).to_owned()),
                Tag::Key => {
                    let value = match stack.pop() {
                        Some(Built::Value(v)) => v,
                        _ => unreachable_in_a_built_document(),
                    };
                    stack.push(Built::Member(doc.str_of(e).to_owned(), value));
                    continue;
                }
                Tag::Array => {
                    let from = stack.len() - e.len as usize;
                    let items = stack.drain(from..).rev().map(|b| match b {
                        Built::Value(v) => v,
                        Built::Member(..) => unreachable_in_a_built_document(),
                    });
                    Value::Array(items.collect())
                }
                Tag::Object => {
                    let from = stack.len() - e.len as usize;
                    let members = stack.drain(from..).map(|b| match b {
                        Built::Member(k, v) => (k, v),
                        Built::Value(_) => unreachable_in_a_built_document(),
                    });
                    Value::Object(members.collect::<Map>())
                }
            };
            stack.push(Built::Value(value));
        }
        match stack.pop() {
            Some(Built::Value(v)) => v,
            _ => unreachable_in_a_built_document(),
        }
    }
}

/// A number as the tree holds it (big integers' digits copied out of the text).
fn owned_number(num: Num<'_>) -> Number {
    match num {
        Num::Int(i) => Number::Int(i),
        Num::Big(digits) => Number::BigInt(digits.into()),
        Num::Float(f) => Number::Float(f),
    }
}

/// The builder puts every key before its value and a container's contents after it, so
/// reading backwards never finds anything else.
#[cold]
fn unreachable_in_a_built_document() -> ! {
    unreachable!("a document's entries are in the builder's order")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
    }

    #[test]
    fn reads_like_the_tree() {
        let text = br#"{"b": [1, 2.5, "x\u00e9", null, true], "a": {"z": 1e400, "y": -0},
            "\u00e9": 123456789012345678901234567890, "c/d": {"~": false}}"#;
        let options = ParseOptions {
            allow_nan: true,
            ..ParseOptions::default()
        };
        let doc = Document::parse_with(text, &options).unwrap();
        let value = crate::parse_with(text, &options).unwrap();
        assert_eq!(doc.to_value(), value);
        let root = doc.root();
        assert_eq!(root.kind(), Kind::Object);
        assert_eq!(root.count(), Some(4));
        let keys: Vec<&str> = root.members().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "c/d", "\u{e9}"]);
        assert_eq!(root.get("b").unwrap().count(), Some(5));
        assert_eq!(root.pointer("/b/2").unwrap().as_str(), Some("x\u{e9}"));
        assert_eq!(root.pointer("/b/1").unwrap().as_f64(), Some(2.5));
        assert_eq!(root.pointer("/b/0").unwrap().as_i64(), Some(1));
        assert_eq!(root.pointer("/b/4").unwrap().as_bool(), Some(true));
        assert!(root.pointer("/b/3").unwrap().is_null());
        assert_eq!(root.pointer("/a/y").unwrap().as_i64(), Some(0));
        assert_eq!(root.pointer("/a/z").unwrap().as_f64(), Some(f64::INFINITY));
        assert_eq!(
            root.pointer("/\u{e9}").unwrap().as_number(),
            Some(Number::BigInt("123456789012345678901234567890".into()))
        );
        assert_eq!(root.pointer("/c~1d/~0").unwrap().as_bool(), Some(false));
        for missing in ["/b/5", "/b/01", "/x", "a", "/b/-1", "/a/y/0"] {
            assert!(root.pointer(missing).is_none(), "{missing}");
        }
        assert!(root.pointer("").is_some());
        assert!(root.get("b").unwrap().get("0").is_none());
        assert_eq!(root.get("a").unwrap().elements().count(), 0);
    }

    #[test]
    fn writes_the_trees_bytes() {
        let text = br#"{"b":{"d":1,"c":[0.1,1.0,-0.0,1E2,"\ud83d\ude00"]},"a":"\u00e9"}"#;
        let doc = Document::parse(text).unwrap();
        let value = crate::parse(text).unwrap();
        for profile in [Profile::Python, Profile::PythonStrict, Profile::Jcs] {
            let want = crate::to_vec(&value, profile).unwrap();
            assert_eq!(doc.to_vec(profile).unwrap(), want, "{profile}");
            let mut out = Vec::new();
            doc.write(profile, &mut out).unwrap();
            assert_eq!(out, want, "{profile}");
        }
    }

    #[test]
    fn to_value_does_not_recurse() {
        let depth = 10_000;
        let arrays = "[".repeat(depth) + &"]".repeat(depth);
        let objects = "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth);
        for text in [arrays, objects] {
            let options = ParseOptions {
                max_depth: depth + 1,
                ..ParseOptions::default()
            };
            let doc = Document::parse_with(text.as_bytes(), &options).unwrap();
            // 128 KiB of stack: a walk that recursed once per level would need several MiB.
            let value = std::thread::scope(|s| {
                std::thread::Builder::new()
                    .stack_size(128 * 1024)
                    .spawn_scoped(s, || doc.root().to_value())
                    .unwrap()
                    .join()
                    .unwrap()
            });
            // The tree's own `==` and drop do recurse: give them room.
            let text = text.clone();
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn(move || {
                    assert!(value == crate::parse_with(text.as_bytes(), &options).unwrap());
                })
                .unwrap()
                .join()
                .unwrap();
        }
    }

    #[test]
    fn the_write_depth_limit_is_the_trees() {
        let limit = crate::MAX_WRITE_DEPTH;
        for n in [limit - 1, limit, limit + 1, limit + 2] {
            let arrays = "[".repeat(n) + &"]".repeat(n);
            let objects = "{\"a\":[".repeat(n / 2) + "1" + &"]}".repeat(n / 2);
            for text in [arrays, objects] {
                let options = ParseOptions {
                    max_depth: n + 1,
                    ..ParseOptions::default()
                };
                let doc = Document::parse_with(text.as_bytes(), &options).unwrap();
                let value = crate::parse_with(text.as_bytes(), &options).unwrap();
                for profile in [Profile::Python, Profile::Jcs] {
                    assert_eq!(
                        doc.to_vec(profile),
                        crate::to_vec(&value, profile),
                        "{n} levels"
                    );
                }
            }
        }
    }

    #[test]
    fn get_finds_every_member_of_small_and_large_objects_in_any_order() {
        for n in [1usize, 16, 17, 300] {
            let keys: Vec<String> = (0..n).map(|i| format!("k{i:04}")).collect();
            let reversed: Vec<String> = keys.iter().rev().cloned().collect();
            for order in [&keys, &reversed] {
                let members: Vec<String> =
                    order.iter().map(|k| format!("\"{k}\":[\"{k}\"]")).collect();
                let text = format!("{{{}}}", members.join(","));
                let doc = Document::parse(text.as_bytes()).unwrap();
                let root = doc.root();
                for k in &keys {
                    let found = root.get(k).and_then(|v| v.pointer("/0"));
                    assert_eq!(found.and_then(|v| v.as_str()), Some(k.as_str()), "{n} {k}");
                }
                for miss in ["", "k", "k00000", "l"] {
                    assert!(root.get(miss).is_none(), "{n} {miss}");
                }
                let listed: Vec<&str> = root.members().map(|(k, _)| k).collect();
                assert_eq!(listed, keys, "{n}");
            }
        }
    }
}
