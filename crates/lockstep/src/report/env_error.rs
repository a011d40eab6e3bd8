//! An environment error, read for its cause: which distinct errors a trial hit, where in the
//! user's own code each was raised, and which parts of the trial hit it.
//!
//! A trial's error text is its parts' errors one after another (the audit's, each check's),
//! each a line, then, for an external env, the child's Python traceback as indented lines
//! (`traceback (last lines):`, `  File "...", line N, in f`, the source line, caret lines,
//! the exception). An env that raises on every reset gives every part the same error, with
//! another pid and seed each time: 300 lines for one bug. Read here, it is one cause, its
//! frames in the user's code first (file:line, function, the line's text), and the parts that
//! hit it. The text itself stays whole in report.json.

/// One frame of a Python traceback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub file: String,
    pub line: u64,
    pub function: String,
    /// The source line, trimmed (empty when the traceback had none).
    pub code: String,
}

impl Frame {
    /// Code the user wrote: not the standard library, an installed package, lockstep's
    /// adapter or Python's frozen modules.
    pub fn is_users(&self) -> bool {
        let f = self.file.as_str();
        !(f.starts_with('<')
            || f.contains("/site-packages/")
            || f.contains("/dist-packages/")
            || f.contains("/lockstep_adapter/")
            || f.contains("/lib/python3"))
    }
}

/// One distinct error of a trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// What the env said (`KeyError: 'level-3'`), or the whole line for an error that is not
    /// the env's (a process that would not start).
    pub message: String,
    /// The request it answered (`reset`, `step 5`), when the line says.
    pub request: Option<String>,
    /// The traceback's frames, outermost first.
    pub frames: Vec<Frame>,
    /// The parts of the trial that hit it (`reset-contract audit`, `same check`, ...).
    pub hit_by: Vec<String>,
}

impl Cause {
    /// The frames in the user's code, innermost (where it was raised) first.
    pub fn users_frames(&self) -> Vec<&Frame> {
        self.frames.iter().rev().filter(|f| f.is_users()).collect()
    }

    /// What makes two causes the same error: the message and the frames, no pid, no seed.
    fn identity(&self) -> (String, Vec<Frame>) {
        (self.message.clone(), self.frames.clone())
    }
}

/// The distinct causes in a trial's error text, in the order first met.
pub fn causes(error: &str) -> Vec<Cause> {
    let mut out: Vec<Cause> = Vec::new();
    for part in parts(error) {
        let cause = read_part(&part);
        match out.iter_mut().find(|c| c.identity() == cause.identity()) {
            Some(seen) => {
                for h in cause.hit_by {
                    if !seen.hit_by.contains(&h) {
                        seen.hit_by.push(h);
                    }
                }
            }
            None => out.push(cause),
        }
    }
    out
}

/// What groups two trials' errors as one: their causes without pids, seeds or the parts.
pub fn signature(error: &str) -> String {
    causes(error)
        .iter()
        .map(|c| {
            let frames: Vec<String> = c
                .frames
                .iter()
                .map(|f| format!("{}:{}", f.file, f.line))
                .collect();
            format!("{} @ {}", c.message, frames.join(" < "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The error text cut into its parts: a line that is not indented and not the traceback's
/// heading starts one.
fn parts(error: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for line in error.lines() {
        let continues = line.starts_with(' ') || line.starts_with("traceback (last lines):");
        match out.last_mut() {
            Some(part) if continues => part.push(line),
            _ => out.push(vec![line]),
        }
    }
    out
}

fn read_part(lines: &[&str]) -> Cause {
    let head = lines.first().copied().unwrap_or_default();
    // `same check: same_seed: rollout 1: env failed ...`: the part is what precedes the
    // first colon.
    let hit_by = head
        .split(':')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let (request, message) = match head.rsplit_once(": the env failed: ") {
        Some((before, said)) => (request_of(before), said.trim().to_string()),
        None => (None, without_numbers(head)),
    };
    Cause {
        message,
        request,
        frames: frames(&lines[1..]),
        hit_by: vec![hit_by],
    }
}

/// `... (pid 22265): reset (seed 0)` -> `reset`; `...: step 5` -> `step 5`.
fn request_of(before: &str) -> Option<String> {
    let last = before.rsplit(": ").next()?.trim();
    let word = last.split(" (").next().unwrap_or(last).trim();
    (!word.is_empty()).then(|| word.to_string())
}

/// A line with pids and seeds taken out, so that one error on every seed reads the same.
fn without_numbers(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(" (pid ") {
        out.push_str(&rest[..at]);
        match rest[at..].find(')') {
            Some(end) => rest = &rest[at + end + 1..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The frames of traceback lines: `File "f", line N, in g`, then the source line.
fn frames(lines: &[&str]) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    let mut expect_code = false;
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("File \"") {
            let Some((file, rest)) = rest.split_once("\", line ") else {
                continue;
            };
            let (n, function) = rest.split_once(", in ").unwrap_or((rest, ""));
            out.push(Frame {
                file: file.to_string(),
                line: n.trim().parse().unwrap_or(0),
                function: function.trim().to_string(),
                code: String::new(),
            });
            expect_code = true;
        } else if expect_code {
            expect_code = false;
            let is_caret = !t.is_empty() && t.chars().all(|c| matches!(c, '^' | '~' | ' '));
            if !is_caret {
                if let Some(f) = out.last_mut() {
                    f.code = t.to_string();
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(check: &str, pid: u32, seed: u64) -> String {
        format!(
            "{check}: env process `python -m lockstep_adapter factory mine:make` (pid {pid}): reset (seed {seed}): the env failed: KeyError: 'level-3'
traceback (last lines):
    File \"/work/python/lockstep_adapter/server.py\", line 324, in _call
      return served.reset(request[\"seed\"], request.get(\"options\"))
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    File \"/home/me/mine.py\", line 12, in reset
      return self.load_level(), {{}}
             ^^^^^^^^^^^^^^^^^
    File \"/home/me/mine.py\", line 15, in load_level
      raise KeyError(\"level-3\")
  KeyError: 'level-3'"
        )
    }

    #[test]
    fn one_error_hit_by_every_part_is_one_cause_in_the_users_code() {
        let text = [
            part("reset-contract audit", 10, 0),
            part("same check", 10, 0),
            part("interleaved check", 11, 1),
        ]
        .join("\n");
        let c = causes(&text);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].message, "KeyError: 'level-3'");
        assert_eq!(c[0].request.as_deref(), Some("reset"));
        assert_eq!(
            c[0].hit_by,
            ["reset-contract audit", "same check", "interleaved check"]
        );
        let users = c[0].users_frames();
        assert_eq!(
            users
                .iter()
                .map(|f| (f.line, f.function.as_str(), f.code.as_str()))
                .collect::<Vec<_>>(),
            [
                (15, "load_level", "raise KeyError(\"level-3\")"),
                (12, "reset", "return self.load_level(), {}")
            ]
        );
        // Another seed and pid is the same error.
        assert_eq!(signature(&part("same check", 99, 4)), signature(&text));
    }

    #[test]
    fn an_error_without_a_traceback_is_its_line_without_pids() {
        let c = causes("same check: env process `x` (pid 7): cannot start: No such file");
        assert_eq!(
            c[0].message,
            "same check: env process `x`: cannot start: No such file"
        );
        assert!(c[0].frames.is_empty());
    }
}
