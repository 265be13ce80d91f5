"""Armed code objects: the exact function recorder's mechanism on CPython 3.11.

On 3.11 a frame-evaluation hook costs every Python-to-Python call its
inlining (+29 % on a call-heavy loop), so the recorder instead gives each
repository code object two twins:

* *armed*: the original bytecode with a prologue right after the first
  RESUME that calls `_recorder.hit(disarmed)` (PUSH_NULL, LOAD_CONST hit,
  LOAD_CONST disarmed, PRECALL 1, CALL 1, POP_TOP, with their inline
  caches), and in generators and coroutines after every RESUME, so that
  each resumption of an instance started armed is recorded too; its
  nested code objects are the armed twins;
* *disarmed*: the original bytecode, its nested code objects armed too, so
  that closures made after disarming are armed.

hit() records the first execution; at test time it points the running
function at the disarmed twin, so later calls cost nothing, and reset()
at the next test boundary arms the function again. Code is armed before it
runs: a module body's nested code objects in place when exec() audits it
(importlib, runpy and pytest's assertion rewriter exec the module code
after its .pyc is written, and 3.11 audits the main script and -c code the
same way), and functions that exist when the recorder starts by a heap
scan.

With one insertion point (functions, class and module bodies), inserting
after RESUME keeps every relative jump valid (nothing jumps across it); the
exception table's offsets at or after it move, and "no location" entries
are spliced into the location table (an entry that spans the point is
split there). Generators and coroutines are laid out again: jumps
re-targeted, EXTENDED_ARG prefixes grown where a jump outgrows its
argument, the exception table rebuilt, the location table spliced after
every RESUME (re-encoded whole only where a prefix grew: re-encoding was
40 % of arming a generator), and three more stack slots, since a
resumption may hold values on the stack. The byte work of the one
insertion point, and the location-table splice both kinds use, are the
extension's (native/arming.c): in Python they cost 13.5 ms for 2,900
non-generator code objects, in C 5.1 ms (mostly code.replace itself).
"""

from __future__ import annotations

import functools
import opcode
import sys
import types

_OP = opcode.opmap
_CACHES = getattr(opcode, "_inline_cache_entries", None)
# Code units of the prologue, without its caches.
_PROLOGUE_OPS = ("PUSH_NULL", "LOAD_CONST", "LOAD_CONST", "PRECALL", "CALL", "POP_TOP")
SUPPORTED = sys.version_info[:2] == (3, 11) and _CACHES is not None


class ArmingError(ValueError):
    """A code object whose bytecode the transform does not expect."""


@functools.lru_cache(maxsize=None)  # a few distinct constant counts per module
def _prologue(hit_index: int, disarmed_index: int) -> bytes:
    args = (0, hit_index, disarmed_index, 1, 1, 0)
    out = bytearray()
    for name, arg in zip(_PROLOGUE_OPS, args):
        op = _OP[name]
        for k in range(_ext_needed(arg), 0, -1):  # more than 255 constants
            out += bytes((_OP["EXTENDED_ARG"], (arg >> (8 * k)) & 0xFF))
        out += bytes((op, arg & 0xFF)) + bytes(2 * _CACHES[op])
    return bytes(out)


def _varint(value: int, out: bytearray, msb: int = 0) -> None:
    """The exception table's big-endian 6-bit varint (bit 6: more follows)."""
    chunks = [value & 63]
    value >>= 6
    while value:
        chunks.append(value & 63)
        value >>= 6
    for i in range(len(chunks) - 1, -1, -1):
        out.append(chunks[i] | (64 if i else 0) | (msb if i == len(chunks) - 1 else 0))


def _parse_exception_table(table: bytes):
    """[(start, end, target, depth_lasti)] in code units, end exclusive."""
    entries = []
    it = iter(table)

    def read():
        b = next(it)
        value = b & 63
        while b & 64:
            b = next(it)
            value = (value << 6) | (b & 63)
        return value

    try:
        while True:
            start = read()
            size = read()
            target = read()
            dl = read()
            entries.append((start, start + size, target, dl))
    except StopIteration:
        return entries


def _svarint(value: int, out: bytearray) -> None:
    _lvarint(((-value) << 1) | 1 if value < 0 else value << 1, out)


def _lvarint(value: int, out: bytearray) -> None:
    """The location table's little-endian 6-bit varint."""
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _encode_locations(positions, firstlineno: int) -> bytes:
    """A 3.11 location table for one (line, end line, column, end column) per code unit."""
    out = bytearray()
    line = firstlineno
    i = 0
    n = len(positions)
    while i < n:
        pos = positions[i]
        j = i + 1
        while j < n and j - i < 8 and positions[j] == pos:
            j += 1
        length = j - i
        start, end, col, end_col = pos
        if start is None:
            out.append(0x80 | (15 << 3) | (length - 1))
        else:
            out.append(0x80 | (14 << 3) | (length - 1))
            _svarint(start - line, out)
            _lvarint((end if end is not None else start) - start, out)
            _lvarint(0 if col is None else col + 1, out)
            _lvarint(0 if end_col is None else end_col + 1, out)
            line = start
        i = j
    return bytes(out)


# Shared by every Armer of the process, so that code armed by a recorder
# that was closed since is never armed twice (its hit() reaches the
# extension's active recorder, whichever that is). Originals are kept
# alive, so their ids stay unique.
_TWINS = {}     # id(original) -> (original, armed, disarmed)
_VARIANTS = {}  # id(armed or disarmed) -> original


# Generators, coroutines and async generators resume (after every yield or
# await, at a RESUME with a non-zero argument).
_RESUMABLE = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR
_JUMPS_FORWARD = frozenset(op for op in opcode.hasjrel if "BACKWARD" not in opcode.opname[op])
_JUMPS_BACKWARD = frozenset(op for op in opcode.hasjrel if "BACKWARD" in opcode.opname[op])


def _decode(raw: bytes):
    """[(start unit, EXTENDED_ARG count, op, arg, cache units)] of a code object's bytecode."""
    out = []
    unit = 0
    n = len(raw) // 2
    extended = _OP["EXTENDED_ARG"]
    while unit < n:
        start, ext, arg = unit, 0, 0
        while raw[2 * unit] == extended:
            arg = (arg | raw[2 * unit + 1]) << 8
            ext += 1
            unit += 1
        op = raw[2 * unit]
        arg |= raw[2 * unit + 1]
        caches = _CACHES[op]
        out.append((start, ext, op, arg, caches))
        unit += 1 + caches
    return out


def _ext_needed(arg: int) -> int:
    return 0 if arg < 256 else 1 if arg < 65536 else 2 if arg < 1 << 24 else 3


def _armed_resumable(code, consts, splice_locations):
    """The armed twin of a generator or coroutine: the prologue after every
    RESUME (the first start and each resumption), jumps re-targeted;
    `splice_locations` is the extension's (native/arming.c)."""
    raw = code.co_code
    instructions = _decode(raw)
    n_old = len(raw) // 2
    prologue = _prologue(len(consts) - 2, len(consts) - 1)
    units = len(prologue) // 2
    resume = _OP["RESUME"]
    exts = [ext for _, ext, _, _, _ in instructions]
    while True:  # lay out until no jump needs a longer EXTENDED_ARG prefix
        new_start = {}
        unit = 0
        for i, (start, _, op, _, caches) in enumerate(instructions):
            new_start[start] = unit
            unit += exts[i] + 1 + caches + (units if op == resume else 0)
        new_start[n_old] = unit
        args = []
        grown = False
        for i, (start, ext, op, arg, caches) in enumerate(instructions):
            if op in _JUMPS_FORWARD or op in _JUMPS_BACKWARD:
                after_old = start + ext + 1 + caches
                after_new = new_start[start] + exts[i] + 1 + caches
                target = after_old + arg if op in _JUMPS_FORWARD else after_old - arg
                if target not in new_start:
                    raise ArmingError("jump into an instruction in %s" % code.co_qualname)
                arg = (new_start[target] - after_new if op in _JUMPS_FORWARD
                       else after_new - new_start[target])
            if _ext_needed(arg) > exts[i]:
                exts[i] = _ext_needed(arg)
                grown = True
            args.append(arg)
        if not grown:
            break
    out = bytearray()
    for i, (start, ext, op, _, caches) in enumerate(instructions):
        arg = args[i]
        op_unit = start + ext
        for k in range(exts[i], 0, -1):
            out += bytes((_OP["EXTENDED_ARG"], (arg >> (8 * k)) & 0xFF))
        out += bytes((op, arg & 0xFF)) + raw[2 * (op_unit + 1):2 * (op_unit + 1 + caches)]
        if op == resume:
            out += prologue
    if all(exts[i] == instruction[1] for i, instruction in enumerate(instructions)):
        # Every instruction kept its length: only the prologues are new.
        locations = splice_locations(code.co_linetable, [
            start + ext + 1 + caches for start, ext, op, _, caches in instructions
            if op == resume], units)
    else:  # grown EXTENDED_ARG prefixes take their instruction's location
        positions = list(code.co_positions())
        new_positions = []
        for i, (start, ext, op, _, caches) in enumerate(instructions):
            op_unit = start + ext
            new_positions.extend([positions[op_unit]] * exts[i])
            new_positions.extend(positions[op_unit:op_unit + 1 + caches])
            if op == resume:
                new_positions.extend([(None, None, None, None)] * units)
        locations = _encode_locations(new_positions, code.co_firstlineno)
    table = bytearray()
    for start, end, target, dl in _parse_exception_table(code.co_exceptiontable):
        if start not in new_start or end not in new_start or target not in new_start:
            raise ArmingError("exception table off instructions in %s" % code.co_qualname)
        _varint(new_start[start], table, 128)
        _varint(new_start[end] - new_start[start], table)
        _varint(new_start[target], table)
        _varint(dl, table)
    return code.replace(
        # A resumption may hold values on the stack (an await's awaitable,
        # a yield inside an expression): the prologue's three go on top.
        co_code=bytes(out), co_consts=consts, co_stacksize=code.co_stacksize + 3,
        co_linetable=locations, co_exceptiontable=bytes(table))


class Armer:
    """Makes and remembers the armed and disarmed twins of code objects."""

    def __init__(self, hit, in_repository, native=None):
        """`native`: the _recorder extension, whose native/arming.c rewrites
        the bytes (by default the one recorder.extension() loads)."""
        if native is None:
            from .recorder import extension  # recorder imports this module
            native = extension()
        if native is None or not hasattr(native, "armed_code"):
            raise ArmingError("the _recorder extension is not built")
        self._hit = hit
        self._in_repository = in_repository
        self._armed_code = native.armed_code
        self._splice_locations = native.splice_locations
        self._twins = _TWINS
        self.variants = _VARIANTS

    def twins(self, code: types.CodeType):
        """(armed, disarmed) for a repository code object, made once."""
        key = id(code)
        known = self._twins.get(key)
        if known is not None:
            return known[1], known[2]
        if key in self.variants:
            original = self.variants[key]
            return self._twins[id(original)][1:]
        consts = self.armed_consts(code)
        disarmed = code.replace(co_consts=consts) if consts is not code.co_consts else code
        armed = self._armed(code, consts, disarmed)
        self._twins[key] = (code, armed, disarmed)
        self.variants[id(armed)] = code
        if disarmed is not code:  # without nested code, the original is its own twin
            self.variants[id(disarmed)] = code
        return armed, disarmed

    def armed_consts(self, code: types.CodeType):
        """code.co_consts with every nested repository code object armed
        (the same tuple if there is none)."""
        consts = code.co_consts
        replaced = None
        for i, const in enumerate(consts):
            if type(const) is types.CodeType and self._in_repository(const):
                if replaced is None:
                    replaced = list(consts)
                replaced[i] = self.twins(const)[0]
        return consts if replaced is None else tuple(replaced)

    def arm_in_place(self, code: types.CodeType, set_const) -> None:
        """Arm a module body's nested code objects in its own co_consts."""
        for i, const in enumerate(code.co_consts):
            if (type(const) is types.CodeType and id(const) not in self.variants
                    and self._in_repository(const)):
                set_const(code, i, self.twins(const)[0])

    def restore_functions(self, set_code) -> None:
        """Give every function running an armed or disarmed twin its
        original code back (a heap scan)."""
        import gc
        variants = self.variants
        for obj in gc.get_objects():
            if type(obj) is types.FunctionType:
                original = variants.get(id(obj.__code__))
                if original is not None:
                    set_code(obj, original)

    def _armed(self, code, consts, disarmed):
        consts = consts + (self._hit, disarmed)
        if code.co_flags & _RESUMABLE:
            return _armed_resumable(code, consts, self._splice_locations)
        armed = self._armed_code(code, consts, _prologue(len(consts) - 2, len(consts) - 1))
        if armed is None:
            raise ArmingError("no RESUME in %s's prologue" % code.co_qualname)
        return armed
