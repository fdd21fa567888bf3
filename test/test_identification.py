"""Identification (dyn_control.identification.fit): the joint torque regressor.

References: our own inverse dynamics with the URDF's damping and friction (tau = Y pi, an
identity), and Pinocchio's computeJointTorqueRegressor and dynamic parameters, on arms of
example-robot-data (a prismatic torso among them) and on a tree.
"""

import json

import numpy as np
import pytest
from conftest import DEFAULT_ARM, IDENTIFICATION_START, PIN_ARMS, URDF_DIR, require, robots_dir

from dyn_control import inverse_dynamics, load_chain
from dyn_control.identification.fit import (
    INERTIAL,
    BaseParameters,
    consistent_fit,
    fit,
    identified_urdf,
    parameter_names,
    parameters,
    perturbed,
    pivoted_qr,
    regressor,
)
from dyn_control.identification.offline import main as identify_main
from dyn_control.identification.offline import samples as recorded_samples
from dyn_control.identification.signals import check_recording
from dyn_control.model.inertia import check_inertia
from dyn_control.recording import write_states

ARMS = PIN_ARMS


def arm(name):
    """(URDF path, chain) of an arm of ARMS, the default arm or the dual-arm tree."""
    if name == "default_arm":
        return DEFAULT_ARM, load_chain(DEFAULT_ARM)
    if name == "dual_arm_tree":
        path = URDF_DIR / "dual_arm.urdf"
        return path, load_chain(path, tip_links=["left_tool", "right_tool"])
    rel, kwargs = ARMS[name]
    path = robots_dir() / rel
    return path, load_chain(path, **kwargs)


def states(chain, count, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, (count, 3, chain.n))


@pytest.mark.parametrize("name", ["default_arm", *ARMS, "dual_arm_tree"])
def test_the_regressor_times_the_parameters_is_the_inverse_dynamics(name):
    """Y pi = inverse dynamics + damping qd + friction sign(qd), to 1e-12 of the largest
    torque, at random states (the URDF's friction as the simulator's Coulomb term).
    """
    _, chain = arm(name)
    pi = parameters(chain)
    assert len(pi) == len(parameter_names(chain)) == (INERTIAL + 3) * chain.n
    for q, qd, qdd in states(chain, 10):
        tau = (inverse_dynamics(chain, q, qd, qdd) + chain.damping * qd
               + chain.friction * np.sign(qd))
        Y = regressor(chain, q, qd, qdd)
        np.testing.assert_allclose(Y @ pi, tau, rtol=0, atol=1e-12 * np.abs(tau).max())


@pytest.mark.parametrize("name", [*ARMS, "dual_arm_tree"])
def test_the_regressor_and_parameters_match_pinocchio(name):
    """Our inertial columns against pin.computeJointTorqueRegressor on the model with the
    off-chain joints locked (its bodies are ours: the same lumping), and each body's pi_i
    against Pinocchio's dynamic parameters of the same body; 1e-9 relative.
    """
    pin = require("pinocchio")
    from pin_reference import PinReference
    path, chain = arm(name)
    ref = PinReference(path, chain)
    model = ref.reduced
    data = model.createData()
    ids = [model.getJointId(joint) for joint in chain.joint_names]
    assert all(0 < j < model.njoints for j in ids)
    rows = [model.joints[j].idx_v for j in ids]
    cols = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in ids])
    pi = parameters(chain, friction=False)
    theirs = np.concatenate([model.inertias[j].toDynamicParameters() for j in ids])
    np.testing.assert_allclose(pi, theirs, rtol=0, atol=1e-9 * np.abs(theirs).max())
    for q, qd, qdd in states(chain, 5, seed=1):
        Y = pin.computeJointTorqueRegressor(model, data, ref.q_of(model, q), ref.v_of(model, qd),
                                            ref.v_of(model, qdd))
        expected = Y[np.ix_(rows, cols)]
        ours = regressor(chain, q, qd, qdd, friction=False)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("name", ["default_arm", "panda", "tiago_prismatic_torso", "dual_arm_tree"])
def test_the_base_parameters_explain_every_torque(name):
    """Y pi = Y_b beta at states the decomposition never saw (1e-12 of the largest torque);
    the rank is numpy's matrix_rank (SVD) of the stacked regressor, and the base columns are of
    full rank; a body-1 parameter that the first joint cannot feel alone (its mass) is not a
    base parameter by itself.
    """
    _, chain = arm(name)
    base = BaseParameters(chain, samples=60)
    pi = parameters(chain)
    W = np.vstack([regressor(chain, q, qd, qdd) for q, qd, qdd in states(chain, 40, seed=7)])
    np.testing.assert_allclose(base.columns(W) @ base.of(pi), W @ pi, rtol=0,
                               atol=1e-12 * np.abs(W @ pi).max())
    k = len(base.independent)
    assert np.linalg.matrix_rank(W) == k == np.linalg.matrix_rank(base.columns(W))
    assert f"{chain.joint_names[0]}.m" not in base.regrouping
    assert len(base.regrouping) == k < len(pi)


def test_pivoted_qr_matches_lapacks_pivoting():
    """pivoted_qr against scipy.linalg.qr(pivoting=True) (LAPACK geqp3) on a badly scaled
    matrix with a dependent and a zero column: the same order, |diag R| to 1e-9, rank 28.
    """
    linalg = require("scipy.linalg")
    rng = np.random.default_rng(0)
    W = rng.normal(size=(200, 30)) * 10.0 ** rng.uniform(-3, 3, 30)
    W[:, 5], W[:, 9] = 3 * W[:, 2] - W[:, 7], 0.0
    R, order = pivoted_qr(W)
    _, R2, order2 = linalg.qr(W, pivoting=True, mode="economic")
    assert len(R) == 28 == np.linalg.matrix_rank(W)
    np.testing.assert_array_equal(order[:28], order2[:28])
    np.testing.assert_allclose(np.abs(np.diag(R)), np.abs(np.diag(R2))[:28], rtol=1e-9)


def samples(chain, truth, trajectory, step=1e-2):
    """Stacked nominal regressor rows and the truth's torques (its own inverse dynamics and
    friction: an independent route) along a period of the trajectory.
    """
    t = np.arange(0.0, trajectory.period, step)
    W, tau = [], []
    for q, qd, qdd in zip(*trajectory(t)):
        W.append(regressor(chain, q, qd, qdd))
        tau.append(inverse_dynamics(truth, q, qd, qdd) + truth.damping * qd
                   + truth.friction * np.sign(qd))
    return np.vstack(W), np.concatenate(tau)


def test_the_excitation_is_at_rest_at_both_ends_and_inside_the_limits(default_setup):
    """qd = qdd = 0 and q = the start at t = 0 and after a whole period (1e-12); position,
    velocity (URDF) and effort (the model's torques) within the limits at 2001 samples.
    """
    chain, _, trajectory, cond, _ = default_setup
    q, qd, qdd = trajectory(np.linspace(0.0, trajectory.period, 2001))
    for k in (0, -1):
        np.testing.assert_allclose(q[k], IDENTIFICATION_START, atol=1e-12)
        np.testing.assert_allclose(qd[k], 0.0, atol=1e-12)
        np.testing.assert_allclose(qdd[k], 0.0, atol=1e-12)
    assert np.all((q >= chain.lower) & (q <= chain.upper))
    assert np.all(np.abs(qd) <= chain.velocity_limits)
    tau = np.array([inverse_dynamics(chain, *x) for x in zip(q, qd, qdd)])
    assert np.all(np.abs(tau) <= chain.effort_limits)
    assert 1.0 <= cond < 100.0  # the scaled base regressor; what the optimizer reached


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_free_identification_recovers_the_truth(default_setup, seed):
    """A perturbed truth (identification.perturbed: the identification tests' recipe) seen through
    its exact states and torques: the base parameters within 0.5 % (relative norm), friction within
    1 %, and a held-out trajectory's torques within 0.5 % of each joint's RMS; the nominal model
    is far off by the same measure (> 10 %), so the check has teeth.
    """
    chain, base, trajectory, _, held_out = default_setup
    truth = perturbed(chain, seed)
    W, tau = samples(chain, truth, trajectory)
    beta = fit(base.columns(W), tau, chain.n).beta
    true_beta = base.of(parameters(truth))
    error = np.linalg.norm(beta - true_beta) / np.linalg.norm(true_beta)
    assert error <= 5e-3
    assert np.linalg.norm(base.of(parameters(chain)) - true_beta) / np.linalg.norm(true_beta) > 0.1
    names = [base.regrouping[i] for i in range(len(beta))]
    for kind, values in (("viscous", truth.damping), ("coulomb", truth.friction)):
        for joint, value in zip(chain.joint_names, values):
            k = names.index(f"{joint}.{kind}")  # each friction term is a base parameter alone
            assert abs(beta[k] - value) <= 0.01 * max(value, 1e-3) + 1e-9
    W2, tau2 = samples(chain, truth, held_out)
    predicted = (base.columns(W2) @ beta).reshape(-1, chain.n)
    rms = np.sqrt((tau2.reshape(-1, chain.n) ** 2).mean(axis=0))
    assert np.all(np.abs(predicted - tau2.reshape(-1, chain.n)).max(axis=0) <= 5e-3 * rms)


def test_with_effort_noise_the_truth_is_inside_the_reported_bound(default_setup):
    """Effort noise of 1 % of each joint's RMS torque on exact states (the signal chain of
    filtering and differentiation is not built yet): the base parameters within 3 %, and the
    truth inside the 99.9 % ellipsoid of the reported covariance (chi-square with k degrees
    of freedom, scipy's quantile); one seed of noise.
    """
    stats = require("scipy.stats")
    chain, base, trajectory, _, _ = default_setup
    truth = perturbed(chain, 0)
    W, tau = samples(chain, truth, trajectory)
    rms = np.sqrt((tau.reshape(-1, chain.n) ** 2).mean(axis=0))
    noise = (np.random.default_rng(4).normal(size=tau.shape)
             * np.tile(0.01 * rms, len(tau) // chain.n))
    result = fit(base.columns(W), tau + noise, chain.n)
    beta, true_beta = result.beta, base.of(parameters(truth))
    assert np.linalg.norm(beta - true_beta) / np.linalg.norm(true_beta) <= 0.03
    assert np.all(np.isfinite(result.relative_std))
    d = beta - true_beta
    assert d @ np.linalg.solve(result.covariance, d) <= stats.chi2.ppf(0.999, len(beta))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_perturbed_truth_is_a_physical_arm(seed):
    """Every body of the truth passes the loader's own inertia checks, its 4 x 4
    pseudo-inertia is positive definite (numpy's eigenvalues), and the proximal joints carry
    the friction of the recipe.
    """
    chain = load_chain(DEFAULT_ARM)
    truth = perturbed(chain, seed)
    for i in range(chain.n):
        assert not check_inertia(f"body {i}", truth.mass[i], truth.inertia[i])
        I, h, m = truth.inertia_origin[i], truth.h[i], truth.mass[i]  # noqa: E741
        pseudo = np.block([[0.5 * np.trace(I) * np.eye(3) - I, h[:, None]],
                           [h[None, :], np.array([[m]])]])
        assert np.linalg.eigvalsh(pseudo).min() > 0
    proximal = (chain.n + 1) // 2
    assert np.all((0.5 <= truth.damping[:proximal]) & (truth.damping[:proximal] <= 3.0))
    assert np.all((1.0 <= truth.friction[:proximal]) & (truth.friction[:proximal] <= 5.0))


def pseudo_inertia_eigenvalues(pi, n):
    """The smallest eigenvalue (numpy) of each body's 4 x 4 pseudo-inertia in pi."""
    out = []
    for i in range(n):
        m, h = pi[10 * i], pi[10 * i + 1:10 * i + 4]
        xx, xy, yy, xz, yz, zz = pi[10 * i + 4:10 * i + 10]
        I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])  # noqa: E741
        J = np.block([[0.5 * np.trace(I) * np.eye(3) - I, h[:, None]],
                      [h[None, :], np.array([[m]])]])
        out.append(np.linalg.eigvalsh(J).min())
    return np.array(out)


def test_the_consistent_fit_is_physical_and_fits_as_well(default_setup):
    """With 1 % effort noise: the consistent fit's bodies all have a positive semidefinite
    pseudo-inertia (numpy's eigenvalues >= -1e-9) and friction >= 0, where the plain
    least-squares solution on the full parameters is not physical; its residual is at most
    1.1x the plain base fit's; its base parameters are within 3 % of the truth's.
    """
    require("clarabel")
    chain, base, trajectory, _, _ = default_setup
    truth = perturbed(chain, 1)
    W, tau = samples(chain, truth, trajectory)
    rms = np.sqrt((tau.reshape(-1, chain.n) ** 2).mean(axis=0))
    tau = tau + (np.random.default_rng(5).normal(size=tau.shape)
                 * np.tile(0.01 * rms, len(tau) // chain.n))
    unconstrained = np.linalg.lstsq(W, tau, rcond=None)[0]
    assert pseudo_inertia_eigenvalues(unconstrained, chain.n).min() < -1e-6
    pi = consistent_fit(W, tau, chain.n, parameters(chain))
    assert pseudo_inertia_eigenvalues(pi, chain.n).min() >= -1e-9
    assert np.all(pi[INERTIAL * chain.n:(INERTIAL + 2) * chain.n] >= -1e-9)
    plain = fit(base.columns(W), tau, chain.n)
    assert (np.linalg.norm(tau - W @ pi)
            <= 1.1 * np.linalg.norm(tau - base.columns(W) @ plain.beta))
    true_beta = base.of(parameters(truth))
    assert np.linalg.norm(base.of(pi) - true_beta) / np.linalg.norm(true_beta) <= 0.03


@pytest.mark.parametrize("name", ["default_arm", "panda"])
def test_the_identified_urdf_loads_as_the_fit(name):
    """identified_urdf with a perturbed truth's parameters, loaded back the same way: its
    chain's inertial parameters, damping and friction are the ones written (1e-9 relative),
    the Panda's hand and fingers included (their share sits on panda_link7).
    """
    path, chain = arm(name)
    pi = parameters(perturbed(chain, 2))
    kwargs = ARMS[name][1] if name in ARMS else {}
    loaded = load_chain(identified_urdf(path, chain, pi), **kwargs)
    assert loaded.joint_names == chain.joint_names
    written = parameters(loaded)
    n = chain.n
    np.testing.assert_allclose(written[:(INERTIAL + 2) * n], pi[:(INERTIAL + 2) * n], rtol=0,
                               atol=1e-9 * np.abs(pi).max())


def recording(truth, trajectory, seed, periods=2, sigma_q=1e-4, effort_share=0.01):
    """A 1 kHz recording of the truth following the trajectory exactly, with the identification
    tests' noise: sigma_q on q and effort_share of each joint's RMS torque on the efforts -> (t, q,
    effort, the true torques, each joint's RMS torque).
    """
    t = np.arange(0.0, periods * trajectory.period, 1e-3)
    q, qd, qdd = trajectory(t)
    tau = np.array([inverse_dynamics(truth, *x) + truth.damping * x[1]
                    + truth.friction * np.sign(x[1]) for x in zip(q, qd, qdd)])
    rng = np.random.default_rng(seed)
    rms = np.sqrt((tau ** 2).mean(axis=0))
    return (t, q + sigma_q * rng.normal(size=q.shape),
            tau + effort_share * rms * rng.normal(size=tau.shape), tau, rms)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identification_through_the_signal_chain_with_noise(default_setup, seed):
    """The noisy case, in process: sigma_q = 1e-4 rad and effort noise of 1 % of each
    joint's RMS torque, through signals.prepare (filtering, differentiation, the samples kept)
    and the weighted fit: the base parameters within 3 % of the truth's (relative norm), the
    held-out trajectory's torques within 3 % of each proximal joint's RMS and 5 % on the wrist
    (RMS of the error), and the truth inside the 99.9 % ellipsoid of the covariance.
    """
    require("scipy.signal")
    stats = require("scipy.stats")
    chain, base, trajectory, _, held_out = default_setup
    truth = perturbed(chain, seed)
    t, q_measured, effort, _, _ = recording(truth, trajectory, seed)
    W, tau = recorded_samples(chain, (t, q_measured, np.gradient(q_measured, t, axis=0), effort))
    result = fit(base.columns(W), tau, chain.n)
    true_beta = base.of(parameters(truth))
    assert np.linalg.norm(result.beta - true_beta) / np.linalg.norm(true_beta) <= 0.03
    d = result.beta - true_beta
    assert d @ np.linalg.solve(result.covariance, d) <= stats.chi2.ppf(0.999, len(d))
    t2 = np.arange(0.0, held_out.period, 1e-2)
    states = list(zip(*held_out(t2)))
    true = np.array([inverse_dynamics(truth, *x) + truth.damping * x[1]
                     + truth.friction * np.sign(x[1]) for x in states])
    predicted = np.array([base.columns(regressor(chain, *x)) @ result.beta for x in states])
    rms = np.sqrt((true ** 2).mean(axis=0))
    error = np.sqrt(((predicted - true) ** 2).mean(axis=0)) / rms
    proximal = (chain.n + 1) // 2
    assert np.all(error[:proximal] <= 0.03) and np.all(error[proximal:] <= 0.05)


def test_the_position_filter_follows_the_recordings_noise(default_setup):
    """signals.position_noise reads a known white noise's sigma from the third differences of
    the excitation (within 5 %: the MAD of 20k samples a joint varies by about 1 %), and
    position_cutoff picks the highest cutoff whose noise in qdd stays under 2 % of the
    motion's RMS qdd: 20 Hz without noise, the lowest, 5 Hz, at 1e-3 rad, and at the identification
    tests' 1e-4 rad the cutoff that the known noise itself, filtered and differentiated twice, shows
    to be the highest under 2 % (within a quarter of it: the rule is spectral, this measures
    one draw). Which one that is depends on the optimized excitation's RMS qdd, which moves
    with the machine's floating point: 10 Hz (1.9 %) on one machine, 7 Hz on another, where
    10 Hz let in 2.26 %.
    """
    require("scipy.signal")
    from scipy.signal import butter, filtfilt

    from dyn_control.identification.signals import CUTOFFS, position_cutoff, position_noise
    _, _, trajectory, _, _ = default_setup
    t = np.arange(0.0, 2 * trajectory.period, 1e-3)
    q = trajectory(t)[0]
    noise = np.random.default_rng(0).normal(size=q.shape)
    np.testing.assert_allclose(position_noise(q + 1e-4 * noise), 1e-4, rtol=0.05)
    assert position_noise(q).max() < 1e-8
    assert position_cutoff(t, q) == CUTOFFS[0] and position_cutoff(t, q + 1e-3 * noise) == 5.0

    def second_derivative(x):
        return np.gradient(np.gradient(x, 1e-3, axis=0), 1e-3, axis=0)

    motion = second_derivative(filtfilt(*butter(2, CUTOFFS[-1] / 500.0), q, axis=0))
    signal = np.sqrt((motion ** 2).mean())
    share = {c: np.sqrt((second_derivative(filtfilt(*butter(2, c / 500.0), 1e-4 * noise,
                                                    axis=0)) ** 2).mean(axis=0)).max() / signal
             for c in CUTOFFS}
    chosen = position_cutoff(t, q + 1e-4 * noise)
    assert share[chosen] <= 1.25 * 0.02, share
    higher = [c for c in CUTOFFS if c > chosen]
    assert not higher or share[min(higher)] > 0.8 * 0.02, share


def test_huber_weights_take_the_pull_of_a_few_bad_rows_away():
    """Reference: a known parameter vector. 3 % of the rows of a 3-joint regression carry a
    residual of 100 noise sigmas whose sign follows a column (as friction's jump, smeared by
    the filter, follows the motion); plain least squares is pulled by far more than the noise
    allows (over 20 standard errors; 189 seen), and with huber_weights the estimate is back
    within 5 (3.9 seen). The bad rows' weights fall below 0.2, the median good row keeps 1.
    """
    from dyn_control.identification.fit import huber_weights
    rng = np.random.default_rng(0)
    n, samples, count = 3, 2000, 6
    rows = rng.normal(size=(samples * n, count))
    beta = rng.normal(size=count)
    target = rows @ beta + 1e-3 * rng.normal(size=samples * n)
    bad = rng.choice(samples * n, size=samples * n * 3 // 100, replace=False)
    target[bad] += 0.1 * np.sign(rows[bad, 0])  # correlated with a column: a bias
    standard_error = 1e-3 / np.sqrt(samples * n)
    plain = np.linalg.lstsq(rows, target, rcond=None)[0]
    weights = huber_weights(rows, target, n)
    robust = np.linalg.lstsq(rows * weights[:, None], target * weights, rcond=None)[0]
    assert np.abs(plain - beta).max() > 20 * standard_error
    assert np.abs(robust - beta).max() < 5 * standard_error, np.abs(robust - beta).max()
    good = np.setdiff1d(np.arange(samples * n), bad)
    assert weights[bad].max() < 0.2 and np.median(weights[good]) == 1.0


def test_states_the_recorder_missed_split_the_recording_and_bias_nothing(default_setup):
    """A recording with 40 gaps of 5 to 60 ms (states a starved recorder lost; 62 ms seen over
    DDS under load): signals.prepare takes each stretch alone, and the base parameters from
    the exact torques stay within the identification tests' noise-free 0.5 % of the truth's
    (relative norm).
    """
    require("scipy.signal")
    chain, base, trajectory, _, _ = default_setup
    truth = perturbed(chain, 0)
    t, q, effort, _, _ = recording(truth, trajectory, 0, sigma_q=0.0, effort_share=0.0)
    rng = np.random.default_rng(3)
    keep = np.ones(len(t), dtype=bool)
    for start in rng.choice(len(t) - 100, 40, replace=False):
        keep[start:start + rng.integers(5, 60)] = False
    t, q, effort = t[keep], q[keep], effort[keep]
    assert (np.diff(t) > 4e-3).sum() >= 30  # the gaps are there
    W, tau = recorded_samples(chain, (t, q, np.gradient(q, t, axis=0), effort))
    result = fit(base.columns(W), tau, chain.n)
    true_beta = base.of(parameters(truth))
    assert np.linalg.norm(result.beta - true_beta) / np.linalg.norm(true_beta) <= 0.005


def test_a_bad_recording_is_refused_with_one_line_naming_it(default_setup):
    """check_recording: None for a good recording; one line naming the fault and its value
    for a non-finite sample, a short run, a joint that never moves, saturated efforts.
    """
    chain, _, trajectory, _, _ = default_setup
    t, q, effort, _, _ = recording(chain, trajectory, 0, periods=1)
    qd = np.gradient(q, t, axis=0)
    limits, names = chain.effort_limits, chain.joint_names
    assert check_recording(t, q, qd, effort, limits, names) is None
    bad = effort.copy()
    bad[100, 2] = np.nan
    message = check_recording(t, q, qd, bad, limits, names)
    assert message == f"recording refused: a non-finite effort at sample 100 of {len(t)}"
    message = check_recording(t[:1000], q[:1000], qd[:1000], effort[:1000], limits, names)
    assert message.startswith("recording refused: too short, 0.999 s of 1000 samples")
    still = q.copy()
    still[:, 4] = 0.3
    message = check_recording(t, still, qd, effort, limits, names)
    assert message == "recording refused: joint5 never moves, its range is 0.00e+00 (at least 0.01)"
    saturated = effort.copy()
    saturated[:500, 1] = limits[1]
    message = check_recording(t, q, qd, saturated, limits, names)
    assert message.startswith("recording refused: joint2's effort is saturated in")
    assert "(limit" in message


def test_identify_from_bags_writes_a_urdf_that_predicts_the_validation_run(default_setup,
                                                                           tmp_path, capsys):
    """The offline workflow: two rosbag2 (MCAP) recordings of a noisy truth, written with
    rosbags, then `identify --from-bag --validation`: exit 0; the URDF it writes loads and
    carries the consistent fit; its report predicts the validation run within 3 % of each
    joint's RMS torque where the nominal URDF is off by more than 10 %; the PNG exists. A
    recording with a non-finite effort is refused: exit 2, one line, no URDF written.
    """
    require("rosbags")
    require("clarabel")
    chain, _, trajectory, _, held_out = default_setup
    truth = perturbed(chain, 0)
    for name, traj, seed in (("excitation", trajectory, 0), ("validation", held_out, 1)):
        t, q, effort, _, _ = recording(truth, traj, seed)
        write_states(tmp_path / name, t + 5.0, chain.joint_names, q,
                     np.gradient(q, t, axis=0), effort)
    out = tmp_path / "out"
    code = identify_main(["--urdf", str(DEFAULT_ARM), "--from-bag", str(tmp_path / "excitation"),
                          "--validation", str(tmp_path / "validation"), "--out", str(out),
                          "--name", "arm"])
    assert code == 0
    loaded = load_chain(out / "identified_arm.urdf")
    report = json.loads((out / "identify_arm.json").read_text())
    n = chain.n
    np.testing.assert_allclose(parameters(loaded)[:12 * n], report["parameters"][:12 * n],
                               rtol=0, atol=1e-9 * np.abs(report["parameters"]).max())
    assert max(report["validation_identified_rms_error_share"]) <= 0.03
    assert min(report["validation_nominal_rms_error_share"]) > 0.10
    assert report["residual_consistent_over_plain"] <= 1.1
    assert (out / "identify_arm.png").stat().st_size > 10_000
    # a bad recording: refused in one line, nothing written
    t, q, effort, _, _ = recording(truth, trajectory, 2)
    effort[300, 3] = np.inf
    write_states(tmp_path / "bad", t, chain.joint_names, q, np.gradient(q, t, axis=0), effort)
    capsys.readouterr()
    code = identify_main(["--urdf", str(DEFAULT_ARM), "--from-bag", str(tmp_path / "bad"),
                          "--out", str(tmp_path / "bad_out")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "bad_out").exists()
    assert err == f"identify: recording refused: a non-finite effort at sample 300 of {len(t)}\n"


def test_identify_help_gives_both_forms_and_a_refit_does_not_overwrite_the_live_urdf(
        monkeypatch, capsys):
    """`identify --help` (the console script) names the live node's ROS parameters and prints
    the offline fit's options, exit 0; a refit's default name is the URDF's with _refit.
    """
    from dyn_control.nodes import entry
    monkeypatch.setattr("sys.argv", ["identify", "--help"])
    with pytest.raises(SystemExit) as stop:
        entry.identify()
    out = capsys.readouterr().out
    assert stop.value.code == 0
    assert out.startswith("live: identify --ros-args -p urdf_file:=ARM.urdf")
    assert "--from-bag" in out and "--effort-delay" in out and "_refit" in out
