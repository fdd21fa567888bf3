"""The nodes' console scripts. Each installs its SIGINT and SIGTERM handlers before it imports
anything heavy (rclpy, numba: over a second on a loaded machine), so that Ctrl-C from
`ros2 launch` at any moment of start-up ends the process at once with exit code 0. Once the
node module is loaded, nodes.process.run takes the signals over.
"""

import importlib
import os
import signal
import sys


def _run(module, name):
    def exit_at_once(*_):  # nothing has started yet that needs stopping; say so, as run() does
        print(f"[{name}] stopped during start-up", file=sys.stderr, flush=True)
        os._exit(0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, exit_at_once)
    from dyn_control.kernels import cache
    if not cache.complete():  # said before the import, which already compiles the C entries
        print(f"[{name}] compiling the kernels before it starts: this source's kernel cache is "
              "not filled (python -m dyn_control.precompile fills it; make and colcon build run "
              "it); about 1.5 min on 2 idle cores, longer beside a load", file=sys.stderr,
              flush=True)
    return importlib.import_module(f"dyn_control.nodes.{module}").main()


def computed_torque_controller():
    return _run("controller", "computed_torque_controller")


def dynamics_simulator():
    return _run("simulator", "dynamics_simulator")


def trajectory_demo():
    return _run("trajectory_demo", "trajectory_demo")


def cartesian_demo():
    return _run("cartesian_demo", "cartesian_demo")


def identify():
    """`ros2 run dyn_control identify`: the live workflow (nodes.identify); with --from-bag,
    the offline fit (dyn_control.identification.offline), no ROS needed.
    """
    if "--from-bag" in sys.argv or {"-h", "--help"} & set(sys.argv[1:]):
        from dyn_control.identification.offline import main
        if "--from-bag" not in sys.argv:  # the live node's parameters are ROS parameters
            print("live: identify --ros-args -p urdf_file:=ARM.urdf -p use_sim_time:=true "
                  "[-p effort_delay:=0.0005 ...] (its parameters: docs/parameters.md#identify)\n"
                  "offline, from the recordings:")
        return main(sys.argv[1:])
    return _run("identify", "identify")


def teach():
    """`ros2 run dyn_control teach`: a client, not a node process (nodes.teach)."""
    return _run("teach", "teach")
