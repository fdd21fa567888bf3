"""The formulas the laws share, each written once (dyn_control.controller.laws), and each law
giving the same term from it. The joint laws and the Cartesian law once differed at a deadband
of 0: the joint laws added the whole Coulomb friction in the pull's direction, the Cartesian law
none.

References: the module docstrings' formulas (friction F clip(pull / band, -1, 1), F sign(pull)
without a band; the damping b (qd + period qdd); the wrap to [-pi, pi)), to 1e-12.
"""

import dataclasses
import math

import numpy as np
import pytest
from conftest import PACKAGE_DIR

from dyn_control import load_chain
from dyn_control.controller.cartesian import CartesianLaw
from dyn_control.controller.laws import ControlLaw, friction_share, period_damping, wrapped
from dyn_control.poses import default_initial_positions

FRICTION = 0.5  # N m on every joint (the default arm has none)


def with_friction(chain):
    return dataclasses.replace(chain, joints=tuple(
        dataclasses.replace(j, friction=FRICTION) for j in chain.joints))


@pytest.fixture(scope="module")
def arm():
    return with_friction(load_chain(PACKAGE_DIR / "urdf" / "default_arm.urdf"))


def test_friction_share_is_the_clipped_pull_and_its_sign_without_a_band():
    assert friction_share(0.5e-4, 1e-4) == 0.5
    assert friction_share(-3.0, 1e-4) == -1.0
    assert friction_share(2.0, 0.0) == 1.0 and friction_share(-2.0, 0.0) == -1.0
    assert friction_share(0.0, 0.0) == 0.0


def test_period_damping_and_the_wrap_are_their_closed_forms():
    # the damping at the period's mean velocity where the simulator's stages take it (1e-3 *
    # 0.05 / 0.01 = 5e-3 <= STAGED_DAMPING_MAX), at its end velocity where it is stiff
    # (1e-3 * 0.05 / 1e-5 = 5)
    mean, end = 0.05 * (0.3 - 1e-3), 0.05 * (0.3 - 2e-3)
    assert period_damping(0.05, 0.3, -2.0, 1e-3, 0.01) == pytest.approx(mean, abs=1e-15)
    assert period_damping(0.05, 0.3, -2.0, 1e-3, 1e-5) == pytest.approx(end, abs=1e-15)
    for err in (0.1, math.pi - 1e-9, -math.pi, 3 * math.pi / 2, -7.0):
        w = wrapped(err)
        assert -math.pi <= w < math.pi
        assert math.remainder(err - w, 2 * math.pi) == pytest.approx(0.0, abs=1e-12)


def joint_law_friction_term(chain, deadband, q, q_d):
    """What friction compensation adds to the computed_torque law (damping off) at rest."""
    kp, kd, zero = np.full(chain.n, 400.0), np.full(chain.n, 40.0), np.zeros(chain.n)
    terms = []
    for compensate in (True, False):
        law = ControlLaw(chain, "computed_torque", kp, kd, friction_compensation=compensate,
                         friction_deadband=deadband)
        law.damping[:] = 0.0
        terms.append(law(q, zero, q_d, zero, zero)[0])
    return terms[0] - terms[1], kp * (q_d - q)


def cartesian_law_friction_term(chain, deadband, q, offset):
    """What friction compensation adds to cartesian_impedance (damping off) at rest, with the
    target `offset` m from the hand, and the law's pull: the spring part alone.
    """
    from dyn_control import kinematics
    R, p = kinematics.frame_pose(chain, q)
    zero = np.zeros(chain.n)
    terms = []
    for compensate in (True, False):
        law = CartesianLaw(chain, friction_compensation=compensate, friction_deadband=deadband,
                           nullspace_stiffness=0.0)
        law.joint_damping[:] = 0.0
        terms.append(law(q, zero, R[None], (p + offset)[None], np.zeros(6), q)[0])
    return terms[0] - terms[1]


def test_both_laws_add_the_shared_friction_term(arm):
    """Where the pull is well outside the band, both laws add F in the pull's direction, and at a
    deadband of 0 they add the same (where the Cartesian law added nothing).
    """
    q = default_initial_positions(arm)
    for deadband in (0.0, 1e-4):
        term, pull = joint_law_friction_term(arm, deadband, q, q + 0.05)
        np.testing.assert_allclose(term, FRICTION * np.sign(pull), atol=1e-12)
    offset = np.array([0.05, -0.05, 0.05])
    banded = cartesian_law_friction_term(arm, 1e-4, q, offset)
    pulls = np.abs(banded) > FRICTION - 1e-12  # outside the band: the whole friction
    assert pulls.sum() >= 3, banded
    unbanded = cartesian_law_friction_term(arm, 0.0, q, offset)
    np.testing.assert_allclose(unbanded[pulls], banded[pulls], atol=1e-12)
