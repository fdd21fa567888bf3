#!/usr/bin/env bash
# Build the stand-in control_msgs (test/standin_control_msgs) into a venv, for make demo and
# make test: the real control_msgs is not on PyPI. Needs the ROS interface build tools of
# requirements-build.txt (CMake among them) in that venv, and a C and a C++ compiler. Installs
# with the venv as its prefix, where the ROS wheels put theirs (libraries in lib/, Python in
# site-packages, share/control_msgs); nothing outside the venv changes, and the build folder is
# removed.
#
#   harness/build_control_msgs.sh VENV
set -euo pipefail
venv=$(cd "${1:?usage: build_control_msgs.sh VENV}" && pwd)
source_dir=$(cd "$(dirname "$0")/../test/standin_control_msgs" && pwd)
python="$venv/bin/python"
# The one thing pip cannot bring: a compiler. Say so in one line, not in a CMake trace.
for tool in "${CC:-cc}" "${CXX:-c++}"; do
  command -v "$tool" > /dev/null || {
    echo "building the stand-in control_msgs needs a C and a C++ compiler: '$tool' not found" \
         "(Debian/Ubuntu: apt-get install build-essential; or set CC and CXX)" >&2
    exit 1; }
done
# The wheels' CMake files name the Python of the machine that built them; point them at the
# venv's (the headers and site-packages of this machine's Python).
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
{ grep -rl /opt/python/cp311-cp311 --include='*.cmake' "$venv" || true; } | xargs -r sed -i \
  "s#/opt/python/cp311-cp311/include/python3.11#$include#g; s#/opt/python/cp311-cp311/lib/python3.11/site-packages#$site#g"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
export AMENT_PREFIX_PATH="$venv" CMAKE_PREFIX_PATH="$venv" PATH="$venv/bin:$PATH"
cmake -S "$source_dir" -B "$build" -DCMAKE_INSTALL_PREFIX="$venv" -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$python" > "$build/configure.log" \
  || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j 2 > "$build/build.log" || { tail -50 "$build/build.log"; exit 1; }
cmake --install "$build" > /dev/null
"$python" -c "from control_msgs.action import FollowJointTrajectory; print('control_msgs stand-in built into $venv')"
