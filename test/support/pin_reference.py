"""Pinocchio as the reference for a dyn_control Chain.

The full URDF model is loaded; joints that are not in the chain are held at zero position,
velocity and acceleration, which is exactly the loader's rigid lumping (and the base above a
chosen root_link). For forward dynamics, the reduced model (off-chain joints locked at zero)
gives pin.aba; where Pinocchio cannot reduce a model (duplicate frame names), M and the
bias of the full model are solved instead.
"""

import numpy as np
import pinocchio as pin

from dyn_control import (
    bias_forces,
    forward_dynamics,
    inverse_dynamics,
    kinematics,
    mass_matrix,
)


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


RTOL = 1e-9
REFERENCES = {"world": pin.WORLD, "local": pin.LOCAL,
              "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


def close(a, b, rtol=RTOL):
    """Equal to `rtol` of b's largest entry (or of 1)."""
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * max(1.0, np.abs(b).max()))


def links_to_check(chain):
    """The tip link, and per body its last lumped link (a fixed child where there is one)."""
    return list(dict.fromkeys([chain.tip_link, *(links[-1][0] for links in chain.link_poses)]))


def random_states(chain, count, seed=0):
    """`count` (q within the limits and +-3 rad, qd within +-2 rad/s) pairs."""
    rng = np.random.default_rng(seed)
    low, high = np.maximum(chain.lower, -3), np.minimum(chain.upper, 3)
    return [(rng.uniform(low, high), rng.uniform(-2, 2, chain.n)) for _ in range(count)]


def compare_kinematics(path, chain, count=4):
    """Poses, Jacobians in the three reference frames, classical accelerations, Lambda and M
    of every link the chain moves, at `count` random states, against Pinocchio to RTOL.
    """
    ref = PinReference(path, chain)
    model, data = ref.model, ref.data
    for q, qd in random_states(chain, count):
        qp, vp = ref.q_of(model, q), ref.v_of(model, qd)
        pin.forwardKinematics(model, data, qp, vp, np.zeros(model.nv))
        pin.updateFramePlacements(model, data)
        # our base frame is the root link's: Pinocchio's world quantities moved into it
        base = data.oMf[model.getFrameId(chain.root_link, pin.BODY)].inverse()
        turn = np.kron(np.eye(2), base.rotation)  # world axes -> base axes, both halves
        into_base = {"world": base.toActionMatrix(), "local": np.eye(6),
                     "local_world_aligned": turn}
        M = mass_matrix(chain, q)
        for link in links_to_check(chain):
            fid = model.getFrameId(link, pin.BODY)
            R, p = kinematics.frame_pose(chain, q, link)
            close(R, (base * data.oMf[fid]).rotation)
            close(p, (base * data.oMf[fid]).translation)
            for name, frame in REFERENCES.items():
                J = pin.computeFrameJacobian(model, data, qp, fid, frame)[:, ref.v_idx]
                close(kinematics.frame_jacobian(chain, q, link, name), into_base[name] @ J)
            pin.forwardKinematics(model, data, qp, vp, np.zeros(model.nv))
            for name in ("local", "local_world_aligned"):
                a = pin.getFrameClassicalAcceleration(model, data, fid, REFERENCES[name])
                close(kinematics.frame_classical_acceleration(chain, q, qd, link, name),
                      into_base[name] @ np.concatenate([a.linear, a.angular]))
            # Lambda from Pinocchio's M and J; 0 damping: the (pseudo-)inverse. Tolerance 1e-9,
            # or the float error of an inverse where A is worse conditioned than 1e5
            J = turn @ pin.computeFrameJacobian(model, data, qp, fid,
                                                pin.LOCAL_WORLD_ALIGNED)[:, ref.v_idx]
            A = J @ np.linalg.solve(ref.crba(q), J.T)
            s = np.linalg.eigvalsh(A)
            kept = s[s > 1e-12 * s[-1]]
            Lam = kinematics.operational_space_inertia(chain, q, link, damping=0.0)
            close(Lam, np.linalg.pinv(A, rcond=1e-12, hermitian=True),
                  max(RTOL, 1e-14 * kept[-1] / kept[0]))
        close(M, ref.crba(q))


def compare_dynamics(path, chain, seed=0, count=10):
    """rnea, crba, nonLinearEffects and aba at `count` random states, to RTOL; -> the
    reference.
    """
    ref = PinReference(path, chain)
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3))
        qd, qdd = rng.uniform(-2, 2, (2, chain.n))
        tau = rng.uniform(-10, 10, chain.n)
        close(inverse_dynamics(chain, q, qd, qdd), ref.rnea(q, qd, qdd))
        close(mass_matrix(chain, q), ref.crba(q))
        close(bias_forces(chain, q, qd), ref.nle(q, qd))
        close(forward_dynamics(chain, q, qd, tau), ref.aba(q, qd, tau))
    return ref
