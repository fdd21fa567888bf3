"""Several controllers on one simulated robot: the simulator core with two command sources, each
claiming its joints (command_sources). References: the commands sent (each joint takes its own
source's value, bit for bit), and the rules of docs/simulator.md#several-command-sources.
"""

import numpy as np
import pytest
from conftest import DEFAULT_ARM, read_table

from dyn_control import load_chain
from dyn_control.parameters import SIMULATOR
from dyn_control.sim.core import DEFAULT_SOURCE, SimulatorCore, command_sources, simulator_settings

ARM = [f"joint{i}" for i in range(1, 5)]
WRIST = ["joint7", "joint6", "joint5"]  # in an order of its own
SOURCES = [f"arm/commands: {', '.join(ARM)}", f"wrist/commands: {', '.join(WRIST)}"]


@pytest.fixture(scope="module")
def chain():
    return load_chain(DEFAULT_ARM)


def simulator(chain, **overrides):
    return SimulatorCore(chain, simulator_settings(chain, read_table(
        SIMULATOR, chain, **{"command_sources": SOURCES, **overrides})))


def test_each_source_claims_its_joints_in_its_order(chain):
    (arm, a), (wrist, w) = command_sources(chain, SOURCES, None)
    assert (arm, wrist) == ("arm/commands", "wrist/commands")
    assert a.tolist() == [0, 1, 2, 3] and w.tolist() == [6, 5, 4]
    # none given: one source over the `joints` order, as before
    (topic, joints), = command_sources(chain, [""], np.array([1, 0, 2, 3, 4, 5, 6]))
    assert topic == DEFAULT_SOURCE and joints.tolist() == [1, 0, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("entries, message", [
    (["arm/commands: joint1, joint2, joint3, joint4, joint5, joint6, joint7",
      "wrist/commands: joint7"],
     "command_sources: joint 'joint7' is claimed by both 'arm/commands' and 'wrist/commands'"),
    (["arm/commands: joint1, joint2, joint3, joint4, joint5, joint6"],
     "command_sources: no source claims joint 'joint7' (every simulated joint needs one)"),
    (["arm/commands: joint1, joint2, joint3, joint4, joint5, joint6, joint7, finger"],
     "command_sources: 'arm/commands' claims joint 'finger', which the simulated model does "
     "not have"),
    (["arm/commands joint1"], "command_sources: 'arm/commands joint1' is not 'TOPIC: JOINT, "),
    (["arm/commands:"], "command_sources: 'arm/commands:' is not 'TOPIC: JOINT, "),
])
def test_a_bad_list_of_sources_is_refused_in_one_line_naming_the_joint(chain, entries, message):
    with pytest.raises(ValueError) as err:
        command_sources(chain, entries, None)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_topic_based_hardware_takes_no_sources(chain):
    with pytest.raises(ValueError, match="command_sources must be empty with command_type "
                                         "joint_state"):
        simulator(chain, command_type="joint_state", synchronous=False)


def test_each_source_writes_its_own_joints_and_the_brakes_wait_for_both(chain):
    core = simulator(chain)
    q0 = core.sim.q.copy()
    core.on_command(0.0, np.array([1.0, 2.0, 3.0, 4.0]), 0)
    assert core.braked and not core.answered  # the wrist's controller has not started
    core.step(0.0)
    np.testing.assert_array_equal(core.sim.q, q0)  # held: no joint falls meanwhile
    core.on_command(0.0, np.array([7.0, 6.0, 5.0]), 1)
    assert not core.braked and core.answered
    np.testing.assert_array_equal(core.command, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    core.on_command(0.0, np.array([-1.0, -2.0, -3.0, -4.0]), 0)  # the arm's alone changes
    np.testing.assert_array_equal(core.command, [-1.0, -2.0, -3.0, -4.0, 5.0, 6.0, 7.0])


def test_a_state_is_answered_once_every_source_answered_it(chain):
    core = simulator(chain)
    arm, wrist = np.zeros(4), np.zeros(3)
    core.on_command(0.0, arm, 0)
    core.on_command(0.0, wrist, 1)
    core.published(0.0)  # a state out: both must answer it
    core.on_command(0.0, arm, 0)
    assert not core.answered  # the synchronous step still waits
    core.published(0.0)  # the next state went out without the wrist's answer: a miss, its
    assert (core.missed, core.source_missed.tolist()) == (1, [0, 1])
    core.on_command(0.0, wrist, 1)
    assert not core.answered  # an answer to this state, from the wrist only
    core.on_command(0.0, arm, 0)
    assert core.answered
    values = core.diagnostics(0.0)[2]
    assert values["missed_by_source"] == "arm/commands: 0; wrist/commands: 1"


def test_a_silent_source_loses_its_own_joints_only(chain):
    # synchronous: command_timeout in simulated time; the arm's controller keeps answering
    core = simulator(chain)
    core.on_command(0.0, np.full(4, 2.0), 0)
    core.on_command(0.0, np.full(3, 3.0), 1)
    steps = int(core.settings.command_timeout / core.sim.dt) + 2
    for _ in range(steps):
        core.step(0.0)
        core.on_command(0.0, np.full(4, 2.0), 0)
    assert core.timed_out and core.silent.tolist() == [False, True]
    np.testing.assert_array_equal(core.command, [2.0] * 4 + [0.0] * 3)
    said = [text for _, text, _ in core.drain()]
    assert any(text.startswith("no effort command from wrist/commands for ") for text in said)
    core.on_command(0.0, np.full(3, 3.0), 1)  # back: its joints get their command again
    assert not core.timed_out
    np.testing.assert_array_equal(core.command, [2.0] * 4 + [3.0] * 3)



def test_each_robot_of_a_world_gets_its_own_command_source(chain):
    """robots without command_sources: each robot's commands come on its namespace's
    effort_controller/commands, over its joints in its order; the same rules refuse a joint
    in two robots, in one line.
    """
    robots = [f"left: {', '.join(ARM)}", f"/right/: {', '.join(WRIST)}"]
    s = simulator(chain, command_sources=[""], robots=robots).settings
    assert [(ns, j.tolist()) for ns, j in s.robots] == [("left", [0, 1, 2, 3]),
                                                        ("/right/", [6, 5, 4])]
    assert [(t, j.tolist()) for t, j in s.sources] == [
        ("left/effort_controller/commands", [0, 1, 2, 3]),
        ("/right/effort_controller/commands", [6, 5, 4])]
    # command_sources, when given, stand: a robot's gripper may have a controller of its own
    s = simulator(chain, robots=robots).settings
    assert [t for t, _ in s.sources] == ["arm/commands", "wrist/commands"]
    with pytest.raises(ValueError) as err:
        simulator(chain, robots=[f"left: {', '.join(ARM)}, joint5", f"right: {', '.join(WRIST)}"])
    assert str(err.value) == "robots: joint 'joint5' is claimed by both 'left' and 'right'"
    with pytest.raises(ValueError, match="robots: 'left' is not 'NAMESPACE: JOINT, "):
        simulator(chain, robots=["left"])
