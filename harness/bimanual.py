"""Both hands of a tree in cartesian_impedance, as `make demo ARM=dual_arm MODE=cartesian` runs
it: the simulator and the controller as separate processes (config/*.yaml and the arm's own
file, whose ee_links name the hands), synchronous on simulation time, and a client here
that does this.

1. holds both hands `settle` s, then lifts the torso through the nullspace posture
   (~/target_joint, a quintic up by `lift` m over `lift_time` s) and holds it, while both hands
   keep their targets (entering the mode took their poses);
2. pushes the first hand with `force` (N, base axes) on the simulator's ~/external_wrench for
   `push_time` s, and lets go.

bimanual_loop returns the recording; bimanual_figures the figures the tree tests check.
"""

import os
import pathlib
import time

import numpy as np

from . import processes
from .plots import figure

CONTROLLER = "/computed_torque_controller"


def arm_ee_links(arm_configs):
    """The controller's ee_links in the arm's own parameters file ([] if none or one)."""
    for path in arm_configs:
        links = processes.node_parameters(path, "computed_torque_controller").get("ee_links")
        if links and len(links) > 1:
            return list(links)
    return []


def _client(hands, lift_joint, urdf_text=None):
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from sensor_msgs.msg import JointState

    from dyn_control.nodes import messages

    from .background import BackgroundNode

    class Client(BackgroundNode):
        """Records both hands' ~/<link>/current_pose and the lift joint; publishes the posture
        and the push. Spun in a background thread.
        """

        def __init__(self):
            super().__init__("bimanual_demo_client")
            self.poses = {link: [] for link in hands}
            self.lift = []  # (sim s, position)
            for link in hands:
                self.create_subscription(PoseStamped, f"{CONTROLLER}/{link}/current_pose",
                                         lambda m, link=link: self._pose(link, m), 100)
            self.create_subscription(JointState, "/joint_states", self._state, 10)
            self.posture = self.create_publisher(JointState, f"{CONTROLLER}/target_joint", 10)
            self.push_pub = self.create_publisher(WrenchStamped,
                                                  "/dynamics_simulator/external_wrench", 10)
            self.tap = None
            if urdf_text is not None:  # the run as a bag (harness.bag), on raw subscriptions
                from .bag import BagTap, cartesian_topics
                # the hands are held where they are: no target is published
                self.tap = BagTap(self, urdf_text,
                                  topics=cartesian_topics(hands, names=("current_pose",)))
            self.start()

        def _pose(self, link, msg):
            p = msg.pose.position
            with self.lock:
                self.poses[link].append((messages.to_seconds(msg.header.stamp), (p.x, p.y, p.z)))

        def _state(self, msg):
            with self.lock:
                self.lift.append((messages.to_seconds(msg.header.stamp),
                                  msg.position[list(msg.name).index(lift_joint)]))

        def now(self):
            with self.lock:
                return self.lift[-1]

        def wait_sim(self, seconds, each=None):
            start = self.now()[0]
            deadline = time.monotonic() + 10 * seconds + 10
            while (t := self.now()[0]) < start + seconds:
                if time.monotonic() > deadline:
                    raise TimeoutError("simulated time stopped")
                if each is not None:
                    each(t - start)
                time.sleep(0.02)

        def push(self, link, force):
            msg = WrenchStamped()
            msg.header.frame_id = link
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(f) for f in force)
            self.push_pub.publish(msg)

        def set_lift(self, position):
            self.posture.publish(JointState(name=[lift_joint], position=[float(position)]))

    return Client()


LIFT_STEP = 0.002  # m of posture a publish, at most (a quiet run's 20 ms of the lift)


def bimanual_loop(arm="dual_arm", log_dir="out", domain_id=None, lift_joint="torso_lift_joint",
                  lift=0.1, lift_time=2.0, force=(10.0, 0.0, 5.0), settle=2.0, push_time=3.0,
                  timeout=90.0, bag=None):
    """Run it; -> dict: hands {link: (t (k,), p (k, 3))}, lift (t, q), phases (sim s: lift,
    lift_end, push, push_end), the links, force, exit codes and logs. bag: a new folder to
    write the run to as a rosbag2 (harness.bag).
    """
    import rclpy

    from dyn_control.model.urdf import read_urdf_text

    urdf, arm_configs = processes.arm_files(arm)
    hands = arm_ee_links(arm_configs)
    if not hands:
        raise ValueError(f"{arm}: its parameters file names no ee_links for the controller")
    if domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    env = processes.loop_env()
    common = {"urdf_file": str(urdf)}
    nodes = processes.ProcessSet()
    nodes.start("dynamics_simulator", [processes.config("simulator"), *arm_configs], common,
                log_dir=log_dir, env=env)
    nodes.start(
        "computed_torque_controller", [processes.config("controller"), *arm_configs],
        {**common, "use_sim_time": True, "mode": "cartesian_impedance"}, log_dir=log_dir, env=env)
    rclpy.init()
    client = _client(hands, lift_joint, read_urdf_text(str(urdf)) if bag else None)
    phases = {}
    try:
        deadline = time.monotonic() + timeout
        while not all(client.poses.values()) or not client.lift:
            for node in nodes:
                if not node.running():
                    raise RuntimeError(f"{node.name} exited: {node.log()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no ~/<link>/current_pose within {timeout} s; logs in {log_dir}")
            time.sleep(0.05)
        client.wait_sim(settle)
        phases["lift"], start = client.now()

        sent = [start]

        def lifting(t):
            # the posture moves at most LIFT_STEP a publish: a client the machine starves
            # publishes seldom, and its posture jumped 5 mm and more, which made the hands
            # stray 1.4 mm beside busy-machine.sh (0.16 mm quiet, at under 2 mm a publish);
            # a starved client now lifts as smoothly, only later
            s = min(t / lift_time, 1.0)
            goal = start + lift * (10 * s**3 - 15 * s**4 + 6 * s**5)
            sent[0] = float(np.clip(goal, sent[0] - LIFT_STEP, sent[0] + LIFT_STEP))
            client.set_lift(sent[0])
        client.wait_sim(lift_time, lifting)
        deadline = time.monotonic() + timeout
        while sent[0] != start + lift and time.monotonic() < deadline:
            lifting(lift_time)
            time.sleep(0.02)
        client.wait_sim(settle)
        phases["lift_end"] = phases["push"] = client.now()[0]
        client.push(hands[0], force)
        client.wait_sim(push_time)
        phases["push_end"] = client.now()[0]
        client.push(hands[0], (0.0, 0.0, 0.0))
        client.wait_sim(settle)
        phases["end"] = client.now()[0]
    finally:
        client.close()
        codes = nodes.stop()
        rclpy.try_shutdown()
        logs = nodes.logs()
        bag_counts = client.tap.write(bag) if bag else None  # a failed run is kept too
    with client.lock:
        recorded = {link: (np.array([t for t, _ in rows]), np.array([p for _, p in rows]))
                    for link, rows in client.poses.items()}
        lift_series = np.array(client.lift)
    return {"hands": recorded, "lift": (lift_series[:, 0], lift_series[:, 1]), "phases": phases,
            "links": hands, "force": np.asarray(force, dtype=float), "exit_codes": codes,
            "logs": logs, "bag": bag_counts}


def bimanual_figures(result, stiffness=500.0):
    """How far each hand strayed from where it was held while the torso lifted (m), how far the
    torso lifted (m), and the pushed hand's displacement against F/K (m, per axis) with the
    other hand's (m); stiffness: N/m, the hands' translational K.
    """
    ph = result["phases"]

    def mean(link, t0, t1):
        t, p = result["hands"][link]
        return p[(t >= t0) & (t < t1)].mean(axis=0)

    strayed = {}
    for link in result["links"]:
        t, p = result["hands"][link]
        held = mean(link, ph["lift"] - 0.2, ph["lift"])
        during = (t >= ph["lift"]) & (t < ph["lift_end"])
        strayed[link] = float(np.linalg.norm(p[during] - held, axis=1).max())
    tl, ql = result["lift"]
    lifted = float(ql[tl < ph["lift_end"]][-1] - ql[tl >= ph["lift"] - 0.2][0])
    pushed, other = result["links"][0], result["links"][1:]
    shift = {link: mean(link, ph["push_end"] - 0.2, ph["push_end"])
             - mean(link, ph["push"] - 0.2, ph["push"]) for link in result["links"]}
    return {"strayed_m": strayed, "lifted_m": lifted, "push_displacement_m": shift[pushed],
            "push_expected_m": result["force"] / stiffness,
            "other_displacement_m": max(float(np.linalg.norm(shift[k])) for k in other)}


def bimanual_main(arm, out, domain):
    """make demo ARM=<a tree with ee_links> MODE=cartesian: run, print the figures, plot."""
    from .bag import logs_folder, run_folder, summary
    bag = run_folder(out, arm, "cartesian")
    result = bimanual_loop(arm, logs_folder(bag), domain, bag=bag)
    f = bimanual_figures(result)
    print(f"\ntorso lifted {f['lifted_m'] * 1e3:.1f} mm through the nullspace posture; the hands "
          "strayed at most " + ", ".join(f"{link} {v * 1e3:.3f} mm" for link,
                                         v in f["strayed_m"].items())
          + " from where they were held")
    print(f"push of {result['force'].tolist()} N on {result['links'][0]}: it moved "
          f"{np.round(f['push_displacement_m'] * 1e3, 3).tolist()} mm against F/K "
          f"{np.round(f['push_expected_m'] * 1e3, 3).tolist()} mm; the other hand "
          f"{f['other_displacement_m'] * 1e3:.4f} mm")
    print(f"exit codes after the stop (SIGINT, as Ctrl-C): {result['exit_codes']}")
    print(summary(bag, result["bag"]))
    path = pathlib.Path(out) / f"demo_{processes.arm_name(arm)}_cartesian.png"
    plot_bimanual(result, path)
    print(f"plot written to {path}")
    return 0 if all(c == 0 for c in result["exit_codes"].values()) else 1


def plot_bimanual(result, path):
    from .plots import legend_outside

    ph = result["phases"]
    title = "dyn_control: both hands held in cartesian_impedance while the torso lifts"
    with figure(path, title, 2, (10, 6)) as axes:
        for link in result["links"]:
            t, p = result["hands"][link]
            held = p[(t >= ph["lift"] - 0.2) & (t < ph["lift"])].mean(axis=0)
            axes[0].plot(t - ph["lift"], 1e3 * np.linalg.norm(p - held, axis=1), lw=1, label=link)
        tl, ql = result["lift"]
        axes[1].plot(tl - ph["lift"], ql, lw=1)
        for ax in axes:
            ax.axvspan(ph["push"] - ph["lift"], ph["push_end"] - ph["lift"], color="0.9")
        axes[0].set_ylabel("hand from where it was held (mm)")
        legend_outside(axes[0])
        axes[1].set_ylabel("torso lift (m)")
        axes[1].set_xlabel("time since the lift began (s); shaded: the push on the first hand")
