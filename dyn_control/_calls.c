/* The C entry points of dyn_control.inverse_dynamics, mass_matrix and the frame's pose and
 * Jacobian (kinematics.frame_pose_and_jacobian, which frame_pose and frame_jacobian call): one type
 * check per array (the buffer protocol), the result allocated by numpy.empty, then the compiled
 * pass through a function pointer (numba cfuncs, dyn_control/kernels/entry.py). numba's own
 * dispatcher types and unboxes each of ten arrays per call, which costs more than the
 * Newton-Euler pass of a 7-joint arm; this does not.
 *
 * An Entry owns one workspace (the arrays it was made with) and keeps the GIL through the
 * call, so two threads never write that workspace at once. A method returns None, touching
 * nothing, when an input is not a C-contiguous float64 array of n: the caller then takes its
 * general path, which converts what it can and names what it cannot.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*rnea_fn)(double *, double *, int64_t *, double *, double *, double *, Py_ssize_t,
                       double *, double *, double *, double *);
typedef int (*mass_fn)(double *, double *, int64_t *, double *, double *, double *, Py_ssize_t,
                       double *, double *);
typedef int (*frame_fn)(double *, double *, int64_t *, double *, double *, double *, Py_ssize_t,
                        double *, Py_ssize_t, double *, double *, Py_ssize_t, double *, double *,
                        double *);

typedef int (*step_fn)(double *, double *, int64_t *, double *, double *, double *, Py_ssize_t,
                       double *, double *, double *, double *, double *, double *, double *,
                       double, int, double *, double *);

enum { MVEC, MROT, INTS, VECS, ROTS, MATS, ARRAYS };

typedef struct {
    PyObject_HEAD
    rnea_fn rnea;
    mass_fn mass;
    frame_fn frame;
    step_fn step;
    Py_ssize_t n;
    void *arrays[ARRAYS];
    PyObject *keep;          /* the arrays above, alive while the entry is */
    PyObject *empty;         /* numpy.empty */
    PyObject *vector_shape;  /* (n,) */
    PyObject *matrix_shape;  /* (n, n) */
    PyObject *frame_shapes[3];  /* (3, 3), (3,), (6, n): a frame's R, p and Jacobian */
} Entry;

/* The data of x if it is a C-contiguous float64 array of `count` elements and `ndim` dimensions
 * (< 0: any), else NULL (no error set). The pointer outlives the released view: the caller holds x. */
static double *plain(PyObject *x, Py_ssize_t count, int ndim)
{
    Py_buffer view;
    if (PyObject_GetBuffer(x, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return NULL;
    }
    const char *f = view.format;
    int ok = (ndim < 0 || view.ndim == ndim) && view.itemsize == 8 && view.len == count * 8 && f != NULL
             && (strcmp(f, "d") == 0 || strcmp(f, "<d") == 0 || strcmp(f, "=d") == 0);
    double *data = view.buf;
    PyBuffer_Release(&view);
    return ok ? data : NULL;
}

static PyObject *new_array(Entry *self, PyObject *shape, double **data, Py_ssize_t count)
{
    PyObject *out = PyObject_CallOneArg(self->empty, shape);
    if (out == NULL)
        return NULL;
    *data = plain(out, count, PyTuple_GET_SIZE(shape));
    if (*data == NULL) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_TypeError, "numpy.empty gave no float64 array");
        return NULL;
    }
    return out;
}

static PyObject *Entry_inverse_dynamics(Entry *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "inverse_dynamics(q, qd, qdd)");
        return NULL;
    }
    Py_ssize_t n = self->n;
    double *q = plain(args[0], n, 1), *qd = plain(args[1], n, 1), *qdd = plain(args[2], n, 1);
    if (q == NULL || qd == NULL || qdd == NULL)
        Py_RETURN_NONE;
    double *tau;
    PyObject *out = new_array(self, self->vector_shape, &tau, n);
    if (out == NULL)
        return NULL;
    void **a = self->arrays;
    self->rnea(a[MVEC], a[MROT], a[INTS], a[VECS], a[ROTS], a[MATS], n, q, qd, qdd, tau);
    return out;
}

static PyObject *Entry_mass_matrix(Entry *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "mass_matrix(q)");
        return NULL;
    }
    Py_ssize_t n = self->n;
    double *q = plain(args[0], n, 1);
    if (q == NULL)
        Py_RETURN_NONE;
    double *M;
    PyObject *out = new_array(self, self->matrix_shape, &M, n * n);
    if (out == NULL)
        return NULL;
    void **a = self->arrays;
    self->mass(a[MVEC], a[MROT], a[INTS], a[VECS], a[ROTS], a[MATS], n, q, M);
    return out;
}

static PyObject *Entry_frame_pose_and_jacobian(Entry *self, PyObject *const *args,
                                               Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "frame_pose_and_jacobian(q, body, R_off, p_off, reference)");
        return NULL;
    }
    Py_ssize_t n = self->n;
    Py_ssize_t body = PyLong_AsSsize_t(args[1]), reference = PyLong_AsSsize_t(args[4]);
    if ((body == -1 || reference == -1) && PyErr_Occurred())
        return NULL;
    double *q = plain(args[0], n, 1), *R_off = plain(args[2], 9, 2), *p_off = plain(args[3], 3, 1);
    if (q == NULL || R_off == NULL || p_off == NULL || body < 0 || body >= n)
        Py_RETURN_NONE;
    double *out[3];
    Py_ssize_t sizes[3] = {9, 3, 6 * n};
    PyObject *arrays = PyTuple_New(3);
    if (arrays == NULL)
        return NULL;
    for (int k = 0; k < 3; k++) {
        PyObject *array = new_array(self, self->frame_shapes[k], &out[k], sizes[k]);
        if (array == NULL) {
            Py_DECREF(arrays);
            return NULL;
        }
        PyTuple_SET_ITEM(arrays, k, array);
    }
    void **a = self->arrays;
    self->frame(a[MVEC], a[MROT], a[INTS], a[VECS], a[ROTS], a[MATS], n, q, body, R_off, p_off,
                reference, out[0], out[1], out[2]);
    return arrays;
}

static PyObject *Entry_simulation_step(Entry *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "simulation_step(q, qd, tau, damping, friction, lower, "
                                         "upper, dt, rk4)");
        return NULL;
    }
    Py_ssize_t n = self->n;
    double *in[7];
    for (int k = 0; k < 7; k++)
        if ((in[k] = plain(args[k], n, 1)) == NULL)
            Py_RETURN_NONE;
    double dt = PyFloat_AsDouble(args[7]);
    int rk4 = PyObject_IsTrue(args[8]);
    if ((dt == -1.0 || rk4 == -1) && PyErr_Occurred())
        return NULL;
    double *out[2];
    PyObject *q = new_array(self, self->vector_shape, &out[0], n);
    if (q == NULL)
        return NULL;
    PyObject *qd = new_array(self, self->vector_shape, &out[1], n);
    if (qd == NULL) {
        Py_DECREF(q);
        return NULL;
    }
    void **a = self->arrays;
    if (!self->step(a[MVEC], a[MROT], a[INTS], a[VECS], a[ROTS], a[MATS], n, in[0], in[1], in[2],
                    in[3], in[4], in[5], in[6], dt, rk4, out[0], out[1])) {
        Py_DECREF(q);  /* the step raised (a mass matrix no longer positive definite): the
                          caller takes the dispatcher's path, which says so */
        Py_DECREF(qd);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NN)", q, qd);  /* N: the tuple takes both references */
}

/* Entry((rnea_address, mass_address, frame_address, step_address), n, (mvec, mrot, ints, vecs, rots, mats), numpy.empty):
 * the arrays C-contiguous and writable, ints int64, the others float64. */
static int Entry_init(Entry *self, PyObject *args, PyObject *kwargs)
{
    unsigned long long rnea, mass, frame, step;
    Py_ssize_t n;
    PyObject *arrays, *empty;
    if (!PyArg_ParseTuple(args, "(KKKK)nO!O", &rnea, &mass, &frame, &step, &n, &PyTuple_Type,
                          &arrays, &empty))
        return -1;
    if (PyTuple_GET_SIZE(arrays) != ARRAYS || n < 1) {
        PyErr_SetString(PyExc_ValueError, "Entry needs n >= 1 and the six arrays of a model");
        return -1;
    }
    for (int k = 0; k < ARRAYS; k++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arrays, k), &view,
                               PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0)
            return -1;
        self->arrays[k] = view.buf;
        PyBuffer_Release(&view);
    }
    self->rnea = (rnea_fn)(uintptr_t)rnea;
    self->mass = (mass_fn)(uintptr_t)mass;
    self->frame = (frame_fn)(uintptr_t)frame;
    self->step = (step_fn)(uintptr_t)step;
    self->n = n;
    Py_XSETREF(self->keep, Py_NewRef(arrays));
    Py_XSETREF(self->empty, Py_NewRef(empty));
    Py_XSETREF(self->vector_shape, Py_BuildValue("(n)", n));
    Py_XSETREF(self->matrix_shape, Py_BuildValue("(nn)", n, n));
    Py_XSETREF(self->frame_shapes[0], Py_BuildValue("(ii)", 3, 3));
    Py_XSETREF(self->frame_shapes[1], Py_BuildValue("(i)", 3));
    Py_XSETREF(self->frame_shapes[2], Py_BuildValue("(in)", 6, n));
    for (int k = 0; k < 3; k++)
        if (self->frame_shapes[k] == NULL)
            return -1;
    return self->vector_shape != NULL && self->matrix_shape != NULL ? 0 : -1;
}

static void Entry_dealloc(Entry *self)
{
    Py_XDECREF(self->keep);
    Py_XDECREF(self->empty);
    Py_XDECREF(self->vector_shape);
    Py_XDECREF(self->matrix_shape);
    for (int k = 0; k < 3; k++)
        Py_XDECREF(self->frame_shapes[k]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Entry_methods[] = {
    {"inverse_dynamics", (PyCFunction)(void (*)(void))Entry_inverse_dynamics, METH_FASTCALL,
     "tau (n,) for float64 arrays q, qd, qdd of n; None for anything else"},
    {"mass_matrix", (PyCFunction)(void (*)(void))Entry_mass_matrix, METH_FASTCALL,
     "M (n, n) for a float64 array q of n; None for anything else"},
    {"frame_pose_and_jacobian", (PyCFunction)(void (*)(void))Entry_frame_pose_and_jacobian,
     METH_FASTCALL, "(R, p, J) of a frame on `body` for a float64 array q of n; None else"},
    {"simulation_step", (PyCFunction)(void (*)(void))Entry_simulation_step, METH_FASTCALL,
     "(q, qd) after one simulator step; None for inputs that are not float64 arrays of n, or "
     "when the step raised"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyn_control._calls.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The compiled passes of one model and one workspace, called from C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Entry_init,
    .tp_dealloc = (destructor)Entry_dealloc,
    .tp_methods = Entry_methods,
};

/* Tick: one compiled call over fixed arrays bound once (a controller tick's model, workspace and
 * settings) and a few arrays and numbers per call (dyn_control/controller/entry.py). The cfunc
 * takes three tables: float64 pointers (the fixed arrays, then the call's, then the results
 * allocated here), int64 pointers (fixed), and the numbers (the call's inputs, then the outputs
 * it writes). It returns 0 when it raised: the call then answers None, as it does when an
 * array does not fit, and the caller takes numba's dispatcher, which raises or converts. */
typedef int (*tick_fn)(double **, int64_t **, double *);

typedef struct {
    PyObject_HEAD
    tick_fn fn;
    Py_ssize_t fixed, dynamic, results, ints, inputs, outputs;
    double **floats;          /* fixed + dynamic + results pointers */
    int64_t **int_arrays;
    double *numbers;          /* inputs + outputs */
    Py_ssize_t *counts;       /* each dynamic array's element count; -count: None allowed */
    int *ndims;               /* and its number of dimensions */
    Py_ssize_t *sizes;        /* each result's element count */
    char *kinds;              /* each output: 'b' bool, 'i' int, 'd' float */
    PyObject *keep;           /* the fixed arrays, alive while the tick is */
    PyObject *shapes;         /* the results' shapes */
    PyObject *empty;          /* numpy.empty */
} Tick;

static PyObject *Tick_call(Tick *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != self->dynamic + self->inputs) {
        PyErr_Format(PyExc_TypeError, "a tick takes %zd arrays and %zd numbers", self->dynamic,
                     self->inputs);
        return NULL;
    }
    double **f = self->floats + self->fixed;
    for (Py_ssize_t k = 0; k < self->dynamic; k++) {
        Py_ssize_t count = self->counts[k];
        if (count < 0 && args[k] == Py_None) {
            f[k] = NULL;
            continue;
        }
        if ((f[k] = plain(args[k], count < 0 ? -count : count, self->ndims[k])) == NULL)
            Py_RETURN_NONE;
    }
    for (Py_ssize_t k = 0; k < self->inputs; k++) {
        double x = PyFloat_AsDouble(args[self->dynamic + k]);
        if (x == -1.0 && PyErr_Occurred())
            return NULL;
        self->numbers[k] = x;
    }
    PyObject *out = PyTuple_New(self->results + self->outputs);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < self->results; k++) {
        PyObject *shape = PyTuple_GET_ITEM(self->shapes, k);
        Py_ssize_t count = self->sizes[k];
        PyObject *array = PyObject_CallOneArg(self->empty, shape);
        if (array == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, array);
        if ((f[self->dynamic + k] = plain(array, count, (int)PyTuple_GET_SIZE(shape))) == NULL) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "numpy.empty gave no float64 array");
            return NULL;
        }
    }
    if (!self->fn(self->floats, self->int_arrays, self->numbers)) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    for (Py_ssize_t k = 0; k < self->outputs; k++) {
        double x = self->numbers[self->inputs + k];
        PyObject *value = self->kinds[k] == 'b' ? PyBool_FromLong(x != 0.0)
                          : self->kinds[k] == 'i' ? PyLong_FromDouble(x) : PyFloat_FromDouble(x);
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, self->results + k, value);
    }
    return out;
}

/* the fixed arrays' data pointers, each C-contiguous and of `format` */
static int bind(PyObject *arrays, void **out, const char *format)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(arrays); k++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arrays, k), &view,
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0)
            return -1;
        int ok = view.itemsize == 8 && view.format != NULL && strchr(format, view.format[0])
                 && (view.format[1] == '\0' || strchr(format, view.format[1]));
        out[k] = view.buf;
        PyBuffer_Release(&view);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "a tick's fixed array %zd is not of %s", k, format);
            return -1;
        }
    }
    return 0;
}

/* Tick(address, floats, ints, dynamic, inputs, results, kinds, numpy.empty): floats and ints
 * the fixed float64 and int64 arrays; dynamic ((count, ndim, optional), ...) the arrays each
 * call passes first; inputs how many numbers follow them; results the shapes of the arrays
 * it returns first; kinds the outputs that follow them ("bbib"). */
static int Tick_init(Tick *self, PyObject *args, PyObject *kwargs)
{
    unsigned long long address;
    PyObject *floats, *ints, *dynamic, *shapes, *empty;
    Py_ssize_t inputs;
    const char *kinds;
    if (!PyArg_ParseTuple(args, "KO!O!O!nO!sO", &address, &PyTuple_Type, &floats, &PyTuple_Type,
                          &ints, &PyTuple_Type, &dynamic, &inputs, &PyTuple_Type, &shapes, &kinds,
                          &empty))
        return -1;
    self->fixed = PyTuple_GET_SIZE(floats);
    self->dynamic = PyTuple_GET_SIZE(dynamic);
    self->results = PyTuple_GET_SIZE(shapes);
    self->ints = PyTuple_GET_SIZE(ints);
    self->inputs = inputs;
    self->outputs = (Py_ssize_t)strlen(kinds);
    self->floats = PyMem_Calloc(self->fixed + self->dynamic + self->results + 1, sizeof(double *));
    self->int_arrays = PyMem_Calloc(self->ints + 1, sizeof(int64_t *));
    self->numbers = PyMem_Calloc(inputs + self->outputs + 1, sizeof(double));
    self->counts = PyMem_Calloc(self->dynamic + 1, sizeof(Py_ssize_t));
    self->ndims = PyMem_Calloc(self->dynamic + 1, sizeof(int));
    self->kinds = PyMem_Calloc(self->outputs + 1, 1);
    self->sizes = PyMem_Calloc(self->results + 1, sizeof(Py_ssize_t));
    if (!self->floats || !self->int_arrays || !self->numbers || !self->counts || !self->ndims
        || !self->kinds || !self->sizes) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(self->kinds, kinds, self->outputs);
    for (Py_ssize_t k = 0; k < self->dynamic; k++) {
        Py_ssize_t count;
        int ndim, optional;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(dynamic, k), "nip", &count, &ndim, &optional))
            return -1;
        self->counts[k] = optional ? -count : count;
        self->ndims[k] = ndim;
    }
    for (Py_ssize_t k = 0; k < self->results; k++) {
        PyObject *shape = PyTuple_GET_ITEM(shapes, k);
        if (!PyTuple_Check(shape)) {
            PyErr_SetString(PyExc_TypeError, "a tick's result shape is a tuple");
            return -1;
        }
        self->sizes[k] = 1;
        for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(shape); d++)
            self->sizes[k] *= PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        if (PyErr_Occurred())
            return -1;
    }
    if (bind(floats, (void **)self->floats, "d") || bind(ints, (void **)self->int_arrays, "lq"))
        return -1;
    self->fn = (tick_fn)(uintptr_t)address;
    Py_XSETREF(self->keep, Py_BuildValue("(OO)", floats, ints));
    Py_XSETREF(self->shapes, Py_NewRef(shapes));
    Py_XSETREF(self->empty, Py_NewRef(empty));
    return self->keep == NULL ? -1 : 0;
}

static void Tick_dealloc(Tick *self)
{
    PyMem_Free(self->floats);
    PyMem_Free(self->int_arrays);
    PyMem_Free(self->numbers);
    PyMem_Free(self->counts);
    PyMem_Free(self->ndims);
    PyMem_Free(self->kinds);
    PyMem_Free(self->sizes);
    Py_XDECREF(self->keep);
    Py_XDECREF(self->shapes);
    Py_XDECREF(self->empty);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Tick_methods[] = {
    {"call", (PyCFunction)(void (*)(void))Tick_call, METH_FASTCALL,
     "(results..., outputs...) for the call's arrays and numbers; None when an array does not "
     "fit or the compiled call raised"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TickType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyn_control._calls.Tick",
    .tp_basicsize = sizeof(Tick),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One compiled call over fixed arrays bound once, called from C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Tick_init,
    .tp_dealloc = (destructor)Tick_dealloc,
    .tp_methods = Tick_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_calls",
    "C entry points of the compiled passes (dyn_control/kernels/entry.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__calls(void)
{
    if (PyType_Ready(&EntryType) < 0 || PyType_Ready(&TickType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Entry", (PyObject *)&EntryType) < 0
        || PyModule_AddObjectRef(m, "Tick", (PyObject *)&TickType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
