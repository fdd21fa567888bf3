"""Identification in closed loop, in process: the arm identified from its own recordings
tracks a held-out trajectory nearly as well as the true URDF does, on the default arm and on
real arms' own files, with and without noise.

References: the controller given the true URDF (the loop's floor) and the nominal URDF, on
the same simulated truth and trajectory; the bounds are in each test.
"""

import numpy as np
import pytest
from conftest import DEFAULT_ARM, PIN_ARMS, require, robots_dir
from in_process_loop import track

from dyn_control import load_chain
from dyn_control.identification.excitation import optimize
from dyn_control.identification.fit import (
    BaseParameters,
    parameters,
    perturbed,
    regressor,
)
from dyn_control.identification.offline import identify as identify_run

pytestmark = pytest.mark.slow  # 3 to 6 s per closed loop, a minute for the file

# dynamics_simulator's effort is the torque held over the step before each state
SIM_EFFORT_DELAY = 0.0005


def closed_loop_figures(chain, truth, trajectory, held_out, noise_seed=None, periods=2,
                        source=DEFAULT_ARM, **load):
    """The identification's closed loop, in process: the nominal controller drives the truth through
    `periods` of the excitation and one of the validation run; identify() fits their
    recordings (applied effort, measured q; with noise_seed, the identification tests' noise added
    to both: sigma_q = 1e-4 rad, effort 1 % of each joint's RMS); then on the held-out trajectory,
    computed torque with integral off given the nominal, the identified and the true URDF.
    The identified URDF is written into `source`, the file the chain came from (load: its
    load_chain keywords), and loaded back from that text.
    -> the RMS tracking error of each (worst joint's RMS, rad).
    """
    runs = []
    for traj, count in ((trajectory, periods), (held_out, 1)):
        t, q, qd, effort, _ = track(chain, truth, traj, periods=count)
        if noise_seed is not None:
            rng = np.random.default_rng(noise_seed)
            rms = np.sqrt((effort ** 2).mean(axis=0))
            q = q + 1e-4 * rng.normal(size=q.shape)
            effort = effort + 0.01 * rms * rng.normal(size=effort.shape)
        runs.append((t, q, qd, effort))
    urdf_text, _ = identify_run(chain, source, *runs, effort_delay=SIM_EFFORT_DELAY)
    figures = {}
    for key, model in (("nominal", chain), ("identified", load_chain(urdf_text, **load)),
                       ("truth", truth)):
        error = track(model, truth, held_out)[-1]
        figures[key] = np.sqrt((error ** 2).mean(axis=0)).max()
    return figures


def without_friction(truth):
    """The truth with no damping and no Coulomb friction on any joint (its inertials kept)."""
    from dataclasses import replace
    return replace(truth, joints=[replace(j, damping=0.0, friction=0.0) for j in truth.joints])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_loop_within_1_5x_of_the_true_urdf(default_setup, seed):
    """The perturbed truth, with its damping and Coulomb friction, simulated as a real arm
    (REAL_ARM_SUBSTEPS: one step per millisecond), and 20 s of excitation: the identified URDF
    tracks the held-out trajectory within 1.5x of the controller given the true URDF (1.01x,
    1.00x, 1.00x seen, the same on every machine since pivoted_qr breaks ties alike; 1.21x to
    1.44x with the first-order passive step at ten substeps) and at least 10x better than the
    nominal one (1001x to 2108x seen). The bound holds for the excitation this pipeline finds,
    not for every equally valid one: with the ties among a body's ixx, iyy and izz columns
    broken otherwise, the base parameters and so the optimized excitation differ (with the
    earlier step, 1.46x to 1.66x).
    """
    require("clarabel")
    chain, _, trajectory, _, held_out = default_setup
    rms = closed_loop_figures(chain, perturbed(chain, seed), trajectory, held_out)
    assert rms["identified"] <= 1.5 * rms["truth"], rms
    assert rms["nominal"] >= 10 * rms["identified"], rms


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_loop_with_noise_within_3x_of_the_true_urdf(default_setup, seed):
    """The same with the identification tests' noise on both recordings (sigma_q = 1e-4 rad, effort
    1 % of each joint's RMS) and 60 s of excitation, the benchmark's length: within 3x of the
    truth and at least 5x better than the nominal URDF. Seen: 1.48x, 2.50x, 2.16x (the
    identified URDF's error 1.3e-4, 1.2e-4, 1.2e-4 rad; the truth's floor is 5e-5 to 9e-5).
    What is left is the position noise through q-double-dot, a bias that grows as the motion
    shrinks, not the effort noise, which averages out (80 s is not better: 2.0x, 3.0x, 1.8x).
    """
    require("clarabel")
    chain, _, trajectory, _, held_out = default_setup
    rms = closed_loop_figures(chain, perturbed(chain, seed), trajectory, held_out,
                              noise_seed=seed, periods=6)
    assert rms["identified"] <= 3.0 * rms["truth"], rms
    assert rms["nominal"] >= 5 * rms["identified"], rms


def test_the_effort_delay_pairs_the_simulators_effort_with_its_motion(default_setup):
    """signals.prepare with effort_delay: the simulator's effort, held over the step before
    each state, read half a step later is the torque at the state's time. On the in-process
    loop, the truth's own regressor predicts the delayed effort at least 10x closer than the
    raw one (240x seen; the raw pairing is off by the torque's change over half a step).
    """
    require("scipy.signal")
    from dyn_control.identification.signals import prepare
    chain, _, trajectory, _, _ = default_setup
    truth = without_friction(perturbed(chain, 0))
    t, q, _, effort, _ = track(chain, truth, trajectory)
    pi = parameters(truth)
    errors = []
    for delay in (0.0, SIM_EFFORT_DELAY):
        qf, qdf, qddf, ef = prepare(t, q, effort, effort_delay=delay)
        predicted = np.array([regressor(chain, *x) @ pi for x in zip(qf, qdf, qddf)])
        errors.append(np.sqrt(((predicted - ef) ** 2).mean()))
    assert errors[1] * 10 <= errors[0], errors


def real_arm_setup(name):
    """(URDF path, load_chain keywords, chain, excitation, held-out trajectory) of an arm of
    ARMS or the UR10, from the simulator's default start (where make identify starts it).
    """
    from dyn_control.poses import default_initial_positions
    rel, kwargs = {**PIN_ARMS, "ur10": ("ur_description/urdf/ur10_robot.urdf", {})}[name]
    path = robots_dir() / rel
    chain = load_chain(path, **kwargs)
    base = BaseParameters(chain)
    start = default_initial_positions(chain)
    trajectory, _ = optimize(chain, base, start, seed=0)
    held_out, _ = optimize(chain, base, start, seed=1, candidates=4, rounds=0)
    return path, kwargs, chain, trajectory, held_out


@pytest.mark.parametrize("name,seen", [("ur5", "1.02x, 1185x"), ("panda", "1.00x, 1604x"),
                                       ("ur10", "1.32x, 1737x")])
def test_a_real_arms_own_file_identified_tracks_within_1_5x_of_the_truth(name, seen):
    """Example-robot-data's files, unchanged (the UR5's and UR10's with their
    <transmission>s, the Panda's with its hand and fingers lumped into panda_link7); the truth a
    perturbed copy with viscous and Coulomb friction and a 1 kg tool, the excitation from the
    simulator's default start, where make identify starts. The identified URDF, written into
    the arm's own file and loaded back from it, tracks the held-out trajectory within 1.5x of
    the true URDF and at least 10x better than the nominal file (`seen`: the two figures).
    With the friction written into the UR5's transmissions instead, it was 1.1x better than
    nominal; with the Panda started at joint 6's stop, 0.0175 rad above it, the excitation
    could not move that joint and the loop was at 1.98x.
    """
    require("clarabel")
    path, kwargs, chain, trajectory, held_out = real_arm_setup(name)
    rms = closed_loop_figures(chain, perturbed(chain, 0), trajectory, held_out, source=path,
                              **kwargs)
    assert rms["identified"] <= 1.5 * rms["truth"], rms
    assert rms["nominal"] >= 10 * rms["identified"], rms
