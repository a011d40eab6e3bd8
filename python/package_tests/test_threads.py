"""Issue 30 item 3: an env bound to the thread that started its process-global client
(BrowserGym's sync Playwright, in miniature) is checked in this interpreter as its users drive
it: every check but the parallel one passes on the caller's thread, and the parallel check,
whose threads run in a fork of this interpreter, says in words that the env is not
thread-safe, also when it crashes the process there (a real SIGSEGV) — which never reaches
the caller."""

import pytest

import lockstep
from lockstep_adapter import testing


@pytest.fixture(autouse=True)
def fresh_client():
    # The client is process-global, as BrowserGym's: each test starts without one.
    testing._CLIENT = None
    yield
    testing._CLIENT = None


def check(on_other_thread):
    return lockstep.check(
        lambda: testing.thread_bound_clicker(on_other_thread),
        seeds=range(2),
        steps=4,
        checks=["same", "other", "interleaved", "parallel", "continuation"],
        policy=testing.click_policy,
    )


def parallel_summaries(report):
    summaries = []
    for trial in report.data["trials"]:
        assert trial["error"] is None, trial["error"]
        for c in trial["checks"]:
            if c["check"] == "parallel":
                assert c["applicable"] and not c["passed"], c
                summaries.append(c["summary"])
            else:
                assert c["passed"], c
    assert len(summaries) == 2
    return summaries


def test_a_thread_bound_env_fails_only_the_parallel_check_in_words():
    report = check("raise")
    assert not report.passed
    for summary in parallel_summaries(report):
        assert summary.startswith("the env is not thread-safe: reset: RuntimeError: no running event loop"), summary


def test_a_crash_on_threads_is_a_verdict_with_its_signal_and_the_caller_lives_on():
    report = check("crash")
    for summary in parallel_summaries(report):
        assert "it crashed the process its 4 threads" in summary, summary
        assert "killed by signal 11 (SIGSEGV)" in summary, summary
    # This interpreter is still here, and its report still renders.
    assert "not thread-safe" in str(report)
