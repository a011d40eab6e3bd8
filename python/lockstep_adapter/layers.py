"""The layers an env's state holds besides its attributes (docs/protocol.md, "Layers").

A web env's starting state is mostly in its browser: cookies, local and session storage,
IndexedDB, the pages open. lockstep reads a browser itself, over DevTools, with the probe a
contract's ``probe = "browser"`` layer uses; the adapter only says where the browser is. The
handshake names the layers (``"layers": ["browser"]``) and each ``state`` answer says where
each is now, as a probe spec (``{"browser": {"probe": "browser", "cdp": "http://..."}}``):
BrowserGym launches a new browser at every reset, so the endpoint moves.

Where the adapter finds them:

- an env (its ``unwrapped``) that defines ``lockstep_layers()``, returning that mapping (a
  layer whose value is ``None`` is not there yet, before the first reset);
- a BrowserGym env: its Playwright browser talks to Playwright over a pipe and opens no
  DevTools port, so the adapter wraps BrowserGym's process-global Playwright's
  ``chromium.launch`` to add ``--remote-debugging-port`` (a free port chosen here), and finds
  the endpoint of the env's current ``browser``. Nothing else of the launch changes.
"""

import json
import os
import re
import socket
import urllib.parse
import urllib.request

#: DevTools endpoints of the browsers launched through the wrapped BrowserGym launch, by the
#: id of their Playwright ``Browser`` (the object is kept with it, so an id is never reused).
_LAUNCHED = {}

#: Browser versions read from the DevTools endpoints of layers served, for provenance.
_VERSIONS = {}

#: Every browser the env has named as a layer in this process, by its DevTools endpoint
#: ``(host, port)`` (a loopback host as ``"loopback"``), to the layer's name: an env that
#: launches a fresh browser at each reset names one on a new port every time, and what it did to
#: launch, drive and quit those browsers is the layer's (:func:`attribute_effects`).
_NAMED_BROWSERS = {}

#: The layer of the browser a BrowserGym env launched through Playwright, once named: the
#: Playwright driver process (started when the env is made) is how that browser is driven.
_PLAYWRIGHT_LAYER = []

#: Profile directories (absolute paths) of the browser launches found to be named layers, to the
#: layer's name: kept past the effects that showed them, because a later reset deletes the
#: profile of the browser the one before launched.
_PROFILES = {}


def names(env):
    """The layer names of ``env``, for the handshake; prepares a BrowserGym env's launch."""
    unwrapped = getattr(env, "unwrapped", env)
    own = getattr(unwrapped, "lockstep_layers", None)
    if callable(own):
        return sorted(own() or {})
    if _is_browsergym(unwrapped):
        _wrap_browsergym_launch()
        return ["browser"]
    return []


#: A BrowserGym env's attributes that hold Playwright objects: its task browser (read as the
#: ``browser`` layer) and its chat window's browser, whose messages it also keeps as data.
_BROWSERGYM_PLAYWRIGHT = ("/browser", "/context", "/page", "/chat/browser", "/chat/context", "/chat/page")


def replaced_attributes(env):
    """Attribute paths of ``env`` that its layers stand for, left out of its attribute state."""
    unwrapped = getattr(env, "unwrapped", env)
    if not callable(getattr(unwrapped, "lockstep_layers", None)) and _is_browsergym(unwrapped):
        return list(_BROWSERGYM_PLAYWRIGHT)
    return []


def current(env):
    """Where each layer of ``env`` is now: ``{NAME: {"probe": P, ...}}``, without the layers
    that are not there yet."""
    found = _where(env)
    _name_browsers(found)
    for name, spec in found.items():
        if spec.get("probe") == "browser" and spec.get("cdp") and name not in _VERSIONS:
            _VERSIONS[name] = _browser_version(spec["cdp"])
    return found


def note(env):
    """Notes where ``env``'s browsers are now, asking them nothing: called after each reset
    and step while effects are recorded, so that every browser the env launches is known as
    its layer's even where lockstep does not ask for the state after it (``contract infer``).
    Never fails the call it follows: a layer that cannot be found is the state request's
    error to report."""
    try:
        _name_browsers(_where(env))
    except Exception:  # noqa: BLE001 - see above
        pass


def _where(env):
    unwrapped = getattr(env, "unwrapped", env)
    own = getattr(unwrapped, "lockstep_layers", None)
    if callable(own):
        return {name: spec for name, spec in (own() or {}).items() if spec is not None}
    if _is_browsergym(unwrapped):
        browser = getattr(unwrapped, "browser", None)
        launched = _LAUNCHED.get(id(browser)) if browser is not None else None
        if launched and not _PLAYWRIGHT_LAYER:
            _PLAYWRIGHT_LAYER.append("browser")
        return {"browser": {"probe": "browser", "cdp": launched[1]}} if launched else {}
    return {}


def _name_browsers(found):
    for name, spec in found.items():
        if spec.get("probe") == "browser" and spec.get("cdp"):
            endpoint = _endpoint(spec["cdp"])
            if endpoint is not None:
                _NAMED_BROWSERS[endpoint] = name


_DEBUGGING_PORT = re.compile(r"--remote-debugging-port=(\d+)")
_PROFILE_DIR = re.compile(r"--user-data-dir=(\S+)")
#: How Playwright for Python starts its driver: ``.../playwright/driver/node .../cli.js run-driver``.
_PLAYWRIGHT_DRIVER = re.compile(r"playwright.*\bcli\.js run-driver$")
_FILE_KINDS = ("file_read", "file_write", "file_delete", "file_rename", "directory_create", "sqlite")


def attribute_effects(effects):
    """``effects`` (the recorder's records) with those of the browsers the env named as layers
    marked ``"layer": NAME``: the launch of a browser whose DevTools port is a named layer's,
    what was done in that launch's profile directory, and the requests and connections to a
    named endpoint; for a BrowserGym env, the Playwright driver its browsers are launched and
    driven through. lockstep reads such a browser itself after every reset, so these are not
    state the contract misses (no warning; ``contract infer`` proposes no layer for them).

    Their ports and profile paths change at every launch: they are written ``<port>`` and
    ``<profile>``, and the records that are then the same are merged, so that the report's
    bytes do not move from run to run and three resets' launches are one line, counted three
    times. Everything else is returned as it was, in the same order."""
    for e in effects:
        if e["kind"] == "subprocess":
            port = _DEBUGGING_PORT.search(e["target"])
            profile = _PROFILE_DIR.search(e["target"])
            layer = port and _NAMED_BROWSERS.get(("loopback", int(port.group(1))))
            if layer and profile:
                _PROFILES[os.path.abspath(profile.group(1))] = layer
    merged = {}
    for e in effects:
        e = dict(e)
        layer, target = _layer_of(e)
        if layer is not None:
            e["layer"], e["target"], e["path"] = layer, target, None
        key = (e["phase"], e["kind"], e["target"], e["file"], e["line"], e.get("layer"))
        if key in merged:
            merged[key]["count"] += e["count"]
        else:
            merged[key] = e
    return list(merged.values())


def _layer_of(e):
    """``(layer, target as the report shows it)`` of an effect of a named browser, else Nones."""
    kind, target = e["kind"], e["target"]
    if kind in ("http", "socket"):
        endpoint = _endpoint(target if "://" in target else "tcp://" + target)
        layer = _NAMED_BROWSERS.get(endpoint) if endpoint is not None else None
        if layer is not None:
            scheme, _, rest = target.rpartition("://")
            host = rest.rpartition(":")[0]
            return layer, f"{scheme}://{host}:<port>" if scheme else f"{host}:<port>"
    elif kind == "subprocess":
        port = _DEBUGGING_PORT.search(target)
        layer = port and _NAMED_BROWSERS.get(("loopback", int(port.group(1))))
        if layer:
            shown = _DEBUGGING_PORT.sub("--remote-debugging-port=<port>", target)
            return layer, _PROFILE_DIR.sub("--user-data-dir=<profile>", shown)
        if _PLAYWRIGHT_LAYER and _PLAYWRIGHT_DRIVER.search(target):
            return _PLAYWRIGHT_LAYER[0], target
    elif kind in _FILE_KINDS and e.get("path"):
        path = os.path.abspath(e["path"])
        for profile, layer in list(_PROFILES.items()):
            if path == profile or path.startswith(profile + os.sep):
                return layer, "<profile>" + path[len(profile) :]
    return None, None


def _endpoint(url):
    """``(host, port)`` of ``url``, a loopback host as ``"loopback"``; None when it has no port."""
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if host is None or port is None:
        return None
    if host == "localhost" or host == "::1" or host.startswith("127."):
        host = "loopback"
    return host, port


def browser_versions():
    """``{LAYER: "Chrome/156.0.8078.114"}`` of the browser layers served so far."""
    return {name: v for name, v in sorted(_VERSIONS.items()) if v is not None}


def _browser_version(endpoint):
    try:
        with urllib.request.urlopen(endpoint.rstrip("/") + "/json/version", timeout=5) as r:
            return json.load(r).get("Browser")
    except (OSError, ValueError):
        return None


def _is_browsergym(env):
    return type(env).__module__.startswith("browsergym.") and hasattr(env, "browser")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wrap_browsergym_launch():
    import browsergym.core

    chromium = browsergym.core._get_global_playwright().chromium
    if getattr(chromium.launch, "lockstep_wrapped", False):
        return
    launch = chromium.launch

    def launch_with_devtools(*args, **kwargs):
        for key, (old, _) in list(_LAUNCHED.items()):
            if not old.is_connected():
                del _LAUNCHED[key]
        port = _free_port()
        kwargs["args"] = list(kwargs.get("args") or []) + [f"--remote-debugging-port={port}"]
        browser = launch(*args, **kwargs)
        _LAUNCHED[id(browser)] = (browser, f"http://127.0.0.1:{port}")
        return browser

    launch_with_devtools.lockstep_wrapped = True
    chromium.launch = launch_with_devtools
