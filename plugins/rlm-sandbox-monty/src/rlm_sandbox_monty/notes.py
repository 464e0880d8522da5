"""What the model is told about Monty's Python subset (``SandboxInfo.python_notes``).

Every claim here is checked against the installed pydantic-monty by ``tests/test_monty_python_notes.py``
(``AVAILABLE_MODULES`` import, ``MISSING_MODULES`` do not, each unsupported feature fails), so the prompt
cannot silently drift from what the interpreter does.
"""

AVAILABLE_MODULES = (
    "re", "json", "math", "collections", "itertools", "functools", "bisect", "datetime", "random", "hashlib",
    "base64", "binascii", "decimal", "copy", "csv", "time", "dataclasses", "typing", "unicodedata", "tomllib",
    "asyncio", "pathlib", "os",
)

MISSING_MODULES = (
    "textwrap", "string", "heapq", "statistics", "io", "operator", "enum", "contextlib", "struct", "zlib",
    "uuid", "difflib", "logging", "pprint", "fractions", "subprocess", "socket", "ctypes", "numpy",
)

PYTHON_NOTES = (
    "It is Monty, a sandboxed subset of Python 3 (most syntax, builtins and str/list/dict/set methods work; "
    "classes without a base class, dataclasses, closures, lambdas, comprehensions and generator expressions, "
    "match, f-strings, try/except/finally, async/await). NOT available: class inheritance (so no custom "
    "exception classes: raise ValueError/RuntimeError), generators and `yield` (build lists), "
    "@property/@staticmethod/@classmethod, the `del` statement (use dict.pop / list.pop), sorting objects by "
    "__lt__ (use key=), super, globals, dir, callable, bytearray, collections.OrderedDict, file, network and "
    "environment access, third-party packages. Modules: " + ", ".join(AVAILABLE_MODULES[:-2])
    + ", pathlib and os.path (paths only, no file access). Missing: " + ", ".join(MISSING_MODULES[:14]) + "."
)
