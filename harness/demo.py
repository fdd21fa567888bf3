"""The closed-loop simulated arm, as `make demo` runs it.

    python -m harness.demo [--arm default_arm|two_link|PATH] [--duration 10] [--mode MODE]

Starts dynamics_simulator, computed_torque_controller and trajectory_demo as separate processes
with the parameters of config/*.yaml (on simulation time), records the loop for the length of
the trajectory, stops the processes with Ctrl-C, prints per-joint RMS and maximum tracking
error and the controller's compute time, and writes a plot (desired vs actual, error, torque).
"""

import argparse
import os
import pathlib
import time

import numpy as np

from . import processes


def closed_loop(arm="default_arm", duration=10.0, mode=None, log_dir="out", domain_id=None,
                controller_params=None, simulator_params=None, timeout=90.0,
                controller_first=0.0, simulator_remaps=None, helpers=(), demo_params=None):
    """Run simulator + controller + demo trajectory; return the recording and exit codes.

    controller_first: seconds the controller runs alone before the simulator starts.
    simulator_remaps: topic remappings of the simulator; helpers: (name, argv) of extra
    processes started after the simulator (fault injectors, load); demo_params: parameters of
    trajectory_demo.
    Returns a dict: joint_names, t, error (k, n), reference (k, n), position (k, n),
    effort (k, n) from the controller's topics over the trajectory, exit_codes, logs, and
    ticks_before_simulator (controller outputs seen while it ran alone).
    """
    import rclpy

    from .recorder import Recorder

    urdf, arm_configs = processes.arm_files(arm)
    common = {"urdf_file": str(urdf)}
    sim_params = {**common, **(simulator_params or {})}
    ctl_params = {**common, "use_sim_time": True, **(controller_params or {})}
    if mode:
        ctl_params["mode"] = mode
    demo_params = {**common, "use_sim_time": True, "duration": float(duration),
                   **(demo_params or {})}
    if domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    rclpy.init()
    recorder = Recorder()
    env = processes.loop_env()
    nodes = []
    ticks_alone = 0
    try:
        nodes.append(processes.NodeProcess(
            "computed_torque_controller", [processes.config("controller")], ctl_params,
            log_dir=log_dir, env=env))
        if controller_first:
            time.sleep(controller_first)
            _check_alive(nodes)
            ticks_alone = len(recorder.series("errors")[0])
        nodes.append(processes.NodeProcess(
            "dynamics_simulator", [processes.config("simulator"), *arm_configs], sim_params,
            remaps=simulator_remaps, log_dir=log_dir, env=env))
        for name, argv in helpers:
            nodes.append(processes.NodeProcess(name, log_dir=log_dir, env=env, argv=argv))
        nodes.append(processes.NodeProcess(
            "trajectory_demo", [processes.config("demo")], demo_params, log_dir=log_dir, env=env))
        start = _wait_for_motion(recorder, nodes, timeout)
        deadline = time.monotonic() + duration * 3 + 30
        while _latest(recorder) < start + duration and time.monotonic() < deadline:
            _check_alive(nodes)
            time.sleep(0.1)
    finally:
        # last started, first stopped: the simulator goes before the controller, so it does not
        # count the states a stopped controller leaves unanswered
        codes = {node.name: node.stop() for node in reversed(nodes)}
        logs = {node.name: node.log() for node in nodes}
        recorder.close()
        rclpy.try_shutdown()
    t, e, _, _ = recorder.series("errors")
    tr, q_d, _, tau = recorder.series("references")
    k = min(len(t), len(tr))
    window = (t[:k] >= start) & (t[:k] <= start + duration)
    return {"joint_names": recorder.joint_names, "t": t[:k][window] - start,
            "error": e[:k][window], "reference": q_d[:k][window],
            "position": q_d[:k][window] - e[:k][window], "effort": tau[:k][window],
            "exit_codes": codes, "logs": logs, "ticks_before_simulator": ticks_alone,
            "diagnostics": dict(recorder.diagnostics)}


def _latest(recorder):
    t = recorder.series("errors")[0]
    return t[-1] if t.size else -np.inf


def _check_alive(nodes):
    for node in nodes:
        if not node.running():
            raise RuntimeError(f"{node.name} exited with code {node.proc.returncode}:\n{node.log()[-2000:]}")


def _wait_for_motion(recorder, nodes, timeout):
    """Time (sim s) at which the controller's reference starts to move."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _check_alive(nodes)
        t, _, qd_d, _ = recorder.series("references")
        moving = np.flatnonzero(np.abs(qd_d).max(axis=1) > 0) if t.size else []
        if len(moving):
            return t[moving[0]] - 0.02  # the trajectory began at the state before the first motion
        time.sleep(0.1)
    raise TimeoutError(f"no trajectory motion within {timeout} s; logs in {nodes[0].log_path.parent}")


def tracking_figures(result):
    """Per-joint RMS and max |error| (rad)."""
    e = result["error"]
    return np.sqrt(np.mean(e**2, axis=0)), np.max(np.abs(e), axis=0)


CONTROLLER_LINE = ("compute time over the last {compute_window_ticks:.0f} ticks: p50 "
                   "{compute_p50_us} us, p99 {compute_p99_us} us, max {compute_max_us} us "
                   "({ticks:.0f} ticks, {saturated_ticks:.0f} saturated, "
                   "{stale_state_events:.0f} stale-state events)")
SIMULATOR_LINE = ("deadlines: {states:.0f} states, {missed:.0f} missed, {deadlines_met_percent} % "
                  "met; real-time factor {real_time_factor}; {blowups:.0f} blow-ups, "
                  "{command_timeouts:.0f} command timeouts")


def status_line(diagnostics, node, line):
    """A node's last /diagnostics status, written out as `line` (a format of its keys)."""
    values = diagnostics.get(node)
    return line.format(**values) if values else f"{node}: no diagnostics received"


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, names = result["t"], result["joint_names"]
    fig, axes = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    for j, name in enumerate(names):
        color = f"C{j}"
        axes[0].plot(t, result["reference"][:, j], "--", color=color, lw=1)
        axes[0].plot(t, result["position"][:, j], color=color, lw=1, label=name)
        axes[1].plot(t, 1e3 * result["error"][:, j], color=color, lw=1)
        axes[2].plot(t, result["effort"][:, j], color=color, lw=1)
    axes[0].set_ylabel("position (rad)\nsolid actual, dashed desired")
    axes[0].legend(ncol=len(names), fontsize=8, loc="upper right")
    axes[1].set_ylabel("error (mrad)")
    axes[2].set_ylabel("torque (N m)")
    axes[2].set_xlabel("time since trajectory start (s)")
    fig.suptitle("dyn_control closed loop: simulator + computed-torque controller")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", default="default_arm")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--mode", default=None, help="controller mode (default: config)")
    parser.add_argument("--out", default="out")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    domain = int(os.environ.get("ROS_DOMAIN_ID", 77))
    print(f"starting simulator, controller and trajectory on {args.arm} "
          f"(ROS_DOMAIN_ID={domain}, logs in {out}/)", flush=True)
    result = closed_loop(args.arm, args.duration, args.mode, out, domain)
    rms, worst = tracking_figures(result)
    print(f"\ntracking over {result['t'][-1]:.1f} s of trajectory "
          f"({len(result['t'])} controller ticks):")
    print(f"  {'joint':10} {'RMS error (rad)':>16} {'max error (rad)':>16}")
    for name, r, w in zip(result["joint_names"], rms, worst):
        print(f"  {name:10} {r:16.2e} {w:16.2e}")
    print("\ncontroller " + status_line(result["diagnostics"], "computed_torque_controller",
                                         CONTROLLER_LINE))
    print("simulator " + status_line(result["diagnostics"], "dynamics_simulator", SIMULATOR_LINE))
    print(f"exit codes after Ctrl-C: {result['exit_codes']}")
    sent = [line.split("]: ", 1)[-1] for line in result["logs"]["trajectory_demo"].splitlines()
            if "goal result" in line or "sent " in line]
    print("trajectory_demo: " + "; ".join(sent))
    path = out / f"demo_{pathlib.Path(args.arm).name.split('.')[0]}.png"
    plot(result, path)
    print(f"plot written to {path}")
    return 0 if all(c == 0 for c in result["exit_codes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
