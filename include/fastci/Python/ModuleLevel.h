//===- ModuleLevel.h - What a module-level edit does at import --*- C++ -*-===//
//
// A change to code outside every function (a module's or a class's own
// lines) runs when the module is imported, not when a test calls something.
// Selection needs to know which of two kinds it is: a *definition* only
// binds names (an assignment to a name, an import, a `def`/`class`, a class
// attribute), so only code that reads those names can observe it; an
// *effect* may act beyond the names it binds (a call, a registering
// decorator, an assignment into another object), so every process that
// imports the module observes it. classifyModuleLevel() decides this per
// changed statement with tree-sitter, failing safe to "effect" for anything
// it does not know.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_MODULELEVEL_H
#define FASTCI_PYTHON_MODULELEVEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <string>
#include <tree_sitter/api.h>
#include <vector>

namespace fastci {

/// What the changed module-level statements of one entity do.
struct ModuleLevelEdit {
  /// Some changed statement may act beyond binding names.
  bool effect = false;
  /// The first such statement, `line N: text` (for reasons).
  std::string effectStatement;
  /// Names the changed statements bind (sorted, unique once finish()ed).
  std::vector<std::string> defines;
  /// Modules the changed statements import, as written (`a.b`, `.utils`,
  /// `..pkg`); a `from m import x` also lists `m.x`, which may be a module.
  std::vector<std::string> imports;
  /// At least one changed statement was found.
  bool found = false;
  /// Every changed statement found is an `import` or `from ... import`.
  bool onlyImports = true;

  /// Sorts and de-duplicates \c defines and \c imports.
  void finish();
};

/// Classifies the statements of \p source that overlap \p lines (1-based)
/// and sit directly in the scope \p qualName: the module itself for "", else
/// the body of the class with that module-relative qualified name (`A.B`),
/// whose header and decorator lines count too. Results accumulate into
/// \p edit, so the old and new versions of a file can both be classified
/// into one edit. A scope that cannot be found marks the edit as an effect.
void classifyModuleLevel(llvm::StringRef source, llvm::StringRef qualName,
                         llvm::ArrayRef<uint32_t> lines, ModuleLevelEdit &edit);

/// Classifies the statement \p statement (a node of a tree-sitter-python
/// tree of \p source, directly in a module's or class's body) whole: what
/// parse-python records per statement of a body, so that selection can
/// follow a changed name through the statements that read it (`flows`,
/// `effect_names`). Results accumulate into \p edit.
void classifyStatement(llvm::StringRef source, const TSNode &statement,
                       ModuleLevelEdit &edit);

/// True when the decorator \p name (dotted, as parse-python records it,
/// arguments dropped) is known to bind its function without registering it
/// anywhere (`property`, `staticmethod`, `functools.lru_cache`,
/// `pytest.fixture`, `torch.no_grad`, ...).
bool isPureDecorator(llvm::StringRef name);

} // namespace fastci

#endif // FASTCI_PYTHON_MODULELEVEL_H
