"""A real Ray cluster on this machine for the sweep tests: a head and more nodes, each a ``ray start --block``
process of its own (its own process group, temp dir and ports), stopped by killing those processes — never
``ray stop``, which ends every Ray on the machine.

Ray rewrites ``--node-ip-address=127.0.0.1`` to the machine's address (its GCS listens on every interface), so
nodes are told apart by their node ids. The cluster uses token authentication with a token of its own (in the
nodes' environment); ``driver_env`` is what a driver needs to join it (a HOME whose ``~/.ray/auth_token`` holds
that token, as on a machine where someone ran ``ray get-auth-token``)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

RAY = str(Path(sys.executable).with_name("ray"))
#: A node that stops answering is declared dead after ≈ 2 s (Ray's default: ≈ 15 s), so its cases are retried
#: or reported lost soon (Ray reads RAY_<setting> variables into its config).
FAST_FAILURE_DETECTION = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "500",
                          "RAY_health_check_failure_threshold": "4", "RAY_health_check_initial_delay_ms": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_installed() -> bool:
    return Path(RAY).is_file()


@dataclass
class Node:
    name: str
    process: subprocess.Popen
    temp_dir: Path
    log: Path
    resources: dict[str, float] = field(default_factory=dict)

    def pids(self) -> list[int]:
        """Every process of this node (its session: ray start runs in a session of its own, and Ray gives each
        worker a process group of its own inside it)."""
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getsid(int(entry.name)) == self.process.pid:
                        out.append(int(entry.name))
                except OSError:
                    continue
        return out

    def raylet_pid(self) -> Optional[int]:
        for pid in self.pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if cmd.endswith(b"/raylet"):
                return pid
        return None

    def stop(self, grace: float = 3.0) -> None:
        """SIGTERM the node's processes, SIGKILL what is left after ``grace`` seconds."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
            self._signal(sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self._alive():
                time.sleep(0.1)
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass

    def _signal(self, sig: int) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def _alive(self) -> bool:
        for pid in self.pids():
            try:
                if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z":
                    return True
            except OSError:
                continue
        return False


class LocalCluster:
    """``LocalCluster(root).start(...)``; ``address``, ``driver_env()``, ``add_node(...)``, ``stop()``."""

    def __init__(self, root: Path, env: Optional[dict[str, str]] = None) -> None:
        self.root = root
        self.token = secrets.token_hex(32)
        self.home = root / "driver-home"  # the driver's HOME: ~/.ray/auth_token holds the cluster's token
        (self.home / ".ray").mkdir(parents=True, exist_ok=True)
        (self.home / ".ray" / "auth_token").write_text(self.token)
        self.base_env = {**(env or os.environ)}
        for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN_PATH"):
            self.base_env.pop(name, None)
        self.nodes: list[Node] = []
        self.port = self.client_port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def client_address(self) -> str:
        """The Ray Client address (``ray://``): its server listens on the node's address, not on loopback."""
        ip = next(n["ip"] for n in self.alive_nodes() if "node:__internal_head__" in n["resources"])
        return f"ray://{ip}:{self.client_port}"

    def driver_env(self, **extra: str) -> dict[str, str]:
        env = {**self.base_env, "HOME": str(self.home)}
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            env.pop(name, None)
        return {**env, **extra}

    def _start(self, name: str, args: list[str], env: dict[str, str], resources: dict[str, float],
               num_cpus: int = 1) -> Node:
        temp = self.root / name
        temp.mkdir(parents=True, exist_ok=True)
        node_home = self.root / f"{name}-home"
        node_home.mkdir(exist_ok=True)
        log = self.root / f"{name}.log"
        full_env = {**self.base_env, "HOME": str(node_home), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token,
                    "RAY_USAGE_STATS_ENABLED": "0", **FAST_FAILURE_DETECTION, **env}
        cmd = [RAY, "start", "--block", "--num-cpus", str(num_cpus), "--temp-dir", str(temp), "--disable-usage-stats",
               "--dashboard-agent-listen-port", str(free_port()), "--dashboard-agent-grpc-port", str(free_port()),
               "--runtime-env-agent-port", str(free_port()), "--metrics-export-port", str(free_port()),
               "--min-worker-port", "0", "--max-worker-port", "0", *args]
        if resources:
            cmd += ["--resources", json.dumps(resources)]
        with log.open("wb") as out:
            process = subprocess.Popen(cmd, env=full_env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        node = Node(name, process, temp, log, resources)
        self.nodes.append(node)
        deadline = time.monotonic() + 90
        while b"Ray runtime started" not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                node.stop()
                raise RuntimeError(f"ray start for {name} failed (exit {process.poll()}): "
                                   f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        return node

    def start(self, resources: Optional[dict[str, float]] = None, env: Optional[dict[str, str]] = None,
              num_cpus: int = 1) -> Node:
        self.port, self.client_port = free_port(), free_port()
        node = self._start("head", ["--head", "--node-ip-address=127.0.0.1", f"--port={self.port}",
                                    "--include-dashboard=false", f"--dashboard-port={free_port()}",
                                    f"--ray-client-server-port={self.client_port}"],
                           env or {}, resources or {}, num_cpus)
        self.wait_for_nodes(1, node)
        return node

    def add_node(self, name: str, resources: Optional[dict[str, float]] = None,
                 env: Optional[dict[str, str]] = None) -> Node:
        node = self._start(name, [f"--address={self.address}", "--node-ip-address=127.0.0.1"], env or {},
                           resources or {})
        self.wait_for_nodes(len([n for n in self.nodes if n.process.poll() is None]), node)
        return node

    def alive_nodes(self) -> list[dict]:
        """The cluster's alive nodes, as ``ray list nodes``-like dicts (asked in a fresh process)."""
        code = ("import json, ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
                "print(json.dumps([{'id': n['NodeID'], 'ip': n['NodeManagerAddress'], 'resources': n['Resources']} """
                "for n in ray.nodes() "
                "if n['Alive']]))") % self.address
        env = self.driver_env(RAY_AUTH_MODE="token")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=90)
        if out.returncode != 0:
            raise RuntimeError(f"cannot list the cluster's nodes: {out.stderr[-2000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    def wait_for_nodes(self, count: int, starting: Optional[Node] = None, timeout: float = 120.0) -> list[dict]:
        """Until the cluster has ``count`` alive nodes (``starting``: the node just started, which must not die)."""
        deadline = time.monotonic() + timeout
        last: list[dict] = []
        while time.monotonic() < deadline:
            if starting is not None and starting.process.poll() is not None:
                raise RuntimeError(f"ray start for {starting.name} exited {starting.process.returncode}: "
                                   f"{starting.log.read_text(errors='replace')[-3000:]}")
            try:
                last = self.alive_nodes()
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                last = []
            if len(last) == count:
                return last
            time.sleep(0.5)
        raise RuntimeError(f"the cluster has {len(last)} alive nodes, not {count}; logs in {self.root}")

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
