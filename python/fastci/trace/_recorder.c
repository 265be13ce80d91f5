/*===- _recorder.c - Exact function recorder for CPython 3.9-3.11 ---------===*
 *
 * Records the first execution of every code object, and does nothing else.
 * Two ways in:
 *
 * - CPython 3.11: *armed code objects* (arming.py). Each repository code
 *   object gets a twin whose prologue, after every RESUME, calls hit() with
 *   its disarmed twin (the original bytecode). A test-time hit records the
 *   code and points the running function at the disarmed twin, so later
 *   calls cost nothing and keep 3.11's inlined Python-to-Python calls;
 *   reset() arms those functions again. No hook is installed.
 * - CPython 3.9-3.10, and 3.11 when arming fails or is switched off: a
 *   frame-evaluation hook (PEP 523, _PyInterpreterState_SetEvalFrameFunc).
 *   Every Python frame the interpreter starts or resumes (calls, generator
 *   and coroutine resumptions) passes through `evaluate`, in every thread
 *   and in fork children, and costs one pointer-hash lookup before
 *   CPython's own evaluation runs; on 3.11 it also costs every call its
 *   inlining (+29 % on a call-heavy loop, utils/bench/recorder_overhead.py;
 *   3.9/3.10 never inline). A profile function (sys.setprofile) would have
 *   to be set per thread and, on 3.11, makes CPython build a frame object
 *   and trace every instruction: +70-120 %.
 *
 * CPython 3.12+ records with sys.monitoring (recorder.py) instead.
 *
 * A code object seen for the first time is classified by walking its stack
 * once: it runs at *import time* when a frame of importlib's _find_and_load
 * or a class body is on the stack, and then the innermost module or class
 * body frame names the module being imported. Test-time first executions
 * are recorded once and never looked at again until reset(); import-time
 * ones are recorded once but stay unseen (and armed), so that the same code
 * running later at test time is recorded as test-time too. Only repository
 * code (co_filename under one of the configured prefixes, or relative) is
 * recorded; other code is marked seen at its first call. Recorded code
 * objects are kept alive (strong references), so their ids stay unique.
 *
 *===----------------------------------------------------------------------===*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <frameobject.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "native/arming.h"
#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
/* Python.h defined it for extensions; the core headers define it again. */
#undef _PyGC_FINALIZED
#include <internal/pycore_interp.h> /* the eval breaker (Ticker) */
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
  int armed_mode;        /* 3.11: armed code objects call hit() */
  PyObject *disarmed;    /* list: (weakref to function, armed, disarmed code) */
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

static void repository_code_ran(void);
static void end_latency(void);

/* A repository code object not seen since reset(): record it. The stack
 * is \p innermost (the code about to run, or running) above the frames
 * from \p below outwards, the interpreter's own (no frame objects are
 * created). Returns 1 for a test-time first execution, 0 for import time,
 * -1 on error. */
/* Whether a frame running \p code puts its stack at import time: it is
 * importlib's _find_and_load (\p import_code), or a class body, which runs
 * when its module is imported (recorder.classify_codes). */
static int marks_import_time(PyCodeObject *code, PyObject *import_code) {
  return (PyObject *)code == import_code ||
         (!(code->co_flags & CO_OPTIMIZED) &&
          PyUnicode_CompareWithASCIIString(code->co_name, "<module>") != 0);
}

static int record(Recorder *self, PyCodeObject *innermost, EvalFrame *below,
                  PyCodeObject *code) {
  end_latency(); /* a latent fork child has something to report now */
  int import_time = 0;
  PyCodeObject *importer = NULL;
  EvalFrame *f = below;
  for (PyCodeObject *c = innermost; c;
       c = f ? FRAME_CODE(f) : NULL, f = f ? FRAME_BACK(f) : NULL) {
    /* A module or class body (or exec'd source). */
    if (!(c->co_flags & CO_OPTIMIZED) && !importer)
      importer = c == innermost ? code : c;
    if (marks_import_time(c, self->import_code))
      import_time = 1;
  }
  if (!import_time) {
    int added = ptrset_add(&self->seen, (PyObject *)code);
    if (added < 0 ||
        (added && PyList_Append(self->functions, (PyObject *)code) < 0))
      return -1;
    repository_code_ran();
    return 1;
  }
  int added = ptrset_add(&self->import_seen, (PyObject *)code);
  if (added <= 0)
    return added;
  PyObject *pair = PyTuple_Pack(2, (PyObject *)code,
                                importer ? (PyObject *)importer : Py_None);
  int result = pair && PyList_Append(self->imports, pair) == 0 ? 0 : -1;
  Py_XDECREF(pair);
  return result;
}

static int first_call(Recorder *self, PyThreadState *tstate, EvalFrame *frame,
                      PyCodeObject *code) {
  return record(self, code, caller_of(tstate, frame), code) < 0 ? -1 : 0;
}

/* The recorder whose hook is installed (one per interpreter). */
static Recorder *active;
static _PyFrameEvalFunction previous_eval;
static PyObject *evaluate(PyThreadState *tstate, EvalFrame *frame,
                          int throwflag);

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

static void give_hook_back(void) {
  PyInterpreterState *interp = PyInterpreterState_Get();
  if (_PyInterpreterState_GetEvalFrameFunc(interp) == evaluate)
    _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
}

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
  if (active == self && !self->armed_mode && current == evaluate)
    Py_RETURN_TRUE;
  if ((active && active != self) ||
      (current != _PyEval_EvalFrameDefault && current != evaluate))
    Py_RETURN_FALSE; /* another recorder, a JIT or a debugger has the hook */
  if (!active) {
    Py_INCREF(self);
    active = self;
  }
  self->armed_mode = 0;
  if (current != evaluate) {
    previous_eval = current;
    _PyInterpreterState_SetEvalFrameFunc(interp, evaluate);
  }
  Py_RETURN_TRUE;
}

#if PY_VERSION_HEX >= 0x030B0000
/* arm(): record through armed code objects' hit() calls (CPython 3.11),
 * with no frame-evaluation hook. */
static PyObject *Recorder_arm(Recorder *self, PyObject *unused) {
  if (active && active != self)
    Py_RETURN_FALSE;
  if (!active) {
    Py_INCREF(self);
    active = self;
  }
  give_hook_back(); /* from an earlier install() */
  self->armed_mode = 1;
  Py_RETURN_TRUE;
}
#endif

static PyObject *Recorder_uninstall(Recorder *self, PyObject *unused) {
  if (active != self)
    Py_RETURN_FALSE;
  give_hook_back();
  active = NULL;
  Py_DECREF(self);
  Py_RETURN_TRUE;
}

static PyObject *Recorder_installed(Recorder *self, PyObject *unused) {
  PyInterpreterState *interp = PyInterpreterState_Get();
  if (active != self)
    Py_RETURN_FALSE;
  return PyBool_FromLong(self->armed_mode ||
                         _PyInterpreterState_GetEvalFrameFunc(interp) ==
                             evaluate);
}

static PyObject *Recorder_hooked(Recorder *self, PyObject *unused) {
  PyInterpreterState *interp = PyInterpreterState_Get();
  return PyBool_FromLong(active == self && _PyInterpreterState_GetEvalFrameFunc(
                                               interp) == evaluate);
}

#if PY_VERSION_HEX >= 0x030B0000
/* Points \p func at \p code, as assigning __code__ does, without its audit
 * event; a new version makes specialized call sites deoptimize. */
static void set_function_code(PyFunctionObject *func, PyObject *code) {
  Py_INCREF(code);
  Py_SETREF(func->func_code, code);
  func->func_version = 0;
}

/* A test-time first execution of \p func running \p armed: from now on the
 * function runs \p disarmed (without the call to hit()) until reset(). The
 * running frame keeps its armed code. */
static int disarm(Recorder *self, PyFunctionObject *func, PyObject *armed,
                  PyObject *disarmed) {
  if (!func || func->func_code != armed)
    return 0; /* a module or class body, or __code__ was replaced */
  PyObject *ref = PyWeakref_NewRef((PyObject *)func, NULL);
  if (!ref)
    return -1;
  PyObject *entry = PyTuple_Pack(3, ref, armed, disarmed);
  Py_DECREF(ref);
  if (!entry || PyList_Append(self->disarmed, entry) < 0) {
    Py_XDECREF(entry);
    return -1;
  }
  Py_DECREF(entry);
  set_function_code(func, disarmed);
  return 0;
}

/* hit(disarmed): the prologue of every armed code object calls it with the
 * code's disarmed twin, which is the code object recorded. */
static PyObject *recorder_hit(PyObject *module, PyObject *disarmed) {
  Recorder *self = active;
  if (!self || !self->armed_mode || !PyCode_Check(disarmed))
    Py_RETURN_NONE;
  PyThreadState *tstate = PyThreadState_Get();
  EvalFrame *frame = tstate->cframe->current_frame;
  if (!frame)
    Py_RETURN_NONE;
  PyObject *armed = (PyObject *)FRAME_CODE(frame);
  int test_time = 1;
  if (!ptrset_contains(&self->seen, disarmed))
    test_time = record(self, (PyCodeObject *)disarmed, FRAME_BACK(frame),
                       (PyCodeObject *)disarmed);
  /* Nothing may disturb the program: an error only loses the record. */
  if (test_time < 0 ||
      (test_time && disarm(self, frame->f_func, armed, disarmed) < 0))
    PyErr_Clear();
  Py_RETURN_NONE;
}

/* executing(code): \p code is about to run as a module body (an exec()
 * audit event): record it as a first execution there. */
static PyObject *Recorder_executing(Recorder *self, PyObject *code) {
  if (!PyCode_Check(code)) {
    PyErr_SetString(PyExc_TypeError, "executing() takes a code object");
    return NULL;
  }
  if (ptrset_contains(&self->seen, code))
    Py_RETURN_NONE;
  PyThreadState *tstate = PyThreadState_Get();
  if (record(self, (PyCodeObject *)code, tstate->cframe->current_frame,
             (PyCodeObject *)code) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* Gives every function disarmed since the last reset its armed code back. */
static int rearm(Recorder *self) {
  PyObject *entries = self->disarmed;
  self->disarmed = PyList_New(0);
  if (!self->disarmed) {
    self->disarmed = entries;
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); ++i) {
    PyObject *entry = PyList_GET_ITEM(entries, i);
    PyObject *func = PyWeakref_GET_OBJECT(PyTuple_GET_ITEM(entry, 0));
    if (func != Py_None &&
        ((PyFunctionObject *)func)->func_code == PyTuple_GET_ITEM(entry, 2))
      set_function_code((PyFunctionObject *)func, PyTuple_GET_ITEM(entry, 1));
  }
  Py_DECREF(entries);
  return 0;
}
#else
static int rearm(Recorder *self) { return 0; }
#endif

/* Two new empty lists for the records to come; -1 if out of memory. */
static int new_record_lists(PyObject **functions, PyObject **imports) {
  *functions = PyList_New(0);
  *imports = PyList_New(0);
  if (*functions && *imports)
    return 0;
  Py_CLEAR(*functions);
  Py_CLEAR(*imports);
  return -1;
}

static PyObject *Recorder_take(Recorder *self, PyObject *unused) {
  PyObject *functions, *imports;
  if (new_record_lists(&functions, &imports) < 0)
    return NULL;
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

/* The lists a fork child inherited: they hold the parent's records, which
 * the parent still reports. Releasing them would touch (and so copy) every
 * page of every code object they hold; the few bytes stay allocated. */
static PyObject *Recorder_forget(Recorder *self, PyObject *unused) {
  PyObject *functions, *imports;
  if (new_record_lists(&functions, &imports) < 0)
    return NULL;
  self->functions = functions; /* the inherited lists are left as they are */
  self->imports = imports;
  Py_RETURN_NONE;
}

static PyObject *Recorder_reset(Recorder *self, PyObject *unused) {
  ptrset_clear(&self->seen);
  ptrset_clear(&self->import_seen);
  if (rearm(self) < 0)
    return NULL;
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
  self->disarmed = PyList_New(0);
  Py_INCREF(Py_None);
  self->import_code = Py_None;
  if (!self->functions || !self->imports || !self->prefixes ||
      !self->disarmed) {
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
  Py_XDECREF(self->disarmed);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Recorder_methods[] = {
    {"install", (PyCFunction)Recorder_install, METH_NOARGS,
     "Hook frame evaluation (all threads); False if another hook is set."},
    {"uninstall", (PyCFunction)Recorder_uninstall, METH_NOARGS,
     "Give the frame evaluation hook back."},
    {"installed", (PyCFunction)Recorder_installed, METH_NOARGS,
     "Whether this recorder still records (armed, or its hook is the "
     "interpreter's)."},
    {"hooked", (PyCFunction)Recorder_hooked, METH_NOARGS,
     "Whether the frame-evaluation hook is installed now."},
    {"take", (PyCFunction)Recorder_take, METH_NOARGS,
     "(test-time codes, [(import-time code, importer code or None)]) "
     "recorded since the last take()."},
    {"forget", (PyCFunction)Recorder_forget, METH_NOARGS,
     "In a fork child: drop the records made so far (the parent's) without "
     "releasing them."},
    {"reset", (PyCFunction)Recorder_reset, METH_NOARGS,
     "Forget what was seen: every code is recorded again at its next call."},
    {"configure", (PyCFunction)Recorder_configure, METH_VARARGS,
     "configure(prefixes, find_and_load_code)"},
#if PY_VERSION_HEX >= 0x030B0000
    {"arm", (PyCFunction)Recorder_arm, METH_NOARGS,
     "Record through armed code objects' hit() calls, without the hook; "
     "False if another recorder is active."},
    {"executing", (PyCFunction)Recorder_executing, METH_O,
     "executing(code): record code about to run as a module body."},
#endif
    {NULL, NULL, 0, NULL}};

#if PY_VERSION_HEX >= 0x030B0000
/* set_const(code, index, value): replaces one of a code object's constants
 * in place, for a module body about to run (its .pyc is written already). */
static PyObject *recorder_set_const(PyObject *module, PyObject *args) {
  PyCodeObject *code;
  Py_ssize_t index;
  PyObject *value;
  if (!PyArg_ParseTuple(args, "O!nO:set_const", &PyCode_Type, &code, &index,
                        &value))
    return NULL;
  PyObject *consts = code->co_consts;
  if (index < 0 || index >= PyTuple_GET_SIZE(consts)) {
    PyErr_SetString(PyExc_IndexError, "constant index out of range");
    return NULL;
  }
  Py_INCREF(value);
  Py_SETREF(PyTuple_GET_ITEM(consts, index), value);
  Py_RETURN_NONE;
}

/* set_code(function, code): function.__code__ = code, without the audit
 * event (arming the functions that exist when the recorder starts). */
static PyObject *recorder_set_code(PyObject *module, PyObject *args) {
  PyFunctionObject *func;
  PyCodeObject *code;
  if (!PyArg_ParseTuple(args, "O!O!:set_code", &PyFunction_Type, &func,
                        &PyCode_Type, &code))
    return NULL;
  if (code->co_nfreevars != ((PyCodeObject *)func->func_code)->co_nfreevars) {
    PyErr_SetString(PyExc_ValueError, "free variables differ");
    return NULL;
  }
  set_function_code(func, (PyObject *)code);
  Py_RETURN_NONE;
}
#endif

#if PY_VERSION_HEX < 0x030B0000
/* The f_lasti a Python frame reports: the byte offset of its last
 * instruction, -1 before the first (3.11: walk_frames() reads it). */
static int frame_lasti(PyFrameObject *frame) {
#if PY_VERSION_HEX >= 0x030A0000
  return frame->f_lasti < 0 ? -1 : frame->f_lasti * (int)sizeof(_Py_CODEUNIT);
#else
  return frame->f_lasti;
#endif
}
#endif

/* A C audit hook that hands the named events to a Python callable. With a
 * Python hook (sys.addaudithook) every audit event of the process costs a
 * Python call, and on 3.11 every id() and frame.f_code is one; here the
 * others cost a few string comparisons. Events about a file the callback
 * would ignore are dropped here too: a process importing torch raises
 * ~1,300 `exec` and ~1,000 `open` events for modules outside the
 * repository, each a Python call otherwise. */
typedef struct {
  PyObject *callback;
  Py_ssize_t count;
  char **events;
  PyObject *suffixes; /* tuple of str, or NULL: paths ending so are dropped */
  PyObject *files;    /* NULL, or a one-element list holding a set of
                       * directories: a path in one of them is dropped (a
                       * list, so its owner can swap the set) */
} AuditFilter;

/* The file an event is about, borrowed: the path of `open` (a str; bytes
 * and descriptors are the callback's to judge), the co_filename of the
 * code `exec` is about to run; NULL for anything else. */
static PyObject *event_path(PyObject *args) {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) == 0)
    return NULL;
  PyObject *first = PyTuple_GET_ITEM(args, 0);
  if (PyCode_Check(first))
    first = ((PyCodeObject *)first)->co_filename;
  return PyUnicode_Check(first) ? first : NULL;
}

/* Whether the event about \p path is dropped. Errors only cost the
 * filtering: the event then reaches the callback. */
static int dropped(AuditFilter *filter, PyObject *path) {
  Py_ssize_t length = PyUnicode_GET_LENGTH(path);
  /* `<string>`, `<frozen ...>`: code compiled from a string names no file
   * (a third of the `exec` events of a process importing torch: the
   * functions dataclasses, namedtuple and typing make). */
  if (length >= 2 && PyUnicode_READ_CHAR(path, 0) == '<' &&
      PyUnicode_READ_CHAR(path, length - 1) == '>')
    return 1;
  for (Py_ssize_t i = 0;
       filter->suffixes && i < PyTuple_GET_SIZE(filter->suffixes); ++i)
    if (PyUnicode_Tailmatch(path, PyTuple_GET_ITEM(filter->suffixes, i), 0,
                            length, 1) == 1)
      return 1;
  PyObject *directories = filter->files && PyList_GET_SIZE(filter->files) == 1
                              ? PyList_GET_ITEM(filter->files, 0)
                              : NULL;
  if (!directories || !PyAnySet_Check(directories) ||
      PySet_GET_SIZE(directories) == 0)
    return 0;
  Py_ssize_t slash = PyUnicode_FindChar(path, '/', 0, length, -1);
  if (slash <= 0)
    return 0;
  PyObject *directory = PyUnicode_Substring(path, 0, slash);
  int result = directory && PySet_Contains(directories, directory) == 1;
  Py_XDECREF(directory);
  PyErr_Clear();
  return result;
}

static int filtered_audit_hook(const char *event, PyObject *args, void *data) {
  AuditFilter *filter = data;
  Py_ssize_t i = 0;
  while (i < filter->count && strcmp(event, filter->events[i]) != 0)
    ++i;
  if (i == filter->count)
    return 0;
  PyObject *path = event_path(args);
  if (path && dropped(filter, path))
    return 0;
  PyObject *name = PyUnicode_FromString(event);
  PyObject *result =
      name ? PyObject_CallFunctionObjArgs(filter->callback, name, args, NULL)
           : NULL;
  Py_XDECREF(name);
  /* Nothing may disturb the program: a failing callback loses the event. */
  if (!result)
    PyErr_Clear();
  Py_XDECREF(result);
  return 0;
}

/* add_audit_hook(callback, events[, suffixes[, files]]): callback(event,
 * args) for the audit events named in the tuple \p events only, less
 * those about a path ending with one of the str \p suffixes, in a
 * directory of the set \p files[0], or about no file at all
 * (`<string>`). Like every audit hook,
 * it stays for the life of the process. */
static PyObject *recorder_add_audit_hook(PyObject *module, PyObject *args) {
  PyObject *callback, *events, *suffixes = NULL, *files = NULL;
  if (!PyArg_ParseTuple(args, "OO!|O!O!:add_audit_hook", &callback,
                        &PyTuple_Type, &events, &PyTuple_Type, &suffixes,
                        &PyList_Type, &files))
    return NULL;
  if (!PyCallable_Check(callback)) {
    PyErr_SetString(PyExc_TypeError, "add_audit_hook() wants a callable");
    return NULL;
  }
  for (Py_ssize_t i = 0; suffixes && i < PyTuple_GET_SIZE(suffixes); ++i)
    if (!PyUnicode_Check(PyTuple_GET_ITEM(suffixes, i))) {
      PyErr_SetString(PyExc_TypeError, "suffixes must be str");
      return NULL;
    }
  Py_ssize_t count = PyTuple_GET_SIZE(events);
  AuditFilter *filter = PyMem_RawCalloc(1, sizeof(AuditFilter));
  char **names = PyMem_RawCalloc(count ? count : 1, sizeof(char *));
  if (!filter || !names) {
    PyMem_RawFree(filter);
    PyMem_RawFree(names);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    const char *name = PyUnicode_Check(PyTuple_GET_ITEM(events, i))
                           ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(events, i))
                           : NULL;
    names[i] = name ? PyMem_RawMalloc(strlen(name) + 1) : NULL;
    if (!names[i]) {
      for (Py_ssize_t j = 0; j < i; ++j)
        PyMem_RawFree(names[j]);
      PyMem_RawFree(names);
      PyMem_RawFree(filter);
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "event names must be str");
      return NULL;
    }
    strcpy(names[i], name);
  }
  Py_INCREF(callback);
  Py_XINCREF(suffixes);
  Py_XINCREF(files);
  filter->callback = callback;
  filter->count = count;
  filter->events = names;
  filter->suffixes = suffixes;
  filter->files = files;
  if (PySys_AddAuditHook(filtered_audit_hook, filter) < 0)
    return NULL; /* the filter stays allocated: a hook may hold it */
  Py_RETURN_NONE;
}

#if PY_VERSION_HEX >= 0x030B0000
/* The lines of a code object's instructions, read from its location table
 * (the format of CPython 3.11 and 3.12, Objects/locations.md): each entry
 * starts with a byte with bit 7 set, whose bits 3-6 say how the line moves
 * (15: the entry has no line). Calls visit(line, data) for each entry
 * that has one; stops early when it returns nonzero. Reads the table in
 * place: no Python object is made or referenced (in a fork child each
 * reference would copy a page of the parent's). */
static int signed_varint(const uint8_t **at, const uint8_t *end) {
  unsigned int byte = *(*at)++, value = byte & 63, shift = 0;
  while ((byte & 64) && *at < end) {
    byte = *(*at)++;
    shift += 6;
    value |= (byte & 63) << shift;
  }
  return (value & 1) ? -(int)(value >> 1) : (int)(value >> 1);
}

static void for_each_line(PyCodeObject *code, int (*visit)(int, void *),
                          void *data) {
  const uint8_t *at = (const uint8_t *)PyBytes_AS_STRING(code->co_linetable);
  const uint8_t *end = at + PyBytes_GET_SIZE(code->co_linetable);
  int line = code->co_firstlineno;
  while (at < end) {
    int kind = (*at >> 3) & 15;
    const uint8_t *next = at + 1;
    if (kind == 13 || kind == 14) /* no columns, long form */
      line += signed_varint(&next, end);
    else if (kind == 11 || kind == 12) /* one-line forms */
      line += kind - 10;
    if (kind != 15 && visit(line, data))
      return;
    for (at = next; at < end && !(*at & 128); ++at)
      ;
  }
}

static int keep_max(int line, void *data) {
  if (line > *(int *)data)
    *(int *)data = line;
  return 0;
}

/* The last line of a code object (at least its first). */
static int last_line(PyCodeObject *code) {
  int last = code->co_firstlineno;
  for_each_line(code, keep_max, &last);
  return last;
}

typedef struct {
  int first;  /* co_firstlineno */
  int *lines; /* its own lines past it */
  size_t count, capacity;
  int failed;
} LineSet;

static int keep_later(int line, void *data) {
  LineSet *set = data;
  if (line <= set->first)
    return 0;
  if (set->count == set->capacity) {
    size_t capacity = set->capacity ? 2 * set->capacity : 64;
    int *grown = PyMem_Realloc(set->lines, capacity * sizeof(int));
    if (!grown) {
      set->failed = 1;
      return 1;
    }
    set->lines = grown;
    set->capacity = capacity;
  }
  set->lines[set->count++] = line;
  return 0;
}

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* A nested code object: its first line, and its last once needed. */
typedef struct {
  int first;
  int last; /* 0: not computed yet */
  PyCodeObject *code;
} Nested;

static int compare_nested(const void *a, const void *b) {
  return compare_ints(&((const Nested *)a)->first, &((const Nested *)b)->first);
}

/* entry_line(code) -> int: frames._entry_line() in C, without reading the
 * line table into Python objects: the first line of the code's own
 * instructions past co_firstlineno outside every nested code object, else
 * co_firstlineno; 0 for a module body. A fork child describes each
 * function it ran this way at its final write. */
static PyObject *recorder_entry_line(PyObject *module, PyObject *arg) {
  if (!PyCode_Check(arg)) {
    PyErr_SetString(PyExc_TypeError, "entry_line() needs a code object");
    return NULL;
  }
  PyCodeObject *code = (PyCodeObject *)arg;
  if (PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0)
    return PyLong_FromLong(0);
  LineSet own = {.first = code->co_firstlineno};
  for_each_line(code, keep_later, &own);
  Py_ssize_t consts = PyTuple_GET_SIZE(code->co_consts);
  Nested *nested = PyMem_Malloc((consts ? consts : 1) * sizeof(Nested));
  if (own.failed || !nested) {
    PyMem_Free(own.lines);
    PyMem_Free(nested);
    return PyErr_NoMemory();
  }
  size_t count = 0;
  for (Py_ssize_t i = 0; i < consts; ++i) {
    PyObject *item = PyTuple_GET_ITEM(code->co_consts, i);
    if (PyCode_Check(item))
      nested[count++] = (Nested){((PyCodeObject *)item)->co_firstlineno, 0,
                                 (PyCodeObject *)item};
  }
  qsort(own.lines, own.count, sizeof(int), compare_ints);
  qsort(nested, count, sizeof(Nested), compare_nested);
  int result = code->co_firstlineno;
  for (size_t i = 0; i < own.count; ++i) {
    int line = own.lines[i];
    if (i && line == own.lines[i - 1])
      continue;
    /* Nested codes starting at or before `line`, the closest first. */
    size_t k = count;
    while (k > 0 && nested[k - 1].first > line)
      --k;
    int inside = 0;
    while (k-- > 0 && !inside) {
      if (!nested[k].last)
        nested[k].last = last_line(nested[k].code);
      inside = nested[k].first == line || line <= nested[k].last;
    }
    if (!inside) {
      result = line;
      break;
    }
  }
  PyMem_Free(own.lines);
  PyMem_Free(nested);
  return PyLong_FromLong(result);
}

#endif

/* links(directory): the names of the symbolic links in \p directory (a
 * str), as a frozenset; OSError when it cannot be listed. What the
 * describer needs of a directory whose files it judges (frames.py): one
 * listing, and no Python object for the names that are not links, which
 * are all of them in site-packages. */
static PyObject *recorder_links(PyObject *module, PyObject *arg) {
  PyObject *encoded = NULL;
  if (!PyUnicode_FSConverter(arg, &encoded))
    return NULL;
  const char *path = PyBytes_AS_STRING(encoded);
  DIR *dir = opendir(path);
  if (!dir) {
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
    Py_DECREF(encoded);
    return NULL;
  }
  PyObject *names = PySet_New(NULL);
  struct dirent *entry;
  errno = 0;
  while (names && (entry = readdir(dir))) {
    int link = entry->d_type == DT_LNK;
    if (entry->d_type == DT_UNKNOWN) { /* a file system without types */
      struct stat st;
      link =
          fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode);
    }
    if (!link)
      continue;
    PyObject *name = PyUnicode_DecodeFSDefault(entry->d_name);
    if (!name || PySet_Add(names, name) < 0)
      Py_CLEAR(names);
    Py_XDECREF(name);
    errno = 0;
  }
  if (names && errno != 0) {
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
    Py_CLEAR(names);
  }
  closedir(dir);
  Py_DECREF(encoded);
  PyObject *result = names ? PyFrozenSet_New(names) : NULL;
  Py_XDECREF(names);
  return result;
}

/*===- Signals whose Python handler may never run ------------------------===*
 *
 * A Python-level signal handler runs only when the main thread next executes
 * bytecode. A main thread blocked in C code that retries on EINTR (waitpid
 * in system(), a native library's wait), or that started blocking right
 * after the signal arrived (a pool worker entering its queue's lock while
 * the sampling thread held the GIL), never does: a process that SIGTERM
 * would have killed at once lives on. watch_signal() puts a C handler in
 * front of the one Python installed, counting deliveries, so the sampling
 * thread can see a signal whose handler has not run and end the process
 * itself (process.py). Only one signal is watched.
 *
 *===----------------------------------------------------------------------===*/

static int watched_signal;
static struct sigaction chained_action; /* Python's, called after counting */
static volatile sig_atomic_t deliveries;
/* latent_callback != NULL, as the signal handler may read it ("Latent fork
 * children"). */
static volatile sig_atomic_t latent;
/* The semaphore the sampling thread last waited on (the Ticker section):
 * a delivery posts it, so that the thread sees the signal now rather than
 * at its next planned wake-up. Never freed, so any value is safe here. */
static sem_t *_Atomic sleeping_wake;

static void count_and_chain(int signum, siginfo_t *info, void *context) {
  if (latent) {
    /* Nothing to write and no thread to watch: die as the program would
     * have, without waiting for the main thread to run Python. The signal
     * is blocked while this runs; it is taken once this returns. */
    signal(signum, SIG_DFL);
    raise(signum);
    return;
  }
  deliveries = deliveries + 1;
  sem_t *wake = atomic_load(&sleeping_wake);
  if (wake)
    sem_post(wake); /* async-signal-safe */
  if (chained_action.sa_flags & SA_SIGINFO)
    chained_action.sa_sigaction(signum, info, context);
  else if (chained_action.sa_handler != SIG_DFL &&
           chained_action.sa_handler != SIG_IGN)
    chained_action.sa_handler(signum);
}

/* watch_signal(signum) -> bool: count deliveries of \p signum in front of
 * its current handler. False when another signal is watched already or the
 * current disposition is not a handler. Calling it again for the watched
 * signal after something replaced the handler puts the watch back. */
static PyObject *recorder_watch_signal(PyObject *module, PyObject *args) {
  int signum;
  if (!PyArg_ParseTuple(args, "i:watch_signal", &signum))
    return NULL;
  if (watched_signal && watched_signal != signum)
    Py_RETURN_FALSE;
  struct sigaction current;
  if (sigaction(signum, NULL, &current) < 0)
    return PyErr_SetFromErrno(PyExc_OSError);
  if ((current.sa_flags & SA_SIGINFO) &&
      current.sa_sigaction == count_and_chain)
    Py_RETURN_TRUE;
  if (!(current.sa_flags & SA_SIGINFO) &&
      (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN))
    Py_RETURN_FALSE;
  struct sigaction ours = current;
  ours.sa_flags |= SA_SIGINFO;
  ours.sa_sigaction = count_and_chain;
  /* The chained action must be complete before the first delivery. */
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  chained_action = current;
  watched_signal = signum;
  int failed = sigaction(signum, &ours, NULL) < 0;
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  if (failed)
    return PyErr_SetFromErrno(PyExc_OSError);
  Py_RETURN_TRUE;
}

/* signal_deliveries() -> int: how often the watched signal arrived. */
static PyObject *recorder_signal_deliveries(PyObject *module,
                                            PyObject *unused) {
  return PyLong_FromLong((long)deliveries);
}

/* die_by(signum): take the default action of \p signum, from any thread.
 * signal.signal() works in the main thread only, and the main thread is the
 * one that cannot run Python here. */
static PyObject *recorder_die_by(PyObject *module, PyObject *args) {
  int signum;
  if (!PyArg_ParseTuple(args, "i:die_by", &signum))
    return NULL;
  struct sigaction fallback;
  memset(&fallback, 0, sizeof fallback);
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  if (sigaction(signum, &fallback, NULL) < 0 || kill(getpid(), signum) < 0)
    return PyErr_SetFromErrno(PyExc_OSError);
  Py_RETURN_NONE;
}

/*===- Latent fork children ----------------------------------------------===*
 *
 * A fork child (a DataLoader worker, a pool worker) starts with nothing to
 * report: the records it inherited are the parent's, and the parent
 * reports them. Most DataLoader workers stay that way: they run the
 * library's loop and no repository code of their own, import nothing and
 * open no repository file. Such a child is *latent* (sampler.py): no
 * sampling thread, no sink to write, nothing at exit, and none of the
 * sampler's Python code runs in it. Each Python object a fork child
 * touches copies a page of its parent's (a reference count is a write),
 * and in a worker of a process that imported torch each copy costs tens
 * of microseconds: the sampler's own after-fork reset, in Python, cost a
 * worker 3-5 ms (docs/Evidence.md). So the decision is made here, in the
 * at-fork hook (after_fork_in_child, which process.py registers with
 * os.register_at_fork): where the parent allows it (set_fork_hooks), the
 * child is latent at once; the first thing that gives it something to
 * report ends that and calls the parent's `latent` callback once (which
 * resets the sampler for the child and starts its thread): a record
 * (repository code run, at test or import time), an import or an exec (an
 * audit hook the parent installs, so children inherit it), and, from
 * Python, a repository file opened or a test begun (end_latency()). A
 * SIGTERM that finds the child latent takes the default action at once
 * (count_and_chain). Where the parent does not allow it, the hook calls
 * its `full` callback, the after-fork reset in Python.
 *
 *===----------------------------------------------------------------------===*/

/* The callback that ends latency; NULL when the process is not latent.
 * Read and written with the GIL. */
static PyObject *latent_callback;
/* set_fork_hooks(): what a fork child calls; latent forks are allowed
 * while fork_latent is set. */
static PyObject *fork_latent, *fork_full;
/* When a latent child was forked: time.time() and time.process_time(),
 * and the newest entry of sys.modules (sampler.modules_mark()); latency
 * may end inside an import, with the module in sys.modules already. */
static double fork_wall, fork_cpu;
static PyObject *fork_mark_name, *fork_mark_module;

/* Calls \p callback (a reference this steals) keeping the caller's
 * exception state: record() may run while an exception is being thrown
 * into a generator. Nothing may disturb the program: a failing callback
 * costs only samples. */
static void call_quietly(PyObject *callback) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject *result = PyObject_CallNoArgs(callback);
  if (!result)
    PyErr_Clear();
  Py_XDECREF(result);
  Py_DECREF(callback);
  PyErr_Restore(type, value, traceback);
}

/* Ends latency: calls the callback once. */
static void end_latency(void) {
  PyObject *callback = latent_callback;
  if (!callback)
    return;
  latent_callback = NULL;
  latent = 0;
  call_quietly(callback);
}

/* Whatever a latent process imports or executes is something to report.
 * Not an add_audit_hook() filter: that would call Python for every import
 * for the rest of the process; this returns at one load while the process
 * is not latent. */
static int latency_audit_hook(const char *event, PyObject *args, void *data) {
  if (latent_callback &&
      (strcmp(event, "import") == 0 || strcmp(event, "exec") == 0))
    end_latency();
  return 0;
}

/* set_fork_hooks(latent, full): a fork child from now on is latent until
 * it has something to report, which calls \p latent once, or, with \p
 * latent None, calls \p full (None: nothing) right after the fork. */
static PyObject *recorder_set_fork_hooks(PyObject *module, PyObject *args) {
  static int hooked; /* a fork child inherits the hook and this */
  PyObject *latent_hook, *full_hook;
  if (!PyArg_ParseTuple(args, "OO:set_fork_hooks", &latent_hook, &full_hook))
    return NULL;
  if ((latent_hook != Py_None && !PyCallable_Check(latent_hook)) ||
      (full_hook != Py_None && !PyCallable_Check(full_hook))) {
    PyErr_SetString(PyExc_TypeError,
                    "set_fork_hooks() wants callables or None");
    return NULL;
  }
  if (latent_hook != Py_None && !hooked) {
    if (PySys_AddAuditHook(latency_audit_hook, NULL) < 0)
      return NULL;
    hooked = 1;
  }
  Py_CLEAR(fork_latent);
  Py_CLEAR(fork_full);
  if (latent_hook != Py_None) {
    Py_INCREF(latent_hook);
    fork_latent = latent_hook;
  }
  if (full_hook != Py_None) {
    Py_INCREF(full_hook);
    fork_full = full_hook;
  }
  Py_RETURN_NONE;
}

/* A clock's reading in seconds (CLOCK_REALTIME: time.time()). */
static double clock_seconds(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* after_fork_in_child(): for os.register_at_fork (see above). */
static PyObject *recorder_after_fork_in_child(PyObject *module,
                                              PyObject *unused) {
  fork_wall = clock_seconds(CLOCK_REALTIME);
  fork_cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  if (fork_latent) {
    /* Two references taken: the only pages of the parent's this writes
     * besides the callback's. */
    PyObject *modules = PyImport_GetModuleDict(), *name, *module;
    Py_ssize_t at = 0;
    fork_mark_name = fork_mark_module = NULL;
    while (modules && PyDict_Next(modules, &at, &name, &module)) {
      fork_mark_name = name;
      fork_mark_module = module;
    }
    Py_XINCREF(fork_mark_name);
    Py_XINCREF(fork_mark_module);
    Py_INCREF(fork_latent);
    Py_XSETREF(latent_callback, fork_latent);
    latent = 1;
    Py_RETURN_NONE;
  }
  if (fork_full)
    return PyObject_CallNoArgs(fork_full);
  Py_RETURN_NONE;
}

/* fork_state() -> (wall, cpu, mark): time.time(), time.process_time() and
 * sampler.modules_mark() at the fork of this latent child. */
static PyObject *recorder_fork_state(PyObject *module, PyObject *unused) {
  if (!fork_mark_name)
    return Py_BuildValue("(ddO)", fork_wall, fork_cpu, Py_None);
  return Py_BuildValue("(dd(OO))", fork_wall, fork_cpu, fork_mark_name,
                       fork_mark_module);
}

/* latent() -> bool: whether this process is a latent fork child. */
static PyObject *recorder_latent(PyObject *module, PyObject *unused) {
  return PyBool_FromLong(latent_callback != NULL);
}

/* end_latency(): the latent process has something to report (from
 * Python: a repository file opened, a test begun): calls the callback. */
static PyObject *recorder_end_latency(PyObject *module, PyObject *unused) {
  end_latency();
  Py_RETURN_NONE;
}

/*===- The sampling thread's wait between ticks ---------------------------===*
 *
 * The sampling thread needs the GIL to capture stacks. While the main thread
 * holds it, in bytecode or in a long C call that keeps it (loading a shared
 * library, a PyTorch op), taking it is CPython's timed wait: wake every
 * switch interval (5 ms), ask for a drop, wait again. On the 2-core VMs we
 * measure on, that costs a tick 0.6 ms of CPU in pytest's process and 2.5 ms
 * in one that forks DataLoader workers, against 0.05 ms for a tick that
 * finds the GIL free (docs/Evidence.md, "Sampler choice").
 *
 * So a tick that finds the main thread holding the GIL is taken by the main
 * thread itself: the waiting thread, without the GIL, queues a pending call
 * (Py_AddPendingCall), which the main thread runs at its next eval-breaker
 * check -- the point at which it would have dropped the GIL for the sampling
 * thread, so the sample is the same -- and which captures in C, running no
 * Python code. A tick that finds the GIL free or held by another thread (the
 * main thread blocked in I/O, a join or a collective while other threads
 * run) returns to the sampling thread, which captures as before. Who holds
 * the GIL is _PyThreadState_UncheckedGet(): up to CPython 3.11 the current
 * thread state is process-wide, the GIL holder's.
 *
 * CPython 3.11's Py_AddPendingCall() signals the main thread's eval breaker
 * only when called from the main thread; from ours the call would wait for
 * the next unrelated eval-breaker event (a signal, a GIL drop request). So
 * the waiting thread sets the breaker itself, as the main thread's own
 * COMPUTE_EVAL_BREAKER would have; the main thread clears it once the call
 * has run. On 3.9/3.10 the sampling thread takes every tick.
 *
 * Ticks back off while they find nothing new for the evidence: a tick whose
 * stacks are those of the tick before (a process waiting for its child, a
 * DataLoader waiting for its workers, a long C call), or, where the
 * recorder is exact, of imports (only counted: the recorder has every
 * import-time function), doubles the interval to the next one, up to
 * BACKOFF_LIMIT intervals; any other tick, and every change of sink
 * (drain), restores the rate. A tick counts for the intervals it stands
 * for, so samples and ticks keep measuring time. What is lost is a stack
 * that comes and goes within one backed-off interval after an unchanged
 * stretch: at 50 Hz, under 160 ms. Most ticks of a suite whose tests start
 * processes are of this kind: pytest's process took 82 ticks instead of
 * ~575 while accelerate's test_config_compatibility ran its launchers
 * (docs/Evidence.md).
 *
 *===----------------------------------------------------------------------===*/

/* A point of a sampled stack: what sampler.capture() keys a frame by. */
typedef struct {
  PyCodeObject *code;
  int lasti;
} FramePoint;

/* A distinct stack the ticks have seen, and its samples since the last
 * drain(): `points` is its own copy, innermost first; depth 0 marks an empty
 * slot. The code objects are kept alive by the sampler's codes table. */
typedef struct {
  uint64_t hash;
  Py_ssize_t depth;
  Py_ssize_t count;
  FramePoint *points;
} StackCount;

/* What a queued pending call needs: kept outside the Ticker object, because
 * a call can outlive it (a Ticker dropped while its call is queued, or one
 * inherited queued by a fork child), and the queue cannot hold a reference
 * taken without the GIL. Freed by whichever of the two comes last; both run
 * with the GIL. */
typedef struct {
  PyObject *sinks;     /* the sampler's sinks (list): the last one samples */
  PyObject *codes;     /* id(code) -> code of every sampled stack */
  PyThreadState *main; /* the thread that runs pending calls, or NULL */
  PyInterpreterState *interp; /* main's */
  unsigned long skip;         /* the sampling thread, not sampled */
  pid_t pid;                  /* a call queued before a fork is the parent's */
  atomic_int queued;          /* a pending capture is queued */
  atomic_int stopped;
  atomic_int orphaned; /* the Ticker is gone: the queued call frees this */
  atomic_ullong tick;  /* ticks the sampling thread took */
  atomic_ullong queued_tick; /* `tick` when the queued capture was queued */
  Py_ssize_t deferred;       /* ticks the main thread took */
  long long main_cpu;        /* CPU ns those took */
  atomic_llong thread_cpu;   /* the sampling thread's CPU clock, in ns, as
                              * it last read it */
  PyObject *error;           /* the first capture error, `Type: message` */
  /* Samples since the last drain(), by stack (open addressing). A tick
   * that meets known stacks only reads the frames and bumps counters: in a
   * process that has just forked, every page a tick writes is copied, which
   * made a tick cost milliseconds (docs/Evidence.md). */
  StackCount *stacks;
  size_t stack_capacity; /* a power of two, or 0 */
  size_t stack_count;
  Py_ssize_t ticks; /* intervals the ticks since the last drain() stand for */
  Py_ssize_t captures; /* ticks taken */
  FramePoint *scratch; /* the frames of one tick, per thread */
  size_t scratch_capacity;
  int busy; /* a capture or drain() is running: a GC callback that lets
             * another capture in meanwhile finds it busy and skips */
  /* No ticks until repository code runs at test time (see
   * repository_code_ran). */
  atomic_int dormant;
  /* The back-off: the intervals from one tick to the next (1 up to
   * BACKOFF_LIMIT), and what the last tick saw (a hash of its stacks). */
  atomic_int stride;
  uint64_t last_seen;
  /* Where the recorder is exact: importlib's _find_and_load, whose stacks
   * are only counted, in import_samples; else NULL. */
  PyObject *import_code;
  Py_ssize_t import_samples; /* since the last drain() */
  /* Posting `wake` ends the sampling thread's sleep (nudge(), stop(), a
   * signal delivery); `nudged` says a nudge() came. The semaphore is never
   * freed: a signal handler may post it at any time (sleeping_wake). */
  atomic_int nudged;
  sem_t *wake;
} TickState;

/* Whether repository code has run at test time in this process (a fork
 * child inherits the answer). Until it has, every sample would be of
 * imports, whose functions the recorder has already (import-time samples
 * are counted, not kept, where it runs), or of code outside the
 * repository, which no evidence line names: a Ticker made with
 * dormant=True takes no ticks until then, and its thread sleeps until
 * housekeeping is due (a flush), a nudge() or a signal -- most of the life
 * of a child that imports torch, where each wake-up cost the process
 * 0.3-1 ms on the VMs we measure on (docs/Evidence.md). */
static atomic_int repository_ran;
/* The dormant Ticker's state, if any; read and written with the GIL. */
static TickState *dormant_ticker;
/* What starts a sampling thread that waits for repository code to run
 * (set_wake_hook), called once; NULL when none waits. With the GIL. */
static PyObject *wake_hook;

/* Ends the sampling thread's sleep now: it plans its next tick anew. Not in
 * a fork child on the parent's state, whose lock a thread the child lacks
 * may have held. */
static void nudge(TickState *state) {
  if (state->pid != getpid())
    return;
  atomic_store(&state->nudged, 1);
  sem_post(state->wake);
}

static void wake_ticker(TickState *state) {
  atomic_store(&state->dormant, 0);
  nudge(state);
}

/* record() found repository code running at test time. */
static void repository_code_ran(void) {
  if (atomic_load_explicit(&repository_ran, memory_order_relaxed))
    return;
  atomic_store(&repository_ran, 1);
  TickState *state = dormant_ticker;
  dormant_ticker = NULL;
  if (state)
    wake_ticker(state);
  PyObject *hook = wake_hook;
  wake_hook = NULL;
  if (hook)
    call_quietly(hook);
}

/* set_wake_hook(hook) -> bool: call \p hook once, when repository code
 * first runs at test time in this process; False, with nothing kept, when
 * it has run already. None forgets the hook. A fork child inherits both
 * (the sampler's hook does nothing there: a child starts its own thread). */
static PyObject *recorder_set_wake_hook(PyObject *module, PyObject *hook) {
  if (hook != Py_None && !PyCallable_Check(hook)) {
    PyErr_SetString(PyExc_TypeError,
                    "set_wake_hook() wants a callable or None");
    return NULL;
  }
  Py_CLEAR(wake_hook);
  if (hook == Py_None)
    Py_RETURN_TRUE;
  if (atomic_load(&repository_ran))
    Py_RETURN_FALSE;
  Py_INCREF(hook);
  wake_hook = hook;
  Py_RETURN_TRUE;
}

/* A fork child's dormant Ticker is made anew (sampler.after_fork_in_child);
 * the parent's lock may have been held by a thread the child lacks. */
static void forget_dormant_ticker(void) { dormant_ticker = NULL; }

typedef struct {
  PyObject_HEAD TickState *state;
} Ticker;

/* Housekeeping (flushes, the SIGTERM watch) waits for a moment the main
 * thread does not hold the GIL, up to this long after it is due. */
static const double HOUSEKEEPING_LATE = 1.0;
/* How often a dormant Ticker looks whether the main thread has let go of
 * the GIL, while housekeeping is due and waits for that. Every other sleep
 * lasts until the next tick or housekeeping: stop(), nudge() and signal
 * deliveries end it (each wake-up of a thread costs a process that imported
 * torch 0.3-1 ms of CPU on the VMs we measure on, docs/Evidence.md). */
static const double GIL_POLL = 0.1;
/* While ticks back off, how much later than due housekeeping may run to
 * share a tick's wake-up. */
static const double BACKOFF_SLACK = 0.2;
/* The most intervals from one tick to the next (a power of two). */
static const int BACKOFF_LIMIT = 8;
/* How much later than due housekeeping may run to share a tick's wake-up. */
static const double HOUSEKEEPING_SLACK = 0.05;

/* The calling thread's CPU clock, in ns. */
static long long thread_cpu_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static double monotonic_now(void) { return clock_seconds(CLOCK_MONOTONIC); }

/* A monotonic_now() time as the absolute timespec the waits take. */
static struct timespec timespec_of(double when) {
  struct timespec at;
  at.tv_sec = (time_t)when;
  at.tv_nsec = (long)((when - (double)at.tv_sec) * 1e9);
  if (at.tv_nsec >= 1000000000L)
    at.tv_nsec = 999999999L;
  return at;
}

/* Sleeps until \p when, or until `wake` is posted (nudge(), stop(), a
 * signal delivery); the caller plans anew either way. */
static void sleep_until(TickState *state, double when) {
  atomic_store(&sleeping_wake, state->wake);
  if (!atomic_load(&state->nudged) && !atomic_load(&state->stopped)) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 30)
    struct timespec until = timespec_of(when);
    while (sem_clockwait(state->wake, CLOCK_MONOTONIC, &until) < 0 &&
           errno == EINTR)
      ;
#else
    /* sem_timedwait() takes the realtime clock: the same distance. */
    struct timespec until =
        timespec_of(clock_seconds(CLOCK_REALTIME) + (when - monotonic_now()));
    while (sem_timedwait(state->wake, &until) < 0 && errno == EINTR)
      ;
#endif
  }
  /* The posts that came meanwhile are all answered by the caller's look. */
  while (sem_trywait(state->wake) == 0)
    ;
}

static void tick_state_free(TickState *state) {
  /* state->wake stays: a signal handler may still post it. */
  Py_CLEAR(state->sinks);
  Py_CLEAR(state->codes);
  Py_CLEAR(state->import_code);
  Py_CLEAR(state->error);
  for (size_t i = 0; i < state->stack_capacity; ++i)
    PyMem_RawFree(state->stacks[i].points);
  PyMem_RawFree(state->stacks);
  PyMem_RawFree(state->scratch);
  PyMem_RawFree(state);
}

/* Appends a point to the scratch buffer at \p *at; -1 without memory. */
static int scratch_put(TickState *state, size_t *at, PyCodeObject *code,
                       int lasti) {
  if (*at == state->scratch_capacity) {
    size_t capacity =
        state->scratch_capacity ? 2 * state->scratch_capacity : 256;
    FramePoint *grown =
        PyMem_RawRealloc(state->scratch, capacity * sizeof(FramePoint));
    if (!grown)
      return -1;
    state->scratch = grown;
    state->scratch_capacity = capacity;
  }
  state->scratch[*at].code = code;
  state->scratch[*at].lasti = lasti;
  ++*at;
  return 0;
}

/* Appends the frames of \p tstate, innermost first, to the scratch buffer
 * at \p *at: the stack sys._current_frames() and PyFrame_GetBack() would
 * give, read in place. No frame object is made and no reference taken; the
 * GIL keeps the frames still. */
static int walk_frames(TickState *state, PyThreadState *tstate, size_t *at) {
#if PY_VERSION_HEX >= 0x030B0000
  for (struct _PyInterpreterFrame *frame =
           tstate->cframe ? tstate->cframe->current_frame : NULL;
       frame; frame = frame->previous) {
    if (_PyFrame_IsIncomplete(frame))
      continue;
    int lasti = _PyInterpreterFrame_LASTI(frame);
    if (scratch_put(state, at, frame->f_code,
                    lasti < 0 ? -1 : lasti * (int)sizeof(_Py_CODEUNIT)) < 0)
      return -1;
  }
#else
  for (PyFrameObject *frame = tstate->frame; frame; frame = frame->f_back)
    if (scratch_put(state, at, frame->f_code, frame_lasti(frame)) < 0)
      return -1;
#endif
  return 0;
}

/* FNV-1a, a word at a time: the stack hashes and a tick's hash of them. */
static const uint64_t FNV_OFFSET = 1469598103934665603ull;
static uint64_t fnv_mix(uint64_t h, uint64_t value) {
  return (h ^ value) * 1099511628211ull;
}

static uint64_t stack_hash(const FramePoint *points, Py_ssize_t depth) {
  uint64_t h = FNV_OFFSET;
  for (Py_ssize_t i = 0; i < depth; ++i) {
    h = fnv_mix(h, (uint64_t)(uintptr_t)points[i].code);
    h = fnv_mix(h, (uint64_t)(uint32_t)points[i].lasti);
  }
  return h;
}

static int stacks_grow(TickState *state) {
  size_t capacity = state->stack_capacity ? 2 * state->stack_capacity : 64;
  StackCount *slots = PyMem_RawCalloc(capacity, sizeof(StackCount));
  if (!slots)
    return -1;
  for (size_t j = 0; j < state->stack_capacity; ++j) {
    StackCount *entry = &state->stacks[j];
    if (!entry->depth)
      continue;
    size_t i = entry->hash & (capacity - 1);
    while (slots[i].depth)
      i = (i + 1) & (capacity - 1);
    slots[i] = *entry;
  }
  PyMem_RawFree(state->stacks);
  state->stacks = slots;
  state->stack_capacity = capacity;
  return 0;
}

/* \p weight more samples of the stack \p points[0..depth), whose
 * stack_hash() is \p hash. A stack seen for the first time gets its own
 * copy, and its code objects go into the codes table (id -> code), so that
 * their ids stay unique. */
static int count_stack(TickState *state, const FramePoint *points,
                       Py_ssize_t depth, uint64_t hash, Py_ssize_t weight) {
  size_t mask = state->stack_capacity - 1;
  for (size_t i = state->stack_capacity ? hash & mask : 0;
       state->stack_capacity; i = (i + 1) & mask) {
    StackCount *entry = &state->stacks[i];
    if (!entry->depth)
      break;
    if (entry->hash == hash && entry->depth == depth &&
        memcmp(entry->points, points, depth * sizeof(FramePoint)) == 0) {
      entry->count += weight;
      return 0;
    }
  }
  if (2 * (state->stack_count + 1) > state->stack_capacity &&
      stacks_grow(state) < 0)
    return -1;
  FramePoint *copy = PyMem_RawMalloc(depth * sizeof(FramePoint));
  if (!copy)
    return -1;
  memcpy(copy, points, depth * sizeof(FramePoint));
  mask = state->stack_capacity - 1;
  size_t i = hash & mask;
  while (state->stacks[i].depth)
    i = (i + 1) & mask;
  state->stacks[i] = (StackCount){hash, depth, weight, copy};
  ++state->stack_count;
  for (Py_ssize_t k = 0; k < depth; ++k) {
    PyObject *id = PyLong_FromVoidPtr(copy[k].code);
    PyObject *kept =
        id ? PyDict_SetDefault(state->codes, id, (PyObject *)copy[k].code)
           : NULL;
    Py_XDECREF(id);
    if (!kept)
      return -1;
  }
  return 0;
}

/* Whether a sampled stack runs at import time (marks_import_time). */
static int import_time(TickState *state, const FramePoint *points,
                       Py_ssize_t depth) {
  for (Py_ssize_t i = 0; i < depth; ++i)
    if (marks_import_time(points[i].code, state->import_code))
      return 1;
  return 0;
}

/* One sample of every thread but the sampling one, for the innermost sink
 * (drain() hands the samples over): sampler.capture() on
 * sys._current_frames(), reading the frames in place. It counts for the
 * intervals since the tick before (`stride`), and sets the next stride. */
static int tick_capture(TickState *state) {
  if (state->busy || !state->sinks || PyList_GET_SIZE(state->sinks) == 0)
    return 0;
  state->busy = 1;
  /* The stacks first, each after a header point {NULL, depth}; counting
   * may run Python code (a new stack's ids), which could start threads. */
  size_t end = 0;
  int result = 0;
  for (PyThreadState *tstate = PyInterpreterState_ThreadHead(state->interp);
       tstate && result == 0; tstate = PyThreadState_Next(tstate)) {
    if (tstate->thread_id == state->skip)
      continue;
    size_t header = end;
    result = scratch_put(state, &end, NULL, 0);
    size_t start = end;
    if (result == 0)
      result = walk_frames(state, tstate, &end);
    if (result == 0 && end == start)
      end = header; /* no Python frame: not sampled */
    else if (result == 0)
      state->scratch[header].lasti = (int)(end - start);
  }
  int stride = atomic_load(&state->stride);
  uint64_t seen = FNV_OFFSET;
  for (size_t at = 0; result == 0 && at < end;) {
    Py_ssize_t depth = state->scratch[at].lasti;
    const FramePoint *points = state->scratch + at + 1;
    uint64_t hash = 0; /* any import */
    if (state->import_code && import_time(state, points, depth))
      state->import_samples += stride;
    else {
      hash = stack_hash(points, depth);
      /* count_stack() copies what it keeps: the scratch buffer may move. */
      result = count_stack(state, points, depth, hash, stride);
    }
    seen = fnv_mix(seen, hash);
    at += 1 + depth;
  }
  if (result == 0) {
    ++state->captures;
    state->ticks += stride;
    int quiet = seen == state->last_seen;
    state->last_seen = seen;
    atomic_store(&state->stride, !quiet                   ? 1
                                 : stride < BACKOFF_LIMIT ? 2 * stride
                                                          : stride);
  } else if (!PyErr_Occurred())
    PyErr_NoMemory();
  state->busy = 0;
  return result;
}

/* tick_capture(), with any error kept as `Type: message` in state->error
 * (reported by the sampling thread's next Python wake-up) and the ticker
 * stopped: a capture that failed once would fail every tick. GIL held;
 * the caller's exception state is left as it was. */
static int capture_or_stop(TickState *state) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  int result = tick_capture(state);
  if (result < 0) {
    PyObject *etype, *evalue, *etraceback;
    PyErr_Fetch(&etype, &evalue, &etraceback);
    PyErr_NormalizeException(&etype, &evalue, &etraceback);
    if (!state->error && etype)
      state->error =
          PyUnicode_FromFormat("%s: %S", ((PyTypeObject *)etype)->tp_name,
                               evalue ? evalue : Py_None);
    PyErr_Clear();
    Py_XDECREF(etype);
    Py_XDECREF(evalue);
    Py_XDECREF(etraceback);
    atomic_store(&state->stopped, 1);
  }
  PyErr_Restore(type, value, traceback);
  return result;
}

/* The pending call: runs in the main thread, with the GIL, between two
 * bytecodes of whatever it was running. It must leave that code's state
 * alone: any exception is set aside and restored, and it always succeeds. */
static int tick_in_main_thread(void *arg) {
  TickState *state = arg;
  atomic_store(&state->queued, 0);
  if (atomic_load(&state->orphaned)) {
    tick_state_free(state);
    return 0;
  }
  /* Stopped, a fork child, or the sampling thread took a tick since. */
  if (atomic_load(&state->stopped) || state->pid != getpid() ||
      atomic_load(&state->queued_tick) != atomic_load(&state->tick))
    return 0;
  long long start = thread_cpu_ns();
  if (capture_or_stop(state) == 0)
    ++state->deferred;
  state->main_cpu += thread_cpu_ns() - start;
  return 0;
}

static PyObject *Ticker_new(PyTypeObject *type, PyObject *args,
                            PyObject *kwds) {
  PyObject *sinks, *codes, *import_code = Py_None;
  int main = 0, dormant = 0;
  static char *keywords[] = {"sinks",   "codes",   "main",
                             "dormant", "imports", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!|ppO:Ticker", keywords,
                                   &PyList_Type, &sinks, &PyDict_Type, &codes,
                                   &main, &dormant, &import_code))
    return NULL;
  if (import_code != Py_None && !PyCode_Check(import_code)) {
    PyErr_SetString(PyExc_TypeError, "imports must be a code object or None");
    return NULL;
  }
  Ticker *self = (Ticker *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  self->state = PyMem_RawCalloc(1, sizeof(TickState));
  if (!self->state) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  /* Never freed (sleeping_wake): a Ticker or two per process. */
  self->state->wake = PyMem_RawMalloc(sizeof(sem_t));
  if (!self->state->wake || sem_init(self->state->wake, 0, 0) < 0) {
    PyMem_RawFree(self->state->wake);
    PyMem_RawFree(self->state);
    self->state = NULL;
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  atomic_store(&self->state->stride, 1);
  if (import_code != Py_None) {
    Py_INCREF(import_code);
    self->state->import_code = import_code;
  }
  if (dormant && !atomic_load(&repository_ran)) {
    atomic_store(&self->state->dormant, 1);
    dormant_ticker = self->state;
  }
  Py_INCREF(sinks);
  Py_INCREF(codes);
  self->state->sinks = sinks;
  self->state->codes = codes;
  /* Pending calls run in the main thread only: with main=False (a sampler
   * started from another thread) every tick is the sampling thread's. */
#if PY_VERSION_HEX >= 0x030B0000
  PyInterpreterState *interp = PyInterpreterState_Get();
  /* The eval breaker is found through CPython's internal layout, that of
   * the headers this was built with: where the interpreter running it
   * disagrees (another 3.11.x), every tick stays the sampling thread's. */
  int layout_agrees =
      interp->ceval.recursion_limit == Py_GetRecursionLimit() &&
      (unsigned)_Py_atomic_load_relaxed(&interp->ceval.eval_breaker) <= 1;
  self->state->main = main && layout_agrees ? PyThreadState_Get() : NULL;
#else
  (void)main;
#endif
  self->state->interp = PyInterpreterState_Get();
  self->state->pid = getpid();
  return (PyObject *)self;
}

static void Ticker_dealloc(Ticker *self) {
  TickState *state = self->state;
  if (state && dormant_ticker == state)
    dormant_ticker = NULL;
  if (state) {
    Py_CLEAR(state->sinks);
    Py_CLEAR(state->codes);
    Py_CLEAR(state->import_code);
    if (atomic_load(&state->queued))
      atomic_store(&state->orphaned, 1);
    else
      tick_state_free(state);
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The wait of Ticker.wait(), without the GIL (\p self is the sampling
 * thread's state, saved): takes each tick, queuing those that find the main
 * thread holding the GIL for it, and returns when the sampling thread must
 * run Python (see Ticker_wait); *next_tick moves on. */
static void wait_for_tick(TickState *state, PyThreadState *self,
                          double *next_tick, double interval, double awake_due,
                          double dormant_due, sig_atomic_t seen) {
  int unserved = 1; /* the back-off while a queued capture waits */
  for (;;) {
    double now = monotonic_now();
    /* Read each time: a Ticker woken meanwhile has its housekeeping due. */
    int dormant = atomic_load(&state->dormant);
    double due = dormant ? dormant_due : awake_due;
    atomic_store(&state->thread_cpu, thread_cpu_ns());
    /* Finalizing: the pending-call queue goes away soon; taking the GIL
     * would end this thread anyway. */
    if (atomic_load(&state->stopped) || _Py_IsFinalizing())
      return;
    if (deliveries != seen)
      return;
    /* Repository code ran, or a drain() ended a back-off: the next tick an
     * interval from now at the latest. */
    if (atomic_exchange(&state->nudged, 0) && *next_tick > now + interval)
      *next_tick = now + interval;
    int main_holds =
        state->main && _PyThreadState_UncheckedGet() == state->main;
    /* Housekeeping needs the GIL: it waits for a moment the main thread
     * does not hold it, up to HOUSEKEEPING_LATE (taking it from the main
     * thread is CPython's timed wait, ~1 ms of CPU here). */
    int housekeeping_now =
        now >= due && (!main_holds || now >= due + HOUSEKEEPING_LATE);
    if (dormant) {
      /* A child importing torch holds the GIL for most of a second or
       * two: returning each time housekeeping fell due cost its thread ~1
       * ms a slice (docs/Evidence.md). */
      if (housekeeping_now)
        return;
      sleep_until(state, now < due ? due : now + GIL_POLL);
      /* Awake: the first tick an interval from now, as for a new thread. */
      *next_tick = monotonic_now() + interval;
      continue;
    }
    if (now >= *next_tick) {
      if (!main_holds) {
        /* The GIL is free, or another thread's for at most a switch
         * interval: take it, capture, and sleep on. */
        atomic_fetch_add(&state->tick, 1); /* a queued capture is stale now */
        if (Py_SIZE(state->sinks) > 0) {
          PyEval_RestoreThread(self);
          capture_or_stop(state);
          PyEval_SaveThread();
        }
      }
      /* A racy read of the list's size: at worst one tick is skipped, or
       * queued for a sink that has just closed. */
      else if (Py_SIZE(state->sinks) > 0) {
        if (!atomic_exchange(&state->queued, 1)) {
          unserved = 1;
          atomic_store(&state->queued_tick, atomic_load(&state->tick));
          if (Py_AddPendingCall(tick_in_main_thread, state) < 0)
            atomic_store(&state->queued, 0); /* the queue is full: skip it */
#if PY_VERSION_HEX >= 0x030B0000
          else
            _Py_atomic_store_relaxed(&state->interp->ceval.eval_breaker, 1);
#endif
        }
        /* Still queued: the main thread is in a long C call that keeps
         * the GIL (loading libtorch's shared libraries takes half a
         * second). The ticks that come meanwhile collapse into the queued
         * one, as they would while waiting for the GIL, so waking for them
         * would only cost the process a context switch each: back off as
         * for an unchanged stack. */
        else if (unserved < BACKOFF_LIMIT)
          unserved *= 2;
      }
      /* The stride the last capture set (a queued one sets it later), or
       * the back-off while a queued capture waits. */
      int stride = atomic_load(&state->stride);
      double step = interval * (unserved > stride ? unserved : stride);
      *next_tick += step;
      if (*next_tick <= now)
        *next_tick = now + step; /* fell behind: do not burst */
    }
    if (housekeeping_now)
      return;
    int backed_off = atomic_load(&state->stride) > 1;
    double wake = *next_tick;
    /* Housekeeping rides on the wake-up of a tick that comes soon enough
     * after it is due (while ticks back off, on the next one): a wake-up of
     * its own would be one more context switch into the process, and what
     * one costs grows with the process's memory on some VMs
     * (docs/Evidence.md). */
    double housekeeping = now >= due ? due + HOUSEKEEPING_LATE : due;
    if (housekeeping + (backed_off ? BACKOFF_SLACK : HOUSEKEEPING_SLACK) < wake)
      wake = housekeeping;
    sleep_until(state, wake);
  }
}

/* wait(next_tick, interval, due, dormant_due=due) -> next_tick. Called by
 * the sampling thread: takes the ticks at next_tick, next_tick + interval,
 * ... (each either itself, or through the main thread when that holds the
 * GIL; up to BACKOFF_LIMIT intervals apart while they back off) and sleeps
 * without the GIL in between. Times are time.monotonic() seconds. Returns
 * when housekeeping is due -- `due`, or `dormant_due` while the Ticker is
 * dormant -- and the main thread does not hold the GIL, or
 * HOUSEKEEPING_LATE after it regardless; when the watched signal arrives;
 * and after stop(); with the time of the next tick. */
static PyObject *Ticker_wait(Ticker *self, PyObject *args) {
  double next_tick, interval, due, dormant_due = -1;
  if (!PyArg_ParseTuple(args, "ddd|d:wait", &next_tick, &interval, &due,
                        &dormant_due))
    return NULL;
  if (PyTuple_GET_SIZE(args) < 4)
    dormant_due = due;
  if (!(interval > 0)) {
    PyErr_SetString(PyExc_ValueError, "interval must be positive");
    return NULL;
  }
  TickState *state = self->state;
  state->skip = PyThread_get_thread_ident();
  sig_atomic_t seen = deliveries;
  PyThreadState *self_state = PyEval_SaveThread();
  wait_for_tick(state, self_state, &next_tick, interval, due, dormant_due,
                seen);
  PyEval_RestoreThread(self_state);
  return PyFloat_FromDouble(next_tick);
}

/* Adds \p n samples of \p entry's stack to the dict \p counts, keyed as
 * sampler.capture() keys it: (id(code), lasti, ...) innermost first. */
static int add_samples(PyObject *counts, const StackCount *entry,
                       Py_ssize_t n) {
  PyObject *key = PyTuple_New(2 * entry->depth);
  if (!key)
    return -1;
  for (Py_ssize_t i = 0; i < entry->depth; ++i) {
    PyObject *id = PyLong_FromVoidPtr(entry->points[i].code);
    PyObject *lasti = PyLong_FromLong(entry->points[i].lasti);
    if (!id || !lasti) {
      Py_XDECREF(id);
      Py_XDECREF(lasti);
      Py_DECREF(key);
      return -1;
    }
    PyTuple_SET_ITEM(key, 2 * i, id);
    PyTuple_SET_ITEM(key, 2 * i + 1, lasti);
  }
  PyObject *more = PyLong_FromSsize_t(n);
  PyObject *count = more ? PyDict_GetItemWithError(counts, key) : NULL;
  PyObject *sum = count ? PyNumber_Add(count, more) : NULL;
  int result = -1;
  if (sum)
    result = PyDict_SetItem(counts, key, sum);
  else if (more && !PyErr_Occurred())
    result = PyDict_SetItem(counts, key, more);
  Py_XDECREF(sum);
  Py_XDECREF(more);
  Py_DECREF(key);
  return result;
}

/* drain(sink) -> bool: hand the samples and ticks taken since the last
 * drain to `sink` (its `counts` dict and `ticks`). The sampler drains into
 * the innermost sink before it changes and before a sink is written.
 * False when a capture is running (a GC callback within it): the samples
 * stay for the next drain. */
/* sink.<name> += n, for n > 0. */
static int add_to(PyObject *sink, const char *name, Py_ssize_t n) {
  if (!n)
    return 0;
  PyObject *value = PyObject_GetAttrString(sink, name);
  PyObject *more = value ? PyLong_FromSsize_t(n) : NULL;
  PyObject *sum = more ? PyNumber_Add(value, more) : NULL;
  int result = sum ? PyObject_SetAttrString(sink, name, sum) : -1;
  Py_XDECREF(value);
  Py_XDECREF(more);
  Py_XDECREF(sum);
  return result;
}

static PyObject *Ticker_drain(Ticker *self, PyObject *sink) {
  TickState *state = self->state;
  if (state->busy)
    Py_RETURN_FALSE;
  PyObject *counts = PyObject_GetAttrString(sink, "counts");
  if (!counts)
    return NULL;
  if (!PyDict_Check(counts)) {
    Py_DECREF(counts);
    PyErr_SetString(PyExc_TypeError, "sink.counts must be a dict");
    return NULL;
  }
  state->busy = 1;
  int result = 0;
  for (size_t i = 0; result == 0 && i < state->stack_capacity; ++i) {
    StackCount *entry = &state->stacks[i];
    Py_ssize_t n = entry->count;
    if (!entry->depth || !n)
      continue;
    entry->count = 0;
    result = add_samples(counts, entry, n);
  }
  Py_DECREF(counts);
  if (result == 0 && (result = add_to(sink, "ticks", state->ticks)) == 0)
    state->ticks = 0;
  if (result == 0 &&
      (result = add_to(sink, "import_samples", state->import_samples)) == 0)
    state->import_samples = 0;
  state->busy = 0;
  if (result < 0)
    return NULL;
  /* A new sink, or the same one written: ticks find it at the full rate. */
  state->last_seen = 0;
  if (atomic_exchange(&state->stride, 1) > 1)
    nudge(state);
  Py_RETURN_TRUE;
}

/* stop(): wait() returns, and queued ticks are dropped. */
static PyObject *Ticker_stop(Ticker *self, PyObject *unused) {
  atomic_store(&self->state->stopped, 1);
  sem_post(self->state->wake);
  Py_RETURN_NONE;
}

/* wake(): take ticks from now on, whether repository code ran or not (the
 * recorder that would have said so stopped working). */
static PyObject *Ticker_wake(Ticker *self, PyObject *unused) {
  if (dormant_ticker == self->state)
    dormant_ticker = NULL;
  wake_ticker(self->state);
  Py_RETURN_NONE;
}

static PyObject *Ticker_get_dormant(Ticker *self, void *closure) {
  return PyBool_FromLong(atomic_load(&self->state->dormant));
}

static PyObject *Ticker_get_deferred(Ticker *self, void *closure) {
  return PyLong_FromSsize_t(self->state->deferred);
}

static PyObject *Ticker_get_captures(Ticker *self, void *closure) {
  return PyLong_FromSsize_t(self->state->captures);
}

static PyObject *Ticker_get_stride(Ticker *self, void *closure) {
  return PyLong_FromLong(atomic_load(&self->state->stride));
}

static PyObject *Ticker_get_cpu(Ticker *self, void *closure) {
  return PyFloat_FromDouble(
      (double)(self->state->main_cpu + atomic_load(&self->state->thread_cpu)) *
      1e-9);
}

static PyObject *Ticker_get_main_cpu(Ticker *self, void *closure) {
  return PyFloat_FromDouble((double)self->state->main_cpu * 1e-9);
}

static PyObject *Ticker_get_error(Ticker *self, void *closure) {
  PyObject *error = self->state->error ? self->state->error : Py_None;
  Py_INCREF(error);
  return error;
}

static PyMethodDef Ticker_methods[] = {
    {"wait", (PyCFunction)Ticker_wait, METH_VARARGS,
     "wait(next_tick, interval, due, dormant_due=due) -> next_tick: take "
     "the ticks until housekeeping is due (`dormant_due` while dormant), "
     "sleeping without the GIL."},
    {"drain", (PyCFunction)Ticker_drain, METH_O,
     "drain(sink) -> bool: hand the samples and ticks since the last drain "
     "to sink.counts, sink.ticks and sink.import_samples; ticks resume the "
     "full rate."},
    {"stop", (PyCFunction)Ticker_stop, METH_NOARGS,
     "stop(): end wait() and drop queued ticks."},
    {"wake", (PyCFunction)Ticker_wake, METH_NOARGS,
     "wake(): take ticks from now on, if dormant."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Ticker_getset[] = {
    {"deferred", (getter)Ticker_get_deferred, NULL,
     "Ticks the main thread took, in a pending call.", NULL},
    {"dormant", (getter)Ticker_get_dormant, NULL,
     "Whether it waits for repository code to run at test time.", NULL},
    {"captures", (getter)Ticker_get_captures, NULL,
     "Ticks taken, by either thread.", NULL},
    {"stride", (getter)Ticker_get_stride, NULL,
     "Intervals to the next tick: above 1 while ticks back off.", NULL},
    {"cpu", (getter)Ticker_get_cpu, NULL,
     "CPU seconds the ticks have cost: the main thread's captures and the "
     "sampling thread's clock as of its last wake-up.",
     NULL},
    {"main_cpu", (getter)Ticker_get_main_cpu, NULL,
     "CPU seconds of the captures the main thread took (part of `cpu`).", NULL},
    {"error", (getter)Ticker_get_error, NULL,
     "Why a capture in the main thread failed (str), or None; the ticker "
     "stops then.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TickerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fastci.trace._recorder.Ticker",
    .tp_basicsize = sizeof(Ticker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Ticker(sinks, codes, main=False, dormant=False, imports=None): "
              "the sampling thread's wait; ticks that find the main thread "
              "holding the GIL are its own; a dormant one takes none until "
              "repository code runs at test time; stacks through `imports` "
              "(importlib's _find_and_load) or a class body are only "
              "counted, in sink.import_samples; ticks back off while they "
              "find nothing new.",
    .tp_new = Ticker_new,
    .tp_dealloc = (destructor)Ticker_dealloc,
    .tp_methods = Ticker_methods,
    .tp_getset = Ticker_getset,
};

static PyMethodDef module_methods[] = {
    {"add_audit_hook", recorder_add_audit_hook, METH_VARARGS,
     "add_audit_hook(callback, events): callback(event, args) for the named "
     "audit events only, from a C hook."},
    {"watch_signal", recorder_watch_signal, METH_VARARGS,
     "watch_signal(signum) -> bool: count deliveries of a signal in front of "
     "its handler."},
    {"signal_deliveries", recorder_signal_deliveries, METH_NOARGS,
     "signal_deliveries() -> int: deliveries of the watched signal."},
    {"die_by", recorder_die_by, METH_VARARGS,
     "die_by(signum): take the signal's default action, from any thread."},
    {"set_fork_hooks", recorder_set_fork_hooks, METH_VARARGS,
     "set_fork_hooks(latent, full): what a fork child calls (see "
     "after_fork_in_child)."},
    {"after_fork_in_child", recorder_after_fork_in_child, METH_NOARGS,
     "after_fork_in_child(): for os.register_at_fork: latent, or full()."},
    {"fork_state", recorder_fork_state, METH_NOARGS,
     "fork_state() -> (wall, cpu, modules mark) at this latent child's fork."},
    {"latent", recorder_latent, METH_NOARGS,
     "latent() -> bool: whether this is a latent fork child."},
    {"end_latency", recorder_end_latency, METH_NOARGS,
     "end_latency(): something to report: call the latency callback."},
    {"set_wake_hook", recorder_set_wake_hook, METH_O,
     "set_wake_hook(hook) -> bool: call hook once when repository code "
     "first runs at test time; False when it has run already."},
#if PY_VERSION_HEX >= 0x030B0000
    {"hit", recorder_hit, METH_O,
     "hit(disarmed): called by armed code; records its first execution."},
    {"links", recorder_links, METH_O,
     "links(directory): frozenset of the names of its symbolic links."},
    {"entry_line", recorder_entry_line, METH_O,
     "entry_line(code) -> int: the line a stack recorded at its entry "
     "names (frames._entry_line)."},
    {"set_const", recorder_set_const, METH_VARARGS,
     "set_const(code, index, value): replace a constant in place."},
    {"set_code", recorder_set_code, METH_VARARGS,
     "set_code(function, code): set __code__ without an audit event."},
    {"splice_locations", arming_splice_locations, METH_VARARGS,
     "splice_locations(table, points, units) -> bytes: insert 'no "
     "location' units before each point of a location table "
     "(native/arming.c)."},
    {"armed_code", arming_armed_code, METH_VARARGS,
     "armed_code(code, consts, prologue) -> code or None: the prologue "
     "after the first RESUME (native/arming.c)."},
#endif
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
    "Exact function recorder (CPython 3.9-3.11).", -1, module_methods};

PyMODINIT_FUNC PyInit__recorder(void) {
  if (PyType_Ready(&RecorderType) < 0 || PyType_Ready(&TickerType) < 0)
    return NULL;
  pthread_atfork(NULL, NULL, forget_dormant_ticker);
  PyObject *module = PyModule_Create(&recorder_module);
  if (!module)
    return NULL;
  Py_INCREF(&RecorderType);
  if (PyModule_AddObject(module, "Recorder", (PyObject *)&RecorderType) < 0) {
    Py_DECREF(&RecorderType);
    Py_DECREF(module);
    return NULL;
  }
  Py_INCREF(&TickerType);
  if (PyModule_AddObject(module, "Ticker", (PyObject *)&TickerType) < 0) {
    Py_DECREF(&TickerType);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
