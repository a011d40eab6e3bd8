//! Fingerprints: SHA-256 of a value's canonical bytes, as lowercase hex.
//!
//! The canonical writer streams straight into the hasher through a small buffer
//! ([`HashWriter`]); no `Vec` of the whole document is ever built, so a state of any size
//! costs one pass and a fixed amount of memory. In the `python` profile the digest equals the
//! specification's `hashlib.sha256(json.dumps(state, sort_keys=True, separators=(',',
//! ':')).encode()).hexdigest()`.

use std::io;

use lockstep_canon::{CanonError, Document, ParseOptions, Profile, Value, WriteError};
use sha2::{Digest, Sha256};

use crate::background_hash::BackgroundHashWriter;

/// The only algorithm fingerprints use; recorded so a reader never has to guess.
pub const ALGORITHM: &str = "sha256";

/// A fingerprint with everything needed to recompute it: algorithm, profile and, when it was
/// taken under a reset contract, that contract's name and version (filled in by the
/// contract that takes it: this module knows profiles and bytes, not contracts).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    /// Always `"sha256"`.
    pub algorithm: String,
    /// 64 lowercase hex digits.
    pub digest: String,
    /// The canonical profile: `python`, `python-strict` or `jcs`.
    pub profile: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_version: Option<u32>,
}

/// An `io::Write` that feeds SHA-256 through a fixed buffer, so the writer's many small writes
/// (a comma, a key, a number) reach the hasher in large blocks.
pub struct HashWriter {
    hasher: Sha256,
    buffer: Box<[u8; HashWriter::CAPACITY]>,
    len: usize,
    total: u64,
}

impl HashWriter {
    const CAPACITY: usize = 16 * 1024;
    /// Writes from this long are hashed where they are, not copied into the buffer first:
    /// at a document's end the writer hands over its members' texts, read long before and
    /// no longer in this core's cache, and a copy of each cost more than the two calls into
    /// SHA-256 it saves (from 4 KiB to 256 bytes: the end of the `mixed` shape of
    /// scripts/bench-fingerprint spent 23% of its time in that copy; whole process 5% less
    /// time, docs/canonical-json.md, seventeenth round).
    const DIRECT: usize = 256;

    pub fn new() -> Self {
        HashWriter {
            hasher: Sha256::new(),
            buffer: Box::new([0; Self::CAPACITY]),
            len: 0,
            total: 0,
        }
    }

    /// Bytes hashed so far.
    pub fn bytes_written(&self) -> u64 {
        self.total
    }

    /// The digest of everything written, as 64 lowercase hex digits.
    pub fn finish_hex(mut self) -> String {
        self.hasher.update(&self.buffer[..self.len]);
        hex::encode(self.hasher.finalize())
    }
}

/// The one pass on two threads hands its helper a head of the same kind
/// (`lockstep_canon::Head`): the beginning of the document hashed on the helper's thread
/// while the main reader still reads, and taken back at the root's `}` when it was the
/// document's beginning.
impl lockstep_canon::EarlyWrite for HashWriter {
    fn restart(&mut self) -> io::Result<()> {
        *self = HashWriter::new();
        Ok(())
    }

    fn head(&self) -> Option<Box<dyn lockstep_canon::Head>> {
        Some(Box::new(HashWriter::new()))
    }

    fn resume(&mut self, head: Box<dyn lockstep_canon::Head>) -> bool {
        if self.total != 0 {
            return false;
        }
        match head.into_any().downcast::<HashWriter>() {
            Ok(head) => {
                *self = *head;
                true
            }
            Err(_) => false,
        }
    }
}

impl lockstep_canon::Head for HashWriter {
    fn restart(&mut self) {
        *self = HashWriter::new();
    }

    fn fresh(&self) -> Box<dyn lockstep_canon::Head> {
        Box::new(HashWriter::new())
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl Default for HashWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl io::Write for HashWriter {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.total += bytes.len() as u64;
        if bytes.len() <= Self::CAPACITY - self.len && bytes.len() < Self::DIRECT {
            self.buffer[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
            return Ok(());
        }
        self.hasher.update(&self.buffer[..self.len]);
        self.len = 0;
        if bytes.len() >= Self::DIRECT {
            // Long texts skip the copy (see `DIRECT`).
            self.hasher.update(bytes);
        } else {
            self.buffer[..bytes.len()].copy_from_slice(bytes);
            self.len = bytes.len();
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Inputs at least this long are hashed on a thread of their own while they are read
/// ([`crate::background_hash`]), where a core is free for it. Below it hardly anything could
/// go out early (a guess waits for a whole 64 KiB piece), so the thread (about 20 µs to start
/// and join on the 2-vCPU test machine) and the copy into pieces would not pay.
pub const BACKGROUND_HASH_BYTES: usize = 256 * 1024;

/// Which threads read a text and which one hashes its canonical bytes: one per core at
/// most, because a thread without a core of its own only takes the others' time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Threads {
    /// Read and hashed on the caller's thread.
    One,
    /// Read on the caller's thread, hashed on another while it is read (bytes handed over
    /// early, `lockstep_canon::canonicalize_early`).
    HashBeside,
    /// Read on two threads (`lockstep_canon::canonicalize_parallel_headed`), hashed on the
    /// caller's once the reading is done, but for the document's beginning where the helper
    /// read it whole (its [`lockstep_canon::Head`], hashed on the helper's thread): with two
    /// cores both read, and handing early bytes to a third thread measured 1-4% slower on
    /// every shape of scripts/bench-fingerprint (docs/canonical-json.md, fourteenth round).
    ReadOnTwo,
    /// Read on two threads and hashed on a third while they read.
    ReadOnTwoHashBeside,
}

impl Threads {
    /// The threads for a text of `len` bytes on a machine with `cores` cores.
    fn for_text(len: usize, cores: usize) -> Threads {
        let two_readers = lockstep_canon::reads_in_parallel(len);
        match cores {
            _ if len < BACKGROUND_HASH_BYTES => Threads::One,
            0 | 1 => Threads::One,
            2 if two_readers => Threads::ReadOnTwo,
            2 => Threads::HashBeside,
            _ if two_readers => Threads::ReadOnTwoHashBeside,
            _ => Threads::HashBeside,
        }
    }
}

/// The cores this process may run on, asked once: its CPU affinity (one system call), and
/// where that allows three or more, its cgroup's quota, which can only lower it
/// (`available_parallelism` reads several cgroup files: measured, 4% of the fingerprint of a
/// 3 MB state). Two CPUs under a quota of one are taken as two.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| match affinity() {
        Some(n @ 0..=2) => n.max(1),
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// How many CPUs this process may run on.
#[cfg(target_os = "linux")]
fn affinity() -> Option<usize> {
    // SAFETY: a zeroed `cpu_set_t` is an empty set, which `sched_getaffinity` fills in.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size is the set's own; pid 0 is this thread.
    let got = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    // SAFETY: the set was filled in (`got == 0`).
    (got == 0).then(|| unsafe { libc::CPU_COUNT(&set) } as usize)
}

#[cfg(not(target_os = "linux"))]
fn affinity() -> Option<usize> {
    None
}

/// The SHA-256 of the canonical bytes of the JSON `text` in `profile`, as lowercase hex,
/// and how many canonical bytes that was: in one pass, without a tree of the document
/// (`lockstep_canon::canonicalize`), on as many threads as there are cores for (a large
/// text's second half read by a helper, the hashing beside the reading: `Threads`).
pub fn digest_text(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
) -> Result<(String, u64), CanonError> {
    let threads = if text.len() < BACKGROUND_HASH_BYTES {
        Threads::One
    } else {
        Threads::for_text(text.len(), cores())
    };
    digest_text_on(text, options, profile, threads)
}

fn digest_text_on(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    threads: Threads,
) -> Result<(String, u64), CanonError> {
    if matches!(threads, Threads::HashBeside | Threads::ReadOnTwoHashBeside) {
        // A system that cannot start a thread still gets its digest, on this one.
        if let Ok(mut hasher) = BackgroundHashWriter::new() {
            if threads == Threads::HashBeside {
                lockstep_canon::canonicalize_early(text, options, profile, &mut hasher)?;
            } else {
                lockstep_canon::canonicalize_early_parallel(text, options, profile, &mut hasher)?;
            }
            let bytes = hasher.bytes_written();
            return Ok((hasher.finish_hex()?, bytes));
        }
    }
    let mut hasher = HashWriter::new();
    if threads == Threads::ReadOnTwo {
        lockstep_canon::canonicalize_parallel_headed(text, options, profile, &mut hasher)?;
    } else {
        lockstep_canon::canonicalize(text, options, profile, &mut hasher)?;
    }
    let bytes = hasher.bytes_written();
    Ok((hasher.finish_hex(), bytes))
}

/// The SHA-256 of a parsed [`Document`]'s canonical bytes in `profile`, as lowercase hex,
/// and how many canonical bytes that was; hashed on another thread while the bytes are
/// written when the document's text is large and there is a second core (the document is
/// written on one thread, so the hasher has a core of its own). For a
/// document read once to be hashed in several profiles, or read as well as hashed.
pub fn digest_document(
    doc: &Document<'_>,
    profile: Profile,
) -> Result<(String, u64), lockstep_canon::Error> {
    if doc.text().len() >= BACKGROUND_HASH_BYTES && cores() >= 2 {
        if let Ok(mut hasher) = BackgroundHashWriter::new() {
            doc.write(profile, &mut hasher)?;
            let bytes = hasher.bytes_written();
            return Ok((hasher.finish_hex()?, bytes));
        }
    }
    let mut hasher = HashWriter::new();
    doc.write(profile, &mut hasher)?;
    let bytes = hasher.bytes_written();
    Ok((hasher.finish_hex(), bytes))
}

/// The SHA-256 of `value`'s canonical bytes in `profile`, as lowercase hex.
pub fn fingerprint(value: &Value, profile: Profile) -> Result<String, WriteError> {
    let mut hasher = HashWriter::new();
    match lockstep_canon::write_value(value, profile, &mut hasher) {
        Ok(()) => Ok(hasher.finish_hex()),
        Err(lockstep_canon::Error::Value(e)) => Err(e),
        // HashWriter never fails; keep a message rather than panic if that ever changed.
        Err(lockstep_canon::Error::Io(e)) => Err(WriteError {
            pointer: String::new(),
            message: e.to_string(),
        }),
    }
}

/// A [`Fingerprint`] record of `value` in `profile`, outside any contract.
pub fn fingerprint_record(value: &Value, profile: Profile) -> Result<Fingerprint, WriteError> {
    Ok(Fingerprint {
        algorithm: ALGORITHM.to_owned(),
        digest: fingerprint(value, profile)?,
        profile: profile.name().to_owned(),
        contract: None,
        contract_version: None,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use lockstep_canon::{Map, Number};

    use super::*;

    fn fresh0() -> Value {
        let mut m = Map::new();
        m.insert("seed".into(), Value::from(0));
        m.insert("target".into(), Value::from(0));
        m.insert("cookies".into(), Value::Object(Map::new()));
        m.insert("visits".into(), Value::from(0));
        m.insert("cache".into(), Value::Null);
        Value::Object(m)
    }

    /// Pinned from CPython 3.11: `hashlib.sha256(json.dumps(fresh(0), sort_keys=True,
    /// separators=(',', ':')).encode()).hexdigest()` with the seed-000 `fresh`.
    const FRESH0_SHA256: &str = "883a3d08bbd807946dd5a3669440dec971af35a281fd0f3e15fb58c15eb08ac6";

    #[test]
    fn seed_000_fresh_state_matches_python_hashlib() {
        assert_eq!(
            fingerprint(&fresh0(), Profile::Python).unwrap(),
            FRESH0_SHA256
        );
        // And the hash is of exactly the canonical bytes.
        let bytes = lockstep_canon::to_vec(&fresh0(), Profile::Python).unwrap();
        assert_eq!(hex::encode(Sha256::digest(&bytes)), FRESH0_SHA256);
    }

    #[test]
    fn hash_writer_agrees_with_one_shot_sha256_across_buffer_boundaries() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let sizes = [
            1usize,
            63,
            255,
            256,
            257,
            4096,
            16 * 1024,
            16 * 1024 + 1,
            70_000,
        ];
        for chunk in sizes {
            let mut w = HashWriter::new();
            for piece in data.chunks(chunk) {
                w.write_all(piece).unwrap();
            }
            assert_eq!(w.bytes_written(), data.len() as u64);
            assert_eq!(
                w.finish_hex(),
                hex::encode(Sha256::digest(&data)),
                "chunk {chunk}"
            );
        }
        // Buffered and direct writes in turn, as a document's end hands them over (a comma,
        // then a member's text).
        for turn in 0..sizes.len() {
            let mut w = HashWriter::new();
            let (mut at, mut k) = (0, turn);
            while at < data.len() {
                let len = sizes[k % sizes.len()].min(data.len() - at);
                w.write_all(&data[at..at + len]).unwrap();
                (at, k) = (at + len, k + 1);
            }
            assert_eq!(
                w.finish_hex(),
                hex::encode(Sha256::digest(&data)),
                "turn {turn}"
            );
        }
    }

    #[test]
    fn records_name_algorithm_and_profile_and_refuse_values_without_a_form() {
        let record = fingerprint_record(&fresh0(), Profile::Python).unwrap();
        assert_eq!(record.algorithm, "sha256");
        assert_eq!(record.digest, FRESH0_SHA256);
        assert_eq!(record.profile, "python");
        assert_eq!(record.contract, None);
        let json =
            serde_json::to_string(&fingerprint_record(&fresh0(), Profile::Jcs).unwrap()).unwrap();
        assert!(
            json.starts_with(r#"{"algorithm":"sha256","digest":""#),
            "{json}"
        );
        assert!(!json.contains("contract"), "{json}");

        let nan = Value::Array(vec![Value::Number(Number::Float(f64::NAN))]);
        let err = fingerprint(&nan, Profile::Jcs).unwrap_err();
        assert_eq!(err.pointer, "/0");
        assert!(fingerprint(&nan, Profile::Python).is_ok());
    }

    #[test]
    fn a_document_digest_is_the_digest_of_its_text_on_either_side_of_the_thread_threshold() {
        let record =
            r#"{"os":"bsd","ip":"10.0.0.1","risk":0.25,"owner":"\u00e9quipe","load":[1.5,2]}"#;
        for hosts in [3usize, 4_000] {
            let members: Vec<String> = (0..hosts)
                .map(|i| format!(r#""host-{:05}":{record}"#, hosts - i))
                .collect();
            let text = format!(r#"{{"step":1,"hosts":{{{}}},"seed":7}}"#, members.join(","));
            assert_eq!(
                text.len() >= BACKGROUND_HASH_BYTES,
                hosts > 3,
                "both sides of the threshold"
            );
            let doc = Document::parse(text.as_bytes()).unwrap();
            for profile in [Profile::Python, Profile::Jcs] {
                let want = digest_text(text.as_bytes(), &ParseOptions::default(), profile).unwrap();
                assert_eq!(digest_document(&doc, profile).unwrap(), want, "{profile}");
            }
        }
        let nan = ParseOptions {
            allow_nan: true,
            ..ParseOptions::default()
        };
        let doc = Document::parse_with(b"{\"a\":[NaN]}", &nan).unwrap();
        match digest_document(&doc, Profile::Jcs) {
            Err(lockstep_canon::Error::Value(e)) => assert_eq!(e.pointer, "/a/0"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_thread_a_core_and_no_more() {
        use Threads::*;
        let (small, medium, large, huge) = (1000, 512 * 1024, 2 << 20, 100 << 20);
        let table = [
            (small, [One, One, One, One]),
            (medium, [One, One, HashBeside, HashBeside]),
            (large, [One, One, ReadOnTwo, ReadOnTwoHashBeside]),
            (huge, [One, One, HashBeside, HashBeside]),
        ];
        for (len, want) in table {
            for (cores, want) in [0, 1, 2, 8].into_iter().zip(want) {
                assert_eq!(
                    Threads::for_text(len, cores),
                    want,
                    "{len} bytes, {cores} cores"
                );
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cores_are_the_affinity_lowered_by_the_quota_only_from_three() {
        let affinity = affinity().expect("sched_getaffinity answers on Linux");
        let std = std::thread::available_parallelism().unwrap().get();
        // The quota can only lower the affinity's count.
        assert!(affinity >= std, "{affinity} {std}");
        let want = if affinity <= 2 { affinity } else { std };
        assert_eq!(cores(), want);
    }

    #[test]
    fn every_choice_of_threads_gives_the_same_digest() {
        // Keys out of order at the root (the early guess fails) and inside, over 1 MiB.
        let members: Vec<String> = (0..30_000)
            .map(|i| {
                format!(
                    r#""h{:05}":{{"ip":"10.0.{}.{}","r":0.{i}5}}"#,
                    30_000 - i,
                    i / 256 % 256,
                    i % 256
                )
            })
            .collect();
        let text = format!(
            r#"{{"z":1,"hosts":{{{}}},"a":[true,null]}}"#,
            members.join(",")
        );
        assert!(lockstep_canon::reads_in_parallel(text.len()));
        let options = ParseOptions::default();
        for profile in [Profile::Python, Profile::Jcs] {
            let want = {
                let mut hasher = HashWriter::new();
                lockstep_canon::canonicalize(text.as_bytes(), &options, profile, &mut hasher)
                    .unwrap();
                let bytes = hasher.bytes_written();
                (hasher.finish_hex(), bytes)
            };
            for threads in [
                Threads::One,
                Threads::HashBeside,
                Threads::ReadOnTwo,
                Threads::ReadOnTwoHashBeside,
            ] {
                let got = digest_text_on(text.as_bytes(), &options, profile, threads).unwrap();
                assert_eq!(got, want, "{threads:?}, {profile}");
            }
        }
    }

    /// The helper's head (`lockstep_canon::Head`) hashed on its thread, and the main reader's
    /// hasher going on from it: the digest and the byte count of one pass on one thread. The
    /// helper reads first here, so that its head is used whatever the scheduling.
    #[test]
    fn a_digest_that_goes_on_from_the_helpers_head_is_the_one_pass_digest() {
        let messages: Vec<String> = (0..30_000)
            .map(|i| format!(r#"{{"from":"u{i}","text":"caf\u00e9 {i}"}}"#))
            .collect();
        let glossary: Vec<String> = (0..20_000)
            .map(|i| format!(r#""w{:05}":"\u00fc{i}""#, (i * 7_919) % 20_000))
            .collect();
        let text = format!(
            r#"{{"messages":[{}],"glossary":{{{}}},"lines":["a","b"]}}"#,
            messages.join(","),
            glossary.join(",")
        );
        /// The hasher, counting the heads it went on from.
        struct Counting(HashWriter, usize);
        impl io::Write for Counting {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0.write(bytes)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        impl lockstep_canon::EarlyWrite for Counting {
            fn restart(&mut self) -> io::Result<()> {
                self.0.restart()
            }
            fn head(&self) -> Option<Box<dyn lockstep_canon::Head>> {
                self.0.head()
            }
            fn resume(&mut self, head: Box<dyn lockstep_canon::Head>) -> bool {
                let resumed = self.0.resume(head);
                self.1 += usize::from(resumed);
                resumed
            }
        }
        let options = ParseOptions::default();
        let want = digest_text_on(text.as_bytes(), &options, Profile::Python, Threads::One);
        let mut counting = Counting(HashWriter::new(), 0);
        let plan = lockstep_canon::Plan {
            from: text.len() / 2,
            min_part: 16 * 1024,
            helper_first: true,
            moved_max: lockstep_canon::MOVED_MAX,
            steal_from: None,
        };
        let split = lockstep_canon::canonicalize_split_from(
            text.as_bytes(),
            &options,
            Profile::Python,
            &mut counting,
            false,
            plan,
        );
        assert!(split.unwrap().parts >= 1);
        assert_eq!(counting.1, 1, "the head was gone on from once");
        let hasher = counting.0;
        let bytes = hasher.bytes_written();
        assert_eq!((hasher.finish_hex(), bytes), want.unwrap());
        // A hasher that was written to does not take a head.
        let mut written = HashWriter::new();
        io::Write::write_all(&mut written, b"{").unwrap();
        let head = lockstep_canon::EarlyWrite::head(&written).unwrap();
        assert!(!lockstep_canon::EarlyWrite::resume(&mut written, head));
    }
}
