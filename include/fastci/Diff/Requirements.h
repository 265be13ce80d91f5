//===- Requirements.h - Names in pip requirements files -------*- C++ -*-===//
//
// A change to a dependency pin (`visdom==0.2.3` -> `visdom`) matters to the
// tests that import the distribution, not to every test. mark-changed's
// `dependencies` action needs, for each changed line of a requirements or
// constraints file, the distribution it names; anything it cannot name
// (`-r other.txt`, `-e .`, a URL or a path, an index option) keeps the
// conservative answer. Names compare as PEP 503 normalizes them, and a
// distribution not installed where the evidence was recorded is matched to
// modules by the conventional spellings of its name.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_REQUIREMENTS_H
#define FASTCI_DIFF_REQUIREMENTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <string>
#include <vector>

namespace fastci {

/// What one (logical) line of a requirements file says.
struct RequirementLine {
  enum class Kind {
    /// Blank or comment only.
    Insignificant,
    /// A requirement naming a distribution: \c name.
    Requirement,
    /// Anything else (an option, an included file, a URL or path): what it
    /// installs is unknown.
    Unknown,
  };
  Kind kind = Kind::Insignificant;
  /// The normalized distribution name, for a requirement.
  std::string name;
  /// The logical line's text without its comment, for reasons.
  std::string text;
};

/// Reads 1-based line \p line of a requirements file split into \p lines,
/// joined with the lines it continues (a `\` at the end of a line) and those
/// that continue it.
RequirementLine locateRequirementLine(llvm::ArrayRef<llvm::StringRef> lines,
                                      uint32_t line);

/// The distribution names every requirement line of \p lines names.
std::vector<std::string>
getRequiredDistributions(llvm::ArrayRef<llvm::StringRef> lines);

/// \p name as PEP 503 compares distribution names: lower case, every run of
/// `-`, `_` and `.` one `-`. Module names compare the same way.
std::string normalizeDistributionName(llvm::StringRef name);

/// The normalized module names a distribution \p name (normalized) is
/// conventionally imported under: the name itself, without a `python-` or
/// `py` prefix, and the well-known exceptions (`scikit-learn`: `sklearn`).
std::vector<std::string> getConventionalModuleNames(llvm::StringRef name);

} // namespace fastci

#endif // FASTCI_DIFF_REQUIREMENTS_H
