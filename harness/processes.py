"""Start the package's installed nodes as separate processes, with the parameters of config/.

This is what `make demo` and the integration tests use on machines without `launch`: the same
executables and the same config/*.yaml files as launch/sim.launch.py, passed as --params-file,
so the two ways of starting the system cannot drift. No ROS import here.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading

from dyn_control.nodes.launch_support import node_parameters  # noqa: F401  (the harness's too)

PACKAGE = "dyn_control"


def share_dir() -> pathlib.Path:
    """Folder holding config/, urdf/ and launch/: the source tree, else the ament share dir."""
    source = pathlib.Path(__file__).resolve().parent.parent
    if (source / "config").is_dir() and (source / "urdf").is_dir():
        return source
    from ament_index_python.packages import get_package_share_directory
    return pathlib.Path(get_package_share_directory(PACKAGE))


def config(name) -> pathlib.Path:
    return share_dir() / "config" / f"{name}.yaml"


def arm_name(arm):
    """default_arm, or a URDF path's file name without its extensions."""
    return pathlib.Path(arm).name.split(".")[0]


def arm_files(arm):
    """(URDF path, per-arm params files) for an arm name in urdf/ or a URDF path."""
    path = pathlib.Path(arm)
    if not path.suffix:
        path = share_dir() / "urdf" / f"{arm}.urdf"
    extra = config(arm_name(path))
    return path, [extra] if extra.is_file() else []


def executable(name) -> str:
    """An installed console script: beside this Python (venv), in PATH, or lib/dyn_control."""
    for candidate in (pathlib.Path(sys.executable).parent / name,
                      pathlib.Path(sys.prefix) / "lib" / PACKAGE / name):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(
            f"console script '{name}' not installed (pip install -e . or colcon build)")
    return found


# Fast DDS participants that announce themselves every 0.25 s (the file says why)
QUICK_DISCOVERY = pathlib.Path(__file__).resolve().parent / "fastdds_discovery.xml"


# This process's own participants (the recorders, the pacers, the demo's clients) on the nodes'
# transport too: beside busy-machine.sh a starved harness process on Fast DDS's default
# transports stopped hearing the controller for good (its /diagnostics last heard at tick 4703
# of 94318, the reset's answer lost) while a listener in a process of its own heard it all
# along; on UDPv4 it heard both in 4 runs of 4, though a later loaded suite lost the
# controller's /diagnostics once more (docs/failure_modes.md, "DDS transport").
os.environ.setdefault("FASTDDS_BUILTIN_TRANSPORTS", "UDPv4")


def loop_env(env=None):
    """env (default os.environ) with Fast DDS on UDP loopback unless the caller chose transports,
    and QUICK_DISCOVERY unless the caller chose a profile file.

    Fast DDS's default shared-memory transport can stop delivering to one of the loop's nodes
    for longer than the watchdogs allow on a small machine (figures in docs/failure_modes.md, "DDS
    transport").
    """
    env = dict(os.environ if env is None else env)
    env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(QUICK_DISCOVERY))
    env.setdefault("FASTDDS_BUILTIN_TRANSPORTS", "UDPv4")
    return env


def ros_args(params_files=(), params=None, remaps=None):
    args = ["--ros-args"]
    for path in params_files:
        args += ["--params-file", str(path)]
    for key, value in (params or {}).items():
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, (list, tuple)):
            value = "[" + ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value) + "]"
        args += ["-p", f"{key}:={value}"]
    for old, new in (remaps or {}).items():
        args += ["-r", f"{old}:={new}"]
    return args


@contextlib.contextmanager
def _interrupts_held():
    """SIGINT and SIGTERM wait for the block's end, then come again (in the main thread, where
    Python takes them): -> the list of those that came. A KeyboardInterrupt raised inside
    subprocess.Popen, after the fork and before it returns, leaves a child whose pid nobody
    holds, running on after the run that started it (a loaded suite left one of make demo's
    nodes so, SIGTERM having come as the demo started it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    came = []
    previous = {sig: signal.signal(sig, lambda sig, _: came.append(sig))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield came
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for sig in came:
            signal.raise_signal(sig)


class NodeProcess:
    """One node in its own process, output to a log file; stop() sends SIGINT like Ctrl-C."""

    def __init__(self, name, params_files=(), params=None, remaps=None, log_dir=".",
                 env=None, domain_id=None, argv=None):
        """argv: run this command (plus the ROS arguments) instead of the console script `name`."""
        self.name = name
        self.log_path = pathlib.Path(log_dir) / f"{name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ if env is None else env)
        if domain_id is not None:
            env["ROS_DOMAIN_ID"] = str(domain_id)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "0")
        self._log = open(self.log_path, "w")
        command = list(argv) if argv else [executable(name)]
        with _interrupts_held() as came:
            self.proc = subprocess.Popen([*command, *ros_args(params_files, params, remaps)],
                                         stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
            if came:  # interrupted while starting: the caller will not get it to stop
                self.stop()

    def running(self):
        return self.proc.poll() is None

    def stop(self, timeout=10.0):
        """SIGINT, wait, SIGKILL if it hangs; returns the exit code (None if it had to be
        killed).
        """
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                self._log.close()
                return None
        self._log.close()
        return self.proc.returncode

    def log(self):
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")


class ProcessSet(list):
    """The node processes of one run, in the order they started. stop() stops them last started
    first (the simulator before the controller, so that it does not count the states a stopped
    controller leaves unanswered) and returns {name: exit code}; call it before the caller's
    own rclpy goes down, so that no node outlives the graph it was tested in.
    """

    def start(self, name, params_files=(), params=None, **kwargs):
        """A NodeProcess started now, kept in the set: NodeProcess's arguments."""
        self.append(NodeProcess(name, params_files, params, **kwargs))
        return self[-1]

    def stop(self):
        return {node.name: node.stop() for node in reversed(self)}

    def logs(self):
        return {node.name: node.log() for node in self}
