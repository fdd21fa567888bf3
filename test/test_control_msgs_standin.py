"""The stand-in control_msgs that `make test` builds (test/standin_control_msgs) has the type
hashes of the released control_msgs 6.8.0 (ROS 2 Kilted). Reference: the hashes of the real
package, built here by hand from github:ros-controls/control_msgs at tag 6.8.0 with its own
CMakeLists (read from its install tree, share/control_msgs/*/*.json); a stand-in whose fields
drifted would break a real MoveIt or rqt peer on rmw implementations that match on hashes.
"""

import json
import pathlib
import sys

from conftest import require

REAL = {  # control_msgs 6.8.0, built from source
    "msg/JointTolerance": "RIHS01_c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648",  # noqa: E501 (a type hash)
    "msg/JointComponentTolerance": "RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4",  # noqa: E501 (a type hash)
    "msg/JointTrajectoryControllerState": "RIHS01_51d8dd89cc624cbe9daaeeb4d80d6de9b86168ffdc3be41fefc0953e3c26e480",  # noqa: E501 (a type hash)
    "action/FollowJointTrajectory": "RIHS01_ff29901b2693f5deb847e96084a1c2cdb26e70b7c847be21859b70a55fb29cf0",  # noqa: E501 (a type hash)
}


def share_dir():
    """control_msgs' share folder: the stand-in's in the venv (make test installs it with the
    venv as its prefix), else where the ament index finds it (a ROS install: the real one).
    """
    venv = pathlib.Path(sys.prefix) / "share" / "control_msgs"
    if venv.is_dir():
        return venv
    from ament_index_python.packages import get_package_share_directory
    return pathlib.Path(get_package_share_directory("control_msgs"))


def test_the_stand_in_has_the_released_type_hashes():
    require("control_msgs")
    share = share_dir()
    for name, expected in REAL.items():
        hashes = json.loads((share / f"{name}.json").read_text())["type_hashes"]
        assert hashes[0]["type_name"] == f"control_msgs/{name}"
        assert hashes[0]["hash_string"] == expected, name


def test_a_machine_without_a_compiler_gets_one_line_naming_it(tmp_path):
    # the one build tool pip cannot bring (the script checks before CMake would fail in a trace)
    import os
    import subprocess
    script = pathlib.Path(__file__).resolve().parent.parent / "harness" / "build_control_msgs.sh"
    out = subprocess.run(["bash", str(script), str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "CXX": "no-such-c++"}, timeout=60)
    assert out.returncode == 1 and out.stdout == "", out
    assert out.stderr.count("\n") == 1 and "'no-such-c++' not found" in out.stderr, out.stderr


def test_a_venv_without_a_c_compiler_gets_one_line_naming_it(tmp_path):
    # the package's C entry points (dyn_control/_calls.c) build at its install: make checks first
    import os
    import subprocess
    root = pathlib.Path(__file__).resolve().parent.parent
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    out = subprocess.run(["make", "-s", f"VENV={venv}", f"{venv}/.runtime"], cwd=root,
                         capture_output=True, text=True, env={**env, "CC": "no-such-cc"},
                         timeout=60)
    assert out.returncode != 0 and out.stdout == "" and not venv.exists(), out
    line, *rest = out.stderr.splitlines()
    assert "'no-such-cc' not found" in line and all(r.startswith("make:") for r in rest), out
