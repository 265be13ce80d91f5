//===- PythonAttrs.h - Attribute names parse-python writes ------*- C++ -*-===//
//
// The attribute names parse-python sets on entities and tests, declared once
// so that the passes reading them (mark-changed, select-affected, emit-plan,
// plugins) share one spelling. docs/ParsePython.md describes each value.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_PYTHONATTRS_H
#define FASTCI_PYTHON_PYTHONATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::python::attr {

/// Bool, on a module entity: the file has syntax errors tree-sitter
/// recovered from (ERROR or MISSING nodes), NUL bytes, invalid UTF-8, or
/// exceeded the parse budget, so its entities may be incomplete. Read by
/// select-affected, which selects a change in such a file, and the tests
/// in it, with reason `parse-error`.
inline constexpr llvm::StringLiteral kParseError = "parse_error";

/// Bool, on a test: its id is not an exact pytest node id but an item
/// pytest accepts that encloses the real ones (a file `path.py`, a class
/// `path.py::Cls`, or a parametrized function `path.py::Cls::test_x` whose
/// case ids are not static); `reason` says why. Read by select-affected
/// and emit-plan, which must run the enclosing item whole.
inline constexpr llvm::StringLiteral kEnclosing = "enclosing";

/// String, on a test with `enclosing`: why the exact ids are not known
/// (`dynamic-tests`, `parametrized`, `inherited-unknown`, `parse-error`).
/// select-affected later overwrites `reason` with its selection reason.
inline constexpr llvm::StringLiteral kReason = "reason";

/// String list, on function, class and module entities: the module-level
/// names the entity's own code loads (not its locals, parameters or
/// comprehension variables; nested definitions have their own), each
/// resolved through the file's imports to the dotted path where it is
/// defined (`pkg.cfg.DEFAULTS`), a global of the same module as
/// `<module>.<name>`, attribute chains kept (`pkg.cfg.X.y`); builtins
/// omitted. Sorted and de-duplicated. Read by select-affected's
/// module-level name selection.
inline constexpr llvm::StringLiteral kNames = "names";

/// Bool, on a test: pytest collects it (the parametrize marks' or a
/// fixture's params) as several items this one item stands for.
inline constexpr llvm::StringLiteral kParametrized = "parametrized";

/// Bool, on a test: the item for a whole class whose base class could not
/// be resolved, so the tests it inherits are unknown.
inline constexpr llvm::StringLiteral kInheritedUnknown = "inherited-unknown";

} // namespace fastci::python::attr

#endif // FASTCI_PYTHON_PYTHONATTRS_H
