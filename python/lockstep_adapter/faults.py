"""A raw lockstep/1 server (standard library only) that breaks the protocol on purpose.

``python -m lockstep_adapter.faults MODE [STEP]``: a one-agent env (``Discrete(2)`` actions,
one float32 observation) that behaves until step ``STEP`` (default 3), then:

- ``ok``: never breaks (the control);
- ``exit_at_start``: exits with status 3 before the handshake;
- ``wrong_version``: its handshake says ``lockstep/99``;
- ``non_json``: answers step STEP with a line that is not JSON;
- ``oversize``: answers step STEP with a 2 MiB line;
- ``missing_field``: answers step STEP without ``reward``;
- ``bad_array``: answers step STEP with array data one element short;
- ``exit``: exits with status 0 on step STEP, without answering;
- ``extra_line``: answers step STEP twice.

Two modes speak lockstep/2 with ``"threads": true`` (several requests in flight): its
observation is ``10 * t + instance``, so an answer handed to the wrong instance shows:

- ``reversed``: holds each reset or step until a second one (to another instance) arrives,
  then answers the later first: a client that sends one request at a time hangs;
- ``stray_id``: answers step STEP with an id no request carries.
"""

import base64
import json
import struct
import sys

MODES = ("ok", "exit_at_start", "wrong_version", "non_json", "oversize", "missing_field", "bad_array", "exit", "extra_line")
THREADED_MODES = ("reversed", "stray_id")


def _transition(value):
    data = base64.b64encode(struct.pack("<f", float(value))).decode()
    return {
        "ok": True,
        "agents": {
            "agent": {
                "obs": {"obs": {"dtype": "float32", "shape": [1], "data": data}},
                "reward": 1.0,
                "terminated": False,
                "truncated": False,
                "info": {},
            }
        },
    }


def serve_threaded(mode, at):
    """The lockstep/2 modes: answers out of request order on purpose."""
    out = sys.stdout

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    send(
        {
            "protocol": "lockstep/1",
            "ok": True,
            "env_id": f"faults:{mode}",
            "config": {"mode": mode, "at": at},
            "agents": [
                {
                    "name": "agent",
                    "action_space": {"type": "discrete", "n": 2, "start": 0},
                    "observation_space": {"obs": {"type": "box", "dtype": "float32", "shape": [1], "low": [0], "high": [1000]}},
                }
            ],
            "upgrades": ["lockstep/2"],
            "threads": True,
        }
    )
    ticks = {0: 0}
    held = []
    for line in sys.stdin:
        request = json.loads(line)
        rid, op = request.get("id"), request["op"]
        if op == "upgrade":
            send({"id": rid, "ok": True, "protocol": "lockstep/2", "threads": request.get("threads") is True})
        elif op == "create":
            ticks[len(ticks)] = 0
            send({"id": rid, "ok": True, "instance": len(ticks) - 1})
        elif op in ("reset", "step"):
            n = request["instance"]
            ticks[n] = 0 if op == "reset" else ticks[n] + 1
            reply = dict(_transition(10 * ticks[n] + n), id=rid)
            if mode == "stray_id" and op == "step" and ticks[n] == at:
                reply["id"] = rid + 1000
            if mode == "reversed":
                held.append(reply)
                if len(held) == 2:
                    send(held.pop())
                    send(held.pop())
                continue
            send(reply)
        elif op == "state":
            send({"id": rid, "ok": True, "state": {"t": ticks[request["instance"]]}})
        elif op == "close":
            send({"id": rid, "ok": True})
        else:
            send({"id": rid, "ok": False, "error": f"unknown op {op!r}"})
    return 0


def main(argv):
    mode = argv[0] if argv else "ok"
    at = int(argv[1]) if len(argv) > 1 else 3
    if mode in THREADED_MODES:
        return serve_threaded(mode, at)
    if mode not in MODES:
        sys.stderr.write(f"faults: unknown mode {mode!r}\n")
        return 2
    out = sys.stdout

    def send(text):
        out.write(text + "\n")
        out.flush()

    rid = [None]

    def reply_with_id(obj):
        obj = dict(obj)
        obj["id"] = rid[0]
        return json.dumps(obj)

    if mode == "exit_at_start":
        sys.stderr.write("faults: exiting before the handshake\n")
        return 3
    send(
        json.dumps(
            {
                "protocol": "lockstep/99" if mode == "wrong_version" else "lockstep/1",
                "ok": True,
                "env_id": f"faults:{mode}",
                "config": {"mode": mode, "at": at},
                "agents": [
                    {
                        "name": "agent",
                        "action_space": {"type": "discrete", "n": 2, "start": 0},
                        "observation_space": {"obs": {"type": "box", "dtype": "float32", "shape": [1], "low": [0], "high": [1000]}},
                    }
                ],
                "contract": {"name": "faults", "version": 1, "fields": ["t"]},
            }
        )
    )
    t = 0

    def answer(count):
        data = base64.b64encode(struct.pack("<%df" % count, *([float(t)] * count))).decode()
        return {
            "ok": True,
            "agents": {
                "agent": {
                    "obs": {"obs": {"dtype": "float32", "shape": [1], "data": data}},
                    "reward": 1.0,
                    "terminated": False,
                    "truncated": False,
                    "info": {},
                }
            },
            "logs": [f"t={t}"],
        }

    for line in sys.stdin:
        request = json.loads(line)
        rid[0] = request.get("id")
        op = request["op"]
        if op == "reset":
            t = 0
            send(reply_with_id(answer(1)))
        elif op == "step":
            t += 1
            sys.stderr.write(f"faults: step {t}\n")
            sys.stderr.flush()
            if t == at and mode != "ok":
                if mode == "non_json":
                    send("Traceback? no: this line is not JSON")
                    continue
                if mode == "oversize":
                    send(reply_with_id({"ok": True, "pad": "x" * (2 << 20)}))
                    continue
                if mode == "exit":
                    sys.stderr.write("faults: exiting mid-episode\n")
                    return 0
                reply = answer(1)
                if mode == "missing_field":
                    del reply["agents"]["agent"]["reward"]
                elif mode == "bad_array":
                    reply["agents"]["agent"]["obs"]["obs"]["shape"] = [2]
                elif mode == "extra_line":
                    send(reply_with_id(reply))
                send(reply_with_id(reply))
                continue
            send(reply_with_id(answer(1)))
        elif op == "state":
            send(reply_with_id({"ok": True, "state": {"t": t}}))
        elif op == "close":
            send(reply_with_id({"ok": True}))
            return 0
        else:
            send(reply_with_id({"ok": False, "error": f"unknown op {op!r}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
