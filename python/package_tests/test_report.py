"""Issue 29 item 5: a failure read from Python reads like the CLI's. ``str(report)`` is the
text ``lockstep check`` prints (its renderer, called through the native module), failures are
``lockstep.Failure`` objects with report.json's fields and the call that replays them, and a
failed ``assert report.passed, report`` shows the grouped text in pytest."""

import os
import subprocess
import sys

import pytest

import faulty_envs
import lockstep

HERE = os.path.dirname(os.path.abspath(__file__))
INTERLEAVED = dict(seeds=range(2), steps=20, checks=["same", "other", "interleaved"])


@pytest.fixture(scope="module")
def global_rng():
    """A process-global RNG seeded at reset: the interleaved check fails on both seeds at step
    1, with the same values every run (no threads involved)."""
    return lockstep.check("faulty_envs:global_rng", **INTERLEAVED)


def test_failures_are_objects_with_the_reports_fields(global_rng):
    failures = global_rng.failures
    assert [(f.check, f.seed) for f in failures] == [("interleaved", 0), ("interleaved", 1)]
    f = failures[0]
    assert isinstance(f, lockstep.Failure)
    assert (f.env, f.step, f.site, f.agent, f.key, f.element) == ("faulty_envs:global_rng", 1, "obs", "agent", "obs", 0)
    outcome = next(c for c in global_rng.trials[0]["checks"] if c["check"] == "interleaved")
    detail = outcome["divergence"]["detail"]
    assert (f.left, f.right) == (detail["left"], detail["right"]) and f.left != f.right
    assert f.left_label == "seed 0 alone in a fresh process"
    assert f.right_label == "seed 0 interleaved (created together)"
    assert f.summary == outcome["summary"]
    assert f.divergence == outcome["divergence"]
    assert f.replay == "lockstep.check('faulty_envs:global_rng', seeds=[0], steps=20, checks=['interleaved'])"
    with pytest.raises(AttributeError):
        f.seed = 3  # frozen


def test_a_failures_replay_call_reproduces_it(global_rng):
    f = global_rng.failures[1]
    again = eval(f.replay, {"lockstep": lockstep})  # noqa: S307 - our own call, as printed
    assert [(g.check, g.seed, g.step, g.key, g.left, g.right) for g in again.failures] == [
        (f.check, f.seed, f.step, f.key, f.left, f.right)
    ]


def test_str_of_a_failure_is_the_clis_block_for_that_trial(global_rng):
    f = global_rng.failures[0]
    lines = str(f).splitlines()
    assert lines[0] == "FAIL faulty_envs:global_rng: interleaved check, seed 0"
    assert lines[1] == f"  seed 0: {f.summary}"
    assert lines[-1] == f"  replay: {f.replay}"


def test_str_of_a_report_is_the_grouped_text_with_a_replay_call(global_rng):
    text = str(global_rng)
    assert isinstance(global_rng, str) and text == global_rng.summary()
    assert text.startswith("lockstep ") and "check: envs faulty_envs:global_rng seeds 0..2 steps 20" in text.splitlines()[0]
    assert "FAIL faulty_envs:global_rng: interleaved check, seeds 0, 1" in text
    assert "  seed 1: the same, with their own values" in text
    assert "  replay: lockstep.check('faulty_envs:global_rng', seeds=[0], steps=20, checks=['interleaved'])" in text
    assert text.endswith("\n\nsome checks fail")
    assert repr(global_rng) == "<lockstep.Report passed=False trials=2 failures=2>"
    assert not global_rng


def normalised(text, skip):
    """Lines with runs of spaces as one, without the lines starting with one of ``skip``."""
    return [" ".join(line.split()) for line in text.splitlines() if not line.lstrip().startswith(skip)]


def test_str_of_a_report_is_what_the_cli_prints_for_the_same_env(cli, global_rng, tmp_path):
    """The same env through the adapter: the CLI's stdout and ``str(report)`` agree line for
    line but for the env's name (the CLI's says which adapter served it), the replay lines (a
    command there, a Python call here), the column widths and the lines around them."""
    argv = [cli.path, "check", "--seeds", "2", "--steps", "20", "--checks", "same,other,interleaved", "--out", str(tmp_path)]
    argv += ["--cmd", "--", sys.executable, "-m", "lockstep_adapter", "factory", "faulty_envs:global_rng"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run(argv, capture_output=True, env=env, cwd=HERE, timeout=600)
    assert out.returncode == 1, out.stderr.decode()
    printed = out.stdout.decode().replace("gymnasium:faulty_envs:global_rng", "faulty_envs:global_rng")
    skip = ("replay:", "report:")
    assert normalised(printed, skip) == normalised(str(global_rng), skip + ("lockstep ",))


def test_a_reset_contract_failure_names_the_field_with_both_values():
    report = lockstep.check(faulty_envs.leaky_reset, seeds=range(1), steps=10, checks=["same"], contract={"fields": ["visits"]})
    [f] = [f for f in report.failures if f.check == "reset contract"]
    assert f.key == "/visits" and (f.left, f.right) == (0, 10), f
    assert (f.left_label, f.right_label) == ("a fresh instance", "after an episode and reset(seed)")
    assert [str(c) for c in f.changes] == ["changed /visits: 0 -> 10"]
    assert f.step is None
    assert f.replay == "lockstep.check('faulty_envs:leaky_reset', seeds=[0], steps=10, contract={'fields': ['visits']})"
    assert "FAIL faulty_envs:leaky_reset: reset contract, seed 0" in str(f)
    assert "changed /visits: 0 -> 10" in str(f)


def test_an_environment_error_is_a_failure_named_error():
    def broken():
        raise ValueError("no env today")

    report = lockstep.check(broken, seeds=range(2), steps=5, checks=["same"])
    assert {f.check for f in report.failures} == {"error"}
    assert [f.seed for f in report.failures] == [0, 1]
    name = "test_an_environment_error_is_a_failure_named_error.<locals>.broken"
    assert report.failures[0].env == name
    assert f"ERROR {name}: environment error, seeds 0, 1" in str(report)
    assert "report.summary(verbose=True)" in str(report) and "lockstep check -v" not in str(report)
    assert str(report.failures[0]).startswith(f"ERROR {name}: environment error, seed 0")
    assert report.failures[0].replay == "lockstep.check(broken, seeds=[0], steps=5)"


def test_a_lambda_is_replayed_by_a_placeholder_said_as_one():
    report = lockstep.check(lambda: faulty_envs.global_rng(), seeds=range(1), steps=10, checks=["interleaved"])
    [f] = report.failures
    assert f.replay == "lockstep.check(make_env, seeds=[0], steps=10, checks=['interleaved'])  # make_env: the <lambda> given to lockstep.check"
    assert "SKIPPED process check" not in str(report)


def test_report_html_carries_the_replay_calls(global_rng, tmp_path):
    global_rng.write(tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "lockstep.check(" in html and "lockstep replay" not in html


def test_a_failed_assert_in_pytest_shows_the_grouped_text(tmp_path):
    (tmp_path / "test_mine.py").write_text(
        "import lockstep\n"
        "def test_mine():\n"
        "    report = lockstep.check('faulty_envs:global_rng', seeds=range(2), steps=20, checks=['same', 'other', 'interleaved'])\n"
        "    assert report.passed, report\n"
    )
    env = dict(os.environ, PYTHONPATH=HERE)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mine.py"],
        capture_output=True, cwd=tmp_path, env=env, timeout=600,
    )
    shown = out.stdout.decode()
    assert out.returncode == 1, shown
    lines = [line[1:].strip() for line in shown.splitlines() if line.startswith("E ")]
    for expected in [
        "FAIL faulty_envs:global_rng: interleaved check, seeds 0, 1",
        "seed 1: the same, with their own values",
        "replay: lockstep.check('faulty_envs:global_rng', seeds=[0], steps=20, checks=['interleaved'])",
        "some checks fail",
    ]:
        assert expected in lines, shown
