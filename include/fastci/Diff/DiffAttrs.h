//===- DiffAttrs.h - Attribute names mark-changed writes --------*- C++ -*-===//
//
// The attribute names mark-changed (lib/Diff) sets on changes, changed files,
// entities and the module, declared once so that every reader (selection,
// emit-plan, plugins) shares one spelling. Each comment gives the value kind,
// what it means and who reads it; the verifier checks the kinds
// (passes/DeclaredAttrs.cpp registers them). docs/IR.md has the table of
// writers and readers, docs/Changes.md the meaning.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_DIFFATTRS_H
#define FASTCI_DIFF_DIFFATTRS_H

#include "llvm/ADT/StringRef.h"

namespace fastci::diff::attr {

// On changed files.

/// String, on changed files: the policy category of the path (`python`,
/// `docs`, `unknown`, ...). Read by emit-plan.
inline constexpr llvm::StringLiteral kCategory = "category";
/// String (a FileDecision of Diff/FileDecision.h: `python` | `all` |
/// `tests` | `reads` | `modules` | `ignore`), on changed files: what the
/// policy decided. Read by select-affected.
inline constexpr llvm::StringLiteral kDecision = "decision";
/// String, on changed files and changes: a sentence saying why. Read by
/// select-affected for its reasons.
inline constexpr llvm::StringLiteral kReason = "reason";
/// String, on changed files: the policy rule that matched (`file:line`).
inline constexpr llvm::StringLiteral kRule = "rule";
/// String list, on changed files with decision `tests`: the tests named.
/// Read by select-affected.
inline constexpr llvm::StringLiteral kTests = "tests";
/// String list, on changed files with decision `tests` found by the rule's
/// fallback tags: those tags.
inline constexpr llvm::StringLiteral kTags = "tags";
/// String list, on changed native sources with decision `modules`: the
/// Python modules that load the extension built from the file.
inline constexpr llvm::StringLiteral kModules = "modules";
/// String list, on changed native sources: the extensions the policy's
/// `extensions:` declares for the file.
inline constexpr llvm::StringLiteral kExtensions = "extensions";
/// Bool, on changed Python files: false when the file is not in the module.
inline constexpr llvm::StringLiteral kInModule = "in_module";
/// String, on changed Python files: the module entity of the new file.
inline constexpr llvm::StringLiteral kModule = "module";
/// String, on renamed Python files: the old module's symbol.
inline constexpr llvm::StringLiteral kOldModule = "old_module";
/// String, on renamed or copied files: the old path.
inline constexpr llvm::StringLiteral kOldPath = "old_path";
/// Bool, on binary patches: true.
inline constexpr llvm::StringLiteral kBinary = "binary";
/// String (`100644 -> 100755`), on files whose mode changed.
inline constexpr llvm::StringLiteral kMode = "mode";

// On changes.

/// String, on moved or renamed changes: the old symbol. Read by the
/// selection's change set.
inline constexpr llvm::StringLiteral kMovedFrom = "moved_from";
/// String, on changes moved across files: the old file.
inline constexpr llvm::StringLiteral kMovedFromFile = "moved_from_file";
/// Bool, on moves: the body changed too.
inline constexpr llvm::StringLiteral kModified = "modified";
/// Int (percent), on moves: how similar old and new bodies are.
inline constexpr llvm::StringLiteral kSimilarity = "similarity";
/// String list, on deletions: the removed lines' text.
inline constexpr llvm::StringLiteral kRemovedLines = "removed_lines";
/// String, on changes of a module that loads a changed native extension:
/// the changed native source.
/// Read by select-affected for its reason.
inline constexpr llvm::StringLiteral kVia = "via";

// On entities of the base snapshot mark-changed builds.

/// Int, on decorated entities: the line the first decorator starts on.
/// Read by the change mapper.
inline constexpr llvm::StringLiteral kDecoratorLine = "decorator_line";

// On the module.

/// String, on the module: the name of the change policy used. Read by
/// emit-plan.
inline constexpr llvm::StringLiteral kChangePolicy = "change_policy";
/// Bool, on the module: some changed file selects every test. Read by
/// select-affected.
inline constexpr llvm::StringLiteral kPolicyAll = "policy_all";
/// String list, on the module: why every test is selected. Read by
/// select-affected.
inline constexpr llvm::StringLiteral kPolicyAllReasons = "policy_all_reasons";
/// String, on the module: the diff file or `git diff base...head`.
inline constexpr llvm::StringLiteral kChangeSource = "change_source";
/// String list, on the module: the git commands mark-changed ran.
inline constexpr llvm::StringLiteral kGitCommands = "git_commands";

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

/// String list, on a change with module_level = "definition" whose changed
/// statements import (`import x`, `from .m import y`, and `if`/`try` blocks
/// of them): the modules imported, as written (`x`, `.m`, `.m.y`). An import
/// does work beyond binding (it may load modules, it fails on a name the
/// target lacks); select-affected's reasons (rule `module-code`) name them.
inline constexpr llvm::StringLiteral kChangedImports = "changed_imports";

/// Bool, on a change with module_level = "definition" and changed_imports:
/// every changed statement is an import statement. A process that had
/// loaded each imported module already runs no module body for them, so
/// only code reading the names they bind observes the change. Read by
/// select-affected (module-code).
inline constexpr llvm::StringLiteral kImportsOnly = "imports_only";

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

/// String list, on a changed dependency file (policy action
/// `dependencies`): the normalized names of the distributions whose
/// requirement lines changed, and those they require.
inline constexpr llvm::StringLiteral kDistributions = "distributions";

/// String list, on a changed dependency file: the top-level modules those
/// distributions provide (installed metadata from the evidence, and the
/// conventional spelling of each name).
inline constexpr llvm::StringLiteral kPackages = "packages";

/// String list, on a changed dependency file whose decision is "packages":
/// the tests whose processes imported, or tried to import, one of them, or
/// whose evidence cannot say. Read by select-affected.
inline constexpr llvm::StringLiteral kImporters = "importers";

} // namespace fastci::diff::attr

#endif // FASTCI_DIFF_DIFFATTRS_H
