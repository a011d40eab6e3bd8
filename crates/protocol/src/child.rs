//! A child process that answers one line per request, watched so it can never hang lockstep.
//!
//! On Unix the calling thread reads stdout itself: it waits with poll(2) on the pipe for at
//! most the rest of the request's timeout, reads into one reusable buffer and splits lines
//! there, refusing any line over the size limit before more than the limit is buffered. A
//! reader thread handing lines over a channel would cost every step a second cross-CPU wake-up
//! (the child's answer wakes the reader, the reader wakes the caller), which on a virtual
//! machine is tens of microseconds; polling on the calling thread leaves only the child's. On
//! other platforms a reader thread and `recv_timeout` give the same guarantees, slower.
//!
//! One thread per child drains stderr into a ring of its last lines, so the child never blocks
//! on a full stderr pipe and every error can quote what it said last. A hung child is a
//! timeout, never a hang; the child is killed and reaped on every fault and on drop.
//!
//! On Unix the child leads its own process group, and ending it ends the whole group: a
//! grandchild it forked (a server, a shell's background job) inherits the pipes and would
//! otherwise keep stdout open after the child died and outlive lockstep. While waiting for an
//! answer lockstep also looks at the child itself every [`EXIT_POLL`], so a child that exits
//! while such a grandchild holds its stdout is reported by its exit status at once, not after
//! the whole request timeout.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::ops::Range;
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use std::time::Instant;

use lockstep::private_dirs::{self, PrivateDirs};

/// Longest stderr line kept (bytes); the rest of a longer line is dropped.
const STDERR_LINE_MAX: usize = 2000;

/// How often a wait for an answer checks whether the child itself has exited. An answer that
/// arrives is read at once whatever this is; it only bounds how late an exit is noticed when
/// a grandchild keeps stdout open.
pub(crate) const EXIT_POLL: Duration = Duration::from_millis(50);

/// How stdout is read: on the calling thread where poll(2) exists, by a thread elsewhere.
#[cfg(unix)]
type Stdout = PipeLines<std::process::ChildStdout>;
#[cfg(not(unix))]
type Stdout = ThreadLines;

/// Why stdout gave no line.
#[derive(Debug)]
pub(crate) enum Stop {
    /// End of file; also every call after any other stop.
    Eof,
    TooLong,
    Failed(io::Error),
    TimedOut,
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
    /// `None` while a [`Reader`] has it out (several requests in flight, see [`Reader`]).
    stdout: Option<Stdout>,
    stderr: Arc<Mutex<Ring>>,
    stderr_done: Receiver<()>,
    max_line: usize,
    /// Set once stdout ended, so later requests fail at once.
    ended: bool,
    /// The child's private directories, removed after it ended (dropped after `process`).
    _dirs: Option<Arc<PrivateDirs>>,
}

impl Child {
    /// Starts `argv` (no shell) with extra environment variables.
    /// With `dirs`, the child runs in those private directories (see
    /// [`lockstep::private_dirs`]): relative paths of `argv` that exist here are made absolute,
    /// and so is a `PYTHONPATH` of `env`.
    pub(crate) fn spawn(
        argv: &[String],
        env: &[(String, String)],
        dirs: Option<Arc<PrivateDirs>>,
        max_line: usize,
        stderr_lines: usize,
    ) -> io::Result<Child> {
        let caller_dir = std::env::current_dir()?;
        let argv: Vec<String> = match &dirs {
            Some(_) => argv
                .iter()
                .map(|a| private_dirs::absolute_arg(a, &caller_dir))
                .collect(),
            None => argv.to_vec(),
        };
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command line"))?;
        let mut command = Command::new(program);
        command.args(args);
        if let Some(dirs) = &dirs {
            dirs.apply(&mut command, true);
        }
        for (k, v) in env {
            if dirs.is_some() && k == "PYTHONPATH" {
                command.env(
                    k,
                    private_dirs::python_path_from(Some(v.as_ref()), &caller_dir),
                );
            } else {
                command.env(k, v);
            }
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt as _;
            // Its own group, so that ending the child ends what it forked (see the module doc).
            command.process_group(0);
        }
        let mut process = command.spawn()?;
        let stdin = process.stdin.take();
        let stdout = process.stdout.take().expect("stdout was piped");
        let stderr = process.stderr.take().expect("stderr was piped");

        let stdout = Stdout::new(stdout, max_line)?;

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
            stdout: Some(stdout),
            stderr: ring,
            stderr_done,
            max_line,
            ended: false,
            _dirs: dirs,
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.process.id()
    }

    /// Writes one request (a whole line) in one write.
    pub(crate) fn send(&mut self, line: &[u8]) -> Result<(), Fault> {
        if self.ended {
            return Err(self.exited());
        }
        let waiting = match self.stdout.as_mut() {
            Some(stdout) => stdout.waiting(),
            None => Ok(false),
        };
        match waiting {
            Ok(true) => return Err(Fault::Unrequested),
            Ok(false) => {}
            Err(stop) => return Err(self.stop_fault(stop, Duration::ZERO)),
        }
        self.write_line(line)
    }

    /// Writes one request while others may be unanswered: a line already waiting on stdout
    /// may be their answer, so it is not taken for a stray one.
    pub(crate) fn send_pipelined(&mut self, line: &[u8]) -> Result<(), Fault> {
        if self.ended {
            return Err(self.exited());
        }
        self.write_line(line)
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), Fault> {
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

    /// Waits up to `timeout` for the next line (newline and a `\r` before it excluded); the
    /// line borrows the reader's buffer until the next call.
    ///
    /// The wait is cut into slices of [`EXIT_POLL`]; between slices the child is looked at, and
    /// a child that has exited (while something it forked keeps stdout open) is a
    /// [`Fault::Exited`] with its status, its whole process group ended.
    pub(crate) fn recv(&mut self, timeout: Duration) -> Result<&[u8], Fault> {
        if self.ended {
            return Err(self.exited());
        }
        let Some(mut stdout) = self.stdout.take() else {
            return Err(Fault::Io("stdout is being read by another request".into()));
        };
        // No deadline when `timeout` is too large to add to the clock: wait without end.
        let deadline = monotonic_now().checked_add(timeout);
        let outcome = loop {
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(monotonic_now())
            });
            match stdout.next_line(left.min(EXIT_POLL)) {
                Ok(range) => break Ok(range),
                Err(Stop::TimedOut) if left > EXIT_POLL => {
                    if let Some(fault) = self.exit_fault() {
                        break Err(fault);
                    }
                }
                Err(stop) => break Err(self.stop_fault(stop, timeout)),
            }
        };
        let stdout = self.stdout.insert(stdout);
        outcome.map(|range| stdout.line(range))
    }

    /// Takes stdout out, so that one thread can wait for a line without holding what guards
    /// the child, while others send their requests ([`Reader`]); `None` while another has it.
    pub(crate) fn take_reader(&mut self) -> Option<Reader> {
        self.stdout.take().map(Reader)
    }

    /// Gives back what [`Child::take_reader`] took.
    pub(crate) fn put_reader(&mut self, reader: Reader) {
        self.stdout = Some(reader.0);
    }

    /// The fault when the child itself has exited (it is then killed with its group), else
    /// `None`: looked at between slices of a wait, as [`Child::recv`] does.
    pub(crate) fn exit_fault(&mut self) -> Option<Fault> {
        if let Ok(Some(status)) = self.process.try_wait() {
            self.kill();
            return Some(Fault::Exited(Some(status)));
        }
        None
    }

    /// The fault for a [`Reader`]'s stop (`timeout` is the request's, for the message).
    pub(crate) fn stop_fault(&mut self, stop: Stop, timeout: Duration) -> Fault {
        match stop {
            Stop::TooLong => Fault::TooLong(self.max_line),
            Stop::Failed(e) => Fault::Io(e.to_string()),
            Stop::TimedOut => Fault::TimedOut(timeout),
            Stop::Eof => self.exited(),
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

    /// Kills the child's whole process group and reaps the child (the group even when the
    /// child itself already ended: what it forked goes with it).
    pub(crate) fn kill(&mut self) {
        self.stdin = None;
        #[cfg(unix)]
        if let Ok(pgid) = libc::pid_t::try_from(self.process.id()) {
            // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
            // The group id is the child's pid, which cannot be reused while the group has a
            // member or the child is unreaped.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        if let Ok(None) = self.process.try_wait() {
            let _ = self.process.kill();
        }
        let _ = self.process.wait();
        self.ended = true;
    }

    /// The last stderr lines. After the child ended, waits for the drain thread to read the
    /// rest of the pipe, so a crash's own last words are included. The pipe closes when the
    /// last process holding it ends (the group was killed), so this is quick; the bound only
    /// covers a grandchild that escaped the group and keeps the pipe open, and is generous so
    /// that a starved drain thread on a loaded machine still delivers the words.
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        if self.ended {
            let _ = self.stderr_done.recv_timeout(Duration::from_secs(5));
        }
        match self.stderr.lock() {
            Ok(ring) => ring.lines.iter().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().lines.iter().cloned().collect(),
        }
    }
}

/// A child's stdout, out of the child while one waiting thread reads it: several requests
/// to one child can then be in flight, each thread sending its own while another waits for
/// the next line (`lockstep/2` with `"threads": true`, docs/protocol.md).
pub(crate) struct Reader(Stdout);

impl Reader {
    /// The next line, waiting at most `slice` (newline and a `\r` before it excluded).
    pub(crate) fn next_line(&mut self, slice: Duration) -> Result<&[u8], Stop> {
        let range = self.0.next_line(slice)?;
        Ok(self.0.line(range))
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

/// The next line in `buf[start..end]` (without its newline and a `\r` before it) and where
/// the bytes after its newline start, or that the pending bytes are already over `max_line`
/// (counted with the `\r`, as the thread reader does). `scanned` bytes after `start` are known
/// to hold no newline; it is advanced so that no byte is searched twice.
#[cfg(unix)]
fn find_line(
    buf: &[u8],
    start: usize,
    end: usize,
    scanned: &mut usize,
    max_line: usize,
) -> Option<Result<(Range<usize>, usize), Stop>> {
    let from = start + *scanned;
    match buf[from..end].iter().position(|&b| b == b'\n') {
        Some(i) => {
            let newline = from + i;
            *scanned = 0;
            if newline - start > max_line {
                return Some(Err(Stop::TooLong));
            }
            let stop = if newline > start && buf[newline - 1] == b'\r' {
                newline - 1
            } else {
                newline
            };
            Some(Ok((start..stop, newline + 1)))
        }
        None => {
            *scanned = end - start;
            (end - start > max_line).then_some(Err(Stop::TooLong))
        }
    }
}

/// The monotonic clock, read only to bound how long a request waits (as `recv_timeout` does
/// inside): an elapsed time never reaches a result, a report or an error message, which name
/// the configured timeout.
#[allow(clippy::disallowed_methods)]
pub(crate) fn monotonic_now() -> Instant {
    Instant::now()
}

/// Lines read from a pipe on the calling thread: poll(2) with the time left, then one read
/// into a buffer that is reused for every line and never holds more than `max_line + 1` bytes
/// of an unfinished line.
#[cfg(unix)]
struct PipeLines<R> {
    src: R,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Bytes after `start` already searched for a newline.
    scanned: usize,
    max_line: usize,
    /// Set at end of file and on every other stop except a timeout.
    finished: bool,
}

#[cfg(unix)]
impl<R: Read + std::os::unix::io::AsRawFd> PipeLines<R> {
    /// Size of the first buffer; it grows (up to `max_line + 1`) only for longer lines.
    const FIRST_BUFFER: usize = 1 << 16;

    fn new(src: R, max_line: usize) -> io::Result<Self> {
        let size = Self::FIRST_BUFFER.min(max_line.saturating_add(1));
        Ok(PipeLines {
            src,
            buf: vec![0; size],
            start: 0,
            end: 0,
            scanned: 0,
            max_line,
            finished: false,
        })
    }

    fn line(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// The next whole line, waiting up to `timeout` for it.
    fn next_line(&mut self, timeout: Duration) -> Result<Range<usize>, Stop> {
        if self.finished {
            return Err(Stop::Eof);
        }
        // No deadline when `timeout` is too large to add to the clock: wait without end.
        let deadline = monotonic_now().checked_add(timeout);
        loop {
            if let Some(found) = self.take_line() {
                return found;
            }
            self.fill(deadline)?;
        }
    }

    /// Whether a whole line is already waiting (read without blocking).
    fn waiting(&mut self) -> Result<bool, Stop> {
        if self.finished {
            return Err(Stop::Eof);
        }
        let mut scanned = self.scanned;
        match find_line(&self.buf, self.start, self.end, &mut scanned, self.max_line) {
            Some(Ok(_)) => return Ok(true),
            Some(Err(stop)) => return Err(self.stopped(stop)),
            None => self.scanned = scanned,
        }
        match self.fill(Some(monotonic_now())) {
            Ok(()) => {}
            Err(Stop::TimedOut) => return Ok(false),
            Err(stop) => return Err(stop),
        }
        let mut scanned = self.scanned;
        match find_line(&self.buf, self.start, self.end, &mut scanned, self.max_line) {
            Some(Ok(_)) => Ok(true),
            Some(Err(stop)) => Err(self.stopped(stop)),
            None => {
                self.scanned = scanned;
                Ok(false)
            }
        }
    }

    fn stopped(&mut self, stop: Stop) -> Stop {
        if !matches!(stop, Stop::TimedOut) {
            self.finished = true;
        }
        stop
    }

    /// Takes the next whole line out of the buffer, if there is one.
    fn take_line(&mut self) -> Option<Result<Range<usize>, Stop>> {
        match find_line(
            &self.buf,
            self.start,
            self.end,
            &mut self.scanned,
            self.max_line,
        )? {
            Ok((line, next)) => {
                self.start = next;
                Some(Ok(line))
            }
            Err(stop) => Some(Err(self.stopped(stop))),
        }
    }

    /// Reads once, waiting with poll(2) until `deadline` for something to read.
    fn fill(&mut self, deadline: Option<Instant>) -> Result<(), Stop> {
        self.make_room();
        loop {
            let wait_ms = match deadline {
                None => -1,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(monotonic_now());
                    // Rounded up, so poll never returns just before the deadline.
                    let ms = left.as_nanos().div_ceil(1_000_000);
                    libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
                }
            };
            let mut fds = libc::pollfd {
                fd: self.src.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `fds` is one valid pollfd that lives across the call, and the count is 1.
            let ready = unsafe { libc::poll(&mut fds, 1, wait_ms) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.stopped(Stop::Failed(e)));
            }
            if ready == 0 {
                if deadline.is_some_and(|d| monotonic_now() >= d) {
                    return Err(Stop::TimedOut);
                }
                continue;
            }
            if fds.revents & libc::POLLNVAL != 0 {
                let e = io::Error::other("stdout is not an open pipe");
                return Err(self.stopped(Stop::Failed(e)));
            }
            // Readable, closed (POLLHUP) or failed (POLLERR): read says which.
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(self.stopped(Stop::Eof)),
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(self.stopped(Stop::Failed(e))),
            }
        }
    }

    /// Leaves free space after `end`: drops consumed bytes, then grows the buffer (up to
    /// `max_line + 1`, enough to tell an over-long line) when an unfinished line fills it.
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // Only an unfinished line of at most `max_line` bytes is left here (a longer one
            // was refused), so the cap is above the current size.
            let cap = self.max_line.saturating_add(1);
            let size = self.buf.len().saturating_mul(2).min(cap).max(self.end + 1);
            self.buf.resize(size, 0);
        }
    }
}

/// What the stdout reader thread hands over.
#[cfg_attr(unix, allow(dead_code))]
enum ReadEvent {
    Line(Vec<u8>),
    Eof,
    TooLong,
    Failed(io::Error),
}

/// Lines read by a thread and handed over a channel, for platforms without poll(2).
#[cfg_attr(unix, allow(dead_code))]
struct ThreadLines {
    lines: Receiver<ReadEvent>,
    /// The last line handed out.
    line: Vec<u8>,
    finished: bool,
}

#[cfg_attr(unix, allow(dead_code))]
impl ThreadLines {
    fn new(stdout: impl Read + Send + 'static, max_line: usize) -> io::Result<Self> {
        // Capacity 1: a child that floods lines nobody asked for holds at most two of them in
        // memory (one queued, one being read), each within the size limit.
        let (tx, lines) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("lockstep-child-stdout".into())
            .spawn(move || read_lines(stdout, max_line, tx))?;
        Ok(ThreadLines {
            lines,
            line: Vec::new(),
            finished: false,
        })
    }

    fn line(&self, range: Range<usize>) -> &[u8] {
        &self.line[range]
    }

    fn next_line(&mut self, timeout: Duration) -> Result<Range<usize>, Stop> {
        if self.finished {
            return Err(Stop::Eof);
        }
        match self.lines.recv_timeout(timeout) {
            Ok(ReadEvent::Line(line)) => {
                self.line = line;
                Ok(0..self.line.len())
            }
            Ok(event) => Err(self.stopped(event)),
            Err(RecvTimeoutError::Timeout) => Err(Stop::TimedOut),
            Err(RecvTimeoutError::Disconnected) => Err(self.stopped(ReadEvent::Eof)),
        }
    }

    fn waiting(&mut self) -> Result<bool, Stop> {
        if self.finished {
            return Err(Stop::Eof);
        }
        match self.lines.try_recv() {
            Ok(ReadEvent::Line(_)) => Ok(true),
            Ok(event) => Err(self.stopped(event)),
            Err(TryRecvError::Empty) => Ok(false),
            Err(TryRecvError::Disconnected) => Err(self.stopped(ReadEvent::Eof)),
        }
    }

    fn stopped(&mut self, event: ReadEvent) -> Stop {
        self.finished = true;
        match event {
            ReadEvent::TooLong => Stop::TooLong,
            ReadEvent::Failed(e) => Stop::Failed(e),
            ReadEvent::Eof | ReadEvent::Line(_) => Stop::Eof,
        }
    }
}

/// Reads `stdout` into lines of at most `max_line` bytes (newline excluded) and sends them.
/// Stops at end of file, on an error, on an over-long line, or when nobody listens.
#[cfg_attr(unix, allow(dead_code))]
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

    #[cfg(unix)]
    fn pipe(
        max_line: usize,
    ) -> (
        std::os::unix::net::UnixStream,
        PipeLines<std::os::unix::net::UnixStream>,
    ) {
        let (writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
        (writer, PipeLines::new(reader, max_line).unwrap())
    }

    #[cfg(unix)]
    fn next(lines: &mut PipeLines<std::os::unix::net::UnixStream>) -> Result<Vec<u8>, Stop> {
        lines
            .next_line(Duration::from_secs(5))
            .map(|range| lines.line(range).to_vec())
    }

    #[cfg(unix)]
    #[test]
    fn pipe_lines_are_split_and_limited() {
        let (mut w, mut lines) = pipe(10);
        w.write_all(b"ab\r\ncd\n\nxy").unwrap();
        assert_eq!(next(&mut lines).unwrap(), b"ab");
        assert!(matches!(lines.waiting(), Ok(true)), "cd is waiting");
        assert_eq!(next(&mut lines).unwrap(), b"cd");
        assert_eq!(next(&mut lines).unwrap(), b"");
        assert!(
            matches!(lines.waiting(), Ok(false)),
            "xy is not a whole line"
        );
        w.write_all(b"z\n0123456789\n0123456789\r\n").unwrap();
        assert_eq!(next(&mut lines).unwrap(), b"xyz");
        assert_eq!(next(&mut lines).unwrap(), b"0123456789");
        // Eleven bytes with the \r: over the limit, as the thread reader counts.
        assert!(matches!(next(&mut lines), Err(Stop::TooLong)));
        assert!(matches!(next(&mut lines), Err(Stop::Eof)), "stops for good");

        let (mut w, mut lines) = pipe(10);
        w.write_all(b"last\npartial").unwrap();
        drop(w);
        assert_eq!(next(&mut lines).unwrap(), b"last");
        assert!(matches!(next(&mut lines), Err(Stop::Eof)));
        assert!(matches!(lines.waiting(), Err(Stop::Eof)));
    }

    #[cfg(unix)]
    #[test]
    fn pipe_lines_time_out_and_recover() {
        let (mut w, mut lines) = pipe(100);
        w.write_all(b"half").unwrap();
        let got = lines.next_line(Duration::from_millis(30));
        assert!(matches!(got, Err(Stop::TimedOut)), "{got:?}");
        w.write_all(b" and half\n").unwrap();
        assert_eq!(next(&mut lines).unwrap(), b"half and half");
    }

    #[cfg(unix)]
    #[test]
    fn pipe_lines_grow_only_to_the_limit() {
        let max = 200_000;
        let (mut w, mut lines) = pipe(max);
        let writer = thread::spawn(move || {
            let mut long = vec![b'a'; 150_000];
            long.push(b'\n');
            long.extend(vec![b'b'; max + 50_000]);
            long.push(b'\n');
            let _ = w.write_all(&long);
        });
        assert_eq!(next(&mut lines).unwrap().len(), 150_000);
        assert!(matches!(next(&mut lines), Err(Stop::TooLong)));
        assert!(lines.buf.len() <= max + 1, "read no further than the limit");
        drop(lines);
        writer.join().unwrap();
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
