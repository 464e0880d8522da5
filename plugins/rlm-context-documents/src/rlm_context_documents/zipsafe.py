"""ZIP packages (DOCX, PPTX, XLSX, EPUB) opened so that what they declare never drives more work than the caps.

``check_package`` refuses a package of more than ``MAX_ENTRIES`` entries or whose entries unpack, together, to
more than the cap: ``zipfile`` never yields more than an entry's declared size (a stream that inflates further
fails its CRC), so the declared total bounds the bytes every reader of the package can unpack, the format
libraries' reads included, even when entries overlap (a "non-overlapping" zip bomb declares each copy).
``read_member`` reads one entry counting the bytes it really gets and stops at its own cap.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from rlm_context_documents.errors import corrupt, limit_error

#: Entries a package may hold (a real EPUB or workbook has hundreds; each costs memory to list).
MAX_ENTRIES = 50_000
BLOCK = 1 << 20
MB = 1024 * 1024


def check_package(path: Path, label: str, max_bytes: int, section: str) -> None:
    """Raise :class:`DocumentError` unless ``path`` is a ZIP package within the caps."""
    try:
        with zipfile.ZipFile(path) as package:
            infos = package.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise corrupt(label, f"not a ZIP package ({exc})") from None
    if len(infos) > MAX_ENTRIES:
        raise limit_error(f"the {label} package holds {len(infos):,} entries (at most {MAX_ENTRIES:,} are read)",
                          None, section)
    declared = sum(info.file_size for info in infos)
    if declared > max_bytes:
        raise limit_error(f"the {label} package unpacks to {declared / MB:,.0f} MB, more than "
                          f"max_unzipped_mb = {max_bytes // MB}", "max_unzipped_mb", section)


def read_member(package: zipfile.ZipFile, name: str, limit: int, label: str, section: str) -> bytes:
    """Entry ``name``'s bytes, read in blocks; past ``limit`` bytes it is refused, whatever its header says."""
    data = bytearray()
    with package.open(name) as member:
        while block := member.read(BLOCK):
            data += block
            if len(data) > limit:
                raise limit_error(f"{name} in the {label} package unpacks to more than {limit // MB:,} MB",
                                  "max_unzipped_mb", section)
    return bytes(data)
