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
import socket
import urllib.request

#: DevTools endpoints of the browsers launched through the wrapped BrowserGym launch, by the
#: id of their Playwright ``Browser`` (the object is kept with it, so an id is never reused).
_LAUNCHED = {}

#: Browser versions read from the DevTools endpoints of layers served, for provenance.
_VERSIONS = {}


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
    unwrapped = getattr(env, "unwrapped", env)
    own = getattr(unwrapped, "lockstep_layers", None)
    if callable(own):
        found = {name: spec for name, spec in (own() or {}).items() if spec is not None}
    elif _is_browsergym(unwrapped):
        browser = getattr(unwrapped, "browser", None)
        launched = _LAUNCHED.get(id(browser)) if browser is not None else None
        found = {"browser": {"probe": "browser", "cdp": launched[1]}} if launched else {}
    else:
        found = {}
    for name, spec in found.items():
        if spec.get("probe") == "browser" and spec.get("cdp") and name not in _VERSIONS:
            _VERSIONS[name] = _browser_version(spec["cdp"])
    return found


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
