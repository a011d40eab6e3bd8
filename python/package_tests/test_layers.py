"""An env that names its browser as a layer (``lockstep_layers()``), checked in this process:
``lockstep.check`` reads the browser over DevTools after every reset, as ``lockstep check
--cmd`` does, so a browser kept across the reset fails the reset contract here too, on the
``browser`` field; and what the env did to launch and drive its browser is that layer's, no
warning. Needs Chromium (./scripts/test installs Debian's)."""

import os

import lockstep
from lockstep_adapter import testing_browser

#: The browser and its page server change at every launch: the browser layer stands for them.
CONTRACT = {"exclude": ["_browser"]}


def running_browsers():
    """The browser task's Chromium main processes running now (Linux's /proc)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:
            continue
        if b"lockstep-browser-task-" in argv and b"--type=" not in argv:
            found.add(int(pid))
    return found


def kept_browser():
    return testing_browser.browser_task(bug="kept_browser")


def test_a_browser_the_env_names_is_read_in_process_and_its_launch_is_the_layer_s():
    """One run for both (each trial starts real browsers): the kept browser's storage fails the
    reset contract on the ``browser`` field, and its launch is no warning. The CLI's tests
    (browser_layers_cli) check the honest browser task passes."""
    before = running_browsers()
    report = lockstep.check(kept_browser, seeds=range(2), steps=3, checks=["same"], rollouts=2, contract=CONTRACT)
    assert not report.passed
    # Every instance the checks made was closed, the ones they only dropped too: no browser
    # the env launched outlives the check.
    assert running_browsers() - before == set()
    about = report.data["envs"][0]["about"]
    assert "browser" in about["contract"]["layers"][0]["fields"], about
    failing = [t for t in report.trials if not t["audit"]["conforms"]]
    # Seed 1 submits the task in its episode: it stays done in localStorage.
    assert [t["seed"] for t in failing] == [1], report
    audit = failing[0]["audit"]
    assert "browser" in audit["different_fields"], audit
    pointers = [c["pointer"] for c in audit["changes"]]
    assert any(p.startswith("/browser/local_storage/http:~1~1127.0.0.1:") for p in pointers), pointers
    for trial in report.trials:
        audit = trial["audit"]
        assert "warnings" not in audit, audit
        launches = [e for e in audit["effects"] if e["kind"] == "subprocess"]
        assert launches and all(e.get("layer") == "browser" for e in launches), audit
