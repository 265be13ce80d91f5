//===- DiffAttrs.h - Attribute names mark-changed writes --------*- C++ -*-===//
//
// The attribute names mark-changed sets on changes and changed files that
// are new in this revision of the contract between passes, declared once
// so that select-affected and plugins share one spelling. docs/Changes.md
// describes each value.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_DIFFATTRS_H
#define FASTCI_DIFF_DIFFATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::diff::attr {

/// String, on a change of a module or class entity's own lines (code
/// outside every function): "definition" when every changed statement only
/// binds names (assignments, imports, `def`/`class` headers, class
/// attributes), "effect" when one may act at import time beyond binding
/// (module-level calls, registering decorators, mutation of other objects).
/// Read by select-affected's import-time rules.
inline constexpr llvm::StringLiteral kModuleLevel = "module_level";

/// The two values of kModuleLevel.
inline constexpr llvm::StringLiteral kDefinition = "definition";
inline constexpr llvm::StringLiteral kEffect = "effect";

/// String list, on a change with module_level = "definition": the names the
/// changed statements bind, before or after the change (`__version__`,
/// `DEFAULTS`). Read by select-affected (rule `module-name`).
inline constexpr llvm::StringLiteral kDefines = "defines";

/// String, on a change with module_level: the first changed statement that
/// made it an effect, for reasons (`torch.manual_seed(0)`, line 12).
inline constexpr llvm::StringLiteral kEffectStatement = "effect_statement";

/// String list, on an `added` function or class change: its decorators run
/// at import time and are not known to be free of effects (registration).
/// select-affected treats the change as a module-level effect.
inline constexpr llvm::StringLiteral kRegisteredBy = "registered_by";

/// String list, on a changed non-Python file: the tests whose evidence read
/// it (record attribute `reads`); its decision is then "reads".
inline constexpr llvm::StringLiteral kReaders = "readers";

} // namespace fastci::diff::attr

#endif // FASTCI_DIFF_DIFFATTRS_H
