"""Identification (dyn_control.identification): the joint torque regressor.

References: our own inverse dynamics with the URDF's damping and friction (tau = Y pi, an
identity), and Pinocchio's computeJointTorqueRegressor and dynamic parameters, on arms of
example-robot-data (a prismatic torso among them) and on a tree.
"""

import numpy as np
import pytest

from conftest import DEFAULT_ARM, URDF_DIR, require, robots_dir
from dyn_control import inverse_dynamics, load_chain
from dyn_control.identification import (INERTIAL, BaseParameters, parameter_names, parameters,
                                        pivoted_qr, regressor)

ARMS = {  # path under example-robot-data's robots, load_chain keyword arguments
    "panda": ("panda_description/urdf/panda.urdf", dict(tip_link="panda_hand")),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", {}),
    "kinova": ("kinova_description/robots/kinova.urdf", {}),
    "tiago_prismatic_torso": ("tiago_description/robots/tiago_no_hand.urdf", {}),
}


def arm(name):
    """(URDF path, chain) of an arm of ARMS, the default arm or the dual-arm tree."""
    if name == "default_arm":
        return DEFAULT_ARM, load_chain(DEFAULT_ARM)
    if name == "dual_arm_tree":
        path = URDF_DIR / "dual_arm.urdf"
        return path, load_chain(path, tip_links=["left_tool", "right_tool"])
    rel, kwargs = ARMS[name]
    path = robots_dir() / rel
    return path, load_chain(path, **kwargs)


def states(chain, count, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, (count, 3, chain.n))


@pytest.mark.parametrize("name", ["default_arm", *ARMS, "dual_arm_tree"])
def test_the_regressor_times_the_parameters_is_the_inverse_dynamics(name):
    """Y pi = inverse dynamics + damping qd + friction sign(qd), to 1e-12 of the largest
    torque, at random states (the URDF's friction as the simulator's Coulomb term)."""
    _, chain = arm(name)
    pi = parameters(chain)
    assert len(pi) == len(parameter_names(chain)) == (INERTIAL + 3) * chain.n
    for q, qd, qdd in states(chain, 10):
        tau = (inverse_dynamics(chain, q, qd, qdd) + chain.damping * qd
               + chain.friction * np.sign(qd))
        Y = regressor(chain, q, qd, qdd)
        np.testing.assert_allclose(Y @ pi, tau, rtol=0, atol=1e-12 * np.abs(tau).max())


@pytest.mark.parametrize("name", [*ARMS, "dual_arm_tree"])
def test_the_regressor_and_parameters_match_pinocchio(name):
    """Our inertial columns against pin.computeJointTorqueRegressor on the model with the
    off-chain joints locked (its bodies are ours: the same lumping), and each body's pi_i
    against Pinocchio's dynamic parameters of the same body; 1e-9 relative."""
    pin = require("pinocchio")
    from pin_reference import PinReference
    path, chain = arm(name)
    ref = PinReference(path, chain)
    model = ref.reduced
    data = model.createData()
    ids = [model.getJointId(joint) for joint in chain.joint_names]
    assert all(0 < j < model.njoints for j in ids)
    rows = [model.joints[j].idx_v for j in ids]
    cols = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in ids])
    pi = parameters(chain, friction=False)
    theirs = np.concatenate([model.inertias[j].toDynamicParameters() for j in ids])
    np.testing.assert_allclose(pi, theirs, rtol=0, atol=1e-9 * np.abs(theirs).max())
    for q, qd, qdd in states(chain, 5, seed=1):
        Y = pin.computeJointTorqueRegressor(model, data, ref.q_of(model, q), ref.v_of(model, qd),
                                            ref.v_of(model, qdd))
        expected = Y[np.ix_(rows, cols)]
        ours = regressor(chain, q, qd, qdd, friction=False)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("name", ["default_arm", "panda", "tiago_prismatic_torso", "dual_arm_tree"])
def test_the_base_parameters_explain_every_torque(name):
    """Y pi = Y_b beta at states the decomposition never saw (1e-12 of the largest torque);
    the rank is numpy's matrix_rank (SVD) of the stacked regressor, and the base columns are of
    full rank; a body-1 parameter that the first joint cannot feel alone (its mass) is not a
    base parameter by itself."""
    _, chain = arm(name)
    base = BaseParameters(chain, samples=60)
    pi = parameters(chain)
    W = np.vstack([regressor(chain, q, qd, qdd) for q, qd, qdd in states(chain, 40, seed=7)])
    np.testing.assert_allclose(base.columns(W) @ base.of(pi), W @ pi, rtol=0,
                               atol=1e-12 * np.abs(W @ pi).max())
    k = len(base.independent)
    assert np.linalg.matrix_rank(W) == k == np.linalg.matrix_rank(base.columns(W))
    assert f"{chain.joint_names[0]}.m" not in base.regrouping
    assert len(base.regrouping) == k < len(pi)


def test_pivoted_qr_matches_lapacks_pivoting():
    """pivoted_qr against scipy.linalg.qr(pivoting=True) (LAPACK geqp3) on a badly scaled
    matrix with a dependent and a zero column: the same order, |diag R| to 1e-9, rank 28."""
    linalg = require("scipy.linalg")
    rng = np.random.default_rng(0)
    W = rng.normal(size=(200, 30)) * 10.0 ** rng.uniform(-3, 3, 30)
    W[:, 5], W[:, 9] = 3 * W[:, 2] - W[:, 7], 0.0
    R, order = pivoted_qr(W)
    _, R2, order2 = linalg.qr(W, pivoting=True, mode="economic")
    assert len(R) == 28 == np.linalg.matrix_rank(W)
    np.testing.assert_array_equal(order[:28], order2[:28])
    np.testing.assert_allclose(np.abs(np.diag(R)), np.abs(np.diag(R2))[:28], rtol=1e-9)
