"""The ``filesystem`` backend, confined as rlm's own workspace actions are: deepagents' ``FilesystemBackend``
(virtual paths under ``root``) whose writes, edits, deletes and uploads never touch version-control or tool
metadata (``.git``, ``.envrc``…) and create files by walking the path one folder at a time without following a
link (``rlm_host.open_in_workspace``). Imported only when the backend is chosen (it imports deepagents)."""

from __future__ import annotations

import os
from pathlib import Path

from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import DeleteResult, EditResult, FileUploadResponse, WriteResult

from rlm_host.sdk.sandbox import check_workspace_write, open_in_workspace


class ConfinedFilesystemBackend(FilesystemBackend):
    """``FilesystemBackend(root_dir=root, virtual_mode=True)`` with rlm's workspace rules on every change."""

    def __init__(self, root: Path) -> None:
        super().__init__(root_dir=root, virtual_mode=True)

    def _writable(self, file_path: str) -> str:
        """The path relative to the root, once the backend's own checks and ours pass (ValueError otherwise)."""
        relative = self._resolve_path(file_path).relative_to(self.cwd).as_posix()
        check_workspace_write(relative)
        return relative

    def write(self, file_path: str, content: str) -> WriteResult:
        try:
            relative = self._writable(file_path)
            self._put(relative, content.encode("utf-8"))
        except (ValueError, OSError, UnicodeEncodeError) as exc:
            return WriteResult(error=f"Error writing file '{file_path}': {exc}")
        return WriteResult(path=file_path)

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        try:
            self._writable(file_path)
        except (ValueError, OSError) as exc:
            return EditResult(error=f"Error editing file '{file_path}': {exc}")
        return super().edit(file_path, old_string, new_string, replace_all)

    def delete(self, file_path: str) -> DeleteResult:
        try:
            self._writable(file_path)
        except (ValueError, OSError) as exc:
            return DeleteResult(error=f"Error deleting '{file_path}': {exc}")
        return super().delete(file_path)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        responses = []
        for path, content in files:
            try:
                self._put(self._writable(path), content)
                responses.append(FileUploadResponse(path=path, error=None))
            except (ValueError, OSError):
                responses.append(FileUploadResponse(path=path, error="permission_denied"))
        return responses

    def _put(self, relative: str, data: bytes) -> None:
        fd = open_in_workspace(self.cwd, relative, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, make_parents=True)
        with os.fdopen(fd, "wb") as handle:
            os.set_blocking(fd, True)
            handle.write(data)
