"""The cached command listing behind a fast ``rlm --help`` (``rlm_host.plugins.command_cache``): used only while the
installation it came from is unchanged, never for a broken one, refused when the file is not the user's own, and
never standing in for the plugins when a command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import RLM_SCRIPT

HOOKS = '''
from rlm_host import CommandSpec, hookimpl


def greet():
    """{help}"""
    print("hello from greet")


@hookimpl
def rlm_register_commands():
    return [CommandSpec("greet", "{help}", "cache_probe_hooks:greet")]
'''
PROBE = ("import sys\nfrom rlm_host.cli.main import main\ncode = main(sys.argv[1:])\n"
         "print('PLUGIN_IMPORTED=' + str('cache_probe_hooks' in sys.modules))\n")


def add_distribution(site: Path, help_text: str = "Say hello.") -> None:
    """A plugin distribution as pip lays one out: a hook module and its metadata folder."""
    info = site / "cache_probe-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cache-probe\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rlm]\ncache_probe = cache_probe_hooks\n")
    (site / "cache_probe_hooks.py").write_text(HOOKS.replace("{help}", help_text))


@pytest.fixture
def env(tmp_path: Path, isolated_env: dict[str, str]) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    full = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    full.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "cache"), RLM_PLUGINS="cache-probe")
    return full


def rlm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RLM_SCRIPT, *args], capture_output=True, text=True, env=env, timeout=60)


def probe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``rlm`` in a process that says whether the plugin's hook module was imported."""
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=60,
                          cwd=env["HOME"])


def cache_files(env: dict[str, str]) -> list[Path]:
    return sorted((Path(env["XDG_CACHE_HOME"]) / "rlm").glob("commands-*.json"))


def cached_help(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``rlm --help`` once the listing is cached (a load right after a change writes nothing: the next one does)."""
    for _ in range(5):
        before = len(cache_files(env))
        done = probe(env, "--help")
        if before:
            return done
    raise AssertionError(f"no cache written: {done.stdout[-300:]} {done.stderr[-300:]}")


def test_help_lists_plugin_commands_from_the_cache_without_importing_them(env, tmp_path):
    add_distribution(Path(env["PYTHONPATH"]))
    first = probe(env, "--help")
    assert "greet" in first.stdout and "PLUGIN_IMPORTED=True" in first.stdout, first.stderr
    again = cached_help(env)
    assert "PLUGIN_IMPORTED=False" in again.stdout, again.stderr
    assert again.stdout.replace("False", "True") == first.stdout  # the same listing, word for word
    (path,) = cache_files(env)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    ran = probe(env, "greet")  # running a command loads the plugins, whatever the cache says
    assert "hello from greet" in ran.stdout and "PLUGIN_IMPORTED=True" in ran.stdout


def test_a_plugin_installed_or_edited_after_the_cache_shows_at_once(env):
    site = Path(env["PYTHONPATH"])
    assert "greet" not in cached_help(env).stdout
    add_distribution(site)
    assert "Say hello." in rlm(env, "--help").stdout  # installing changed a sys.path folder
    cached_help(env)
    add_distribution(site, help_text="Say hello, edited in place.")  # an editable install's hook module edited
    assert "edited in place" in rlm(env, "--help").stdout
    (site / "cache_probe_hooks.py").unlink()
    (site / "cache_probe-1.0.dist-info" / "entry_points.txt").unlink()
    assert "greet" not in rlm(env, "--help").stdout


def test_a_broken_plugin_is_never_cached_and_warns_at_every_listing(env):
    site = Path(env["PYTHONPATH"])
    add_distribution(site)
    (site / "cache_probe_hooks.py").write_text("import not_a_module_anywhere\n")
    for _ in range(3):
        done = rlm(env, "--help")
        assert done.returncode == 0 and "plugin broken" in done.stderr and "cache-probe" in done.stderr
    assert cache_files(env) == []


@pytest.mark.parametrize("tamper", ["group readable", "planted by another file", "escape sequence", "not json",
                                    "a fifo"])
def test_a_cache_file_that_is_not_the_users_own_clean_listing_is_refused(env, tamper):
    add_distribution(Path(env["PYTHONPATH"]))
    cached_help(env)
    (path,) = cache_files(env)
    data = json.loads(path.read_text())
    if tamper == "group readable":
        data["commands"]["planted"] = "Planted."
        path.write_text(json.dumps(data))
        path.chmod(0o640)
    elif tamper == "planted by another file":
        data["commands"]["planted"] = "Planted."
        other = path.with_name("elsewhere.json")
        other.write_text(json.dumps(data))
        other.chmod(0o600)
        path.unlink()
        path.symlink_to(other)
    elif tamper == "escape sequence":
        data["commands"]["greet"] = "\x1b]0;pwned\x07Say hello."
        data["commands"]["planted"] = "Planted."
        path.write_text(json.dumps(data))
    elif tamper == "a fifo":  # opening it must not wait for a writer
        path.unlink()
        os.mkfifo(path)
    else:
        path.write_text("{not json")
    done = probe(env, "--help")
    assert "planted" not in done.stdout and "\x1b" not in done.stdout and "PLUGIN_IMPORTED=True" in done.stdout
    assert "Say hello." in done.stdout


def test_the_variables_choosing_plugins_choose_the_listing(env):
    add_distribution(Path(env["PYTHONPATH"]))
    assert "greet" in cached_help(env).stdout
    assert "greet" not in rlm({**env, "RLM_PLUGINS": ""}, "--help").stdout
    assert "greet" in rlm(env, "--help").stdout


def test_no_home_means_no_cache(monkeypatch):
    from rlm_host.plugins import command_cache

    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as the XDG rules say
    monkeypatch.setenv("HOME", "/home/someone")
    assert command_cache.cache_dir() == "/home/someone/.cache/rlm"
    monkeypatch.setenv("HOME", "relative")
    assert command_cache.cache_dir() is None and command_cache.read() is None
