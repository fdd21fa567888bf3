"""The kernels are compiled when the package is installed, not at a node's first start (issue
60): `make` runs dyn_control.precompile after `pip install -e .`, and setup.py's install step
runs it under colcon build. On a fresh colcon build, a node's first start compiled every kernel
(about 80 s on 2 idle cores): the shipped launch test timed out beside its own two CPU hogs,
and again at once, as the interrupted compile had left the cache half filled.

What holds: after precompile, the start-up of the controller (core.warm_up) and the
simulator's first step, on arms other than the one precompile ran (the UR5 of
example-robot-data, and the dual arm, a tree, in cartesian_impedance with both hands),
compile no kernel (numba's own counts of cache misses), and the cache folder is marked
complete, which is what the nodes ask before they say that they compile.
"""

import json
import subprocess
import sys

from conftest import PACKAGE_DIR, robots_dir

START_UPS = """
import json, sys
from dyn_control import load_chain, precompile
from dyn_control.controller.core import warm_up
from dyn_control.controller.settings import controller_settings
from dyn_control.kernels import cache
from dyn_control.parameters import CONTROLLER
precompile.compile_kernels(sys.argv[1])
joints = ["torso_lift_joint"] + [f"{s}_joint{i}" for s in ("left", "right") for i in range(1, 8)]
tree = load_chain(sys.argv[2], joints=joints)
values = {"mode": "cartesian_impedance", "ee_links": ["left_tool", "right_tool"]}
settings = CONTROLLER.read(lambda name: values.get(name, CONTROLLER[name].default),
                           tree.joint_names, None)
warm_up(controller_settings(tree, settings))
print(json.dumps({"compiled": precompile.compiled(), "complete": cache.complete()}))
"""


def test_after_precompile_no_start_up_compiles_a_kernel():
    done = subprocess.run([sys.executable, "-m", "dyn_control.precompile"], cwd=PACKAGE_DIR,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "kernels compiled" in done.stdout, done.stderr
    ur5 = robots_dir() / "ur_description/urdf/ur5_robot.urdf"
    run = subprocess.run([sys.executable, "-c", START_UPS, str(ur5),
                          str(PACKAGE_DIR / "urdf" / "dual_arm.urdf")], cwd=PACKAGE_DIR,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"compiled": 0, "complete": True}
