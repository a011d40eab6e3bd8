"""Issue 30 item 4: ``lockstep.check(ignore=[...])`` leaves out the fields an env is meant to
vary (the clicker's ``bug="clock"`` stamps ``time.time()`` into each chat message, in the
observation and in the env's attributes, as BrowserGym does) and compares the rest; the
report keeps the patterns, and a failure's replay call repeats them."""

import pytest

import lockstep
from lockstep_adapter import testing

STAMPS = ["/obs/chat_messages/*/timestamp", "/state/chat/*/timestamp"]
CHECKS = ["same", "other", "interleaved", "continuation"]


def clocked_clicker():
    return testing.clicker(bug="clock")


def check(ignore):
    return lockstep.check(clocked_clicker, seeds=range(2), steps=4, checks=CHECKS, policy=testing.click_policy, ignore=ignore)


def test_the_stamps_fail_the_checks_until_they_are_ignored():
    plain = check([])
    assert not plain.passed
    assert {f.check for f in plain.failures} >= {"same", "continuation"}, plain
    ignored = check(STAMPS)
    assert ignored.passed, ignored
    assert ignored.data["params"]["ignore"] == STAMPS
    assert str(ignored).splitlines()[0].endswith(" ignore " + ",".join(STAMPS))


def test_a_stamp_left_in_is_still_caught_and_the_replay_keeps_the_pattern():
    report = check(STAMPS[:1])
    assert not report.passed
    assert {f.check for f in report.failures} == {"reset contract"}, report.failures
    assert "changed /chat/0/timestamp" in str(report)
    assert f"ignore={STAMPS[:1]!r}" in str(report)


def test_a_bad_pattern_or_a_lone_string_is_a_config_error():
    with pytest.raises(lockstep.ConfigError, match='ignore pattern "obs/x": a JSON Pointer starts with'):
        check(["obs/x"])
    with pytest.raises(lockstep.ConfigError, match="a list of JSON Pointers"):
        check(STAMPS[0])
