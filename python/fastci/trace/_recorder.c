/*===- _recorder.c - Exact function recorder for CPython 3.9-3.11 ---------===*
 *
 * Records the first execution of every code object, and does nothing else.
 * It hooks frame evaluation (PEP 523, _PyInterpreterState_SetEvalFrameFunc):
 * every Python frame the interpreter starts or resumes (calls, generator and
 * coroutine resumptions) passes through `evaluate`, in every thread and in
 * fork children, and costs one pointer-hash lookup before CPython's own
 * evaluation runs. A profile function (sys.setprofile) would have to be set
 * per thread and, on 3.11, makes CPython build a frame object and trace every
 * instruction: +70-120 % on a call-heavy loop against this hook's +15-20 %
 * (which is what 3.11 loses by not inlining Python-to-Python calls while a
 * hook is set; 3.9/3.10 never inline, utils/bench/recorder_overhead.py).
 * CPython 3.12+ records with sys.monitoring (recorder.py) instead.
 *
 * A code object seen for the first time is classified by walking its stack
 * once: it runs at *import time* when a frame of importlib's _find_and_load
 * or a class body is on the stack, and then the innermost module or class
 * body frame names the module being imported. Test-time first executions
 * are recorded once and never looked at again until reset(); import-time
 * ones are recorded once but stay unseen, so that the same code running
 * later at test time is recorded as test-time too. Only repository code
 * (co_filename under one of the configured prefixes, or relative) is
 * recorded; other code is marked seen at its first call. Recorded code
 * objects are kept alive (strong references), so their ids stay unique.
 *
 *===----------------------------------------------------------------------===*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
typedef struct _PyInterpreterFrame EvalFrame;
#define FRAME_CODE(f) ((f)->f_code)
#define FRAME_BACK(f) ((f)->previous)
#else
typedef PyFrameObject EvalFrame;
#define FRAME_CODE(f) ((f)->f_code)
#define FRAME_BACK(f) ((f)->f_back)
#endif

#if PY_VERSION_HEX >= 0x030C0000
#error "CPython 3.12+ records functions with sys.monitoring; build for 3.9-3.11"
#endif

/* An open-addressing set of object pointers holding strong references. */
typedef struct {
  PyObject **slots;
  size_t capacity; /* a power of two, or 0 */
  size_t size;
} PtrSet;

static size_t ptr_hash(PyObject *p) {
  size_t h = (size_t)p >> 4;
  h ^= h >> 17;
  h *= (size_t)0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

static int ptrset_contains(const PtrSet *s, PyObject *p) {
  if (!s->capacity)
    return 0;
  size_t mask = s->capacity - 1;
  for (size_t i = ptr_hash(p) & mask;; i = (i + 1) & mask) {
    PyObject *slot = s->slots[i];
    if (slot == p)
      return 1;
    if (!slot)
      return 0;
  }
}

static int ptrset_grow(PtrSet *s) {
  size_t capacity = s->capacity ? 2 * s->capacity : 1024;
  PyObject **slots = PyMem_Calloc(capacity, sizeof(PyObject *));
  if (!slots)
    return -1;
  for (size_t j = 0; j < s->capacity; ++j) {
    PyObject *p = s->slots[j];
    if (!p)
      continue;
    size_t i = ptr_hash(p) & (capacity - 1);
    while (slots[i])
      i = (i + 1) & (capacity - 1);
    slots[i] = p;
  }
  PyMem_Free(s->slots);
  s->slots = slots;
  s->capacity = capacity;
  return 0;
}

/* Adds p (taking a new reference); returns 1 if added, 0 if present, -1. */
static int ptrset_add(PtrSet *s, PyObject *p) {
  if (2 * (s->size + 1) > s->capacity && ptrset_grow(s) < 0)
    return -1;
  size_t mask = s->capacity - 1;
  size_t i = ptr_hash(p) & mask;
  for (; s->slots[i]; i = (i + 1) & mask)
    if (s->slots[i] == p)
      return 0;
  Py_INCREF(p);
  s->slots[i] = p;
  ++s->size;
  return 1;
}

static void ptrset_clear(PtrSet *s) {
  PyObject **slots = s->slots;
  size_t capacity = s->capacity;
  s->slots = NULL;
  s->capacity = s->size = 0;
  for (size_t i = 0; i < capacity; ++i)
    Py_XDECREF(slots[i]);
  PyMem_Free(slots);
}

typedef struct {
  PyObject_HEAD PtrSet
      seen;              /* code objects needing no more work until reset() */
  PtrSet import_seen;    /* repository code recorded at import time */
  PyObject *functions;   /* list: test-time code objects since take() */
  PyObject *imports;     /* list: (code, importer code or None) since take() */
  PyObject *prefixes;    /* tuple of str: repository path prefixes */
  PyObject *import_code; /* importlib._bootstrap._find_and_load.__code__ */
  PyObject *module_name; /* "<module>" */
} Recorder;

static int is_repository(Recorder *self, PyCodeObject *code) {
  PyObject *filename = code->co_filename;
  if (!PyUnicode_Check(filename) || PyUnicode_GET_LENGTH(filename) == 0)
    return 0;
  Py_UCS4 first = PyUnicode_READ_CHAR(filename, 0);
  if (first == '<')
    return 0; /* <string>, <frozen ...> */
  if (first != '/')
    return 1; /* relative to the cwd: recorder.py decides */
  Py_ssize_t n = PyTuple_GET_SIZE(self->prefixes);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *prefix = PyTuple_GET_ITEM(self->prefixes, i);
    Py_ssize_t match =
        PyUnicode_Tailmatch(filename, prefix, 0, PY_SSIZE_T_MAX, -1);
    if (match == 1)
      return 1;
    if (match < 0) {
      PyErr_Clear();
      return 0;
    }
  }
  return 0;
}

/* The frame below \p frame, which is about to be evaluated. On 3.11 its
 * `previous` link is only set once evaluation begins: the caller is the
 * thread's current frame. */
static EvalFrame *caller_of(PyThreadState *tstate, EvalFrame *frame) {
#if PY_VERSION_HEX >= 0x030B0000
  return tstate->cframe->current_frame;
#else
  return frame->f_back;
#endif
}

/* A repository code object not seen since reset(): record it. The frames
 * are the interpreter's own (no frame objects are created). */
static int first_call(Recorder *self, PyThreadState *tstate, EvalFrame *frame,
                      PyCodeObject *code) {
  int import_time = 0;
  PyCodeObject *importer = NULL;
  for (EvalFrame *f = frame; f;
       f = f == frame ? caller_of(tstate, frame) : FRAME_BACK(f)) {
    PyCodeObject *c = FRAME_CODE(f);
    if ((PyObject *)c == self->import_code)
      import_time = 1;
    if (!(c->co_flags & CO_OPTIMIZED)) {
      /* A module or class body (or exec'd source). */
      if (!importer)
        importer = c;
      if (PyUnicode_Compare(c->co_name, self->module_name) != 0)
        import_time = 1; /* class bodies run when their module is imported */
    }
  }
  if (!import_time)
    return ptrset_add(&self->seen, (PyObject *)code) < 0 ||
                   PyList_Append(self->functions, (PyObject *)code) < 0
               ? -1
               : 0;
  int added = ptrset_add(&self->import_seen, (PyObject *)code);
  if (added <= 0)
    return added;
  PyObject *pair = PyTuple_Pack(2, (PyObject *)code,
                                importer ? (PyObject *)importer : Py_None);
  int result = pair && PyList_Append(self->imports, pair) == 0 ? 0 : -1;
  Py_XDECREF(pair);
  return result;
}

/* The recorder whose hook is installed (one per interpreter). */
static Recorder *active;
static _PyFrameEvalFunction previous_eval;

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
/* CPython 3.11 specializes `obj[i]` with a Python __getitem__ into
 * BINARY_SUBSCR_GETITEM, which pushes the frame inline without consulting
 * the frame-evaluation hook (calls do consult it), so later tests would
 * never see the method. The inline cache keeps 16 bits of the function's
 * version: a version that does not fit makes that specialization fail for
 * good (0 would only get a fresh version), and sites already specialized
 * for the method deoptimize, so the subscript goes through the type slot,
 * a vectorcall and this hook. The first call of each such method comes
 * here unless a site specialized before the hook was installed. */
static void keep_visible(EvalFrame *frame, PyCodeObject *code) {
  static PyObject *getitem;
  if (!getitem)
    getitem = PyUnicode_InternFromString("__getitem__");
  if (getitem && frame->f_func &&
      PyUnicode_Compare(code->co_name, getitem) == 0)
    frame->f_func->func_version = 0xFFFF0000u;
}
#else
static void keep_visible(EvalFrame *frame, PyCodeObject *code) {}
#endif

static PyObject *evaluate(PyThreadState *tstate, EvalFrame *frame,
                          int throwflag) {
  Recorder *self = active;
  PyCodeObject *code = FRAME_CODE(frame);
  if (self && !ptrset_contains(&self->seen, (PyObject *)code)) {
    keep_visible(frame, code);
    /* Nothing may disturb the program: an error here (out of memory) only
     * loses the record. The exception state must be kept as it is: a frame
     * evaluated with throwflag set carries one. */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    int failed = is_repository(self, code)
                     ? first_call(self, tstate, frame, code)
                     : ptrset_add(&self->seen, (PyObject *)code) < 0;
    if (failed)
      PyErr_Clear();
    PyErr_Restore(type, value, traceback);
  }
  return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

static PyObject *Recorder_install(Recorder *self, PyObject *unused) {
  PyInterpreterState *interp = PyInterpreterState_Get();
  _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
  if (active == self)
    Py_RETURN_TRUE;
  if (active || current != _PyEval_EvalFrameDefault)
    Py_RETURN_FALSE; /* another recorder, a JIT or a debugger has the hook */
  Py_INCREF(self);
  active = self;
  previous_eval = current;
  _PyInterpreterState_SetEvalFrameFunc(interp, evaluate);
  Py_RETURN_TRUE;
}

static PyObject *Recorder_uninstall(Recorder *self, PyObject *unused) {
  PyInterpreterState *interp = PyInterpreterState_Get();
  if (active != self)
    Py_RETURN_FALSE;
  if (_PyInterpreterState_GetEvalFrameFunc(interp) == evaluate)
    _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
  active = NULL;
  Py_DECREF(self);
  Py_RETURN_TRUE;
}

static PyObject *Recorder_installed(Recorder *self, PyObject *unused) {
  PyInterpreterState *interp = PyInterpreterState_Get();
  return PyBool_FromLong(active == self && _PyInterpreterState_GetEvalFrameFunc(
                                               interp) == evaluate);
}

static PyObject *Recorder_take(Recorder *self, PyObject *unused) {
  PyObject *functions = PyList_New(0), *imports = PyList_New(0);
  if (!functions || !imports) {
    Py_XDECREF(functions);
    Py_XDECREF(imports);
    return NULL;
  }
  PyObject *result = PyTuple_Pack(2, self->functions, self->imports);
  if (!result) {
    Py_DECREF(functions);
    Py_DECREF(imports);
    return NULL;
  }
  Py_SETREF(self->functions, functions);
  Py_SETREF(self->imports, imports);
  return result;
}

static PyObject *Recorder_reset(Recorder *self, PyObject *unused) {
  ptrset_clear(&self->seen);
  ptrset_clear(&self->import_seen);
  Py_RETURN_NONE;
}

static PyObject *Recorder_configure(Recorder *self, PyObject *args) {
  PyObject *prefixes, *import_code;
  if (!PyArg_ParseTuple(args, "O!O:configure", &PyTuple_Type, &prefixes,
                        &import_code))
    return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); ++i)
    if (!PyUnicode_Check(PyTuple_GET_ITEM(prefixes, i))) {
      PyErr_SetString(PyExc_TypeError, "prefixes must be str");
      return NULL;
    }
  Py_INCREF(prefixes);
  Py_SETREF(self->prefixes, prefixes);
  Py_INCREF(import_code);
  Py_SETREF(self->import_code, import_code);
  Py_RETURN_NONE;
}

static PyObject *Recorder_new(PyTypeObject *type, PyObject *args,
                              PyObject *kwargs) {
  Recorder *self = (Recorder *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  self->functions = PyList_New(0);
  self->imports = PyList_New(0);
  self->prefixes = PyTuple_New(0);
  self->module_name = PyUnicode_InternFromString("<module>");
  Py_INCREF(Py_None);
  self->import_code = Py_None;
  if (!self->functions || !self->imports || !self->prefixes ||
      !self->module_name) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void Recorder_dealloc(Recorder *self) {
  ptrset_clear(&self->seen);
  ptrset_clear(&self->import_seen);
  Py_XDECREF(self->functions);
  Py_XDECREF(self->imports);
  Py_XDECREF(self->prefixes);
  Py_XDECREF(self->import_code);
  Py_XDECREF(self->module_name);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Recorder_methods[] = {
    {"install", (PyCFunction)Recorder_install, METH_NOARGS,
     "Hook frame evaluation (all threads); False if another hook is set."},
    {"uninstall", (PyCFunction)Recorder_uninstall, METH_NOARGS,
     "Give the frame evaluation hook back."},
    {"installed", (PyCFunction)Recorder_installed, METH_NOARGS,
     "Whether this recorder's hook is (still) the interpreter's."},
    {"take", (PyCFunction)Recorder_take, METH_NOARGS,
     "(test-time codes, [(import-time code, importer code or None)]) "
     "recorded since the last take()."},
    {"reset", (PyCFunction)Recorder_reset, METH_NOARGS,
     "Forget what was seen: every code is recorded again at its next call."},
    {"configure", (PyCFunction)Recorder_configure, METH_VARARGS,
     "configure(prefixes, find_and_load_code)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fastci.trace._recorder.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Records the first execution of each code object.",
    .tp_new = Recorder_new,
    .tp_dealloc = (destructor)Recorder_dealloc,
    .tp_methods = Recorder_methods,
};

static struct PyModuleDef recorder_module = {
    PyModuleDef_HEAD_INIT, "_recorder",
    "Exact function recorder (CPython 3.9-3.11).", -1, NULL};

PyMODINIT_FUNC PyInit__recorder(void) {
  if (PyType_Ready(&RecorderType) < 0)
    return NULL;
  PyObject *module = PyModule_Create(&recorder_module);
  if (!module)
    return NULL;
  Py_INCREF(&RecorderType);
  if (PyModule_AddObject(module, "Recorder", (PyObject *)&RecorderType) < 0) {
    Py_DECREF(&RecorderType);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
