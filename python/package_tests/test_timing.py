"""Issue 30 item 5: a failure from timing is named as timing from Python too, and
``timings=True`` records each check's step times; a report without it has none."""

import lockstep
from lockstep_adapter import testing


def test_a_timeout_under_load_is_named_timing_and_timings_are_recorded():
    report = lockstep.check(testing.timeout_clicker, seeds=range(1), steps=8, checks=["same"], policy=testing.click_policy, timings=True)
    assert not report.passed
    assert "timing: the env's behaviour depends on timing" in str(report), report
    same = report.data["trials"][0]["checks"][0]
    assert same["timing"]["summary"].startswith("the env's behaviour depends on timing")
    assert report.data["params"]["timings"] is True
    assert len(same["step_ms"]["left"]) >= 2 and len(same["step_ms"]["right"]) >= 2


def test_a_default_report_has_no_times():
    report = lockstep.check(testing.clicker, seeds=range(1), steps=4, checks=["same"], policy=testing.click_policy)
    assert report.passed, report
    assert "timings" not in report.data["params"]
    assert "step_ms" not in report.data["trials"][0]["checks"][0]
