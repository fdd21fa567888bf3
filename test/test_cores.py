"""The controller and simulator cores without ROS: plain calls with synthetic time.

References: the law on arrays (the same ControlLaw the core holds), g(q) from inverse dynamics
(a static hold), and the timeouts' own definitions.
"""

import numpy as np
import pytest
from conftest import BENT_POSE, DEFAULT_ARM, DEFAULT_JOINTS, read_table

from dyn_control import gravity_torques, load_chain
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import Request
from dyn_control.controller.settings import controller_settings
from dyn_control.parameters import CONTROLLER, SIMULATOR
from dyn_control.sim.core import SimulatorCore, simulator_settings

Q, ZERO, NAMES = np.array(BENT_POSE), np.zeros(7), DEFAULT_JOINTS


@pytest.fixture(scope="module")
def chain():
    return load_chain(DEFAULT_ARM)


# the law's own torques from the first state on: no soft start, no rate limit (test_limits.py
# checks those on the defaults)
LAW_ONLY = {"max_effort_rate": 0.0, "soft_start": 0.0}


def controller(chain, **overrides):
    return ControllerCore(controller_settings(chain, read_table(CONTROLLER, chain, **{**LAW_ONLY,
                                                                            **overrides})))


def test_controller_holds_the_first_state_then_tracks_a_goal(chain):
    core = controller(chain)
    assert core.update(0.0) is None  # no state yet: nothing to say or send
    command = core.update(0.0, (1.0, Q, ZERO))
    # holding at rest on target: tau = g(q) exactly (computed torque with e = ed = 0)
    np.testing.assert_allclose(command.tau, gravity_torques(chain, Q), atol=1e-9)
    core.offer(Request(NAMES, 0.0, ((1.0, Q + 0.1, (), ()),)))
    command = core.update(0.5, (1.5, Q, ZERO))
    np.testing.assert_allclose(command.desired[0], Q + 0.05, atol=1e-12)  # linear, halfway
    np.testing.assert_allclose(command.errors[0], 0.05, atol=1e-12)


def test_controller_goal_before_the_first_state_waits_for_it(chain):
    core = controller(chain)
    core.offer(Request(NAMES, 0.0, ((1.0, Q + 0.1, (), ()),)))
    assert core.goals.trajectory is None and core.goals.pending is not None
    core.update(0.0, (5.0, Q, ZERO))
    assert core.goals.trajectory.start_time == 5.0 and core.goals.pending is None


def test_controller_state_timeout_holds_then_recovers_without_a_jump(chain):
    core = controller(chain)
    core.update(0.0, (1.0, Q, ZERO))
    # silent for exactly state_timeout: fine
    assert core.update(0.1) is None and not core.watchdog.stale
    hold = core.update(0.15)
    assert core.watchdog.stale and hold.desired is None
    np.testing.assert_allclose(hold.tau, gravity_torques(chain, Q), atol=1e-12)
    assert core.update(0.16).tau is not None  # keeps holding
    events = [text for _, text, _ in core.drain()]
    assert sum("no good joint state" in text for text in events) == 1  # warned once
    back = core.update(0.2, (1.2, Q, ZERO))
    assert not core.watchdog.stale
    np.testing.assert_allclose(back.tau, hold.tau, atol=1e-9)  # at rest: the holding torque


def test_controller_state_timeout_stop_sends_nothing(chain):
    core = controller(chain, on_state_timeout="stop")
    core.update(0.0, (1.0, Q, ZERO))
    assert core.update(0.2) is None and core.watchdog.stale


def test_controller_rate_limit_and_timer_ticks(chain):
    core = controller(chain, max_effort_rate=100.0, rate=500.0)
    assert core.update(0.0, (1.0, Q, ZERO)) is None  # rate > 0: a state alone sends nothing
    first = core.tick().tau
    core.update(0.0, (1.002, Q + 0.2, ZERO))
    step = core.tick().tau - first
    assert np.abs(step).max() == pytest.approx(0.2, rel=1e-9)  # 100 N m/s over 2 ms


def test_controller_non_finite_effort_is_not_sent(chain):
    core = controller(chain)
    core.update(0.0, (1.0, Q, ZERO))
    assert core.update(0.0, (1.001, Q, np.full(7, 1e200))) is None
    assert any("non-finite" in text and throttle for _, text, throttle in core.drain())


def simulator(chain, **overrides):
    return SimulatorCore(chain, simulator_settings(chain, read_table(SIMULATOR, chain,
                                                                     **overrides)))


@pytest.mark.parametrize("synchronous", [False, True])
def test_simulator_command_timeout_zeroes_the_effort(chain, synchronous):
    # free running: wall time since the last command; synchronous: simulated time
    core = simulator(chain, synchronous=synchronous)
    core.on_command(0.0, np.full(7, 5.0))
    assert not core.braked and np.all(core.command == 5.0)
    timeout = core.settings.command_timeout
    steps = int(timeout / core.sim.dt) + 2
    for k in range(steps):  # synchronous: simulated time runs out; free running: wall time not
        core.step(0.0)
    assert core.timed_out == synchronous
    if not synchronous:
        core.step(timeout + 0.01)
        assert core.timed_out
    assert np.all(core.command == 0.0) and core.timeouts == 1
    core.on_command(1.0, np.full(7, 1.0))  # commands back
    assert not core.timed_out and np.all(core.command == 1.0)


def test_simulator_brakes_until_the_first_command_and_counts_deadlines(chain):
    core = simulator(chain)
    q0 = core.sim.q.copy()
    for _ in range(10):
        core.step(0.0)
    np.testing.assert_array_equal(core.sim.q, q0)  # braked: time runs, the arm does not move
    assert core.sim.steps == 10
    core.published(0.0)
    assert core.states == 0  # before the first command nothing is expected
    core.on_command(0.0, ZERO)
    core.published(0.001)  # answered
    core.published(0.002)  # not answered
    assert (core.states, core.missed) == (2, 1)


def test_controller_holds_even_before_its_first_timer_tick(chain):
    # rate > 0 and the states stop before the timer ever ticked: nothing was sent yet, and
    # the hold still goes out, timed from the last state
    core = controller(chain, rate=5.0)
    assert core.update(0.0, (1.0, Q, ZERO)) is None
    hold = core.update(0.2)
    assert core.watchdog.stale and hold.t == pytest.approx(1.0 + core.watchdog.period)
    np.testing.assert_allclose(hold.tau, gravity_torques(chain, Q), atol=1e-12)


WARM_CHECK = """
import dataclasses, json, sys
import numpy as np
sys.path.insert(0, {test!r})
from conftest import URDF_DIR, read_table
from dyn_control import kinematics, load_chain
from dyn_control.controller.core import ControllerCore, warm_up
from dyn_control.parameters import CONTROLLER
from dyn_control.controller.settings import controller_settings

def signatures():  # every compiled kernel's compiled or loaded signatures
    found = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("dyn_control"):
            for attr, value in vars(module).items():
                for sig in getattr(value, "overloads", {{}}):
                    found.add(f"{{name}}.{{attr}}{{sig}}")
    return found

chain = load_chain(URDF_DIR / "default_arm.urdf")
settings = controller_settings(chain, read_table(CONTROLLER, chain))
warm_up(settings)
before = signatures()
core = ControllerCore(settings)
q, zero = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]), np.zeros(7)
t = 0.0
for mode in ("gravity_pd", "cartesian_impedance", "feedforward", "cartesian_impedance"):
    core.configure(dataclasses.replace(settings, mode=mode, target_filter=0.02))
    for _ in range(3):
        t += 0.001
        core.update(t, (t, q, zero))
    if mode == "cartesian_impedance":
        R, p = kinematics.frame_pose(chain, q)
        core.set_target_pose(R, p + 0.01)
        core.update(t + 0.001, (t + 0.001, q, zero))
    core.diagnostics()
print(json.dumps({{"warm": len(before), "new": sorted(signatures() - before)}}))
"""


@pytest.mark.slow  # a fresh process: compiles (or loads from the cache) every kernel
def test_after_warm_up_a_switch_of_mode_compiles_nothing():
    # Reference: numba's own record of what it compiled or loaded (dispatcher overloads). A
    # kernel first used at run time stalls the loop for its compile on a first run (20.7 s for
    # the Cartesian law, beside a simulator whose command timeout then dropped the arm), or for
    # its load from the cache on later runs. A fresh process: the warm-up itself compiles or
    # loads, then nothing else may. Loads count as compiles do, so the package's own cache
    # serves (an empty one cost 25 s of CPU a run and tested nothing more).
    import json
    import subprocess
    import sys

    from conftest import PACKAGE_DIR
    code = WARM_CHECK.format(test=str(PACKAGE_DIR / "test"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=900, cwd=PACKAGE_DIR)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["warm"] > 10 and result["new"] == [], result


def test_simulator_noise_is_on_what_is_published_only(chain):
    """noise.* (the simulated sensors): the published q, qd and effort differ from the
    true state by white noise of the asked standard deviations (sample std of 4000 states
    within 5 %, mean within 4 sigma / sqrt(4000)), the true state is the physics' own, a seed
    repeats a run, and without noise the published arrays are the true ones.
    """
    sigma = {"noise.position": 1e-4, "noise.velocity": 1e-3, "noise.effort": 0.05}
    runs = []
    for _ in range(2):
        core = simulator(chain, **sigma, **{"noise.seed": 3})
        core.on_command(0.0, gravity_torques(chain, core.sim.q))
        deviations = []
        for k in range(4000):
            core.step(k * 1e-3)
            measured = core.measured()
            true = (core.sim.q, core.sim.qd, core.sim.tau)
            deviations.append([m - t for m, t in zip(measured, true)])
        runs.append(np.array(deviations))  # (4000, 3, n)
    np.testing.assert_array_equal(runs[0], runs[1])
    for k, s in enumerate(sigma.values()):
        d = runs[0][:, k, :]
        assert abs(d.std() / s - 1) < 0.05
        assert abs(d.mean()) < 4 * s / np.sqrt(d.size)
    quiet = simulator(chain)
    assert all(m is t for m, t in zip(quiet.measured(),
                                      (quiet.sim.q, quiet.sim.qd, quiet.sim.tau)))


def baxter_left():
    from conftest import robots_dir
    return load_chain(robots_dir() / "baxter_description/urdf/baxter.urdf",
                      tip_link="left_gripper_base_link")


def test_a_start_the_effort_limits_cannot_hold_is_said_by_both_cores_first():
    """Baxter's left arm at zero: left_s1 needs 56.42 N m against gravity over its 50 N m
    limit (g(q), our inverse dynamics). The controller says it at the first state, on
    /diagnostics (WARN, start_pose_not_held) and in its events; the simulator given that pose
    as initial_positions says it likewise. Its default start is a pose it can hold.
    """
    chain = baxter_left()
    core = controller(chain)
    core.update(0.0, (0.0, np.zeros(7), np.zeros(7)))
    level, _, values = core.diagnostics()
    line = ("joint 'left_s1' needs 56.42 N m against gravity at [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "
            "0.0], over its effort limit of 50 N m")
    assert level == "WARN" and values["start_pose_not_held"] == line
    assert [text for _, text, _ in core.drain()].count(
        f"the start pose cannot be held: {line}") == 1
    sim = SimulatorCore(chain, simulator_settings(chain, read_table(
        SIMULATOR, chain, initial_positions=[0.0] * 7)))
    assert sim.diagnostics(0.0)[2]["start_pose_not_held"] == line
    assert SimulatorCore(chain, simulator_settings(chain, read_table(SIMULATOR, chain))
                         ).overloads == []


def test_initial_positions_outside_the_limits_are_refused_naming_the_joint(chain):
    q0 = list(Q)
    q0[3] = 10.0
    with pytest.raises(ValueError, match=r"initial_positions: joint 'joint4' at 10 is outside "
                                         r"its limits \["):
        simulator_settings(chain, read_table(SIMULATOR, chain, initial_positions=q0))


def test_a_controller_with_no_joint_state_says_once_what_it_waits_for(chain):
    core = controller(chain)
    for now in (0.0, 1.0, 2.5, 3.0, 10.0):
        assert core.update(now) is None
    waits = [text for _, text, _ in core.drain() if text.startswith("waiting")]
    assert waits == ["waiting for the first joint state naming " + ", ".join(NAMES)
                     + ": none for 2.5 s"]


def test_a_push_stamped_ahead_is_applied_at_its_simulated_time(chain):
    """A push stamped ahead of the simulated time waits for it, then acts from the step that
    starts there (at 1 ms steps: the 10th, for 0.010 s), an end stamped later ends it there;
    an unknown link is refused at once.
    """
    sim = SimulatorCore(chain, simulator_settings(chain, read_table(SIMULATOR, chain)))
    sim.on_command(0.0, gravity_torques(chain, sim.sim.q))
    wrench = np.array([0.0, 5.0, 0.0, 0.0, 0.0, 0.0])
    sim.push(wrench, at=0.010)
    sim.push(np.zeros(6), at=0.015)
    started = ended = None
    for _ in range(30):
        before = sim.sim.t
        sim.step(0.0)
        if started is None and sim.sim.external is not None:
            started = before
        if started is not None and ended is None and sim.sim.external is None:
            ended = before
    assert started == pytest.approx(0.010) and ended == pytest.approx(0.015)
    with pytest.raises(ValueError, match="'nowhere'"):
        sim.push(wrench, "nowhere", at=1.0)
    assert sim.scheduled == []


def test_events_drained_by_two_threads_at_once_are_each_taken_once():
    # The simulator's stepper thread and its executor drain the same events. Here the other
    # thread's drain runs just before this drain's first pop (a deque whose first popleft lets
    # it), the interleaving that killed the stepper under load. Reference: every event is
    # drained exactly once, and no drain raises (one that counted first and then popped that
    # many raised IndexError)
    from collections import deque

    from dyn_control.cores import Events

    events, taken = Events(), []

    class Interleaved(deque):
        def popleft(self):
            if not self.other_ran:
                self.other_ran = True
                taken.extend(events.drain())  # the other thread, between two steps of this one
            return super().popleft()

    events.events = Interleaved()
    events.events.other_ran = False
    for k in range(5):
        events._say("info", str(k))
    taken.extend(events.drain())
    assert [text for _, text, _ in taken] == [str(k) for k in range(5)]
