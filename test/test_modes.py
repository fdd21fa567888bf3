"""A joint-space mode added from outside the package, by controller.laws.register_mode: the
law's torque is the only code it brings, and the controller's parameter table, its checks, its
goals and its ticks take the new name. References: the mode's own closed form (tau = Kp e +
Kd ed, no model), to 1e-12, and the package's friction and saturation around it.
"""

import numpy as np
import pytest
from conftest import BENT_POSE, DEFAULT_ARM, read_table

from dyn_control import load_chain
from dyn_control.controller import laws
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import Request
from dyn_control.controller.settings import controller_settings
from dyn_control.kernels.compile import jit
from dyn_control.parameters import CONTROLLER, MODES

NAME = "joint_pd"


@jit
def joint_pd(mvec, mrot, ints, vecs, rots, mats, q, qd, q_d, qd_d, qdd_d, e, ed, v, integral,
             kp, kd, ki, damping, period, tau):
    """A PD on each joint with no model: tau = Kp e + Kd ed."""
    for i in range(q.shape[0]):
        tau[i] = kp[i] * e[i] + kd[i] * ed[i]


@pytest.fixture
def registered():
    laws.register_mode(NAME, joint_pd)
    yield NAME
    MODES.remove(NAME)  # the registry is the process's: leave it as the other tests found it
    del laws.REGISTERED[NAME]


@pytest.fixture(scope="module")
def chain():
    return load_chain(DEFAULT_ARM)


def test_a_registered_mode_is_a_choice_of_the_table_and_the_law_computes_it(registered, chain):
    with pytest.raises(ValueError, match="mode must be one of"):
        CONTROLLER["mode"].check("no_such_mode")
    CONTROLLER["mode"].check(registered)  # the table reads the registry at each check
    rng = np.random.default_rng(0)
    q, qd, q_d, qd_d = rng.uniform(-0.5, 0.5, (4, chain.n))
    kp, kd = np.full(chain.n, 100.0), np.full(chain.n, 20.0)
    limits = np.full(chain.n, 10.0)
    law = laws.ControlLaw(chain, registered, kp, kd, limits)
    tau, e, ed = law(q, qd, q_d, qd_d, np.zeros(chain.n))
    np.testing.assert_allclose(e, q_d - q, atol=1e-12)
    np.testing.assert_allclose(tau, np.clip(kp * (q_d - q) + kd * (qd_d - qd), -10, 10),
                               atol=1e-12)
    assert np.any(np.abs(tau) == 10.0)  # the package's saturation ran


def test_the_controller_core_runs_a_registered_mode_and_its_goals(registered, chain):
    values = read_table(CONTROLLER, chain, mode=registered, max_effort_rate=0.0, soft_start=0.0,
                        **{"external_torque.enabled": False, "limits.enabled": False})
    core = ControllerCore(controller_settings(chain, values))
    assert core.settings.mode == registered
    q0 = np.array(BENT_POSE)
    command = core.update(0.0, (0.0, q0, np.zeros(chain.n)))
    assert command is not None
    goal = core.offer(Request(tuple(chain.joint_names), 0.0, ((0.5, q0 + 0.01, (), ()),)))
    assert goal.status == "active", goal.reason
    command = core.update(0.1, (0.1, q0, np.zeros(chain.n)))
    q_d, qd_d, _ = core.trajectory.sample(0.1)
    gains = core.settings.joint
    expected = gains.kp * (q_d - q0) + gains.kd * qd_d
    np.testing.assert_allclose(command.tau, np.clip(expected, -chain.effort_limits,
                                                    chain.effort_limits), atol=1e-12)


def test_a_mode_is_registered_once():
    with pytest.raises(ValueError, match="exists already"):
        laws.register_mode("computed_torque", joint_pd)
