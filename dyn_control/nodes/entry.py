"""The nodes' console scripts. Each installs its SIGINT and SIGTERM handlers before it imports
anything heavy (rclpy, numba: over a second on a loaded machine), so that Ctrl-C from
`ros2 launch` at any moment of start-up ends the process at once with exit code 0. Once the
node module is loaded, nodes.process.run takes the signals over."""

import importlib
import os
import signal


def _exit_at_once(*_):
    os._exit(0)  # nothing has started yet that needs stopping


def _run(module):
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_at_once)
    return importlib.import_module(f"dyn_control.nodes.{module}").main()


def computed_torque_controller():
    return _run("controller")


def dynamics_simulator():
    return _run("simulator")


def trajectory_demo():
    return _run("trajectory_demo")


def cartesian_demo():
    return _run("cartesian_demo")
