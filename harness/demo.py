"""The closed-loop simulated arm, as `make demo` runs it.

    python -m harness.demo [--arm default_arm|two_link|two_arms|PATH] [--duration 10] [--mode MODE]

With --mode contact (make demo MODE=contact) a push and a collision come during the trajectory,
and the controller's estimate is compared with the simulator's truth (harness/contact.py).

With --arm two_arms (make demo ARM=two_arms) two arms share one world, one simulator and one
/clock, each with its controller and its goal in its namespace (harness/world.py).

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
import os
import pathlib
import signal
import sys
import time

import numpy as np

from . import processes
from .bag import logs_folder, run_folder, summary
from .loop import cartesian_loop, closed_loop
from .metrics import (
    CONTROLLER_LINE,
    DEMO_LINE,
    SIMULATOR_LINE,
    cartesian_figures,
    status_line,
    tracking_figures,
)
from .plots import plot, plot_cartesian
from .world import WORLD, world_main, world_robots


def cartesian_main(args, out, domain):
    from dyn_control.parameters import CARTESIAN_DEMO, CONTROLLER

    from .bimanual import arm_ee_links, bimanual_main
    if arm_ee_links(processes.arm_files(args.arm)[1]):  # a tree whose file names both hands
        return bimanual_main(args.arm, out, domain)
    bag = run_folder(out, args.arm, "cartesian")
    result = cartesian_loop(args.arm, logs_folder(bag), domain, model_params=model_params(args),
                            bag=bag)
    stiffness = CONTROLLER["cartesian_stiffness"].default
    force = CARTESIAN_DEMO["push_force"].default
    f = cartesian_figures(result, stiffness, force)
    print(f"\ncircle of {CARTESIAN_DEMO['radius'].default * 100:g} cm: position error RMS "
          f"{f['circle_rms_m'] * 1e3:.2f} mm, max {f['circle_max_m'] * 1e3:.2f} mm (an impedance "
          f"lags a moving target by D v / K); orientation error max "
          f"{f['orientation_max_rad'] * 1e3:.2f} mrad")
    print(f"push of {force} N: displacement from the target "
          f"{np.round(f['push_displacement_m'] * 1e3, 3).tolist()} mm against F/K "
          f"{np.round(f['push_expected_m'] * 1e3, 3).tolist()} mm; "
          f"{f['released_error_m'] * 1e3:.3f} "
          "mm from it at the end")
    print(f"largest torque {f['torque_max']:.1f} N m")
    print("\ncontroller " + status_line(result["diagnostics"], "computed_torque_controller",
                                         CONTROLLER_LINE))
    print("simulator " + status_line(result["diagnostics"], "dynamics_simulator", SIMULATOR_LINE))
    print(f"exit codes after the stop (SIGINT, as Ctrl-C): {result['exit_codes']}")
    print(summary(bag, result["bag"]))
    path = out / f"demo_{processes.arm_name(args.arm)}_cartesian.png"
    plot_cartesian(result, f, path)
    print(f"plot written to {path}")
    return 0 if all(c == 0 for c in result["exit_codes"].values()) else 1


def model_params(args):
    """The nodes' tip_link and joints from make demo's TIP= and JOINTS=."""
    params = {}
    if args.tip:
        params["tip_link"] = args.tip
    if args.joints:
        params["joints"] = args.joints.split(",")
    return params


def arm_chain(arm, tip=None, joints=None):
    """The chain make demo runs for `arm` (a name or a path), its own config file's tip_link
    or joints unless TIP= or JOINTS= give them; URDFError (AmbiguousTip) or OSError as
    load_chain raises them.
    """
    import warnings

    from dyn_control.model.chain import load_chain
    urdf, configs = processes.arm_files(arm)
    for path in configs:  # the arm's own file (config/dual_arm.yaml) names them for every node
        given = processes.node_parameters(path)  # what it gives every node
        tip, joints = tip or given.get("tip_link"), joints or ",".join(given.get("joints", []))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_chain(urdf, tip_link=tip or None, joints=joints.split(",") if joints else None)


def check_arm(arm, tip=None, joints=None):
    """Why make demo cannot run `arm` with TIP= and JOINTS=, in one line; None if it can.
    The nodes would refuse the same URDF, each in its own log, after seconds of start-up.
    """
    from dyn_control.model.chain import AmbiguousTip, URDFError, refused_limits
    try:
        chain = arm_chain(arm, tip, joints)
    except AmbiguousTip as err:
        if len(err.ends) > 2:
            return (f"{len(err.ends)} limbs end at {err.ends}: a legged or many-limbed robot, "
                    "out of scope (dyn_control controls fixed-base arms; one limb bolted down "
                    "can run with TIP=LINK or JOINTS=J1,J2,...)")
        return str(err.choose_with("choose one with TIP=LINK, or both with JOINTS=J1,J2,... "
                                   "(python -m dyn_control.describe ARM.urdf shows the tree)"))
    except (URDFError, OSError) as err:
        return str(err)
    return refused_limits(chain)


def check_task(arm, mode, tip=None, joints=None):
    """Why the arm cannot do MODE's task, in one line; None if it can. The Cartesian demo
    circles in the base's y-z plane and pushes along x, the contact demo pushes in y-z and
    collides along x: the hand must move in all three directions at the start pose, or the
    figures measure what the arm cannot do (the planar 2R arm read 73 % off the push, 64 mm
    off the circle).
    """
    import warnings

    from dyn_control.controller.observer import SINGULAR_VALUE
    from dyn_control.kinematics import frame_jacobian
    from dyn_control.model.chain import load_chain
    from dyn_control.poses import default_initial_positions

    from .bimanual import arm_ee_links
    if mode not in ("cartesian", "cartesian_impedance", "contact"):
        return None
    urdf, configs = processes.arm_files(arm)
    hands = arm_ee_links(configs)
    limb = {"tip_links": hands} if hands else {
        "tip_link": tip, "joints": joints.split(",") if joints else None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = load_chain(urdf, **limb)
    q = default_initial_positions(chain)
    given, order = None, joints.split(",") if joints else list(chain.joint_names)
    for path in configs:  # the simulator's start in the arm's own file (joints order)
        node = processes.node_parameters(path, "dynamics_simulator")
        given, order = node.get("initial_positions", given), node.get("joints", order)
    if given is not None:
        q = np.array([given[order.index(name)] for name in chain.joint_names])
    for link in hands or [chain.tip_link]:
        moves = np.linalg.svd(frame_jacobian(chain, q, link)[:3], compute_uv=False)
        rank = int((moves > SINGULAR_VALUE).sum())
        if rank < 3:
            return (f"MODE={mode} needs a hand that moves in all three directions of the base "
                    f"frame; {link} moves in {rank} at the start pose (its Jacobian's position "
                    "rows have that rank): the demo circles in y-z and pushes along x")
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", default="default_arm")
    parser.add_argument("--tip", default="", help="the arm's tip link (make demo TIP=)")
    parser.add_argument("--joints", default="", help="comma-separated joints (make demo JOINTS=)")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--mode", default=None, help="controller mode (default: config)")
    parser.add_argument("--out", default="out")
    parser.add_argument("--view-port", type=int, default=None,
                        help="serve the live 3D view on this port (make demo VIEW=1)")
    args = parser.parse_args(argv)
    from dyn_control.parameters import MODES
    modes = (*MODES, "cartesian", "cartesian_impedance", "contact")  # the controller's, the demos'
    if args.mode is not None and args.mode not in modes:
        print(f"make demo: MODE={args.mode} is not one of {', '.join(modes)}", file=sys.stderr)
        return 2
    if args.arm == WORLD:  # not a file: the world is made of the default arm
        problem = (f"MODE={args.mode} is not one of ARM={WORLD}'s: each arm tracks its own "
                   "trajectory" if args.mode else
                   "TIP= and JOINTS= are each arm's own in it" if args.tip or args.joints
                   else None)
    else:
        problem = (check_arm(args.arm, args.tip or None, args.joints or None)
                   or check_task(args.arm, args.mode, args.tip or None, args.joints or None))
    if problem:
        print(f"make demo: {args.arm}: {problem}", file=sys.stderr)
        return 2
    view = None
    if args.view_port is not None:
        from .view import PortInUse, check_port
        try:
            check_port(args.view_port)
        except PortInUse as err:
            print(f"make demo VIEW=1: {err}", file=sys.stderr)
            return 2
    # SIGTERM as Ctrl-C: every process started is stopped (its default ended this one alone,
    # and the view, in a session of its own, served on for good)
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        if args.view_port is not None:
            view = start_view(args)
        try:
            code = run_demo(args)
        except (RuntimeError, TimeoutError) as err:  # a node died, or the loop never started
            print(f"make demo: {str(err).splitlines()[0]} (logs in {args.out}/logs/)",
                  file=sys.stderr)
            code = 1
        if view is not None:
            hold_view(view, args.view_port)
        return code
    except KeyboardInterrupt:
        print("make demo: stopped", file=sys.stderr)
        return 130
    finally:
        if view is not None:
            view.stop()


def _interrupted(*_):
    raise KeyboardInterrupt


def start_view(args):
    """harness.view in a process of its own, on the demo's ROS domain."""
    extra = []
    if args.arm == WORLD:  # the world's file, and each arm's topics
        text, joints, _ = world_robots()
        urdf = pathlib.Path(args.out) / f"{WORLD}.urdf"
        urdf.parent.mkdir(parents=True, exist_ok=True)
        urdf.write_text(text)
        extra = ["--namespaces", ",".join(joints)]
    else:
        urdf = processes.arm_files(args.arm)[0]
    view = processes.NodeProcess(
        "view", log_dir=args.out, argv=[sys.executable, "-m", "harness.view", "--urdf", str(urdf),
                                        "--port", str(args.view_port), *extra],
        domain_id=int(os.environ.get("ROS_DOMAIN_ID", 77)))
    print(f"3D view: open http://localhost:{args.view_port} (it shows the arm once the "
          "simulator runs)", flush=True)
    return view


def hold_view(view, port):
    """After the run the view keeps the last pose, until Ctrl-C."""
    if view.running():
        print(f"\nthe 3D view stays at http://localhost:{port}: Ctrl-C to end", flush=True)
        try:
            while view.running():
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    code = view.stop()
    if code not in (0, None):
        print(f"the view exited with code {code}: {view.log().strip().splitlines()[-1:]}")


def run_demo(args):
    out = pathlib.Path(args.out)
    domain = int(os.environ.get("ROS_DOMAIN_ID", 77))
    task = {"cartesian": "Cartesian targets", "cartesian_impedance": "Cartesian targets",
            "contact": "trajectory and pushes"}.get(args.mode, "trajectory")
    print(f"starting simulator, controller and {task} on {args.arm} "
          f"(ROS_DOMAIN_ID={domain}, logs in {out}/logs/)", flush=True)
    if args.arm == WORLD:
        return world_main(out, domain, args.duration)
    if args.mode in ("cartesian", "cartesian_impedance"):
        return cartesian_main(args, out, domain)
    if args.mode == "contact":
        from .contact import contact_main
        return contact_main(args, out, domain)
    bag = run_folder(out, args.arm, args.mode)
    result = closed_loop(args.arm, args.duration, args.mode, logs_folder(bag), domain,
                         model_params=model_params(args), bag=bag)
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
    print(f"exit codes after the stop (SIGINT, as Ctrl-C): {result['exit_codes']}")
    print("trajectory_demo " + status_line(result["diagnostics"], "trajectory_demo", DEMO_LINE))
    print(summary(bag, result["bag"]))
    path = out / f"demo_{processes.arm_name(args.arm)}.png"
    from dyn_control import load_chain
    joints = load_chain(processes.arm_files(args.arm)[0], joints=result["joint_names"]).joints
    plot(result, path, prismatic=[j.name for j in joints if j.type == "prismatic"])
    print(f"plot written to {path}")
    demo = result["diagnostics"].get("trajectory_demo", {})
    reached = demo.get("interface") == "topic" or demo.get("result") == "SUCCESSFUL"
    if not reached:
        print(f"the goal did not succeed: {demo.get('result', 'no result')}")
    return 0 if reached and all(c == 0 for c in result["exit_codes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
