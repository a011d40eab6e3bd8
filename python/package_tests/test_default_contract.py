"""The env's attributes are its starting state by default (issue 29 item 1)."""

import pytest

import lockstep
import own_envs


def test_a_forgotten_attribute_fails_conformity_with_no_contract_given():
    report = lockstep.check(own_envs.forgetful, seeds=range(2), steps=8, checks=["same"])
    assert not report.passed
    audits = [t["audit"] for t in report.trials]
    assert [a["conforms"] for a in audits] == [False, False]
    assert all(a["different_fields"] == ["visited"] for a in audits), audits
    change = audits[0]["changes"][0]
    assert (change["kind"], change["pointer"], change["before"]) == ("changed", "/visited", [])
    assert len(change["after"]) == 8
    assert "changed /visited: [] -> " in str(report)


def test_an_honest_env_conforms_and_the_report_says_the_contract_was_inferred():
    report = lockstep.check(own_envs.honest, seeds=range(2), steps=8, checks=["same", "process"])
    assert report.passed, str(report)
    contract = report.data["envs"][0]["about"]["contract"]
    assert contract["declared"] is False
    assert {"visited", "pos", "forget", "_np_random"} <= set(contract["layers"][0]["fields"])


def test_the_clis_options_have_the_same_names_here():
    """rollouts, seedless and budget are the CLI's --rollouts, --seedless and --budget."""
    report = lockstep.check(own_envs.honest, seeds=range(4), steps=8, checks=["same"], rollouts=4)
    assert report.data["params"]["rollouts"] == 4
    budgeted = lockstep.check(own_envs.honest, seeds=range(6), steps=200, checks=["same"], budget="1ms")
    params = budgeted.data["params"]
    assert params["seeds"] == [0] and params["steps"] == 10 and params["rollouts"] == 3
    assert params["budget"]["dropped"] == ["seeds 6 -> 1", "same-seed rollouts 10 -> 3", "steps 200 -> 10"]
    assert len(budgeted.trials) == 1
    roomy = lockstep.check(own_envs.honest, seeds=range(2), steps=8, checks=["same"], budget=600)
    assert roomy.data["params"]["budget"]["dropped"] == []
    for bad in ["2x", 0, -5, True]:
        with pytest.raises(lockstep.ConfigError):
            lockstep.check(own_envs.honest, seeds=range(1), steps=8, checks=["same"], budget=bad)
    with pytest.raises(lockstep.ConfigError):
        lockstep.check(own_envs.honest, seeds=range(1), steps=8, rollouts=1)
