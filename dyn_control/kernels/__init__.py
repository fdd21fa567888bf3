"""The compiled kernels, by stage, as MuJoCo's engine files: each a file of its own.

- compile: how a kernel is compiled (numba, or plain Python without it);
- so3: 3-vectors as tuples, rotations, the log map;
- views: the model's and the workspace's arrays, from the packed layout of dyn_control.model.layout;
- frames: joint and body poses, a frame's pose, Jacobian and J-dot qd;
- newton_euler: the recursive Newton-Euler pass, inverse dynamics (batched too), energies;
- mass_matrix: M by columns and by CRBA, forward dynamics, joint inertias;
- linalg: Cholesky, Jacobi eigenvalues, the damped inverse, the operational-space inertia;
- passive: the simulator's step, with damping, friction and stops taken implicitly.

Every kernel that works on a model is called as kernel(*model.pack, *data.arrays, inputs...),
writes its results into arrays it is given (or the workspace), and allocates nothing a call
but what it returns. Bodies are in topological order, parent[i] < i.
"""
