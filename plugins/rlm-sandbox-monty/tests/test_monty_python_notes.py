"""Every claim of ``info.python_notes`` holds for the installed Monty (so the model is never misinformed)."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_monty")

from rlm_sandbox_monty.notes import AVAILABLE_MODULES, MISSING_MODULES, PYTHON_NOTES  # noqa: E402
from rlm_sandbox_monty.runtime import MontySandbox  # noqa: E402

WORKS = {
    "class without a base": "class A:\n    def __init__(self, v):\n        self.v = v\nassert A(3).v == 3",
    "dataclass":  # a default field too
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n    y: int = 0\nassert P(1).y == 0",
    "closure and lambda": "def mk(n):\n    return lambda x: x + n\nassert mk(2)(3) == 5",
    "comprehensions": "assert {i: i for i in range(2)} == {0: 0, 1: 1} and [i for i in 'ab'] == ['a', 'b']",
    "generator expression": "assert sum(x * x for x in range(4)) == 14",
    "match": "match [1, 2]:\n    case [a, b]:\n        r = a + b\nassert r == 3",
    "f-string": "assert f'{3.14159:.2f}|{7:03d}' == '3.14|007'",
    "try/except/finally": "try:\n    1 / 0\nexcept ZeroDivisionError:\n    r = 1\nfinally:\n    r += 1\nassert r == 2",
    "async/await": "async def f():\n    return 2\nassert await f() == 2",
    "sort with key": "assert sorted(['bb', 'a'], key=len) == ['a', 'bb']",
    "paths without files": "from pathlib import Path\nimport os\nassert str(Path('a') / 'b') == os.path.join('a', 'b')",
    "raise ValueError": "try:\n    raise ValueError('x')\nexcept ValueError as e:\n    assert str(e) == 'x'",
    "list.pop and dict.pop": "d = {'a': 1}\nd.pop('a')\nassert d == {}",
}

MISSING = {
    "class inheritance": "class A:\n    pass\nclass B(A):\n    pass",
    "custom exception class": "class Oops(Exception):\n    pass",
    "generators": "def g():\n    yield 1",
    "@property": "class A:\n    @property\n    def x(self):\n        return 1",
    "@staticmethod": "class A:\n    @staticmethod\n    def x():\n        return 1",
    "@classmethod": "class A:\n    @classmethod\n    def x(cls):\n        return 1",
    "del statement": "d = {'a': 1}\ndel d['a']",
    "sorting by __lt__": "class A:\n    def __lt__(self, other):\n        return True\nsorted([A(), A()])",
    "super": "super",
    "globals": "globals()",
    "dir": "dir()",
    "callable": "callable(len)",
    "bytearray": "bytearray(b'x')",
    "OrderedDict": "from collections import OrderedDict",
    "file access": "open('/etc/hostname').read()",
    "file access through pathlib": "from pathlib import Path\nPath('/etc/hostname').read_text()",
    "environment": "import os\nos.environ",
    "environment through getenv": "import os\nos.getenv('HOME')",
}


@pytest.fixture(scope="module")
def sandbox():
    with MontySandbox() as session:
        yield session


@pytest.mark.parametrize("module", AVAILABLE_MODULES)
def test_available_modules_import(sandbox, module):
    result = sandbox.execute(f"import {module}")
    assert result.ok, result.error


@pytest.mark.parametrize("module", MISSING_MODULES)
def test_missing_modules_do_not(sandbox, module):
    assert sandbox.execute(f"import {module}").error.startswith("ModuleNotFoundError")


@pytest.mark.parametrize("feature", WORKS)
def test_supported_features_work(sandbox, feature):
    result = sandbox.execute(WORKS[feature])
    assert result.ok, result.error


@pytest.mark.parametrize("feature", MISSING)
def test_unsupported_features_fail(sandbox, feature):
    assert sandbox.execute(MISSING[feature]).error


def test_the_notes_name_what_is_checked():
    for module in AVAILABLE_MODULES[:-2] + MISSING_MODULES[:14]:
        assert module in PYTHON_NOTES
    for word in ("inheritance", "yield", "@property", "`del`", "__lt__", "super", "OrderedDict", "file"):
        assert word in PYTHON_NOTES
    assert len(PYTHON_NOTES) < 1400  # it goes into every system prompt
