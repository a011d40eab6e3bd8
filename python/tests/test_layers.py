"""What the adapter tells lockstep of an env's layers: where a named browser is, and which of
the env's effects are that browser's (its launch, its profile directory, requests to it)."""

import os
import socket

import pytest

from lockstep_adapter import layers


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test starts in a process that has named no layer yet."""
    monkeypatch.setattr(layers, "_NAMED_BROWSERS", {})
    monkeypatch.setattr(layers, "_PROFILES", {})
    monkeypatch.setattr(layers, "_PLAYWRIGHT_LAYER", [])
    monkeypatch.setattr(layers, "_VERSIONS", {})


def closed_port():
    """A loopback port nothing listens on (the version request fails at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Launches:
    """An env that launches a new browser at each reset and names it as its layer."""

    def __init__(self):
        self.endpoint = None

    def lockstep_layers(self):
        return {"browser": {"probe": "browser", "cdp": self.endpoint} if self.endpoint else None}


def effect(phase, kind, target, path=None, count=1):
    return {"phase": phase, "kind": kind, "target": target, "path": path, "file": None, "line": None, "function": None, "count": count}


def launch(port, profile):
    argv = f"/usr/bin/chromium --headless --remote-debugging-port={port} --user-data-dir={profile} about:blank"
    return effect("reset", "subprocess", argv)


def test_the_browsers_an_env_named_are_its_layer_and_the_rest_is_left_alone(tmp_path):
    env = Launches()
    profiles = [str(tmp_path / "profile-a"), str(tmp_path / "profile-b")]
    ports = [closed_port(), closed_port()]
    for port in ports:
        env.endpoint = f"http://127.0.0.1:{port}"
        assert layers.current(env) == {"browser": {"probe": "browser", "cdp": env.endpoint}}
    unnamed_port = closed_port()
    cache = str(tmp_path / "cache" / "choice.json")
    recorded = [
        effect("reset", "directory_create", "$TMPDIR/profile-a", profiles[0]),
        launch(ports[0], profiles[0]),
        effect("reset", "http", f"http://127.0.0.1:{ports[0]}", count=40),
        effect("reset", "file_write", "~/cache/choice.json", cache),
        effect("reset", "file_delete", "$TMPDIR/profile-a", profiles[0]),
        effect("reset", "directory_create", "$TMPDIR/profile-b", profiles[1]),
        launch(ports[1], profiles[1]),
        effect("reset", "http", f"http://localhost:{ports[1]}", count=2),
        effect("step", "socket", f"127.0.0.1:{ports[1]}"),
        effect("step", "file_write", "$TMPDIR/profile-b/Default/Cookies", os.path.join(profiles[1], "Default", "Cookies")),
        launch(unnamed_port, str(tmp_path / "elsewhere")),
        effect("step", "http", f"http://127.0.0.1:{unnamed_port}"),
    ]
    found = layers.attribute_effects([dict(e) for e in recorded])

    def shown(e):
        return (e["phase"], e["kind"], e["target"], e.get("layer"), e["count"])

    browser_launch = "/usr/bin/chromium --headless --remote-debugging-port=<port> --user-data-dir=<profile> about:blank"
    assert [shown(e) for e in found] == [
        # Both launches' profiles and launches are one line each, counted twice.
        ("reset", "directory_create", "<profile>", "browser", 2),
        ("reset", "subprocess", browser_launch, "browser", 2),
        ("reset", "http", "http://127.0.0.1:<port>", "browser", 40),
        ("reset", "file_write", "~/cache/choice.json", None, 1),
        ("reset", "file_delete", "<profile>", "browser", 1),
        ("reset", "http", "http://localhost:<port>", "browser", 2),
        ("step", "socket", "127.0.0.1:<port>", "browser", 1),
        ("step", "file_write", "<profile>/Default/Cookies", "browser", 1),
        # A browser the env never named is state the contract may miss: left as recorded.
        ("reset", "subprocess", recorded[10]["target"], None, 1),
        ("step", "http", f"http://127.0.0.1:{unnamed_port}", None, 1),
    ]
    assert all(e["path"] is None for e in found if e.get("layer"))
    assert found[3]["path"] == cache
    # The recorder's own records are not changed.
    assert recorded[1]["target"].endswith(f"--user-data-dir={profiles[0]} about:blank")


def test_a_profile_stays_the_layers_after_the_launch_that_showed_it(tmp_path):
    """The reset after the one that launched a browser deletes its profile: in a caller's
    process lockstep may ask only for the effects since then."""
    env, profile, port = Launches(), str(tmp_path / "p"), closed_port()
    env.endpoint = f"http://127.0.0.1:{port}"
    layers.current(env)
    layers.attribute_effects([launch(port, profile)])
    later = layers.attribute_effects([effect("reset", "file_delete", "$TMPDIR/p", profile)])
    assert [(e["target"], e.get("layer")) for e in later] == [("<profile>", "browser")]
    # A sibling whose name starts the same is not inside the profile.
    other = layers.attribute_effects([effect("reset", "file_write", "$TMPDIR/p2/x", profile + "2/x")])
    assert other[0].get("layer") is None


def test_playwright_s_driver_is_the_layer_s_once_a_browser_it_launched_is_named():
    driver = effect("make", "subprocess", "/venv/site-packages/playwright/driver/node /venv/site-packages/playwright/driver/package/cli.js run-driver")
    assert layers.attribute_effects([driver])[0].get("layer") is None
    layers._PLAYWRIGHT_LAYER.append("browser")
    assert layers.attribute_effects([driver])[0]["layer"] == "browser"
    node = effect("make", "subprocess", "/usr/bin/node server.js")
    assert layers.attribute_effects([node])[0].get("layer") is None
