"""Process-wide state (``rlm_host.process_state``): a process forked while all of it is live (a process-runtime
session open, a bounded call done, a Monty pool warm, sink delivery in flight and a sink being made, helper
threads busy and idle) gives its child working copies of each, or none, and neither side breaks the other's.

The fork happens in a fresh interpreter (a script), so that its child can exit as a real process does: its exit
handlers run, and one that waited on the parent's deliveries or killed the parent's workers would show."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec

SCRIPT = r"""
import json, os, sys, threading, time
from rlm_host import process_state
from rlm_host.bounded import run_bounded
from rlm_host.events import EventBus, RunEvent
from rlm_host.observability.delivery import SinkDelivery, wait_for_sinks
from rlm_host.sandbox import fork_server
from rlm_host.sandbox.process import ProcessSandbox
from rlm_host.threads import idle_helpers, run_in_thread

MONTY = sys.argv[1] == "1"
if MONTY:
    from rlm_sandbox_monty import pools
    from rlm_sandbox_monty.runtime import MontySandbox


class Sink:
    def __init__(self, release=None):
        self.release, self.got = release, []

    def handle(self, event):
        self.got.append(event.type)
        if self.release is not None:
            self.release.wait(30)  # still delivering when the process forks

    def close(self):
        pass


def deliver(sink):
    bus = EventBus()
    delivery = SinkDelivery(bus, [("test", sink)], flush_seconds=30)
    bus.emit(RunEvent(type="error", run_id="r", root_run_id="r", data={"message": "m", "where": "w"}))
    delivery.close_in_background()


def usable(out):
    # what any process of the host does: a worker forked by (its own) fork server, a bounded child from (its own)
    # fork server, a helper thread, a sink made and delivered to
    session = ProcessSandbox()
    out["session"] = session.execute("print(6 * 7)").stdout
    session.shutdown()
    out["bounded"] = run_bounded(os.getpid, method="forkserver") not in (os.getpid(), None)
    ran = threading.Event()
    run_in_thread(ran.set, "check")
    out["thread"] = ran.wait(10)
    sink = Sink()
    deliver(lambda: sink)  # a sink made by the delivery thread: under the lock that makes one sink at a time
    out["delivered"] = wait_for_sinks(20) and sink.got == ["error"]


release, made = threading.Event(), threading.Event()
first = ProcessSandbox()
first.start()
first.shutdown()  # the first worker of a process starts on its own; the next come from the fork server
session = ProcessSandbox()
session.execute("x = 'the parent session'")
worker = session.pid
run_bounded(os.getpid, method="forkserver")
if MONTY:
    monty = MontySandbox()
    monty.execute("y = 1")
run_in_thread(lambda: release.wait(30), "busy")  # a helper in use at the fork
deliver(Sink(release))  # a delivery in flight at the fork


def slow_start():
    made.set()
    release.wait(30)
    return Sink()


SinkDelivery(EventBus(), [("starting", slow_start)])  # a sink being made at the fork: its lock is held
made.wait(10)
run_in_thread(lambda: None, "soon idle")  # and one idle
for _ in range(500):
    if idle_helpers():
        break
    time.sleep(0.01)

read, write = os.pipe()
child = os.fork()
if child == 0:
    os.close(read)
    out = {"servers": len(fork_server._servers), "nothing_to_wait_for": wait_for_sinks(1),
           "pools": list(pools.open_pools().values()) if MONTY else []}
    usable(out)
    os.write(write, json.dumps(out).encode())
    sys.exit(0)  # a real exit: the exit handlers of everything above run in the child
os.close(write)
deadline = time.monotonic() + 60
while not (done := os.waitpid(child, os.WNOHANG))[0] and time.monotonic() < deadline:
    time.sleep(0.05)
if not done[0]:
    os.kill(child, 9)
    done = os.waitpid(child, 0)
seen = json.loads(os.read(read, 1 << 16) or b"{}")
release.set()
parent = {"same_worker": session.pid == worker, "x": session.execute("print(x)").stdout}
if MONTY:
    parent["monty"] = monty.execute("print(y + 1)").stdout
    monty.shutdown()
session.shutdown()
usable(parent)
print(json.dumps({"child": seen, "child_exit": os.waitstatus_to_exitcode(done[1]), "parent": parent,
                  "registered": process_state.registered()}))
"""


def test_a_child_forked_while_everything_is_live_gets_its_own_and_the_parent_keeps_its():
    monty = find_spec("pydantic_monty") is not None and find_spec("rlm_sandbox_monty") is not None
    done = subprocess.run([sys.executable, "-c", SCRIPT, "1" if monty else "0"], capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    working = {"session": "42\n", "bounded": True, "thread": True, "delivered": True}
    assert report["child_exit"] == 0, report  # it exited, and promptly: nothing waited on the parent's state
    assert report["child"] == {"servers": 0, "nothing_to_wait_for": True, "pools": [], **working}
    assert report["parent"] == {"same_worker": True, "x": "the parent session\n", **working,
                                **({"monty": "2\n"} if monty else {})}
    registered = {"helper threads", "fork servers", "sink delivery"} | ({"monty pools"} if monty else set())
    assert registered <= set(report["registered"]), report["registered"]
