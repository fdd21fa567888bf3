"""Pinocchio as the reference for a dyn_control Chain.

The full URDF model is loaded; joints that are not in the chain are held at zero position,
velocity and acceleration, which is exactly the loader's rigid lumping (and the base above a
chosen root_link). For forward dynamics, the reduced model (off-chain joints locked at zero)
gives pin.aba; where Pinocchio cannot reduce a model (duplicate frame names), M and the
bias of the full model are solved instead.
"""

import numpy as np
import pinocchio as pin


class PinReference:
    def __init__(self, path, chain):
        self.model = pin.buildModelFromUrdf(str(path))
        self.data = self.model.createData()
        self.names = chain.joint_names
        self.idx = [self.model.joints[self.model.getJointId(n)] for n in self.names]
        self.v_idx = [j.idx_v for j in self.idx]
        lock = [self.model.getJointId(n) for n in self.model.names[1:] if n not in self.names]
        self.reduced = self.model
        if lock:
            try:
                self.reduced = pin.buildReducedModel(self.model, lock, pin.neutral(self.model))
            except ValueError:
                self.reduced = None
        self.reduced_data = self.reduced.createData() if self.reduced is not None else None

    def q_of(self, model, q):
        """Chain joint values -> Pinocchio configuration of `model`, other joints neutral."""
        qp = pin.neutral(model)
        for name, value in zip(self.names, q):
            j = model.joints[model.getJointId(name)]
            if j.nq == 2:  # continuous joint: (cos, sin)
                qp[j.idx_q:j.idx_q + 2] = np.cos(value), np.sin(value)
            else:
                qp[j.idx_q] = value
        return qp

    def v_of(self, model, x):
        """Chain joint velocities (or accelerations, torques) -> `model`'s tangent vector."""
        v = np.zeros(model.nv)
        for name, value in zip(self.names, x):
            v[model.joints[model.getJointId(name)].idx_v] = value
        return v

    def _pick(self, model, v):
        return np.array([v[model.joints[model.getJointId(n)].idx_v] for n in self.names])

    def rnea(self, q, qd, qdd, f_tip=None):
        """f_tip: wrench [force; moment] the tip exerts, in the last chain joint's frame."""
        m, d = self.model, self.data
        args = [m, d, self.q_of(m, q), self.v_of(m, qd), self.v_of(m, qdd)]
        if f_tip is not None:
            fext = [pin.Force.Zero() for _ in range(m.njoints)]
            fext[m.getJointId(self.names[-1])] = pin.Force(-np.asarray(f_tip))
            args.append(fext)
        return self._pick(m, pin.rnea(*args))

    def crba(self, q):
        m, d = self.model, self.data
        M = pin.crba(m, d, self.q_of(m, q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.v_idx, self.v_idx)]

    def nle(self, q, qd):
        m, d = self.model, self.data
        return self._pick(m, pin.nonLinearEffects(m, d, self.q_of(m, q), self.v_of(m, qd)))

    def aba(self, q, qd, tau):
        if self.reduced is None:
            return np.linalg.solve(self.crba(q), tau - self.nle(q, qd))
        m, d = self.reduced, self.reduced_data
        return self._pick(m, pin.aba(m, d, self.q_of(m, q), self.v_of(m, qd), self.v_of(m, tau)))
