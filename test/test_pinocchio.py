"""Against Pinocchio on real arm URDFs (example-robot-data) and random chains.

Reference: Pinocchio's rnea, crba, nonLinearEffects and aba (test/support/pin_reference.py), with
joints outside the chain held at zero. Tolerance: 1e-9 relative to the largest entry (or 1).
"""

import numpy as np
import pytest
from conftest import require, robots_dir
from examples import random_chain_urdf

from dyn_control import forward_dynamics, inverse_dynamics, load_chain

pin = require("pinocchio")
from pin_reference import PinReference, close, compare_dynamics  # noqa: E402  (needs pinocchio)

ARMS = {
    # name: (path under example-robot-data/robots, load_chain keyword arguments)
    "panda": ("panda_description/urdf/panda.urdf", {"tip_link": "panda_hand"}),
    "panda_joints": ("panda_description/urdf/panda.urdf",
                     {"joints": [f"panda_joint{i}" for i in (3, 1, 2, 7, 5, 4, 6)]}),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", {}),
    "kinova": ("kinova_description/robots/kinova.urdf", {}),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", {}),
    "z1": ("z1_description/urdf/z1.urdf", {}),
    "so101": ("so_arm_description/urdf/so101.urdf", {}),
    "tiago_prismatic_torso": ("tiago_description/robots/tiago_no_hand.urdf", {}),
    "pr2_right_arm": ("pr2_description/urdf/pr2.urdf",
                      {"root_link": "torso_lift_link", "tip_link": "r_wrist_roll_link"}),
    "talos_arm_from_mid_chain": ("talos_data/robots/talos_reduced.urdf",
                                 {"root_link": "arm_right_2_link", "tip_link": "arm_right_7_link"}),
    "double_pendulum_continuous": (
        "double_pendulum_description/urdf/double_pendulum_continuous.urdf", {}),
}


@pytest.mark.parametrize("name", list(ARMS))
def test_real_arm_matches_pinocchio(name):
    rel, kwargs = ARMS[name]
    path = robots_dir() / rel
    chain = load_chain(path, **kwargs)
    ref = compare_dynamics(path, chain)
    # every movable joint of the chain is a Pinocchio joint of the same name
    assert set(chain.joint_names) <= set(ref.model.names)


def test_panda_joints_follow_path_order():
    path = robots_dir() / ARMS["panda_joints"][0]
    chain = load_chain(path, **ARMS["panda_joints"][1])
    assert chain.joint_names == [f"panda_joint{i}" for i in range(1, 8)]
    assert chain.tip_link == "panda_link7"  # hand and fingers lumped into link 7 at zero


@pytest.mark.parametrize("n, seed", [(2, 1), (5, 2), (9, 3), (16, 4)])
def test_random_chain_matches_pinocchio(tmp_path, n, seed):
    # Arbitrary axes and origins, rotated inertial frames, fixed links, branches with their own
    # joints and a tool past the tip: all lumped by the loader, all free joints in Pinocchio.
    path = tmp_path / "chain.urdf"
    path.write_text(random_chain_urdf(n, seed=seed))
    compare_dynamics(path, load_chain(path), seed=seed)


def test_tip_wrench_matches_pinocchio_external_force():
    # Pinocchio: tau = rnea(q, v, a, fext) with fext the force ON the last joint's body, so the
    # wrench the tip exerts on the environment enters as -f_tip. ur5's tip is wrist_3_link.
    path = robots_dir() / ARMS["ur5"][0]
    chain = load_chain(path)
    ref = PinReference(path, chain)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, (3, chain.n))
        f_tip = rng.uniform(-20, 20, 6)
        close(inverse_dynamics(chain, q, qd, qdd, f_tip=f_tip), ref.rnea(q, qd, qdd, f_tip))
        # and forward dynamics with the same wrench inverts it
        tau = inverse_dynamics(chain, q, qd, qdd, f_tip=f_tip)
        close(forward_dynamics(chain, q, qd, tau, f_tip=f_tip), qdd)


def test_tip_wrench_past_fixed_joints(tmp_path):
    # panda_hand is two fixed joints past panda_joint7: a wrench given in the hand frame is
    # moved to link 7 before entering the recursion. Reference: the same wrench expressed in
    # link 7 by Pinocchio's frame placement (SE3.act on a Force).
    path = robots_dir() / ARMS["panda"][0]
    chain = load_chain(path, tip_link="panda_hand")
    ref = PinReference(path, chain)
    hand = ref.model.frames[ref.model.getFrameId("panda_hand")].placement  # in joint7's frame
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, (3, chain.n))
        f_hand = rng.uniform(-20, 20, 6)
        f_link7 = hand.act(pin.Force(f_hand)).vector
        close(inverse_dynamics(chain, q, qd, qdd, f_tip=f_hand), ref.rnea(q, qd, qdd, f_link7))
