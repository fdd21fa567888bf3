"""The observe stage in the controller core, closed in one process with the simulated arm
(synchronous, 1 kHz): contact reported while it lasts, a collision latched, the goal it ends,
the three reactions, the reset and its refusal. No ROS.

References: the push the simulator applies (its joint torques J^T w), the closed-form
detection time -ln(1 - level / A) / K_O, and the reactions' own definitions (hold: the arm stays
where it was; comply: gravity compensation with damping, so a push moves it).
"""

import math

import numpy as np
import pytest
from conftest import BENT_POSE, DEFAULT_ARM, DEFAULT_JOINTS, read_table

from dyn_control import load_chain, mass_matrix
from dyn_control.controller import goals
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import Request
from dyn_control.controller.settings import controller_settings
from dyn_control.kinematics import frame_jacobian
from dyn_control.parameters import CONTROLLER
from dyn_control.sim.simulation import Simulation

DT, Q = 1e-3, np.array(BENT_POSE)
PUSH = np.array([60.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # N at the hand, base axes: 44 N m on joint2


@pytest.fixture(scope="module")
def chain():
    return load_chain(DEFAULT_ARM)


class Loop:
    """A controller core and the simulated arm, the command answering each state."""

    def __init__(self, chain, **overrides):
        self.core = ControllerCore(controller_settings(chain, read_table(CONTROLLER, chain,
                                                                            **overrides)))
        self.sim = Simulation(chain, Q, DT)
        self.chain = chain

    def run(self, seconds, until=None):
        for _ in range(int(round(seconds / DT))):
            t = self.sim.t
            command = self.core.update(t, (t, self.sim.q.copy(), self.sim.qd.copy()))
            self.sim.step(command.tau)
            if until is not None and until():
                return True
        return False

    def goal(self, offset=0.3, seconds=2.0):
        return self.core.offer(Request(DEFAULT_JOINTS, 0.0, ((seconds, Q + offset, (), ()),)))


def test_a_collision_ends_the_goal_holds_and_refuses_goals_until_reset(chain):
    # the joint levels alone, so that the detection time is the joint's closed form
    loop = Loop(chain, **{"collision.force_contact": 0.0, "collision.force_collision": 0.0})
    loop.run(0.1)
    goal = loop.goal()
    loop.run(0.5)
    assert goal.status == "active" and not loop.core.contact.collision
    loop.sim.push(PUSH)
    truth = frame_jacobian(chain, loop.sim.q).T @ PUSH
    start = loop.sim.t
    assert loop.run(0.2, until=lambda: goal.done)
    # the first joint over 20 N m (in chain order) crosses at the closed form, within 2 samples
    k = next(i for i, a in enumerate(truth) if abs(a) > 20.0)
    expected = -math.log(1 - 20.0 / abs(truth[k])) / 50.0
    assert abs(loop.sim.t - start - expected) <= 2 * DT + 1e-9, (loop.sim.t - start, expected)
    assert goal.outcome == "aborted" and goal.code == goals.PATH_TOLERANCE_VIOLATED
    assert goal.reason.startswith(f"collision on {DEFAULT_JOINTS[k]}: ")
    assert "N·m over 20.0" in goal.reason
    held = loop.sim.q.copy()
    loop.run(0.5)  # hold: still pushed, the arm settles where the collision was, deflected
    assert np.abs(loop.sim.q - held - deflection(chain, held)).max() < 5e-3
    refused = loop.goal()
    assert refused.done and refused.code == goals.INVALID_GOAL
    assert refused.reason.startswith(goal.reason.split(";")[0])
    assert "reset_collision" in refused.reason
    done, message = loop.core.reset_collision()  # still pushed: still in contact
    assert not done and message.startswith("refused: still in contact on")
    loop.sim.push(np.zeros(6))
    loop.run(0.3)  # 15 time constants: the estimate is back under the contact level
    assert loop.core.contact.contact == ""
    done, message = loop.core.reset_collision()
    assert done and message.startswith("cleared: collision on")
    again = loop.goal(offset=0.1, seconds=1.0)
    assert again.status == "active"
    level, text, values = loop.core.diagnostics()
    assert level == "OK" and values["collisions"] == 1 and values["collision"] == "none"


def deflection(chain, held):
    """Where computed torque (Kp = 400 1/s^2) holds `held` against PUSH at rest: the q with
    M(q) Kp (q - held) = J(q)^T w, by fixed-point iteration (a contraction here).
    """
    q = held.copy()
    for _ in range(50):
        q = held + np.linalg.solve(mass_matrix(chain, q), frame_jacobian(chain, q).T @ PUSH) / 400.0
    return q - held


def test_comply_lets_a_push_move_the_arm_and_hold_does_not(chain):
    moved = {}
    for reaction in ("hold", "comply"):
        loop = Loop(chain, **{"collision.reaction": reaction})
        loop.run(0.1)
        loop.sim.push(PUSH)
        assert loop.run(0.1, until=lambda: bool(loop.core.contact.collision))
        at = loop.sim.q.copy()
        loop.run(0.5)
        moved[reaction] = np.abs(loop.sim.q - at - deflection(chain, at)).max()
        assert np.all(np.isfinite(loop.sim.q)) and np.abs(loop.sim.qd).max() < 5.0
        level, text, values = loop.core.diagnostics()
        assert level == "WARN" and text.startswith(f"collision, {reaction}: collision on")
    # hold: settled at its deflection; comply: pushed well beyond it
    assert moved["hold"] < 5e-3 and moved["comply"] > 0.1


def test_reaction_none_reports_and_lets_the_goal_run(chain):
    loop = Loop(chain, **{"collision.reaction": "none"})
    loop.run(0.1)
    goal = loop.goal()
    loop.sim.push(PUSH)
    loop.run(0.3)
    assert loop.core.contact.collision.startswith("collision on")
    assert goal.status == "active"
    loop.sim.push(np.zeros(6))
    loop.run(2.0)
    assert goal.outcome == "succeeded"


def test_contact_is_reported_while_it_lasts(chain):
    loop = Loop(chain)
    loop.run(0.1)
    loop.sim.push([0.0, 0.0, -15.0, 0.0, 0.0, 0.0])  # over 10 N of force contact, 3 N m at most
    loop.run(0.3)
    assert loop.core.contact.contact.startswith("contact at link7: ")
    assert not loop.core.contact.collision
    values = loop.core.diagnostics()[2]
    assert values["contact"] == loop.core.contact.contact
    assert abs(values["external_force_n"] - 15.0) < 0.15  # 1 %
    loop.sim.push(np.zeros(6))
    loop.run(0.3)
    assert loop.core.contact.contact == ""


@pytest.mark.parametrize("overrides, words", [
    ({"collision.joint_torque_contact": 30.0}, "collision.joint_torque_collision on joint1: 20 "
                                               "is below collision.joint_torque_contact 30"),
    ({"collision.force_collision": 5.0}, "collision.force_collision: 5 N is below "
                                         "collision.force_contact 10 N"),
    ({"collision.joint_torque_contact": -1.0}, "collision.joint_torque_contact must be finite "
                                               "and >= 0"),
    ({"collision.comply_damping": [1.0, 2.0]}, "collision.comply_damping must be a scalar or 7 "
                                               "values"),
])
def test_bad_levels_are_refused_with_one_line(chain, overrides, words):
    with pytest.raises(ValueError) as err:
        controller_settings(chain, read_table(CONTROLLER, chain, **overrides))
    assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name, value", [("external_torque.observer_gain", 0.0),
                                         ("external_torque.observer_gain", True),
                                         ("collision.force_contact", -2.0),
                                         ("collision.reaction", "stop")])
def test_the_parameter_table_refuses_bad_values(name, value):
    with pytest.raises(ValueError) as err:
        CONTROLLER[name].check(value)
    assert name in str(err.value) and repr(value) in str(err.value)


def test_states_out_of_order_or_far_apart_leave_the_estimate_finite(chain):
    """A stamp that goes back (a simulator restarted) or jumps far ahead: no step of the
    integral is taken backwards, nothing overflows, and r stays finite.
    """
    loop = Loop(chain)
    loop.run(0.1)
    core, q, zero = loop.core, loop.sim.q.copy(), np.zeros(7)
    for t in (0.05, 1e6, -5.0, 1e6 + 0.001):
        core.update(t, (t, q, zero))
        assert np.all(np.isfinite(core.contact.observer.r))


def test_an_arm_braked_past_the_first_command_is_not_read_as_contact(chain):
    """A simulator braked past the controller's first command (it stepped on no command while
    the controller was slow to answer): states at rest with a measured effort of zero, the
    brakes holding gravity. The observer waits for the effort to show the command, so nothing
    is read (r = 0, no contact, no collision; without the wait it reads g(q), 34 N at Tiago's
    hand under load); then, the brakes released, the arm answers as in any loop and stays
    below the contact level.
    """
    loop = Loop(chain)
    core, zero = loop.core, np.zeros(7)
    for k in range(300):  # 0.3 s braked: 15 time constants of the observer's filter
        t = k * DT
        core.update(t, (t, Q, zero), zero)
    assert not np.any(core.contact.observer.r) and not core.contact.contact
    assert not core.contact.collision
    sim, effort = loop.sim, zero  # the step before the release applied nothing
    for _ in range(1000):  # released: each state's effort is the command over the step
        t = 0.3 + sim.t
        command = core.update(t, (t, sim.q.copy(), sim.qd.copy()), effort)
        sim.step(command.tau)
        effort = sim.tau.copy()
    assert not core.contact.collision and not core.contact.contact
    assert np.abs(core.contact.observer.r).max() < 1.0  # the contact level is 5 N m


def test_a_held_state_lost_at_the_release_is_not_read_as_contact(chain):
    """The controller answers three braked states, its command ramping in from zero (the soft
    start from brakes), the simulator holds one more step, and that state is lost (the
    subscription keeps the newest only): the next one comes 2 ms after the last seen, its
    effort the command. Taking that effort for both steps reads the braked step's gravity as
    a push: (g - c)(1 - e^(-2 K dt)) / 2, 0.33 N m on joint2 here, 21.67 N on Tiago++'s torso
    (a collision). The observer starts again after a held state instead: nothing touches the
    arm, so r stays at the trapezoid's error (3e-7 N m measured).
    """
    loop = Loop(chain)
    core, sim, zero = loop.core, loop.sim, np.zeros(7)
    for _ in range(3):
        command = core.update(sim.t, (sim.t, sim.q.copy(), sim.qd.copy()), zero)
        sim.hold()
    sim.step(command.tau)  # released on the last command; the held state before it was lost
    worst = 0.0
    for _ in range(200):
        command = core.update(sim.t, (sim.t, sim.q.copy(), sim.qd.copy()), sim.effort.copy())
        worst = max(worst, np.abs(core.contact.observer.r).max())
        sim.step(command.tau)
    assert worst < 1e-5, worst
    assert not core.contact.contact and not core.contact.collision
