"""The tests' and the demo's loop library: start the simulator, the controller and a demo node as
processes, record the loop from its topics and /diagnostics, stop them, and return what was
recorded. The figures made of it are in metrics.py, the plots in plots.py.
"""

import contextlib
import os
import time

import numpy as np

from dyn_control.nodes.launch_support import real_arm_parameters

from . import processes

CONTROLLER_NODE = "computed_torque_controller"


def closed_loop(arm="default_arm", duration=10.0, mode=None, log_dir="out", domain_id=None,
                controller_params=None, simulator_params=None, timeout=300.0,
                controller_first=0.0, simulator_remaps=None, helpers=(), demo_params=None,
                model_params=None, sim_urdf=None, bag=None, namespace=""):
    """Run simulator + controller + demo trajectory; return the recording and exit codes.

    controller_first: seconds the controller runs alone before the simulator starts.
    simulator_remaps: topic remappings of the simulator; helpers: (name, argv) of extra
    processes started after the simulator (fault injectors, load); demo_params: parameters of
    trajectory_demo; model_params: every node's (tip_link, joints). sim_urdf: the simulator's
    own URDF of the same joints (a truth the controller does not know, simulated as a real arm:
    launch_support.real_arm_parameters, unless simulator_params or controller_params say
    otherwise; default: the arm's).
    bag: a new folder to write the run to as a rosbag2 (harness.bag). namespace: every node's
    ("/left"), read there by the recorder.
    Returns a dict: joint_names, start (simulated time the trajectory starts at, s), t (s from
    start), error (k, n), reference (k, n), position (k, n),
    effort (k, n) from the controller's topics over the trajectory, exit_codes, logs,
    ticks_before_simulator (controller outputs seen while it ran alone), and graph: the ROS
    graph as the recorder saw it before the nodes stopped ({"nodes", "topics", "services",
    "actions"}: fully qualified names).
    """
    import rclpy

    from .recorder import Recorder

    urdf, arm_configs = processes.arm_files(arm)
    common = {"urdf_file": str(urdf), **(model_params or {})}
    real_arm, wrong_model = real_arm_parameters() if sim_urdf else ({}, {})
    if sim_urdf:
        real_arm["urdf_file"] = str(sim_urdf)
    sim_params = {**common, **real_arm, **(simulator_params or {})}
    ctl_params = {**common, "use_sim_time": True, **wrong_model, **(controller_params or {})}
    if mode:
        ctl_params["mode"] = mode
    demo_params = {**common, "use_sim_time": True, "duration": float(duration),
                   **(demo_params or {})}
    if domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    rclpy.init()
    recorder = Recorder(urdf_text=_bag_urdf(bag, sim_urdf or urdf), namespace=namespace)
    moved = {"__ns": namespace} if namespace else {}
    env = processes.loop_env()
    nodes = processes.ProcessSet()
    ticks_alone = 0
    try:
        nodes.start(
            "computed_torque_controller", [processes.config("controller"), *arm_configs],
            ctl_params, remaps=moved, log_dir=log_dir, env=env)
        if controller_first:
            time.sleep(controller_first)
            _check_alive(nodes)
            ticks_alone = len(recorder.series("errors")[0])
        nodes.start(
            "dynamics_simulator", [processes.config("simulator"), *arm_configs], sim_params,
            remaps={**moved, **(simulator_remaps or {})}, log_dir=log_dir, env=env)
        for name, argv in helpers:
            nodes.start(name, log_dir=log_dir, env=env, argv=argv)
        # the recorder hears the controller's ticks (it holds before any trajectory) before the
        # trajectory is sent: its subscriptions can match seconds after the controller starts
        # (up to 6 s seen, on an idle machine too), and a volatile topic replays nothing missed
        _wait_for(lambda: _latest(recorder) > -np.inf, nodes, timeout,
                  "the recorder heard no tick on both ~/error and ~/reference")
        # and the controller's /diagnostics, which says when the trajectory started: its writer
        # can match later than the ticks' (a 2 s goal once ended, in the suite on a quiet
        # machine, before the recorder had heard the controller there at all)
        _wait_for(lambda: node_status(recorder, CONTROLLER_NODE), nodes, timeout,
                  "the recorder heard nothing of the controller on /diagnostics")
        nodes.start(
            "trajectory_demo", [processes.config("demo"), *arm_configs], demo_params,
            remaps=moved, log_dir=log_dir, env=env)
        # from the controller's own word (its /diagnostics): the recorder may miss the first
        # moving samples (92 ms of them seen), and the error along the trajectory changes
        # 100-fold within a second, so a start read off the recording would shift every window
        try:
            _wait_for(_started(recorder), nodes, timeout, "no trajectory started")
        except TimeoutError as err:  # what each node said last tells where it stopped
            said = {name: node_status(recorder, name).get("message")
                    for name in (CONTROLLER_NODE, "trajectory_demo", "dynamics_simulator")}
            raise TimeoutError(f"{err}; the nodes said {said}") from None
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
        graph = _graph(recorder)
    finally:
        # last started, first stopped: the simulator goes before the controller, so it does not
        # count the states a stopped controller leaves unanswered
        codes = nodes.stop()
        logs = nodes.logs()
        recorder.close()
        rclpy.try_shutdown()
        bag_counts = recorder.tap.write(bag) if bag else None  # a failed run is kept too
    return {**recording(recorder, start, duration),
            "exit_codes": codes, "logs": logs, "ticks_before_simulator": ticks_alone,
            "diagnostics": dict(recorder.diagnostics), "bag": bag_counts, "graph": graph,
            "received": dict(recorder.tap.counts) if bag else None}


def recording(recorder, start, duration):
    """What a recorder holds of one arm's trajectory from `start` (simulated s) for
    `duration`: closed_loop's joint_names, start, t (s from start), error, reference,
    position, effort and recorded.
    """
    t, e, q_d, tau = _paired(recorder)
    window = (t >= start) & (t <= start + duration)
    return {"joint_names": recorder.joint_names, "start": start, "t": t[window] - start,
            "error": e[window], "reference": q_d[window],
            "position": q_d[window] - e[window], "effort": tau[window],
            "recorded": {"errors": len(recorder.errors), "references": len(recorder.references)}}


def cartesian_loop(arm="default_arm", log_dir="out", domain_id=None, controller_params=None,
                   demo_params=None, timeout=120.0, model_params=None, bag=None):
    """Simulator + controller in cartesian_impedance + cartesian_demo; returns the recording:
    the poses, the target poses, the simulator's joint states, the demo's phase times (sim s),
    exit codes, logs and /diagnostics. bag: as closed_loop's.
    """
    import rclpy

    from .recorder import Recorder

    urdf, arm_configs = processes.arm_files(arm)
    common = {"urdf_file": str(urdf), **(model_params or {})}
    if domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    rclpy.init()
    recorder = Recorder(cartesian=True, urdf_text=_bag_urdf(bag, urdf))
    env = processes.loop_env()
    nodes = processes.ProcessSet()
    try:
        nodes.start(
            "dynamics_simulator", [processes.config("simulator"), *arm_configs], common,
            log_dir=log_dir, env=env)
        nodes.start(
            "computed_torque_controller", [processes.config("controller"), *arm_configs],
            {**common, "use_sim_time": True, "mode": "cartesian_impedance",
             **(controller_params or {})}, log_dir=log_dir, env=env)
        _wait_for(lambda: recorder.pose_series("current_pose")[0].size, nodes, timeout,
                  "no ~/current_pose")  # recording before the demo starts, as closed_loop
        nodes.start(
            "cartesian_demo", [], {"use_sim_time": True, **(demo_params or {})},
            log_dir=log_dir, env=env)
        demo = lambda: node_status(recorder, "cartesian_demo")  # noqa: E731
        _wait_for(lambda: demo().get("message") == "done", nodes, timeout,
                  "cartesian_demo not done")
        time.sleep(0.5)  # the last poses and a /diagnostics
    finally:
        codes = nodes.stop()
        logs = nodes.logs()
        recorder.close()
        rclpy.try_shutdown()
        bag_counts = recorder.tap.write(bag) if bag else None  # a failed run is kept too
    phases = {key[:-2]: value for key, value in demo().items() if key.endswith("_s")}
    t, q, _, effort = recorder.series("states")
    return {"joint_names": recorder.joint_names, "pose": recorder.pose_series("current_pose"),
            "target": recorder.pose_series("target_pose"), "states": (t, q, effort),
            "phases": phases, "exit_codes": codes, "logs": logs,
            "diagnostics": dict(recorder.diagnostics), "bag": bag_counts}


def _graph(node):
    """The ROS graph as `node` sees it: fully qualified names of nodes, topics, services and
    actions (an action's topics and services are listed under topics and services too), and
    "endpoints": each node's {"publishes": topics, "subscribes": topics}.
    """
    from rclpy.action import get_action_names_and_types
    names = node.get_node_names_and_namespaces()
    endpoints = {}
    for name, ns in names:
        found = {}
        for kind, query in (("publishes", node.get_publisher_names_and_types_by_node),
                            ("subscribes", node.get_subscriber_names_and_types_by_node)):
            try:
                found[kind] = sorted(topic for topic, _ in query(name, ns))
            except Exception:  # noqa: BLE001 - a node gone between the two calls
                found[kind] = []
        endpoints[ns.rstrip("/") + "/" + name] = found
    return {"nodes": sorted(endpoints),
            "topics": sorted(name for name, _ in node.get_topic_names_and_types()),
            "services": sorted(name for name, _ in node.get_service_names_and_types()),
            "actions": sorted(name for name, _ in get_action_names_and_types(node)),
            "endpoints": endpoints}


def _bag_urdf(bag, urdf):
    """The URDF text a bag keeps (the simulated arm's), or None without a bag."""
    from dyn_control.model.urdf import read_urdf_text
    return read_urdf_text(str(urdf)) if bag else None


def _started(recorder):
    """A test for "the controller says a trajectory started", polled by _wait_for. Once the demo
    has its goal's result, the controller's next /diagnostics stamped on or after the result's
    (both on simulated time) settles it: a short trajectory, run synchronously faster than real
    time, can end between two of the controller's 1 Hz statuses, and on a loaded machine they
    come late. Without a start there, RuntimeError with the result, so a refused goal does not
    wait out the whole timeout.
    """
    ended = []  # the stamp of the first status that had the result

    def started():
        if "trajectory_start_s" in node_status(recorder, CONTROLLER_NODE):
            return True
        demo = node_status(recorder, "trajectory_demo")
        if "result" not in demo:
            return False
        with recorder.lock:
            if not ended:
                ended.append(recorder.diagnostics_stamp["trajectory_demo"])
            heard = recorder.diagnostics_stamp.get(CONTROLLER_NODE, -np.inf)
        if heard < ended[0]:
            return False
        controller = node_status(recorder, CONTROLLER_NODE)
        if "trajectory_start_s" in controller:  # (it came between the two reads)
            return True
        raise RuntimeError(f"the goal ended before any trajectory started: {demo['result']}: "
                           f"{demo.get('result_string')}; the controller said "
                           f"{controller.get('message')!r}")
    return started


def _paired(recorder):
    """(t, error, reference, effort) of the ticks both ~/error and ~/reference were recorded
    on, by stamp: a starved recorder misses stretches of each, not the same ones.
    """
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
    message under "message" ({} before any).
    """
    with recorder.lock:
        return dict(recorder.diagnostics.get(node, {}))
