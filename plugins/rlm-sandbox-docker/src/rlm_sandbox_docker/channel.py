"""The worker's JSON lines over a container's attach socket.

The container runs ``worker.py`` with stdin open and no TTY. The host attaches to its stdin, stdout and stderr
through one hijacked HTTP connection of the engine API (attached before the container starts, so nothing is
missed) and writes requests to stdin as they are. What comes back is multiplexed: each frame is an 8-byte
header — stream (1 stdout, 2 stderr), three zero bytes, the payload size as a big-endian uint32 — then the
payload. A reader thread demultiplexes it: stdout is split into protocol lines, the end of stderr is kept for
crash reports. Only JSON is ever decoded from the container.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

from rlm_host.sdk.sandbox import Channel

HEADER = 8
STDOUT, STDERR = 1, 2
ATTACH = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1, "logs": 0}


class ContainerChannel(Channel):
    """A created (not yet started) container: attach, start, and speak the worker protocol with it."""

    def __init__(self, client: Any, container: Any, *, memory_note: str = "") -> None:
        super().__init__()
        self.client = client
        self.container = container
        self.memory_note = memory_note  # said when the container was killed for memory
        self._eof = threading.Event()
        self._write_lock = threading.Lock()
        handle = client.api.attach_socket(container.id, params=dict(ATTACH))
        self._handle = handle  # keeps the HTTP response (and with it the connection) alive
        self._sock = getattr(handle, "_sock", handle)  # a unix socket's SocketIO wraps the socket
        self._sock.settimeout(None)  # the client's request timeout must not cut a long wait for output
        self._reader = self._sock.makefile("rb", buffering=1 << 16)
        threading.Thread(target=self._read, name=f"rlm-docker-{container.short_id}", daemon=True).start()
        try:
            container.start()
        except BaseException:
            self.kill()
            raise

    @property
    def ident(self) -> str:
        """The container's id."""
        return self.container.id

    # -- reading ------------------------------------------------------------------------------------------
    def _read(self) -> None:
        pending: list[bytes] = []  # stdout after the last newline
        try:
            while True:
                header = self._reader.read(HEADER)
                if len(header) < HEADER:
                    break
                size = int.from_bytes(header[4:8], "big")
                payload = self._reader.read(size) if size else b""
                if len(payload) < size:
                    break
                if header[0] == STDOUT:
                    self._split_lines(payload, pending)
                elif header[0] == STDERR:
                    self.stderr_tail.append(payload)
        except (OSError, ValueError):
            pass
        finally:
            self._eof.set()
            self._closed()

    def _split_lines(self, payload: bytes, pending: list[bytes]) -> None:
        start = 0
        while (end := payload.find(b"\n", start)) >= 0:
            if pending:
                pending.append(payload[start:end])
                self._deliver(b"".join(pending))
                pending.clear()
            else:
                self._deliver(payload[start:end])
            start = end + 1
        if start < len(payload):
            pending.append(payload[start:])

    # -- the Channel interface ----------------------------------------------------------------------------
    def write_line(self, data: bytes) -> None:
        with self._write_lock:
            self._sock.sendall(data)
            self._sock.sendall(b"\n")

    def exited(self) -> bool:
        return self._eof.is_set()

    def describe_exit(self) -> str:
        """How the container ended (exit code, signal, out of memory), then the end of its stderr."""
        status, oom = None, False
        try:
            if self._eof.wait(5):
                status = self.client.api.wait(self.container.id, timeout=5).get("StatusCode")
                oom = bool(self.client.api.inspect_container(self.container.id)["State"].get("OOMKilled"))
        except Exception:
            pass
        if oom:
            how = "killed: out of memory" + (f" ({self.memory_note})" if self.memory_note else "")
        elif status is None:
            how = "it closed its channel"
        elif status > 128:
            try:
                how = f"killed by signal {signal.Signals(status - 128).name}"
            except ValueError:
                how = f"killed by signal {status - 128}"
            if status - 128 == signal.SIGKILL:
                how += " (out of memory, or killed from outside)"
        else:
            how = f"exit code {status}"
        tail = self.stderr_text(drop=lambda line: 'worker.py"' in line)  # no frames of the worker itself
        return how + (f".\nThe container's last stderr output:\n{tail}\n" if tail else "")

    def kill(self) -> None:
        """Remove the container (killing it) and close the connection; never raises."""
        try:
            self.container.remove(force=True)
        except Exception:  # already gone, or the engine is unreachable (the sweep at the next start removes it)
            pass
        self._eof.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the reader thread (closing its file could block)
        except Exception:
            pass
        for closable in (self._sock, self._handle):
            try:
                closable.close()
            except Exception:
                pass
