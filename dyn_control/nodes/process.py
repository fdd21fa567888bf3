"""How a node process starts, spins and stops: the executor, the signals (SIGINT and SIGTERM
end it with exit code 0 at any moment) and bad configuration (one line naming the parameter and
its value, exit code 1).
"""

import gc
import os
import signal
import sys
import threading

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from dyn_control.nodes.params import StartupError, declare_parameters, read_parameters
from dyn_control.parameters import EXECUTOR, Table

BUILDING = threading.Event()  # set while a node process is building its node (see run)


class ProcessNode(Node):
    """A node that `run` hosts as a process, with what `run` relies on stated once.

    NODE_NAME: the node's name, and the name in the process's own lines. fatal: a StartupError
    the node met after it was built (a model from the topic), which `run` raises to end the
    process with one line and exit code 1. exit_code: set by a node that ends by itself
    (identify), which `run` returns. shutdown(): stops what the node runs besides its callbacks
    (threads, timers, a recording) before the node is destroyed.
    """

    NODE_NAME = ""

    def __init__(self, **kwargs):
        super().__init__(self.NODE_NAME, **kwargs)
        self.fatal = None
        self.exit_code = None

    def shutdown(self):
        """Stop what the node runs besides its callbacks: nothing, unless a node says so."""


def make_executor(node):
    """The rclpy executor named by the node's `executor` parameter (docs/benchmarks.md: measured),
    declared here for a node without a parameter table.
    """
    table = Table("executor", EXECUTOR)
    if not node.has_parameter(EXECUTOR.name):
        declare_parameters(node, table)
    return {"single_threaded": SingleThreadedExecutor,
            "multi_threaded": lambda: MultiThreadedExecutor(num_threads=2),
            "events": EventsExecutor}[read_parameters(node, table).executor]()


STOP_GRACE = 1.5  # s from a signal to the end of the process, whatever the node is doing


def _end_after_grace(name, wakeup, stopped):
    """Python runs signal handlers in the main thread only, between bytecodes: a main thread
    stuck in C (a spin that does not return) or in a long callback never sees SIGINT or
    SIGTERM, and launch escalates to SIGKILL.
    The signal's number also arrives on `wakeup` (signal.set_wakeup_fd): allow the orderly
    stop STOP_GRACE s, then end the process with code 0.
    """
    os.read(wakeup, 1)
    if not stopped.wait(STOP_GRACE):
        print(f"[{name}] did not stop within {STOP_GRACE} s of the signal: exiting",
              file=sys.stderr, flush=True)
        os._exit(0)


def run(node_class, args=None):
    """rclpy.init, build the node, spin until Ctrl-C; exit 1 with one line on StartupError.

    SIGINT and SIGTERM end the process with exit code 0 whenever they come. While the node is
    being built (loading the model; on a first run, seconds of compiling the kernels) there is
    nothing to stop yet, so the process exits at once: an exception raised there can land in a
    callback of the compiler's C code, which swallows it and carries on broken. Once the node
    spins they only set a flag that the spin loop checks, instead of rclpy's handler shutting
    the context down under a running callback: the node stops first, then the context goes
    down.
    """
    stop = threading.Event()

    def on_signal(*_):
        stop.set()
        if BUILDING.is_set():
            print(f"[{node_class.NODE_NAME}] stopped during start-up", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    wakeup, notify = os.pipe()
    os.set_blocking(notify, False)
    signal.set_wakeup_fd(notify)
    stopped = threading.Event()
    threading.Thread(target=_end_after_grace, args=(node_class.NODE_NAME, wakeup, stopped),
                     daemon=True).start()
    node = None
    code = 0
    BUILDING.set()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = node_class()
        executor = make_executor(node)
        executor.add_node(node)
        # Everything built so far lives until exit: keep it out of the collector's passes, so
        # a collection during a tick walks only the objects of recent ticks (latency tail).
        gc.collect()
        gc.freeze()
        BUILDING.clear()
        # a node that ends by itself (identify) sets exit_code
        while not stop.is_set() and node.fatal is None and node.exit_code is None:
            executor.spin_once(timeout_sec=0.1)
        if node.fatal is not None:
            raise node.fatal
        code = node.exit_code or 0
    except (StartupError, ParameterException) as err:  # bad configuration: one line, exit 1
        print(f"[{node_class.NODE_NAME}] error: {err}", file=sys.stderr, flush=True)
        code = 1
    finally:
        BUILDING.clear()  # a signal while stopping must not cut the stopping short
        if node is not None:
            node.shutdown()
            node.destroy_node()
        rclpy.try_shutdown()
        stopped.set()
        # Ctrl-C on ros2 launch signals each node twice (the terminal's, then launch's): one
        # that lands while Python finalizes, its handlers gone, would end a process that has
        # stopped cleanly by the signal (-2). Ignored ones stay ignored through finalization.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    return code
