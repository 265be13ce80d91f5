/*===- arming.c - The byte-level transforms of armed code objects ---------===*
 *
 * The part of arming (arming.py) that rewrites bytes, for CPython 3.11:
 * splicing "no location" units into a location table, and the armed twin
 * of a function, class or module body (one prologue right after its first
 * RESUME). Generators and coroutines, whose twins are laid out again,
 * stay in arming.py and use splice_locations() from here. In Python these
 * were most of what arming cost: 7.6-12.6 ms for accelerate's 830 code
 * objects in every process that imports it, a few microseconds of table
 * walking per code object in C (docs/Evidence.md).
 *
 *===----------------------------------------------------------------------===*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "arming.h"

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#include <opcode.h>
#include <string.h>

/* A growing byte buffer; `data` is PyMem memory. */
typedef struct {
  unsigned char *data;
  size_t len, cap;
} Buffer;

static int buffer_put(Buffer *b, const void *bytes, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n)
      cap *= 2;
    unsigned char *data = PyMem_Realloc(b->data, cap);
    if (!data) {
      PyErr_NoMemory();
      return -1;
    }
    b->data = data;
    b->cap = cap;
  }
  if (n)
    memcpy(b->data + b->len, bytes, n);
  b->len += n;
  return 0;
}

static int buffer_byte(Buffer *b, unsigned char byte) {
  return buffer_put(b, &byte, 1);
}

static PyObject *buffer_bytes(Buffer *b) {
  PyObject *bytes =
      PyBytes_FromStringAndSize((const char *)b->data, (Py_ssize_t)b->len);
  PyMem_Free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  return bytes;
}

/*===- Location tables ----------------------------------------------------===*
 *
 * Every entry starts with a byte with bit 7 set (its form in bits 3-6, its
 * length in code units minus one in bits 0-2) and no other byte has bit 7.
 */

/* Where the entry after the one at \p i starts. */
static size_t next_entry(const unsigned char *table, size_t n, size_t i) {
  for (++i; i < n && !(table[i] & 0x80); ++i)
    ;
  return i;
}

/* "No location" entries for \p units code units (at most 8 an entry). */
static int no_locations(Buffer *out, long units) {
  for (; units > 0; units -= 8) {
    long length = units < 8 ? units : 8;
    if (buffer_byte(out, (unsigned char)(0x80 | (15 << 3) | (length - 1))) < 0)
      return -1;
  }
  return 0;
}

/* An entry for \p length more code units at the location \p entry gives:
 * its line as a delta of 0 from the line \p entry set. Forms 0-9 imply a
 * delta of 0 already; 10-12 are 10 with their columns; 13 and 14 start
 * with the line delta, a signed varint that becomes 0 (one byte); 15 has
 * no location. */
static int same_location(Buffer *out, const unsigned char *entry, size_t size,
                         long length) {
  int form = (entry[0] >> 3) & 15;
  if (form >= 10 && form <= 12)
    form = 10; /* the one-line forms: the delta is form - 10 */
  unsigned char first = (unsigned char)(0x80 | (form << 3) | (length - 1));
  if (buffer_byte(out, first) < 0)
    return -1;
  if (form <= 10 || form == 15)
    return buffer_put(out, entry + 1, size - 1);
  size_t k = 1;
  while (k < size && (entry[k] & 64)) /* the line delta's continued chunks */
    ++k;
  if (k >= size)
    return buffer_byte(out, 0); /* malformed: keep the form, delta 0 */
  if (buffer_byte(out, 0) < 0)
    return -1;
  return buffer_put(out, entry + k + 1, size - k - 1);
}

/* The location table with \p units "no location" code units inserted
 * before each code unit of \p points (ascending, in the original code).
 * An entry that spans a point is split there, its second part given as the
 * same location with a line delta of 0; a "no location" entry leaves the
 * line state alone, so the entries after it need no change. */
static int splice(Buffer *out, const unsigned char *table, size_t n,
                  const long *points, Py_ssize_t count, long units) {
  Buffer rest = {NULL, 0, 0}; /* the table still to copy */
  if (buffer_put(&rest, table, n) < 0)
    return -1;
  long covered = 0; /* the units before rest.data[0] */
  for (Py_ssize_t p = 0; p < count; ++p) {
    long point = points[p];
    size_t start = 0; /* pass the entries that end at or before the point */
    while (start < rest.len) {
      long length = (rest.data[start] & 7) + 1;
      if (covered + length > point)
        break;
      covered += length;
      start = next_entry(rest.data, rest.len, start);
    }
    if (buffer_put(out, rest.data, start) < 0)
      goto fail;
    if (covered < point && start < rest.len) { /* the entry spans the point */
      size_t end = next_entry(rest.data, rest.len, start);
      const unsigned char *entry = rest.data + start;
      long remaining = covered + (entry[0] & 7) + 1 - point;
      Buffer next = {NULL, 0, 0};
      if (buffer_byte(out, (unsigned char)((entry[0] & 0xF8) |
                                           (point - covered - 1))) < 0 ||
          buffer_put(out, entry + 1, end - start - 1) < 0 ||
          same_location(&next, entry, end - start, remaining) < 0 ||
          buffer_put(&next, rest.data + end, rest.len - end) < 0) {
        PyMem_Free(next.data);
        goto fail;
      }
      PyMem_Free(rest.data);
      rest = next;
      covered = point;
    } else {
      memmove(rest.data, rest.data + start, rest.len - start);
      rest.len -= start;
    }
    if (no_locations(out, units) < 0)
      goto fail;
  }
  if (buffer_put(out, rest.data, rest.len) < 0)
    goto fail;
  PyMem_Free(rest.data);
  return 0;
fail:
  PyMem_Free(rest.data);
  return -1;
}

/*===- Exception tables ---------------------------------------------------===*
 *
 * Entries of four big-endian varints of 6-bit chunks (bit 6: more
 * follows), bit 7 set on the first byte of each entry: start, size, target,
 * depth and lasti.
 */

static int read_varint(const unsigned char *table, size_t n, size_t *at,
                       long *value) {
  if (*at >= n)
    return -1;
  unsigned char byte = table[(*at)++];
  *value = byte & 63;
  while (byte & 64) {
    if (*at >= n)
      return -1;
    byte = table[(*at)++];
    *value = (*value << 6) | (byte & 63);
  }
  return 0;
}

static int write_varint(Buffer *out, long value, unsigned char msb) {
  unsigned char chunks[12];
  int count = 0;
  do {
    chunks[count++] = value & 63;
    value >>= 6;
  } while (value && count < 12);
  for (int i = count - 1; i >= 0; --i)
    if (buffer_byte(out, (unsigned char)(chunks[i] | (i ? 64 : 0) |
                                         (i == count - 1 ? msb : 0))) < 0)
      return -1;
  return 0;
}

/* The exception table with \p by code units inserted at unit \p at. An
 * incomplete last entry is dropped, as CPython never writes one. */
static int shift_exception_table(Buffer *out, const unsigned char *table,
                                 size_t n, long at, long by) {
  size_t pos = 0;
  long start, size, target, depth_lasti;
  while (read_varint(table, n, &pos, &start) == 0 &&
         read_varint(table, n, &pos, &size) == 0 &&
         read_varint(table, n, &pos, &target) == 0 &&
         read_varint(table, n, &pos, &depth_lasti) == 0) {
    long end = start + size;
    long start2 = start >= at ? start + by : start;
    long end2 = end > at || (end == at && start >= at) ? end + by : end;
    long target2 = target >= at ? target + by : target;
    if (write_varint(out, start2, 128) < 0 ||
        write_varint(out, end2 - start2, 0) < 0 ||
        write_varint(out, target2, 0) < 0 ||
        write_varint(out, depth_lasti, 0) < 0)
      return -1;
  }
  return 0;
}

/*===- Module functions ---------------------------------------------------===*/

PyObject *arming_splice_locations(PyObject *module, PyObject *args) {
  Py_buffer table;
  PyObject *points_arg;
  long units;
  if (!PyArg_ParseTuple(args, "y*Ol:splice_locations", &table, &points_arg,
                        &units))
    return NULL;
  PyObject *result = NULL;
  long *points = NULL;
  PyObject *sequence = PySequence_Fast(points_arg, "points must be a sequence");
  if (!sequence)
    goto done;
  Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
  points = PyMem_Malloc(sizeof(long) * (size_t)(count ? count : 1));
  if (!points) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    points[i] = PyLong_AsLong(PySequence_Fast_GET_ITEM(sequence, i));
    if (points[i] == -1 && PyErr_Occurred())
      goto done;
    if (points[i] < 0 || (i && points[i] < points[i - 1])) {
      PyErr_SetString(PyExc_ValueError, "points must be ascending and >= 0");
      goto done;
    }
  }
  if (units < 0) {
    PyErr_SetString(PyExc_ValueError, "units must be >= 0");
    goto done;
  }
  Buffer out = {NULL, 0, 0};
  if (splice(&out, table.buf, (size_t)table.len, points, count, units) < 0) {
    PyMem_Free(out.data);
    goto done;
  }
  result = buffer_bytes(&out);
done:
  PyMem_Free(points);
  Py_XDECREF(sequence);
  PyBuffer_Release(&table);
  return result;
}

/* The code unit after the first RESUME, or -1 when the prologue holds an
 * instruction other than those CPython puts before it. */
static long first_resume(const unsigned char *raw, Py_ssize_t size) {
  for (Py_ssize_t unit = 0; unit < size / 2; ++unit) {
    switch (raw[2 * unit]) {
    case RESUME:
      return (long)unit + 1;
    case MAKE_CELL:
    case COPY_FREE_VARS:
    case RETURN_GENERATOR:
    case POP_TOP:
    case NOP:
    case EXTENDED_ARG:
      continue;
    default:
      return -1;
    }
  }
  return -1;
}

PyObject *arming_armed_code(PyObject *module, PyObject *args) {
  PyCodeObject *code;
  PyObject *consts;
  Py_buffer prologue;
  if (!PyArg_ParseTuple(args, "O!O!y*:armed_code", &PyCode_Type, &code,
                        &PyTuple_Type, &consts, &prologue))
    return NULL;
  /* code.replace and the names it is given below, made once. */
  static PyObject *replace, *keywords;
  PyObject *result = NULL, *raw = NULL, *new_code = NULL, *locations = NULL,
           *exceptions = NULL, *stacksize = NULL;
  Buffer out = {NULL, 0, 0};
  if (!keywords) {
    replace = PyUnicode_InternFromString("replace");
    keywords = Py_BuildValue("(sssss)", "co_code", "co_consts", "co_stacksize",
                             "co_linetable", "co_exceptiontable");
    if (!replace || !keywords) {
      Py_CLEAR(replace);
      Py_CLEAR(keywords);
      goto done;
    }
  }
  if (prologue.len % 2) {
    PyErr_SetString(PyExc_ValueError, "a prologue is whole code units");
    goto done;
  }
  raw = PyCode_GetCode(code);
  if (!raw)
    goto done;
  const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(raw);
  Py_ssize_t size = PyBytes_GET_SIZE(raw);
  long at = first_resume(bytes, size);
  if (at < 0) {
    result = Py_NewRef(Py_None);
    goto done;
  }
  long units = (long)(prologue.len / 2);
  if (buffer_put(&out, bytes, 2 * (size_t)at) < 0 ||
      buffer_put(&out, prologue.buf, (size_t)prologue.len) < 0 ||
      buffer_put(&out, bytes + 2 * at, (size_t)(size - 2 * at)) < 0)
    goto done;
  if (!(new_code = buffer_bytes(&out)))
    goto done;
  if (splice(&out, (const unsigned char *)PyBytes_AS_STRING(code->co_linetable),
             (size_t)PyBytes_GET_SIZE(code->co_linetable), &at, 1, units) < 0 ||
      !(locations = buffer_bytes(&out)))
    goto done;
  if (shift_exception_table(
          &out,
          (const unsigned char *)PyBytes_AS_STRING(code->co_exceptiontable),
          (size_t)PyBytes_GET_SIZE(code->co_exceptiontable), at, units) < 0 ||
      !(exceptions = buffer_bytes(&out)))
    goto done;
  if (!(stacksize =
            PyLong_FromLong(code->co_stacksize > 3 ? code->co_stacksize : 3)))
    goto done;
  PyObject *call[] = {(PyObject *)code, new_code,  consts,
                      stacksize,        locations, exceptions};
  result = PyObject_VectorcallMethod(replace, call, 1, keywords);
done:
  PyMem_Free(out.data);
  Py_XDECREF(raw);
  Py_XDECREF(new_code);
  Py_XDECREF(locations);
  Py_XDECREF(exceptions);
  Py_XDECREF(stacksize);
  PyBuffer_Release(&prologue);
  return result;
}

#endif
