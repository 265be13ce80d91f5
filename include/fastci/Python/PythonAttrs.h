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
/// case ids are not static); `enclosing_reason` says why. Read by select-affected
/// and emit-plan, which must run the enclosing item whole.
inline constexpr llvm::StringLiteral kEnclosing = "enclosing";

/// String, on a test with `enclosing`: why the exact ids are not known
/// (`dynamic-tests`, `parametrized`, `inherited-unknown`, `parse-error`).
/// Its own name, not `reason`: select-affected writes its selection reason
/// there. Informational: it explains the item to whoever reads the IR.
inline constexpr llvm::StringLiteral kEnclosingReason = "enclosing_reason";

/// String list, on function, class and module entities: the module-level
/// names the entity's own code loads (not its locals, parameters or
/// comprehension variables; nested definitions have their own), each
/// resolved through the file's imports to the dotted path where it is
/// defined (`pkg.cfg.DEFAULTS`), a global of the same module as
/// `<module>.<name>`, attribute chains kept (`pkg.cfg.X.y`); builtins
/// omitted. Sorted and de-duplicated. Read by select-affected's
/// module-level name selection.
inline constexpr llvm::StringLiteral kNames = "names";

/// Dict from name to a string list, on module and class entities: for each
/// name a statement directly in the body binds while doing nothing else
/// (ModuleLevel.h: an assignment to names, an import, a `def`/`class` with
/// pure decorators, an `if`/`try` of those), the module-level names those
/// statements load, resolved as in kNames. A changed name that only such
/// statements read changes the names they bind, not what importing the
/// module does. Written when not empty. Read by select-affected.
inline constexpr llvm::StringLiteral kFlows = "flows";

/// String list, on module and class entities: the module-level names loaded
/// by body statements that may act beyond binding names (a call, an
/// assignment into another object, a registering decorator), and by a
/// class's bases, keywords and decorators; resolved as in kNames, sorted.
/// A changed name read here changes what importing the module does. Written
/// when not empty; a body with kNames but neither this nor kFlows was
/// parsed by an older parse-python. Read by select-affected.
inline constexpr llvm::StringLiteral kEffectNames = "effect_names";

/// String (16 hex digits), on module entities whose content hash counts a
/// member that only binds its name (a `def` or `class` with pure
/// decorators): the hash without those members, which changes only when
/// what importing the module runs changes. Adding such a function leaves
/// it as it was, so evidence of the module's body stays fresh. Absent: the
/// content hash. Read by merge-evidence (stale bodies).
inline constexpr llvm::StringLiteral kStatementsHash = "statements_hash";

/// Bool, on a test: pytest collects it (the parametrize marks' or a
/// fixture's params) as several items this one item stands for.
inline constexpr llvm::StringLiteral kParametrized = "parametrized";

/// Bool, on a test: the item for a whole class whose base class could not
/// be resolved, so the tests it inherits are unknown.
inline constexpr llvm::StringLiteral kInheritedUnknown = "inherited-unknown";

/// String, on the module: the repository root parse-python imported. Read by
/// merge-evidence and mark-changed (their default `root=`).
inline constexpr llvm::StringLiteral kRoot = "root";

/// String list, on decorated function and class entities: the decorators as
/// written. Read by mark-changed (decorator lines, registration).
inline constexpr llvm::StringLiteral kDecorators = "decorators";

/// Bool, on `async def` function entities: true.
inline constexpr llvm::StringLiteral kAsync = "async";

/// Bool, on lambda entities: true.
inline constexpr llvm::StringLiteral kLambda = "lambda";

/// Bool, on pytest fixture function entities: true.
inline constexpr llvm::StringLiteral kFixture = "fixture";

} // namespace fastci::python::attr

#endif // FASTCI_PYTHON_PYTHONATTRS_H
