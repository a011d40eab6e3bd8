//! A child process that answers one line per request, watched so it can never hang lockstep.
//!
//! Two threads per child: one reads stdout into whole lines (refusing any line over the size
//! limit before it is buffered whole) and hands them over a bounded channel, so a request waits
//! with `recv_timeout` and a hung child is a timeout, not a hang; one drains stderr into a ring
//! of its last lines, so the child never blocks on a full stderr pipe and every error can quote
//! what it said last. The child is killed and reaped on every fault and on drop.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Longest stderr line kept (bytes); the rest of a longer line is dropped.
const STDERR_LINE_MAX: usize = 2000;

/// What the stdout reader hands over.
enum ReadEvent {
    Line(Vec<u8>),
    Eof,
    TooLong,
    Failed(io::Error),
}

/// Why a request got no answer line.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The child closed stdout (it exited or crashed); its exit status if it could be had.
    Exited(Option<ExitStatus>),
    TimedOut(Duration),
    /// A line longer than the limit (bytes).
    TooLong(usize),
    /// Writing the request or reading the answer failed.
    Io(String),
    /// A line arrived that no request asked for.
    Unrequested,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Exited(Some(status)) => {
                write!(f, "the process ended ({status}) without answering")
            }
            Fault::Exited(None) => write!(f, "the process closed its stdout without answering"),
            Fault::TimedOut(d) => write!(f, "no answer within {}", show_duration(*d)),
            Fault::TooLong(limit) => {
                write!(f, "the answer is longer than the limit of {limit} bytes")
            }
            Fault::Io(e) => write!(f, "i/o error talking to the process: {e}"),
            Fault::Unrequested => write!(f, "the process sent a line no request asked for"),
        }
    }
}

pub(crate) fn show_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

/// The last lines a child wrote to stderr.
#[derive(Debug, Default)]
struct Ring {
    lines: VecDeque<String>,
    capacity: usize,
}

impl Ring {
    fn push(&mut self, line: &[u8]) {
        if self.capacity == 0 {
            return;
        }
        if self.lines.len() == self.capacity {
            self.lines.pop_front();
        }
        let mut text = String::from_utf8_lossy(line).into_owned();
        if line.len() >= STDERR_LINE_MAX {
            text.push_str(" [...]");
        }
        self.lines.push_back(text);
    }
}

/// A running child speaking one line per request.
pub(crate) struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<ReadEvent>,
    stderr: Arc<Mutex<Ring>>,
    stderr_done: Receiver<()>,
    max_line: usize,
    /// Set once stdout ended, so later requests fail at once.
    ended: bool,
}

impl Child {
    /// Starts `argv` (no shell) with extra environment variables.
    pub(crate) fn spawn(
        argv: &[String],
        env: &[(String, String)],
        max_line: usize,
        stderr_lines: usize,
    ) -> io::Result<Child> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command line"))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = command.spawn()?;
        let stdin = process.stdin.take();
        let stdout = process.stdout.take().expect("stdout was piped");
        let stderr = process.stderr.take().expect("stderr was piped");

        // Capacity 1: a child that floods lines nobody asked for holds at most two of them in
        // memory (one queued, one being read), each within the size limit.
        let (tx, lines) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("lockstep-child-stdout".into())
            .spawn(move || read_lines(stdout, max_line, tx))?;

        let ring = Arc::new(Mutex::new(Ring {
            lines: VecDeque::new(),
            capacity: stderr_lines,
        }));
        let (done_tx, stderr_done) = mpsc::sync_channel(1);
        let sink = Arc::clone(&ring);
        thread::Builder::new()
            .name("lockstep-child-stderr".into())
            .spawn(move || {
                drain_stderr(stderr, &sink);
                let _ = done_tx.send(());
            })?;

        Ok(Child {
            process,
            stdin,
            lines,
            stderr: ring,
            stderr_done,
            max_line,
            ended: false,
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.process.id()
    }

    /// Writes one request (a whole line) in one write.
    pub(crate) fn send(&mut self, line: &[u8]) -> Result<(), Fault> {
        match self.lines.try_recv() {
            Ok(ReadEvent::Line(_)) => return Err(Fault::Unrequested),
            Ok(event) => return Err(self.end_fault(event)),
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => return Err(self.exited()),
        }
        if self.ended {
            return Err(self.exited());
        }
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Fault::Io("stdin closed".into()))?;
        match stdin.write_all(line).and_then(|()| stdin.flush()) {
            Ok(()) => Ok(()),
            // A dead child shows as a broken pipe: report how it ended instead.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(self.exited()),
            Err(e) => Err(Fault::Io(e.to_string())),
        }
    }

    /// Waits up to `timeout` for the next line.
    pub(crate) fn recv(&mut self, timeout: Duration) -> Result<Vec<u8>, Fault> {
        if self.ended {
            return Err(self.exited());
        }
        match self.lines.recv_timeout(timeout) {
            Ok(ReadEvent::Line(line)) => Ok(line),
            Ok(event) => Err(self.end_fault(event)),
            Err(RecvTimeoutError::Timeout) => Err(Fault::TimedOut(timeout)),
            Err(RecvTimeoutError::Disconnected) => Err(self.exited()),
        }
    }

    fn end_fault(&mut self, event: ReadEvent) -> Fault {
        match event {
            ReadEvent::TooLong => Fault::TooLong(self.max_line),
            ReadEvent::Failed(e) => Fault::Io(e.to_string()),
            ReadEvent::Eof | ReadEvent::Line(_) => self.exited(),
        }
    }

    /// The child closed stdout: give it a moment to exit so the fault can name its status.
    fn exited(&mut self) -> Fault {
        self.ended = true;
        Fault::Exited(self.wait_for(Duration::from_secs(2)))
    }

    /// The exit status if the child ends within about `patience` (polled every 5 ms; counted
    /// in polls rather than read from a clock).
    fn wait_for(&mut self, patience: Duration) -> Option<ExitStatus> {
        const POLL: Duration = Duration::from_millis(5);
        let polls = patience.as_millis() / POLL.as_millis();
        for i in 0..=polls {
            match self.process.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if i < polls => thread::sleep(POLL),
                _ => return None,
            }
        }
        None
    }

    /// Closes stdin (a polite child exits on end of input), waits up to `patience`, then kills.
    /// Returns the exit status if the child ended by itself.
    pub(crate) fn finish(&mut self, patience: Duration) -> Option<ExitStatus> {
        self.stdin = None;
        let status = self.wait_for(patience);
        if status.is_none() {
            self.kill();
        }
        status
    }

    /// Kills and reaps the child (no-op if it already ended).
    pub(crate) fn kill(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.process.try_wait() {
            let _ = self.process.kill();
        }
        let _ = self.process.wait();
        self.ended = true;
    }

    /// The last stderr lines. After the child ended, waits briefly for the drain thread to read
    /// the rest of the pipe, so a crash's own last words are included.
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        if self.ended {
            let _ = self.stderr_done.recv_timeout(Duration::from_millis(500));
        }
        match self.stderr.lock() {
            Ok(ring) => ring.lines.iter().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().lines.iter().cloned().collect(),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.ended {
            self.finish(Duration::from_millis(200));
        }
        self.kill();
    }
}

/// Reads `stdout` into lines of at most `max_line` bytes (newline excluded) and sends them.
/// Stops at end of file, on an error, on an over-long line, or when nobody listens.
fn read_lines(stdout: impl Read, max_line: usize, tx: SyncSender<ReadEvent>) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::new();
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(ReadEvent::Failed(e));
                return;
            }
        };
        if buf.is_empty() {
            let _ = tx.send(ReadEvent::Eof);
            return;
        }
        let (take, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if line.len() + take > max_line {
            let _ = tx.send(ReadEvent::TooLong);
            return;
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take + usize::from(complete));
        if complete {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let out = std::mem::take(&mut line);
            if tx.send(ReadEvent::Line(out)).is_err() {
                return;
            }
        }
    }
}

/// Copies stderr line by line into the ring until end of file.
fn drain_stderr(stderr: impl Read, ring: &Mutex<Ring>) {
    let mut reader = BufReader::with_capacity(1 << 14, stderr);
    let mut line = Vec::new();
    let push = |line: &mut Vec<u8>| {
        let mut ring = match ring.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        ring.push(line);
        line.clear();
    };
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) if !buf.is_empty() => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            _ => break,
        };
        let (take, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        let room = STDERR_LINE_MAX.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take + usize::from(complete));
        if complete {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            push(&mut line);
        }
    }
    if !line.is_empty() {
        push(&mut line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_and_limited() {
        let (tx, rx) = mpsc::sync_channel(8);
        read_lines(&b"ab\r\ncd\nxyz"[..], 10, tx);
        let got: Vec<_> = rx.iter().collect();
        assert!(matches!(&got[0], ReadEvent::Line(l) if l == b"ab"));
        assert!(matches!(&got[1], ReadEvent::Line(l) if l == b"cd"));
        assert!(matches!(got[2], ReadEvent::Eof));

        let (tx, rx) = mpsc::sync_channel(8);
        read_lines(&b"0123456789\n01234567890\n"[..], 10, tx);
        let got: Vec<_> = rx.iter().collect();
        assert!(matches!(&got[0], ReadEvent::Line(l) if l.len() == 10));
        assert!(matches!(got[1], ReadEvent::TooLong));
    }

    #[test]
    fn stderr_ring_keeps_the_last_lines() {
        let ring = Mutex::new(Ring {
            lines: VecDeque::new(),
            capacity: 2,
        });
        drain_stderr(&b"one\ntwo\nthree\nfour"[..], &ring);
        let ring = ring.into_inner().unwrap();
        assert_eq!(ring.lines, ["three", "four"]);
    }
}
