"""How every kernel is compiled: numba's njit when numba is installed, plain Python otherwise
(each function then has .py_func, itself, as numba's do).
"""

try:
    from numba import get_num_threads, njit, prange
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised through .py_func in the tests
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            args[0].py_func = args[0]
            return args[0]

        def wrap(func):
            func.py_func = func
            return func
        return wrap

    prange = range

    def get_num_threads():
        return 1

from dyn_control.kernels import cache as numba_cache

numba_cache.configure()  # before the first kernel: its cache is chosen where it is decorated
jit = njit(cache=True, fastmath=False, nogil=True)  # how every kernel is compiled
jit_parallel = njit(cache=True, fastmath=False, nogil=True, parallel=True)  # batched calls

__all__ = ["HAVE_NUMBA", "get_num_threads", "jit", "jit_parallel", "prange"]
