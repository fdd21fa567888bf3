"""No false contact on any real arm: every arm of example-robot-data that make demo runs (the
sweep's, and the limbs chosen with TIP=), in the controller and simulator cores in lockstep
(what the synchronous loop runs, without DDS), with nothing touching it: no contact and no
collision at start-up, over the demo trajectory (trajectory_demo's motion and amplitudes, the
sweep's 4 s), nor while cartesian_impedance holds.

Reference: the simulator applies no external force, so any contact read is the model's or the
start's fault (Baxter at zero sagged into left_e1's stop and read 192 N at its hand).
"""

import warnings

import numpy as np
import pytest
from arm_sweep import real_arms
from conftest import read_table, robots_dir, table_values

from dyn_control import load_chain
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import Request
from dyn_control.controller.settings import controller_settings
from dyn_control.controller.trajectory import demo_waypoints
from dyn_control.parameters import CARTESIAN_IMPEDANCE, CONTROLLER, SIMULATOR, TRAJECTORY_DEMO
from dyn_control.sim.core import SimulatorCore, simulator_settings

SWEEP_SECONDS = 4.0  # make sweep's duration


def lockstep(chain, seconds, mode=None, goal=True):
    """The cores in lockstep at 1 ms from the simulator's default start; -> the controller
    core after `seconds`, the demo's goal offered at its first state.
    """
    overrides = {} if mode is None else {"mode": mode}
    ctl = ControllerCore(controller_settings(chain, read_table(CONTROLLER, chain, **overrides)))
    sim = SimulatorCore(chain, simulator_settings(chain, read_table(SIMULATOR, chain)))
    demo = table_values(TRAJECTORY_DEMO)
    for k in range(int(round(seconds / 1e-3))):
        t = sim.sim.t
        q, qd, effort = (x.copy() for x in sim.measured())
        command = ctl.update(t, (t, q, qd), effort)
        if k == 0 and goal:
            times, qs, qds, qdds = demo_waypoints(chain, q, SWEEP_SECONDS, demo("amplitude"),
                                                  demo("frequency"), demo("points_per_second"))
            ctl.offer(Request(tuple(chain.joint_names), 0.0, tuple(zip(times, qs, qds, qdds))))
        if command is not None:
            sim.on_command(t, command.tau)
        sim.step(t)
        assert not ctl.contact.contact and not ctl.contact.collision, (
            f"t = {t:.3f} s: {ctl.contact.contact or ctl.contact.collision}")
    return ctl


def arm(rel, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_chain(robots_dir() / rel, **kwargs)


@pytest.mark.parametrize("rel,kwargs", real_arms(), ids=lambda v: v if isinstance(v, str) else "")
def test_no_false_contact_over_the_demo_trajectory(rel, kwargs):
    chain = arm(rel, kwargs)
    ctl = lockstep(chain, SWEEP_SECONDS + 0.5)
    assert ctl.goals.trajectory is None or ctl.goals.started, "the demo's goal never ran"
    assert ctl.contact.collisions == 0 and not ctl.overloads


@pytest.mark.parametrize("rel,kwargs", real_arms(), ids=lambda v: v if isinstance(v, str) else "")
def test_no_false_contact_while_cartesian_impedance_holds(rel, kwargs):
    chain = arm(rel, kwargs)
    ctl = lockstep(chain, 1.0, mode=CARTESIAN_IMPEDANCE, goal=False)
    assert ctl.contact.collisions == 0
    assert np.isfinite(ctl.last.tau).all()
