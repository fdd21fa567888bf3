"""From a recorded run to what identification fits: checks of the recording,
zero-phase filtering, differentiation, and the samples to keep. numpy and scipy.signal (the
identification extra).

The scheme follows the sampling (fs = 1 / the median step):
- q goes through a Butterworth low-pass, forward and backward (filtfilt: no phase lag, order
  2 x `order`), at `cutoff` Hz, well above the motion's band (an excitation of 5 harmonics of
  0.1 Hz moves below 0.5 Hz) and far below fs. Left to `position_cutoff`, it follows the
  recording's position noise: the highest of 20, 15, 10, 7 and 5 Hz at which the noise,
  differentiated twice, stays under 2 % of the motion's RMS qdd. A higher cutoff smears
  friction's jumps at reversals less; a lower one lets less noise into qdd, where it biases the
  inertias low (errors in the regressor: by the square of that share). On the perturbed truth of the
  identification tests, a noise-free recording gets 20 Hz (10 Hz put the closed loop at 1.25x to
  1.57x the truth's error, 20 Hz at 1.08x to 1.30x), and sigma_q = 1e-4 rad gets 10 Hz (20 Hz: 11x
  to 27x);
- qd and qdd by second-order central differences of the filtered q at the sampling step
  (the velocity a drive measures is noisier than that; it is checked, not used);
- the effort goes through the same kind of filter at 0.4 x `keep_rate` Hz only: its noise is
  white, which least squares averages without bias, and a low cutoff smears Coulomb friction's
  step at every reversal into a bias (at 5 Hz, 7.7 % on the default arm's base parameters,
  without noise; at 40 Hz, 0.2 %). That filter is the anti-aliasing of the next step;
- the effort is read `effort_delay` s after each stamp (linear interpolation): the time by
  which, on average, it precedes its stamp. A drive's measured torque belongs to its stamp
  (0); dynamics_simulator publishes the torque held over the step before the state, centred
  half a step earlier (0.0005 s at its 1 ms step). Left at 0 there, the fit pairs each torque
  with the motion half a step later: with the default arm's truth and no friction, 0.4 % off
  on the base parameters and 12x the truth's tracking error, against 0.01 % and 1.06x;
- a gap in the stamps (over 1.5 steps: states the recorder missed) splits the recording, and
  each stretch is filtered and differentiated alone;
- the first and last 2 / cutoff s of each stretch go (the filters' edges), then the samples are
  thinned to `keep_rate` Hz (successive rows at 1 kHz carry the same information, and W grows
  with them), and samples where a joint moves slower than `stick` rad/s go: Coulomb
  friction's sign is unknown there.
"""

import numpy as np


def check_recording(t, q, qd, effort, effort_limits, names, min_seconds=2.0, min_range=0.01):
    """None for a recording identification can use, else one line saying what is wrong and
    the value: non-finite samples, too short, a joint that never moves, or saturated efforts
    (more than 1 % of the samples at 99 % of a limit).
    """
    t = np.asarray(t, dtype=float)
    for name, x in (("t", t), ("position", q), ("velocity", qd), ("effort", effort)):
        bad = ~np.isfinite(np.asarray(x, dtype=float))
        if bad.any():
            k = int(np.argwhere(bad)[0][0])
            return f"recording refused: a non-finite {name} at sample {k} of {len(t)}"
    if len(t) < 2 or t[-1] - t[0] < min_seconds:
        span = t[-1] - t[0] if len(t) else 0.0
        return f"recording refused: too short, {span:.3f} s of {len(t)} samples (at least " \
               f"{min_seconds:g} s)"
    ranges = np.ptp(q, axis=0)
    j = int(np.argmin(ranges))
    if ranges[j] < min_range:
        return (f"recording refused: {names[j]} never moves, its range is {ranges[j]:.2e} "
                f"(at least {min_range:g})")
    limits = np.asarray(effort_limits, dtype=float)
    share = (np.abs(effort) >= 0.99 * limits).mean(axis=0)
    j = int(np.argmax(share))
    if share[j] > 0.01:
        return (f"recording refused: {names[j]}'s effort is saturated in {100 * share[j]:.1f} % "
                f"of the samples (limit {limits[j]:g})")
    return None


CUTOFFS = (20.0, 15.0, 10.0, 7.0, 5.0)  # Hz, position_cutoff's choices, highest first


def position_noise(q):
    """Each joint's position noise (n,), a standard deviation, from the third differences of
    q (m, n): white noise's have 20 sigma^2 of variance, a smooth motion's next to nothing
    (1e-9 rad at 1 kHz here), and their median leaves out stick-slip's few jumps.
    """
    return 1.4826 * np.median(np.abs(np.diff(q, 3, axis=0)), axis=0) / np.sqrt(20.0)


def position_cutoff(t, q, order=2, share=0.02):
    """The q filter's cutoff (Hz) for a recording (module docstring): the highest of CUTOFFS
    below fs / 4 at which position_noise(q), through filtfilt and two central differences,
    is at most `share` of the RMS qdd of the motion (q filtered at the lowest cutoff); the
    lowest when none is.
    """
    from scipy.signal import butter, filtfilt, freqz
    t, q = np.asarray(t, dtype=float), np.asarray(q, dtype=float)
    dt = float(np.median(np.diff(t)))
    fs = 1.0 / dt
    motion = filtfilt(*butter(order, CUTOFFS[-1] / (fs / 2)), q, axis=0)
    qdd = np.gradient(np.gradient(motion, dt, axis=0), dt, axis=0)
    signal = np.sqrt((qdd ** 2).mean())
    noise = position_noise(q).max()
    frequencies = np.linspace(0.0, fs / 2, 4097)[1:]
    difference = np.sin(2 * np.pi * frequencies * dt) / dt  # a central difference's gain
    for cutoff in CUTOFFS:
        if cutoff >= fs / 4:
            continue
        _, h = freqz(*butter(order, cutoff / (fs / 2)), worN=frequencies, fs=fs)
        gain = np.sqrt(np.mean(np.abs(h) ** 4 * difference ** 4))  # filtfilt: |h|^2
        if noise * gain <= share * signal:
            return cutoff
    return CUTOFFS[-1]


def prepare(t, q, effort, cutoff=None, order=2, keep_rate=100.0, stick=0.02, effort_delay=0.0):
    """(q, qd, qdd, effort) of the samples to fit, each (k, n), from a recording's times (m,)
    and its positions and efforts (m, n) (module docstring); cutoff None: position_cutoff's.
    """
    from scipy.signal import butter, filtfilt
    t, q, effort = (np.asarray(x, dtype=float) for x in (t, q, effort))
    if cutoff is None:
        cutoff = position_cutoff(t, q, order)
    if effort_delay:
        effort = np.column_stack([np.interp(t + effort_delay, t, e) for e in effort.T])
    dt = float(np.median(np.diff(t)))
    fs = 1.0 / dt
    step = max(1, int(round(fs / keep_rate)))
    effort_cutoff = 0.4 * fs / step
    for name, value in (("cutoff", cutoff), ("the effort's cutoff", effort_cutoff)):
        if not 0 < value < fs / 2:
            raise ValueError(f"{name} {value:g} Hz is not below the Nyquist rate {fs / 2:g} Hz")
    q_filter, effort_filter = (butter(order, cutoff / (fs / 2)),
                               butter(order, effort_cutoff / (fs / 2)) if step > 1 else None)
    edge = int(np.ceil(2.0 / cutoff * fs))
    # a gap (a state the recorder missed) breaks the uniform sampling the filters and the
    # differences assume: each stretch between gaps is taken alone, its edges dropped
    breaks = np.flatnonzero(np.diff(t) > 1.5 * dt) + 1
    kept = []
    for lo, hi in zip([0, *breaks], [*breaks, len(t)]):
        if hi - lo <= 2 * edge:
            continue
        qf = filtfilt(*q_filter, q[lo:hi], axis=0)
        ef = effort[lo:hi] if effort_filter is None else filtfilt(*effort_filter, effort[lo:hi],
                                                                  axis=0)
        qd = np.gradient(qf, dt, axis=0)
        qdd = np.gradient(qd, dt, axis=0)
        rows = np.arange(edge, hi - lo - edge, step)
        rows = rows[np.all(np.abs(qd[rows]) >= stick, axis=1)]
        kept.append((qf[rows], qd[rows], qdd[rows], ef[rows]))
    if not kept:
        return tuple(np.empty((0, q.shape[1])) for _ in range(4))
    return tuple(np.concatenate(x) for x in zip(*kept))
