"""Bit for bit: every public function's output here against a git revision's, with np.array_equal.

    python bench/equality.py [REV]        (default REV: HEAD; make equality REV=...)

A restructuring that keeps the numbers must keep them to the last bit. This computes the
outputs of the dynamics, kinematics, control laws and the simulator on every arm of
example-robot-data that loads with its defaults, the trees of test_trees.py, random chains and
random trees, and the controller's commands over 300 ticks in each mode on some of them,
once with the package of REV (checked out into a temporary worktree) and once
with this tree's, in separate processes, and compares each array with np.array_equal. It prints
how many arrays it compared and names every one that differs; it exits 1 if any does.
Only public names are called, so the two revisions may differ in everything private.
"""

import argparse
import contextlib
import inspect
import io
import os
import pathlib
import subprocess
import sys
import tempfile
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = HERE.parent

TREES = {  # as test_trees.py: path under the robots folder, controlled joints
    "tiago_dual": ("tiago_description/robots/tiago_dual.urdf",
                   ["torso_lift_joint", *(f"arm_{s}_{k}_joint" for s in ("left", "right")
                                          for k in range(1, 8))]),
    "baxter": ("baxter_description/urdf/baxter.urdf",
               [f"{s}_{j}" for s in ("left", "right")
                for j in ("s0", "s1", "e0", "e1", "w0", "w1", "w2")]),
}


def module(name, before):
    """The package's module `name`, or `before`, its name in a revision before the library was
    grouped by job: one script compares both sides. Looked for in the imported package's own
    folder: an editable install's finder would import a missing one from the working tree.
    """
    import importlib

    import dyn_control
    root = pathlib.Path(dyn_control.__file__).parent
    found = name if (root / f"{name.replace('.', '/')}.py").is_file() else before
    loaded = importlib.import_module(f"dyn_control.{found}")
    assert pathlib.Path(loaded.__file__).is_relative_to(root), (loaded.__file__, root)
    return loaded


def models():
    """(name, chain, path) of every model compared."""
    from arm_sweep import arm_paths, load_arm
    from conftest import robots_dir
    from examples import random_chain_urdf, random_tree_urdf

    from dyn_control import load_chain
    out = [(rel, load_arm(rel), robots_dir() / rel) for rel in arm_paths()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (rel, joints) in TREES.items():
            out.append((name, load_chain(robots_dir() / rel, joints=joints, strict=False), None))
    for n in (2, 5, 9):
        out.append((f"random_chain_{n}", load_chain(random_chain_urdf(n, seed=n)), None))
    tree = load_chain(random_tree_urdf(3), tip_links=["tool1", "tool2", "tool3"])
    out.append(("random_tree_3", tree, None))
    for name in ("default_arm", "two_link", "dual_arm"):
        path = PACKAGE / "urdf" / f"{name}.urdf"
        kwargs = {"tip_links": ["left_tool", "right_tool"]} if name == "dual_arm" else {}
        out.append((name, load_chain(path, **kwargs), path))
    return out


def outputs(chain, rng):
    """{key: array} of every public function at random states of `chain`."""
    from dyn_control import dynamics, kinematics
    CartesianLaw = module("controller.cartesian", "cartesian").CartesianLaw
    laws = module("controller.laws", "control")
    MODES, ControlLaw = laws.MODES, laws.ControlLaw
    effort_limits = module("model.chain", "control").effort_limits
    simulation = module("sim.simulation", "simulation")
    Simulation = simulation.Simulation
    default_initial_positions = module("poses", "simulation").default_initial_positions

    n, out = chain.n, {}
    q, qd, qdd, tau = rng.uniform(-1, 1, (4, n))
    Q, QD, QDD = rng.uniform(-1, 1, (3, 50, n))
    g, f_tip = rng.uniform(-10, 10, 3), rng.uniform(-5, 5, 6)
    out["inverse_dynamics"] = dynamics.inverse_dynamics(chain, q, qd, qdd)
    out["inverse_dynamics_g_f"] = dynamics.inverse_dynamics(chain, q, qd, qdd, g, f_tip)
    out["inverse_dynamics_rows"] = dynamics.inverse_dynamics(chain, Q, QD, QDD)
    out["inverse_dynamics_rows_g_f"] = dynamics.inverse_dynamics(chain, Q, QD, QDD, g, f_tip)
    out["inverse_dynamics_list"] = dynamics.inverse_dynamics(chain, list(q), list(qd), list(qdd))
    out["mass_matrix"] = dynamics.mass_matrix(chain, q)
    out["mass_matrix_times_plus_bias"] = dynamics.mass_matrix_times_plus_bias(chain, q, qd, qdd)
    out["bias_forces"] = dynamics.bias_forces(chain, q, qd)
    out["bias_forces_rows"] = dynamics.bias_forces(chain, Q, QD, g)
    out["gravity_torques"] = dynamics.gravity_torques(chain, q)
    out["gravity_torques_g"] = dynamics.gravity_torques(chain, q, g)
    out["forward_dynamics"] = dynamics.forward_dynamics(chain, q, qd, tau)
    out["forward_dynamics_g_f"] = dynamics.forward_dynamics(chain, q, qd, tau, g, f_tip)
    out["kinetic_energy"] = np.array(dynamics.kinetic_energy(chain, q, qd))
    out["potential_energy"] = np.array(dynamics.potential_energy(chain, q))
    out["potential_energy_g"] = np.array(dynamics.potential_energy(chain, q, g))
    links = [chain.tip_link, *chain.tip_links, chain.lumped_links[0][0]]
    for k, link in enumerate(dict.fromkeys(links)):
        R, p = kinematics.frame_pose(chain, q, link)
        out[f"frame_pose_{k}"] = np.concatenate([R.ravel(), p])
        for reference in kinematics.REFERENCES:
            out[f"frame_jacobian_{k}_{reference}"] = kinematics.frame_jacobian(chain, q, link,
                                                                               reference)
        for reference in ("local", "local_world_aligned"):
            out[f"frame_classical_acceleration_{k}_{reference}"] = (
                kinematics.frame_classical_acceleration(chain, q, qd, link, reference))
        out[f"operational_space_inertia_{k}"] = kinematics.operational_space_inertia(chain, q, link)
        out[f"dynamically_consistent_inverse_{k}"] = (
            kinematics.dynamically_consistent_inverse(chain, q, link))
        out[f"rotation_log_{k}"] = kinematics.rotation_log(R)
    limits = effort_limits(chain)
    q_d = q + rng.uniform(-0.1, 0.1, n)
    qd_d, qdd_d = rng.uniform(-1, 1, (2, n))
    for mode in MODES:
        for compensate in (False, True):
            law = ControlLaw(chain, mode, np.full(n, 100.0), np.full(n, 20.0), limits,
                             friction_compensation=compensate, ki=np.full(n, 50.0))
            for step in range(3):
                tau_law, e, ed = law(q, qd, q_d, qd_d, qdd_d, 1e-3)
                out[f"law_{mode}_{compensate}_{step}"] = np.concatenate([tau_law, e, ed,
                                                                         law.integral])
    for operational in (False, True):
        for tips in ([chain.tip_link], list(chain.tip_links)):
            law = CartesianLaw(chain, tips if len(tips) > 1 else tips[0], limits=limits,
                               operational_space=operational, friction_compensation=True)
            f = len(tips)
            poses = [kinematics.frame_pose(chain, q + 0.05, link) for link in tips]
            R_d, p_d = np.array([R for R, _ in poses]), np.array([p for _, p in poses])
            tau_c, e = law(q, qd, R_d, p_d, rng.uniform(-1, 1, 6 * f), q_d)
            out[f"cartesian_{operational}_{f}"] = np.concatenate([tau_c, e])
    for integrator in ("rk4", "semi_implicit_euler"):
        sim = Simulation(chain, default_initial_positions(chain), effort_limits=limits,
                         integrator=integrator)
        torques = rng.uniform(-1, 1, (20, n)) * np.where(np.isfinite(limits), limits, 10.0)
        for k, torque in enumerate(torques):
            if k == 10:
                sim.push(rng.uniform(-5, 5, 6))
            sim.step(torque)
        out[f"simulation_{integrator}"] = np.concatenate([sim.q, sim.qd, sim.tau, [sim.t]])
    return out


def ticks(chain, rng):
    """{key: array} of the controller core's commands over 300 ticks in each mode, with a goal
    in the joint modes and a target move in cartesian_impedance, on states of a simulated arm:
    the whole tick, not the laws alone.
    """
    from conftest import table_values

    from dyn_control import kinematics
    from dyn_control.parameters import CONTROLLER
    controller_core = module("controller.core", "controller_core")
    Request = module("controller.goals", "goals").Request
    simulation = module("sim.simulation", "simulation")
    Simulation = simulation.Simulation
    default_initial_positions = module("poses", "simulation").default_initial_positions

    out = {}
    for mode in ("computed_torque", "feedforward", "gravity_pd", "cartesian_impedance"):
        values = table_values(CONTROLLER, mode=mode)
        before_stages = getattr(controller_core, "controller_settings", None)
        if before_stages is not None:  # a revision before the tick's stages
            core = controller_core.ControllerCore(chain, before_stages(chain, values))
        else:
            controller_settings = module("controller.settings",
                                         "stages.settings").controller_settings
            if "value" not in inspect.signature(controller_settings).parameters:
                values = CONTROLLER.read(values, chain.joint_names)  # typed settings
            core = controller_core.ControllerCore(controller_settings(chain, values))
        q0 = default_initial_positions(chain)
        sim = Simulation(chain, q0, integrator="rk4")
        taus = []
        for k in range(300):
            t = k * 1e-3
            if k == 5 and mode != "cartesian_impedance":
                core.offer(Request(tuple(chain.joint_names), t,
                                   ((0.2, q0 + 0.05, (), ()),)))
            if k == 5 and mode == "cartesian_impedance":
                R, p = kinematics.frame_pose(chain, sim.q)
                try:
                    core.set_target_pose(R, p + 0.01)
                except ValueError:
                    pass
            command = core.update(t, (t, sim.q.copy(), sim.qd.copy()))
            tau = np.zeros(chain.n) if command is None else command.tau
            taus.append(tau)
            sim.step(tau)
        out[f"ticks_{mode}"] = np.array(taus)
    return out


def save(path):
    # this side's package first, before the tests' conftest puts this tree's first on the path
    import dyn_control
    arrays = {"package": np.array(str(pathlib.Path(dyn_control.__file__).parent))}
    # the test helpers of the same revision as the package, which import it by its own names
    tests = pathlib.Path(dyn_control.__file__).parent.parent / "test"
    sys.path[:0] = [str(tests / "support"), str(tests)]
    with contextlib.redirect_stderr(io.StringIO()):  # xacro's notes on the robots' macros
        found = models()
    assert pathlib.Path(dyn_control.__file__).parent == pathlib.Path(arrays["package"].item())
    for k, (name, chain, _) in enumerate(found):
        rng = np.random.default_rng(k)
        for key, value in outputs(chain, rng).items():
            arrays[f"{name}:{key}"] = np.asarray(value)
        if name in ("default_arm", "two_link", "dual_arm", "random_tree_3") or k % 5 == 0:
            for key, value in ticks(chain, rng).items():
                arrays[f"{name}:{key}"] = np.asarray(value)
    np.savez(path, **arrays)


def run_at(rev, out):
    """Save the outputs of REV's package into `out`, from a worktree of REV."""
    tree = pathlib.Path(tempfile.mkdtemp()) / "rev"
    subprocess.run(["git", "-C", str(PACKAGE), "worktree", "add", "--detach", "-q", str(tree), rev],
                   check=True)
    try:
        if (tree / "dyn_control" / "_calls.c").is_file():  # REV's C entry points, as REV has them
            subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                           check=True, capture_output=True)
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run([sys.executable, __file__, "--save", str(out)], check=True, env=env)
    finally:
        subprocess.run(["git", "-C", str(PACKAGE), "worktree", "remove", "--force", str(tree)],
                       check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--save", help=argparse.SUPPRESS)  # one side, in its own process
    args = parser.parse_args()
    if args.save:
        save(args.save)
        return 0
    folder = pathlib.Path(tempfile.mkdtemp())
    run_at(args.rev, folder / "before.npz")
    env = dict(os.environ, PYTHONPATH=str(PACKAGE))
    subprocess.run([sys.executable, __file__, "--save", str(folder / "after.npz")], check=True,
                   env=env)
    before, after = np.load(folder / "before.npz"), np.load(folder / "after.npz")
    print(f"{args.rev}'s package: {before['package']}; this tree's: {after['package']}")
    if str(before["package"]) == str(after["package"]):
        print("both sides ran the same package: nothing was compared")
        return 1
    differ = [key for key in before.files if key != "package"
              if key not in after.files or not np.array_equal(before[key], after[key])]
    keys = [key for key in before.files if key != "package"]
    arms = len({key.split(":")[0] for key in keys})
    print(f"{len(keys)} arrays on {arms} models against {args.rev}: "
          f"{len(keys) - len(differ)} equal bit for bit, {len(differ)} differ")
    for key in differ:
        print(f"  differs: {key}{relative_difference(before, after, key)}")
    return 1 if differ else 0


def relative_difference(before, after, key):
    """By how much an array differs: its largest change over its largest magnitude."""
    if key not in after.files or before[key].shape != after[key].shape:
        return " (missing, or of another shape)"
    a, b = before[key], after[key]
    change = np.nanmax(np.abs(a - b)) / max(np.nanmax(np.abs(a)), 1e-300)
    return f" (by {change:.1e} of its largest)"


if __name__ == "__main__":
    sys.exit(main())
