"""Making ``import rlm`` this layer, for code written against the authors' module paths: opt-in only (a call, or
the stand-in folder on PYTHONPATH), one module object under both names, and never over the authors' own package.
Each case runs in a fresh interpreter, as a program would."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from rlm_compat_rlms.standin import STANDIN_DIR


def python(code: str, cwd: Path, pythonpath: list[Path] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_nothing_is_called_rlm_until_asked():
    assert importlib.util.find_spec("rlm") is None, "the distribution must never install a module named rlm"
    assert "rlm" not in sys.modules


def test_install_as_rlm_makes_every_rlm_module_the_layers_own(tmp_path):
    code = """
import rlm_compat_rlms
rlm_compat_rlms.install_as_rlm()
import rlm, rlm.core.rlm, rlm.logger, rlm.core.types, rlm.utils.exceptions
import rlm_compat_rlms.core.rlm as layer
assert rlm is rlm_compat_rlms and rlm.core.rlm is layer and rlm.logger.RLMLogger is rlm_compat_rlms.logger.RLMLogger
from unittest.mock import patch
with patch.object(rlm.core.rlm, "get_client") as patched:
    assert layer.get_client is patched  # one module, two names: a patch through either is seen by both
assert layer.__spec__.name == "rlm_compat_rlms.core.rlm"
try:
    import rlm.environments
except ModuleNotFoundError as exc:
    print("missing:", exc.name)
rlm_compat_rlms.install_as_rlm()  # twice is fine
print("ok", rlm.__all__[0])
"""
    done = python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["missing: rlm.environments", "ok RLM"]


def test_the_stand_in_folder_on_pythonpath_does_the_same(tmp_path):
    printed = subprocess.run([sys.executable, "-m", "rlm_compat_rlms.standin"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert Path(printed) == STANDIN_DIR and (STANDIN_DIR / "rlm" / "__init__.py").is_file()
    done = python("import rlm.core.rlm as m; from rlm import RLM; print(m.__name__, RLM.__module__)", tmp_path,
                  [STANDIN_DIR])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["rlm_compat_rlms.core.rlm", "rlm_compat_rlms.core.rlm"]


def test_the_authors_package_is_never_shadowed(tmp_path):
    authors = tmp_path / "site-packages" / "rlm"
    authors.mkdir(parents=True)
    (authors / "__init__.py").write_text("AUTHORS = True\n")
    through_the_folder = python("import rlm", tmp_path, [STANDIN_DIR, authors.parent])
    assert through_the_folder.returncode != 0
    assert "the authors' rlm package is installed" in through_the_folder.stderr
    by_the_call = python("import rlm_compat_rlms; rlm_compat_rlms.install_as_rlm()", tmp_path, [authors.parent])
    assert "the authors' rlm package is installed" in by_the_call.stderr
    already = python("import sys, rlm, rlm_compat_rlms; rlm_compat_rlms.install_as_rlm()", tmp_path,
                     [authors.parent])
    assert "already imported" in already.stderr


def test_a_folder_that_merely_is_called_rlm_is_no_package_in_the_way(tmp_path):
    (tmp_path / "rlm").mkdir()  # a data folder in the working directory: no __init__.py, not the authors' package
    (tmp_path / "rlm" / "notes.txt").write_text("x")
    done = python("import rlm_compat_rlms; rlm_compat_rlms.install_as_rlm(); import rlm.core.rlm; print('ok')",
                  tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
