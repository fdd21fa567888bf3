"""Test helper: sets parameters of a running node, over its parameter service, at the moment
the controller's reference starts to move (the trajectory's first tick), as `ros2 param set`
would by hand.

    python test/support/set_parameters_on_motion.py NODE NAME=YAML_VALUE ... [--ros-args ...]
"""

import signal
import sys

import rclpy
import yaml
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState


def main():
    args = rclpy.utilities.remove_ros_args(sys.argv)[1:]
    target, assignments = args[0], args[1:]
    params = []
    for text in assignments:
        name, value = text.split("=", 1)
        value = yaml.safe_load(value)
        params.append(Parameter(name, value=[float(v) for v in value] if isinstance(value, list)
                                else value))
    # Ctrl-C sets a flag the spin loop checks: rclpy's own handler shuts the context down
    # under a running take, which then raises instead of ending quietly
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("set_parameters_on_motion")
    client = AsyncParameterClient(node, target)
    sent = []

    def on_reference(msg):
        if sent or not any(v != 0.0 for v in msg.velocity):
            return
        sent.append(client.set_parameters(params))
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        print(f"set_parameters_on_motion: sent at t = {stamp:.3f} s", flush=True)
        sent[0].add_done_callback(lambda future: print(
            "set_parameters_on_motion: "
            + ", ".join(f"{p.name} {'ok' if r.successful else 'refused: ' + r.reason}"
                        for p, r in zip(params, future.result().results)), flush=True))

    node.create_subscription(JointState, f"{target}/reference", on_reference, 10)
    while not stop:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
