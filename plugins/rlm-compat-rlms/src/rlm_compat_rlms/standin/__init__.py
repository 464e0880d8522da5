"""``install_as_rlm()``: make ``import rlm`` — and ``rlm.core.rlm``, ``rlm.logger``, every ``rlm.…`` module — this
layer, for code and tests written for the authors' package that should run unchanged.

``rlm.X`` is then the very module ``rlm_compat_rlms.X`` (one object under two names), so what code patches through
one name (``patch.object(rlm.core.rlm, "get_client")``) the other sees. A module the layer does not have stays
missing (``No module named 'rlm.environments'``). Opt-in, twice over: nothing happens until this is called, or
until the stand-in folder is put on ``PYTHONPATH`` (``python -m rlm_compat_rlms.standin`` prints it; its
``rlm/__init__.py`` calls this). Either refuses when the authors' package is installed or already imported: the
layer never shadows it."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

LAYER = "rlm_compat_rlms"
NAME = "rlm"
#: The folder to put on PYTHONPATH: it holds the stand-in package ``rlm``.
STANDIN_DIR = Path(__file__).resolve().parent / "site"


def install_as_rlm() -> ModuleType:
    """Make ``rlm`` this layer (idempotent) and return it; an ImportError when the authors' ``rlm`` is there."""
    layer = importlib.import_module(LAYER)
    current = sys.modules.get(NAME)
    if current is not None and current is not layer and not _is_standin(current):
        raise ImportError(f"the authors' rlm package is already imported ({getattr(current, '__file__', current)}): "
                          "rlm_compat_rlms does not replace it")
    authors = _authors_package()
    if authors is not None:
        raise ImportError(f"the authors' rlm package is installed ({authors}): import it as it is, or uninstall it "
                          "(pip uninstall rlms) to run this code on rlm_compat_rlms")
    if not any(isinstance(finder, _LayerAsRlm) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LayerAsRlm())
    for name, module in list(sys.modules.items()):  # what is already imported answers to both names at once
        if name == LAYER or name.startswith(LAYER + "."):
            sys.modules[NAME + name[len(LAYER):]] = module
    return layer


def _is_standin(module: ModuleType) -> bool:
    origin = getattr(module, "__file__", None)
    return origin is not None and Path(origin).resolve().is_relative_to(STANDIN_DIR)


def _authors_package() -> Optional[str]:
    """Where an ``rlm`` other than the stand-in is importable from, if anywhere."""
    paths = [p for p in sys.path if _resolved(p) != STANDIN_DIR]
    spec = importlib.machinery.PathFinder.find_spec(NAME, paths)
    if spec is None or spec.origin is None:  # none, or a bare folder called rlm (a namespace, no package)
        return None
    return spec.origin


def _resolved(entry: str) -> Optional[Path]:
    try:
        return Path(entry or ".").resolve()
    except OSError:
        return None


class _LayerAsRlm(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``rlm.X`` as the layer's ``rlm_compat_rlms.X`` and hands back that module itself."""

    def __init__(self) -> None:
        self._specs: dict[int, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != NAME and not fullname.startswith(NAME + "."):
            return None
        if importlib.util.find_spec(LAYER + fullname[len(NAME):]) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> ModuleType:
        module = importlib.import_module(LAYER + spec.name[len(NAME):])
        self._specs[id(module)] = module.__spec__  # the import system sets the alias's spec: put the real one back
        return module

    def exec_module(self, module: ModuleType) -> None:
        original = self._specs.pop(id(module), None)
        if original is not None:
            module.__spec__ = original


__all__ = ["install_as_rlm", "STANDIN_DIR"]
