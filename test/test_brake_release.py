"""No arm falls or jolts when its brakes release (issue 60): the controller and simulator cores in
lockstep at 1 ms, the simulator running the URDF the controller knows, from its braked start
(the drives apply nothing until the first command, and the measured effort reads zero), on
every arm of example-robot-data that make demo runs and on a heavy arm (test/arms/heavy_arm.urdf,
its shoulder 264 N m against gravity at its start), in every mode, with and without the arm's
own gravity compensation; then at a switch of mode, after ~/reset_collision, and for a
controller restarted on an arm its predecessor held.

What holds, whatever the machine's load (the loop is synchronous): within the first second no
joint moves more than 1e-3 rad from where the brakes held it, no velocity fault, no contact or
collision, no stop reached, and no command changes by more than the rate limit allows between
two ticks (max_effort_rate * period, 1e-9 of it for rounding). Before the first command held
gravity, the heavy arm fell 0.64 rad in that second and latched a velocity fault.
"""

import warnings
from dataclasses import replace

import numpy as np
import pytest
from arm_sweep import CHOSEN, arm_paths
from conftest import PACKAGE_DIR, robots_dir
from lockstep import DT, Lockstep

from dyn_control import load_chain
from dyn_control.controller.core import ControllerCore
from dyn_control.parameters import CARTESIAN_IMPEDANCE, MODES, TEACH

HEAVY = PACKAGE_DIR / "test" / "arms" / "heavy_arm.urdf"
HEAVY_START = [0.0, 1.2, 0.0, -0.6, 0.0, 0.6, 0.0]  # rad: A2 needs 264 N m of its 320
ALL_MODES = (*MODES, CARTESIAN_IMPEDANCE, TEACH)
STILL = 1e-3  # rad or m: the most a joint may move in the first second


def heavy():
    return load_chain(HEAVY)


class Watched(Lockstep):
    """A Lockstep that records, at each tick, what must never happen at a release."""

    def __init__(self, chain, q0=None, **params):
        super().__init__(chain, q0, **params)
        self.bad = []

    def run(self, seconds, each=None):
        def check(t, q):
            ctl = self.ctl
            if ctl.guard.fault or ctl.contact.contact or ctl.contact.collision:
                self.bad.append((round(t, 3), ctl.guard.fault, ctl.contact.contact,
                                 ctl.contact.collision))
            if each is not None:
                each(t, q)
        return super().run(seconds, check)

    def moved(self, since=0):
        q = np.array(self.q[since:])
        return float(np.abs(q - q[0]).max())

    def assert_released(self, since=0):
        assert self.moved(since) <= STILL, f"moved {self.moved(since):.3g} rad"
        assert not self.bad, self.bad[:3]
        assert self.stops == 0
        assert self.largest_step() <= 1.0 + 1e-9


def sweep_arms():
    return [*arm_paths(), *CHOSEN]


def chain_of(rel):
    if rel == "heavy":
        return heavy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_chain(robots_dir() / rel, **CHOSEN.get(rel, {}))


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("compensates", (False, True))
def test_the_heavy_arm_holds_from_its_first_command(mode, compensates):
    loop = Watched(heavy(), HEAVY_START, mode=mode, arm_compensates_gravity=compensates,
                   simulator={"arm_compensates_gravity": compensates}).run(1.0)
    loop.assert_released()
    if not compensates:  # the first command is gravity, the model's, within the limits
        assert abs(loop.taus[0][1]) > 250.0


@pytest.mark.parametrize("rel", ["heavy", *sweep_arms()])
def test_every_arm_holds_at_brake_release_in_every_mode(rel):
    chain = chain_of(rel)
    for mode in ALL_MODES:
        loop = Watched(chain, HEAVY_START if rel == "heavy" else None, mode=mode).run(1.0)
        try:
            loop.assert_released()
        except AssertionError as e:
            raise AssertionError(f"{rel} in {mode}: {e}") from None


@pytest.mark.parametrize("first,then", [(a, b) for a in ALL_MODES for b in ALL_MODES if a != b])
def test_a_switch_of_mode_on_the_heavy_arm_neither_moves_nor_jolts_it(first, then):
    loop = Watched(heavy(), HEAVY_START, mode=first).run(0.3)
    loop.ctl.configure(replace(loop.ctl.settings, mode=then))
    loop.run(1.0)
    loop.assert_released()


def test_after_reset_collision_the_heavy_arm_holds_where_it_is():
    # a push latches a collision, the arm holds; once the push ends, the reset holds it there
    loop = Watched(heavy(), HEAVY_START).run(0.3)
    loop.push(np.array([0.0, 0.0, -400.0, 0.0, 0.0, 0.0]))
    for _ in range(2000):
        loop.run(DT * 10)
        if loop.ctl.contact.collision:
            break
    assert loop.ctl.contact.collision, "the push did not latch a collision"
    loop.push(np.zeros(6))
    loop.bad.clear()
    loop.run(1.0)
    done, message = loop.ctl.reset_collision()
    assert done, message
    loop.bad.clear()
    since = len(loop.q)
    loop.run(1.0)
    loop.assert_released(since)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_controller_restarted_on_a_held_arm_takes_over_without_a_jolt(mode):
    # the first controller holds the arm; a second one, started on the same states with the
    # measured effort (what the drives apply), takes over from it
    loop = Watched(heavy(), HEAVY_START, mode=mode).run(0.5)
    last = loop.taus[-1].copy()
    loop.ctl = ControllerCore(loop.ctl.settings)
    since = len(loop.q)
    loop.run(1.0)
    loop.assert_released(since)
    step = np.abs(loop.taus[since] - last) / (loop.ctl.settings.max_effort_rate * DT)
    assert step.max() <= 1.0 + 1e-9, step
