"""The simulator behind ros2_control's topic-based hardware (command_type joint_state), over DDS:
controller_manager is not on PyPI, so test/support/topic_hardware_peer.py stands in for it, writing
and reading as JointStateTopicSystem does (effort by name, QoS depth 1, stamped now, at 1 kHz of
wall time; states with SensorDataQoS, by name), with forward_command_controller and
joint_state_broadcaster. Our controller's law closes the loop through it on the demo trajectory,
as ros2_control.launch.py runs it: no lockstep, everything on wall time.

Four processes at 1 kHz share the 2 cores here, and the stand-in is Python where
controller_manager is C++: the loop is sampled from ~/controller_state at 50 Hz (not 1 kHz), and
the watchdogs are widened to 1 s, as in test_faults' hardware-like tests, which check them.
Reference: the demo trajectory, and the bound below with what was measured.

Load: free running on wall time, a loop that a busy machine starves for more than the widened
state_timeout (1 s) is a fault the controller must catch: then the goal ends INVALID_GOAL with
the stall in its reason, the controller reports it on /diagnostics, and the arm holds. A loop
starved for less, whose late commands fling a joint past its URDF velocity limit, is the
velocity fault the limits catch: the goal ends PATH_TOLERANCE_VIOLATED and the arm holds (seen
with another test's loop beside this one: joint3 at 1.95 rad/s, limit 1.75). So the test
asserts the goal SUCCESSFUL, or one of those safe outcomes; never a quiet machine's figure.
"""

import sys
import threading
import time

import numpy as np
import pytest
from conftest import SUPPORT_DIR, require

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from dyn_control.nodes.diagnostics import read_diagnostics  # noqa: E402
from harness import processes  # noqa: E402

require("control_msgs")
from control_msgs.msg import JointTrajectoryControllerState  # noqa: E402

pytestmark = pytest.mark.alone  # four processes at 1 kHz of wall time on the two cores

DOMAIN = 68
JOINTS = [f"joint{i}" for i in range(1, 8)]
DURATION = 6.0  # s of demo trajectory


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("topic")
    urdf, arm_configs = processes.arm_files("default_arm")
    env = processes.loop_env()
    common = {"urdf_file": str(urdf)}
    start = [
        ("dynamics_simulator", [processes.config("simulator"), *arm_configs],
         {**common, "command_type": "joint_state", "synchronous": False, "publish_clock": False,
          "command_timeout": 1.0}, None),
        ("topic_hardware_peer", [], {}, [sys.executable,
                                         str(SUPPORT_DIR / "topic_hardware_peer.py"),
                                         *JOINTS]),
        # without the external-torque observer: its integral takes the states' stamps as the
        # physics' time, and here the stand-in stamps them with the wall clock while the free
        # running simulator runs slower than it on a loaded machine (a false collision was seen)
        ("computed_torque_controller", [processes.config("controller")],
         {**common, "state_timeout": 1.0, "external_torque.enabled": False}, None),
        ("trajectory_demo", [processes.config("demo")], {**common, "duration": DURATION}, None),
    ]
    rclpy.init(domain_id=DOMAIN)
    node = rclpy.create_node("topic_hardware_test")
    states = []
    diagnostics = {}  # node -> its newest /diagnostics status
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda msg: diagnostics.update(read_diagnostics(msg)), 10)
    node.create_subscription(JointTrajectoryControllerState,
                             "/computed_torque_controller/controller_state",
                             lambda msg: states.append((time.monotonic(),
                                                        np.array(msg.error.positions),
                                                        np.array(msg.reference.velocities))), 100)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinning = threading.Event()
    spinning.set()
    thread = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.05)
                                              for _ in iter(spinning.is_set, False)], daemon=True)
    thread.start()
    nodes = []
    try:
        for name, files, params, argv in start:
            nodes.append(processes.NodeProcess(name, files, params, log_dir=log_dir, env=env,
                                               domain_id=DOMAIN, argv=argv))
        # (start-up of four processes took over 90 s with the machine busy, as closed_loop's)
        deadline = time.monotonic() + 300
        while "result" not in diagnostics.get("trajectory_demo", {}):
            assert all(n.running() for n in nodes), [n.log()[-1000:] for n in nodes]
            assert time.monotonic() < deadline, nodes[-1].log()
            time.sleep(0.1)
    finally:
        codes = {n.name: n.stop() for n in reversed(nodes)}
        logs = {n.name: n.log() for n in nodes}
        spinning.clear()
        thread.join(timeout=2)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    moving = [(e, v) for _, e, v in states if np.abs(v).max() > 0]
    return {"error": np.array([e for e, _ in moving]), "exit_codes": codes, "logs": logs,
            "diagnostics": dict(diagnostics)}


def test_the_loop_through_the_topic_based_hardware_tracks_the_demo_trajectory(run):
    # No lockstep: a state is up to a cycle old when the peer reads it, a command up to a cycle
    # late when the peer writes it, and the cores are shared by four loops on wall time, so the
    # error grows with whatever else loads the machine: measured 5e-4 to 2.8e-3 rad on a quiet
    # one, up to 0.11 with two CPU hogs beside the test suite (printed). In lockstep
    # (test_closed_loop) it is 1e-5 to 5e-5. Bound: the loop closes, RMS below 0.2 rad on every
    # joint (an arm that falls, or whose trajectory is dropped, is off by the 0.3 rad move).
    error = run["error"]
    if run["diagnostics"]["trajectory_demo"]["result"] == "SUCCESSFUL":
        assert len(error) > 50  # ~/controller_state, 50 Hz of steady time, through the move
    assert len(error) > 0  # up to the fault, otherwise (the next test checks its reaction)
    rms = np.sqrt(np.mean(error**2, axis=0))
    print("through the topic-based peer: RMS " + ", ".join(f"{x:.1e}" for x in rms) + " rad, max "
          f"{np.abs(error).max():.2e} rad")
    assert np.all(rms < 0.2), rms


def test_the_peer_ran_and_every_process_ends_cleanly(run):
    # 1 kHz of wall time when it can (about 6000 cycles on a quiet machine; printed)
    d = run["diagnostics"]
    cycles = d["topic_hardware_peer"]["cycles"]  # its last status, up to 0.5 s before the stop
    print(f"topic_hardware_peer: {cycles:.0f} cycles")
    assert cycles > 1000, cycles
    assert set(run["exit_codes"].values()) == {0}, run["exit_codes"]
    assert d["dynamics_simulator"]["blowups"] == 0, d["dynamics_simulator"]
    # the brakes let go: the effort commands reached the simulator through the peer
    assert d["dynamics_simulator"]["message"] != "braked until the first command"
    assert "Traceback" not in "".join(run["logs"].values())


def test_the_goal_succeeds_or_the_arm_holds_after_a_reported_stall(run):
    d = run["diagnostics"]
    demo, controller = d["trajectory_demo"], d["computed_torque_controller"]
    print(f"goal result {demo['result']}: {demo['result_string']}; "
          f"{controller['stale_state_events']:.0f} stale-state events")
    if demo["result"] == "PATH_TOLERANCE_VIOLATED":  # a starved loop flung a joint
        assert "velocity fault" in demo["result_string"], demo
        assert controller["velocity_faults"] > 0, controller
        assert controller["message"].startswith("holding: velocity fault"), controller
    elif demo["result"] != "SUCCESSFUL":  # a busy machine starved the loop past state_timeout
        assert demo["result"] == "INVALID_GOAL", demo
        assert controller["stale_state_events"] > 0, controller
