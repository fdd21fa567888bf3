"""Bimanual cartesian_impedance on a tree (urdf/dual_arm.urdf: a torso lift under two arms), on
the controller core in a synchronous in-process loop with the simulated arm at 1 kHz.

Both hands are tasks of one law: their Jacobians stacked (12 rows), one Lambda and one
nullspace (15 - 12 = 3 directions, the torso among them). References: closed forms. With the
stacked Jacobian of full row rank, the equilibrium J^T (K e + w) + N^T tau_n = 0 gives K e = -w
for each hand (the module docstring of dyn_control.controller.cartesian): a push on one hand moves
it by F/K and leaves the other where it is. The dynamically consistent nullspace moves no hand, so
the torso can lift under both held hands. Bounds are stated at each test with what was measured.
"""

import numpy as np
import pytest
from conftest import URDF_DIR, read_table

from dyn_control import kinematics, load_chain
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.settings import controller_settings
from dyn_control.model.chain import effort_limits
from dyn_control.parameters import CONTROLLER
from dyn_control.sim.simulation import Simulation

DT = 1e-3
ARM = [0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]
Q0 = np.array([0.2, *ARM, *ARM])  # as config/dual_arm.yaml
HANDS = ["left_tool", "right_tool"]


@pytest.fixture(scope="module")
def tree():
    names = ["torso_lift_joint", *(f"{s}_joint{k}" for s in ("left", "right") for k in range(1, 8))]
    return load_chain(URDF_DIR / "dual_arm.urdf", joints=names)


class Loop:
    def __init__(self, chain, **overrides):
        self.chain = chain
        # the law alone, from its first tick (test_limits.py checks the soft start, the rate
        # limit and the barriers)
        self.core = ControllerCore(controller_settings(chain, read_table(
            CONTROLLER, chain, **{"mode": "cartesian_impedance", "ee_links": HANDS,
                           "max_effort_rate": 0.0, "soft_start": 0.0, "limits.enabled": False,
                           **overrides})))
        self.sim = Simulation(chain, Q0, DT, effort_limits(chain))

    def run(self, seconds, each=None):
        for k in range(int(round(seconds / DT))):
            if each is not None:
                each(k * DT)
            command = self.core.update(0.0, (self.sim.t, self.sim.q.copy(), self.sim.qd.copy()))
            assert command is not None and np.all(np.isfinite(command.tau))
            self.sim.step(command.tau)
        return self

    def hands(self):
        return [kinematics.frame_pose(self.chain, self.sim.q, link) for link in HANDS]


def test_both_hands_hold_while_the_torso_lifts(tree):
    # The torso's posture ramps up 0.1 m over 2 s (a quintic); nullspace stiffness 2000 N/m on
    # the torso. Bound: each hand within 1 mm (and 1 mrad) of where it was held, all along;
    # the torso really lifts (over 0.07 m). Measured: printed.
    stiff = [2000.0, *([10.0] * 14)]
    loop = Loop(tree, nullspace_stiffness=stiff).run(0.2)
    held = loop.hands()
    start = loop.sim.q[0]
    worst = np.zeros(2)

    def lift(t):
        s = min(t / 2.0, 1.0)
        loop.core.set_target_joint([0], [start + 0.1 * (10 * s**3 - 15 * s**4 + 6 * s**5)])
        for k, ((R, p), (R0, p0)) in enumerate(zip(loop.hands(), held)):
            worst[k] = max(worst[k], np.linalg.norm(p - p0))
            assert np.linalg.norm(kinematics.rotation_log(R @ R0.T)) < 1e-3
    loop.run(3.0, lift)
    print(f"torso lifted {loop.sim.q[0] - start:.4f} m; hands moved at most {worst} m")
    # it really lifts: 0.082 m of the 0.1 m posture, the arms' own posture springs (10 N m/rad)
    # resist in the same nullspace
    assert loop.sim.q[0] - start > 0.07
    assert worst.max() < 1e-3


def test_a_push_on_one_hand_moves_it_by_f_over_k_and_not_the_other(tree):
    # 10 N along x and 5 N along z on the left hand. Bound: the left hand's displacement is
    # F/K within 2 %; the right hand moves under 2 % of that. Measured: printed.
    loop = Loop(tree).run(0.2)
    (_, left0), (_, right0) = loop.hands()
    K = loop.core.cartesian.K[:3]
    push = np.array([10.0, 0.0, 5.0, 0.0, 0.0, 0.0])
    loop.sim.push(push, "left_tool")
    loop.run(4.0)
    (_, left), (_, right) = loop.hands()
    expected = push[:3] / K
    print(f"left moved {left - left0} m (F/K {expected}); right moved {right - right0} m")
    np.testing.assert_allclose(left - left0, expected, rtol=0, atol=0.02 * np.abs(expected).max())
    assert np.linalg.norm(right - right0) < 0.02 * np.linalg.norm(expected)
    assert np.abs(loop.sim.qd).max() < 1e-3  # at rest


def test_each_hand_has_its_own_target_and_stiffness(tree):
    # A stiffness per hand (12 values): the right hand's target 2 cm up. Bound: it gets there
    # within 0.5 mm in 3 s, and the left hand stays within 0.5 mm of its own.
    loop = Loop(tree,
                cartesian_stiffness=[500.0] * 3 + [30.0] * 3 + [800.0] * 3 + [40.0] * 3).run(0.2)
    (_, left0), (R1, right0) = loop.hands()
    np.testing.assert_array_equal(loop.core.cartesian.K[6:9], 800.0)
    loop.core.set_target_pose(R1, right0 + [0.0, 0.0, 0.02], frame=1)
    loop.run(3.0)
    (_, left), (_, right) = loop.hands()
    assert np.linalg.norm(right - right0 - [0.0, 0.0, 0.02]) < 5e-4
    assert np.linalg.norm(left - left0) < 5e-4
    figures = loop.core.diagnostics()[2]
    assert figures["right_tool.pose_error_m"] < 5e-4 and figures["left_tool.pose_error_m"] < 5e-4


def test_a_wrong_stiffness_count_names_the_parameter(tree):
    with pytest.raises(ValueError,
                       match="cartesian_stiffness must be a scalar, 6 values or 6 per ee_link"):
        Loop(tree, cartesian_stiffness=[100.0] * 7)


def test_a_partial_goal_moves_one_arm_and_holds_the_torso_and_the_other(tree):
    # allow_partial_joints_goal, as JTC: a goal over the left arm only; the torso and the right
    # arm hold where they were. Bounds: the left arm ends within 1e-3 rad of the goal (the loop
    # tracks to ~1e-4), the others stay within 1e-3 (rad or m) of where they were.
    from dyn_control.controller.goals import Request
    loop = Loop(tree, mode="computed_torque", allow_partial_joints_goal=True).run(0.2)
    q0 = loop.sim.q.copy()
    left = [f"left_joint{k}" for k in range(1, 8)]
    target = q0[1:8] + 0.2
    goal = loop.core.offer(Request(tuple(left), 0.0, ((2.0, tuple(target), (), ()),)))
    assert goal.status == "active", goal.reason
    loop.run(3.0)
    assert goal.done and goal.outcome == "succeeded", goal.reason
    np.testing.assert_allclose(loop.sim.q[1:8], target, atol=1e-3)
    others = [0, *range(8, 15)]
    np.testing.assert_allclose(loop.sim.q[others], q0[others], atol=1e-3)
