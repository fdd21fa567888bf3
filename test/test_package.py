"""The ROS 2 package metadata: package.xml parses with catkin_pkg and declares what the code
imports; setup.py installs the data a ROS install needs and pulls nothing from PyPI.
"""

import ast

from conftest import PACKAGE_DIR, require

RUNTIME = {"rclpy", "sensor_msgs", "std_msgs", "trajectory_msgs", "rosgraph_msgs", "urdfdom_py",
           "diagnostic_msgs", "control_msgs", "geometry_msgs",
           "xacro", "python3-numpy", "python3-numba", "python3-lxml",
           "rcl_interfaces", "builtin_interfaces", "ament_index_python"}
TEST = {"launch_testing", "launch_testing_ros", "python3-pytest", "python3-scipy", "pinocchio",
        "python3-yaml", "python3-matplotlib"}


def test_package_xml_parses_and_declares_the_dependencies():
    catkin_pkg = require("catkin_pkg.package")
    pkg = catkin_pkg.parse_package(str(PACKAGE_DIR / "package.xml"))
    assert pkg.name == "dyn_control" and pkg.package_format == 3
    assert pkg.get_build_type() == "ament_python"
    exec_deps = {d.name for d in pkg.exec_depends}
    assert RUNTIME <= exec_deps, RUNTIME - exec_deps
    assert not exec_deps & {"python3-yaml", "python3-matplotlib"}  # only tests and the demo
    test_deps = {d.name for d in pkg.test_depends}
    assert TEST <= test_deps, TEST - test_deps


def test_setup_py_installs_share_files_and_console_scripts_without_pypi_deps():
    tree = ast.parse((PACKAGE_DIR / "setup.py").read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id",
                                                                                 "") == "setup")
    kwargs = {k.arg: k.value for k in call.keywords}
    assert ast.literal_eval(kwargs["install_requires"]) == ["setuptools"]
    scripts = ast.literal_eval(kwargs["entry_points"])["console_scripts"]
    names = {s.split("=")[0].strip() for s in scripts}
    assert names >= {"computed_torque_controller", "dynamics_simulator", "trajectory_demo"}
    source = (PACKAGE_DIR / "setup.py").read_text()
    for folder in ("launch", "config", "urdf"):
        assert f"share/{{PACKAGE}}/{folder}" in source
    assert (PACKAGE_DIR / "resource" / "dyn_control").is_file()
    assert "lib/dyn_control" in (PACKAGE_DIR / "setup.cfg").read_text()


def test_the_parameters_page_is_the_parameter_tables():
    # the tables declare and check the parameters; docs/parameters.md shows them as generated
    from dyn_control.parameters import parameters_page
    page = (PACKAGE_DIR / "docs" / "parameters.md").read_text()
    assert page == parameters_page(), (
        "run .venv/bin/python -m dyn_control.parameters > docs/parameters.md")
