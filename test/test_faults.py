"""Faults injected into the running system (separate processes over DDS, own domain ids).

- kill the controller mid-run and start another: the simulator keeps running, the new
  controller takes the arm where it finds it and holds it;
- kill the simulator: the controller notices within state_timeout and holds gravity
  compensation;
- best-effort QoS with 10 % of the joint states dropped, and the loop with another process
  eating a core: tracking stays bounded and the simulator reports its missed deadlines;
- the synchronous simulated arm with both cores kept busy by other processes: only the
  real-time factor drops, the default watchdogs stay quiet and tracking is as tight as when
  the machine is idle.
The kill and fault tests run the hardware-like mode (simulator free running, controller on
wall time), which is what the watchdogs are for.
Bounds are stated at each test, with what was measured here.
"""

import signal
import sys
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
import rclpy  # noqa: E402
from conftest import SUPPORT_DIR  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from harness import processes  # noqa: E402
from harness.loop import closed_loop, node_status  # noqa: E402
from harness.metrics import faults, tracking_figures  # noqa: E402
from harness.recorder import Recorder  # noqa: E402

ARM, ARM_CONFIGS = processes.arm_files("default_arm")


class Counter:
    """Counts messages on a topic from a background-spun node."""

    def __init__(self, node, msg_type, topic):
        self.times = []
        node.create_subscription(msg_type, topic, lambda _: self.times.append(time.monotonic()),
                                 100)

    def since(self, t):
        return sum(1 for x in self.times if x > t)


def start(name, domain, log_dir, **params):
    files = {"dynamics_simulator": [processes.config("simulator"), *ARM_CONFIGS],
             "computed_torque_controller": [processes.config("controller")]}[name]
    extra = ({"use_sim_time": False} if name == "computed_torque_controller"
             else {"synchronous": False})  # hardware-like: both watchdogs on wall time
    return processes.NodeProcess(name, files, {"urdf_file": str(ARM), **extra, **params},
                                 log_dir=log_dir, domain_id=domain)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def ros(monkeypatch, request):
    """rclpy in the test's own domain, a Recorder, and DDS over UDP loopback only.

    The loop's processes use UDP loopback anyway (processes.loop_env). Here this process uses it
    too: these tests SIGKILL a node, and a reader killed inside Fast DDS's shared-memory
    transport can stall delivery to the other readers of the same writers for a while (seen
    here in about 1 run in 10: the controller kept sending, the test received nothing;
    eProsima/Fast-DDS#5469 reports the same), which would test Fast DDS rather than our nodes.
    """
    domain = request.param
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    transports = processes.loop_env()["FASTDDS_BUILTIN_TRANSPORTS"]
    monkeypatch.setenv("FASTDDS_BUILTIN_TRANSPORTS", transports)  # this process and its nodes
    rclpy.init(domain_id=domain)
    recorder = Recorder()
    yield domain, recorder
    recorder.close()
    rclpy.try_shutdown()


@pytest.mark.parametrize("ros", [71], indirect=True)
def test_controller_killed_and_restarted(ros, tmp_path):
    # command_timeout 10 s: the simulator keeps applying the last effort, as ros2_control's
    # forward_command_controller does, while a new controller starts. The new one holds the
    # first position it measures. Bounds: torque jump between the dead controller's last
    # command and the new one's first below 0.5 N m, position drift below 1e-3 rad.
    domain, recorder = ros
    states = Counter(recorder, JointState, "/joint_states")
    # Synchronous, with a short wait for each answer: free running, a loaded machine kept the
    # arm from ever settling to the rest this test needs before the kill (60 s beside
    # busy-machine.sh), which is the load's doing, not the restart's. The dead controller's
    # states get no answer, so the simulator steps on its last command every sync_timeout.
    sim = start("dynamics_simulator", domain, tmp_path, command_timeout=10.0, synchronous=True,
                sync_timeout=0.01)
    first = start("computed_torque_controller", domain, tmp_path / "first")
    second = None
    try:
        # 2 s of the first controller: its soft start's sag held and settled, so that the
        # effort it leaves behind holds the arm at rest (at 0.5 s the arm still moved: 0.88 mrad
        # of drift by the time the new controller started)
        wait_for(lambda: len(recorder.series("errors")[0]) > 2000, 60, "the first controller")
        wait_for(lambda: len(states.times) > 100, 30, "joint states at the test's subscription")
        # and at rest when it dies: its last effort has no feedback in it then, so a jump is
        # the restart's doing
        wait_for(lambda: np.abs(recorder.series("errors")[1][-50:]).max() < 1e-4, 60,
                 "the first controller to hold the arm at rest (|e| < 1e-4 rad, 50 ticks)")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        killed = time.monotonic()
        wait_for(lambda: states.since(killed) > 300, 60, "joint states after the kill")
        assert sim.running()  # the simulator kept going
        seen = len(recorder.series("references")[0])
        _, q_d, _, tau = recorder.series("references")
        last_tau, last_q = tau[-1], q_d[-1] - recorder.series("errors")[1][-1]
        second = start("computed_torque_controller", domain, tmp_path / "second")
        wait_for(lambda: len(recorder.series("references")[0]) > seen + 2000, 60,
                 "the new controller")
        _, q_new, _, tau_new = recorder.series("references")
        jump = np.abs(tau_new[seen] - last_tau).max()
        drift = np.abs(q_new[seen:] - last_q).max()
        print(f"restart: torque jump {jump:.3g} N m, hold position drift {drift:.3g} rad")
        # (the vectors say which joints moved, and from where)
        assert jump < 0.5 and drift < 1e-3, (
            f"last command {np.round(last_tau, 4)}, the new one's first "
            f"{np.round(tau_new[seen], 4)} and second {np.round(tau_new[seen + 1], 4)}, at q "
            f"{np.round(last_q, 5)}")
        assert np.abs(recorder.series("errors")[1][seen:]).max() < 1e-3
        assert second.stop() == 0 and sim.stop() == 0
    finally:
        for node in (first, second, sim):
            if node is not None:
                node.stop()


@pytest.mark.parametrize("ros", [72], indirect=True)
def test_simulator_killed_controller_detects_stale_state(ros, tmp_path):
    domain, recorder = ros
    efforts = Counter(recorder, Float64MultiArray, "/effort_controller/commands")
    sim = start("dynamics_simulator", domain, tmp_path)
    controller = start("computed_torque_controller", domain, tmp_path)
    try:
        wait_for(lambda: len(recorder.series("errors")[0]) > 500, 60, "the loop")
        wait_for(lambda: len(efforts.times) > 100, 30, "effort commands at the test's subscription")
        # (on wall time, a loaded machine can starve the loop past state_timeout before the
        # kill too: the watchdog reports that as it should, so only what follows the kill counts)
        controller_status = lambda: node_status(recorder, "computed_torque_controller")  # noqa: E731

        def holding():
            return controller_status()["message"] == "holding: no good joint state"

        wait_for(lambda: "stale_state_events" in controller_status(), 60, "/diagnostics")
        before = controller_status()["stale_state_events"]
        sim.proc.send_signal(signal.SIGKILL)
        sim.proc.wait()
        killed = time.monotonic()
        wait_for(lambda: controller_status()["stale_state_events"] > before and holding(), 60,
                 "the stale-state report on /diagnostics")
        detected = time.monotonic()
        reported = controller_status()["stale_state_events"]
        # then it holds, with gravity compensation sent at the watchdog's 100 Hz
        wait_for(lambda: efforts.since(detected) > 20, 60, "hold commands after the warning")
        # once: the controller holds, it does not nag (a status a second later agrees). The
        # count is taken once the hold is reported, not before the kill: a status is up to a
        # second old, and a starved loop's spell just before the kill (reported after it) made
        # "before + 1" read 3 against 2 with three workers on two cores.
        time.sleep(1.5)
        status = controller_status()
        assert status["stale_state_events"] == reported, (reported, status)
        assert holding(), status
        # state_timeout is 0.1 s: the controller reports the silence it saw, never less. How
        # much more depends on the machine's load (measured 0.10 to 0.11 s on an idle one), so
        # it is printed, not bounded.
        silence = status["stale_silence_s"]
        print(f"stale state reported after {silence:.3f} s of silence, "
              f"{detected - killed:.3f} s after the kill (as /diagnostics heard it)")
        assert silence > 0.1
        assert controller.running() and controller.stop() == 0
    finally:
        controller.stop()
        sim.stop()


def _fmt(values):
    return ", ".join(f"{x:.1e}" for x in values)


def _deadlines(result):
    """(states, missed) from the simulator's last /diagnostics status."""
    figures = result["diagnostics"].get("dynamics_simulator")
    assert figures, "the simulator reported no deadline figures"
    return int(figures["states"]), int(figures["missed"])


def _warnings(result):
    """The nodes' WARN and ERROR lines: what a failed bound was up against."""
    return "\n".join(line for log in result["logs"].values() for line in log.splitlines()
                     if line.startswith(("[WARN]", "[ERROR]")))


# The two tests below check tracking under dropped states and under CPU load, with six processes
# on the two cores; the kill tests above check the watchdogs. So both watchdogs get 1 s here: a
# node that now and then waits a moment for a core must not turn into the watchdog's reaction
# (the controller dropping its trajectory, the simulator letting the arm fall).
# Both run the simulator free running, as hardware: a synchronous one would wait sync_timeout
# for the answer to every dropped state.
WIDE_CONTROLLER = {"state_timeout": 1.0}
WIDE_SIMULATOR = {"command_timeout": 1.0, "synchronous": False}


def test_best_effort_with_dropped_states_stays_bounded(tmp_path):
    # 10 % of the joint states never reach the controller (seeded drop, best-effort QoS both
    # ways), free running at a quarter of real time (4 ms of wall time for each answer). The
    # error grows with the machine's load as much as with the drops: measured 2e-5 to 2.5e-4
    # rad on a quiet machine, 7e-3 to 1e-2 with two CPU hogs beside the suite (0.15 rad at full
    # speed). Bound: it stays bounded, RMS below 5e-2 rad on every joint (a controller that
    # lost the trajectory is off by the 0.3 rad move); the drops must show as missed deadlines.
    relay = ("fault_relay", [sys.executable, str(SUPPORT_DIR / "fault_relay.py"), "0.1"])
    # the observer on (the default): in one loaded full-suite run (2026-12-02) the lost states
    # read as a 48 N push at the hand and latched a collision before the goal; a gap longer
    # than a few steps now starts its integral again (observer.GAP_STEPS)
    best_effort = {"qos_reliability": "best_effort"}
    result = closed_loop("default_arm", 6.0, None, tmp_path, 73,
                         controller_params={**WIDE_CONTROLLER, **best_effort},
                         simulator_params={**WIDE_SIMULATOR, **best_effort,
                                           "real_time_factor": 0.25},
                         simulator_remaps={"/joint_states": "/joint_states_raw"}, helpers=[relay])
    rms, _ = tracking_figures(result)
    published, missed = _deadlines(result)
    print(f"10 % dropped: RMS {_fmt(rms)}; {missed} of {published} missed")
    assert np.all(rms < 5e-2), f"{rms}\n{_warnings(result)}"
    assert missed >= 0.05 * published  # the dropped states show as missed deadlines
    assert result["diagnostics"]["fault_relay"]["dropped"] > 0, result["diagnostics"]
    controller = result["diagnostics"]["computed_torque_controller"]
    assert controller["collisions"] == 0, controller  # no push: the drops are not contact


# free running on wall time, like the topic-based hardware's loop: with the suite's other worker
# beside it (another loop's processes) it was starved past what its hog does and diverged, in a
# quiet suite (joint6 at 5.3 rad/s, joints to 6.1 rad) and beside busy-machine.sh (3.3 rad);
# alone beside busy-machine.sh and its hog it tracked 3 of 3 runs (2.8e-4 rad, 40 % missed), but
# alone in a quiet fresh clone it still met its velocity guard once (below)
@pytest.mark.alone
def test_loop_under_cpu_load_from_another_process_stays_bounded(tmp_path):
    # A busy process takes one of the two cores for the whole run. Free running, as hardware
    # is, the error grows with whatever else loads the machine: measured here 2e-5 to 2e-3 rad
    # with only the hog, 5.8e-3 with a test run beside it, 15 to 40 % of the deadlines missed.
    # So the bound says the arm still tracks (it neither falls nor diverges, which is an error
    # of tenths of a radian), not how well: how well is the synchronous test's, below. The
    # figures are printed, and the missed deadlines are in the simulator's log either way.
    hog = ("cpu_hog", [sys.executable, "-c", "while True: pass"])
    result = closed_loop("default_arm", 4.0, None, tmp_path, 74, helpers=[hog],
                         controller_params=WIDE_CONTROLLER, simulator_params=WIDE_SIMULATOR)
    rms, _ = tracking_figures(result)
    published, missed = _deadlines(result)
    guard = int(result["diagnostics"]["computed_torque_controller"]["velocity_faults"])
    print(f"under load: RMS {_fmt(rms)}; {missed} of {published} missed; {guard} velocity "
          f"faults")
    if guard:
        # Starved, the loop overshot into the velocity guard, which holds the arm (69 % of the
        # states unanswered once with the suite's other worker beside it; 30 % alone in a quiet
        # fresh clone, joint5 at 2.469 rad/s over its 2.44): the safe outcome is that it stays
        # put, as the RMS against a reference that runs on cannot say. Its last 0.5 s, within
        # 5e-2 rad.
        late = result["position"][result["t"] > result["t"][-1] - 0.5]
        assert np.ptp(late, axis=0).max() < 5e-2, f"{np.ptp(late, axis=0)}\n{_warnings(result)}"
    else:
        assert np.all(rms < 5e-2), f"{rms}\n{_warnings(result)}"
    # the loop reached the trajectory's end (closed_loop raises otherwise) and ran: the
    # simulator's count is from its last /diagnostics, 1 Hz of wall time, which shows that it
    # ran, not how long (4776 states of a 6 s run were counted there with three CPU hogs beside
    # the suite). Not spans(): with the hog, the machine's load and six processes on two cores
    # the recorder itself missed the last 1.5 s of the 6 (5324 of 10720 deadlines missed, RMS
    # 2.5e-4 rad on what it heard), so coverage would measure the recorder: beside
    # busy-machine.sh and the suite's other worker it heard 59 ticks of the 4 s once, on a loop
    # that ran on (a bound of 100 failed there). Ten are enough for the RMS bound above.
    assert len(result["t"]) > 10 and published > 1000


def _cpu_hogs(count):
    """Processes that keep a core busy each until SIGINT, then exit 0."""
    spin = ("import signal, sys; signal.signal(signal.SIGINT, lambda *_: sys.exit(0))\n"
            "while True: pass")
    return [(f"cpu_hog{i}", [sys.executable, "-c", spin]) for i in range(count)]


def test_synchronous_loop_with_both_cores_busy_only_slows_down(tmp_path):
    # Two busy processes keep both cores loaded for the whole run, the default watchdogs
    # (state_timeout 0.1 s on sim time, command_timeout 0.2 s on sim time) and the default
    # synchronous simulator. Bounds: RMS below 1e-3 rad on every joint, as on an idle
    # machine (test_closed_loop); no watchdog fires; under 1 % of the states unanswered within
    # sync_timeout; the real-time factor is reported.
    result = closed_loop("default_arm", 4.0, None, tmp_path, 76, helpers=_cpu_hogs(2))
    rms, _ = tracking_figures(result)
    published, missed = _deadlines(result)
    rtf = result["diagnostics"]["dynamics_simulator"]["real_time_factor"]
    print(f"both cores busy: RMS {_fmt(rms)}; {missed} of {published} missed; "
          f"real-time factor {rtf}")
    assert np.all(rms < 1e-3), f"{rms}\n{_warnings(result)}"
    assert not faults(result), (faults(result), _warnings(result))
    # (published: the simulator's last /diagnostics before the end, 1 Hz of wall time: under load
    # it can be a second of simulated time old, so it shows the loop ran, not how long)
    assert published > 1000 and missed <= 0.01 * published
    assert 0 < rtf <= 1.05
    assert set(result["exit_codes"].values()) == {0}, result["exit_codes"]
