//===- SourceTree.h - Finding the Python files of a repository --*- C++ -*-===//
//
// The first step of importing a repository: walk it the way its developers
// see it (skipping version-control, build and virtual-environment directories
// and whatever .gitignore files exclude), keep the `.py` files the include=
// and exclude= globs select, and name each one's module as `import` would.
//
// Module naming: a file's module name is its path relative to its import
// root with `/` read as `.`, the `.py` dropped and a trailing `__init__`
// dropped (so `pkg/__init__.py` is module `pkg`). The import root is the
// nearest enclosing directory named `src` that is not itself a package (the
// src layout), else the repository root. Directories without `__init__.py`
// are namespace packages and contribute their name like any other package.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_SOURCETREE_H
#define FASTCI_PYTHON_SOURCETREE_H

#include "fastci/Support/Diagnostics.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fastci::python {

/// A Python source file found by the walk.
struct SourceFile {
  /// Path relative to the repository root, `/`-separated.
  std::string path;
  /// Dotted module name (see the file comment).
  std::string moduleName;
  /// Size in bytes when the tree was walked (the importer parses large files
  /// first).
  uint64_t size = 0;
  /// Modification time in nanoseconds since the epoch, from the same stat
  /// (the summary cache trusts an entry whose size and time still match).
  int64_t mtimeNs = 0;
};

/// What to walk and which files to keep.
struct SourceTreeOptions {
  /// The repository root.
  std::string root;
  /// Globs a file must match one of (all `.py` files when empty). A glob
  /// with a slash matches the path relative to the root, one without a
  /// slash the file name, as in .gitignore.
  std::vector<std::string> include;
  /// Globs that remove files or prune whole directories.
  std::vector<std::string> exclude;
};

/// True for directory names the walk never enters (`.git`, `build`,
/// `__pycache__`, `site-packages`, ...).
bool isSkippedDirectoryName(llvm::StringRef name);

/// True when \p path (relative to the root) matches one of \p globs, with
/// the slash rule of SourceTreeOptions::include.
bool matchesAnyGlob(llvm::ArrayRef<std::string> globs, llvm::StringRef path);

/// Computes the module name of \p path (relative to the root) given a
/// predicate telling whether a directory (relative to the root, "" for the
/// root) contains `__init__.py`.
std::string
computeModuleName(llvm::StringRef path,
                  llvm::function_ref<bool(llvm::StringRef dir)> isPackage);

/// Walks \p options.root and returns its Python files sorted by path.
/// Unreadable directories and symlink loops are reported as warnings and
/// skipped; a root that is not a readable directory is an error, reported
/// through \p diag, and yields an empty list with \p failed set.
std::vector<SourceFile> collectSourceFiles(const SourceTreeOptions &options,
                                           DiagnosticEngine &diag,
                                           bool &failed);

} // namespace fastci::python

#endif // FASTCI_PYTHON_SOURCETREE_H
