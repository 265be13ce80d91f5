//===- ChangeMapper.h - A diff as changed entities and files ----*- C++ -*-===//
//
// Turns a parsed diff into the `change` and `changed_file` records of a
// Module. Python files are mapped hunk by hunk onto the innermost entity each
// changed line falls in (decorator lines belong to the function they
// decorate; code outside every function belongs to its class or module);
// comparing normalized hashes against the old version of the file tells a
// real change from a cosmetic one, and a body whose hash reappears under
// another name or file is a move or rename rather than a delete and an add.
// Every other file is classified by the change policy, and every decision is
// recorded with its reason so that a plan can say why a test was selected.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_CHANGEMAPPER_H
#define FASTCI_DIFF_CHANGEMAPPER_H

#include "fastci/Diff/ChangePolicy.h"
#include "fastci/Diff/UnifiedDiff.h"
#include "fastci/IR/Module.h"
#include <functional>
#include <optional>

namespace fastci {

/// Returns the text of one version of a touched Python file by its path, or
/// std::nullopt when that text is not available.
using SourceReader =
    std::function<std::optional<std::string>(llvm::StringRef path)>;

/// Names Python files as dotted modules, with the source roots (`src/`, ...)
/// that a module's existing modules reveal stripped. The roots are found
/// once, so naming many files costs no more than one scan of the module.
class ModuleNamer {
public:
  explicit ModuleNamer(const Module &module);
  /// The dotted module name of the Python file \p path.
  std::string getName(llvm::StringRef path) const;

private:
  /// Distinct source roots, each ending in `/`.
  std::vector<std::string> roots;
};

/// What a mapping run found, for statistics and benchmarks.
struct ChangeMapperStats {
  unsigned files = 0;
  unsigned pythonFiles = 0;
  unsigned changes = 0;
  unsigned cosmetic = 0;
  unsigned moves = 0;
  unsigned filesForcingAll = 0;
};

/// Records the changes of a diff in a module.
class ChangeMapper {
public:
  /// Maps into \p module (the new revision) under \p policy. \p oldModule,
  /// when given, holds the entities of the old versions of the touched files
  /// (file entities named by their old paths); without it, deletions cannot
  /// be named and every touched entity is `modified`.
  ChangeMapper(Module &module, const ChangePolicy &policy,
               DiagnosticEngine &diag, const Module *oldModule = nullptr);
  ~ChangeMapper();

  /// Reads the new versions of touched files (the ones the module's ranges
  /// describe), so that a decorator spanning several lines is claimed whole
  /// by the entity it decorates. Without it, each decorator is taken to be
  /// one line unless the entity has a `decorator_line` attribute.
  void setNewSourceReader(SourceReader reader) {
    readNewSource = std::move(reader);
  }

  /// Records every file of \p patch. Warns about files the diff modifies but
  /// the module lacks (they are treated as added files).
  LogicalResult map(const Patch &patch);

  /// What the last map() found.
  const ChangeMapperStats &getStats() const { return stats; }

private:
  class Impl;
  Module &module;
  const ChangePolicy &policy;
  DiagnosticEngine &diag;
  const Module *oldModule;
  SourceReader readNewSource;
  ModuleNamer namer;
  ChangeMapperStats stats;
};

/// The first line of the decorators of the definition starting at line
/// \p defLine (1-based) of \p text, which has \p numDecorators decorators:
/// the \p numDecorators-th line above \p defLine that starts
/// with `@` at the definition's indentation, so that arguments spanning
/// several lines (`@pytest.mark.parametrize(\n ...)`) are covered. Returns
/// std::nullopt when line \p defLine does not start a `def`, `async def` or
/// `class`, or when there are not that many such lines.
std::optional<uint32_t> findDecoratorStart(llvm::StringRef text,
                                           uint32_t defLine,
                                           unsigned numDecorators);

/// The dotted module name of the Python file \p path, with the source roots
/// (`src/`, ...) that \p module's existing modules reveal stripped. Scans
/// the whole module; use ModuleNamer for many files.
std::string getModuleNameForPath(const Module &module, llvm::StringRef path);

} // namespace fastci

#endif // FASTCI_DIFF_CHANGEMAPPER_H
