//===- PytestConfig.h - pytest's collection options -----------*- C++ -*-===//
//
// pytest reads its options from the first configuration file it finds in the
// rootdir: pytest.ini (always, even without a [pytest] section),
// .pytest.ini, pyproject.toml with [tool.pytest.ini_options], tox.ini with
// [pytest], setup.cfg with [tool:pytest]. This file reads the options that
// decide what is collected (testpaths, python_files, python_classes,
// python_functions, norecursedirs) and applies them the way pytest 7.2's
// collectors do, so that FastCI's test items are the ones `pytest` run from
// the repository root collects.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_PYTESTCONFIG_H
#define FASTCI_PYTHON_PYTESTCONFIG_H

#include "fastci/Python/FileSummary.h"
#include "llvm/ADT/StringRef.h"
#include <string>
#include <vector>

namespace fastci::python {

/// pytest's collection options, defaults as in pytest 7.2.
struct PytestConfig {
  /// The file the options came from, relative to the root ("" for none).
  std::string source;
  /// `testpaths`: globs relative to the root; empty means the root.
  std::vector<std::string> testPaths;
  std::vector<std::string> pythonFiles = {"test_*.py", "*_test.py"};
  std::vector<std::string> pythonClasses = {"Test"};
  std::vector<std::string> pythonFunctions = {"test"};
  std::vector<std::string> noRecurseDirs = {"*.egg",        ".*",   "_darcs",
                                            "build",        "CVS",  "dist",
                                            "node_modules", "venv", "{arch}"};
  /// Set by resolveTestPaths: the testpaths entries that exist, as paths
  /// relative to the root, each marked as a file or a directory.
  std::vector<std::pair<std::string, bool>> roots;

  /// Whether pytest run from the root, without arguments, collects the
  /// module at \p relPath: under a testpaths entry (a file named there
  /// explicitly is collected whatever its name), no directory below that
  /// entry matching norecursedirs, the name matching python_files.
  bool isTestFile(llvm::StringRef relPath) const;
  /// python_classes / python_functions: a prefix, or a glob when the
  /// pattern has `*`, `?` or `[`.
  bool isTestClassName(llvm::StringRef name) const;
  bool isTestFunctionName(llvm::StringRef name) const;
  /// A string that changes whenever collection would (for cache keys).
  std::string fingerprint() const;
};

/// Python's fnmatch.fnmatch on POSIX: `*` (any run, `/` included), `?`,
/// `[seq]`, `[!seq]`; case-sensitive.
bool pythonFnmatch(llvm::StringRef name, llvm::StringRef pattern);

/// Finds and reads the configuration file pytest would use for \p root (as
/// rootdir and invocation directory), expands testpaths against the tree,
/// and returns the options; a malformed file is a warning in \p warnings
/// (file-relative line and column) and leaves the defaults.
PytestConfig readPytestConfig(llvm::StringRef root,
                              std::vector<FileWarning> &warnings);

} // namespace fastci::python

#endif // FASTCI_PYTHON_PYTESTCONFIG_H
