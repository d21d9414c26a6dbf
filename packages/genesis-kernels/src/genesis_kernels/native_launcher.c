/* genesis_kernels' launch path in C: one object per compiled kernel, called as
 * launcher(grid, stream, args[, scratch]) -> None, which makes one cuLaunchKernel call.
 *
 * Everything that does not change between launches is kept in the object when it is made: the
 * CUfunction, the block size, the dynamic shared memory, and one type code per kernel argument.
 * A launch converts each argument by its code into its own 8-byte slot (the driver reads each
 * parameter through a pointer to it, so no packing by alignment is needed), appends Triton's two
 * scratch pointers, and calls the driver. The driver's entry point is handed in once, as an address,
 * by driver_launch.py, so that this file needs neither cuda.h nor libcuda at build time.
 *
 * Type codes: 'p' pointer (None: null), 'Q' u64, 'q' i64, 'I' u32, 'i' i32, 'f' fp32, 'd' fp64, 'c' a constexpr
 * (its slot in args is skipped, as Triton's own launcher skips it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define MAX_ARGS 256
#define CUDA_ERROR_INVALID_CONTEXT 201

typedef int (*cu_launch_kernel_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, void *, void **, void **);

static cu_launch_kernel_t cu_launch_kernel = NULL;

typedef struct {
    PyObject_HEAD
    void *function;
    unsigned block;
    unsigned shared;
    Py_ssize_t n_args;
    char codes[MAX_ARGS];
    PyObject *on_error; /* called with the CUresult; returns True to retry once */
    PyObject *dict;     /* attributes the Python launchers keep on their launch functions */
    vectorcallfunc vectorcall;
} Launcher;

static int convert(char code, PyObject *value, uint64_t *slot) {
    switch (code) {
    case 'p':
        if (value == Py_None) { /* an optional pointer the kernel does not read, as Triton takes it */
            *slot = 0;
            return 0;
        }
        /* fall through */
    case 'Q': {
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *slot = v;
        return 0;
    }
    case 'q': {
        long long v = PyLong_AsLongLong(value);
        if (v == -1 && PyErr_Occurred()) return -1;
        memcpy(slot, &v, sizeof v);
        return 0;
    }
    case 'i': {
        long long v = PyLong_AsLongLong(value);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < INT32_MIN || v > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "kernel argument %lld does not fit i32", v);
            return -1;
        }
        int32_t w = (int32_t)v;
        memcpy(slot, &w, sizeof w);
        return 0;
    }
    case 'I': {
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        if (v > UINT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "kernel argument %llu does not fit u32", v);
            return -1;
        }
        uint32_t w = (uint32_t)v;
        memcpy(slot, &w, sizeof w);
        return 0;
    }
    case 'f': {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) return -1;
        float w = (float)v;
        memcpy(slot, &w, sizeof w);
        return 0;
    }
    case 'd': {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) return -1;
        memcpy(slot, &v, sizeof v);
        return 0;
    }
    }
    PyErr_Format(PyExc_ValueError, "unknown kernel argument type code %c", code);
    return -1;
}

/* Each runtime argument converted into its own slot, then Triton's global scratch (``scratch``) and profile
 * scratch (null) pointers; params[i] points at slots[i]. Returns -1 with an exception set. */
static int pack_params(Launcher *self, PyObject *args, unsigned long long scratch, uint64_t *slots, void **params) {
    int k = 0;
    for (Py_ssize_t i = 0; i < self->n_args; i++) {
        char code = self->codes[i];
        if (code == 'c') continue;
        if (convert(code, PyTuple_GET_ITEM(args, i), &slots[k]) < 0) return -1;
        params[k] = &slots[k];
        k++;
    }
    slots[k] = scratch;
    params[k] = &slots[k];
    slots[k + 1] = 0;
    params[k + 1] = &slots[k + 1];
    return 0;
}

static PyObject *launcher_call(PyObject *self_obj, PyObject *const *a, size_t nargsf, PyObject *kwnames) {
    Launcher *self = (Launcher *)self_obj;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if ((n != 3 && n != 4) || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "launcher(grid, stream, args[, scratch]) takes 3 or 4 positional arguments");
        return NULL;
    }
    if (cu_launch_kernel == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "launcher: set_driver() was not called");
        return NULL;
    }
    PyObject *grid = a[0], *args = a[2];
    if (!PyTuple_Check(grid) || PyTuple_GET_SIZE(grid) != 3 || !PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "launcher: grid must be a 3-tuple and args a tuple");
        return NULL;
    }
    unsigned long gx = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(grid, 0));
    unsigned long gy = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(grid, 1));
    unsigned long gz = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(grid, 2));
    if (PyErr_Occurred()) return NULL;
    if (gx == 0 || gy == 0 || gz == 0) Py_RETURN_NONE;
    unsigned long long stream = PyLong_AsUnsignedLongLong(a[1]);
    if (stream == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (PyTuple_GET_SIZE(args) != self->n_args) {
        PyErr_Format(PyExc_TypeError, "launcher: %zd kernel arguments given, the kernel takes %zd",
                     PyTuple_GET_SIZE(args), self->n_args);
        return NULL;
    }
    unsigned long long scratch = 0; /* Triton's global scratch, for the kernels that take it */
    if (n == 4 && a[3] != Py_None) {
        scratch = PyLong_AsUnsignedLongLong(a[3]);
        if (PyErr_Occurred()) return NULL;
    }
    uint64_t slots[MAX_ARGS + 2];
    void *params[MAX_ARGS + 2];
    if (pack_params(self, args, scratch, slots, params) < 0) return NULL;
    int err = cu_launch_kernel(self->function, (unsigned)gx, (unsigned)gy, (unsigned)gz, self->block, 1, 1,
                               self->shared, (void *)(uintptr_t)stream, params, NULL);
    if (err == CUDA_ERROR_INVALID_CONTEXT && self->on_error != Py_None) {
        /* a thread with no current context: the callback makes one, and the launch is tried again */
        PyObject *retry = PyObject_CallFunction(self->on_error, "i", err);
        if (retry == NULL) return NULL;
        int again = PyObject_IsTrue(retry);
        Py_DECREF(retry);
        if (again)
            err = cu_launch_kernel(self->function, (unsigned)gx, (unsigned)gy, (unsigned)gz, self->block, 1, 1,
                                   self->shared, (void *)(uintptr_t)stream, params, NULL);
    }
    if (err) {
        PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed with CUDA error %d (grid (%lu, %lu, %lu), block %u)",
                     err, gx, gy, gz, self->block);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    unsigned long long function;
    unsigned block, shared;
    const char *codes;
    Py_ssize_t n_codes;
    PyObject *on_error = Py_None;
    if (!PyArg_ParseTuple(args, "KIIy#|O", &function, &block, &shared, &codes, &n_codes, &on_error)) return NULL;
    if (n_codes > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "a kernel of %zd arguments (at most %d)", n_codes, MAX_ARGS);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n_codes; i++) {
        if (!strchr("pQqIifdc", codes[i]) || codes[i] == 0) {
            PyErr_Format(PyExc_ValueError, "unknown kernel argument type code %c", codes[i]);
            return NULL;
        }
    }
    Launcher *self = (Launcher *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->function = (void *)(uintptr_t)function;
    self->block = block;
    self->shared = shared;
    self->n_args = n_codes;
    memcpy(self->codes, codes, (size_t)n_codes);
    self->dict = NULL;
    Py_INCREF(on_error);
    self->on_error = on_error;
    self->vectorcall = launcher_call;
    return (PyObject *)self;
}

static void launcher_dealloc(Launcher *self) {
    Py_XDECREF(self->on_error);
    Py_XDECREF(self->dict);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* launcher.repeat(n, grid, stream, args): the same launch n times from one C loop, the arguments
 * converted once. A diagnostic (benchmarks/bench_launch.py): it measures what the driver alone costs
 * per launch, the floor under any launch path. */
static PyObject *launcher_repeat(PyObject *self_obj, PyObject *const *a, Py_ssize_t n) {
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "repeat(n, grid, stream, args)");
        return NULL;
    }
    long count = PyLong_AsLong(a[0]);
    if (count < 0 || PyErr_Occurred()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "repeat: n must be >= 0");
        return NULL;
    }
    Launcher *self = (Launcher *)self_obj;
    PyObject *first[3] = {a[1], a[2], a[3]};
    PyObject *r = launcher_call(self_obj, first, 3, NULL); /* checks everything, launches once */
    if (r == NULL) return NULL;
    Py_DECREF(r);
    PyObject *grid = a[1], *args = a[3];
    unsigned gx = (unsigned)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(grid, 0));
    unsigned gy = (unsigned)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(grid, 1));
    unsigned gz = (unsigned)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(grid, 2));
    void *stream = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(a[2]);
    uint64_t slots[MAX_ARGS + 2];
    void *params[MAX_ARGS + 2];
    if (pack_params(self, args, 0, slots, params) < 0) return NULL;
    for (long i = 1; i < count; i++) {
        int err = cu_launch_kernel(self->function, gx, gy, gz, self->block, 1, 1, self->shared, stream, params, NULL);
        if (err) {
            PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed with CUDA error %d", err);
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef launcher_methods[] = {
    {"repeat", (PyCFunction)(void (*)(void))launcher_repeat, METH_FASTCALL,
     "repeat(n, grid, stream, args): n launches from one C loop (a diagnostic of the driver's own cost)"},
    {NULL, NULL, 0, NULL}};

static PyMemberDef launcher_members[] = {
    {"block", T_UINT, offsetof(Launcher, block), READONLY, "threads per block"},
    {"shared", T_UINT, offsetof(Launcher, shared), READONLY, "dynamic shared memory, bytes"},
    {NULL}};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "genesis_native_launcher.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = launcher_new,
    .tp_dealloc = (destructor)launcher_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_members = launcher_members,
    .tp_methods = launcher_methods,
    .tp_dictoffset = offsetof(Launcher, dict),
    .tp_doc = "Launcher(function, block, shared, codes, on_error=None): launch(grid, stream, args[, scratch])",
};

static PyObject *set_driver(PyObject *self, PyObject *address) {
    unsigned long long a = PyLong_AsUnsignedLongLong(address);
    if (a == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    cu_launch_kernel = (cu_launch_kernel_t)(uintptr_t)a;
    Py_RETURN_NONE;
}

static PyObject *get_driver(PyObject *self, PyObject *unused) {
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)cu_launch_kernel);
}

static PyMethodDef module_methods[] = {
    {"set_driver", set_driver, METH_O, "set_driver(address): the address of cuLaunchKernel"},
    {"get_driver", get_driver, METH_NOARGS, "get_driver() -> the address launches call (0: none yet)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "genesis_native_launcher",
                                        "genesis_kernels' C launch path", -1, module_methods};

PyMODINIT_FUNC PyInit_genesis_native_launcher(void) {
    if (PyType_Ready(&LauncherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
