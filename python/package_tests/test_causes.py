"""In this process, as from the CLI (issue 27): a failed check names the line of the env's
code that read a nondeterministic source; what the env touched outside itself is a warning;
``lockstep.contract.infer`` proposes a contract with a layer for each resource it saw."""

import inspect

import lockstep
import own_envs
from lockstep_adapter import testing


def _line_of(snippet):
    lines, start = inspect.getsourcelines(testing)
    # A module's source starts at line 1 (getsourcelines says 0 for a module).
    return max(start, 1) + next(i for i, line in enumerate(lines) if snippet in line)


def test_a_global_rng_is_named_by_its_line():
    report = lockstep.check(own_envs.global_rng_walker, seeds=[0], steps=8, checks=["interleaved"])
    assert not report.passed
    cause = report.trials[0]["checks"][0]["cause"]
    first = cause["sources"][0]
    assert first["kind"] == "shared_rng", cause
    line = _line_of("noise = np.random.normal(scale=0.01, size=2)")
    assert first["site"].endswith(f"lockstep_adapter/testing.py:{line}"), cause
    assert f"testing.py:{line} in step" in str(report)


def test_an_honest_env_names_no_cause():
    report = lockstep.check(own_envs.honest, seeds=[0], steps=8, checks=["same", "interleaved"])
    assert report.passed, str(report)
    assert all("cause" not in c for c in report.trials[0]["checks"])
    assert "warning" not in str(report)


def test_a_home_cache_is_a_warning_in_this_process_too(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    report = lockstep.check(own_envs.home_cache_walker, seeds=[0], steps=8, checks=["same"])
    warnings = report.trials[0]["audit"]["warnings"]
    assert any("wrote" in w and "lockstep-walker/layout.txt during reset" in w and "in _home_cached_layout" in w for w in warnings), warnings
    assert "state outside the process that the reset contract does not name" in str(report)


def test_contract_infer_names_the_twins_layers(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("LOCKSTEP_TWIN_DATA", str(data))
    out = tmp_path / "proposed.toml"
    text = lockstep.contract.infer(own_envs.twin, seeds=1, steps=6, out=out)
    assert out.read_text() == text
    assert f'probe = "files"\npath = "{data / "cache"}"' in text, text
    assert f'probe = "sqlite"\npath = "{data / "app.db"}"' in text, text
    assert '# probe = "http"' in text, text


def test_the_inferred_contract_holds_the_env_in_this_process(tmp_path, monkeypatch):
    """``lockstep.check(contract=FILE)`` is ``lockstep check --contract FILE``: the contract
    :func:`lockstep.contract.infer` wrote has the twin's cache directory and database as
    probed layers, read after every reset here, and the cache its partial reset keeps is the
    field that differs (the database is reset)."""
    data = tmp_path / "data"
    monkeypatch.setenv("LOCKSTEP_TWIN_DATA", str(data))
    path = tmp_path / "proposed.toml"
    lockstep.contract.infer(own_envs.twin, seeds=1, steps=6, out=path)
    # What the inference run left in the data directory is not the check's starting state.
    import shutil

    shutil.rmtree(data)
    report = lockstep.check(own_envs.twin, seeds=[0], steps=6, checks=["same"], contract=path)
    audit = report.trials[0]["audit"]
    assert audit["conforms"] is False, audit
    assert "dir_cache" in audit["different_fields"], audit
    assert "db_app" not in audit["different_fields"], audit
    assert "added /dir_cache/choice.json" in str(report), str(report)
    # The replay call names the same file.
    assert f"contract={str(path)!r}" in str(report), str(report)


def test_a_contract_file_that_is_not_one_is_a_config_error(tmp_path):
    bad = tmp_path / "contract.toml"
    bad.write_text('name = "x"\nversion = "one"\n')
    try:
        lockstep.check(own_envs.honest, seeds=[0], steps=2, checks=["same"], contract=bad)
    except lockstep.ConfigError as e:
        assert str(bad) in str(e), e
    else:
        raise AssertionError("a broken contract file was taken")
