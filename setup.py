"""ament_python package dyn_control. Dependencies are declared in package.xml (rosdep) and,
for machines without ROS, in requirements.txt: install_requires pulls nothing from PyPI.
"""

import os
import subprocess
import sys
from glob import glob

from setuptools import Extension, find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

PACKAGE = "dyn_control"


def precompile(where):
    """Compile the kernels into numba's cache beside the installed package (dyn_control.precompile),
    as colcon build installs it, so that no node's first start compiles them. Without numba
    (a build machine without the run dependencies) the nodes compile at their first start.
    """
    urdf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "urdf", "default_arm.urdf")
    # run from `where`: -m takes the package from the working folder first, not the source's
    code = subprocess.call([sys.executable, "-m", "dyn_control.precompile", urdf], cwd=where)
    if code != 0:
        print("dyn_control: the kernels were not compiled now; each node compiles them at its "
              "first start", file=sys.stderr)


class InstallAndCompile(install):
    def run(self):
        super().run()
        precompile(self.install_lib)


class DevelopAndCompile(develop):  # colcon build --symlink-install
    def run(self):
        super().run()
        precompile(os.path.dirname(os.path.abspath(__file__)))

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "bench", "harness", "harness.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/rviz", glob("rviz/*.rviz")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf") + glob("urdf/*.xacro")),
    ],
    # the C entry points of inverse_dynamics and mass_matrix (dyn_control/kernels/entry.py)
    ext_modules=[Extension(f"{PACKAGE}._calls", [f"{PACKAGE}/_calls.c"])],
    cmdclass={"install": InstallAndCompile, "develop": DevelopAndCompile},
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="dyn_control developers",
    maintainer_email="dyn_control@example.com",
    description="Computed-torque control of robot arms from their URDF, with a "
                "forward-dynamics simulator.",
    license="Apache-2.0",
    entry_points={"console_scripts": [
        "computed_torque_controller = dyn_control.nodes.entry:computed_torque_controller",
        "dynamics_simulator = dyn_control.nodes.entry:dynamics_simulator",
        "trajectory_demo = dyn_control.nodes.entry:trajectory_demo",
        "cartesian_demo = dyn_control.nodes.entry:cartesian_demo",
        # identification: live, or from recorded runs with --from-bag (needs the
        # identification extra: requirements-identify.txt)
        "identify = dyn_control.nodes.entry:identify",
        # teach mode: record a motion shown by hand, play it back (nodes.teach)
        "teach = dyn_control.nodes.entry:teach",
    ]},
)
