"""The console script ``lockstep`` the wheel installs is the CLI itself."""

import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(sys.executable), "lockstep")


def run(*args):
    return subprocess.run([SCRIPT, *args], capture_output=True, timeout=600)


def test_console_script_prints_what_the_binary_prints(cli):
    args = ["trace", "--env", "range:apt_espionage:easy", "--seed", "5", "--steps", "60"]
    out = run(*args)
    assert out.returncode == 0, out.stderr
    assert out.stdout == cli(*args).stdout
    assert run("--version").stdout == cli("--version").stdout


def test_console_script_exit_codes_and_its_process_check(tmp_path):
    # The process check re-runs the CLI; inside the package that is `python -m lockstep`.
    out = run("check", "experiment", "--seeds", "1", "--steps", "20", "--checks", "process", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr.decode()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["trials"][0]["checks"][0]["check"] == "process" and report["passed"]
    failing = run("check", "fixture:global-rng", "--seeds", "1", "--steps", "20", "--checks", "interleaved", "--out", str(tmp_path))
    assert failing.returncode == 1, failing.stderr.decode()
    assert b"FAIL fixture:global-rng: interleaved check, seed 0" in failing.stdout
    assert run("bogus").returncode == 2
