"""Fault injector for the tests: relays /joint_states_raw to /joint_states over best-effort QoS
and drops a given share of the messages (seeded, so a run is repeatable). Its counts are on
/diagnostics (status "fault_relay": relayed, dropped), for the test to read.

    python test/support/fault_relay.py DROP_SHARE [--ros-args ...]
"""

import random
import signal
import sys

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState

from dyn_control.nodes.diagnostics import publish_diagnostics


def main():
    drop = float(sys.argv[1])
    # Ctrl-C sets a flag the spin loop checks (see set_parameters_on_motion.py)
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("fault_relay")
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    out = node.create_publisher(JointState, "/joint_states", qos)
    rng = random.Random(1)
    counts = {"relayed": 0, "dropped": 0}

    def relay(msg):
        if rng.random() < drop:
            counts["dropped"] += 1
        else:
            counts["relayed"] += 1
            out.publish(msg)

    node.create_subscription(JointState, "/joint_states_raw", relay, qos)
    publish_diagnostics(node, lambda: ("OK", "relaying", dict(counts)), period=0.5)
    while not stop:
        rclpy.spin_once(node, timeout_sec=0.1)
    print(f"fault_relay: {counts['relayed']} relayed, {counts['dropped']} dropped", flush=True)
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
