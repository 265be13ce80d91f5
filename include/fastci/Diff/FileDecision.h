//===- FileDecision.h - What the change policy decided for a file -*- C++
//-*-===//
//
// mark-changed records on every changed file what its policy decided
// (`decision = "..."`, diff::attr::kDecision), and select-affected acts on
// it. The values are this enum, spelled once here so that the writer and
// the reader cannot drift apart.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_FILEDECISION_H
#define FASTCI_DIFF_FILEDECISION_H

#include "llvm/ADT/StringRef.h"
#include <optional>

namespace fastci {

/// What selection does with one changed file.
enum class FileDecision {
  /// Python source: its changes are mapped onto entities (`python`).
  Python,
  /// Every test runs (`all`).
  All,
  /// The tests the file names or its rule routes to, listed in `tests`.
  Tests,
  /// The tests whose evidence read the file (`reads`).
  Reads,
  /// The tests that import the modules the file builds (`modules`).
  Modules,
  /// Nothing runs for it (`ignore`).
  Ignore,
};

/// The attribute spelling of \p decision.
llvm::StringRef stringifyFileDecision(FileDecision decision);
/// The decision spelled \p text, or none for an unknown spelling.
std::optional<FileDecision> symbolizeFileDecision(llvm::StringRef text);

} // namespace fastci

#endif // FASTCI_DIFF_FILEDECISION_H
