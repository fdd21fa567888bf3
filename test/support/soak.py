"""Soak run: the closed loop, synchronous and as fast as it goes, at 1 kHz for a long stretch of
simulated time.

    python test/support/soak.py SECONDS [DOMAIN]     (test_soak.py runs it; also usable by hand)

Starts dynamics_simulator (synchronous, real_time_factor 0) and computed_torque_controller as
processes with the config/*.yaml parameters, sends one slow trajectory as long as the run, samples
the controller's error on ~/controller_state (50 Hz of state time, reliable, a deep queue: at 1 kHz
a sampler starved by a busy machine missed stretches of ~/error, and an RMS over what it caught
measured the sampler, 1.57x where the loop gave 1.23x), reads the
resident memory of both processes from /proc every 2 s of wall time, and prints one JSON line:
{"sim_seconds", "wall_seconds", "rss_mb": {name: [samples]}, "window_s",
"rms_per_window": [[n], ...]}: the RMS error per minute, or per third of a shorter run.
"""

import json
import pathlib
import sys
import tempfile
import time

import numpy as np
import rclpy
from control_msgs.msg import JointTrajectoryControllerState

from dyn_control.nodes import messages

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # the source tree
from harness import processes  # noqa: E402


def rss_mb(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(seconds, domain):
    urdf, arm_configs = processes.arm_files("default_arm")
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix="soak_"))
    rclpy.init(domain_id=domain)
    node = rclpy.create_node("soak_sampler")
    samples = []
    # (the synchronous loop does not wait for this subscriber: a lagging one loses samples,
    # it never slows the loop)
    node.create_subscription(JointTrajectoryControllerState,
                             "/computed_torque_controller/controller_state",
                             lambda m: samples.append((messages.to_seconds(m.header.stamp),
                                                       np.array(m.error.positions))), 1000)
    common = {"urdf_file": str(urdf)}
    nodes = [
        processes.NodeProcess("dynamics_simulator", [processes.config("simulator"), *arm_configs],
                              {**common, "real_time_factor": 0.0}, log_dir=log_dir,
                              domain_id=domain),
        processes.NodeProcess("computed_torque_controller", [processes.config("controller")],
                              {**common, "use_sim_time": True},
                              log_dir=log_dir, domain_id=domain),
        processes.NodeProcess("trajectory_demo", [processes.config("demo")],
                              {**common, "use_sim_time": True, "duration": float(seconds) + 5,
                               "points_per_second": 10.0}, log_dir=log_dir, domain_id=domain),
    ]
    rss = {n.name: [] for n in nodes[:2]}
    start = time.monotonic()
    next_rss = start
    try:
        while not samples or samples[-1][0] < seconds:
            rclpy.spin_once(node, timeout_sec=0.05)
            if time.monotonic() >= next_rss:
                next_rss += 2.0
                for n in nodes[:2]:
                    if not n.running():
                        raise RuntimeError(f"{n.name} died:\n{n.log()[-2000:]}")
                    rss[n.name].append(rss_mb(n.proc.pid))
            if time.monotonic() - start > 20 * seconds + 120:
                raise TimeoutError("soak made no progress")
    finally:
        codes = {n.name: n.stop() for n in nodes}
        node.destroy_node()
        rclpy.try_shutdown()
    t = np.array([s[0] for s in samples])
    e = np.array([s[1] for s in samples])
    # minutes, or thirds of a run shorter than three minutes: a first and a last to compare
    window = 60.0 if seconds >= 180 else seconds / 3
    windows = [e[(t >= w) & (t < w + window)] for w in np.arange(0.0, seconds - 1e-9, window)]
    print(json.dumps({
        "sim_seconds": float(t[-1]), "wall_seconds": time.monotonic() - start,
        "samples": len(t), "rss_mb": rss, "exit_codes": codes,
        "window_s": window,
        "rms_per_window": [np.sqrt((w**2).mean(axis=0)).tolist() for w in windows if len(w)],
    }))


if __name__ == "__main__":
    main(float(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 75)
