"""The parameter tables' settings (dyn_control.parameters.Table.read): frozen, by the
parameters' own names, per-joint values in chain order; and no node or core reads a parameter
by a string of its name any more.
"""

import dataclasses
import pathlib
import re

import numpy as np
import pytest
from conftest import read_table, table_values

from dyn_control.parameters import CONTROLLER, SIMULATOR


class Chain:  # what Table.read needs of a chain: its joints' names, in chain order
    joint_names = ["a", "b", "c"]


def test_settings_carry_the_parameters_names_and_are_frozen():
    p = read_table(CONTROLLER, Chain, **{"kp": 100.0, "limits.enabled": False})
    assert p.mode == CONTROLLER["mode"].default and p.limits.enabled is False
    assert p.external_torque.observer_gain == CONTROLLER["external_torque.observer_gain"].default
    np.testing.assert_array_equal(p.kp, [100.0] * 3)  # a scalar for every joint
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.kp = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.limits.enabled = True
    with pytest.raises(AttributeError):
        p.limits.enabeld  # noqa: B018 (a misspelt name fails, it never reads a default)
    # every name of the table is there, at its dotted path
    for name in (param.name for param in CONTROLLER):
        group = p
        for part in name.split("."):
            group = getattr(group, part)


def test_per_joint_values_come_in_joints_order_and_are_kept_in_chain_order():
    order = np.array([2, 0, 1])  # the command's joints: c, a, b
    p = read_table(CONTROLLER, Chain, order, kp=[3.0, 1.0, 2.0], nullspace_posture=[0.3, 0.1, 0.2],
                   **{"constraints.b.goal": 0.5})
    np.testing.assert_array_equal(p.kp, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(p.nullspace_posture, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(p.constraints.goal, [0.0, 0.5, 0.0])  # per joint, by name
    assert p.kd is None and p.effort_limits is None  # unset stays unset


@pytest.mark.parametrize("name, value, message", [
    ("kp", [1.0, 2.0], "kp must be a scalar or 3 values, got [1.0, 2.0]"),
    ("teach.damping", -1.0, "teach.damping must be finite and >= 0, got [-1.0]"),
    ("nullspace_posture", [0.0, np.nan, 0.0], "nullspace_posture must be 3 finite values"),
])
def test_a_bad_per_joint_value_is_named_with_its_value(name, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        read_table(CONTROLLER, Chain, **{name: value})


def test_before_the_model_the_per_joint_parameters_are_left_out():
    p = SIMULATOR.read(table_values(SIMULATOR))
    assert p.dt == SIMULATOR["dt"].default
    assert not hasattr(p, "initial_positions") and not hasattr(p, "effort_limits")


def test_no_parameter_is_read_by_a_string_of_its_name():
    # Reference: the package's source. The nodes and cores read settings from Table.read; a
    # parameter is read by name only in the reader (nodes/params.py) and for ROS's own
    # use_sim_time.
    package = pathlib.Path(__file__).resolve().parents[1] / "dyn_control"
    found = []
    for path in package.rglob("*.py"):
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r'\bvalue\("|get_parameter\("(?!use_sim_time)', line):
                found.append(f"{path.relative_to(package)}:{k}: {line.strip()}")
    assert found == []
