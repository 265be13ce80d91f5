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
/// recovered from, so its entities may be incomplete. Read by
/// select-affected (rule `parse-error`).
inline constexpr llvm::StringLiteral kParseError = "parse_error";

/// Bool, on a test: its id is an enclosing item pytest accepts (a file or
/// class) that stands for tests whose names are not known statically.
/// Read by select-affected and emit-plan.
inline constexpr llvm::StringLiteral kEnclosing = "enclosing";

/// String list, on function, class and module entities: the module-level
/// names the entity's own code loads, resolved through imports to dotted
/// paths. Read by select-affected's module-level name selection.
inline constexpr llvm::StringLiteral kNames = "names";

/// Bool, on a test: pytest expands this item into several cases.
inline constexpr llvm::StringLiteral kParametrized = "parametrized";

} // namespace fastci::python::attr

#endif // FASTCI_PYTHON_PYTHONATTRS_H
