import base64
import json
import math

import numpy as np
import pytest

from lockstep_adapter import wire


def test_array_round_trip_keeps_bits():
    a = np.array([0.1, -0.0, np.nan, 1e-310], dtype=np.float64)
    obj = json.loads(wire.ArrayEncoder().encode(a))
    assert obj["dtype"] == "float64" and obj["shape"] == [4]
    b = wire.decode_array(obj)
    assert b.tobytes() == a.tobytes()


def test_encoder_caches_header_and_follows_shape_changes():
    enc = wire.ArrayEncoder()
    first = json.loads(enc.encode(np.zeros((2, 3), np.float32)))
    second = json.loads(enc.encode(np.ones(5, np.int8)))
    assert first["shape"] == [2, 3] and first["dtype"] == "float32"
    assert second["shape"] == [5] and second["dtype"] == "int8"
    assert base64.b64decode(second["data"]) == b"\x01" * 5


def test_big_endian_and_narrow_dtypes_are_normalised():
    be = np.array([1, 2], dtype=">i4")
    assert wire.wire_array(be).dtype.byteorder in ("<", "=")
    assert wire.encode_array(be)["data"] == base64.b64encode(np.array([1, 2], "<i4").tobytes()).decode()
    assert wire.wire_array(np.zeros(2, np.uint16)).dtype == np.int32
    assert wire.wire_array(np.zeros(2, np.float16)).dtype == np.float32
    assert wire.wire_array(np.array([5], np.uint64)).dtype == np.int64
    with pytest.raises(wire.WireError):
        wire.wire_array(np.array([2**63], np.uint64))
    with pytest.raises(wire.WireError):
        wire.wire_array(np.zeros(2, np.complex64))


def test_decode_refuses_wrong_sizes():
    with pytest.raises(wire.WireError):
        wire.decode_array({"dtype": "float32", "shape": [2], "data": base64.b64encode(b"1234").decode()})
    with pytest.raises(wire.WireError):
        wire.decode_array({"dtype": "float16", "shape": [], "data": ""})


def test_reward_fields():
    assert wire.reward_fields(np.float32(0.1)) == '"reward":' + repr(float(np.float32(0.1)))
    assert wire.reward_fields(1) == '"reward":1.0'
    nan = wire.reward_fields(float("nan"))
    assert nan == '"reward":null,"reward_bits":"7ff8000000000000"'
    assert wire.reward_fields(-math.inf).endswith('"fff0000000000000"')


def test_to_json_conversions():
    v = wire.to_json(
        {
            "a": np.float32(0.5),
            "b": np.arange(3, dtype=np.int16),
            1: (np.bool_(True), None),
            "c": b"\x00\xff",
            "d": [math.inf, math.nan],
            "e": {"x"},
            "big": 2**100,
        }
    )
    assert v == {
        "a": 0.5,
        "b": [0, 1, 2],
        "1": [True, None],
        "c": "AP8=",
        "d": ["Infinity", "NaN"],
        "e": ["x"],
        "big": 2**100,
    }
    assert isinstance(v["1"][0], bool)
    wire.dumps(v)  # plain JSON, no NaN


def test_spaces_are_declared_in_lockstep_form():
    from gymnasium import spaces

    box = wire.declare_space(spaces.Box(-1.0, np.inf, (2,), np.float32))
    assert box == {"type": "box", "dtype": "float32", "shape": [2], "low": [-1.0, -1.0], "high": ["Infinity", "Infinity"]}
    assert wire.declare_space(spaces.Discrete(4, start=-2)) == {"type": "discrete", "n": 4, "start": -2}
    assert wire.declare_space(spaces.MultiDiscrete([3, 5])) == {"type": "multi_discrete", "nvec": [3, 5]}
    assert wire.declare_space(spaces.MultiBinary(3)) == {"type": "multi_discrete", "nvec": [2, 2, 2]}
    # A Text observation is declared as the uint8 box of its UTF-8 bytes (4 per character).
    text = wire.declare_space(spaces.Text(5))
    assert (text["type"], text["dtype"], text["shape"]) == ("box", "uint8", [20])
    assert wire.declare_space(spaces.Tuple([spaces.Discrete(2), spaces.MultiBinary(1)])) == {
        "type": "tuple",
        "spaces": [{"type": "discrete", "n": 2, "start": 0}, {"type": "multi_discrete", "nvec": [2]}],
    }
    assert wire.declare_space(spaces.Dict({"b": spaces.Discrete(2), "a": spaces.Sequence(spaces.Discrete(3))})) == {
        "type": "dict",
        "spaces": {
            "a": {"type": "sequence", "space": {"type": "discrete", "n": 3, "start": 0}},
            "b": {"type": "discrete", "n": 2, "start": 0},
        },
    }
    with pytest.raises(wire.WireError, match="Graph"):
        wire.declare_space(spaces.Graph(spaces.Box(0, 1, (2,)), None))


def test_sequence_observations_stack_their_elements_along_a_first_axis():
    from gymnasium import spaces

    sp = spaces.Dict(
        {
            "seq": spaces.Sequence(spaces.Dict({"p": spaces.Box(0, 1, (2,), np.float32), "k": spaces.Discrete(3)})),
            "stacked": spaces.Sequence(spaces.Box(0, 1, (2,), np.float32), stack=True),
        }
    )
    leaves = wire.observation_keys(sp)
    assert sorted(leaves) == ["seq/k", "seq/p", "stacked"]
    assert wire.declare_space(leaves["seq/k"]) == {"type": "sequence", "space": {"type": "discrete", "n": 3, "start": 0}}
    enc = wire.ObservationEncoder(sp)
    p = [np.array([0.25, 0.5], np.float32), np.array([0.75, 1.0], np.float32)]
    obs = {"seq": ({"p": p[0], "k": 2}, {"p": p[1], "k": 0}), "stacked": np.stack(p)}
    out = {k: wire.decode_array(v) for k, v in json.loads(enc.encode(obs)).items()}
    assert out["seq/p"].dtype == np.float32 and out["seq/p"].tolist() == [[0.25, 0.5], [0.75, 1.0]]
    assert out["seq/k"].dtype == np.int64 and out["seq/k"].tolist() == [2, 0]
    assert out["stacked"].shape == (2, 2)
    # An empty sequence is an array of length 0 along the first axis, its dtype kept.
    empty = {"seq": (), "stacked": np.zeros((0, 2), np.float32)}
    out = {k: wire.decode_array(v) for k, v in json.loads(enc.encode(empty)).items()}
    assert (out["seq/p"].shape, out["seq/p"].dtype) == ((0, 2), np.float32)
    assert (out["seq/k"].shape, out["stacked"].shape) == ((0,), (0, 2))
    # Elements that cannot stack (text, a sequence) travel as the sequence's canonical JSON
    # (issue 30: BrowserGym's chat messages are a Sequence of Dicts of text).
    texts = wire.observation_keys(spaces.Dict({"m": spaces.Sequence(spaces.Text(4))}))
    assert isinstance(texts["m"], wire.JsonLeaf)
    nested = wire.observation_keys(spaces.Sequence(spaces.Sequence(spaces.Discrete(2))))
    assert isinstance(nested["obs"], wire.JsonLeaf)
    enc = wire.ObservationEncoder(spaces.Sequence(spaces.Sequence(spaces.Discrete(2))))
    assert wire.decode_array(json.loads(enc.encode(((1, 0), ())))["obs"]).tobytes() == b"[[1,0],[]]"


def test_observation_keys_flatten_dicts_and_tuples():
    from gymnasium import spaces

    sp = spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Tuple([spaces.Box(0, 1, (1,)), spaces.Discrete(2)])})
    assert sorted(wire.observation_keys(sp)) == ["a", "b/0", "b/1"]
    enc = wire.ObservationEncoder(sp)
    obj = json.loads(enc.encode({"a": 2, "b": (np.array([0.5], np.float32), 1)}))
    assert sorted(obj) == ["a", "b/0", "b/1"]
    a = wire.decode_array(obj["a"])
    assert a.dtype == np.int64 and a.tolist() == [2]
    assert wire.observation_keys(spaces.Discrete(3)).keys() == {"obs"}


def test_action_decoding():
    from gymnasium import spaces

    box = wire.ActionDecoder(spaces.Box(-2.0, 2.0, (1,), np.float32))
    act = box.decode(wire.encode_array(np.array([0.1], np.float64)))
    assert act.dtype == np.float32 and act[0] == np.float32(0.1)
    assert wire.ActionDecoder(spaces.Discrete(3)).decode(2) == 2
    with pytest.raises(wire.WireError):
        wire.ActionDecoder(spaces.Discrete(3)).decode(1.0)
    md = wire.ActionDecoder(spaces.MultiDiscrete([3, 3], start=[1, 1]))
    assert md.decode([0, 2]).tolist() == [1, 3]


def test_composite_actions_decode_part_by_part_into_what_the_space_contains():
    from gymnasium import spaces

    space = spaces.Tuple(
        [
            spaces.Discrete(3, start=1),
            spaces.Dict({"x": spaces.Box(-1, 1, (1, 2), np.float32), "y": spaces.Sequence(spaces.Discrete(2))}),
            spaces.Sequence(spaces.MultiBinary(2), stack=True),
        ]
    )
    dec = wire.ActionDecoder(space)
    act = dec.decode([2, {"x": wire.encode_array(np.array([[0.5, 0.25]])), "y": [1, 0, 1]}, [[0, 1], [1, 1]]])
    assert space.contains(act)
    assert act[1]["y"] == (1, 0, 1) and act[2].shape == (2, 2)
    assert space.contains(dec.decode([1, {"x": wire.encode_array(np.zeros((1, 2))), "y": []}, []]))
    with pytest.raises(wire.WireError, match="2 parts|3 parts"):
        dec.decode([1, {}])
    with pytest.raises(wire.WireError, match="keys"):
        dec.decode([1, {"x": wire.encode_array(np.zeros((1, 2)))}, []])
