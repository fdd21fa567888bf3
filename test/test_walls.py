"""Walls that can only help (issue 60): the controller and simulator cores in lockstep at 1 ms on
the default arm at its bent pose (hand at z = 1.079 m), in cartesian_impedance and teach, the
two modes with walls.

Before, a wall 0.15 m below the hand was accepted, and its barrier, far past its design, drove
joint 5 over its velocity limit within 30 ms. Now walls that leave the hand outside are set
aside in one line at the first state (nothing to refuse then) and refused at run time, and a
hand inside a wall's margin has the margin grow back around it over barriers.RECOVERY_TIME.
/diagnostics says each hand's room to its walls and their push.
"""

import numpy as np
import pytest
from conftest import BENT_POSE, read_table
from lockstep import Lockstep, arm

from dyn_control import kinematics
from dyn_control.controller.settings import controller_settings
from dyn_control.parameters import CARTESIAN_IMPEDANCE, CONTROLLER, DEFAULT_WALL_MARGIN, TEACH

MODES = (CARTESIAN_IMPEDANCE, TEACH)


def hand_z(chain, q):
    return kinematics.frame_pose(chain, np.asarray(q, float), chain.tip_link)[1][2]


def lines(core, level):
    return [text for lv, text, _ in core.drain() if lv == level]


@pytest.fixture(scope="module")
def chain():
    return arm("default_arm")


@pytest.mark.parametrize("mode", MODES)
def test_walls_that_leave_the_hand_outside_at_the_start_are_set_aside_in_one_line(chain, mode):
    ceiling = hand_z(chain, BENT_POSE) - 0.15
    loop = Lockstep(chain, BENT_POSE, mode=mode, **{"limits.workspace_max": [9.0, 9.0, ceiling]})
    loop.run(1.0)
    said = [t for t in lines(loop.ctl, "error") if "walls" in t]
    assert len(said) == 1 and "limits.workspace_max z" in said[0] and "0.15 m outside" in said[0]
    level, _, values = loop.ctl.diagnostics()
    assert level == "WARN" and "0.15 m outside" in values["walls_set_aside"]
    assert loop.ctl.guard.fault is None and loop.ctl.guard.faults == 0
    q = np.array(loop.q)
    assert np.abs(q - q[0]).max() <= 1e-3  # held where the brakes left it


def settings(chain, mode, **walls):
    return controller_settings(chain, read_table(CONTROLLER, chain, mode=mode, **walls))


@pytest.mark.parametrize("mode", MODES)
def test_walls_that_leave_the_hand_outside_at_run_time_are_refused(chain, mode):
    loop = Lockstep(chain, BENT_POSE, mode=mode).run(0.2)
    before = loop.ctl.settings
    ceiling = hand_z(chain, loop.q[-1]) - 0.15
    with pytest.raises(ValueError, match=r"limits.workspace_max z = .* 0.15 m outside"):
        loop.ctl.configure(settings(chain, mode, **{"limits.workspace_max": [9.0, 9.0, ceiling]}))
    assert loop.ctl.settings is before and not loop.ctl.guard.walls
    loop.run(1.0)
    assert loop.ctl.guard.faults == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("when", ("start", "run time"))
def test_a_hand_inside_a_walls_margin_gets_it_back_gently(chain, mode, when):
    # the hand 0.03 m under a ceiling whose margin is 0.05 m: the margin grows back around it
    # over RECOVERY_TIME; the hand never reaches the wall, no joint faults, the command keeps
    # within the rate limit. Before, in teach the barrier's full push at once swung the arm
    # 0.77 rad in a second.
    walls = {"limits.workspace_max": [9.0, 9.0, hand_z(chain, BENT_POSE) + 0.03]}
    loop = Lockstep(chain, BENT_POSE, mode=mode, **(walls if when == "start" else {}))
    loop.run(0.2 if when == "run time" else 0.001)
    if when == "run time":
        loop.ctl.configure(settings(chain, mode, **walls))
    assert loop.ctl.guard.recovering is not None
    rooms = []
    loop.run(2.0, each=lambda t, q: rooms.append(loop.ctl.guard.wall_rooms(q).min()))
    assert min(rooms) > 0.0
    assert loop.ctl.guard.faults == 0 and loop.stops == 0
    assert loop.largest_step() <= 1.0 + 1e-9
    assert loop.ctl.guard.recovering is None  # the whole margin is back
    q = np.array(loop.q)
    assert np.abs(q - q[0]).max() < 0.3


@pytest.mark.parametrize("force", (20.0, 50.0, 100.0))
def test_a_hand_pushed_toward_a_wall_in_teach_stops_short_of_it(chain, force):
    # a person pushes the hand down toward a floor 0.1 m below it: the floor stops it before
    # it, with no velocity fault (200 N faults a joint with or without the floor: the push's)
    floor = hand_z(chain, BENT_POSE) - 0.1
    loop = Lockstep(chain, BENT_POSE, mode=TEACH, **{"limits.workspace_min": [-9.0, -9.0, floor]})
    loop.run(0.2)
    loop.push([0.0, 0.0, -force, 0.0, 0.0, 0.0])
    rooms = []
    loop.run(2.0, each=lambda t, q: rooms.append(hand_z(chain, q) - floor))
    assert min(rooms) > 0.0
    assert loop.ctl.guard.faults == 0 and loop.stops == 0
    _, _, values = loop.ctl.diagnostics()
    room, push = values[f"wall_room_m.{chain.tip_link}"], values[f"wall_force_n.{chain.tip_link}"]
    assert room == pytest.approx(rooms[-1], abs=1e-3)
    # pressed into the floor's margin, at rest: the floor's push holds the person's
    assert room < DEFAULT_WALL_MARGIN
    assert push == pytest.approx(force, rel=0.05)
