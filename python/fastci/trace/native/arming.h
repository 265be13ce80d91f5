/*===- arming.h - Byte-level transforms of armed code objects -------------===*
 *
 * The module functions of native/arming.c, registered by _recorder.c:
 * CPython 3.11 only, where code objects are armed (arming.py).
 *
 *===----------------------------------------------------------------------===*/
#ifndef FASTCI_TRACE_ARMING_H
#define FASTCI_TRACE_ARMING_H

#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
/// splice_locations(table, points, units) -> bytes: a 3.11 location table
/// with `units` "no location" code units inserted before each code unit of
/// `points` (ascending, in the original code).
PyObject *arming_splice_locations(PyObject *module, PyObject *args);

/// armed_code(code, consts, prologue) -> code or None: `code` with
/// `prologue` (whole code units) inserted after its first RESUME, `consts`
/// as its constants, its tables moved with it; None when an instruction
/// other than CPython's prologue comes before that RESUME.
PyObject *arming_armed_code(PyObject *module, PyObject *args);
#endif

#endif
