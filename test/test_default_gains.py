"""Every mode is stable with its default gains on every arm of example-robot-data.

The controller core with the parameter table's defaults (nothing but `mode` set) drives the
synchronous simulated arm in one process, as the nodes do over DDS: the first state sets the
hold (joint modes) or the target pose and posture (cartesian_impedance) at 30 % of each joint's
range, and the arm starts 0.01 rad (or m) off it on every joint. References: the error must
decay to a quarter within 2 s, and no tick may reach an effort limit. (Closed form of the
slowest decay: the inertia-scaled modes move along the eigenvectors of M^-1 I(q), whose
eigenvalues l are at least 0.04 on these arms at this pose, with e ~ e^(-kd l t / 2): 0.2 after
2 s with kd = 40. computed_torque decays as (1 + w t) e^(-w t), w = 20 rad/s: 2e-16.)
cartesian_impedance with a stiffness beyond what the control period holds at the pose (the
SO-100's wrist: its stiffest mode 1224 rad/s at 1 kHz) is not entered: the joints hold, which
the same bound then checks. A joint whose Coulomb friction is not below its effort limit cannot be
driven (Talos' wrist: 1 N m of each): it gets no offset, and its limit is not counted.
"""

import numpy as np
import pytest
from arm_sweep import arm_paths, bent_pose, finite_limits, load_arm
from conftest import read_table, table_values

from dyn_control import kinematics
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.laws import at_limit
from dyn_control.controller.settings import controller_settings
from dyn_control.model.chain import effort_limits
from dyn_control.parameters import CONTROLLER
from dyn_control.sim.simulation import Simulation

MODES = ("computed_torque", "feedforward", "gravity_pd", "cartesian_impedance")
OFFSET = 0.01
SECONDS = 2.0


def _drivable(chain):
    return chain.friction < effort_limits(chain)


def _offset_start(chain, q0):
    """q0 moved OFFSET towards the roomier side of each drivable joint's range."""
    _, lower, upper = finite_limits(chain)
    return q0 + np.where(upper - q0 >= q0 - lower, OFFSET, -OFFSET) * _drivable(chain)


def _pose_error(chain, q, link, target):
    R, p = kinematics.frame_pose(chain, q, link)
    return np.linalg.norm(p - target[1]) + np.linalg.norm(kinematics.rotation_log(R @ target[0].T))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rel", arm_paths())
def test_an_offset_decays_without_saturating(rel, mode):
    chain = load_arm(rel)
    dt = table_values(CONTROLLER)("control_period")
    core = ControllerCore(controller_settings(chain, read_table(CONTROLLER, chain, mode=mode)))
    q0 = bent_pose(chain)
    core.update(0.0, (0.0, q0, np.zeros(chain.n)))  # the reference: hold q0 (or its pose)
    link = core.settings.cartesian.ee_link[0]
    target = kinematics.frame_pose(chain, q0, link)
    sim = Simulation(chain, _offset_start(chain, q0), dt, effort_limits(chain))
    start_error = _pose_error(chain, sim.q, link, target)
    saturated, drivable = 0, _drivable(chain)
    for k in range(1, int(round(SECONDS / dt)) + 1):
        command = core.update(k * dt, (k * dt, sim.q.copy(), sim.qd.copy()))
        saturated += at_limit(command.tau * drivable, core.limits)
        sim.step(command.tau)
    assert saturated == 0, f"{saturated} saturated ticks"
    if mode == "cartesian_impedance" and core.target.refused is None:  # back to its target pose
        end_error = _pose_error(chain, sim.q, link, target)
        assert end_error < start_error / 4, (start_error, end_error)
    else:
        assert np.abs(sim.q - q0).max() < OFFSET / 4, sim.q - q0
    if core.target.refused is not None:  # one line naming the stiffness and the limit
        assert "cartesian_stiffness" in core.target.refused
        assert "1/control_period" in core.target.refused
    assert np.abs(sim.qd).max() < 0.1  # settled, not swinging through
