"""Real-time scheduling for the threads that run a node's ticks, as ros2_control's
controller_manager gives its update loop (its `thread_priority`, there 50 by default, and
`lock_memory`): SCHED_FIFO at a priority, so that no ordinary process on the machine preempts
a tick once it has begun, and the process's memory locked (mlockall), so that no page fault
stalls one.

On a machine shared with other work, a preemption is what the tail of the compute time is:
at 1 kHz on 2 cores beside the benchmark's other nodes, the cartesian_impedance compute p99 was
54.8 us under SCHED_FIFO and 120.0 us under the default scheduling, in the same turns, the p50
alike (docs/benchmarks.md). Without the privilege (rtprio in /etc/security/limits.conf, or
CAP_SYS_NICE) the OS refuses; the node then runs as before and says so. Off by default (0)
here: beside the simulator and the test tools on a small machine, which are ordinary
processes, a SCHED_FIFO controller starves them (a fresh clone's suite on 2 cores lost the
recordings of two loop tests with it on). No rclpy here.
"""

import ctypes
import ctypes.util
import os
import threading

MCL_CURRENT, MCL_FUTURE = 1, 2  # <sys/mman.h> on Linux


def lock_memory():
    """mlockall(MCL_CURRENT | MCL_FUTURE) -> None, or why not (one line)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        failed = libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0
    except (OSError, AttributeError) as err:  # no libc, or no mlockall (not Linux)
        return f"mlockall unavailable ({err})"
    if failed:
        errno = ctypes.get_errno()
        return f"mlockall refused: {os.strerror(errno)} (errno {errno})"
    return None


POLICIES = {getattr(os, name): name for name in ("SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",
                                                "SCHED_BATCH", "SCHED_IDLE")
            if hasattr(os, name)}


def policy(thread):
    """What the OS runs a thread (its native id) under: "SCHED_FIFO 50", "SCHED_OTHER"."""
    kind = os.sched_getscheduler(thread)
    name = POLICIES.get(kind, str(kind))
    priority = os.sched_getparam(thread).sched_priority
    return f"{name} {priority}" if priority else name


class Scheduling:
    """A node's scheduling: `priority` 1-99 runs each thread that calls `enter` under
    SCHED_FIFO at it (0: the OS's default scheduling); `lock` locks the process's memory at
    once. `enter()` from a tick's callback: the first call on a thread sets it (the kernels are
    compiled by then: a compile under SCHED_FIFO would hold a core for seconds), and returns
    a line to log when the OS refuses, else None. `status`: what /diagnostics says, the
    policy as the OS reports it for the threads that ticked.
    """

    def __init__(self, priority, lock):
        self.priority = int(priority)
        self.threads = set()  # the OS ids of the threads that ticked
        self.refused = None  # why SCHED_FIFO was refused, once it was
        self.memory = "not locked" if not lock else lock_memory() or "locked"

    def enter(self):
        thread = threading.get_native_id()
        if thread in self.threads:
            return None
        self.threads.add(thread)
        if self.priority == 0 or self.refused is not None:
            return None
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.priority))
        except (OSError, AttributeError) as err:  # no privilege; or not Linux
            self.refused = f"SCHED_FIFO priority {self.priority} refused: {err}"
            return (f"{self.refused}; ticks run under the default scheduling (allow rtprio "
                    f"{self.priority} for this user, as for ros2_control)")
        return None

    @property
    def status(self):
        """{key: value} for /diagnostics: the ticks' threads' policy as the OS reports it (and
        why not SCHED_FIFO, where it was refused or not asked for), and the memory lock.
        """
        seen = set()
        for thread in self.threads:
            try:
                seen.add(policy(thread))
            except OSError:  # the thread has ended
                pass
        text = ", ".join(sorted(seen)) or ("its threads ended" if self.threads else "no tick yet")
        if self.refused is not None:
            text += f" ({self.refused})"
        elif self.priority == 0:
            text += " (thread_priority 0)"
        return {"scheduling": text, "memory": self.memory}
