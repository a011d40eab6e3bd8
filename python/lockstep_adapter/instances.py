"""Env instances of a lockstep/2 child, each run by a thread of its own.

After the upgrade to lockstep/2 the main thread only reads requests and hands each to the
instance it names; the instance's thread runs it and writes the answer. So requests to two
instances run at once (as far as the GIL lets them, docs/protocol.md), and their answers go
out in the order they finish, each with its request's id; one instance's requests run one at
a time, in order, always on the same thread.
"""

import queue
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


class Pool:
    """The instances of one child and how many requests they have not answered yet."""

    def __init__(self, sender):
        self.sender = sender
        self.instances = {}
        self._outstanding = 0
        self._idle = threading.Condition()

    def submit(self, number, rid, job):
        """Queues ``job(instance)`` (which returns the reply text) on instance ``number``."""
        with self._idle:
            self._outstanding += 1
        self.instances[number].jobs.put((rid, job))

    def finished(self):
        with self._idle:
            self._outstanding -= 1
            if self._outstanding == 0:
                self._idle.notify_all()

    def wait_idle(self):
        """Returns once every request handed to an instance has been answered."""
        with self._idle:
            while self._outstanding:
                self._idle.wait()

    def add(self, number, served=None):
        instance = Instance(number, self, served)
        self.instances[number] = instance
        return instance

    def remove(self, number):
        """Stops the instance's thread after the requests already queued on it."""
        self.instances.pop(number).jobs.put(None)

    def restart_threads(self):
        """In a forked child only the forking thread survives: every instance gets a new
        thread (and queue) holding the same env object."""
        old = self.instances
        self.instances = {}
        self._outstanding = 0
        self._idle = threading.Condition()
        for number, instance in old.items():
            self.add(number, instance.served)

    def close_all(self):
        """End of input: each instance closes its env on its own thread; then the threads end."""

        def close(instance):
            if instance.served is not None:
                instance.served.close()
            return None

        for number in list(self.instances):
            self.instances[number].jobs.put((None, close))
            self.instances[number].jobs.put(None)
        for instance in self.instances.values():
            instance.thread.join()


class Instance:
    """One env instance and the thread that runs every call of it."""

    def __init__(self, number, pool, served=None):
        self.number = number
        self.served = served
        self.jobs = queue.SimpleQueue()
        self._pool = pool
        self.thread = threading.Thread(target=self._run, name=f"lockstep-instance-{number}", daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            item = self.jobs.get()
            if item is None:
                return
            rid, job = item
            try:
                reply = job(self)
            except Exception as exc:  # noqa: BLE001 - every env failure is answered, not fatal
                reply = error_reply(exc)
            if rid is not None:
                self._pool.sender.reply(rid, reply)
                self._pool.finished()
