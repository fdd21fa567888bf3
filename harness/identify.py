"""make identify ARM=<the URDF the controller knows> TRUTH=<the URDF the simulator runs>:
the whole identification on a simulated "real arm". The simulator runs TRUTH
(default: ARM), the controller and the `identify` node know ARM; identify sends the two runs
through the controller's action, records them, fits, and writes out/identified_<arm>.urdf,
the recordings (rosbag2 MCAP folders) and the report. Exit code: identify's.
"""

import argparse
import json
import os
import pathlib
import sys
import time

from dyn_control.nodes.launch_support import real_arm_parameters
from dyn_control.parameters import SIMULATOR

from . import processes


def _watch():
    """A node that keeps identify's latest /diagnostics status (rclpy initialised)."""
    from diagnostic_msgs.msg import DiagnosticArray

    from dyn_control.nodes.diagnostics import read_diagnostics

    from .background import BackgroundNode

    class Watch(BackgroundNode):
        def __init__(self):
            super().__init__("identify_watch")
            self.status = {}

            def keep(msg):
                with self.lock:
                    self.status.update(read_diagnostics(msg).get("identify", {}) or self.status)
            self.create_subscription(DiagnosticArray, "/diagnostics", keep, 10)
            self.start()

        def message(self):
            with self.lock:
                return dict(self.status)

    return Watch()


def run(arm="default_arm", truth=None, out="out", timeout=900.0, simulator_params=None,
        identify_params=None, log_dir=None, domain_id=None, say=None):
    """-> (exit code of identify, its report dict or None, log folder, the reason it gave on
    /diagnostics when it did not end with 0). say: called with a line at each stage.
    """
    import rclpy

    urdf, arm_configs = processes.arm_files(arm)
    truth_urdf = processes.arm_files(truth)[0] if truth else urdf
    name = processes.arm_name(urdf)
    log_dir = pathlib.Path(log_dir or pathlib.Path(out) / "identify_logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    if domain_id is not None:  # the nodes' and this process's watch
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    env = processes.loop_env()
    common = {"urdf_file": str(urdf), "use_sim_time": True}
    # a 1 kg tool unknown to the controller is 10 N at the hand, and the excitation's
    # accelerations add to it: its observer is off (real_arm_parameters)
    real_arm, controller = real_arm_parameters()
    nodes = processes.ProcessSet()
    code = None
    rclpy.init()
    watch = _watch()
    try:
        nodes.start(
            "computed_torque_controller", [processes.config("controller"), *arm_configs],
            {**common, **controller}, log_dir=log_dir, env=env)
        nodes.start(
            "dynamics_simulator", [processes.config("simulator"), *arm_configs],
            {"urdf_file": str(truth_urdf), **real_arm, **(simulator_params or {})},
            log_dir=log_dir, env=env)
        # the simulator's effort is the torque held over the step before each state
        step = (simulator_params or {}).get("dt", SIMULATOR["dt"].default)
        identify = nodes.start(
            "identify", arm_configs, {**common, "out_dir": str(out), "name": name,
                                      "effort_delay": step / 2, **(identify_params or {})},
            log_dir=log_dir, env=env)
        deadline, said = time.monotonic() + timeout, None
        while identify.running() and time.monotonic() < deadline:
            for node in nodes[:2]:
                if not node.running():
                    raise RuntimeError(f"{node.name} exited early; logs in {log_dir}")
            stage = watch.message()
            if say is not None and stage.get("message") not in (None, said):
                said = stage["message"]
                duration = stage.get("duration_s")
                say(f"{said}: {duration:g} s of simulated time" if duration else said)
            time.sleep(0.2)
        code = identify.proc.poll()
        if code is None:
            raise TimeoutError(f"identify did not end within {timeout:g} s; logs in {log_dir}")
    finally:
        nodes.stop()
        reason = watch.message().get("message")
        watch.close()
        rclpy.try_shutdown()
    path = pathlib.Path(out) / f"identify_{name}.json"
    report = json.loads(path.read_text()) if code == 0 and path.is_file() else None
    return code, report, log_dir, None if code == 0 else reason


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", default="default_arm")
    parser.add_argument("--truth", default=None)
    parser.add_argument("--out", default="out")
    parser.add_argument("--noise", default="", metavar="POSITION,VELOCITY,EFFORT",
                        help="standard deviations of the simulator's measurement noise (rad, "
                             "rad/s, N m), as a real arm's sensors add it; default none")
    args = parser.parse_args(argv)
    simulator_params = {}
    if args.noise:
        try:
            sigmas = [float(x) for x in args.noise.split(",")]
        except ValueError:
            sigmas = []
        if len(sigmas) != 3 or min(sigmas) < 0:
            parser.error(f"--noise takes three standard deviations >= 0, got {args.noise!r}")
        simulator_params = {f"noise.{k}": v for k, v in zip(("position", "velocity", "effort"),
                                                            sigmas)}
    from .demo import check_arm
    for given in filter(None, (args.arm, args.truth)):
        problem = check_arm(given)
        if problem:
            print(f"make identify: {given}: {problem}", file=sys.stderr)
            return 2
    print(f"make identify: the simulator runs {args.truth or args.arm}, the controller and "
          f"identify know {args.arm}", flush=True)
    code, report, log_dir, reason = run(
        args.arm, args.truth, args.out, simulator_params=simulator_params,
        say=lambda line: print(f"  {line}", flush=True))
    if report is None:
        print(f"make identify: {reason or 'no reason given'} (exit code {code}; logs in "
              f"{log_dir})", file=sys.stderr)
        return code or 1
    name = processes.arm_name(processes.arm_files(args.arm)[0])
    print((pathlib.Path(args.out) / f"identify_{name}.md").read_text().split("| base")[0])
    print(f"wrote {args.out}/identified_{name}.urdf, identify_{name}.md, .json, .png and the "
          f"recordings {args.out}/identify_{name}_excitation and _validation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
