"""Kinematics of the links a chain moves (dyn_control.kinematics), on every arm of
example-robot-data and on random chains.

References: Pinocchio (updateFramePlacements, computeFrameJacobian in its three reference
frames, getFrameClassicalAcceleration, and Lambda from its crba), to 1e-9 relative to the
largest entry (or 1); finite differences of our own poses, independently of Pinocchio; the
identities of the dynamically consistent inverse; scipy for the rotation log map.
"""

import numpy as np
import pytest
from arm_sweep import arm_paths, load_arm
from conftest import require, robots_dir
from examples import random_chain_urdf

from dyn_control import kinematics, load_chain, mass_matrix

pin = require("pinocchio")
from pin_reference import (  # noqa: E402  (needs pinocchio)
    close,
    compare_kinematics,
    links_to_check,
    random_states,
)


@pytest.mark.parametrize("rel", arm_paths())
def test_every_arm_matches_pinocchio(rel):
    compare_kinematics(robots_dir() / rel, load_arm(rel))


@pytest.mark.parametrize("seed", range(3))
def test_random_chains_with_tools_match_pinocchio(tmp_path, seed):
    path = tmp_path / "chain.urdf"
    path.write_text(random_chain_urdf(6 + seed, seed))
    compare_kinematics(path, load_chain(path))


def _pose_derivative(chain, q, qd, link, h=1e-6):
    """d/dt of (p, R) along q + t qd by central differences: (v (3,), w (3,)) in base axes."""
    (Rm, pm), (Rp, pp) = (kinematics.frame_pose(chain, q + s * h * qd, link) for s in (-1, 1))
    return (pp - pm) / (2 * h), kinematics.rotation_log(Rp @ Rm.T) / (2 * h)


@pytest.mark.parametrize("rel", ["xarm_description/urdf/xarm7.urdf",
                                 "tiago_description/robots/tiago_no_hand.urdf",
                                 "ur_description/urdf/ur5_robot.urdf"])
def test_jacobian_and_its_derivative_by_finite_differences(rel):
    # Reference: our own poses, independently of Pinocchio. J qd is the pose's rate along qd
    # (1e-7: central differences at h = 1e-6); J-dot qd is the rate of J qd (1e-5)
    chain = load_arm(rel)
    for q, qd in random_states(chain, 3, seed=1):
        for link in links_to_check(chain):
            J = kinematics.frame_jacobian(chain, q, link)
            np.testing.assert_allclose(J @ qd, np.concatenate(_pose_derivative(chain, q, qd, link)),
                                       atol=1e-7)
            h = 1e-5
            rates = [kinematics.frame_jacobian(chain, q + s * h * qd, link) @ qd for s in (-1, 1)]
            np.testing.assert_allclose(kinematics.frame_classical_acceleration(chain, q, qd, link),
                                       (rates[1] - rates[0]) / (2 * h), atol=1e-5)


def test_dynamically_consistent_inverse_identities():
    # J J-bar = I, and N = I - J-bar J: J N = 0 and J M^-1 N^T = 0 (nullspace torques move no
    # task coordinate), at random poses of a 7-joint arm (to 1e-9 with 0 damping)
    chain = load_chain(robots_dir() / "panda_description/urdf/panda.urdf", tip_link="panda_hand")
    for q, _ in random_states(chain, 5, seed=2):
        J = kinematics.frame_jacobian(chain, q)
        Jbar = kinematics.dynamically_consistent_inverse(chain, q, damping=0.0)
        N = np.eye(chain.n) - Jbar @ J
        close(J @ Jbar, np.eye(6))
        close(J @ N, np.zeros((6, chain.n)))
        close(J @ np.linalg.solve(mass_matrix(chain, q), N.T), np.zeros((6, chain.n)))


def test_lambda_stays_bounded_at_a_singular_pose():
    # The UR5 with its wrist aligned (q5 = 0) is singular: J M^-1 J^T has an eigenvalue ~0.
    # Damped (d = 1e-3): every eigenvalue of Lambda below 1 / (2 d) = 500, and away from the
    # singular direction it matches the exact inverse to (d / s)^2
    chain = load_arm("ur_description/urdf/ur5_robot.urdf")
    q = np.array([0.0, -1.2, 1.5, -0.3, 0.0, 0.0])
    J = kinematics.frame_jacobian(chain, q)
    A = J @ np.linalg.solve(mass_matrix(chain, q), J.T)
    s, V = np.linalg.eigh(A)
    assert s[0] < 1e-9 * s[-1]  # singular
    Lam = kinematics.operational_space_inertia(chain, q)
    assert np.all(np.isfinite(Lam)) and np.linalg.eigvalsh(Lam).max() <= 500.0 + 1e-9
    d = kinematics.SINGULARITY_DAMPING
    for k in range(1, 6):
        assert V[:, k] @ Lam @ V[:, k] == pytest.approx(1 / s[k], rel=2 * (d / s[k]) ** 2 + 1e-9)


def test_damped_inverse_against_the_eigen_decomposition():
    rng = np.random.default_rng(3)
    for rank in (6, 4):
        X = rng.normal(size=(6, rank))
        A = X @ X.T
        s, V = np.linalg.eigh(A)
        for d in (0.0, 0.1):
            gain = np.where(s > 1e-12 * s.max(), s / (s**2 + d**2), 0.0)
            np.testing.assert_allclose(kinematics.damped_inverse(A, d), (V * gain) @ V.T,
                                       atol=1e-10 * max(1, np.abs((V * gain) @ V.T).max()))


def test_rotation_log_against_scipy_near_zero_and_near_pi():
    Rotation = require("scipy.spatial.transform").Rotation
    rng = np.random.default_rng(4)
    axes = rng.normal(size=(40, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    for axis, angle in zip(axes, np.concatenate([rng.uniform(0, np.pi, 20), [0, 1e-9, 1e-7, 1e-4],
                                                 np.pi - np.array([1e-9, 1e-6, 1e-4, 1e-3, 2e-3]),
                                                 [np.pi - 0.1, 3.0, 2.9, 1.0, 0.5, 0.1, 2.0]])):
        rotvec = axis * angle
        got = kinematics.rotation_log(Rotation.from_rotvec(rotvec).as_matrix())
        np.testing.assert_allclose(got, rotvec, atol=1e-8)
