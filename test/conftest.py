"""Shared test helpers: where the reference URDFs are, the reference libraries, and the
`processes` and `slow` markers.

A test module that starts processes or a ROS graph (it imports from rclpy, subprocess or the
process harness, harness/) is marked `processes`; a test that runs over ten seconds alone (the
compile of every kernel), or a file of them that runs a minute (the in-process closed loops of
identification), is marked `slow`.
`make test-fast` runs the others (`pytest -m "not processes and not slow"`), the library and
the cores, for iteration; `make test` runs them all, on two workers, then the tests marked
`alone` by themselves: loops on wall time at 1 kHz whose outcome another test's loop beside
them changes (the topic-based hardware's four processes, the free-running loop beside a hog).

The reference libraries (pinocchio, example-robot-data, scipy, hypothesis) are test-only
dependencies; `make test` installs them. Where one is missing a test is skipped with the reason,
except when DYN_CONTROL_REQUIRE_REFERENCES=1 (set by `make test` and CI): then a missing
reference is a failure, so CI can never pass by skipping.
"""

import importlib
import os
import pathlib
import sys
import sysconfig

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PACKAGE_DIR))  # harness/, the process harness the tests share
SUPPORT_DIR = PACKAGE_DIR / "test" / "support"  # the tests' helpers and helper processes
sys.path.insert(0, str(SUPPORT_DIR))
# every ROS participant of the suite, this process's and the nodes' it starts, finds the others
# in a quarter of a second, not up to three (harness/fastdds_discovery.xml)
# and this process's participants on the nodes' transport (harness/processes.py says why)
os.environ.setdefault("FASTDDS_BUILTIN_TRANSPORTS", "UDPv4")
os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                      str(PACKAGE_DIR / "harness" / "fastdds_discovery.xml"))
URDF_DIR = PACKAGE_DIR / "urdf"
CONFIG_DIR = PACKAGE_DIR / "config"
DEFAULT_ARM = URDF_DIR / "default_arm.urdf"
# arms of example-robot-data checked against Pinocchio: path under its robots, load_chain
# keyword arguments (a prismatic torso among them)
PIN_ARMS = {
    "panda": ("panda_description/urdf/panda.urdf", {"tip_link": "panda_hand"}),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", {}),
    "kinova": ("kinova_description/robots/kinova.urdf", {}),
    "tiago_prismatic_torso": ("tiago_description/robots/tiago_no_hand.urdf", {}),
}
BENT_POSE = (0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0)  # rad, the default arm away from singularities
DEFAULT_JOINTS = tuple(f"joint{i}" for i in range(1, 8))  # the default arm's


def rviz_displays():
    """{display class: its settings} of the shipped rviz/dyn_control.rviz."""
    import yaml
    view = yaml.safe_load((PACKAGE_DIR / "rviz" / "dyn_control.rviz").read_text())
    return {d["Class"]: d for d in view["Visualization Manager"]["Displays"]}


PROCESS_PACKAGES = {"rclpy", "subprocess", "harness"}  # what a module imports to start them


def _starts_processes(module):
    for value in vars(module).values():
        origin = getattr(value, "__module__", None) or getattr(value, "__name__", None)
        if isinstance(origin, str) and origin.split(".")[0] in PROCESS_PACKAGES:
            return True
    return False


def pytest_configure(config):
    config.addinivalue_line("markers", "processes: starts processes or a ROS graph (slow)")
    config.addinivalue_line("markers", "slow: over 10 s alone or a minute a file, no processes")
    config.addinivalue_line("markers", "alone: make test runs it after the others, by itself")


def pytest_collection_modifyitems(items):
    for item in items:
        if _starts_processes(item.module):
            item.add_marker(pytest.mark.processes)
    # the files that start processes first (a stable sort keeps each file's order): they hold
    # the long loops, and the many short in-process tests after them fill whichever worker
    # ends first, rather than one worker starting a minute-long loop as the other runs dry
    items.sort(key=lambda item: item.get_closest_marker("processes") is None)


def require(module):
    """Import a reference library, skipping (or failing under CI) when it is not installed."""
    if os.environ.get("DYN_CONTROL_REQUIRE_REFERENCES") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"reference library '{module}' not installed")


def robots_dir():
    """example-robot-data's robots folder (installed by cmeel under site-packages)."""
    for base in (sysconfig.get_paths()["purelib"], *sys.path):
        path = pathlib.Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if path.is_dir():
            return path
    if os.environ.get("DYN_CONTROL_REQUIRE_REFERENCES") == "1":
        raise RuntimeError("example-robot-data is not installed")
    pytest.skip("reference URDFs of example-robot-data not installed")


def table_values(table, **overrides):
    """value(name) of a parameter table's defaults (its per-joint entries too), with overrides:
    what a node reads, for the cores in tests.
    """
    return lambda name: overrides[name] if name in overrides else table[name].default


def read_table(table, chain, order=None, **overrides):
    """The settings that table.read gives a node of `chain` (its joints, `joints` order given
    by order) from the table's defaults with overrides.
    """
    return table.read(table_values(table, **overrides), chain.joint_names, order)


IDENTIFICATION_START = (0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0)  # the default arm's home


@pytest.fixture(scope="session")
def default_setup():
    """The identification tests' default arm, its base parameters, the optimized excitation
    (and its condition number) and a held-out run: computed once for every test that takes it.
    """
    import numpy as np

    from dyn_control import load_chain
    from dyn_control.identification.excitation import optimize
    from dyn_control.identification.fit import BaseParameters
    chain = load_chain(DEFAULT_ARM)
    base = BaseParameters(chain)
    start = np.array(IDENTIFICATION_START)
    trajectory, cond = optimize(chain, base, start, seed=0)
    held_out, _ = optimize(chain, base, start, seed=1, candidates=4, rounds=0)
    return chain, base, trajectory, cond, held_out
