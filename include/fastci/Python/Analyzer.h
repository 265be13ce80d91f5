//===- Analyzer.h - Summarizing one Python file with tree-sitter -*- C++
//-*-===//
//
// Parses one file with tree-sitter-python and makes its FileSummary in a
// single walk of the syntax tree: classes, functions and named lambdas with
// CPython-exact `__qualname__`s and `ast` ranges, normalized content hashes,
// imports and call sites resolved through the file's own bindings, and pytest
// items. Syntax errors, invalid UTF-8 and parse timeouts become warnings in
// the summary; whatever tree-sitter recovers is still summarized.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_ANALYZER_H
#define FASTCI_PYTHON_ANALYZER_H

#include "fastci/Python/FileSummary.h"
#include "fastci/Python/PytestConfig.h"
#include "llvm/ADT/StringRef.h"

namespace fastci::python {

/// Summarizes \p source, the text of the file \p path (relative to the
/// repository root) whose dotted module name is \p moduleName, collecting
/// pytest items under \p config. Safe to call concurrently from many
/// threads.
FileSummary analyzePythonSource(llvm::StringRef source, llvm::StringRef path,
                                llvm::StringRef moduleName,
                                const PytestConfig &config);

/// The same with pytest's default configuration.
FileSummary analyzePythonSource(llvm::StringRef source, llvm::StringRef path,
                                llvm::StringRef moduleName);

} // namespace fastci::python

#endif // FASTCI_PYTHON_ANALYZER_H
