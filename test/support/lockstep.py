"""The in-process lockstep the limits' and the arm-gravity tests share: a controller core and a
simulator core at 1 ms, and the real arms of example-robot-data they run on.
"""

import warnings

import numpy as np
from conftest import DEFAULT_ARM, read_table, robots_dir

from dyn_control import load_chain
from dyn_control.controller import barriers
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.settings import controller_settings
from dyn_control.parameters import CONTROLLER, SIMULATOR
from dyn_control.sim.core import SimulatorCore, simulator_settings

DT = 1e-3

REAL = ("ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf",
        "kinova_description/robots/kinova.urdf", "xarm_description/urdf/xarm7.urdf",
        "ur_description/urdf/ur10_robot.urdf")


def arm(rel):
    if rel == "default_arm":
        return load_chain(DEFAULT_ARM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_chain(robots_dir() / rel)


ARMS = ("default_arm",) + REAL


class Lockstep:
    """A controller core and a simulator core at 1 ms, from the simulator's default start."""

    def __init__(self, chain, q0=None, simulator=None, **params):
        self.chain = chain
        self.ctl = ControllerCore(controller_settings(chain, read_table(CONTROLLER, chain,
                                                                        **params)))
        sim_params = dict(simulator or {}) | ({} if q0 is None else {"initial_positions": list(q0)})
        self.sim = SimulatorCore(chain, simulator_settings(chain, read_table(SIMULATOR, chain,
                                                                               **sim_params)))
        self.q, self.taus, self.t = [], [], []

    def run(self, seconds, each=None):
        for _ in range(int(round(seconds / DT))):
            t = self.sim.sim.t
            q, qd, effort = (x.copy() for x in self.sim.measured())
            if each is not None:
                each(t, q)
            command = self.ctl.update(t, (t, q, qd), effort)
            assert command is not None and np.isfinite(command.tau).all(), f"t = {t:.3f} s"
            self.sim.on_command(t, command.tau)
            self.sim.step(t)
            self.q.append(q)
            self.taus.append(command.tau.copy())
            self.t.append(t)
        return self

    @property
    def stops(self):
        return self.sim.sim.stop_steps

    def rooms(self):
        """(steps, n) each joint's distance to its nearest limit over the run."""
        c = self.chain
        return np.array([barriers.room(q, c.position_min, c.position_max) for q in self.q])

    def largest_step(self):
        """The largest change of the command between two ticks, as a share of the rate
        limit's bound (max_effort_rate * period, per joint).
        """
        steps = np.abs(np.diff(np.array(self.taus), axis=0)).max(axis=0)
        return float((steps / (self.ctl.settings.max_effort_rate * DT)).max())

    def push(self, wrench, link=None):
        self.sim.sim.push(wrench, link)
