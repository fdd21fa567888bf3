"""A stand-in for controller_manager with joint_state_topic_hardware_interface's
JointStateTopicSystem, forward_command_controller (effort) and joint_state_broadcaster, which
are not on PyPI: what the simulator in `command_type: joint_state` talks to under ros2_control.

    python test/support/topic_hardware_peer.py JOINT [JOINT ...] [--ros-args ...]

One update loop at 1 kHz of wall time, as controller_manager's (no lockstep with the simulator):
- read(), as the plugin reads: the latest sensor_msgs/JointState on /robot_joint_states, taken
  with SensorDataQoS (best effort), matched by name, finite values only;
- joint_state_broadcaster: /joint_states with those positions, velocities and efforts;
- forward_command_controller: the latest std_msgs/Float64MultiArray on
  /effort_controller/commands, in the order of the joints given (NaN until the first);
- write(), as the plugin writes with trigger_joint_command_threshold -1 (every cycle): a
  sensor_msgs/JointState on /robot_joint_commands, QoS depth 1, stamped now, `name` every joint,
  `effort` the commands and `position`, `velocity` empty (an effort-only arm).
It reports how many cycles it ran on /diagnostics (status "topic_hardware_peer": cycles), and
prints the count on Ctrl-C.
"""

import math
import signal
import sys
import time

import numpy as np
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control.nodes import messages
from dyn_control.nodes.diagnostics import publish_diagnostics

PERIOD = 1e-3  # s, controller_manager's update_rate 1000 Hz


def main():
    argv = sys.argv[1:]
    joints = argv[:argv.index("--ros-args")] if "--ros-args" in argv else argv
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("topic_hardware_peer")
    state = {"position": [math.nan] * len(joints), "velocity": [math.nan] * len(joints),
             "effort": [math.nan] * len(joints)}
    command = [math.nan] * len(joints)  # what a command interface holds before any controller
    index = {name: i for i, name in enumerate(joints)}

    def on_state(msg):  # read(): by name, finite values only
        for i, name in enumerate(msg.name):
            k = index.get(name)
            if k is None:
                continue
            for field in state:
                values = getattr(msg, field)
                if len(values) and math.isfinite(values[i]):
                    state[field][k] = values[i]

    def on_command(msg):  # forward_command_controller
        if len(msg.data) == len(joints):
            command[:] = msg.data

    node.create_subscription(JointState, "/robot_joint_states", on_state, qos_profile_sensor_data)
    node.create_subscription(Float64MultiArray, "/effort_controller/commands", on_command, 10)
    commands = node.create_publisher(JointState, "/robot_joint_commands", QoSProfile(depth=1))
    broadcast = node.create_publisher(JointState, "/joint_states", 10)
    executor = EventsExecutor()
    executor.add_node(node)
    # messages built once and refilled, as the nodes' writers do: a Python peer at 1 kHz on a
    # machine it shares with the loop must stay cheap
    broadcast_msg = messages.JointStateWriter(joints)
    command_msg = messages.JointStateWriter(joints, ("effort",))
    cycles = 0
    publish_diagnostics(node, lambda: ("OK", "running", {"cycles": cycles}), period=0.5)
    next_cycle = time.monotonic()
    while not stop:
        executor.spin_once(timeout_sec=0)  # what came since the last cycle
        now = time.time()
        if all(math.isfinite(x) for x in state["position"]):
            broadcast.publish(broadcast_msg.fill(now, state["position"], state["velocity"],
                                                 state["effort"]))
        commands.publish(command_msg.fill(now, np.asarray(command)))
        cycles += 1
        next_cycle += PERIOD
        delay = next_cycle - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.1:
            next_cycle = time.monotonic()
    print(f"topic_hardware_peer: {cycles} cycles", flush=True)
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
