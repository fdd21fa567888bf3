"""What the controller and simulator nodes share: where the model comes from, and how a node
stops on bad configuration (one line naming the parameter and its value, exit code 1).

The model comes from the `robot_description` parameter (URDF text, as launch files pass it),
else the `urdf_file` parameter (a path, .xacro works), else the /robot_description topic
(std_msgs/String, transient local, as robot_state_publisher publishes it).
"""

import gc
import os
import signal
import sys
import threading
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.signals import SignalHandlerOptions
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..model import URDFError, load_chain
from ..parameters import EXECUTOR, PAYLOAD_PARAMETERS, Table


class StartupError(RuntimeError):
    """Bad configuration: the node cannot run. The message is the one line the user sees."""


BUILDING = threading.Event()  # set while a node process is building its node (see run)


def declare_parameters(node, params):
    """Declare every parameter of `params` (a dyn_control.parameters table, or the per-joint
    entries of one: Table.for_joints) and check the values given at start-up; StartupError
    names a bad one and its value."""
    params = list(params)
    for p in params:
        node.declare_parameter(p.name, p.default, ParameterDescriptor(
            description=p.description, dynamic_typing=p.dynamic or p.default is None))
    try:
        for p in params:
            p.check(node.get_parameter(p.name).value)
    except ValueError as err:
        raise StartupError(f"parameter {err}") from err


def parameter_reader(node, changes=None):
    """value(name): the parameter's value, or its new value in `changes` (a set in progress)."""
    changes = changes or {}
    return lambda name: changes[name] if name in changes else node.get_parameter(name).value


def set_parameters_callback(node, table, apply):
    """Run-time changes (`ros2 param set`): refused with the reason when the table fixes the
    parameter or its check fails, or when apply(changes) raises ValueError; the old value
    stays. apply takes the change to the node."""
    def on_set(params):
        changes = {p.name: p.value for p in params}
        fixed = [name for name in changes
                 if table.find(name) is not None and not table.find(name).run_time]
        if fixed:
            return SetParametersResult(successful=False,
                                       reason=f"{fixed[0]} cannot change while the node runs")
        try:
            table.check(changes)
            apply(changes)
        except ValueError as err:
            return SetParametersResult(successful=False, reason=str(err))
        if changes.keys() & set(PAYLOAD_PARAMETERS):
            node.get_logger().info(payload_summary(parameter_reader(node, changes)))
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)


_LEVELS = {"OK": DiagnosticStatus.OK, "WARN": DiagnosticStatus.WARN}


def publish_diagnostics(node, status, period=1.0):
    """/diagnostics (diagnostic_msgs/DiagnosticArray) every `period` s of steady time: one status
    named after the node from status() -> (level "OK" | "WARN", message, {key: value}), or
    nothing while status() is None."""
    publisher = node.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def publish():
        got = status()
        if got is None:
            return
        level, message, values = got
        msg = DiagnosticArray()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.status = [DiagnosticStatus(
            level=_LEVELS[level], name=node.get_name(), message=message, hardware_id="dyn_control",
            values=[KeyValue(key=key, value=str(value)) for key, value in values.items()])]
        publisher.publish(msg)

    node.create_timer(period, publish, clock=Clock(clock_type=ClockType.STEADY_TIME))


def read_diagnostics(msg):
    """DiagnosticArray -> {status name: {key: value}}, numbers as floats where they parse."""
    def number(text):
        try:
            return float(text)
        except ValueError:
            return text
    return {s.name: {kv.key: number(kv.value) for kv in s.values} for s in msg.status}


def log_events(node, core):
    """Log what a core said since the last call, at its level (throttled where it asks)."""
    logger = node.get_logger()  # (rclpy fixes a call site's severity: one call per level)
    for level, text, throttle in core.drain():
        seconds = 1.0 if throttle else 0.0
        if level == "info":
            logger.info(text)
        elif level == "warning":
            logger.warning(text, throttle_duration_sec=seconds)
        else:
            logger.error(text, throttle_duration_sec=seconds)


def warn_throttled(node, key, text, period=1.0):
    """A warning at most once per `period` s of steady time for each `key` (rclpy throttles
    per call site, which would let one bad input hide another's reason)."""
    now = time.monotonic()
    last = node.__dict__.setdefault("_warned_at", {})
    if now - last.get(key, -float("inf")) >= period:
        last[key] = now
        node.get_logger().warning(text)


def payload_summary(value):
    """One line for the log: the payload the parameters read by value(name) describe."""
    com = ", ".join(f"{float(c):g}" for c in value("payload_com"))
    inertia = ", ".join(f"{float(c):g}" for c in value("payload_inertia"))
    return (f"payload {float(value('payload_mass')):g} kg on '{value('payload_link') or 'the tip link'}', "
            f"com [{com}] m, inertia [{inertia}] kg m^2")


def model_text(node):
    """URDF text from the parameters, or None when it must come from the topic."""
    description = node.get_parameter("robot_description").value
    if description.strip():
        return description
    path = node.get_parameter("urdf_file").value
    return path if path.strip() else None


def build_chain(node, source):
    """load_chain from the node's parameters; StartupError with one line on any problem.

    -> (chain, order): the command order is the `joints` parameter's order (default: the
    chain's), and order[i] is the chain index of the i-th commanded joint.
    """
    joints = [j for j in node.get_parameter("joints").value if j]
    root = node.get_parameter("root_link").value or None
    tip = node.get_parameter("tip_link").value or None
    try:
        chain = load_chain(source, root_link=root, tip_link=tip, joints=joints or None)
    except URDFError as err:
        raise StartupError(f"robot model: {err}") from err
    names = joints or chain.joint_names
    return chain, np.array([chain.joint_names.index(name) for name in names])


def reliability(node):
    """QoS for the loop's topics from the `qos_reliability` parameter (checked by the node's
    table); depth 1: only the newest state or command matters."""
    policies = {"reliable": ReliabilityPolicy.RELIABLE, "best_effort": ReliabilityPolicy.BEST_EFFORT}
    return QoSProfile(depth=1, reliability=policies[node.get_parameter("qos_reliability").value])


def configure_from_model(node):
    """node.configure(urdf_text) now from the parameters, or when /robot_description arrives
    (latched, robot_state_publisher's QoS). A StartupError from the topic path stops the node
    through node.fatal, as one from the constructor does."""
    source = model_text(node)
    if source is not None:
        node.configure(source)
        return
    node.get_logger().info("waiting for the robot model on /robot_description")
    loaded = []

    def on_description(msg):
        if loaded:
            return
        loaded.append(True)
        BUILDING.set()  # compiling on a first run takes seconds: a signal ends it (see run)
        try:
            node.configure(msg.data)
        except StartupError as err:
            node.fatal = err
        finally:
            BUILDING.clear()

    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(String, "/robot_description", on_description, qos)


def make_executor(node):
    """The rclpy executor named by the node's `executor` parameter (see README: measured),
    declared here for a node without a parameter table."""
    if not node.has_parameter(EXECUTOR.name):
        declare_parameters(node, Table(EXECUTOR))
    return {"single_threaded": SingleThreadedExecutor,
            "multi_threaded": lambda: MultiThreadedExecutor(num_threads=2),
            "events": EventsExecutor}[node.get_parameter(EXECUTOR.name).value]()


STOP_GRACE = 1.5  # s from a signal to the end of the process, whatever the node is doing


def _end_after_grace(name, wakeup, stopped):
    """Python runs signal handlers in the main thread only, between bytecodes: a main thread
    stuck in C (a spin that does not return) or in a long callback never sees SIGINT or
    SIGTERM, and launch escalates to SIGKILL.
    The signal's number also arrives on `wakeup` (signal.set_wakeup_fd): allow the orderly
    stop STOP_GRACE s, then end the process with code 0."""
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
        while not stop.is_set() and node.fatal is None:
            executor.spin_once(timeout_sec=0.1)
        if node.fatal is not None:
            raise node.fatal
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
    return code
