"""Issue 30 item 2: a text-action env driven by a policy of its arguments, in this process."""

import lockstep
import own_envs


def test_a_policy_drives_a_text_action_env_and_is_recorded():
    report = lockstep.check(own_envs.clicker, seeds=range(2), steps=6, checks=["same", "other", "interleaved", "process"], policy="lockstep_adapter.testing:click_policy")
    assert report.passed, str(report)
    driver = report.data["envs"][0]["about"]["driver"]
    assert driver["policy"]["name"] == "lockstep_adapter.testing:click_policy"
    assert len(driver["policy"]["sha256"]) == 64


def test_a_policy_that_reads_a_global_rng_is_a_finding():
    report = lockstep.check(own_envs.clicker, seeds=[0], steps=6, checks=["same"], policy="lockstep_adapter.testing:impure_policy")
    assert not report.passed
    assert "depends on something besides its arguments" in str(report)
    assert "policy='lockstep_adapter.testing:impure_policy'" in report.failures[0].replay, "the replay call keeps the policy"
