"""The closed-loop simulated arm, as `make demo` runs it.

    python -m harness.demo [--arm default_arm|two_link|PATH] [--duration 10] [--mode MODE]

With --mode cartesian_impedance (make demo MODE=cartesian) the controller holds the end
effector's pose, cartesian_demo moves its target around a circle, and the simulator pushes it;
on a tree whose parameters file names several ee_links (ARM=dual_arm), both hands are held
while the torso lifts, and one is pushed (harness/bimanual.py).

Starts dynamics_simulator, computed_torque_controller and trajectory_demo as separate processes
with the parameters of config/*.yaml (on simulation time), records the loop for the length of
the trajectory, stops the processes with Ctrl-C, prints per-joint RMS and maximum tracking
error and the controller's compute time, and writes a plot (desired vs actual, error, torque).
"""

import argparse
import contextlib
import os
import pathlib
import sys
import time

import numpy as np

from . import processes

CONTROLLER_NODE = "computed_torque_controller"


def closed_loop(arm="default_arm", duration=10.0, mode=None, log_dir="out", domain_id=None,
                controller_params=None, simulator_params=None, timeout=300.0,
                controller_first=0.0, simulator_remaps=None, helpers=(), demo_params=None,
                model_params=None):
    """Run simulator + controller + demo trajectory; return the recording and exit codes.

    controller_first: seconds the controller runs alone before the simulator starts.
    simulator_remaps: topic remappings of the simulator; helpers: (name, argv) of extra
    processes started after the simulator (fault injectors, load); demo_params: parameters of
    trajectory_demo; model_params: every node's (tip_link, joints).
    Returns a dict: joint_names, start (simulated time the trajectory starts at, s), t (s from
    start), error (k, n), reference (k, n), position (k, n),
    effort (k, n) from the controller's topics over the trajectory, exit_codes, logs, and
    ticks_before_simulator (controller outputs seen while it ran alone).
    """
    import rclpy

    from .recorder import Recorder

    urdf, arm_configs = processes.arm_files(arm)
    common = {"urdf_file": str(urdf), **(model_params or {})}
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
            "computed_torque_controller", [processes.config("controller"), *arm_configs], ctl_params,
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
        # the recorder hears the controller's ticks (it holds before any trajectory) before the
        # trajectory is sent: its subscriptions can match seconds after the controller starts
        # (up to 6 s seen, on an idle machine too), and a volatile topic replays nothing missed
        _wait_for(lambda: _latest(recorder) > -np.inf, nodes, timeout,
                  "the recorder heard no tick on both ~/error and ~/reference")
        nodes.append(processes.NodeProcess(
            "trajectory_demo", [processes.config("demo"), *arm_configs], demo_params, log_dir=log_dir,
            env=env))
        # from the controller's own word (its /diagnostics): the recorder may miss the first
        # moving samples (92 ms of them seen), and the error along the trajectory changes
        # 100-fold within a second, so a start read off the recording would shift every window
        _wait_for(lambda: "trajectory_start_s" in node_status(recorder, CONTROLLER_NODE), nodes,
                  timeout, "no trajectory started")
        start = node_status(recorder, CONTROLLER_NODE)["trajectory_start_s"]
        # synchronous, a loaded machine slows simulated time down (a real-time factor of 0.15
        # with two CPU hogs beside the test suite): the deadline only catches a stopped loop
        deadline = time.monotonic() + duration * 10 + 60
        while _latest(recorder) < start + duration and time.monotonic() < deadline:
            _check_alive(nodes)
            time.sleep(0.1)
        if _latest(recorder) < start + duration:
            raise TimeoutError(f"the loop did not reach the trajectory's end (t = "
                               f"{start + duration:.3f} s) within {duration * 10 + 60:g} s; "
                               f"logs in {log_dir}")
        # the goal's result, which comes as the trajectory ends (none for a topic trajectory)
        if node_status(recorder, "trajectory_demo").get("interface") == "action":
            with contextlib.suppress(TimeoutError):
                _wait_for(lambda: "result" in node_status(recorder, "trajectory_demo"), nodes,
                          10.0, "no goal result")
    finally:
        # last started, first stopped: the simulator goes before the controller, so it does not
        # count the states a stopped controller leaves unanswered
        codes = {node.name: node.stop() for node in reversed(nodes)}
        logs = {node.name: node.log() for node in nodes}
        recorder.close()
        rclpy.try_shutdown()
    t, e, q_d, tau = _paired(recorder)
    window = (t >= start) & (t <= start + duration)
    return {"joint_names": recorder.joint_names, "start": start, "t": t[window] - start,
            "error": e[window], "reference": q_d[window],
            "position": q_d[window] - e[window], "effort": tau[window],
            "exit_codes": codes, "logs": logs, "ticks_before_simulator": ticks_alone,
            "diagnostics": dict(recorder.diagnostics)}


def cartesian_loop(arm="default_arm", log_dir="out", domain_id=None, controller_params=None,
                   demo_params=None, timeout=120.0, model_params=None):
    """Simulator + controller in cartesian_impedance + cartesian_demo; returns the recording:
    the poses, the target poses, the simulator's joint states, the demo's phase times (sim s),
    exit codes, logs and /diagnostics."""
    import rclpy

    from .recorder import Recorder

    urdf, arm_configs = processes.arm_files(arm)
    common = {"urdf_file": str(urdf), **(model_params or {})}
    if domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    rclpy.init()
    recorder = Recorder(cartesian=True)
    env = processes.loop_env()
    nodes = []
    try:
        nodes.append(processes.NodeProcess(
            "dynamics_simulator", [processes.config("simulator"), *arm_configs], common,
            log_dir=log_dir, env=env))
        nodes.append(processes.NodeProcess(
            "computed_torque_controller", [processes.config("controller"), *arm_configs],
            {**common, "use_sim_time": True, "mode": "cartesian_impedance",
             **(controller_params or {})}, log_dir=log_dir, env=env))
        _wait_for(lambda: recorder.pose_series("current_pose")[0].size, nodes, timeout,
                  "no ~/current_pose")  # recording before the demo starts, as closed_loop
        nodes.append(processes.NodeProcess(
            "cartesian_demo", [], {"use_sim_time": True, **(demo_params or {})},
            log_dir=log_dir, env=env))
        demo = lambda: node_status(recorder, "cartesian_demo")  # noqa: E731
        _wait_for(lambda: demo().get("message") == "done", nodes, timeout, "cartesian_demo not done")
        time.sleep(0.5)  # the last poses and a /diagnostics
    finally:
        codes = {node.name: node.stop() for node in reversed(nodes)}
        logs = {node.name: node.log() for node in nodes}
        recorder.close()
        rclpy.try_shutdown()
    phases = {key[:-2]: value for key, value in demo().items() if key.endswith("_s")}
    t, q, _, effort = recorder.series("states")
    return {"pose": recorder.pose_series("current_pose"),
            "target": recorder.pose_series("target_pose"), "states": (t, q, effort),
            "phases": phases, "exit_codes": codes, "logs": logs,
            "diagnostics": dict(recorder.diagnostics)}


def cartesian_figures(result, stiffness, push_force):
    """The demo's figures: the circle's position error (RMS, max, m) and largest orientation
    error (rad) against the target, the displacement from the target at the end of the push
    against F/K (m, per axis: the static stiffness), how far from the target it is at the end
    (m), and the largest torque."""
    from dyn_control.kinematics import quaternion_matrix, rotation_log

    t, p, quat = result["pose"]
    tt, pt, quat_t = result["target"]
    phases = result["phases"]
    # the target in force at each pose stamp: the last one published at or before it
    k = np.clip(np.searchsorted(tt, t, side="right") - 1, 0, len(tt) - 1)
    error = np.linalg.norm(p - pt[k], axis=1)
    rotation = np.array([np.linalg.norm(rotation_log(quaternion_matrix(*a) @ quaternion_matrix(*b).T))
                         for a, b in zip(quat_t[k], quat)])
    circle = (t >= phases["circle"]) & (t <= phases["circle_end"])
    pushed = (t >= phases["push_end"] - 0.2) & (t < phases["push_end"])
    after = t >= phases["end"] - 0.2
    displacement = (p - pt[k])[pushed].mean(axis=0)
    expected = np.asarray(push_force, dtype=float) / np.asarray(stiffness, dtype=float)[:3]
    effort = result["states"][2]
    return {"circle_rms_m": float(np.sqrt(np.mean(error[circle] ** 2))),
            "circle_max_m": float(error[circle].max()),
            "orientation_max_rad": float(rotation[circle].max()),
            "push_displacement_m": displacement, "push_expected_m": expected,
            "released_error_m": float(np.linalg.norm((p - pt[k])[after].mean(axis=0))),
            "torque_max": float(np.abs(effort).max()) if effort.size else float("nan"),
            "t": t, "error": error, "rotation": rotation}


@contextlib.contextmanager
def figure(path, title, rows, size):
    """The axes of `rows` panels over one time axis, saved to `path` (PNG) on leaving."""
    import matplotlib
    matplotlib.use("Agg")  # files only: the demo runs without a display
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, figsize=size, sharex=True)
    yield axes
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_cartesian(result, figures, path):
    t, p, _ = result["pose"]
    tt, pt, _ = result["target"]
    ts, _, effort = result["states"]
    phases = result["phases"]
    t0 = phases["circle"]
    centre = p[(t >= t0 - 0.5) & (t < t0)].mean(axis=0)
    title = "dyn_control cartesian_impedance: circle of targets, then a push"
    with figure(path, title, 4, (11, 12)) as axes:
        for j, axis in enumerate("xyz"):
            axes[0].plot(tt - t0, 1e3 * (pt[:, j] - centre[j]), "--", color=f"C{j}", lw=1)
            axes[0].plot(t - t0, 1e3 * (p[:, j] - centre[j]), color=f"C{j}", lw=1, label=axis)
        axes[0].set_ylabel("end effector from the start (mm)\nsolid actual, dashed target")
        axes[0].legend(ncol=3, fontsize=8, loc="upper right")
        axes[1].plot(t - t0, 1e3 * figures["error"], label="position error (mm)")
        axes[1].plot(t - t0, 1e3 * figures["rotation"], label="orientation error (mrad)")
        axes[1].legend(fontsize=8, loc="upper right")
        before = (t >= phases["push"] - 0.5) & (t < phases["push"])
        start = p[before].mean(axis=0)
        for j, axis in enumerate("xyz"):
            axes[2].plot(t - t0, 1e3 * (p[:, j] - start[j]), color=f"C{j}", lw=1,
                         label=f"{axis} displacement")
            axes[2].axhline(1e3 * figures["push_expected_m"][j], color=f"C{j}", ls=":", lw=1)
        axes[2].axvspan(phases["push"] - t0, phases["push_end"] - t0, color="0.9")
        axes[2].set_ylabel("displacement (mm)\ndotted F/K, shaded: the push")
        axes[2].set_xlim(left=-0.5)
        axes[2].legend(fontsize=8, loc="upper right")
        for j in range(effort.shape[1] if effort.size else 0):
            axes[3].plot(ts - t0, effort[:, j], lw=1)
        axes[3].set_ylabel("torque (N m)")
        axes[3].set_xlabel("time since the circle's start (s)")


def cartesian_main(args, out, domain):
    from dyn_control.parameters import CARTESIAN_DEMO, CONTROLLER

    from .bimanual import arm_ee_links, bimanual_main
    if arm_ee_links(processes.arm_files(args.arm)[1]):  # a tree whose file names both hands
        return bimanual_main(args.arm, out, domain)
    result = cartesian_loop(args.arm, out, domain, model_params=model_params(args))
    stiffness = CONTROLLER["cartesian_stiffness"].default
    force = CARTESIAN_DEMO["push_force"].default
    f = cartesian_figures(result, stiffness, force)
    print(f"\ncircle of {CARTESIAN_DEMO['radius'].default * 100:g} cm: position error RMS "
          f"{f['circle_rms_m'] * 1e3:.2f} mm, max {f['circle_max_m'] * 1e3:.2f} mm (an impedance "
          f"lags a moving target by D v / K); orientation error max "
          f"{f['orientation_max_rad'] * 1e3:.2f} mrad")
    print(f"push of {force} N: displacement from the target "
          f"{np.round(f['push_displacement_m'] * 1e3, 3).tolist()} mm against F/K "
          f"{np.round(f['push_expected_m'] * 1e3, 3).tolist()} mm; {f['released_error_m'] * 1e3:.3f} "
          "mm from it at the end")
    print(f"largest torque {f['torque_max']:.1f} N m")
    print("\ncontroller " + status_line(result["diagnostics"], "computed_torque_controller",
                                         CONTROLLER_LINE))
    print("simulator " + status_line(result["diagnostics"], "dynamics_simulator", SIMULATOR_LINE))
    print(f"exit codes after Ctrl-C: {result['exit_codes']}")
    path = out / f"demo_{pathlib.Path(args.arm).name.split('.')[0]}_cartesian.png"
    plot_cartesian(result, f, path)
    print(f"plot written to {path}")
    return 0 if all(c == 0 for c in result["exit_codes"].values()) else 1


def _paired(recorder):
    """(t, error, reference, effort) of the ticks both ~/error and ~/reference were recorded
    on, by stamp: a starved recorder misses stretches of each, not the same ones."""
    t, e, _, _ = recorder.series("errors")
    tr, q_d, _, tau = recorder.series("references")
    t, i, k = np.intersect1d(t, tr, return_indices=True)
    return t, e[i], q_d[k], tau[k]


def _latest(recorder):
    """The newest tick recorded on both topics (the run ends when it reaches the end)."""
    t = _paired(recorder)[0]
    return t[-1] if t.size else -np.inf


def _check_alive(nodes):
    """RuntimeError for a node that exited: its code and the last line it said, then its log."""
    for node in nodes:
        if not node.running():
            log = node.log()
            last = next((line for line in reversed(log.splitlines()) if line.strip()), "")
            raise RuntimeError(f"{node.name} exited with code {node.proc.returncode}: {last}\n"
                               f"{log[-2000:]}")


def _wait_for(found, nodes, timeout, what):
    """found()'s first true value, polled while the nodes live; TimeoutError says what."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _check_alive(nodes)
        value = found()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"{what} within {timeout} s; logs in {nodes[0].log_path.parent}")


def node_status(recorder, node):
    """A node's newest /diagnostics status as the recorder heard it: its values, and its
    message under "message" ({} before any)."""
    with recorder.lock:
        return dict(recorder.diagnostics.get(node, {}))


def spans(t, end, bins=4):
    """Whether recorded times t have a sample in each of `bins` equal parts of [0, end]: the
    recording covers the run (that the loop reached `end`, closed_loop checks). A recorder on a
    loaded machine misses ticks, whole stretches of them (the controller's publishers keep 10
    samples for a lagging subscriber; with two CPU hogs beside the suite a recorder missed 1.5 s
    of a 10 s run, and the last 1.5 s of a 6 s one), so a count of samples, a largest gap or
    the last sample's time would measure the recorder, not the loop."""
    counts, _ = np.histogram(t, bins=bins, range=(0.0, end))
    return len(t) > 0 and counts.min() > 0


FAULT_COUNTS = {CONTROLLER_NODE: ("stale_state_events",),
                "dynamics_simulator": ("blowups", "command_timeouts")}


def faults(result):
    """{node.counter: count} of the watchdogs and blow-ups that fired, from each node's last
    /diagnostics status ({} when none did; a node that reported nothing counts as a fault)."""
    found = {}
    for node, keys in FAULT_COUNTS.items():
        values = result["diagnostics"].get(node)
        if values is None:
            found[node] = "no /diagnostics"
            continue
        found.update({f"{node}.{key}": values[key] for key in keys if values[key]})
    return found


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


DEMO_LINE = ("sent {points:.0f} points over {duration_s:.1f} s ({interface}); goal result: "
             "{result}: {result_string}")


def status_line(diagnostics, node, line):
    """A node's last /diagnostics status, written out as `line` (a format of its keys)."""
    values = diagnostics.get(node)
    try:
        return line.format(**values) if values else f"{node}: no diagnostics received"
    except KeyError as missing:
        return f"{node}: {values.get('message')} (no {missing} yet)"


def plot(result, path):
    t, names = result["t"], result["joint_names"]
    title = "dyn_control closed loop: simulator + computed-torque controller"
    with figure(path, title, 3, (11, 10)) as axes:
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


def model_params(args):
    """The nodes' tip_link and joints from make demo's TIP= and JOINTS=."""
    params = {}
    if args.tip:
        params["tip_link"] = args.tip
    if args.joints:
        params["joints"] = args.joints.split(",")
    return params


def check_arm(arm, tip=None, joints=None):
    """Why make demo cannot run `arm` with TIP= and JOINTS=, in one line; None if it can.
    The nodes would refuse the same URDF, each in its own log, after seconds of start-up."""
    import warnings

    import yaml

    from dyn_control.model import AmbiguousTip, URDFError, load_chain
    urdf, configs = processes.arm_files(arm)
    for path in configs:  # the arm's own file (config/dual_arm.yaml) names them for every node
        given = (yaml.safe_load(path.read_text()) or {}).get("/**", {}).get("ros__parameters", {})
        tip, joints = tip or given.get("tip_link"), joints or ",".join(given.get("joints", []))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            load_chain(urdf, tip_link=tip or None, joints=joints.split(",") if joints else None)
    except AmbiguousTip as err:
        if len(err.ends) > 2:
            return (f"{len(err.ends)} limbs end at {err.ends}: a legged or many-limbed robot, "
                    "out of scope (dyn_control controls fixed-base arms; one limb bolted down "
                    "can run with TIP=LINK or JOINTS=J1,J2,...)")
        return str(err.choose_with("choose one with TIP=LINK, or both with JOINTS=J1,J2,... "
                                   "(python -m dyn_control.inspect ARM.urdf shows the tree)"))
    except (URDFError, OSError) as err:
        return str(err)
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", default="default_arm")
    parser.add_argument("--tip", default="", help="the arm's tip link (make demo TIP=)")
    parser.add_argument("--joints", default="", help="comma-separated joints (make demo JOINTS=)")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--mode", default=None, help="controller mode (default: config)")
    parser.add_argument("--out", default="out")
    args = parser.parse_args(argv)
    problem = check_arm(args.arm, args.tip or None, args.joints or None)
    if problem:
        print(f"make demo: {args.arm}: {problem}", file=sys.stderr)
        return 2
    try:
        return run_demo(args)
    except (RuntimeError, TimeoutError) as err:  # a node died, or the loop never started
        print(f"make demo: {str(err).splitlines()[0]} (logs in {args.out}/)", file=sys.stderr)
        return 1


def run_demo(args):
    out = pathlib.Path(args.out)
    domain = int(os.environ.get("ROS_DOMAIN_ID", 77))
    print(f"starting simulator, controller and trajectory on {args.arm} "
          f"(ROS_DOMAIN_ID={domain}, logs in {out}/)", flush=True)
    if args.mode in ("cartesian", "cartesian_impedance"):
        return cartesian_main(args, out, domain)
    result = closed_loop(args.arm, args.duration, args.mode, out, domain,
                         model_params=model_params(args))
    rms, worst = tracking_figures(result)
    print(f"\ntracking over {result['t'][-1]:.1f} s of trajectory "
          f"({len(result['t'])} of the controller's ticks recorded):")
    width = max(10, *map(len, result["joint_names"]))
    print(f"  {'joint':{width}} {'RMS error (rad)':>16} {'max error (rad)':>16}")
    for name, r, w in zip(result["joint_names"], rms, worst):
        print(f"  {name:{width}} {r:16.2e} {w:16.2e}")
    print("\ncontroller " + status_line(result["diagnostics"], "computed_torque_controller",
                                         CONTROLLER_LINE))
    print("simulator " + status_line(result["diagnostics"], "dynamics_simulator", SIMULATOR_LINE))
    print(f"exit codes after Ctrl-C: {result['exit_codes']}")
    print("trajectory_demo " + status_line(result["diagnostics"], "trajectory_demo", DEMO_LINE))
    path = out / f"demo_{pathlib.Path(args.arm).name.split('.')[0]}.png"
    plot(result, path)
    print(f"plot written to {path}")
    demo = result["diagnostics"].get("trajectory_demo", {})
    reached = demo.get("interface") == "topic" or demo.get("result") == "SUCCESSFUL"
    if not reached:
        print(f"the goal did not succeed: {demo.get('result', 'no result')}")
    return 0 if reached and all(c == 0 for c in result["exit_codes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
