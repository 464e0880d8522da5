"""A headless Chromium (and other system programs) for this repository's tests that check a page or a terminal app
for real (rlm-bench's HTML reports, rlm-tui's web app and tmux session). Repository test support, not a helper of
``rlm_host.testing``: it may install Debian packages, which a library for plugin authors must not do.

``chromium`` is a session fixture (``from support.browser import chromium`` into the test modules that need it;
``tests`` is on pytest's ``pythonpath``) giving the browser's path:
found on PATH, else installed with apt-get when the tests run as root on Debian (as CI does), else the test is
skipped — or fails, when ``RLM_REQUIRE_BROWSER=1`` says the browser must be there. ``browser(binary, profile,
*args)`` runs it headless with a throw-away profile (``--dump-dom``, ``--screenshot=…``,
``--remote-debugging-port``…).
``system_program(name, package)`` does the same finding-or-installing for another program (``tmux``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import pytest


def system_program(name: str, package: Optional[str] = None, *, required_by: str = "RLM_REQUIRE_BROWSER") -> str:
    """The path of program ``name``, installing Debian package ``package`` (default: ``name``) when running as
    root with apt-get; skips the test when it cannot be had (fails instead when ``required_by`` is set to 1)."""
    found = shutil.which(name)
    problem = ""
    if not found:
        if os.geteuid() == 0 and shutil.which("apt-get"):
            apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            wait = ["-o", "DPkg::Lock::Timeout=600"]  # another install (the Docker engine's) may hold the lock
            install = ["apt-get", *wait, "install", "-y", package or name]
            for command in (install, ["apt-get", *wait, "update"], install):  # a fresh machine needs the update first
                run = subprocess.run(command, capture_output=True, text=True, timeout=900, env=apt_env)
                if "install" in command and run.returncode == 0:
                    break
            found = shutil.which(name)
            problem = "" if found else f"apt-get install {package or name} failed: {run.stderr.strip()[-300:]}"
        else:
            problem = f"{name} is not installed and cannot be installed (not root or no apt-get)"
    if not found:
        if os.environ.get(required_by) == "1":
            pytest.fail(f"{required_by}=1: {problem}")
        pytest.skip(problem)
    return found


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a Chromium binary (installed on demand where possible; see the module docstring)."""
    if shutil.which("chromium-browser") and not shutil.which("chromium"):
        return str(shutil.which("chromium-browser"))
    return system_program("chromium")


def browser(binary: str, profile: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run Chromium headless with its own profile folder and ``args``; its completed process (text output)."""
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--window-size=1200,1600", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


__all__ = ["chromium", "browser", "system_program"]
