#!/usr/bin/env python3
"""Test vectors of trace formats lockstep/trace/v2, v3 and v4, computed from docs/trace.md alone.

Writes crates/lockstep/src/trace/vectors_v2.json, vectors_v3.json and vectors_v4.json: a few
transitions (as the JSON TransitionRecord of `lockstep trace --json --capture`), the digest
of each as step 0, 1, ... and the episode digest. `vectors_v2_reproduce`,
`vectors_v3_reproduce` and `vectors_v4_reproduce` in crates/lockstep/src/trace/tests_v2.rs
check the Rust tracer against the files. This script
shares no code with the Rust tracer: it needs only the `blake3` and `xxhash` packages
(pip install blake3 xxhash).

    python3 scripts/trace-vectors.py            # rewrite both files
    python3 scripts/trace-vectors.py --check    # exit 1 if either file differs
"""

import base64
import json
import math
import os
import struct
import sys

import blake3
import xxhash

TRACE_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "lockstep", "src", "trace"
)

DTYPES = {  # name -> (tag, struct code, element size)
    "bool": (1, "?", 1),
    "int8": (2, "b", 1),
    "uint8": (3, "B", 1),
    "int32": (4, "i", 4),
    "int64": (5, "q", 8),
    "float32": (6, "f", 4),
    "float64": (7, "d", 8),
}
BY_HASH_MIN_BYTES = 16384


def u64(x):
    return struct.pack("<Q", x)


def name(s):
    b = s.encode("utf-8")
    return u64(len(b)) + b


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def array(dtype, shape, values):
    tag, code, _ = DTYPES[dtype]
    data = struct.pack("<%d%s" % (len(values), code), *values)
    return {"dtype": dtype, "shape": shape, "data": base64.b64encode(data).decode()}


def agent(obs, reward, terminated, truncated, info):
    return {
        "obs": obs,
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        "info": canonical(info),
    }


def layout(v):
    """Format v4's value layout of a JSON value (docs/trace.md, "Format lockstep/trace/v4")."""
    if v is None:
        return b"z"
    if v is True:
        return b"t"
    if v is False:
        return b"f"
    if isinstance(v, int):
        return b"i" + name(str(v))
    if isinstance(v, float):
        bits = struct.pack("<d", v) if v == v else struct.pack("<Q", 0x7FF8000000000000)
        return b"d" + bits
    if isinstance(v, str):
        return b"s" + name(v)
    if isinstance(v, list):
        return b"a" + u64(len(v)) + b"".join(layout(x) for x in v)
    keys = sorted(v, key=lambda s: s.encode("utf-8"))
    return b"o" + u64(len(v)) + b"".join(name(k) + layout(v[k]) for k in keys)


def reward_bits(text):
    x = {"NaN": math.nan, "inf": math.inf, "-inf": -math.inf}.get(text)
    return struct.pack("<d", float(text) if x is None else x)


def H(data):
    return blake3.blake3(data).digest()


def X(data):
    """XXH3-128, seed 0, canonical (big-endian) bytes."""
    return xxhash.xxh3_128_digest(data)


def step_digest(k, t, fmt):
    element_hash = H if fmt == "v2" else X
    b = b"S" + u64(k) + u64(len(t["agents"]))
    for agent_name in sorted(t["agents"], key=lambda s: s.encode("utf-8")):
        a = t["agents"][agent_name]
        b += name(agent_name) + u64(len(a["obs"]))
        for key in sorted(a["obs"], key=lambda s: s.encode("utf-8")):
            arr = a["obs"][key]
            data = base64.b64decode(arr["data"])
            b += name(key) + bytes([DTYPES[arr["dtype"]][0]]) + u64(len(arr["shape"]))
            for d in arr["shape"]:
                b += u64(d)
            b += u64(len(data))
            b += data if len(data) < BY_HASH_MIN_BYTES else element_hash(data)
        b += reward_bits(a["reward"])
        b += bytes([int(a["terminated"]), int(a["truncated"])])
        if fmt == "v4":
            b += layout(json.loads(a["info"]))
        else:
            b += name(a["info"])
    b += u64(len(t["logs"]))
    for line in t["logs"]:
        b += name(line)
    return H(b) if fmt == "v2" else H(X(b))


def transitions():
    big = [float(i % 97) - 48.5 for i in range(4096)]  # float32[4096]: 16384 bytes, by hash
    just_inline = [i % 251 for i in range(16383)]  # uint8: 16383 bytes, inline
    yield {
        "agents": {
            "blue": agent(
                {
                    "pos": array("int32", [2], [3, -4]),
                    "mask": array("bool", [3], [True, False, True]),
                    "grid": array("float32", [64, 64], big),
                },
                "0.0",
                False,
                False,
                {"tick": 0, "note": "caf\u00e9 \"x\"", "pi": 3.14159, "none": None},
            ),
            "red": agent(
                {"scan": array("uint8", [16383], just_inline)},
                "-0.0",
                False,
                False,
                {},
            ),
        },
        "logs": ["reset", "seed 7 \u2713"],
    }
    big[5] = -0.0
    yield {
        "agents": {
            "blue": agent(
                {
                    "pos": array("int32", [2], [3, -3]),
                    "mask": array("bool", [3], [False, False, True]),
                    "grid": array("float32", [64, 64], big),
                },
                "0.5",
                False,
                False,
                {"tick": 1, "note": "caf\u00e9 \"x\"", "pi": 3.14159, "none": None},
            ),
            "red": agent(
                {"scan": array("uint8", [16383], just_inline)},
                "1e-300",
                False,
                False,
                {"seen": [1, 2.5, True, {"z": "\u0001"}]},
            ),
        },
        "logs": [],
    }
    yield {
        "agents": {
            "blue": agent(
                {
                    "pos": array("int32", [2], [3, -3]),
                    "mask": array("bool", [3], [False, False, False]),
                    "grid": array("float32", [4096], big),
                    "wide": array("float64", [2, 1], [1.5, -2.25]),
                },
                "-1.25",
                True,
                False,
                {"tick": 2},
            ),
            "red": agent(
                {"scan": array("int64", [2], [-(2**63), 2**63 - 1])},
                "inf",
                False,
                True,
                {"seen": None},
            ),
        },
        "logs": ["end"],
    }


def layout_cases():
    """A fourth step for v4 only (v2's and v3's files keep their three): infos of every kind
    of value the layout tells apart."""
    yield {
        "agents": {
            "blue": agent(
                {"pos": array("int32", [2], [0, 0])},
                "0.0",
                False,
                False,
                {
                    "zero": -0.0,
                    "big": 2**70,
                    "small": -(2**63),
                    "far": 1e300,
                    "one": 1.0,
                    "\u00e9t\u00e9": [[], {}, [1, [2.5]], {"b": None, "a": False}],
                    "s": "tab\t\u2713 \ud83d\ude00",
                    "t": True,
                },
            ),
        },
        "logs": [],
    }


def build(fmt):
    ts = list(transitions())
    if fmt == "v4":
        ts += list(layout_cases())
    steps, episode = [], bytes(32)
    for k, t in enumerate(ts):
        d = step_digest(k, t, fmt)
        steps.append(d.hex())
        episode = H(b"E" + episode + d)
    return {
        "format": "lockstep/trace/" + fmt,
        "about": "written by scripts/trace-vectors.py from docs/trace.md; do not edit",
        "transitions": ts,
        "step_digests": steps,
        "episode": episode.hex(),
    }


def main():
    stale = 0
    for fmt in ["v2", "v3", "v4"]:
        out = os.path.join(TRACE_DIR, "vectors_%s.json" % fmt)
        text = json.dumps(build(fmt), indent=1, ensure_ascii=False) + "\n"
        if "--check" in sys.argv[1:]:
            with open(out, encoding="utf-8") as f:
                if f.read() != text:
                    print("%s is out of date" % out, file=sys.stderr)
                    stale = 1
            continue
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    return stale


if __name__ == "__main__":
    sys.exit(main())
