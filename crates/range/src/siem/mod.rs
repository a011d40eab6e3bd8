//! The SIEM: Windows Security and Sysmon events rendered as XML-ish text, a rolling buffer with
//! a visibility latency, a keyword correlator, and the fixed feature-hash encoder behind
//! `siem_embedding`.
//!
//! The encoder is fixed data (FNV-1a over tokens, 128 buckets, a sign bit), never fitted: the
//! same line gives the same vector in every process, which is what the Python original's
//! corpus-fitted encoder cannot promise.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::topology::push_ip;

/// Length of `siem_embedding`.
pub const EMBED_DIM: usize = 128;

/// One line of the SIEM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    /// Tick at which blue can see it (written tick + log latency).
    pub visible_at: u64,
    /// Host slot the line is about.
    pub host: u16,
    pub subnet: u8,
    /// 0 benign (green, background, incidents); otherwise 1 + the red action type that caused
    /// it (red type 0 is an action).
    pub source: u8,
    /// Serialised as a string (the step's `new_logs` refer to the line, not to its text).
    #[serde(with = "shared_str")]
    pub text: Arc<str>,
    /// The hashed tokens: bucket in the low 7 bits, sign in the top bit. Derived from `text`
    /// with the fixed encoder; kept so that an embedding costs no hashing.
    pub features: Features,
}

/// A line's features: up to [`Features::INLINE`] bytes (every rendered line's, in practice)
/// inside the line itself, so that a line costs no heap block for them (allocated when it is
/// written, freed cold when it is evicted) and an embedding reads them beside the line;
/// longer ones on the heap. Derefs to `[u8]`; serialises, compares and prints as the
/// `Vec<u8>` it was.
#[derive(Clone)]
pub enum Features {
    Inline(u8, [u8; Features::INLINE]),
    Heap(Vec<u8>),
}

impl Features {
    pub const INLINE: usize = 46;

    pub fn from_slice(f: &[u8]) -> Features {
        if f.len() <= Features::INLINE {
            let mut a = [0u8; Features::INLINE];
            a[..f.len()].copy_from_slice(f);
            Features::Inline(f.len() as u8, a)
        } else {
            Features::Heap(f.to_vec())
        }
    }
}

impl From<Vec<u8>> for Features {
    fn from(v: Vec<u8>) -> Features {
        if v.len() <= Features::INLINE {
            Features::from_slice(&v)
        } else {
            Features::Heap(v)
        }
    }
}

impl std::ops::Deref for Features {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Features::Inline(n, a) => &a[..*n as usize],
            Features::Heap(v) => v,
        }
    }
}

impl PartialEq for Features {
    fn eq(&self, other: &Features) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Features {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for Features {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Features {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Features, D::Error> {
        Vec::<u8>::deserialize(d).map(Features::from)
    }
}

/// Serde for `Arc<str>` as a plain string (what a `String` field wrote), without serde's
/// `rc` feature (which would change serde for the whole workspace).
pub(crate) mod shared_str {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(s: &Arc<str>, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Arc<str>, D::Error> {
        String::deserialize(de).map(Arc::from)
    }
}

/// Logger state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Siem {
    /// Unix seconds of tick 0: 2026-01-01T00:00:00Z minus a seeded offset.
    pub start_unix: i64,
    pub next_record: u64,
    /// Written, not yet visible (visible_at ascending).
    pub pending: VecDeque<LogLine>,
    /// The rolling buffer of visible lines, oldest first.
    pub buffer: VecDeque<LogLine>,
}

impl Siem {
    pub fn new(rng: &mut Rng, capacity: usize) -> Siem {
        let h = rng.range(0, 23) as i64;
        let m = rng.range(0, 59) as i64;
        let s = rng.range(0, 59) as i64;
        Siem {
            start_unix: lockstep::clock::DEFAULT_EPOCH_UNIX - (h * 3600 + m * 60 + s),
            next_record: 1,
            pending: VecDeque::new(),
            buffer: VecDeque::with_capacity(capacity),
        }
    }
}

/// The event templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    Logon4624,
    LogonFailed4625,
    ExplicitCreds4648,
    ProcessCreate4688,
    KerberosTgt4768,
    CredValidation4776,
    SysmonProcess1,
    SysmonNetwork3,
    SysmonProcessAccess10,
    SysmonDns22,
}

impl Template {
    fn event_id(self) -> u32 {
        match self {
            Template::Logon4624 => 4624,
            Template::LogonFailed4625 => 4625,
            Template::ExplicitCreds4648 => 4648,
            Template::ProcessCreate4688 => 4688,
            Template::KerberosTgt4768 => 4768,
            Template::CredValidation4776 => 4776,
            Template::SysmonProcess1 => 1,
            Template::SysmonNetwork3 => 3,
            Template::SysmonProcessAccess10 => 10,
            Template::SysmonDns22 => 22,
        }
    }

    fn sysmon(self) -> bool {
        matches!(
            self,
            Template::SysmonProcess1
                | Template::SysmonNetwork3
                | Template::SysmonProcessAccess10
                | Template::SysmonDns22
        )
    }
}

mod flavor;
mod text;
pub use flavor::{benign_image, Flavor, BENIGN, FALSE_POSITIVE, RED_FLAVOR};
pub use text::{render, render_line, render_line_into, render_line_reusing};

const USERS: [&str; 6] = [
    "alice",
    "bob",
    "svc_backup",
    "j.smith",
    "administrator",
    "helpdesk",
];
const DOMAINS: [&str; 5] = [
    "update.microsoft.com",
    "intranet.corp.local",
    "cdn.office.net",
    "dc01.corp.local",
    "pastebin.com",
];

/// Everything one rendered line needs.
pub struct LineCtx<'a> {
    pub unix: i64,
    pub record: u64,
    pub computer: u32,
    pub peer: u32,
    pub flavor: &'a Flavor,
    pub benign_image: Option<&'static str>,
    pub success: bool,
}

/// FNV-1a, 32 bit: the fixed hash of the encoder.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Byte classes of the tokeniser (one look-up per byte instead of four comparisons).
const SEP: u8 = 0;
const WORD: u8 = 1;
const DIGIT: u8 = 2;
const CLASS: [u8; 256] = {
    let mut t = [SEP; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_digit() {
            DIGIT
        } else if c.is_ascii_alphabetic() || c == b'.' || c == b'_' || c == b'-' {
            WORD
        } else {
            SEP
        };
        b += 1;
    }
    t
};

/// Tokens are maximal runs of `[A-Za-z0-9._-]`; tokens starting with a digit (timestamps,
/// addresses, ports, record ids) are skipped, so the encoding says what happened, not when,
/// except the number right after `EventID` (which event it is).
///
/// Every new SIEM line goes through here, so the scan is one pass: a token is hashed
/// ([`fnv1a`], inlined) while it is found, and a skipped one is only scanned.
pub fn features(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    push_features(text.as_bytes(), &mut out);
    out
}

/// Appends the features of `bytes` (tokenised alone, as [`features`] does) to `out`.
pub(crate) fn push_features(bytes: &[u8], out: &mut Vec<u8>) {
    let mut prev_event_id = false;
    let mut i = 0;
    while i < bytes.len() {
        if CLASS[bytes[i] as usize] == SEP {
            i += 1;
            continue;
        }
        let (end, feature, event_id) = next_token(bytes, i, prev_event_id);
        i = end;
        prev_event_id = event_id;
        if let Some(f) = feature {
            out.push(f);
        }
    }
}

/// The token of `bytes` starting at `start` (not a separator): where it ends, its feature
/// unless it is skipped (digit-led, not right after `EventID`), and whether it is `EventID`.
/// A `const fn`, so that fixed text can be tokenised at compile time ([`Feats::of`]) by the
/// same code as the lines.
#[inline(always)]
const fn next_token(bytes: &[u8], start: usize, prev_event_id: bool) -> (usize, Option<u8>, bool) {
    let n = bytes.len();
    let mut i = start;
    if CLASS[bytes[i] as usize] == DIGIT && !prev_event_id {
        i += 1;
        while i < n && CLASS[bytes[i] as usize] != SEP {
            i += 1;
        }
        // A token starting with a digit is not `EventID`.
        return (i, None, false);
    }
    let mut h: u32 = 0x811c_9dc5;
    while i < n && CLASS[bytes[i] as usize] != SEP {
        h ^= bytes[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    let event_id = i - start == 7 && {
        let id = b"EventID";
        let mut k = 0;
        while k < 7 && bytes[start + k] == id[k] {
            k += 1;
        }
        k == 7
    };
    (
        i,
        Some(((h & 0x7f) as u8) | (((h >> 31) as u8) << 7)),
        event_id,
    )
}

/// The features of a fixed piece of text, computed at compile time (`const { Feats::of(..) }`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Feats {
    buf: [u8; 8],
    len: usize,
}

impl Feats {
    /// [`features`] of `text`, which has at most 8 tokens (more fails to compile).
    pub(crate) const fn of(text: &str) -> Feats {
        let bytes = text.as_bytes();
        let mut out = Feats {
            buf: [0; 8],
            len: 0,
        };
        let mut prev_event_id = false;
        let mut i = 0;
        while i < bytes.len() {
            if CLASS[bytes[i] as usize] == SEP {
                i += 1;
                continue;
            }
            let (end, feature, event_id) = next_token(bytes, i, prev_event_id);
            i = end;
            prev_event_id = event_id;
            if let Some(f) = feature {
                assert!(
                    out.len < out.buf.len(),
                    "a fixed piece has at most 8 tokens"
                );
                out.buf[out.len] = f;
                out.len += 1;
            }
        }
        out
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Adds the signed token counts of `features` into `acc`.
pub fn accumulate(acc: &mut [f32; EMBED_DIM], features: &[u8]) {
    for &f in features {
        let v = if f & 0x80 != 0 { -1.0 } else { 1.0 };
        acc[(f & 0x7f) as usize] += v;
    }
}

/// Scales to unit L2 norm (sqrt is correctly rounded, so this is portable).
pub fn normalise(acc: &mut [f32; EMBED_DIM]) {
    let norm: f32 = acc.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in acc.iter_mut() {
            *x /= norm;
        }
    }
}

/// Correlator stages: a host climbs one stage when a visible line about it contains one of
/// the next stage's keywords. Pure string matching, no randomness.
pub const STAGES: [(&str, &[&str]); 4] = [
    ("discovery", &["nmap.exe", "nltest.exe"]),
    (
        "execution",
        &[
            "powershell.exe",
            "rundll32.exe",
            "PSEXESVC.exe",
            "Rubeus.exe",
            "WINWORD.EXE",
        ],
    ),
    (
        "credential_access",
        &["lsass.exe", "whoami.exe", "kerberoast", "schtasks.exe"],
    ),
    (
        "impact",
        &[
            "vssadmin.exe",
            "rclone.exe",
            "modbus_write.exe",
            "wevtutil.exe",
            "SenseService",
        ],
    ),
];

/// The keyword of stage `stage` found in `text`, if any.
pub fn stage_match(stage: u8, text: &str) -> Option<&'static str> {
    let (_, words) = STAGES.get(stage as usize)?;
    words.iter().copied().find(|w| text.contains(w))
}

/// The `[INCIDENT]` line raised when a host reaches `stage` (1-based).
pub fn incident_text(unix: i64, stage: u8, host: u32, keyword: &str) -> String {
    let mut s = String::with_capacity(120);
    let _ = write!(
        s,
        "[INCIDENT] {} stage={} name={} host=",
        lockstep::clock::format_rfc3339_millis(unix, 0),
        stage,
        STAGES[stage as usize - 1].0
    );
    push_ip(&mut s, host);
    let _ = write!(s, " trigger={keyword}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::R_DUMP_LSASS;

    /// `Features`, inline or on the heap, derefs, compares, serialises and prints as the
    /// `Vec<u8>` it is made from, at every length around the inline capacity.
    #[test]
    fn features_behave_as_the_vec() {
        for n in 0..=2 * Features::INLINE + 3 {
            let v: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            let (a, b) = (Features::from_slice(&v), Features::from(v.clone()));
            assert_eq!(matches!(a, Features::Inline(..)), n <= Features::INLINE);
            assert_eq!((&*a, &*b), (&v[..], &v[..]));
            assert_eq!(a, Features::Heap(v.clone()));
            assert_eq!(format!("{a:?}"), format!("{v:?}"));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::to_string(&a).unwrap(), json);
            let back: Features = serde_json::from_str(&json).unwrap();
            assert_eq!(&*back, &v[..]);
            let mut w = v.clone();
            w.push(1);
            assert_ne!(a, Features::from(w));
        }
    }

    #[test]
    fn fnv_reference_values() {
        // Published FNV-1a 32 test vectors.
        assert_eq!(fnv1a(b""), 0x811c9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn features_skip_numbers_and_keep_words() {
        let f = features("<Data Name=\"Image\">nmap.exe</Data> 10.0.0.1 2026-01-01T00");
        // Data, Name, Image, nmap.exe, Data; numbers skipped.
        assert_eq!(f.len(), 5);
        assert_eq!(f[0], f[4]);
        let g = features("<EventID>4624</EventID>");
        assert_eq!(g.len(), 3);
    }

    /// The tokeniser as first written (a closure per byte, hashing each token after finding
    /// it): what [`features`] must equal.
    fn features_reference(text: &str) -> Vec<u8> {
        let bytes = text.as_bytes();
        let mut out = Vec::new();
        let mut prev_event_id = false;
        let is_tok = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-';
        let mut i = 0;
        while i < bytes.len() {
            if !is_tok(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && is_tok(bytes[i]) {
                i += 1;
            }
            let tok = &bytes[start..i];
            let after_id = std::mem::replace(&mut prev_event_id, tok == b"EventID");
            if tok[0].is_ascii_digit() && !after_id {
                continue;
            }
            let h = fnv1a(tok);
            out.push(((h & 0x7f) as u8) | (((h >> 31) as u8) << 7));
        }
        out
    }

    #[test]
    fn features_equal_the_reference_tokeniser() {
        // Pieces that exercise every branch: `EventID` followed by digits (kept) or by a word,
        // digit-led tokens (skipped), separators, non-ASCII (a separator byte by byte).
        let pieces = [
            "EventID",
            "EventID4624",
            "4624",
            "0",
            "10.0.0.1",
            "2026-01-01T00:00:00.000Z",
            "nmap.exe",
            "a",
            "_",
            "-",
            ".",
            "Data",
            "Name",
            " ",
            "<",
            ">",
            "=",
            "\"",
            "/",
            "é",
            "€",
            "日本",
            "\u{1f600}",
            "\n",
            "\t",
            "EventIDs",
            "eventid",
            "x9",
            "9x",
        ];
        let mut rng = Rng::new(7, "features-test");
        let mut cases = vec![String::new(), "EventID".into(), "EventID 4624".into()];
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..rng.range(0, 40) {
                s.push_str(pieces[rng.range(0, pieces.len() as u32 - 1) as usize]);
            }
            cases.push(s);
        }
        // Real lines, as the range renders them.
        let flavors = RED_FLAVOR.iter().chain([&BENIGN, &FALSE_POSITIVE]);
        for (k, flavor) in flavors.cycle().take(400).enumerate() {
            let image = (k % 3 == 0).then(|| benign_image(&mut rng));
            let ctx = LineCtx {
                unix: lockstep::clock::DEFAULT_EPOCH_UNIX + 977 * k as i64,
                record: k as u64,
                computer: crate::topology::ip(10, 0, (k % 7) as u8, 5),
                peer: crate::topology::ip(192, 168, 1, 20),
                flavor,
                benign_image: image,
                success: k % 2 == 0,
            };
            cases.push(render(&ctx, &mut Rng::new(k as u64, "siem")));
        }
        for text in &cases {
            assert_eq!(features(text), features_reference(text), "{text:?}");
        }
    }

    #[test]
    fn render_is_xml_and_seeded() {
        let ctx = LineCtx {
            unix: lockstep::clock::DEFAULT_EPOCH_UNIX,
            record: 7,
            computer: crate::topology::ip(10, 0, 0, 5),
            peer: crate::topology::ip(192, 168, 1, 20),
            flavor: &RED_FLAVOR[R_DUMP_LSASS],
            benign_image: None,
            success: true,
        };
        let a = render(&ctx, &mut Rng::new(1, "siem"));
        let b = render(&ctx, &mut Rng::new(1, "siem"));
        assert_eq!(a, b);
        assert!(a.starts_with("<Event><System><Provider Name="), "{a}");
        assert!(a.contains("2026-01-01T00:00:00.000Z"), "{a}");
        assert!(a.contains("<Computer>10.0.0.5</Computer>"), "{a}");
        assert!(a.ends_with("</EventData></Event>"));
    }

    #[test]
    fn correlator_stages_in_order() {
        assert_eq!(stage_match(0, "x nmap.exe y"), Some("nmap.exe"));
        assert_eq!(stage_match(0, "vssadmin.exe"), None);
        assert_eq!(stage_match(3, "vssadmin.exe delete"), Some("vssadmin.exe"));
        assert_eq!(stage_match(4, "anything"), None);
    }
}
