"""The in-process closed loop the identification tests drive: a controller core and a
simulated arm in lockstep, no middleware.
"""

import numpy as np


def track(model, truth, trajectory, periods=1, start_seconds=0.5):
    """The in-process loop, synchronous at 1 kHz: a ControllerCore knowing `model` (computed
    torque, default gains, integral off, observer off: the model is wrong on purpose; the
    limits on, no rate limit) drives a
    Simulation of `truth` (a simulated real arm: REAL_ARM_SUBSTEPS) along `periods` of the
    trajectory, sent as one goal of 50 Hz waypoints. -> (t, q, qd, the applied effort, each
    (m, n), from the goal's start; the tracking error (m, n)).
    """
    from dyn_control.controller.core import ControllerCore
    from dyn_control.controller.goals import Request
    from dyn_control.controller.settings import controller_settings
    from dyn_control.parameters import CONTROLLER
    from dyn_control.sim.simulation import REAL_ARM_SUBSTEPS, Simulation
    # no rate limit: a nominal model's commands, far from what the arm needs, were clipped
    # (the UR10's), and the comparison is of the models' torques, not of the clip
    values = {"external_torque.enabled": False, "ki": 0.0, "max_effort_rate": 0.0}
    core = ControllerCore(controller_settings(model, CONTROLLER.read(
        lambda name: values[name] if name in values else CONTROLLER.find(name).default,
        model.joint_names)))
    sim = Simulation(truth, trajectory.start, substeps=REAL_ARM_SUBSTEPS)
    duration = periods * trajectory.period
    times = np.arange(0.0, duration + 1e-9, 0.02)
    q, qd, qdd = trajectory(times)
    qd[[0, -1]] = qdd[[0, -1]] = 0.0
    rows, errors = [], []
    steps = int(round((start_seconds + duration) / sim.dt))
    for k in range(steps):
        state = (sim.t, sim.q.copy(), sim.qd.copy())
        if k == int(round(start_seconds / sim.dt)):
            core.offer(Request(tuple(model.joint_names), 0.0, tuple(zip(times, q, qd, qdd))))
        command = core.update(sim.t, state)
        sim.step(command.tau)
        if command.errors is not None and k >= start_seconds / sim.dt:
            # as the simulator node publishes: a state with the effort applied over the step
            # that ended there
            rows.append(np.concatenate([[sim.t], sim.q, sim.qd, sim.tau]))
            errors.append(command.errors[0])
    data = np.array(rows)
    n = model.n
    return (data[:, 0], data[:, 1:1 + n], data[:, 1 + n:1 + 2 * n], data[:, 1 + 2 * n:],
            np.array(errors))
