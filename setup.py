"""ament_python package dyn_control. Dependencies are declared in package.xml (rosdep) and,
for machines without ROS, in requirements.txt: install_requires pulls nothing from PyPI.
"""

from glob import glob

from setuptools import Extension, find_packages, setup

PACKAGE = "dyn_control"

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
