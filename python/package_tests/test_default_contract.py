"""The env's attributes are its starting state by default (issue 29 item 1)."""

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
