"""An env that names its browser as a layer (``lockstep_layers()``), checked in this process:
``lockstep.check`` reads the browser over DevTools after every reset, as ``lockstep check
--cmd`` does, so a browser kept across the reset fails the reset contract here too, on the
``browser`` field; and what the env did to launch and drive its browsers is that layer's, no
warning. Needs Chromium (./scripts/test installs Debian's)."""

import lockstep
from lockstep_adapter import testing_browser

#: The browser and its page server change at every launch: the browser layer stands for them.
CONTRACT = {"exclude": ["_browser"]}


def fresh_browser():
    return testing_browser.browser_task()


def kept_browser():
    return testing_browser.browser_task(bug="kept_browser")


def test_the_browser_an_env_names_is_its_layer_in_process():
    report = lockstep.check(fresh_browser, seeds=range(2), steps=3, checks=["same"], rollouts=2, contract=CONTRACT)
    assert report.passed, report
    about = report.data["envs"][0]["about"]
    assert "browser" in about["contract"]["layers"][0]["fields"], about
    for trial in report.trials:
        audit = trial["audit"]
        assert "warnings" not in audit, audit
        launches = [e for e in audit["effects"] if e["kind"] == "subprocess"]
        assert launches and all(e.get("layer") == "browser" for e in launches), audit


def test_a_browser_kept_across_the_reset_fails_its_contract_in_process():
    report = lockstep.check(kept_browser, seeds=range(2), steps=3, checks=["same"], rollouts=2, contract=CONTRACT)
    assert not report.passed
    failing = [t for t in report.trials if not t["audit"]["conforms"]]
    # Seed 1 submits the task in its episode: it stays done in localStorage.
    assert failing, report
    for trial in failing:
        audit = trial["audit"]
        assert "browser" in audit["different_fields"], audit
        pointers = [c["pointer"] for c in audit["changes"]]
        assert any(p.startswith("/browser/local_storage/http:~1~1127.0.0.1:") for p in pointers), pointers
