"""The C entry points of inverse_dynamics, mass_matrix and a frame's pose and Jacobian
(dyn_control/_calls.c over the cfuncs of dyn_control/kernels/entry.py).

References: the same kernels through numba's dispatcher (kernels.entry.DispatcherEntry), bit
for bit; the public functions' own rules for what is not a float64 array of n (converted, or
named in one line); and threads that share a chain, each with its own inputs.
"""

import re
import threading

import numpy as np
import pytest
from conftest import DEFAULT_ARM, robots_dir

from dyn_control import inverse_dynamics, load_chain, mass_matrix
from dyn_control.kernels.entry import DispatcherEntry
from dyn_control.kinematics import REFERENCES, frame_pose_and_jacobian

ARMS = {"default_arm": (DEFAULT_ARM, None),
        "panda": ("panda_description/urdf/panda.urdf", None),
        "tiago_dual": ("tiago_description/robots/tiago_dual.urdf",
                       ["torso_lift_joint", *(f"arm_{s}_{k}_joint" for s in ("left", "right")
                                              for k in range(1, 8))])}


def _chain(name):
    path, joints = ARMS[name]
    return load_chain(str(path if name == "default_arm" else robots_dir() / path), joints=joints)


def test_the_package_calls_its_passes_from_c():
    assert type(_chain("default_arm").entry).__module__ == "dyn_control._calls"


@pytest.mark.parametrize("name", list(ARMS))
def test_the_c_entry_gives_the_dispatchers_numbers_bit_for_bit(name):
    chain = _chain(name)
    numba = DispatcherEntry(chain.pack)
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3))
        qd, qdd = rng.uniform(-2, 2, (2, chain.n))
        assert np.array_equal(inverse_dynamics(chain, q, qd, qdd),
                              numba.inverse_dynamics(q, qd, qdd))
        assert np.array_equal(mass_matrix(chain, q), numba.mass_matrix(q))
        for link in (chain.tip_link, chain.lumped_links[1][0]):
            for reference in REFERENCES:
                frame = (*chain.frame(link), REFERENCES[reference])
                ours = frame_pose_and_jacobian(chain, q, link, reference)
                assert all(np.array_equal(a, b) for a, b in
                           zip(ours, numba.frame_pose_and_jacobian(q, *frame)))


def test_what_is_not_a_float64_array_of_n_goes_the_general_way():
    """A list, float32, a strided view: the entry declines (None) and the public function
    converts them; a wrong length or shape: declined, and a wrong length named in one line.
    """
    chain = _chain("default_arm")
    q = np.linspace(-1.0, 1.0, 7)
    expected = inverse_dynamics(chain, q, q, q)
    entry = chain.entry
    wide = np.zeros((7, 2))
    wide[:, 0] = q
    for other, rtol in ((q.tolist(), 0.0), (q.astype(np.float32), 1e-6), (wide[:, 0], 0.0)):
        assert entry.inverse_dynamics(other, q, q) is None and entry.mass_matrix(other) is None
        assert entry.frame_pose_and_jacobian(other, *chain.frame(chain.tip_link), 0) is None
        np.testing.assert_allclose(inverse_dynamics(chain, other, q, q), expected, rtol=rtol)
    for bad in (np.zeros(6), np.zeros((7, 1))):  # a (7, 1) q is rows of states to the other
        assert entry.inverse_dynamics(bad, q, q) is None and entry.mass_matrix(bad) is None
    for call in (lambda: inverse_dynamics(chain, np.zeros(6), q, q),
                 lambda: mass_matrix(chain, np.zeros(6))):
        with pytest.raises(ValueError, match=re.escape("q must have shape (7,), got (6,)")):
            call()


def test_threads_sharing_a_chain_each_get_their_own_numbers():
    chain = _chain("panda")
    rng = np.random.default_rng(5)
    states = rng.uniform(-1.0, 1.0, (2, 3, chain.n))
    expected = [inverse_dynamics(chain, *s) for s in states]
    wrong = []

    def run(k):
        for _ in range(3000):
            if not np.array_equal(inverse_dynamics(chain, *states[k]), expected[k]):
                wrong.append(k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_the_simulators_step_from_c_is_the_dispatchers_and_a_blow_up_still_says_so():
    """xArm7's file (stiff damping, friction, stops): steps from random states, moving, with
    the URDF's passive torques, against the dispatcher's, bit for bit; a non-finite torque
    makes the C step decline (None) and Simulation.step report the blow-up as before.
    """
    from dyn_control.sim.simulation import Simulation
    chain = load_chain(str(robots_dir() / "xarm_description/urdf/xarm7.urdf"))
    numba = DispatcherEntry(chain.pack)
    rng = np.random.default_rng(7)
    lower, upper = chain.position_min, chain.position_max
    for _ in range(20):
        q = rng.uniform(np.maximum(lower, -3), np.minimum(upper, 3))
        qd, tau = rng.uniform(-2, 2, chain.n), rng.uniform(-20, 20, chain.n)
        ours = chain.entry.simulation_step(q, qd, tau, chain.damping, chain.friction, lower,
                                           upper, 1e-3, True)
        theirs = numba.simulation_step(q, qd, tau, chain.damping, chain.friction, lower, upper,
                                       1e-3, True)
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    nan = np.full(chain.n, np.nan)
    assert chain.entry.simulation_step(np.zeros(chain.n), np.zeros(chain.n), nan, chain.damping,
                                       chain.friction, lower, upper, 1e-3, True) is None
    sim = Simulation(chain, np.zeros(chain.n))
    assert not sim.step(nan) and sim.blowups == 1 and not sim.qd.any()
