//===- ChangeMapper.h - A diff as changed entities and files ----*- C++ -*-===//
//
// Turns a parsed diff into the `change` and `changed_file` records of a
// Module. Python files are mapped hunk by hunk onto the innermost entity each
// changed line falls in (decorator lines belong to the function they
// decorate; code outside every function belongs to its class or module);
// comparing normalized hashes against the old version of the file tells a
// real change from a cosmetic one, and a body whose hash reappears under
// another name or file is a move or rename rather than a delete and an add.
// A deleted and an added entity of the same kind and scope in the same file
// whose bodies are similar enough are one entity renamed and edited.
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
  /// Moves and renames paired by body similarity (renamed and edited); also
  /// counted in \c moves.
  unsigned editedMoves = 0;
  unsigned filesForcingAll = 0;
};

/// The default of ChangeMapper::setRenameSimilarity().
inline constexpr double kDefaultRenameSimilarity = 0.5;

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

  /// Reads the old versions of touched files (the ones the old module's
  /// ranges describe), to compare the bodies of deleted and added entities.
  /// Without it, the old text is rebuilt from the new one and the diff.
  void setOldSourceReader(SourceReader reader) {
    readOldSource = std::move(reader);
  }

  /// Pairs a deleted and an added entity of the same kind, in the same file
  /// (or the file it was renamed to) and the same scope (or the scope it
  /// was renamed or moved to), whose getBodySimilarity() is at least
  /// \p threshold (in [0, 1]; 0 turns this pairing off). A file and kind
  /// with more than 4,000,000 such pairs is not compared (a warning), as
  /// comparing is quadratic.
  void setRenameSimilarity(double threshold) { renameSimilarity = threshold; }

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
  SourceReader readNewSource, readOldSource;
  double renameSimilarity = kDefaultRenameSimilarity;
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

/// How alike two versions of a definition are, from 0 to 1: the weighted
/// Jaccard index of their Python tokens (identifiers, numbers, string
/// literals, punctuation; comments and layout left out), counted with
/// multiplicity. Every use of the definition's own name (\p oldName in
/// \p oldBody, \p newName in \p newBody) is one placeholder token, so that
/// a pure rename, recursive calls included, is 1. Two empty bodies are 0.
double getBodySimilarity(llvm::StringRef oldBody, llvm::StringRef oldName,
                         llvm::StringRef newBody, llvm::StringRef newName);

/// The dotted module name of the Python file \p path, with the source roots
/// (`src/`, ...) that \p module's existing modules reveal stripped. Scans
/// the whole module; use ModuleNamer for many files.
std::string getModuleNameForPath(const Module &module, llvm::StringRef path);

} // namespace fastci

#endif // FASTCI_DIFF_CHANGEMAPPER_H
