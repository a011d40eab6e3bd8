"""Env instances of a lockstep/2 child: on the main thread, or each on a thread of its own.

Without threads (:class:`InlinePool`) the main thread reads each request and runs it, in
order. With threads (:class:`Pool`, when the upgrade asks for ``"threads": true``) every
instance has one thread that runs all its calls, and the threads take turns reading stdin:
whichever is idle reads the next request, runs it itself when it is for its own instance (so
one request at a time costs no hand-over between threads) and otherwise queues it on the
instance it names and goes back to waiting. Requests to two instances therefore run at once
(as far as the GIL lets them, docs/protocol.md), and their answers go out as they finish,
each with its request's id; one instance's requests run one at a time, in order, always on
its own thread.
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
    """One env instance: its number and its env (``None`` until built, or if that failed)."""

    def __init__(self, number, served):
        self.number = number
        self.served = served


class InlinePool:
    """The instances of a lockstep/2 child without threads: every call runs at once on the
    calling (main) thread, in request order."""

    threaded = False

    def __init__(self, sender):
        self.sender = sender
        self.instances = {}

    def add(self, number, served=None):
        self.instances[number] = Slot(number, served)

    def submit(self, number, rid, job):
        self.sender.reply(rid, run_job(job, self.instances[number]))

    def remove(self, number):
        del self.instances[number]

    def wait_idle(self):
        pass

    def after_fork(self):
        pass

    def close_all(self):
        for slot in self.instances.values():
            if slot.served is not None:
                slot.served.close()


class Pool:
    """The instances of a lockstep/2 child, each run by its own thread; the threads take
    turns reading requests (see the module doc). ``handle(line)`` routes one request line
    (it calls :meth:`submit` for an instance's request) and returns an exit code at end of
    input, else ``None``."""

    threaded = True

    def __init__(self, sender, inp, handle):
        self.sender = sender
        self.inp = inp
        self.handle = handle
        self.instances = {}
        self._threads = []
        self._cond = threading.Condition()
        self._reading = False
        self._ended = None
        self._busy = 0

    def add(self, number, served=None):
        instance = _Threaded(number, served, self)
        self.instances[number] = instance
        self._threads.append(instance.start())

    def submit(self, number, rid, job):
        with self._cond:
            self._busy += 1
            self.instances[number].jobs.append((rid, job))
            self._cond.notify_all()

    def remove(self, number):
        """Ends the instance's thread after the requests already queued on it."""
        with self._cond:
            self.instances.pop(number).jobs.append(None)
            self._cond.notify_all()

    def wait_idle(self):
        """Returns once every request handed to an instance has been answered."""
        with self._cond:
            while self._busy:
                self._cond.wait()

    def after_fork(self):
        """In a forked child only the forking thread survives: every other instance gets a
        new thread holding the same env, and the pool a fresh lock (the old one's waiters
        are gone)."""
        me = threading.current_thread()
        self._cond = threading.Condition()
        self._threads = [me]
        for instance in self.instances.values():
            if instance.thread is not me:
                self._threads.append(instance.start())

    def run(self):
        """Serves until end of input; returns the exit code."""
        joined = 0
        while True:
            with self._cond:
                if joined == len(self._threads):
                    return self._ended or 0
                thread = self._threads[joined]
            thread.join()
            joined += 1

    def _next(self, instance):
        """What ``instance``'s thread does next: a queued job, ``None`` (the instance was
        closed), ``"read"`` (its turn to read stdin), ``"end"`` (end of input) or ``"exit"``.

        The thread of a closed instance goes on reading requests while no instance is left
        (someone must read the next ``create``), and ends once there is one again."""
        with self._cond:
            while True:
                if instance.jobs:
                    return instance.jobs.popleft()
                if instance.removed and self.instances:
                    return "exit"
                if self._ended is not None:
                    return "end"
                if not self._reading:
                    self._reading = True
                    return "read"
                self._cond.wait()

    def _read(self):
        line = self.inp.readline()
        # Routed before the next reader starts, so requests are routed in their order.
        code = self.handle(line)
        with self._cond:
            self._reading = False
            if code is not None:
                self._ended = code
            self._cond.notify_all()

    def _answered(self, rid, reply):
        self.sender.reply(rid, reply)
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()


class _Threaded(Slot):
    """An instance of a :class:`Pool` and the thread that runs every call of it."""

    def __init__(self, number, served, pool):
        super().__init__(number, served)
        self.jobs = collections.deque()
        self.thread = None
        self.removed = False
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
                self.removed = True
            elif item == "exit":
                return
            elif item == "read":
                pool._read()
            elif item == "end":
                if self.served is not None:
                    self.served.close()
                return
            else:
                rid, job = item
                pool._answered(rid, run_job(job, self))
