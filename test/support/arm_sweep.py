"""Every arm of example-robot-data that load_chain loads with its defaults, and the poses and
moves the sweeps use on them. The arms keep their own damping, friction, limits and axes.
"""

import functools
import warnings

import numpy as np
from conftest import robots_dir

from dyn_control import URDFError, kinetic_energy, load_chain, potential_energy
from dyn_control.controller.laws import ControlLaw
from dyn_control.controller.trajectory import Trajectory
from dyn_control.model.chain import effort_limits
from dyn_control.sim.simulation import Simulation


@functools.cache
def arm_paths():
    """Paths (relative to the robots folder) of every URDF or xacro that load_chain loads."""
    root = robots_dir()
    found = []
    for path in sorted([*root.rglob("*.urdf"), *root.rglob("*.xacro")]):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load_chain(path)
        except URDFError:
            continue  # several trees (humanoids, quadrupeds), no movable joint, bad xacro
        found.append(str(path.relative_to(root)))
    return tuple(found)


# arms that load only with a limb chosen, as make demo's TIP= chooses it
CHOSEN = {"baxter_description/urdf/baxter.urdf": {"tip_link": "left_gripper_base_link"},
          "tiago_description/robots/tiago_dual.urdf": {"tip_link": "arm_left_tool_link"}}


def real_arms():
    """(path, load_chain keywords) of every arm of arm_paths, and of CHOSEN's limbs."""
    return [(rel, {}) for rel in arm_paths()] + list(CHOSEN.items())


def load_arm(rel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_chain(robots_dir() / rel)


def finite_limits(chain):
    limited = np.isfinite(chain.lower) & np.isfinite(chain.upper) & (chain.lower < chain.upper)
    return limited, np.where(limited, chain.lower, -np.inf), np.where(limited, chain.upper, np.inf)


def bent_pose(chain, unlimited=0.5):
    """30 % of the way through each joint's range, `unlimited` (rad or m) on joints without."""
    limited, lower, upper = finite_limits(chain)
    return np.where(limited, np.where(limited, lower, 0) + 0.3 * np.where(limited, upper - lower,
                                                                          0),
                    unlimited)


def quintic_move(chain, duration=2.0, seed=0):
    """(q0, trajectory): from 30 % of the way up each joint's range (or 0.3 without limits),
    0.2 to 0.5 rad (or m) towards the roomier side, within 80 % of the room to the limit.
    A joint whose Coulomb friction is not below its effort limit cannot be driven: it stays.
    """
    n = chain.n
    _, lower, upper = finite_limits(chain)
    q0 = bent_pose(chain, unlimited=0.3)
    room_up, room_down = upper - q0, q0 - lower
    step = np.random.default_rng(seed).uniform(0.2, 0.5, n)
    step = np.where(room_up >= room_down, np.minimum(step, 0.8 * room_up),
                    -np.minimum(step, 0.8 * room_down))
    step[chain.friction >= effort_limits(chain)] = 0.0
    zero = np.zeros(n)
    return q0, Trajectory(0.0, (q0, zero, zero), [duration], [q0 + step], [zero], [zero])


def synchronous_loop(chain, law, q0, trajectory, seconds, dt=1e-3):
    """The synchronous simulated arm in one process: the command answering the state at step k
    drives step k, as dynamics_simulator and computed_torque_controller do in synchronous mode.
    Returns the errors e (k, n) at every step, and the simulation.
    """
    sim = Simulation(chain, q0, dt, effort_limits(chain))
    errors = []
    for _ in range(int(round(seconds / dt))):
        tau, e, _ = law(sim.q, sim.qd, *trajectory.sample(sim.t), dt)
        errors.append(e.copy())
        sim.step(tau)
    return np.array(errors), sim


def computed_torque(chain, kp=400.0):
    n = chain.n
    return ControlLaw(chain, "computed_torque", np.full(n, kp), np.full(n, 2 * np.sqrt(kp)),
                      effort_limits(chain), friction_compensation=True)


# Energy may still rise by the integration error of RK4 and of where within a step a stop is
# hit (a joint resting on its stop while others swing). That error is second order in the step
# (Z1, fall with damping, friction and stops: 9.7e-5 J at 1 ms, 2.4e-5 J at 0.5 ms); over the
# sweep it stays below 1.3e-3 of the largest kinetic energy of the fall (SO-101).
ENERGY_RTOL = 2e-3


def energy_rise(chain, q0, dt=1e-3, seconds=2.0):
    """(largest rise of K + P above its lowest value so far, largest K) in a fall with no
    input from q0 with 0.2 rad/s on every joint; and the simulation at the end.
    """
    sim = Simulation(chain, q0, dt)
    sim.qd[:] = 0.2
    lowest = kinetic_energy(chain, sim.q, sim.qd) + potential_energy(chain, sim.q)
    rise = largest = 0.0
    for _ in range(int(round(seconds / dt))):
        sim.step(np.zeros(chain.n))
        kinetic = kinetic_energy(chain, sim.q, sim.qd)
        energy = kinetic + potential_energy(chain, sim.q)
        rise, lowest, largest = max(rise, energy - lowest), min(lowest, energy), max(largest,
                                                                                     kinetic)
    return rise, largest, sim
