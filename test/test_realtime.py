"""The ticks' real-time scheduling (dyn_control.nodes.realtime), as ros2_control's
controller_manager sets its update loop's: SCHED_FIFO at thread_priority for the threads that
tick, or the OS's default with the reason. Reference: what the OS reports for the thread
(sched_getscheduler, sched_getparam). Each case runs in a thread of its own, which ends with it:
the test process keeps its scheduling.
"""

import re
import subprocess
import sys
import threading

import pytest

from dyn_control.nodes import realtime
from dyn_control.nodes.realtime import Scheduling
from dyn_control.parameters import CONTROLLER


def in_thread(call):
    """call() in a new thread -> (its result, the thread's policy as the OS reports it then)."""
    got = {}

    def run():
        got["result"] = call()
        got["policy"] = realtime.policy(threading.get_native_id())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return got["result"], got["policy"]


def test_a_ticking_thread_runs_under_what_the_status_says():
    # Whether this machine grants SCHED_FIFO or not, what /diagnostics says is what the OS
    # runs the thread under, and a refusal comes with its one line
    scheduling = Scheduling(50, lock=False)
    assert scheduling.status["scheduling"] == "no tick yet"
    said, policy = in_thread(lambda: (scheduling.enter(), scheduling.status["scheduling"]))
    line, status = said
    if line is None:  # granted
        assert policy == "SCHED_FIFO 50" and status == "SCHED_FIFO 50"
    else:
        assert policy == "SCHED_OTHER" and status.startswith("SCHED_OTHER (SCHED_FIFO priority 50")
        assert "refused" in line and "rtprio 50" in line


def test_thread_priority_0_leaves_the_default_scheduling():
    scheduling = Scheduling(0, lock=False)
    line, policy = in_thread(scheduling.enter)
    assert line is None and policy == "SCHED_OTHER"


def test_a_refusal_is_said_once_and_reported(monkeypatch):
    # the OS's refusal (a user without rtprio; this test may run as root, which is granted)
    def refuse(*_):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(realtime.os, "sched_setscheduler", refuse)
    scheduling = Scheduling(50, lock=False)
    first, policy = in_thread(scheduling.enter)
    second, _ = in_thread(scheduling.enter)  # another thread of the same node: not asked again
    assert "SCHED_FIFO priority 50 refused" in first and "Operation not permitted" in first
    assert second is None and policy == "SCHED_OTHER"
    assert "refused" in scheduling.status["scheduling"]


def test_one_thread_enters_once():
    scheduling = Scheduling(0, lock=False)

    def twice():
        return scheduling.enter(), scheduling.enter(), len(scheduling.threads)
    (first, second, threads), _ = in_thread(twice)
    assert first is None and second is None and threads == 1


def test_lock_memory_locks_or_says_why():
    # in a process of its own: mlockall stays for the life of the process. Reference: the
    # kernel's count of locked memory (/proc/self/status VmLck) against what the status says
    code = ("from dyn_control.nodes.realtime import Scheduling\n"
            "s = Scheduling(0, lock=True)\n"
            "lck = [l for l in open('/proc/self/status') if l.startswith('VmLck')][0]\n"
            "print(s.memory, '|', int(lck.split()[1]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    memory, locked_kb = out.split(" | ")
    if memory == "locked":
        assert int(locked_kb) > 1000  # the interpreter and numpy at least: MB
    else:
        assert memory.startswith("mlockall refused") and int(locked_kb) == 0


@pytest.mark.parametrize("value, message", [
    (100, "thread_priority must be in [0, 99], got 100"),
    (-1, "thread_priority must be in [0, 99], got -1"),
    (50.5, "thread_priority must be a whole number, got 50.5"),
])
def test_a_bad_thread_priority_is_named_with_its_value(value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        CONTROLLER.check({"thread_priority": value})
