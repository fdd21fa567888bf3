"""make demo MODE=contact: the default arm runs the demo trajectory, a known push comes midway and
later a collision; the controller's estimate is printed and plotted against the simulator's
truth.

On simulation time, from the trajectory's start: a push of PUSH N at the hand from 3.0 to 4.5 s
(over the 10 N contact level, under every collision level), then COLLISION N from 6.0 s until
the goal has ended. The controller publishes its estimate at 1 kHz here (100 Hz by default), so
the detection time is read to the millisecond from ~/external_joint_torques. Its sign is
franka_ros2's (what the robot applies); the truth, ~/applied_external_joint_torques, is what the
push applies: the figures compare the estimate with minus the truth.
"""

import json
import math
import pathlib
import time

import numpy as np

from . import processes
from .metrics import CONTROLLER_LINE, DEMO_LINE, SIMULATOR_LINE, status_line
from .plots import figure

PUSH = np.array([0.0, 10.0, -10.0, 0.0, 0.0, 0.0])  # N, base axes: 14.1 N
COLLISION = np.array([60.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # N: 44 N m on joint2 at the bent pose
CONTROLLER, SIMULATOR = "/computed_torque_controller", "/dynamics_simulator"


def _recorder(urdf_text=None):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    from dyn_control.nodes import messages
    from dyn_control.nodes.diagnostics import read_diagnostics

    from .background import BackgroundNode

    class Pacer(BackgroundNode):
        """The scenario's clock, its pushes, the reset and the nodes' statuses, in a node and a
        thread of their own, apart from the recorder: the synchronous simulator waits for the
        controller, not for the recorder, whose 1 kHz topics a loaded machine leaves seconds
        behind (pushes timed from its latest state landed after the goal had ended, and the
        reset's answer queued behind them). /clock is kept one deep: its latest, never a
        backlog.
        """

        def __init__(self):
            super().__init__("contact_demo_pacer")
            self.time, self.diagnostics, self.stamps = -1.0, {}, {}

            def tick(msg):
                with self.lock:
                    self.time = msg.clock.sec + 1e-9 * msg.clock.nanosec

            def diagnostics(msg):
                found = read_diagnostics(msg)
                with self.lock:
                    self.diagnostics.update(found)
                    self.stamps.update(dict.fromkeys(found, messages.to_seconds(msg.header.stamp)))

            self.create_subscription(Clock, "/clock", tick, 1)
            self.create_subscription(DiagnosticArray, "/diagnostics", diagnostics, 10)
            self.pusher = self.create_publisher(WrenchStamped, f"{SIMULATOR}/external_wrench", 10)
            self.reset = self.create_client(Trigger, f"{CONTROLLER}/reset_collision")
            self.start()

        def now(self):
            with self.lock:
                return self.time

    class ContactRecorder(BackgroundNode):
        def __init__(self):
            super().__init__("contact_demo_recorder")
            self.rows = {"states": [], "estimate": [], "wrench": [], "truth": []}
            self.pacer = Pacer()

            def keep(key, read):
                def callback(msg):
                    with self.lock:
                        self.rows[key].append((messages.to_seconds(msg.header.stamp), read(msg)))
                return callback

            def wrench(msg):
                f, m = msg.wrench.force, msg.wrench.torque
                return np.array([f.x, f.y, f.z, m.x, m.y, m.z])

            readers = {}
            for key, kind, topic, read in (
                    ("states", JointState, "/joint_states", lambda m: np.array(m.position)),
                    ("estimate", JointState, f"{CONTROLLER}/external_joint_torques",
                     lambda m: np.array(m.effort)),
                    ("wrench", WrenchStamped, f"{CONTROLLER}/external_wrench_in_base_frame",
                     wrench),
                    ("truth", JointState, f"{SIMULATOR}/applied_external_joint_torques",
                     lambda m: np.array(m.effort))):
                if urdf_text is not None and topic == "/joint_states":
                    readers[topic] = keep(key, read)  # read through the bag's subscription
                else:
                    self.create_subscription(kind, topic, keep(key, read), 5000)
            self.tap = None
            if urdf_text is not None:  # the run as a bag (harness.bag), on raw subscriptions
                from .bag import BagTap
                self.tap = BagTap(self, urdf_text)
                self.tap.readers.update(readers)
            self.start()

        def close(self):
            self.pacer.close()
            super().close()

        @property
        def diagnostics(self):
            with self.pacer.lock:
                return dict(self.pacer.diagnostics)

        def now(self):
            """The simulated time now (the pacer's latest /clock)."""
            return self.pacer.now()

        def series(self, key):
            with self.lock:
                rows = list(self.rows[key])
            return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])

        def push(self, w, at=None):
            """The wrench w (6,) on the tip link: now, or from the simulated time `at`."""
            msg = WrenchStamped()
            if at is not None:
                messages.set_stamp(msg.header.stamp, at)
            f, m = msg.wrench.force, msg.wrench.torque
            (f.x, f.y, f.z), (m.x, m.y, m.z) = w[:3], w[3:]
            self.pacer.pusher.publish(msg)

        def call_reset(self, timeout=30.0):
            """~/reset_collision -> (its answer or None, whether the controller's /diagnostics
            said after the call that no collision is latched). Either says the reset was taken:
            beside busy-machine.sh the controller logged the reset taken and the client heard no
            answer in 30 s, and in another run the answer came while this process had heard no
            /diagnostics from the controller for 10 s of simulated time.
            """
            pacer = self.pacer
            asked, deadline = pacer.now(), time.monotonic() + timeout
            while not pacer.reset.service_is_ready() and time.monotonic() < deadline:
                time.sleep(0.05)  # (its answer has no reader to go to before)
            future = pacer.call_in_spin(lambda: pacer.reset.call_async(Trigger.Request()))
            answer = cleared_at = None
            while time.monotonic() < deadline:
                if answer is None and future.done() and (
                        not hasattr(future.result(), "done") or future.result().done()):
                    inner = future.result()
                    answer = inner.result() if hasattr(inner, "done") else inner
                with pacer.lock:
                    status = pacer.diagnostics.get(CONTROLLER[1:], {})
                    heard = pacer.stamps.get(CONTROLLER[1:], -math.inf)
                if cleared_at is None and heard > asked and status.get("collision") == "none":
                    cleared_at = time.monotonic()
                if answer is not None or (cleared_at is not None and
                                          time.monotonic() > cleared_at + 5.0):
                    break  # (an answer late past that is lost: the controller has said)
                time.sleep(0.01)
            return answer, cleared_at is not None

    return ContactRecorder()


def _until(condition, nodes, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if any(not node.running() for node in nodes):
            raise RuntimeError(f"a node stopped while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.01)


def contact_loop(arm, out, domain, timeout=120.0, bag=None):
    """Run the scenario of the module docstring; return what was recorded and the phases.
    bag: a new folder to write the run to as a rosbag2 (harness.bag).
    """
    import os

    import rclpy

    from dyn_control.model.urdf import read_urdf_text
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    urdf, configs = processes.arm_files(arm)
    common = {"urdf_file": str(urdf)}
    env, nodes, phases = processes.loop_env(), processes.ProcessSet(), {}
    rclpy.init()
    rec = _recorder(read_urdf_text(str(urdf)) if bag else None)
    try:
        nodes.start("dynamics_simulator", [processes.config("simulator"), *configs], common,
                    log_dir=out, env=env)
        nodes.start(
            "computed_torque_controller", [processes.config("controller"), *configs],
            {**common, "use_sim_time": True, "external_torque.publish_rate": 1000.0},
            log_dir=out, env=env)
        _until(lambda: rec.series("estimate")[0].size, nodes, timeout, "the estimate")
        nodes.start("trajectory_demo", [processes.config("demo")],
                    {**common, "use_sim_time": True, "duration": 10.0}, log_dir=out, env=env)
        demo = lambda: rec.diagnostics.get("trajectory_demo", {})  # noqa: E731
        controller = lambda: rec.diagnostics.get("computed_torque_controller", {})  # noqa: E731
        _until(lambda: "trajectory_start_s" in controller(), nodes, timeout,
               "the trajectory's start")
        # the pushes go out at once, each stamped with its simulated time from the trajectory's
        # start as the controller reports it: the simulator applies each then, so it lands at
        # the same point of the motion whatever the load (stamped from the latest state heard,
        # the UR5's estimate was 0.8 % to 3.9 % off, by where in the motion the push fell)
        start = float(controller()["trajectory_start_s"])
        for name, at, wrench in (("push", 3.0, PUSH), ("push_end", 4.5, np.zeros(6)),
                                 ("collision", 6.0, COLLISION)):
            rec.push(wrench, start + at)
            phases[name] = start + at
        _until(lambda: "result" in demo(), nodes, timeout, "the goal's result")
        hold = rec.now()
        _until(lambda: rec.now() >= hold + 0.5, nodes, timeout, "the hold")
        rec.push(np.zeros(6))
        phases["released"] = rec.now()
        _until(lambda: rec.now() >= phases["released"] + 0.5, nodes, timeout, "the release")
        reset, cleared = rec.call_reset()
    finally:
        codes = nodes.stop()
        recorded = {key: rec.series(key) for key in rec.rows}
        diagnostics = dict(rec.diagnostics)
        rec.close()
        rclpy.try_shutdown()
        bag_counts = rec.tap.write(bag) if bag else None
    return {**recorded, "phases": phases, "start": start, "reset": reset,
            "reset_cleared": cleared, "exit_codes": codes,
            "diagnostics": diagnostics, "bag": bag_counts}


def pushes(tt, truth):
    """(first, last stamp) of the push and of the collision push in the truth, told apart by
    size: the collision's force is 4.2 times the push's, so its joint torques are over half the
    largest and the push's under (a fixed level does not part them on every arm: the Panda's
    collision reaches 11.6 N m, the default arm's 44). A loaded machine's recording can miss
    truth messages, so gaps in time do not separate them.
    """
    big = np.abs(truth).max(axis=1)
    half = 0.5 * big.max()
    push, collision = tt[(big > 0) & (big <= half)], tt[big > half]
    return (push[0], push[-1]), (collision[0], collision[-1])


def contact_main(args, out, domain):
    from dyn_control import load_chain

    from .bag import logs_folder, run_folder, summary

    out = pathlib.Path(out)
    names = load_chain(processes.arm_files(args.arm)[0]).joint_names
    bag = run_folder(out, args.arm, "contact")
    r = contact_loop(args.arm, logs_folder(bag), domain, bag=bag)
    try:
        figures = _figures(r, names)
    except (IndexError, ValueError) as err:  # a loaded machine's recording missed a phase
        figures = {"missed": str(err)}
        print(f"\nthe recording missed part of the pushes ({err}): no figures this run")
    demo = r["diagnostics"].get("trajectory_demo", {})
    print(f"reaction (hold): the goal ended {demo.get('result')}: {demo.get('result_string')}")
    reset = r["reset"]
    print("reset_collision after the push: " + ("no answer" if reset is None else
                                                f"{reset.success}, {reset.message}")
          + "; the controller's /diagnostics then said the collision was "
          + ("cleared" if r["reset_cleared"] else "not cleared"))
    print("\ncontroller " + status_line(r["diagnostics"], "computed_torque_controller",
                                         CONTROLLER_LINE))
    print("simulator " + status_line(r["diagnostics"], "dynamics_simulator", SIMULATOR_LINE))
    print("trajectory_demo " + status_line(r["diagnostics"], "trajectory_demo", DEMO_LINE))
    print(f"exit codes after the stop (SIGINT, as Ctrl-C): {r['exit_codes']}")
    print(summary(bag, r["bag"]))
    path = out / f"demo_{processes.arm_name(args.arm)}_contact.png"
    _plot(r, names, path)
    print(f"plot written to {path}")
    # the pushes are timed by a recording that a loaded machine can make late, so a collision
    # after the trajectory's end is possible there: the outcome that must hold is a clean run
    # and a reset taken, as its answer or the controller's /diagnostics says (call_reset)
    answered = reset is not None and reset.success and reset.message.startswith(
        "cleared: collision")
    ok = (answered or r["reset_cleared"]) and all(c == 0 for c in r["exit_codes"].values())
    report = {**figures, "reset": None if reset is None else [reset.success, reset.message],
              "reset_cleared": r["reset_cleared"], "exit_codes": r["exit_codes"],
              "collisions": r["diagnostics"].get("computed_torque_controller", {}).get(
                  "collisions", 0)}
    (out / f"demo_{processes.arm_name(args.arm)}_contact.json").write_text(
        json.dumps(report, indent=1) + "\n")
    return 0 if ok else 1


def _figures(r, names):
    """Print the estimate against the truth, and the detection times (module docstring);
    -> the same figures, for the run's JSON report.
    """
    from dyn_control.parameters import CONTROLLER as TABLE

    ph, gain = r["phases"], TABLE["external_torque.observer_gain"].default
    level = TABLE["collision.joint_torque_collision"].default
    te, est = r["estimate"]
    tt, truth = r["truth"]
    tw, wrench = r["wrench"]
    # when each push acted, in simulated time, from the truth (published only while pushed):
    # the phases are when the recorder sent them, late on a loaded machine
    (push_from, push_to), (collision_from, collision_to) = pushes(tt, truth)
    ph = {**ph, "push": push_from, "push_end": push_to, "collision": collision_from,
          "released": collision_to}
    r["phases"] = ph
    window = (tw >= ph["push_end"] - 0.3) & (tw < ph["push_end"])
    if not window.any():  # a mean of nothing is NaN, not a figure: a missed phase
        raise ValueError(f"no wrench estimate recorded over the push's last 0.3 s (push "
                         f"{push_from:.3f} to {push_to:.3f} s; {tw.size} recorded, "
                         f"{tw[0] if tw.size else float('nan'):.3f} to "
                         f"{tw[-1] if tw.size else float('nan'):.3f} s)")
    F = wrench[window].mean(axis=0)
    error = np.linalg.norm(F + PUSH) / np.linalg.norm(PUSH)
    print(f"\npush of {np.linalg.norm(PUSH):.1f} N at the hand, {PUSH[:3].tolist()} N: the "
          f"controller's estimate of what the robot applies, mean over the push's last 0.3 s:\n"
          f"  force {np.round(F[:3], 3).tolist()} N, moment {np.round(F[3:], 3).tolist()} N m: "
          f"{100 * error:.2f} % from minus the push\n  (the arm moves: the estimate filters "
          "J(q)^T w over the last 1/K_O s of q, and F = (J(q)^T)^+ r reads it at today's q)")
    # the estimate is a first-order filter of the truth (and the truth changes as the arm moves):
    # compare it with the truth through that filter, step by step at 1 kHz. The truth is taken
    # on the simulator's 1 ms grid over the push, interpolated where the recording missed a
    # message (a loaded run's gaps made a filter of the recorded samples alone 1.2 % off)
    pushed = (tt >= push_from) & (tt <= push_to)
    grid = np.round(push_from + 1e-3 * np.arange(round((push_to - push_from) / 1e-3) + 1), 6)
    on_grid = np.column_stack([np.interp(grid, tt[pushed], column) for column in truth[pushed].T])
    decay, filtered, rows = math.exp(-gain * 1e-3), np.zeros(truth.shape[1]), {}
    for t, value in zip(grid, on_grid):
        filtered = decay * filtered + (1 - decay) * value
        rows[t] = filtered
    during = [(e, rows[round(t, 6)]) for t, e in zip(te, est)
              if round(t, 6) in rows and ph["push"] + 0.2 <= t < ph["push_end"]]
    gap = max(np.abs(e + f).max() for e, f in during) / max(np.abs(f).max() for _, f in during)
    print(f"  joint torques against the simulator's truth through the observer's filter "
          f"(1 - e^(-K_O t)): largest gap {100 * gap:.2g} % of the largest true torque")
    figures = {"push_share_percent": 100 * error, "filtered_truth_gap_percent": 100 * gap}
    print(f"\ncollision push of {np.linalg.norm(COLLISION):.0f} N at the hand "
          f"(K_O {gain:g} 1/s):")
    onset = ph["collision"]
    first = truth[tt == onset][0]
    joint = int(np.argmax(np.abs(first)))
    force_level = TABLE["collision.force_collision"].default
    for what, times, values, lvl, amplitude in (
            (f"the estimate on {names[joint]}", te, np.abs(est[:, joint]), level,
             abs(first[joint])),
            ("the force at the hand", tw, np.linalg.norm(wrench[:, :3], axis=1), force_level,
             np.linalg.norm(COLLISION[:3]))):
        if amplitude <= lvl:  # the Panda's joints take under 20 N m of it: the force detects
            figures[f"{what} crossed, ms"] = None
            print(f"  {what} stays below {lvl:g} (it reaches {amplitude:.1f})")
            continue
        # the state at the onset's stamp carries the first step of the push: from a step before
        crossed = times[(times >= onset) & (values > lvl)][0] - onset + 1e-3
        closed = -math.log(1 - lvl / amplitude) / gain
        figures[f"{what} crossed, ms"] = [1e3 * crossed, 1e3 * closed]
        print(f"  {what} crossed {lvl:g} {1e3 * crossed:.0f} ms after the collision push began; "
              f"closed form -ln(1 - {lvl:g}/{amplitude:.1f})/K_O = {1e3 * closed:.1f} ms")
    ts, q = r["states"]
    held = (ts >= ph["released"] - 0.3) & (ts < ph["released"])
    figures["hold_moved_rad"] = float(np.abs(q[held] - q[held][-1]).max())
    print(f"  hold: the arm moved {figures['hold_moved_rad']:.2e} rad over the last 0.3 s of "
          "the collision push")
    return figures


def _plot(r, names, path):
    from matplotlib.transforms import blended_transform_factory

    from .plots import joint_colors, legend_outside

    # the controller's own stamp of the trajectory's start; r["start"] is when the recorder
    # heard trajectory_demo leave "waiting" on /diagnostics, up to a status period late
    t0 = r["diagnostics"].get("computed_torque_controller", {}).get("trajectory_start_s",
                                                                    r["start"])
    tw, wrench = r["wrench"]
    te, est = r["estimate"]
    tt, truth = r["truth"]
    gaps = np.flatnonzero(np.diff(tt) > 2e-3) + 1  # published only while pushed: break the line
    tt, truth = np.insert(tt, gaps, np.nan), np.insert(truth, gaps, np.nan, axis=0)
    ts, q = r["states"]
    truth_force = np.zeros((len(tw), 3))
    ph = r["phases"]
    truth_force[(tw >= ph["push"]) & (tw < ph["push_end"])] = -PUSH[:3]
    truth_force[(tw >= ph["collision"]) & (tw < ph["released"])] = -COLLISION[:3]
    colors = joint_colors(len(names))
    events = {"push": f"push {np.linalg.norm(PUSH):.0f} N", "push_end": "push end",
              "collision": f"collision {np.linalg.norm(COLLISION):.0f} N",
              "released": "released"}
    with figure(path, "dyn_control: contact, estimated (solid) against the truth (dashed)", 3,
                (11, 10)) as axes:
        for j, axis in enumerate("xyz"):
            axes[0].plot(tw - t0, wrench[:, j], color=f"C{j}", lw=1, label=f"F{axis}")
            axes[0].plot(tw - t0, truth_force[:, j], "--", color=f"C{j}", lw=1)
        axes[0].set_ylabel("force the robot applies\nat the hand (N)")
        legend_outside(axes[0])
        for j, color in enumerate(colors):
            axes[1].plot(te - t0, est[:, j], color=color, lw=1, label=names[j])
            axes[1].plot(tt - t0, -truth[:, j], "--", color=color, lw=1)
        axes[1].set_ylabel("external joint torque\n(robot's sign, N m)")
        legend_outside(axes[1])
        for j, color in enumerate(colors):
            axes[2].plot(ts - t0, q[:, j], color=color, lw=1)
        axes[2].set_ylabel("joint positions (rad)\ncolours as above")
        axes[2].set_xlabel("s from the trajectory's start")
        for ax in axes:
            for key in events:
                ax.axvline(ph[key] - t0, color="grey", lw=0.5)
        above = blended_transform_factory(axes[0].transData, axes[0].transAxes)
        for key, label in events.items():
            axes[0].text(ph[key] - t0, 1.02, label, transform=above, ha="center", va="bottom",
                         fontsize=8, color="0.3")
        # before the trajectory and after the release the arm holds still: left out
        axes[-1].set_xlim(min(0.0, ph["push"] - t0) - 0.3, ph["released"] - t0 + 0.5)
