"""What a node tells people: /diagnostics (stamped on the node's clock, /clock under
use_sim_time), the events a core said, and warnings throttled per cause.
"""

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType

from dyn_control.nodes.messages import set_stamp

_LEVELS = {"OK": DiagnosticStatus.OK, "WARN": DiagnosticStatus.WARN}
PERIOD = 1.0  # s of steady time between a node's /diagnostics, unless it asks otherwise


def publish_diagnostics(node, status, period=PERIOD, stamp=None):
    """/diagnostics (diagnostic_msgs/DiagnosticArray) every `period` s of steady time: one status
    named after the node (status_name) from status() -> (level "OK" | "WARN", message,
    {key: value}), or nothing while status() is None. The header carries the time of the
    node's other messages: stamp() in s (the simulator's simulated time), else the node's clock
    (/clock under use_sim_time).
    """
    publisher = node.create_publisher(DiagnosticArray, "/diagnostics", 10)  # one for all robots
    name = status_name(node.get_fully_qualified_name())

    def publish():
        got = status()
        if got is None:
            return
        level, message, values = got
        msg = DiagnosticArray()
        if stamp is None:
            msg.header.stamp = node.get_clock().now().to_msg()
        else:
            set_stamp(msg.header.stamp, stamp())
        msg.status = [DiagnosticStatus(
            level=_LEVELS[level], name=name, message=message, hardware_id="dyn_control",
            values=[KeyValue(key=key, value=str(value)) for key, value in values.items()])]
        publisher.publish(msg)

    node.create_timer(period, publish, clock=Clock(clock_type=ClockType.STEADY_TIME))


def status_name(node_name):
    """The /diagnostics status name of a node (its fully qualified name): the name without the
    leading slash, so "computed_torque_controller" in the root namespace and
    "left/computed_torque_controller" in /left, the two arms' statuses apart on the one topic.
    """
    return node_name.lstrip("/")


def read_diagnostics(msg):
    """DiagnosticArray -> {status name: {key: value}}, numbers as floats where they parse; the
    status's message under "message".
    """
    def number(text):
        try:
            return float(text)
        except ValueError:
            return text
    return {s.name: {"message": s.message, **{kv.key: number(kv.value) for kv in s.values}}
            for s in msg.status}


def log_events(node, core):
    """Log what a core said since the last call, at its level (throttled where it asks)."""
    logger = node.get_logger()
    # rclpy fixes a call site's severity and filters: a throttled and a plain call at one
    # site raise ValueError ("Requested logging filters cannot be changed between calls"),
    # which killed the controller when a collision's error came before a refusal's
    for level, text, throttle in core.drain():
        if throttle:
            if level == "info":
                logger.info(text, throttle_duration_sec=1.0)
            elif level == "warning":
                logger.warning(text, throttle_duration_sec=1.0)
            else:
                logger.error(text, throttle_duration_sec=1.0)
        elif level == "info":
            logger.info(text)
        elif level == "warning":
            logger.warning(text)
        else:
            logger.error(text)


def warn_throttled(node, key, text, period=1.0):
    """A warning at most once per `period` s of steady time for each `key` (rclpy throttles
    per call site, which would let one bad input hide another's reason).
    """
    now = time.monotonic()
    last = node.__dict__.setdefault("_warned_at", {})
    if now - last.get(key, -float("inf")) >= period:
        last[key] = now
        node.get_logger().warning(text)
