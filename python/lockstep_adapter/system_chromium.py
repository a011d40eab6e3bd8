"""Playwright with the system's Chromium: ``python -m lockstep_adapter.system_chromium DIR``.

BrowserGym drives Chromium through Playwright, which downloads a browser build of its own
(``playwright install chromium``, about 150 MB, from Microsoft's CDN). On a machine that has
Debian's Chromium and no such download, this links it where Playwright looks: it makes
``DIR/chromium-REVISION/chrome-linux/chrome`` (the revision Playwright's ``browsers.json``
names) a symlink to the system binary, and prints ``PLAYWRIGHT_BROWSERS_PATH=DIR``, the
variable that points Playwright there. It changes nothing else; Chromium 156 drives well
under Playwright 1.44, which was built for 125 (docs/findings.md, "BrowserGym").

The binary is ``LOCKSTEP_CHROMIUM``, else ``/usr/lib/chromium/chromium`` (Debian's real
binary behind the ``/usr/bin/chromium`` wrapper script), else ``chromium`` on the PATH.
"""

import json
import os
import shutil
import sys


def chromium_binary():
    for candidate in (os.environ.get("LOCKSTEP_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("system_chromium: no Chromium found (set LOCKSTEP_CHROMIUM, or on Debian: apt-get install chromium)")


def playwright_revision():
    try:
        import playwright
    except ImportError:
        raise SystemExit("system_chromium: Playwright is not installed (pip install './python[browsergym]')") from None
    path = os.path.join(os.path.dirname(playwright.__file__), "driver", "package", "browsers.json")
    with open(path) as f:
        browsers = json.load(f)["browsers"]
    return next(b["revision"] for b in browsers if b["name"] == "chromium")


def link(directory):
    """Makes Playwright's Chromium under ``directory`` the system's; returns the link's path."""
    target = os.path.join(os.path.abspath(directory), f"chromium-{playwright_revision()}", "chrome-linux")
    os.makedirs(target, exist_ok=True)
    chrome = os.path.join(target, "chrome")
    binary = chromium_binary()
    if os.path.islink(chrome) or os.path.exists(chrome):
        if os.path.realpath(chrome) == os.path.realpath(binary):
            return chrome
        os.remove(chrome)
    os.symlink(binary, chrome)
    return chrome


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: python -m lockstep_adapter.system_chromium DIR")
    link(argv[0])
    print(f"PLAYWRIGHT_BROWSERS_PATH={os.path.abspath(argv[0])}")


if __name__ == "__main__":
    main(sys.argv[1:])
