//! SHA-256 on a thread of its own, for large documents.
//!
//! Why: hashing 3 MB of canonical bytes takes about a fifth of `lockstep fingerprint`, and
//! SHA-256 of one stream cannot be split. With [`canonicalize_early`] most of a state's
//! canonical bytes are known before its text is read to the end, so a second thread can
//! hash them meanwhile. The bytes cross in pieces of [`PIECE`] bytes through a bounded
//! channel, and the emptied pieces come back to be filled again, so the memory in flight is
//! bounded and a 200 MB document costs no more than a 3 MB one.
//!
//! What comes after the root object closes (often all of it: a root whose first key is
//! read last, a large object put in key order) is hashed on the writer's own thread,
//! straight from the canonicaliser's buffers: handing it across as copies cost a copy of
//! every byte, two thread wake-ups a piece, and the other core's cache, with nothing left
//! to read meanwhile.
//!
//! It needs a core of its own: `lockstep::fingerprint::digest_text` uses it only where the
//! readers leave one free (docs/canonical-json.md, fourteenth round).
//!
//! [`canonicalize_early`]: lockstep_canon::canonicalize_early

use std::io;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use lockstep_canon::EarlyWrite;
use sha2::{Digest, Sha256};

/// Bytes handed to the hashing thread at a time. Small enough that the pieces in flight
/// (at most `QUEUED` + 2) stay in the allocator's reused heap: a fresh page costs more than
/// hashing it (`stream/splice.rs` in lockstep_canon says how much).
pub const PIECE: usize = 64 * 1024;

/// Pieces that may wait for the hashing thread; beyond them a write waits.
const QUEUED: usize = 4;

enum Message {
    Bytes(Vec<u8>),
    Restart,
}

/// An [`EarlyWrite`] that hashes on another thread. Restarting it (a guess of the
/// canonicaliser failed) starts the digest over.
pub struct BackgroundHashWriter {
    filling: Vec<u8>,
    /// `None` once the thread's digest was taken back ([`EarlyWrite::ending`]) or
    /// [`BackgroundHashWriter::finish_hex`] has taken it.
    to_hasher: Option<SyncSender<Message>>,
    emptied: Receiver<Vec<u8>>,
    hasher: Option<JoinHandle<Sha256>>,
    /// The digest so far, hashed on this thread since the document's end began.
    here: Option<Sha256>,
    /// Bytes written since the last restart.
    total: u64,
}

impl BackgroundHashWriter {
    /// Starts the hashing thread; fails only if the system cannot start a thread.
    pub fn new() -> io::Result<Self> {
        let (to_hasher, queue) = mpsc::sync_channel::<Message>(QUEUED);
        let (give_back, emptied) = mpsc::channel::<Vec<u8>>();
        let hasher = thread::Builder::new()
            .name("sha256".into())
            .spawn(move || {
                let mut sha = Sha256::new();
                for message in queue {
                    match message {
                        Message::Bytes(mut piece) => {
                            sha.update(&piece);
                            piece.clear();
                            // The writer may be gone already (it finished); then drop it.
                            let _ = give_back.send(piece);
                        }
                        Message::Restart => sha = Sha256::new(),
                    }
                }
                sha
            })?;
        Ok(BackgroundHashWriter {
            filling: Vec::with_capacity(PIECE),
            to_hasher: Some(to_hasher),
            emptied,
            hasher: Some(hasher),
            here: None,
            total: 0,
        })
    }

    /// The digest so far, from the hashing thread once it has hashed every piece sent.
    fn take_back(&mut self) -> io::Result<Sha256> {
        self.send_filling()?;
        // Closing the channel ends the thread's loop.
        drop(self.to_hasher.take());
        match self.hasher.take().map(JoinHandle::join) {
            Some(Ok(sha)) => Ok(sha),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Err(gone()),
        }
    }

    /// Bytes written since the last restart: the length of the canonical text hashed.
    pub fn bytes_written(&self) -> u64 {
        self.total
    }

    /// Waits for the hashing thread; the digest of everything written since the last
    /// restart, as 64 lowercase hex digits.
    pub fn finish_hex(mut self) -> io::Result<String> {
        let sha = match self.here.take() {
            Some(sha) => sha,
            None => self.take_back()?,
        };
        Ok(hex::encode(sha.finalize()))
    }

    fn send(&mut self, message: Message) -> io::Result<()> {
        match &self.to_hasher {
            Some(to_hasher) => to_hasher.send(message).map_err(|_| gone()),
            None => Err(gone()),
        }
    }

    fn send_filling(&mut self) -> io::Result<()> {
        if self.filling.is_empty() {
            return Ok(());
        }
        let next = self
            .emptied
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(PIECE));
        let full = std::mem::replace(&mut self.filling, next);
        self.send(Message::Bytes(full))
    }
}

impl Drop for BackgroundHashWriter {
    fn drop(&mut self) {
        // Not finished (an error ended the document): stop the thread, ignore its digest.
        drop(self.to_hasher.take());
        if let Some(hasher) = self.hasher.take() {
            let _ = hasher.join();
        }
    }
}

fn gone() -> io::Error {
    io::Error::other("the SHA-256 thread stopped")
}

impl io::Write for BackgroundHashWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        self.total += bytes.len() as u64;
        if let Some(sha) = &mut self.here {
            sha.update(bytes);
            return Ok(());
        }
        while !bytes.is_empty() {
            let room = PIECE - self.filling.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.filling.extend_from_slice(now);
            if self.filling.len() == PIECE {
                self.send_filling()?;
            }
            bytes = later;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl EarlyWrite for BackgroundHashWriter {
    fn restart(&mut self) -> io::Result<()> {
        self.filling.clear();
        self.total = 0;
        if let Some(sha) = &mut self.here {
            *sha = Sha256::new();
            return Ok(());
        }
        self.send(Message::Restart)
    }

    fn ending(&mut self) {
        if self.here.is_none() {
            // A thread that stopped is reported by the next write or by `finish_hex`.
            if let Ok(sha) = self.take_back() {
                self.here = Some(sha);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn digest_is_sha256_of_the_bytes_across_piece_boundaries() {
        let data = data(5 * PIECE + 123);
        for chunk in [1usize, 7, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE] {
            let mut w = BackgroundHashWriter::new().unwrap();
            for piece in data.chunks(chunk) {
                w.write_all(piece).unwrap();
            }
            assert_eq!(w.bytes_written(), data.len() as u64);
            let want = hex::encode(Sha256::digest(&data));
            assert_eq!(w.finish_hex().unwrap(), want, "chunk {chunk}");
        }
        let empty = BackgroundHashWriter::new().unwrap();
        assert_eq!(
            empty.finish_hex().unwrap(),
            hex::encode(Sha256::digest(b""))
        );
    }

    #[test]
    fn restart_forgets_everything_before_it() {
        let data = data(3 * PIECE + 5);
        // A restart with bytes still filling, and one after whole pieces went out.
        for before in [10, 2 * PIECE + 17] {
            let mut w = BackgroundHashWriter::new().unwrap();
            w.write_all(&data[..before]).unwrap();
            w.restart().unwrap();
            w.write_all(&data).unwrap();
            assert_eq!(w.bytes_written(), data.len() as u64);
            let want = hex::encode(Sha256::digest(&data));
            assert_eq!(w.finish_hex().unwrap(), want, "restart after {before}");
        }
    }

    #[test]
    fn the_end_hashed_here_continues_the_threads_digest() {
        let data = data(4 * PIECE + 77);
        // The end begins with bytes still filling, after whole pieces, and at once.
        for before in [0, 10, 2 * PIECE, 2 * PIECE + 17] {
            let mut w = BackgroundHashWriter::new().unwrap();
            w.write_all(&data[..before]).unwrap();
            w.ending();
            for piece in data[before..].chunks(PIECE / 3) {
                w.write_all(piece).unwrap();
            }
            assert_eq!(w.bytes_written(), data.len() as u64);
            let want = hex::encode(Sha256::digest(&data));
            assert_eq!(w.finish_hex().unwrap(), want, "ending after {before}");
        }
        // A restart after the end began (a guess that failed when the root closed).
        let mut w = BackgroundHashWriter::new().unwrap();
        w.write_all(&data[..PIECE + 3]).unwrap();
        w.ending();
        w.write_all(&data[..9]).unwrap();
        w.restart().unwrap();
        w.ending();
        w.write_all(&data).unwrap();
        assert_eq!(w.bytes_written(), data.len() as u64);
        assert_eq!(w.finish_hex().unwrap(), hex::encode(Sha256::digest(&data)));
    }

    #[test]
    fn canonicalize_early_into_it_gives_the_fingerprint() {
        let hosts: Vec<String> = (0..5000)
            .map(|i| {
                format!(
                    "\"h{i:05}\":{{\"os\":\"linux\",\"ip\":\"10.0.0.{}\"}}",
                    i % 256
                )
            })
            .collect();
        let text = format!("{{\"step\":1,\"hosts\":{{{}}}}}", hosts.join(","));
        let value = lockstep_canon::parse(text.as_bytes()).unwrap();
        for profile in [
            lockstep_canon::Profile::Python,
            lockstep_canon::Profile::Jcs,
        ] {
            let mut w = BackgroundHashWriter::new().unwrap();
            let options = lockstep_canon::ParseOptions::default();
            lockstep_canon::canonicalize_early(text.as_bytes(), &options, profile, &mut w).unwrap();
            let want = crate::fingerprint::fingerprint(&value, profile).unwrap();
            assert_eq!(w.finish_hex().unwrap(), want, "{profile}");
        }
    }
}
