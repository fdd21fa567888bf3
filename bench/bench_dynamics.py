"""Benchmark: dyn_control's dynamics against Pinocchio, same process, same states.

    python bench/bench_dynamics.py [--json out/bench_dynamics.json] [--quick]

For the seeds' 2R arm, the UR5, the Panda (to panda_hand, fingers lumped) and random serial
chains of n = 2 ... 64 joints, times inverse_dynamics, mass_matrix, bias_forces and
forward_dynamics against pin.rnea, pin.crba, pin.nonLinearEffects and pin.aba, prints the table
with ratios, times inverse_dynamics on 1000 states in one call against a Python loop over
pin.rnea (and on one thread), times the controller's trajectory check of a 10 s trajectory,
fits the growth exponent k in t = a + b n^k over the random chains, times inverse_dynamics and
mass_matrix called both ways users write them (dc.f and from-imported), measures the
one-time start-up cost (numba compilation, then loading the cache) in fresh processes, times
the simulator's step against MuJoCo's RK4 mj_step, and checks the targets. Figures are medians
over repeats of loops; the inverse-dynamics targets use the median ratio of paired neighbouring
blocks (Pinocchio's, then ours), which cancels the load of a shared machine.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np
import pinocchio as pin
from scipy.optimize import curve_fit

from dyn_control import bias_forces, forward_dynamics, inverse_dynamics, load_chain, mass_matrix
from dyn_control.controller.laws import trajectory_violation
from dyn_control.controller.trajectory import Trajectory, sine_waypoints
from dyn_control.kernels import newton_euler
from dyn_control.kinematics import frame_pose_and_jacobian
from dyn_control.model.chain import effort_limits

TESTS = pathlib.Path(__file__).resolve().parent.parent / "test"
sys.path[:0] = [str(TESTS / "support"), str(TESTS)]
from examples import random_chain_urdf  # noqa: E402  (the tests' random chains)
from pin_reference import PinReference  # noqa: E402  (the tests' Pinocchio reference)

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = HERE.parent
ROBOTS = (pathlib.Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share"
          / "example-robot-data" / "robots")
SIZES = (2, 4, 8, 16, 32, 64)
TIAGO_DUAL = ["torso_lift_joint", *(f"arm_{side}_{k}_joint" for side in ("left", "right")
                                    for k in range(1, 8))]  # a torso under two arms
OURS = ("inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics")
THEIRS = ("rnea", "crba", "nonLinearEffects", "aba")


def per_call_us(fn, repeat=7, budget=0.05):
    """Median over `repeat` runs of the mean time per call (us), each run about `budget` s."""
    fn()
    loops, start = 1, time.perf_counter()
    while time.perf_counter() - start < 0.01:
        fn()
        loops += 1
    loops = max(1, int(loops * budget / 0.01))
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        runs.append((time.perf_counter() - start) / loops * 1e6)
    return float(np.median(runs))


def paired_ratio(ours, theirs, pairs=101, loops=2000):
    """Median over `pairs` of t(ours) / t(theirs), each pair two back-to-back blocks of `loops`
    calls: on a shared machine the load changes between the two sides of a whole-table run,
    and a ratio of neighbours cancels it.
    """
    ours(), theirs()
    ratios = []
    for _ in range(pairs):
        start = time.perf_counter()
        for _ in range(loops):
            theirs()
        middle = time.perf_counter()
        for _ in range(loops):
            ours()
        ratios.append((time.perf_counter() - middle) / (middle - start))
    return float(np.median(ratios))


def arm_cases(quick):
    """(name, URDF text or path, load_chain kwargs)."""
    cases = [("two_link (seed 2R)", PACKAGE / "urdf" / "two_link.urdf", {}),
             ("ur5", ROBOTS / "ur_description/urdf/ur5_robot.urdf", {}),
             ("panda", ROBOTS / "panda_description/urdf/panda.urdf", {"tip_link": "panda_hand"}),
             ("tiago_dual (tree)", ROBOTS / "tiago_description/robots/tiago_dual.urdf",
              {"joints": TIAGO_DUAL})]
    sizes = SIZES[:3] if quick else SIZES
    cases += [(f"chain n={n}", random_chain_urdf(n, seed=n, extras=False), {}) for n in sizes]
    return cases


def measure(name, source, kwargs, quick):
    if not isinstance(source, pathlib.Path):
        path = pathlib.Path(tempfile.mkdtemp()) / "chain.urdf"
        path.write_text(source)
        source = path
    chain = load_chain(source, **kwargs)
    ref = PinReference(source, chain)
    model, data = ref.reduced, ref.reduced_data  # exactly the chain's joints, others locked
    assert model.nv == chain.n
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, chain.n))
    qp, vp, ap = ref.q_of(model, q), ref.v_of(model, qd), ref.v_of(model, qdd)
    budget = 0.01 if quick else 0.05
    ours = {
        "inverse_dynamics": per_call_us(lambda: inverse_dynamics(chain, q, qd, qdd), budget=budget),
        "mass_matrix": per_call_us(lambda: mass_matrix(chain, q), budget=budget),
        "bias_forces": per_call_us(lambda: bias_forces(chain, q, qd), budget=budget),
        "forward_dynamics": per_call_us(lambda: forward_dynamics(chain, q, qd, qdd), budget=budget),
    }
    theirs = {
        "rnea": per_call_us(lambda: pin.rnea(model, data, qp, vp, ap), budget=budget),
        "crba": per_call_us(lambda: pin.crba(model, data, qp), budget=budget),
        "nonLinearEffects": per_call_us(lambda: pin.nonLinearEffects(model, data, qp, vp),
                                        budget=budget),
        "aba": per_call_us(lambda: pin.aba(model, data, qp, vp, ap), budget=budget),
    }
    # same numbers, or the timing means nothing
    np.testing.assert_allclose(inverse_dynamics(chain, q, qd, qdd), ref.rnea(q, qd, qdd), atol=1e-8)
    paired = paired_ratio(lambda: inverse_dynamics(chain, q, qd, qdd),
                          lambda: pin.rnea(model, data, qp, vp, ap), pairs=21 if quick else 101)
    return {"arm": name, "n": chain.n, "ours_us": ours, "pinocchio_us": theirs,
            "ratio": {a: ours[a] / theirs[b] for a, b in zip(OURS, THEIRS)},
            "inverse_dynamics_paired_ratio": paired}


def batched(quick, N=1000):
    """Per-sample us of inverse_dynamics on N (n,) states in one (N, n) call (Panda), against a
    Python loop over pin.rnea on the same states.
    """
    path = ROBOTS / "panda_description/urdf/panda.urdf"
    chain = load_chain(path, tip_link="panda_hand")
    ref = PinReference(path, chain)
    model, data = ref.reduced, ref.reduced_data
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-1, 1, (3, N, chain.n))
    states = [(ref.q_of(model, a), ref.v_of(model, b), ref.v_of(model, c))
              for a, b, c in zip(q, qd, qdd)]

    def loop():
        for s in states:
            pin.rnea(model, data, *s)

    budget = 0.05 if quick else 0.3
    ours = per_call_us(lambda: inverse_dynamics(chain, q, qd, qdd), repeat=5, budget=budget) / N
    args = (*chain.pack, q, qd, qdd, np.zeros(6), 1, np.empty((N, chain.n)))
    one_thread = per_call_us(lambda: newton_euler.inverse_dynamics_rows(*args), repeat=5,
                             budget=budget) / N
    theirs = per_call_us(loop, repeat=5, budget=budget) / N
    np.testing.assert_allclose(inverse_dynamics(chain, q, qd, qdd)[-1], ref.rnea(q[-1], qd[-1],
                                                                                 qdd[-1]),
                               atol=1e-8)
    return {"N": N, "n": chain.n, "threads": newton_euler.row_blocks(N), "ours_us_per_sample": ours,
            "one_thread_us_per_sample": one_thread, "pin_loop_us_per_sample": theirs,
            "speedup": theirs / ours, "one_thread_speedup": theirs / one_thread}


def trajectory_check(quick):
    """ms to check a 10 s trajectory of the 7-joint default arm (every 10 ms and every
    waypoint of the demo's 50 Hz sines), as the controller does at acceptance.
    """
    chain = load_chain(PACKAGE / "urdf" / "default_arm.urdf")
    q0, zero = np.array([0.0, 0.6, 0.0, -0.9, 0.0, 0.6, 0.0]), np.zeros(chain.n)
    trajectory = Trajectory(0.0, (q0, zero, zero), *sine_waypoints(q0, chain.lower, chain.upper))
    limits = effort_limits(chain)
    ms = per_call_us(lambda: trajectory_violation(chain, trajectory, limits), repeat=5,
                     budget=0.05 if quick else 0.3) / 1e3
    return {"samples": len(trajectory.check_times()), "ms": ms}


def frame_kinematics(quick):
    """us per call of the tip's pose and Jacobian (one call, frame_pose_and_jacobian) on the
    Panda, against pin.forwardKinematics + updateFramePlacement + computeFrameJacobian from
    Python on the reduced model (the chain's joints only), same q, same numbers.
    """
    path = ROBOTS / "panda_description/urdf/panda.urdf"
    chain = load_chain(path, tip_link="panda_hand")
    ref = PinReference(path, chain)
    model, data = ref.reduced, ref.reduced_data
    q = np.random.default_rng(2).uniform(-1, 1, chain.n)
    qp, fid = ref.q_of(model, q), model.getFrameId("panda_hand", pin.BODY)

    def theirs():
        pin.forwardKinematics(model, data, qp)
        pin.updateFramePlacement(model, data, fid)
        return pin.computeFrameJacobian(model, data, qp, fid, pin.LOCAL_WORLD_ALIGNED)

    R, p, J = frame_pose_and_jacobian(chain, q)
    np.testing.assert_allclose(J, theirs(), atol=1e-9)
    np.testing.assert_allclose(p, data.oMf[fid].translation, atol=1e-9)
    budget = 0.01 if quick else 0.05
    ours_us = per_call_us(lambda: frame_pose_and_jacobian(chain, q), budget=budget)
    theirs_us = per_call_us(theirs, budget=budget)
    paired = paired_ratio(lambda: frame_pose_and_jacobian(chain, q), theirs,
                          pairs=21 if quick else 101)
    return {"ours_us": ours_us, "pinocchio_us": theirs_us, "ratio": ours_us / theirs_us,
            "paired_ratio": paired}


# the per-call targets' arms: the Panda, and Kinova's Gen2 (six continuous joints), which the
# rest of this bench does not time
PER_CALL_ARMS = {"panda": ("panda_description/urdf/panda.urdf", {"tip_link": "panda_hand"}),
                 "kinova": ("kinova_description/robots/kinova.urdf", {})}


def panda_states(seed, arm="panda"):
    """The Panda (to panda_hand), or another of PER_CALL_ARMS, Pinocchio's reduced model and
    data of it, and random (q, qd, qdd) in ours and in Pinocchio's coordinates.
    """
    file, kwargs = PER_CALL_ARMS[arm]
    path = ROBOTS / file
    chain = load_chain(path, **kwargs)
    ref = PinReference(path, chain)
    model = ref.reduced
    q, qd, qdd = np.random.default_rng(seed).uniform(-1, 1, (3, chain.n))
    return (chain, model, ref.reduced_data, (q, qd, qdd),
            (ref.q_of(model, q), ref.v_of(model, qd), ref.v_of(model, qdd)))


def per_call(quick):
    """Paired ratios of our calls, written the two ways users write them (`import dyn_control
    as dc; dc.f(...)`, and `from dyn_control import f; f(...)`), against Pinocchio's, on each
    of PER_CALL_ARMS: inverse_dynamics / pin.rnea, mass_matrix / pin.crba. -> {arm: {call:
    {form: ratio}}}.
    """
    import dyn_control as dc

    out = {}
    for arm in PER_CALL_ARMS:
        chain, model, data, (q, qd, qdd), (qp, vp, ap) = panda_states(3, arm)
        np.testing.assert_allclose(  # same numbers, or the timing means nothing
            dc.mass_matrix(chain, q), pin.crba(model, data, qp), atol=1e-9)
        pairs = 21 if quick else 101
        calls = {
            "inverse_dynamics": ((lambda: dc.inverse_dynamics(chain, q, qd, qdd)),
                                 (lambda: inverse_dynamics(chain, q, qd, qdd)),
                                 (lambda: pin.rnea(model, data, qp, vp, ap))),
            "mass_matrix": ((lambda: dc.mass_matrix(chain, q)), (lambda: mass_matrix(chain, q)),
                            (lambda: pin.crba(model, data, qp))),
        }
        out[arm] = {name: {"dc.f": paired_ratio(module_form, theirs, pairs=pairs),
                           "from-import": paired_ratio(imported, theirs, pairs=pairs)}
                    for name, (module_form, imported, theirs) in calls.items()}
    return out


def identification(quick):
    """The identification benchmark: the joint torque regressor per sample on the Panda against
    pin.computeJointTorqueRegressor (the same 70 columns, checked equal first), and the whole
    fit of a 60 s recording at 1 kHz of the default arm (7 joints: the signal chain, the
    stacked regressor, the weighted least squares and the consistent SDP) in seconds.
    """
    from dyn_control.identification.excitation import optimize
    from dyn_control.identification.fit import BaseParameters, perturbed, regressor
    from dyn_control.identification.offline import identify

    chain, model, data, (q, qd, qdd), (qp, vp, ap) = panda_states(5)
    theirs = lambda: pin.computeJointTorqueRegressor(model, data, qp, vp, ap)  # noqa: E731
    ours = lambda: regressor(chain, q, qd, qdd, friction=False)  # noqa: E731
    np.testing.assert_allclose(ours(), theirs(), atol=1e-9)
    budget = 0.01 if quick else 0.05
    ours_us, theirs_us = per_call_us(ours, budget=budget), per_call_us(theirs, budget=budget)

    arm = PACKAGE / "urdf" / "default_arm.urdf"
    nominal = load_chain(arm)
    truth = perturbed(nominal, 0)
    start = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])
    trajectory, _ = optimize(nominal, BaseParameters(nominal), start, seed=0, candidates=4,
                             rounds=0)
    t = np.arange(0.0, 60.0, 1e-3)
    q, qd, qdd = trajectory(t)
    tau = (inverse_dynamics(truth, q, qd, qdd) + truth.damping * qd
           + truth.friction * np.sign(qd))
    began = time.perf_counter()
    identify(nominal, str(arm), (t, q, qd, tau))
    fit_s = time.perf_counter() - began
    return {"regressor_ours_us": ours_us, "regressor_pinocchio_us": theirs_us,
            "regressor_ratio": ours_us / theirs_us, "fit_60s_at_1khz_s": fit_s,
            "samples": len(t)}


def observer_tick(quick):
    """us per tick of the momentum observer on the Panda (7 joints): its update (p, C^T qd, g in
    one compiled pass, then the filter), and the wrench at the hand (the hand's Jacobian and a
    thresholded pseudo-inverse), against what Pinocchio needs for the same terms from Python:
    crba, computeCoriolisMatrix and computeGeneralizedGravity (C^T qd checked equal first).
    """
    from dyn_control.controller.observer import MomentumObserver, momentum_terms

    path = ROBOTS / "panda_description/urdf/panda.urdf"
    chain = load_chain(path, tip_link="panda_hand")
    ref = PinReference(path, chain)
    model, data = ref.reduced, ref.reduced_data
    q, qd, tau = np.random.default_rng(4).uniform(-1, 1, (3, chain.n))
    qp, vp = ref.q_of(model, q), ref.v_of(model, qd)

    def theirs():
        M = pin.crba(model, data, qp)
        C = pin.computeCoriolisMatrix(model, data, qp, vp)
        return M, C.T @ vp, pin.computeGeneralizedGravity(model, data, qp)

    np.testing.assert_allclose(momentum_terms(chain, q, qd)[1], theirs()[1], atol=1e-9)
    observer = MomentumObserver(chain, 50.0)
    clock = iter(range(10 ** 9))
    budget = 0.01 if quick else 0.05
    update = per_call_us(lambda: observer.update(next(clock) * 1e-3, q, qd, tau), budget=budget)
    frame, F = chain.frame("panda_hand"), np.empty(6)
    wrench = per_call_us(lambda: observer.wrench(q, frame, F), budget=budget)
    pin_us = per_call_us(theirs, budget=budget)
    # the controller's whole observe stage: the two above in one compiled call with both levels'
    # checks (the default parameters, ee_link the hand), at rest under g(q): no contact to say
    # (the same flops as in motion)
    from dyn_control.controller.core import ControllerCore
    from dyn_control.controller.settings import controller_settings
    from dyn_control.parameters import CONTROLLER
    values = {"ee_link": "panda_hand"}
    core = ControllerCore(controller_settings(chain, CONTROLLER.read(
        lambda name: values[name] if name in values else CONTROLLER.find(name).default,
        chain.joint_names)))
    rest, g = np.zeros(chain.n), momentum_terms(chain, q, np.zeros(chain.n))[2]
    stage = per_call_us(lambda: core.contact.observe((next(clock) * 1e-3, q, rest), g),
                        budget=budget)
    assert not core.contact.contact
    return {"update_us": update, "wrench_us": wrench, "pinocchio_terms_us": pin_us,
            "stage_us": stage}


def simulator_step(quick):
    """us per step of our Simulation (RK4, 1 ms, the passive step) against MuJoCo's mj_step
    with its RK4 integrator on the same URDF (inertials and joints only, contacts off), from
    Python, zero torque from q = 0.1; UR5 and xArm7 at rest with damping and friction off on
    both sides, so both do the same work; then the xArm7 with its URDF's damping and friction
    on both sides (MuJoCo's dof_damping and dof_frictionloss), moving at 0.5 rad/s: our staged
    damping and implicit friction against MuJoCo's (whose RK4 blows up under that damping at
    step 3 of a run: a single step from a state is timed). The target reads the paired ratio:
    single sides wandered 1.3x to 1.9x within the hour.
    """
    import mujoco

    from dyn_control.model.urdf import dynamics_only, read_urdf_text
    from dyn_control.sim.simulation import Simulation
    out = {}
    for name, rel, passive in (("ur5", "ur_description/urdf/ur5_robot.urdf", False),
                               ("xarm7", "xarm_description/urdf/xarm7.urdf", False),
                               ("xarm7_damping_friction", "xarm_description/urdf/xarm7.urdf",
                                True)):
        path = ROBOTS / rel
        chain = load_chain(path)
        model = mujoco.MjModel.from_xml_string(dynamics_only(read_urdf_text(path)).decode())
        assert model.nv == chain.n
        model.opt.timestep = 1e-3
        model.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        zero = np.zeros(chain.n)
        model.dof_damping[:] = chain.damping if passive else zero
        model.dof_frictionloss[:] = chain.friction if passive else zero
        data = mujoco.MjData(model)
        q0, qd0 = np.full(chain.n, 0.1), np.full(chain.n, 0.5 if passive else 0.0)
        sim = Simulation(chain, q0)
        if not passive:
            sim.damping, sim.friction = zero, zero

        # each step from the same state, both: a falling arm reaches its stops, where the
        # passive step iterates, and the figure would be of the pose, not of the step
        def ours_step():
            sim.q, sim.qd = q0, qd0
            sim.step(zero)

        def their_step():
            data.qpos[:], data.qvel[:] = q0, qd0
            mujoco.mj_step(model, data)
        budget = 0.01 if quick else 0.05
        ours = per_call_us(ours_step, budget=budget)
        theirs = per_call_us(their_step, budget=budget)
        paired = paired_ratio(ours_step, their_step, pairs=21 if quick else 41, loops=500)
        out[name] = {"ours_us": ours, "mujoco_us": theirs, "ratio": ours / theirs,
                     "paired_ratio": paired}
    return out


def startup_cost(quick):
    """Seconds from a fresh interpreter to the first results: compiling in an empty cache, then
    from that cache. quick: from the cache in use only (compiling costs 8 s of a test's run).
    """
    code = ("import time; t0 = time.perf_counter(); import numpy as np; "
            "from dyn_control import *; t1 = time.perf_counter(); "
            f"c = load_chain({str(PACKAGE / 'urdf' / 'two_link.urdf')!r}); q = np.zeros(2); "
            "inverse_dynamics(c, q, q, q); mass_matrix(c, q); forward_dynamics(c, q, q, q); "
            "kinetic_energy(c, q, q); potential_energy(c, q); t2 = time.perf_counter(); "
            "print(t1 - t0, t2 - t1)")
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = os.environ if quick else dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in (("later_runs_cached",) if quick else ("first_run_compile",
                                                             "later_runs_cached")):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True)
            imp, first = map(float, res.stdout.split())
            out[label] = {"import_s": imp, "first_calls_s": first}
    return out


def fit_exponent(ns, ts):
    """k in t = a + b n^k (least squares); a is the fixed per-call cost."""
    (a, b, k), _ = curve_fit(lambda n, a, b, k: a + b * n**k, np.array(ns, float), np.array(ts),
                             p0=(ts[0], 0.1, 1.5), bounds=([0, 0, 0.2], [np.inf, np.inf, 4]))
    return {"k": float(k), "a_us": float(a), "b_us": float(b)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=str(PACKAGE / "out" / "bench_dynamics.json"))
    parser.add_argument("--quick", action="store_true", help="short run (for tests)")
    args = parser.parse_args()

    rows = [measure(*case, args.quick) for case in arm_cases(args.quick)]
    head = (f"{'arm':20} {'n':>3} | " + " | ".join(f"{o[:16]:>16} us  x{t[:4]:<4}"
                                                  for o, t in zip(OURS, THEIRS)))
    print(head)
    print("-" * len(head))
    for r in rows:
        cells = " | ".join(f"{r['ours_us'][o]:16.2f} us  {r['ratio'][o]:5.2f}" for o in OURS)
        print(f"{r['arm']:20} {r['n']:>3} | {cells}")
    print("\nPinocchio (us): " + "; ".join(
        f"{r['arm']}: " + ", ".join(f"{t} {r['pinocchio_us'][t]:.2f}" for t in THEIRS)
        for r in rows))

    chains = [r for r in rows if r["arm"].startswith("chain")]
    fits = {}
    if len(chains) >= 4:
        ns = [r["n"] for r in chains]
        for fn in OURS:
            fits[fn] = fit_exponent(ns, [r["ours_us"][fn] for r in chains])
        print("\ngrowth in n, t = a + b n^k (a = fixed per-call cost):")
        for fn, f in fits.items():
            print(f"  {fn:17} k = {f['k']:.2f}   a = {f['a_us']:.2f} us   b = {f['b_us']:.4f} us")

    batch = batched(args.quick)
    print(f"\nbatched inverse_dynamics, N = {batch['N']} states of the panda "
          f"({batch['n']} joints): "
          f"{batch['ours_us_per_sample']:.2f} us per sample against "
          f"{batch['pin_loop_us_per_sample']:.2f} us for a Python loop over pin.rnea "
          f"({batch['speedup']:.1f}x, on {batch['threads']} threads; on one thread "
          f"{batch['one_thread_us_per_sample']:.2f} us, {batch['one_thread_speedup']:.1f}x)")
    check = trajectory_check(args.quick)
    print(f"trajectory check of a 10 s trajectory of the default arm ({check['samples']} samples):"
          f" {check['ms']:.2f} ms")

    frames = frame_kinematics(args.quick)
    print(f"pose + Jacobian of the panda's hand: {frames['ours_us']:.2f} us per call against "
          f"{frames['pinocchio_us']:.2f} us for pin.forwardKinematics + updateFramePlacement + "
          f"computeFrameJacobian ({frames['ratio']:.2f}x, paired {frames['paired_ratio']:.2f}x)")

    calls = per_call(args.quick)
    for arm, arm_calls in calls.items():
        print(f"as users call them, paired against Pinocchio on the {arm}: " + "; ".join(
            f"{name} {v['dc.f']:.2f}x as dc.{name}, {v['from-import']:.2f}x from-imported"
            for name, v in arm_calls.items()))

    obs = observer_tick(args.quick)
    print(f"momentum observer on the panda, per tick: update {obs['update_us']:.2f} us (Pinocchio's"
          f" crba + computeCoriolisMatrix + computeGeneralizedGravity for the same terms: "
          f"{obs['pinocchio_terms_us']:.2f} us), the wrench at the hand {obs['wrench_us']:.2f} us;"
          f" the controller's observe stage (both in one call, and the levels) "
          f"{obs['stage_us']:.2f} us")

    ident = identification(args.quick)
    print("identification: the joint torque regressor on the panda "
          f"{ident['regressor_ours_us']:.2f}"
          f" us per sample against {ident['regressor_pinocchio_us']:.2f} us for "
          f"pin.computeJointTorqueRegressor ({ident['regressor_ratio']:.2f}x); the whole fit of a "
          f"60 s recording at 1 kHz of the default arm {ident['fit_60s_at_1khz_s']:.2f} s")

    steps = simulator_step(args.quick)
    print("simulator step (RK4, 1 ms) against MuJoCo's RK4 mj_step, contacts off: " + "; ".join(
        f"{k} {v['ours_us']:.1f} us against {v['mujoco_us']:.1f} us ({v['ratio']:.2f}x, paired "
        f"{v['paired_ratio']:.2f}x)"
        for k, v in steps.items()))

    startup = startup_cost(args.quick)
    print("\nstart-up (fresh process): " + "; ".join(
        f"{k}: import {v['import_s']:.2f} s + first calls {v['first_calls_s']:.2f} s"
        for k, v in startup.items()))

    tree = next(r for r in rows if r["arm"].startswith("tiago_dual"))
    ratio_tree = tree["inverse_dynamics_paired_ratio"]
    targets = []
    for arm, arm_calls in calls.items():
        for name, theirs, limit in (("inverse_dynamics", "pin.rnea", 1.5),
                                    ("mass_matrix", "pin.crba", 3.0)):
            for form, value in arm_calls[name].items():
                targets.append((f"{arm}: {name} / {theirs} <= {limit:g} (paired, {form})",
                                value, value <= limit))
    targets += [
        ("pose + Jacobian of a 7-joint arm's hand / Pinocchio's <= 2 (paired)",
         frames["paired_ratio"], frames["paired_ratio"] <= 2),
        ("tree (tiago_dual, torso and both arms, 15 joints): inverse_dynamics / pin.rnea <= 3"
         " (paired)", ratio_tree, ratio_tree <= 3),
    ]
    for arm in steps:
        paired = steps[arm]["paired_ratio"]
        targets.append((f"{arm}: simulator step / MuJoCo's RK4 mj_step <= 1.2 (paired)", paired,
                        paired <= 1.2))
    targets.append(("batched inverse_dynamics at N = 1000: >= 5x a Python loop over pin.rnea",
                    batch["speedup"], batch["speedup"] >= 5))
    targets.append(("trajectory check, 10 s of a 7-joint arm: < 5 ms", check["ms"],
                    check["ms"] < 5))
    targets.append(("identification, the whole fit of 60 s at 1 kHz of a 7-joint arm: < 10 s",
                    ident["fit_60s_at_1khz_s"], ident["fit_60s_at_1khz_s"] < 10))
    if fits:
        k_id, k_m = fits["inverse_dynamics"]["k"], fits["mass_matrix"]["k"]
        targets += [("inverse_dynamics grows linearly (k ~ 1)", k_id, 0.7 <= k_id <= 1.3),
                    ("mass_matrix grows quadratically (k ~ 2)", k_m, 1.7 <= k_m <= 2.3)]
    print("\ntargets:")
    for label, value, ok in targets:
        print(f"  [{'met' if ok else 'MISSED'}] {label}: {value:.2f}")

    out = pathlib.Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "fits": fits, "startup": startup, "batched": batch,
                               "observer": obs, "identification": ident,
                               "trajectory_check": check, "frame_kinematics": frames,
                               "per_call": calls, "simulator_step": steps,
                               "targets": [{"target": t, "value": v, "met": bool(ok)}
                                           for t, v, ok in targets]}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
