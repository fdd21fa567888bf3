"""Two arms in one world, as `make demo ARM=two_arms` runs them: one simulator for a world URDF
(dyn_control.model.world: the arm twice, side by side, each under its prefix), each arm's
controller and trajectory_demo in the arm's namespace, one /clock. Each arm's loop is recorded
from its own topics, as closed_loop records one arm, and the run is one bag holding both.
"""

import os
import pathlib

import numpy as np

from . import processes
from .loop import _graph, _latest, _started, _wait_for, node_status, recording

NAMESPACES = ("left", "right")  # each arm's names take "<namespace>_"
SPACING = 1.0  # m between the arms' bases
WORLD = "two_arms"  # make demo's ARM= for it


def world_robots(arm="default_arm", namespaces=NAMESPACES):
    """(world URDF text, {namespace: its joints}, the simulator's parameters) of `arm` (a name
    in urdf/ or a URDF path) once per namespace, SPACING apart, each at the start pose of the
    arm's own file (config/<arm>.yaml), if it has one (launch_support.world_parameters, as
    launch/two_arms.launch.py).
    """
    from dyn_control.nodes.launch_support import world_parameters
    urdf, configs = processes.arm_files(arm)
    return world_parameters(str(urdf), namespaces, SPACING, configs)


def world_loop(duration=10.0, log_dir="out", domain_id=None, arm="default_arm",
               namespaces=NAMESPACES, bag=None, controller_params=None, timeout=300.0):
    """One simulator, and per arm a controller and a trajectory_demo in its namespace; each goal
    through its own controller's action, on simulated time. bag: a new folder to write the run
    to, both arms' topics in it. Returns {"arms": {namespace: closed_loop's recording of that
    arm, and "result": its goal's result}, "exit_codes", "logs", "diagnostics" (each node's
    newest status, by its fully qualified name), "graph" (as closed_loop's), "bag"}.
    """
    import rclpy

    from .background import BackgroundNode
    from .bag import BagTap, namespaced
    from .recorder import Recorder

    log_dir = pathlib.Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    text, joints, simulator = world_robots(arm, namespaces)
    urdf = log_dir / "world.urdf"
    urdf.write_text(text)
    if domain_id is not None:
        os.environ["ROS_DOMAIN_ID"] = str(domain_id)
    rclpy.init()
    tap = None
    if bag is not None:  # one tap for both arms: one bag
        tap_node = BackgroundNode("dyn_control_bag")
        tap = BagTap(tap_node, text, namespaced([f"/{ns}" for ns in joints]))
        tap_node.start()
    recorders = {ns: Recorder(namespace=f"/{ns}", tap=tap, name=f"dyn_control_recorder_{ns}")
                 for ns in joints}
    env = processes.loop_env()
    nodes, labels = processes.ProcessSet(), []  # labels: each node's name in its namespace
    sim = {"urdf_file": str(urdf), **simulator}
    starts_s, results = {}, {}
    try:
        nodes.start("dynamics_simulator", [processes.config("simulator")], sim,
                    log_dir=log_dir, env=env)
        labels.append("dynamics_simulator")
        for ns, names in joints.items():
            nodes.start("computed_torque_controller", [processes.config("controller")],
                        {"urdf_file": str(urdf), "joints": names, "use_sim_time": True,
                         **(controller_params or {})},
                        remaps={"__ns": f"/{ns}"}, log_dir=log_dir / ns, env=env)
            labels.append(f"{ns}/computed_torque_controller")
        for ns, recorder in recorders.items():  # as closed_loop: ticks heard before the goal
            _wait_for(lambda r=recorder: _latest(r) > -np.inf, nodes, timeout,
                      f"the recorder heard no tick of /{ns}'s controller")
        for ns, names in joints.items():
            nodes.start("trajectory_demo", [processes.config("demo")],
                        {"urdf_file": str(urdf), "joints": names, "use_sim_time": True,
                         "duration": float(duration)},
                        remaps={"__ns": f"/{ns}"}, log_dir=log_dir / ns, env=env)
            labels.append(f"{ns}/trajectory_demo")
        for ns, recorder in recorders.items():
            _wait_for(_started(recorder), nodes, timeout, f"no trajectory started on /{ns}")
            starts_s[ns] = node_status(recorder, "computed_torque_controller")[
                "trajectory_start_s"]
        # a loaded machine slows simulated time down: the deadline only catches a stopped loop
        for ns, recorder in recorders.items():
            end = starts_s[ns] + duration
            _wait_for(lambda r=recorder, end=end: _latest(r) >= end, nodes,
                      duration * 10 + 60, f"/{ns}'s loop did not reach its trajectory's end")
            _wait_for(lambda r=recorder: "result" in node_status(r, "trajectory_demo"), nodes,
                      10.0, f"no goal result on /{ns}")
            results[ns] = node_status(recorder, "trajectory_demo")
        graph = _graph(recorders["left" if "left" in recorders else next(iter(recorders))])
    finally:  # last started, first stopped, as ProcessSet.stop; by label: names repeat
        codes = {label: node.stop() for label, node in reversed(list(zip(labels, nodes)))}
        logs = {label: node.log() for label, node in zip(labels, nodes)}
        for recorder in recorders.values():
            recorder.close()
        if tap is not None:
            tap_node.close()
        rclpy.try_shutdown()
        bag_counts = tap.write(bag) if tap is not None else None  # a failed run is kept too
    diagnostics = {}
    for ns, recorder in recorders.items():
        diagnostics.update({(f"{ns}/{name}" if name in ("computed_torque_controller",
                                                       "trajectory_demo") else name): values
                            for name, values in recorder.diagnostics.items()})
    arms = {ns: {**recording(recorder, starts_s[ns], duration), "result": results[ns]}
            for ns, recorder in recorders.items()}
    return {"arms": arms, "exit_codes": codes, "logs": logs, "diagnostics": diagnostics,
            "graph": graph, "bag": bag_counts}


def world_main(out, domain, duration=10.0):
    """make demo ARM=two_arms: the run, each arm's tracking figures, and where the bag is."""
    from .bag import run_folder, summary
    from .metrics import CONTROLLER_LINE, SIMULATOR_LINE, status_line, tracking_figures

    bag = run_folder(out, WORLD)
    result = world_loop(duration, out / "logs" / bag.name, domain, bag=bag)
    for ns, arm in result["arms"].items():
        rms, worst = tracking_figures(arm)
        print(f"\n/{ns}: goal {arm['result'].get('result')}; tracking over {arm['t'][-1]:.1f} s "
              f"({len(arm['t'])} ticks recorded): RMS error {rms.max():.2e} rad at worst "
              f"({arm['joint_names'][int(np.argmax(rms))]}), max {worst.max():.2e} rad")
        print(f"/{ns} controller " + status_line(result["diagnostics"],
                                                 f"{ns}/computed_torque_controller",
                                                 CONTROLLER_LINE))
    print("simulator " + status_line(result["diagnostics"], "dynamics_simulator", SIMULATOR_LINE))
    clocks = [node for node, found in result["graph"]["endpoints"].items()
              if "/clock" in found["publishes"]]
    print(f"/clock published by {clocks} alone; exit codes after the stop: "
          f"{result['exit_codes']}")
    print(summary(bag, result["bag"]))
    ok = all(c == 0 for c in result["exit_codes"].values()) and all(
        arm["result"].get("result") == "SUCCESSFUL" for arm in result["arms"].values())
    return 0 if ok else 1
