"""make teach: teach mode on the simulated arm, end to end, over DDS, the way the `teach` tool
does it on a real one (dyn_control.nodes.teach.TeachClient): the controller goes into mode
teach, ~/teach/record starts, a simulated hand pushes the arm (the simulator's
~/external_wrench: two pushes of PUSH N at the hand, each stamped ahead in simulated time, so
they land where they should whatever the load), the recording stops and is written as a rosbag2
folder, the controller goes back to computed_torque, and the recording is played back through
~/follow_joint_trajectory. Printed: how far the hand moved the arm, how still it stayed once
left, the goal's result and the replay's RMS distance to the taught motion (worst joint), with a
plot of both.

    python -m harness.teach [--arm default_arm] [--out out]
"""

import argparse
import os
import pathlib
import sys

import numpy as np

from . import processes
from .demo import arm_chain, check_arm

PUSH = 5.0  # N, sideways at the hand
PUSHES = ((0.5, 1.3), (2.5, 3.2))  # s of simulated time after the recording starts
REST = 9.0  # s after the start: the arm has come to rest (teach's damping, e^-2t)
TARGET_RMS = 1e-3  # rad: the replay's distance to the taught motion


def sideways(chain, q):
    """A horizontal unit vector across the line from the base to the hand (x if it is above
    the base).
    """
    from dyn_control import kinematics
    _, p = kinematics.frame_pose(chain, q)
    across = np.cross([0.0, 0.0, 1.0], p)
    norm = np.linalg.norm(across)
    return across / norm if norm > 0.1 * np.linalg.norm(p) else np.array([1.0, 0.0, 0.0])


def teach_loop(arm, out, domain=None):
    """The whole scenario -> a dict of what it measured (module docstring)."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped

    from dyn_control.controller import teach
    from dyn_control.nodes import messages
    from dyn_control.nodes.teach import TeachClient

    out = pathlib.Path(out)
    log_dir = out / "logs" / f"teach_{processes.arm_name(arm)}"
    urdf, arm_configs = processes.arm_files(arm)
    chain = arm_chain(arm)  # a tree's joints from its own config file, as make demo's
    if domain is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain)
    common = {"urdf_file": str(urdf)}
    folder = (out / "teach_recordings").resolve()
    rclpy.init()
    node = rclpy.create_node("teach_demo")
    client = TeachClient(node)
    push = node.create_publisher(WrenchStamped, "/dynamics_simulator/external_wrench", 10)
    env = processes.loop_env()
    nodes = processes.ProcessSet()
    try:
        nodes.start(
            "computed_torque_controller", [processes.config("controller"), *arm_configs],
            {**common, "use_sim_time": True, "teach.folder": str(folder)}, log_dir=log_dir,
            env=env)
        nodes.start(
            "dynamics_simulator", [processes.config("simulator"), *arm_configs], common,
            log_dir=log_dir, env=env)
        client.wait_ready(timeout=300.0)  # a first run compiles the kernels
        start_q = client.position(chain.joint_names)
        client.set_mode("teach")
        client.record(True)
        with client.lock:
            t0 = client.latest[1]
        direction = sideways(chain, start_q)
        for (begin, end), sign in zip(PUSHES, (1.0, -1.0)):
            for at, force in ((begin, sign * PUSH * direction), (end, np.zeros(3))):
                msg = WrenchStamped()
                messages.set_stamp(msg.header.stamp, t0 + at)
                (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) = force
                push.publish(msg)
        _until(client, nodes, lambda t: t >= t0 + REST - 2.0, "the pushes")
        left = client.position(chain.joint_names)
        _until(client, nodes, lambda t: t >= t0 + REST, "the rest after the pushes")
        still = float(np.abs(client.position(chain.joint_names) - left).max())
        path = client.record(False)
        client.set_mode("computed_torque")
        with client.lock:
            client.keep, client.kept = True, []
        code, text, points = client.replay(path)
        client.spin_for(1.5)  # the diagnostics after the goal
        with client.lock:
            client.keep = False
            kept, status = list(client.kept), dict(client.status)
    finally:
        codes = nodes.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    t_rec, q_rec = teach.read_motion(path, chain.joint_names)
    replay_t = np.array([t for _, t, _ in kept])
    order = kept[0][0]
    replay_q = np.array([q[[order.index(n) for n in chain.joint_names]] for _, _, q in kept])
    begin = status["trajectory_start_s"] + points[0][0]  # the motion's first waypoint
    played = np.column_stack([np.interp(t_rec - t_rec[0] + begin, replay_t, replay_q[:, j])
                              for j in range(chain.n)])
    rms = np.sqrt(((played - q_rec) ** 2).mean(axis=0))
    return {"path": path, "moved": float(np.abs(q_rec - q_rec[0]).max()), "still": still,
            "code": code, "text": text, "rms": rms, "t": t_rec - t_rec[0], "taught": q_rec,
            "played": played, "names": chain.joint_names, "codes": codes}


def _until(client, nodes, condition, what, timeout=300.0):
    """Spin until condition(latest state time) holds; RuntimeError naming `what` when a node
    died or the time ran out (the synchronous loop stopped).
    """
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        client.spin_for(0.1)
        with client.lock:
            t = client.latest[1]
        if condition(t):
            return
        dead = [n.name for n in nodes if not n.running()]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} stopped during {what}")
    raise RuntimeError(f"the loop did not get through {what} within {timeout:g} s")


def plot(result, path):
    from .plots import figure, joint_colors, legend_outside
    with figure(path, "teach: the taught motion (solid) and its replay (dashed)", 2,
                (11, 6)) as (ax, err):
        for j, (name, color) in enumerate(zip(result["names"], joint_colors(len(result["names"])))):
            ax.plot(result["t"], result["taught"][:, j], color=color, label=name)
            ax.plot(result["t"], result["played"][:, j], "--", color=color)
            err.plot(result["t"], 1e3 * (result["played"][:, j] - result["taught"][:, j]),
                     color=color)
        ax.set_ylabel("rad")
        err.set_ylabel("replay - taught (mrad)")
        err.set_xlabel("s from the recording's start")
        legend_outside(ax)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", default="default_arm")
    parser.add_argument("--out", default="out")
    args = parser.parse_args(argv)
    problem = check_arm(args.arm)
    if problem:  # as make demo says it, before anything starts
        print(f"make teach: {problem}", file=sys.stderr)
        return 1
    try:
        r = teach_loop(args.arm, args.out)
    except (RuntimeError, TimeoutError) as err:
        print(f"make teach: {err} (logs in {args.out}/logs/)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("make teach: stopped", file=sys.stderr)
        return 130
    worst = int(np.argmax(r["rms"]))
    print(f"taught: two {PUSH:g} N pushes moved the arm up to {r['moved']:.3f} rad; once "
          f"left, it moved {1e3 * r['still']:.3f} mrad in 2 s")
    print(f"recorded in {r['path']}")
    print(f"replay: {r['code']}" + (f" ({r['text']})" if r["text"] else "")
          + f"; RMS to the taught motion {r['rms'][worst]:.2e} rad ({r['names'][worst]}, the "
          f"worst joint; target {TARGET_RMS:g})")
    print(f"exit codes after the stop (SIGINT, as Ctrl-C): {r['codes']}")
    path = pathlib.Path(args.out) / f"teach_{processes.arm_name(args.arm)}.png"
    plot(r, path)
    print(f"plot written to {path}")
    ok = r["code"] == "SUCCESSFUL" and r["rms"].max() < TARGET_RMS
    return 0 if ok and all(c == 0 for c in r["codes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
