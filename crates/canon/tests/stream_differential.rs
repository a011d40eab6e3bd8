//! `canonicalize` (text to canonical bytes in one pass) against the two-step path it replaces
//! (`parse_with`, then `to_vec`): the same bytes, or the same error, in every profile, for
//! generated documents (keys out of order, duplicates, escapes, astral keys, NaN, big
//! integers, deep nesting, long arrays across the flush size) and for mutations of them
//! (bytes deleted, inserted or replaced), which reach the parser's error paths.

use std::any::Any;
use std::cell::Cell;
use std::io;

use lockstep_canon::{
    canonicalize, canonicalize_early, canonicalize_early_parallel, canonicalize_parallel,
    canonicalize_parallel_headed, canonicalize_split_from, parse_with, reads_in_parallel, to_vec,
    CanonError, Document, EarlyWrite, Head, Number, ParseOptions, PartsTaken, Plan, Profile, Value,
    MOVED_MAX,
};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const SCALARS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "1.0",
    "-0.0",
    "0.5",
    "1e400",
    "-1e400",
    "1E-7",
    "2.5e+3",
    "123456789012345678901234567890",
    "-9223372036854775809",
    "9007199254740993",
    "9007199254740992",
    "9223372036854775807",
    "NaN",
    "Infinity",
    "-Infinity",
    "true",
    "false",
    "null",
    "\"\"",
    "\"plain\"",
    "\"a\\\"b\\\\c\\/\"",
    "\"\\u00e9\\ud83d\\ude00\"",
    "\"\u{e9}\u{1f600}\u{7f}\"",
    "\"\\n\\t\\b\\f\\r\\u0001\"",
    // As `json.dump` writes non-ASCII: the text is the python profile's, not jcs's.
    "\"\\u00e9quipe-27\\u007f\"",
    "\"\\u00E9\\u001F\\u0008\"",
    "\"\u{2028}\u{feff}\"",
    "0.1",
    "1e16",
    "1e-5",
    "5e-324",
    "1.7976931348623157e308",
];

const KEYS: &[&str] = &[
    "a",
    "b",
    "ab",
    "z",
    "\u{e9}",
    "\u{e000}",
    "\u{1f600}",
    "\u{ffff}",
    "a/b",
    "m~n",
    "\\u0041",
    "\\ud83d\\ude00",
    "k\\\"",
    "\\u00e9quipe",
    "",
    "A",
    "\u{7f}",
    // Raw UTF-8 with escapes in one key, and a lone surrogate (the general reading's).
    "\u{e9}\\n\\u0041\u{1f600}\\\"",
    "\\ud800x",
    "\u{e9}\\ud83d",
];

fn ws(rng: &mut Rng, out: &mut String) {
    for _ in 0..rng.below(3).saturating_sub(1) {
        out.push([' ', '\n', '\t', '\r'][rng.below(4) as usize]);
    }
}

fn gen(rng: &mut Rng, depth: u32, out: &mut String) {
    ws(rng, out);
    let kind = if depth >= 6 { 0 } else { rng.below(10) };
    match kind {
        0..=4 => out.push_str(rng.pick(SCALARS)),
        5..=6 => {
            out.push('[');
            let n = rng.below(6);
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                gen(rng, depth + 1, out);
            }
            ws(rng, out);
            out.push(']');
        }
        _ => {
            out.push('{');
            let n = rng.below(7);
            let mut used: Vec<String> = Vec::new();
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                // Mostly fresh keys (in any order); a duplicate now and then.
                let key = if !used.is_empty() && rng.below(30) == 0 {
                    used[rng.below(used.len() as u64) as usize].clone()
                } else {
                    let mut k = rng.pick(KEYS).to_string();
                    while used.contains(&k) {
                        k.push_str(rng.pick(KEYS));
                    }
                    k
                };
                out.push('"');
                out.push_str(&key);
                out.push('"');
                used.push(key);
                ws(rng, out);
                out.push(':');
                gen(rng, depth + 1, out);
            }
            ws(rng, out);
            out.push('}');
        }
    }
    ws(rng, out);
}

fn mutate(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let mut t = text.to_vec();
    for _ in 0..=rng.below(2) {
        if t.is_empty() {
            break;
        }
        let at = rng.below(t.len() as u64) as usize;
        let bytes = b"{}[],:\"\\ 0-eE.Nx\xff\xc3\x01";
        let b = bytes[rng.below(bytes.len() as u64) as usize];
        match rng.below(3) {
            0 => {
                t.remove(at);
            }
            1 => t.insert(at, b),
            _ => t[at] = b,
        }
    }
    t
}

/// The two-step path's outcome as text: the bytes, or the error as the CLI words it.
fn two_step(text: &[u8], options: &ParseOptions, profile: Profile) -> Result<Vec<u8>, String> {
    let value = parse_with(text, options).map_err(|e| format!("parse: {e}"))?;
    to_vec(&value, profile).map_err(|e| format!("value: {e}"))
}

fn one_pass(text: &[u8], options: &ParseOptions, profile: Profile) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    outcome(canonicalize(text, options, profile, &mut out), out)
}

/// The document's outcome: its parse error, or its canonical bytes (written both ways) or
/// value error. Its tree must be the parser's.
fn document_pass(text: &[u8], options: &ParseOptions, profile: Profile) -> Result<Vec<u8>, String> {
    let doc = Document::parse_with(text, options).map_err(|e| format!("parse: {e}"))?;
    let value = parse_with(text, options).expect("the document parsed, so the tree must");
    assert!(
        same_tree(&doc.to_value(), &value),
        "tree of {:?}",
        String::from_utf8_lossy(text)
    );
    let mut written = Vec::new();
    let streamed = doc.write(profile, &mut written);
    let bytes = doc.to_vec(profile).map_err(|e| format!("value: {e}"));
    match streamed {
        Ok(()) => assert_eq!(bytes.as_ref().ok(), Some(&written)),
        Err(e) => assert_eq!(bytes.as_ref().err(), Some(&format!("value: {e}"))),
    }
    bytes
}

/// `==` of trees, but floats by their bits (NaN is itself; 0.0 is not -0.0).
fn same_tree(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_tree(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && same_tree(x, y))
        }
        _ => a == b,
    }
}

fn outcome(result: Result<(), CanonError>, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    match result {
        Ok(()) => Ok(bytes),
        Err(CanonError::Parse(e)) => Err(format!("parse: {e}")),
        Err(CanonError::Value(e)) => Err(format!("value: {e}")),
        Err(CanonError::Io(e)) => Err(format!("io: {e}")),
    }
}

/// What `canonicalize_early` handed over: the bytes since the last restart, how often it
/// restarted, and how many writes were of 16 KiB or more (pieces go out at every 64 KiB of
/// text written, up to the first object that may still move).
#[derive(Default)]
struct Recording {
    bytes: Vec<u8>,
    restarts: usize,
    large_writes: usize,
}

impl io::Write for Recording {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if bytes.len() >= 16 * 1024 {
            self.large_writes += 1;
        }
        self.bytes.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl EarlyWrite for Recording {
    fn restart(&mut self) -> io::Result<()> {
        self.bytes.clear();
        self.restarts += 1;
        Ok(())
    }

    /// A recording for the helper's head: the split passes without early writes go on
    /// from it when its guess held, so every such test checks the head's bytes too.
    fn head(&self) -> Option<Box<dyn Head>> {
        Some(Box::new(Recording::default()))
    }

    fn resume(&mut self, head: Box<dyn Head>) -> bool {
        if !self.bytes.is_empty() {
            return false;
        }
        let Ok(head) = head.into_any().downcast::<Recording>() else {
            return false;
        };
        self.bytes = head.bytes;
        RESUMED.with(|n| n.set(n.get() + 1));
        true
    }
}

impl Head for Recording {
    fn restart(&mut self) {
        self.bytes.clear();
    }

    fn fresh(&self) -> Box<dyn Head> {
        Box::new(Recording::default())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

thread_local! {
    /// Heads the main reader went on from, on this thread (the main reader's).
    static RESUMED: Cell<usize> = const { Cell::new(0) };
}

fn resumed() -> usize {
    RESUMED.with(Cell::get)
}

fn early_pass(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
) -> (Result<Vec<u8>, String>, Recording) {
    let mut out = Recording::default();
    let result = canonicalize_early(text, options, profile, &mut out);
    let bytes = std::mem::take(&mut out.bytes);
    (outcome(result, bytes), out)
}

fn check(text: &[u8], counts: &mut [usize; 3]) {
    for allow_nan in [false, true] {
        for max_depth in [256, 4] {
            let options = ParseOptions {
                max_depth,
                allow_nan,
            };
            for profile in [Profile::Python, Profile::PythonStrict, Profile::Jcs] {
                let want = two_step(text, &options, profile);
                let got = one_pass(text, &options, profile);
                assert_eq!(
                    got,
                    want,
                    "{profile} allow_nan={allow_nan} max_depth={max_depth} on {:?}",
                    String::from_utf8_lossy(text)
                );
                assert_eq!(
                    document_pass(text, &options, profile),
                    want,
                    "document, {profile} allow_nan={allow_nan} max_depth={max_depth} on {:?}",
                    String::from_utf8_lossy(text)
                );
                let (early, _) = early_pass(text, &options, profile);
                assert_eq!(
                    early,
                    want,
                    "early, {profile} allow_nan={allow_nan} max_depth={max_depth} on {:?}",
                    String::from_utf8_lossy(text)
                );
                counts[match &want {
                    Ok(_) => 0,
                    Err(e) if e.starts_with("parse") => 1,
                    Err(_) => 2,
                }] += 1;
            }
        }
    }
}

#[test]
fn one_pass_equals_parse_then_write() {
    let mut rng = Rng(16);
    let mut counts = [0usize; 3];
    for _ in 0..4000 {
        let mut text = String::new();
        gen(&mut rng, 0, &mut text);
        check(text.as_bytes(), &mut counts);
        let bad = mutate(&mut rng, text.as_bytes());
        check(&bad, &mut counts);
    }
    // Every outcome was exercised many times: canonical bytes, parse errors, value errors.
    assert!(counts.iter().all(|&n| n > 2000), "{counts:?}");
}

#[test]
fn fixed_cases() {
    let cases: &[&[u8]] = &[
        b"",
        b" ",
        b"\xef\xbb\xbf1",
        b"{\"a\":1,\n \"a\":2}",
        b"{\"b\":1,\"a\":2,\"b\":[1,}",
        b"{\"b\":{\"x\":NaN},\"a\":[Infinity]}",
        b"[NaN,{\"b\":NaN,\"a\":NaN}]",
        b"{\"\xf0\x9f\x98\x80\":NaN,\"\xee\x80\x80\":NaN}",
        b"[1]\n x",
        b"[01]",
        b"{\"a\" 1}",
        b"{\"a\":1,}",
        b"\"\\ud800\"",
        b"[\"ab\xff\"]",
        b"[[[[[[]]]]]]",
        b"{\"k\":9007199254740993}",
        // Duplicates in objects whose keys came out of order, against errors after them.
        b"{\"b\":1,\"a\":2,\"b\":3,\"c\":[1,}",
        b"{\"b\":1,\"a\":2,\"b\":3",
        b"{\"b\":1,\"a\":2,\"b\":{\"y\":1,\"x\":2,\"y\":3}}",
        b"{\"b\":1,\"b\":2,\"a\":{\"y\":1,\"x\":2,\"y\":3}}",
        b"{\"b\":1,\"a\":2,\"b\":[{\"y\":1,\"x\":2,\"y\":3}]}",
        b"[{\"b\":1,\"a\":2},{\"d\":1,\"c\":2,\"d\":[NaN,}]",
        b"{\"z\":{\"b\":1,\"a\":2,\"b\":3},\"z\":1}",
        b"{\"\xf0\x9f\x98\x80\":1,\"\xee\x80\x80\":2,\"\xf0\x9f\x98\x80\":3}",
        b"{\"b\":1,\"a\":2,\"b\":3,\"a\":4}",
    ];
    let mut counts = [0; 3];
    for text in cases {
        check(text, &mut counts);
    }
    // Members beyond the scan limit, out of order, with a duplicate at the end.
    let mut wide: Vec<String> = (0..100).rev().map(|i| format!("\"k{i}\":{i}")).collect();
    let text = format!("{{{}}}", wide.join(","));
    check(text.as_bytes(), &mut counts);
    wide.push("\"k42\":0".into());
    let text = format!("{{{}}}", wide.join(","));
    check(text.as_bytes(), &mut counts);
    // A duplicate among the first members, found when the object grows past the scan limit
    // (or past it by one), and one in a nested object of such an object.
    for at in [3, 31, 32, 33, 34] {
        let mut wide: Vec<String> = (0..60).rev().map(|i| format!("\"k{i}\":{i}")).collect();
        wide.insert(at, "\"k58\":0".into());
        let text = format!("{{{}}}", wide.join(","));
        check(text.as_bytes(), &mut counts);
        let text = format!("{{{},\"z\":{{\"b\":1,\"a\":2,\"b\":3}}}}", wide.join(","));
        check(text.as_bytes(), &mut counts);
    }
}

/// Long arrays go to the writer in pieces; an object or an error after many pieces.
#[test]
fn long_documents_across_flushes() {
    let mut counts = [0; 3];
    let items: Vec<String> = (0..40_000).map(|i| format!("{}.5", i)).collect();
    let body = items.join(",");
    for text in [
        format!("[{body}]"),
        format!("[{body},{{\"b\":1,\"a\":[{body}]}}]"),
        format!("{{\"z\":[{body}],\"a\":0}}"),
        format!("[{body},NaN,{body}]"),
        format!("[{body},{body}"),
    ] {
        check(text.as_bytes(), &mut counts);
    }
}

/// `canonicalize_early` on large documents: a state's hosts go out while the text is read
/// (many whole pieces, no restart), and every way the guess can fail restarts the writer and
/// still ends with the canonical bytes.
#[test]
fn early_bytes_are_the_canonical_bytes_and_go_out_early() {
    let host = |i: usize, sorted: bool| {
        let members = [
            format!("\"ip\":\"10.0.{}.{}\"", i / 256 % 256, i % 256),
            format!("\"os\":\"linux\",\"ports\":[22,{i}]"),
            format!("\"risk\":0.{i}5,\"owner\":\"\\u00e9quipe-{i}\""),
        ];
        let members = if sorted {
            vec![members[0].clone(), members[1].clone(), members[2].clone()]
        } else {
            vec![members[2].clone(), members[0].clone(), members[1].clone()]
        };
        format!("{{{}}}", members.join(","))
    };
    let hosts = |n: usize, sorted: bool| {
        let members: Vec<String> = (0..n)
            .map(|i| format!("\"host-{i:06}\":{}", host(i, sorted)))
            .collect();
        format!("{{{}}}", members.join(","))
    };
    let big = hosts(20_000, false);
    let numbers: Vec<String> = (0..40_000).map(|i| format!("{i}.25")).collect();
    let array = format!("[{}]", numbers.join(","));
    // The hosts member sorted up to a key out of order after many pieces.
    let late_unsorted = {
        let mut h = hosts(20_000, true);
        h.insert_str(h.len() - 1, ",\"a\":1");
        h
    };
    let rows: Vec<String> = (0..20_000).map(|i| host(i, false)).collect();
    let rows = format!("[{}]", rows.join(","));
    let reversed: Vec<String> = (0..20_000)
        .rev()
        .map(|i| format!("\"host-{i:06}\":{}", host(i, true)))
        .collect();
    let reversed = format!("{{{}}}", reversed.join(","));
    let options = ParseOptions::default();
    let cases = [
        // (document, restarts, whether whole pieces went out before the end)
        (
            format!("{{\"step\":0,\"seed\":2026,\"hosts\":{big}}}"),
            0,
            true,
        ),
        (
            format!("{{\"hosts\":{big},\"seed\":2026,\"step\":0}}"),
            0,
            true,
        ),
        (format!("{{\"hosts\":{array}}}"), 0, true),
        // Records out of order in an array: each goes out once it is put in order.
        (format!("{{\"z\":0,\"rows\":{rows}}}"), 0, true),
        // A smaller root key after the guessed member: one restart.
        (format!("{{\"m\":{array},\"a\":0}}"), 1, true),
        (
            format!("{{\"m\":{array},\"n\":{array},\"a\":{array}}}"),
            1,
            true,
        ),
        // An object inside the guess turns out of order after some of it went out.
        (format!("{{\"hosts\":{late_unsorted}}}"), 1, true),
        // The guessed member's value moves as a whole: it goes out when it is complete.
        (format!("{{\"step\":0,\"hosts\":{reversed}}}"), 0, false),
        // A top-level array is never guessed about: it streams.
        (format!("[{big},{array}]"), 0, true),
        // Keys out of order inside a small root: nothing handed over early, no restart.
        ("{\"b\":{\"y\":1,\"x\":2},\"a\":[1]}".to_owned(), 0, false),
    ];
    for (text, restarts, large) in &cases {
        for profile in [Profile::Python, Profile::Jcs] {
            let want = two_step(text.as_bytes(), &options, profile);
            assert!(want.is_ok(), "{:?}", &text[..80.min(text.len())]);
            let (got, record) = early_pass(text.as_bytes(), &options, profile);
            let head = &text[..60.min(text.len())];
            assert!(got == want, "{profile} on {head:?}");
            assert_eq!(record.restarts, *restarts, "{profile} on {head:?}");
            if *large {
                // Without early output the root's members would be at most three writes.
                assert!(record.large_writes >= 4, "{profile} on {head:?}");
            }
        }
    }
    // Keys whose UTF-16 order is not their byte order, at the root: in jcs the astral key
    // comes first, so the guess on the other one (its array already going out) fails.
    let astral = format!("{{\"\u{ffff}\":{array},\"\u{1f600}\":1}}");
    for (profile, restarts) in [(Profile::Python, 0), (Profile::Jcs, 1)] {
        let want = two_step(astral.as_bytes(), &options, profile);
        let (got, record) = early_pass(astral.as_bytes(), &options, profile);
        assert!(want.is_ok() && got == want, "{profile}");
        assert_eq!(record.restarts, restarts, "{profile}");
        assert!(record.large_writes >= 4, "{profile}");
    }
    // And the other way round: in jcs the astral key's large member is the guess and goes
    // out early; in python it comes last, so nothing can go out before the root's `}`.
    let astral = format!("{{\"\u{ffff}\":1,\"\u{1f600}\":{array}}}");
    for (profile, early_writes) in [(Profile::Python, false), (Profile::Jcs, true)] {
        let want = two_step(astral.as_bytes(), &options, profile);
        let (got, record) = early_pass(astral.as_bytes(), &options, profile);
        assert!(want.is_ok() && got == want, "{profile}");
        assert_eq!(record.restarts, 0, "{profile}");
        assert_eq!(record.large_writes >= 4, early_writes, "{profile}");
    }
    // A trusted map (16 keys in order) whose member being read holds an object out of order
    // with a large array in it: that member must wait for its object to be put in order.
    let trusted: Vec<String> = (0..16).map(|i| format!("\"k{i:06}\":{i}")).collect();
    let text = format!(
        "{{\"g\":{{{},\"kz\":{{\"b\":1,\"a\":2,\"c\":{array}}}}}}}",
        trusted.join(",")
    );
    for profile in [Profile::Python, Profile::Jcs] {
        let want = two_step(text.as_bytes(), &options, profile);
        let (got, record) = early_pass(text.as_bytes(), &options, profile);
        assert!(want.is_ok() && got == want, "{profile}");
        assert_eq!(record.restarts, 0, "{profile}");
    }
    // Errors after bytes went out are still the two-step path's errors.
    let mut counts = [0; 3];
    for text in [
        format!("{{\"hosts\":{big},\"x\":[1,}}"),
        format!("{{\"hosts\":{big},\"hosts\":1}}"),
        format!("{{\"z\":{array},\"a\":[NaN]}}"),
        format!("{{\"hosts\":{}", &big[..big.len() - 1]),
    ] {
        check(text.as_bytes(), &mut counts);
    }
    assert!(counts[1] > 0 && counts[2] > 0, "{counts:?}");
}

/// Numbers whose text is copied as is (see `verbatim_number`) and their neighbours: every
/// length of integer and fraction around the limits, leading and trailing zeros, signs,
/// exponents.
#[test]
fn numbers_copied_or_converted_alike() {
    let mut rng = Rng(1616);
    let mut counts = [0; 3];
    let digits = |rng: &mut Rng, n: u64, out: &mut String| {
        for _ in 0..n {
            let d = match rng.below(4) {
                0 => b'0',
                1 => b'9',
                _ => b'0' + rng.below(10) as u8,
            };
            out.push(d as char);
        }
    };
    let mut items = Vec::new();
    for _ in 0..40_000 {
        let mut t = String::new();
        if rng.below(3) == 0 {
            t.push('-');
        }
        let int_len = rng.below(20);
        if int_len == 0 || rng.below(3) == 0 {
            t.push('0');
        } else {
            t.push((b'1' + rng.below(9) as u8) as char);
            digits(&mut rng, int_len - 1, &mut t);
        }
        if rng.below(4) != 0 {
            t.push('.');
            let zeros = rng.below(6);
            t.extend(std::iter::repeat_n('0', zeros as usize));
            let n = 1 + rng.below(17);
            digits(&mut rng, n, &mut t);
        }
        if rng.below(8) == 0 {
            t.push_str(["e5", "E-3", "e+0", "e-400"][rng.below(4) as usize]);
        }
        items.push(t);
    }
    for chunk in items.chunks(500) {
        check(format!("[{}]", chunk.join(",")).as_bytes(), &mut counts);
    }
    for t in [
        "0.0",
        "-0.0",
        "5.0",
        "-0",
        "0.0001",
        "0.00001",
        "0.00012",
        "999999999999999.9",
    ] {
        check(format!("[{t}]").as_bytes(), &mut counts);
    }
}

/// Numbers with an exponent: the form Python's `repr` writes (copied as is in profile python
/// when it has at most 15 digits and a normal exponent, see `verbatim_number`) for doubles of
/// every magnitude, subnormals and the bounds of the copied range included, and every
/// variation beside it (a `0` lead, a trailing `0`, `E`, no sign, one or four exponent
/// digits, a padded exponent, 16 and 17 digits, exponents just outside -307..=-5 and
/// 16..=307, overflow and underflow).
#[test]
fn exponent_forms_copied_or_converted_alike() {
    let mut rng = Rng(1717);
    let mut counts = [0; 3];
    let mut items = Vec::new();
    // Python's layout of shortest digits, built from Rust's `{:e}`.
    let python_exp = |f: f64| {
        let t = format!("{f:e}");
        let (mantissa, exp) = t.split_once('e').unwrap_or((&t, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    };
    for _ in 0..30_000 {
        let f = f64::from_bits(rng.next());
        if f.is_finite() {
            items.push(python_exp(f));
        }
        // 1 to 17 digits at every decimal exponent, near both ends of the copied range.
        let digits = 1 + rng.below(17) as usize;
        let mantissa: String = (0..digits)
            .map(|i| {
                let d = if i == 0 {
                    1 + rng.below(9)
                } else {
                    rng.below(10)
                };
                (b'0' + d as u8) as char
            })
            .collect();
        let exp = match rng.below(4) {
            0 => 300 + rng.below(30) as i32,
            1 => -300 - rng.below(30) as i32,
            _ => rng.below(700) as i32 - 350,
        };
        let (head, tail) = mantissa.split_at(1);
        let tail = tail.trim_end_matches(if rng.below(4) == 0 { 'x' } else { '0' });
        let point = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let sign = if exp < 0 { '-' } else { '+' };
        let minus = if rng.below(3) == 0 { "-" } else { "" };
        items.push(format!(
            "{minus}{head}{point}e{sign}{:02}",
            exp.unsigned_abs()
        ));
    }
    for t in [
        "1e-05",
        "1e-04",
        "1e-5",
        "1e-005",
        "1E-05",
        "1e05",
        "1e+16",
        "1e+15",
        "1e16",
        "1e+016",
        "0e+16",
        "0.0e+16",
        "1.0e+16",
        "1.50e+16",
        "1.5e+16",
        "-1.5e+16",
        "9.99999999999999e+307",
        "9.999999999999999e+307",
        "1e+307",
        "1e+308",
        "1.7976931348623157e+308",
        "1e+309",
        "1e-307",
        "1e-308",
        "2.2250738585072014e-308",
        "2.225073858507201e-308",
        "5e-324",
        "1e-400",
        "4.9406564584124654e-324",
        "1.23456789012345e-300",
        "1.234567890123456e-300",
        "1.2345678901234567e-300",
        "1e+1000",
        "1e+9999",
    ] {
        items.push(t.to_string());
    }
    for chunk in items.chunks(500) {
        check(format!("[{}]", chunk.join(",")).as_bytes(), &mut counts);
    }
}

/// Strings and keys whose plain run ends at every offset of the 8-byte words the lexer reads,
/// on every kind of byte that ends it or makes it need escaping (0x7F, 0x1F, `"`, `\`,
/// non-ASCII, an escape), also where fewer than 8 bytes of input are left.
#[test]
fn strings_and_keys_at_run_edges() {
    let mut counts = [0; 3];
    let enders: &[&str] = &[
        "\u{7f}",
        "\u{1f}",
        "\u{0}",
        "\\\"",
        "\\\\",
        "\\u0041",
        "\\u007f",
        "\\ud83d\\ude00",
        "\u{e9}",
        "\u{1f600}",
        "\u{2028}",
        "~",
        " ",
        "\"",
        "\\",
        "\\x",
        "\\u00e9",
        "\\u00E9",
        "\\u0008",
        "\\u000a",
        "\\u001f",
        "\\u0000",
        "\\u0022",
        "\\u005c",
        "\\u007e",
        "\\u0080",
        "\\uffff",
        "\\u2028",
        "\\ud800",
        "\\udc00",
        "\\ud83d\\ude00",
        "\\u12",
        "\\u12g4",
        "\\/",
        "\\n\\t\\b\\f\\r",
        "\\u00e9\\u20ac\\\"",
        "\\u00e9\u{e9}",
        // Surrogate pairs: lowercase (Python's text, copied), either half uppercase, a high
        // one followed by something else, the bounds of both halves.
        "\\ud800\\udc00",
        "\\udbff\\udfff",
        "\\ud83d\\uDE00",
        "\\uD83D\\ude00",
        "\\ud83d\\u0041",
        "\\ud83d\\ud83d\\ude00",
        "\\ud83d\\n",
        "\\ud83d\\u",
        "\\ud83d\\ude0",
        "\\ude00\\ud83d",
    ];
    for len in 0..20 {
        let run: String = "abcdefghijklmnopqrstuvwxyz".chars().take(len).collect();
        for ender in enders {
            for tail in ["", "z", "tail"] {
                let s = format!("{run}{ender}{tail}");
                for text in [
                    format!("\"{s}\""),
                    format!("[\"{s}\"]"),
                    format!("{{\"{s}\":1,\"a\":\"{s}\"}}"),
                    format!("{{\"~\":0,\"{s}\":[\"{run}\"]}}"),
                    // Cut short: unterminated at every length.
                    format!("[\"{s}"),
                ] {
                    check(text.as_bytes(), &mut counts);
                }
            }
        }
        // A lone byte that is not UTF-8 right after the run.
        for bad_byte in [&b"\xff"[..], b"\xc3", b"\xe2\x82"] {
            let mut bad = format!("[\"{run}").into_bytes();
            bad.extend_from_slice(bad_byte);
            bad.extend_from_slice(b"\"]");
            check(&bad, &mut counts);
        }
    }
    // Strings have no value errors: bytes and parse errors, many of each.
    assert!(counts[0] > 10_000 && counts[1] > 10_000, "{counts:?}");
}

/// Records of one shape (the same keys in the same order) and, among them, records with
/// as many members in another order, a different key, a duplicate, or a value without a
/// canonical form: the key order remembered from one record must never be used for another
/// that it does not fit.
#[test]
fn records_of_one_shape() {
    let mut counts = [0; 3];
    let record = |keys: &[&str], i: usize| {
        let members: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(k, key)| format!("\"{key}\":{}", i * 10 + k))
            .collect();
        format!("{{{}}}", members.join(","))
    };
    let shapes: &[&[&str]] = &[
        &["ip", "os", "ports", "services", "compromised", "risk"],
        &["os", "ip", "ports", "services", "compromised", "risk"],
        &["ip", "os", "ports", "services", "compromised", "riskier"],
        &[
            "ip",
            "os",
            "ports",
            "services",
            "compromised",
            "compromised",
        ],
        &["b", "a"],
        &["a", "b"],
        &["b", "c"],
        &["\u{e9}", "e"],
        &["\u{1f600}", "\u{e000}"],
    ];
    let mut rng = Rng(7);
    for _ in 0..200 {
        let n = 1 + rng.below(6) as usize;
        let rows: Vec<String> = (0..n)
            .map(|i| record(shapes[rng.below(shapes.len() as u64) as usize], i))
            .collect();
        check(format!("[{}]", rows.join(",")).as_bytes(), &mut counts);
        check(
            format!("{{\"z\":[{}],\"a\":NaN}}", rows.join(",")).as_bytes(),
            &mut counts,
        );
    }
    // A value error inside a record nested in records: the pointer names the pending keys.
    for text in [
        "{\"b\":{\"y\":[1,{\"z\":NaN}],\"x\":1},\"a\":[2]}",
        "{\"b\":{\"y\":[1,{\"z\":NaN}],\"x\":1},\"a\":[Infinity]}",
        "[{\"k\\u0041\":{\"q\":[NaN]}},{\"k\":NaN}]",
    ] {
        check(text.as_bytes(), &mut counts);
    }
    assert!(
        counts[0] > 100 && counts[1] > 100 && counts[2] > 100,
        "{counts:?}"
    );
}

/// The split one pass's outcome (`canonicalize_split_from`, the helper's first guess at the
/// first comma from `from`, any part taken, its guesses made first or on its own thread):
/// what the writer holds since its last restart, and whether the main reader took the
/// helper's part.
fn split_pass(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    early: bool,
    from: usize,
    helper_first: bool,
    steal_from: Option<usize>,
) -> (Result<Vec<u8>, String>, PartsTaken) {
    let mut out = Recording::default();
    // Objects put in order by moving their text, by splicing it, or by either as large
    // as they are (`stream/splice.rs`), in turn.
    let plan = Plan {
        from,
        min_part: 1,
        helper_first,
        moved_max: [MOVED_MAX, 0, 24][from % 3],
        steal_from,
    };
    let result = canonicalize_split_from(text, options, profile, &mut out, early, plan);
    let taken = result.as_ref().copied().unwrap_or_default();
    (outcome(result.map(drop), out.bytes), taken)
}

/// The one pass on two threads (`stream/split.rs`) with the helper starting at every place
/// of generated and mutated documents, in every profile, NaN setting and depth limit in
/// turn: the bytes and errors are the two-step path's, and parts are taken often.
#[test]
fn split_anywhere_equals_parse_then_write() {
    let mut rng = Rng(61);
    let mut combos = Vec::new();
    for profile in [Profile::Python, Profile::PythonStrict, Profile::Jcs] {
        for allow_nan in [false, true] {
            for max_depth in [256, 4] {
                combos.push((profile, allow_nan, max_depth));
            }
        }
    }
    let (mut runs, mut taken, mut several) = (0usize, 0usize, 0usize);
    let heads_before = resumed();
    for k in 0..600 {
        let mut text = String::new();
        gen(&mut rng, 0, &mut text);
        let text = if k % 3 == 2 {
            mutate(&mut rng, text.as_bytes())
        } else {
            text.into_bytes()
        };
        for from in 0..text.len() {
            let (profile, allow_nan, max_depth) = combos[(k + from) % combos.len()];
            let options = ParseOptions {
                max_depth,
                allow_nan,
            };
            let want = two_step(&text, &options, profile);
            let early = (k + from) % 2 == 0;
            // On two threads now and then: the same outcome, whoever is first.
            for helper_first in [true, false] {
                if !helper_first && (k + from) % 5 != 0 {
                    continue;
                }
                let (got, was_taken) =
                    split_pass(&text, &options, profile, early, from, helper_first, None);
                assert_eq!(
                    got,
                    want,
                    "split from {from}, early={early}, helper_first={helper_first}, {profile} \
                     allow_nan={allow_nan} max_depth={max_depth} on {:?}",
                    String::from_utf8_lossy(&text)
                );
                if helper_first {
                    runs += 1;
                    taken += was_taken.parts;
                    several += usize::from(was_taken.parts > 1);
                }
            }
        }
    }
    // The helper's part is taken at thousands of places (not everywhere: half the documents
    // are one scalar, and a comma in a string, a part with an error, a place after the last
    // comma take none). The runs are deterministic (the helper guesses first), so this count
    // is too.
    assert!(taken > 1500, "{taken} parts taken in {runs} runs");
    // The helper goes on after a part, into the container around it: the main reader
    // takes several parts in many runs.
    assert!(
        several > 300,
        "several parts taken in {several} of {runs} runs"
    );
    // Without early writes, the helper's head is where the document began in many runs
    // (a part of the root's whose first member in key order is the root's first).
    let heads = resumed() - heads_before;
    assert!(
        heads > 50,
        "the head went on from in {heads} of {runs} runs"
    );
}

/// The main reader stealing from the helper (`stream/split.rs`): it reads from a comma in
/// the helper's stretch to the end of the text first, the helper takes those parts into its
/// own, and the main reader takes the helper's, with their offsets rebased. At every pair of
/// places of generated and mutated documents, in every profile: the bytes and errors are the
/// two-step path's, and the helper takes stolen parts often.
#[test]
fn split_with_stealing_anywhere_equals_parse_then_write() {
    let mut rng = Rng(67);
    let profiles = [Profile::Python, Profile::PythonStrict, Profile::Jcs];
    let (mut runs, mut stolen, mut both) = (0usize, 0usize, 0usize);
    for k in 0..200 {
        let mut text = String::new();
        gen(&mut rng, 0, &mut text);
        let text = if k % 4 == 3 {
            mutate(&mut rng, text.as_bytes())
        } else {
            text.into_bytes()
        };
        for from in 0..text.len() {
            let profile = profiles[(k + from) % profiles.len()];
            let options = ParseOptions {
                max_depth: if (k + from) % 4 == 0 { 4 } else { 256 },
                allow_nan: (k + from) % 2 == 0,
            };
            let want = two_step(&text, &options, profile);
            // A few places to steal from, after the helper's first guess.
            for steal in
                [1, 2, 3].map(|n| from + rng.below((text.len() - from) as u64 / n + 1) as usize)
            {
                let early = (k + steal) % 2 == 0;
                let (got, taken) =
                    split_pass(&text, &options, profile, early, from, true, Some(steal));
                assert_eq!(
                    got,
                    want,
                    "split from {from}, stolen from {steal}, early={early}, {profile} \
                     {options:?} on {:?}",
                    String::from_utf8_lossy(&text)
                );
                runs += 1;
                stolen += taken.stolen;
                both += usize::from(taken.stolen > 0 && taken.parts > 0);
            }
        }
    }
    // Deterministic (everything is read on this thread, in turn), so these counts are too.
    assert!(stolen > 400, "{stolen} stolen parts taken in {runs} runs");
    assert!(
        both > 300,
        "a part holding stolen parts taken in {both} of {runs} runs"
    );
}

/// A document of the `escapes` shape of scripts/bench-fingerprint: its first member in the
/// text (`messages`) is the last in key order, the helper reads a glossary of shuffled keys
/// (the first in key order) and the lines. The helper's head holds `{` and the glossary, the
/// main reader goes on from it, and the bytes are the two-step path's; on two threads too,
/// whether or not the head is in time to be used.
#[test]
fn the_helpers_head_begins_a_document_whose_first_member_it_read() {
    let messages: Vec<String> = (0..30_000)
        .map(|i| format!("{{\"from\":\"u{i}\",\"text\":\"caf\\u00e9 {i}\"}}"))
        .collect();
    let glossary: Vec<String> = (0..20_000)
        .map(|i| {
            let k = (i * 7_919) % 20_000;
            format!("\"w{k:05}\":\"\\u00fc{k}\"")
        })
        .collect();
    let lines: Vec<String> = (0..5_000).map(|i| format!("\"line {i}\"")).collect();
    let text = format!(
        "{{\"messages\":[{}],\"glossary\":{{{}}},\"lines\":[{}]}}",
        messages.join(","),
        glossary.join(","),
        lines.join(",")
    );
    assert!(reads_in_parallel(text.len()), "{} bytes", text.len());
    let options = ParseOptions::default();
    let want = two_step(text.as_bytes(), &options, Profile::Python);
    assert!(want.is_ok());
    for (from, heads) in [
        (text.len() / 2, 1),
        (text.len() / 10, 1),
        (text.len() - 100, 0),
    ] {
        let before = resumed();
        let mut out = Recording::default();
        let plan = Plan {
            from,
            min_part: 16 * 1024,
            helper_first: true,
            moved_max: MOVED_MAX,
            steal_from: None,
        };
        let result = canonicalize_split_from(
            text.as_bytes(),
            &options,
            Profile::Python,
            &mut out,
            false,
            plan,
        );
        assert_eq!(outcome(result.map(drop), out.bytes), want, "from {from}");
        assert_eq!(resumed() - before, heads, "from {from}");
    }
    for _ in 0..5 {
        let mut out = Recording::default();
        let result =
            canonicalize_parallel_headed(text.as_bytes(), &options, Profile::Python, &mut out);
        assert_eq!(outcome(result, out.bytes), want);
    }
}

/// Large documents split as `canonicalize_early_parallel` splits them (from the middle, a
/// part of at least a quarter of the rest): the part is taken for a state's hosts in order
/// or not, an array of records and a top-level array, and what breaks the seam (a duplicate
/// key across it, nesting too deep, a value without a canonical form, an error) gives the
/// two-step path's outcome.
#[test]
fn large_documents_split_in_the_middle() {
    let record = |i: usize| {
        format!(
            "{{\"ip\":\"10.0.{}.{}\",\"ports\":[22,{i}],\"risk\":0.{i}5}}",
            i / 256 % 256,
            i % 256
        )
    };
    let map = |keys: &[usize]| {
        let members: Vec<String> = keys
            .iter()
            .map(|&i| format!("\"host-{i:06}\":{}", record(i)))
            .collect();
        format!(
            "{{\"step\":1,\"hosts\":{{{}}},\"seed\":2}}",
            members.join(",")
        )
    };
    let n = 20_000;
    let in_order: Vec<usize> = (0..n).collect();
    let reversed: Vec<usize> = (0..n).rev().collect();
    let root_map = |keys: &[usize]| {
        let members: Vec<String> = keys
            .iter()
            .map(|&i| format!("\"host-{i:06}\":{}", record(i)))
            .collect();
        format!("{{{}}}", members.join(","))
    };
    // A key of the first half again in the second: in keys in order (the object turns out
    // of order at the seam) and reversed (its keys were checked as they came).
    let mut repeated = in_order.clone();
    repeated[n * 3 / 4] = n / 4;
    let mut reversed_repeated = reversed.clone();
    reversed_repeated[n * 3 / 4] = reversed[n / 4];
    // The last host gets a member three arrays deep: six levels in all, which the helper reads
    // within a limit of 5 (it starts two levels down) and the main reader refuses.
    let deep_in_part = map(&in_order).replacen("}},\"seed\"", ",\"z\":[[[1]]]}},\"seed\"", 1);
    let records: Vec<String> = (0..n).map(record).collect();
    let numbers: Vec<String> = (0..100_000).map(|i| format!("{i}.5")).collect();
    // How many parts the helper's reading gives when it guesses first: one for the
    // container around the middle, one more for each container around that one whose rest
    // is long enough, none where the seam breaks.
    let two_lists = format!(
        "{{\"numbers\":[{}],\"rows\":[{}]}}",
        numbers.join(","),
        records[..n / 4].join(",")
    );
    let cases = [
        (map(&in_order), 1),
        (map(&reversed), 1),
        (map(&repeated), 0),
        (map(&reversed_repeated), 0),
        (root_map(&in_order), 1),
        (root_map(&reversed), 1),
        (format!("{{\"rows\":[{}]}}", records.join(",")), 1),
        (format!("[{}]", numbers.join(",")), 1),
        (format!("[{},NaN,0]", numbers.join(",")), 0),
        (format!("[{},[1,]]", numbers.join(",")), 0),
        (deep_in_part, 1),
        // The rest of the numbers, then the rows.
        (two_lists, 2),
    ];
    for (case, (text, splits)) in cases.into_iter().enumerate() {
        let from = text.len() / 2;
        let min_part = (text.len() - from) / 4;
        for (profile, max_depth) in [
            (Profile::Python, 256),
            (Profile::Jcs, 256),
            (Profile::Python, 5),
        ] {
            let options = ParseOptions {
                max_depth,
                allow_nan: false,
            };
            let want = two_step(text.as_bytes(), &options, profile);
            for (early, helper_first) in [(true, true), (false, true), (true, false)] {
                let mut out = Recording::default();
                let plan = Plan {
                    from,
                    min_part,
                    helper_first,
                    moved_max: if early { MOVED_MAX } else { 0 },
                    steal_from: None,
                };
                let result = canonicalize_split_from(
                    text.as_bytes(),
                    &options,
                    profile,
                    &mut out,
                    early,
                    plan,
                );
                let taken = result.as_ref().map_or(0, |t| t.parts);
                let got = outcome(result.map(drop), out.bytes);
                let head = String::from_utf8_lossy(&text.as_bytes()[..60]);
                assert_eq!(
                    got, want,
                    "{profile} max_depth={max_depth} early={early} on {head}"
                );
                // Whether the part is taken depends on the threads' timing, but for a helper
                // that guessed first.
                if max_depth == 256 && helper_first {
                    assert_eq!(
                        taken, splits,
                        "case {case}, {profile} early={early} on {head}"
                    );
                }
            }
            let mut out = Recording::default();
            let result = canonicalize_early_parallel(text.as_bytes(), &options, profile, &mut out);
            assert_eq!(outcome(result, out.bytes), want, "parallel, {profile}");
            let mut plain = Vec::new();
            let result = canonicalize_parallel(text.as_bytes(), &options, profile, &mut plain);
            assert_eq!(
                outcome(result, plain),
                want,
                "parallel, not early, {profile}"
            );
        }
    }
}

/// A large object whose keys come in order until its last ones: the one pass finds a
/// duplicate among them when the object closes or an error ends the document (in one pass
/// over them; the search compared every pair before, and took seconds at 100,000 members,
/// hours at these sizes), with and without a duplicate, on one thread and two.
#[test]
fn a_large_object_out_of_order_at_its_end() {
    let n = 300_000;
    let members: Vec<String> = (0..n).map(|i| format!("\"k{i:07}\":{i}")).collect();
    let body = members.join(",");
    // Out of order at the end; a duplicate there; a duplicate and then an error in the same
    // object (the duplicate, which came first, is the error).
    for last in [
        "\"a\":0",
        "\"k0000000\":1",
        "\"k0000001\":[1,2]",
        "\"a\":0,\"k0000002\":1,\"z\":]",
    ] {
        let text = format!("{{\"m\":{{{body},{last}}},\"b\":1}}");
        let options = ParseOptions::default();
        let want = two_step(text.as_bytes(), &options, Profile::Python);
        assert_eq!(
            one_pass(text.as_bytes(), &options, Profile::Python),
            want,
            "{last}"
        );
        let mut out = Recording::default();
        let result =
            canonicalize_early_parallel(text.as_bytes(), &options, Profile::Python, &mut out);
        assert_eq!(outcome(result, out.bytes), want, "parallel, {last}");
        assert!(reads_in_parallel(text.len()), "{} bytes", text.len());
        let mut plain = Vec::new();
        let result = canonicalize_parallel(text.as_bytes(), &options, Profile::Python, &mut plain);
        assert_eq!(outcome(result, plain), want, "parallel, not early, {last}");
    }
}

/// Large objects (from 64 members, sorted by their keys' first 8 bytes and then, where
/// those are the same, by whole keys) against the two-step path: keys that share their
/// first 8 bytes or more, keys shorter than 8 bytes that differ only by a NUL (`\u0000`) at
/// their end (the same zero-padded 8 bytes), non-ASCII and astral keys (whose UTF-16 order
/// JCS uses), a duplicate now and then, in shuffled order, on one thread and two.
#[test]
fn large_objects_sorted_by_key_prefixes() {
    const STEMS: &[&str] = &[
        "",
        "ab",
        "agent-00",
        "agent-001",
        "z",
        "\\u00e9t\\u00e9",
        "\\ud83d\\ude00",
        "\u{e9}",
        "\\u0000",
    ];
    const TAILS: &[&str] = &["", "\\u0000", "0", "1", "\\u0000\\u0000", "x", "\u{1f600}"];
    let mut rng = Rng(64);
    let mut duplicates = 0;
    for round in 0..300 {
        let n = 64 + rng.below(200) as usize;
        let mut keys: Vec<String> = Vec::new();
        while keys.len() < n {
            let key = format!(
                "{}{}{}",
                rng.pick(STEMS),
                rng.pick(TAILS),
                if rng.below(3) == 0 {
                    String::new()
                } else {
                    rng.below(1000).to_string()
                }
            );
            let fresh = !keys.contains(&key);
            if fresh || rng.below(400) == 0 {
                duplicates += usize::from(!fresh);
                keys.push(key);
            }
        }
        let members: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| format!("\"{k}\":{i}"))
            .collect();
        let text = format!("{{\"m\":{{{}}},\"r\":{round}}}", members.join(","));
        let options = ParseOptions::default();
        for profile in [Profile::Python, Profile::Jcs] {
            let want = two_step(text.as_bytes(), &options, profile);
            assert_eq!(one_pass(text.as_bytes(), &options, profile), want, "{text}");
            let from = text.len() / 2 + round % 3;
            let (split, _) = split_pass(text.as_bytes(), &options, profile, true, from, true, None);
            assert_eq!(split, want, "split, {text}");
        }
    }
    // The duplicate branch ran, and not in every object.
    assert!((5..250).contains(&duplicates), "{duplicates}");
}
