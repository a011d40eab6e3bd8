"""Env instances of a lockstep/2 child: on the main thread, and the parallel check's each on a
thread of its own.

The main thread reads every request. A request for an instance of the main thread runs there
and then, in order: the audit, the same-seed, other-seed and interleaved checks all step their
instances on that one thread, as a thread-bound env requires (BrowserGym's process-global sync
Playwright answers only on the thread that started it). An instance created with ``"thread":
true`` (lockstep asks so for the parallel check's instances, when the upgrade granted
``"threads"``) runs every call on its own thread: the main thread queues its requests and goes
on reading, so requests to two such instances run at once (as far as the GIL lets them,
docs/protocol.md), and their answers go out as they finish, each with its request's id.
"""

import collections
import threading
import traceback

from . import wire


def error_reply(exc):
    """The ``ok: false`` reply (without its id) for an exception of the env."""
    return wire.dumps(
        {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        }
    )


def run_job(job, instance):
    """The reply text of ``job(instance)``, or of the exception it raised."""
    try:
        return job(instance)
    except Exception as exc:  # noqa: BLE001 - every env failure is answered, not fatal
        return error_reply(exc)


class Sender:
    """Writes whole answer lines to the protocol stream, one thread at a time."""

    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()

    def send(self, text):
        data = text.encode("utf-8") + b"\n"
        with self.lock:
            self.out.write(data)
            self.out.flush()

    def reply(self, rid, reply):
        # Every reply echoes its request's id, so a stray or lost line is caught at once.
        self.send('{"id":' + rid + "," + reply[1:])


class Slot:
    """One env instance of the main thread: its number and its env (``None`` until built, or
    if that failed)."""

    def __init__(self, number, served):
        self.number = number
        self.served = served


class Pool:
    """The instances of a lockstep/2 child. ``threads`` (the upgrade granted ``"threads"``)
    lets :meth:`add` give an instance a thread of its own; without it every instance is of the
    main thread."""

    def __init__(self, sender, threads):
        self.sender = sender
        self.threads = threads
        self.instances = {}
        self._cond = threading.Condition()
        self._busy = 0

    def add(self, number, served=None, own_thread=False):
        """Adds an instance; on a thread of its own when asked and granted. Returns whether it
        got one."""
        if own_thread and self.threads:
            instance = _Threaded(number, served, self)
            instance.start()
        else:
            instance = Slot(number, served)
        self.instances[number] = instance
        return isinstance(instance, _Threaded)

    def submit(self, number, rid, job):
        """Runs ``job`` on the instance's thread: now, on the main thread, or queued on its own."""
        instance = self.instances[number]
        if not isinstance(instance, _Threaded):
            self.sender.reply(rid, run_job(job, instance))
            return
        with self._cond:
            self._busy += 1
            instance.jobs.append((rid, job))
            self._cond.notify_all()

    def remove(self, number):
        """Forgets the instance; a thread of its own ends after the requests queued on it."""
        instance = self.instances.pop(number)
        if isinstance(instance, _Threaded):
            with self._cond:
                instance.jobs.append(None)
                self._cond.notify_all()

    def wait_idle(self):
        """Returns once every request queued on an instance's thread has been answered."""
        with self._cond:
            while self._busy:
                self._cond.wait()

    def after_fork(self):
        """In a forked child only the forking (main) thread survives: every instance of a
        thread of its own gets a new thread holding the same env, and the pool a fresh lock
        (the old one's waiters are gone)."""
        self._cond = threading.Condition()
        for instance in self.instances.values():
            if isinstance(instance, _Threaded):
                instance.start()

    def close_all(self):
        """End of input: every instance is closed on its own thread."""
        threads = []
        for instance in self.instances.values():
            if isinstance(instance, _Threaded):
                with self._cond:
                    instance.jobs.append("end")
                    self._cond.notify_all()
                threads.append(instance.thread)
            elif instance.served is not None:
                instance.served.close()
        for thread in threads:
            thread.join()

    def _next(self, instance):
        """The next job of ``instance``'s thread: ``(rid, job)``, ``None`` (closed) or ``"end"``."""
        with self._cond:
            while not instance.jobs:
                self._cond.wait()
            return instance.jobs.popleft()

    def _answered(self, rid, reply):
        self.sender.reply(rid, reply)
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()


class _Threaded(Slot):
    """An instance of a :class:`Pool` with a thread of its own, which runs every call of it."""

    def __init__(self, number, served, pool):
        super().__init__(number, served)
        self.jobs = collections.deque()
        self.thread = None
        self._pool = pool

    def start(self):
        self.thread = threading.Thread(target=self._run, name=f"lockstep-instance-{self.number}", daemon=True)
        self.thread.start()
        return self.thread

    def _run(self):
        pool = self._pool
        while True:
            item = pool._next(self)
            if item is None:
                return
            if item == "end":
                if self.served is not None:
                    self.served.close()
                return
            rid, job = item
            pool._answered(rid, run_job(job, self))
