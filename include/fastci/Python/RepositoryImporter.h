//===- RepositoryImporter.h - A Python repository into the IR ---*- C++ -*-===//
//
// The engine of the parse-python pass: walk the repository, summarize every
// Python file in parallel (or take its summary from the cache when the file
// is unchanged), then merge the summaries into the Module in sorted path
// order, so the result is byte-for-byte the same whatever the number of
// threads. Symbols are made unique module-wide and static edges are resolved
// against every entity of the repository once all files are in.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_REPOSITORYIMPORTER_H
#define FASTCI_PYTHON_REPOSITORYIMPORTER_H

#include "fastci/IR/Module.h"
#include "fastci/Python/SourceTree.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include <cstdint>
#include <string>

namespace fastci::python {

/// How to import a repository.
struct ImportOptions {
  /// The tree to walk and the files to keep.
  SourceTreeOptions tree;
  /// Worker threads; 0 uses every core.
  unsigned jobs = 0;
  /// Directory of cached file summaries; empty disables the cache.
  std::string cacheDir;
  /// Draw a progress bar on stderr when it is a terminal.
  bool showProgress = true;
};

/// What an import did.
struct ImportStatistics {
  /// Python files selected by the walk.
  uint64_t filesFound = 0;
  /// Files analysed with tree-sitter in this run.
  uint64_t filesParsed = 0;
  /// Files whose summary came from the cache.
  uint64_t filesCached = 0;
  /// Test files whose pytest items were linked again with the repository
  /// in view (linkPytestItems).
  uint64_t filesLinked = 0;
  /// Bytes of Python source read.
  uint64_t bytesRead = 0;
  /// Wall time of each stage, in microseconds: the walk (and the pytest
  /// configuration), reading the cache, the per-file stage (cache hits,
  /// reads, parses), writing the cache, linking pytest items across files,
  /// building the IR.
  uint64_t walkMicros = 0, cacheReadMicros = 0, filesMicros = 0,
           cacheWriteMicros = 0, linkMicros = 0, buildMicros = 0;
};

/// Adds the files, modules, classes, functions, static edges and pytest
/// items of the repository at \p options.tree.root to \p module, and sets
/// the module's `root` attribute to that directory's absolute path. Problems
/// with single files are warnings; only an unusable root or cache directory
/// fails the import.
LogicalResult importPythonRepository(Module &module,
                                     const ImportOptions &options,
                                     DiagnosticEngine &diag,
                                     ImportStatistics &stats);

} // namespace fastci::python

#endif // FASTCI_PYTHON_REPOSITORYIMPORTER_H
