"""Kinematic trees: a torso under two arms, and random trees with forks, fixed links and tools.

References: Pinocchio on the full URDF with every joint outside the model locked at zero
(test/support/pin_reference.py: rnea, crba, nonLinearEffects, aba of buildReducedModel, frame
placements, Jacobians and classical accelerations), to 1e-9 relative to the largest entry (or
1); the energy identity T = 1/2 qd^T M qd; and two arms on a fixed torso, which are two paths:
the tree's torques and M equal those of the two paths loaded on their own, to round-off.
"""

import warnings

import numpy as np
import pytest
from conftest import require, robots_dir
from examples import random_tree_urdf

from dyn_control import (
    InertiaWarning,
    URDFError,
    bias_forces,
    gravity_torques,
    inverse_dynamics,
    kinematics,
    kinetic_energy,
    load_chain,
    mass_matrix,
)

pin = require("pinocchio")
from pin_reference import compare_dynamics, compare_kinematics  # noqa: E402  (needs pinocchio)

TIAGO_ARMS = [f"arm_{side}_{k}_joint" for side in ("left", "right") for k in range(1, 8)]
PR2_ARM = ["shoulder_pan", "shoulder_lift", "upper_arm_roll", "elbow_flex", "forearm_roll",
           "wrist_flex", "wrist_roll"]
TALOS_ARMS = [f"arm_{side}_{k}_joint" for side in ("left", "right") for k in range(1, 8)]
TREES = {
    # name: (path under example-robot-data/robots, controlled joints, the two hands)
    "tiago_dual": ("tiago_description/robots/tiago_dual.urdf", ["torso_lift_joint", *TIAGO_ARMS],
                   ("arm_left_7_link", "arm_right_7_link")),
    "pr2": ("pr2_description/urdf/pr2.urdf",
            ["torso_lift_joint", *(f"{s}_{j}_joint" for s in "lr" for j in PR2_ARM)],
            ("l_wrist_roll_link", "r_wrist_roll_link")),
    "talos": ("talos_data/robots/talos_reduced.urdf", ["torso_1_joint", "torso_2_joint",
                                                       *TALOS_ARMS],
              ("arm_left_7_link", "arm_right_7_link")),
    "baxter": ("baxter_description/urdf/baxter.urdf",
               [f"{s}_{j}" for s in ("left", "right") for j in ("s0", "s1", "e0", "e1", "w0", "w1",
                                                                "w2")],
               ("left_wrist", "right_wrist")),
}


def _tree(name):
    rel, joints, _ = TREES[name]
    # PR2's sensor_mount_link (on the torso) breaks the triangle inequality: a warning here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        return robots_dir() / rel, load_chain(robots_dir() / rel, joints=joints, strict=False)


@pytest.mark.parametrize("name", list(TREES))
def test_tree_robot_matches_pinocchio(name):
    path, tree = _tree(name)
    assert sorted(tree.joint_names) == sorted(TREES[name][1])
    assert np.count_nonzero(tree.parent < np.arange(tree.n) - 1) >= 1  # it branches
    compare_dynamics(path, tree, count=5)
    compare_kinematics(path, tree, count=2)


@pytest.mark.parametrize("seed", range(3))
def test_random_tree_matches_pinocchio(tmp_path, seed):
    path = tmp_path / "tree.urdf"
    path.write_text(random_tree_urdf(seed))
    tree = load_chain(path, tip_links=["tool1", "tool2", "tool3"])
    # trunk 2, branches 3 + 4 + 2 joints; side_joint is off the model, lumped at zero
    assert tree.n == 11 and "side_joint" not in tree.joint_names
    compare_dynamics(path, tree, seed=seed, count=5)
    compare_kinematics(path, tree, count=2)


def test_bodies_are_in_topological_order_branch_after_branch():
    _, tree = _tree("tiago_dual")
    assert tree.joint_names == ["torso_lift_joint", *TIAGO_ARMS]
    assert tree.parent.tolist() == [-1, 0, 1, 2, 3, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13]
    assert tree.root_link == "torso_fixed_link"
    assert tree.tip_links == ("arm_left_7_link", "arm_right_7_link")
    assert tree.tip_link == "arm_right_7_link"  # the one body n - 1 moves: f_tip's frame
    # the tips' order orders the branches
    swapped = load_chain(robots_dir() / TREES["tiago_dual"][0],
                         tip_links=["arm_right_7_link", "arm_left_7_link"],
                         root_link="torso_fixed_link")
    assert swapped.joint_names == ["torso_lift_joint", *TIAGO_ARMS[7:], *TIAGO_ARMS[:7]]


def test_a_hand_jacobian_has_zero_columns_for_the_other_arm():
    _, tree = _tree("tiago_dual")
    q = np.random.default_rng(0).uniform(-1, 1, tree.n) * 0.1 + 0.2
    J = kinematics.frame_jacobian(tree, q, "arm_left_7_link")
    assert np.all(J[:, 8:] == 0) and np.all(np.abs(J[:, :8]).max(axis=0) > 0)
    J = kinematics.frame_jacobian(tree, q, "arm_right_7_link")
    assert np.all(J[:, 1:8] == 0) and np.abs(J[:, 0]).max() > 0  # the torso moves both


def test_two_arms_on_a_fixed_torso_are_two_paths():
    # Without the torso joint the arms do not couple: M is block diagonal and each arm's
    # torques are those of its own path (to round-off: the same sums in another order).
    path = robots_dir() / TREES["tiago_dual"][0]
    tree = load_chain(path, joints=TIAGO_ARMS)
    left = load_chain(path, joints=TIAGO_ARMS[:7])
    right = load_chain(path, joints=TIAGO_ARMS[7:])
    assert tree.root_link == "torso_lift_link" and tree.parent[7] == -1
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 14))
        tau = inverse_dynamics(tree, q, qd, qdd)
        np.testing.assert_allclose(tau[:7], inverse_dynamics(left, q[:7], qd[:7], qdd[:7]),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(tau[7:], inverse_dynamics(right, q[7:], qd[7:], qdd[7:]),
                                   rtol=0, atol=1e-12)
        M = mass_matrix(tree, q)
        assert np.all(M[:7, 7:] == 0) and np.all(M[7:, :7] == 0)


def test_tree_identities_and_batches():
    path, tree = _tree("talos")
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1, 1, (3, 6, tree.n))
    batched = inverse_dynamics(tree, q, qd, qdd)
    for k in range(6):
        np.testing.assert_array_equal(batched[k], inverse_dynamics(tree, q[k], qd[k], qdd[k]))
        M = mass_matrix(tree, q[k])
        # T = 1/2 qd^T M qd; ID = M qdd + bias (round-off relative to the largest entry)
        T = kinetic_energy(tree, q[k], qd[k])
        np.testing.assert_allclose(T, 0.5 * qd[k] @ M @ qd[k], rtol=1e-12)
        np.testing.assert_allclose(batched[k], M @ qdd[k] + bias_forces(tree, q[k], qd[k]),
                                   rtol=0, atol=1e-12 * np.abs(batched[k]).max())
    np.testing.assert_array_equal(gravity_torques(tree, q), inverse_dynamics(tree, q, 0 * q, 0 * q))


def test_tree_selection_errors_name_the_joint():
    path = robots_dir() / TREES["tiago_dual"][0]
    # an arm joint left out between two controlled ones
    with pytest.raises(URDFError, match="'arm_left_4_joint'.*not in joints"):
        load_chain(path, joints=[j for j in ["torso_lift_joint",
                                             *TIAGO_ARMS] if j != "arm_left_4_joint"])
    # the torso, not controlled, between the base and both arms' roots is fine with the arms only
    assert load_chain(path, joints=TIAGO_ARMS).n == 14
    with pytest.raises(URDFError, match="tip_link or tip_links"):
        load_chain(path, tip_link="arm_left_7_link", tip_links=["arm_right_7_link"])
    with pytest.raises(URDFError, match="'arm_left_1_joint' \\(in joints\\) is not on the path"):
        load_chain(path, joints=["torso_lift_joint", *TIAGO_ARMS], tip_link="arm_right_7_link")


def test_the_composite_rigid_body_m_equals_the_inverse_dynamics_columns():
    # The simulator's forward dynamics builds M by the composite-rigid-body pass; the seeds'
    # method (column j = ID(q, 0, e_j), dynamics.mass_matrix) is the reference. Tolerance
    # 1e-14 relative to the largest entry: the same sums in another order. Every arm of
    # example-robot-data and the tree robots, zeros across branches included.
    from arm_sweep import arm_paths, load_arm

    from dyn_control.kernels import mass_matrix as kernel
    from dyn_control.kernels import views
    chains = [load_arm(rel) for rel in arm_paths()] + [_tree(name)[1] for name in TREES]
    rng = np.random.default_rng(5)
    for chain in chains:
        for _ in range(3):
            q = rng.uniform(-2, 2, chain.n)
            m, d = views.model(*chain.pack), views.data(*chain.workspace().arrays)
            M = np.empty((chain.n, chain.n))
            kernel.poses(m, d, q)
            kernel.crba(m, d, M)
            reference = mass_matrix(chain, q)
            np.testing.assert_allclose(M, reference, rtol=0, atol=1e-14 * np.abs(reference).max())
            assert np.all(M[reference == 0] == 0)  # exactly zero where the branches part


@pytest.mark.parametrize("name", list(TREES))
def test_a_tree_with_no_input_never_gains_energy_and_tracks(name):
    # The simulator on the tree robots with their own damping, friction and limits: a fall
    # with no input from a bent pose never gains energy (bound as test_passive_physics,
    # ENERGY_RTOL of the largest kinetic energy), and computed torque tracks a 2 s quintic
    # move on every joint (RMS below 1e-3 rad or m). The PR2 cannot: its URDF's shoulder lift
    # needs 38 N m against gravity and allows 30 (the real arm has a counterbalance spring), so
    # there the check is that gravity is beyond the effort limit.
    from arm_sweep import (
        ENERGY_RTOL,
        bent_pose,
        computed_torque,
        energy_rise,
        quintic_move,
        synchronous_loop,
    )
    _, tree = _tree(name)
    rise, largest, sim = energy_rise(tree, bent_pose(tree), seconds=1.0)
    assert sim.blowups == 0 and rise <= ENERGY_RTOL * largest + 1e-9, (rise, largest)
    q0, move = quintic_move(tree)
    if name == "pr2":
        assert np.any(np.abs(gravity_torques(tree, q0)) > tree.effort_limits)
        return
    errors, sim = synchronous_loop(tree, computed_torque(tree), q0, move, 2.0)
    rms = np.sqrt(np.mean(errors[:2000] ** 2, axis=0))
    print(f"{name}: energy rise {rise:.2e} J of {largest:.3g} J; tracking RMS max {rms.max():.2e}")
    assert sim.blowups == 0 and rms.max() < 1e-3, rms
