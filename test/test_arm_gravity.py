"""An arm whose firmware compensates gravity (Franka, a UR in direct torque, KUKA in FRI's torque
mode): the controller's `arm_compensates_gravity` leaves g(q) out of its command, and the
simulator's adds g(q) of its own model to every command, as that firmware does. On our arm and
real arms of example-robot-data.

References: g(q) from inverse dynamics (gravity_torques); the energy of a passive arm without
gravity (kinetic only: it never grows); the same loop with neither compensating.
"""

import numpy as np
import pytest
from conftest import read_table
from lockstep import DT, REAL, Lockstep, arm

from dyn_control import gravity_torques, mass_matrix
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import Request
from dyn_control.controller.settings import controller_settings
from dyn_control.parameters import CONTROLLER
from dyn_control.poses import default_initial_positions
from dyn_control.sim.simulation import Simulation

ARMS = ("default_arm",) + REAL[:4]


@pytest.mark.parametrize("rel", ARMS)
def test_a_simulated_arm_that_compensates_gravity_stays_put_and_reads_g(rel):
    # no command for 1 s: the arm stays where it is to 1e-12 rad, and its joints' torque
    # sensors read g(q) to 1e-9 N m; without the compensation the same arm falls
    chain = arm(rel)
    q0 = default_initial_positions(chain)
    held, fallen = Simulation(chain, q0, gravity_compensated=True), Simulation(chain, q0)
    for _ in range(1000):
        held.step(np.zeros(chain.n))
        fallen.step(np.zeros(chain.n))
    assert np.abs(held.q - q0).max() < 1e-12
    np.testing.assert_allclose(held.effort, gravity_torques(chain, q0), rtol=0, atol=1e-9)
    assert np.abs(fallen.q - q0).max() > 1e-3


@pytest.mark.parametrize("rel", ARMS)
def test_a_simulated_arm_that_compensates_gravity_never_gains_energy(rel):
    # thrown at 1 rad/s on every joint, no command: with gravity compensated its energy is its
    # kinetic energy, which the damping, the friction and the stops only take away (1e-9 of
    # the start's per step, the step's rounding)
    chain = arm(rel)
    sim = Simulation(chain, default_initial_positions(chain), gravity_compensated=True)
    sim.qd = np.ones(chain.n)

    def energy():
        return 0.5 * sim.qd @ mass_matrix(chain, sim.q) @ sim.qd

    before = start = energy()
    for _ in range(2000):
        sim.step(np.zeros(chain.n))
        now = energy()
        assert now <= before + 1e-9 * start, f"t = {sim.t:.3f} s: {before:.6g} -> {now:.6g} J"
        before = now
    assert sim.blowups == 0


@pytest.mark.parametrize("rel", ARMS)
def test_the_controller_leaves_out_exactly_g_and_the_loop_tracks_as_without(rel):
    # the same goal with both compensating and with neither: each command with the arm's
    # compensation is the controller's whole torque less g(q) at the state (1e-9 N m, the
    # identity); both track the goal within 1e-3 rad RMS
    chain = arm(rel)
    runs = {}
    for on in (False, True):
        loop = Lockstep(chain, simulator={"arm_compensates_gravity": on},
                        arm_compensates_gravity=on).run(0.3)
        q = loop.q[-1]
        target = np.clip(q + 0.2, chain.position_min + 0.3, chain.position_max - 0.3)
        rest = np.zeros(chain.n)  # a quintic from rest to rest
        goal = loop.ctl.offer(Request(tuple(chain.joint_names), 0.0,
                                      ((1.5, target, rest, rest),)))
        assert goal.status == "active", goal.reason
        began = len(loop.q)
        loop.run(2.0)
        assert goal.outcome == "succeeded", goal.reason
        assert loop.stops == 0
        if on:  # the last command, against the whole torque it came from
            np.testing.assert_allclose(
                loop.taus[-1], loop.ctl.output.command - gravity_torques(chain, loop.q[-1]),
                rtol=0, atol=1e-9)
        desired = np.array([loop.ctl.goals.reference(t, q)[0]
                            for t, q in zip(loop.t[began:], loop.q[began:])])
        runs[on] = np.sqrt(np.mean((np.array(loop.q[began:]) - desired) ** 2, axis=0)).max()
    assert runs[True] < 1e-3 and runs[False] < 1e-3, runs
    # no worse than without: the arm's g acts continuously where the controller's is held
    # over each step (3.6e-6 against 1.1e-5 rad on our arm)
    assert runs[True] <= 1.1 * runs[False], runs


def test_the_controller_alone_leaves_out_g_on_every_command():
    # a controller core told the arm compensates, against one that is not, on the same states:
    # every command differs by g(q) of the controller's model (with its payload), 1e-9 N m
    chain = arm("default_arm")
    loop = Lockstep(chain).run(0.2)
    payload = {"payload_mass": 1.0}
    cores = [ControllerCore(controller_settings(chain, read_table(
        CONTROLLER, chain, arm_compensates_gravity=on, **payload))) for on in (False, True)]
    for t, q in zip(loop.t, loop.q):
        whole, left = (core.update(t, (t, q, np.zeros(chain.n))).tau for core in cores)
        np.testing.assert_allclose(left, whole - gravity_torques(cores[0].model, q),
                                   rtol=0, atol=1e-9)
    assert cores[0].model.mass.sum() > chain.mass.sum()  # the payload is in g


def test_a_payload_set_on_the_simulator_at_run_time_is_in_its_next_step():
    # the simulation's model changed mid-run steps as one built on that model from the start
    chain = arm("default_arm")
    q0 = default_initial_positions(chain)
    heavy = chain.with_payload(2.0, [0.0, 0.0, 0.1], [0.0] * 6, None)
    changed, built = Simulation(chain, q0), Simulation(heavy, q0)
    changed.chain = heavy
    for _ in range(100):
        changed.step(np.zeros(chain.n))
        built.step(np.zeros(chain.n))
    np.testing.assert_array_equal(changed.q, built.q)
    assert np.abs(changed.q - q0).max() > 1e-3  # it fell: the payload weighed


@pytest.mark.parametrize("rel", ARMS)
def test_a_start_on_an_arm_that_compensates_gravity_sends_no_step_and_does_not_sag(rel):
    # from the simulator's braked start: the first command is within one rate-limit step of
    # zero (what such an arm gets before any controller), and the arm holds its start to
    # 1e-4 rad over 0.5 s (ramping gravity in from zero, an arm that does not compensate it
    # sags into the soft start)
    chain = arm(rel)
    loop = Lockstep(chain, simulator={"arm_compensates_gravity": True},
                    arm_compensates_gravity=True).run(0.5)
    bound = loop.ctl.settings.max_effort_rate * DT
    assert np.all(np.abs(loop.taus[0]) <= bound * (1 + 1e-9)), loop.taus[0] / bound
    assert loop.largest_step() <= 1 + 1e-9
    moved = np.abs(np.array(loop.q) - loop.q[0]).max()
    assert moved < 1e-4, f"sagged {moved:.2e} rad"
