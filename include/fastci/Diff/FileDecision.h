//===- FileDecision.h - What the change policy decided for a file -*- C++
//-*-===//
//
// mark-changed records on every changed file what its policy decided
// (`decision = "..."`, diff::attr::kDecision), and select-affected acts on
// it. The values are this enum, spelled once in its EnumName table so that
// the writer and the reader cannot drift apart.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_FILEDECISION_H
#define FASTCI_DIFF_FILEDECISION_H

#include "fastci/Support/EnumNames.h"
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
  /// The tests whose processes imported the packages of the changed
  /// dependency pins (`packages`), listed in `importers`.
  Packages,
  /// Nothing runs for it (`ignore`).
  Ignore,
};

/// The spellings of FileDecision: the `decision` attribute's values.
inline constexpr EnumName<FileDecision> kFileDecisionNames[] = {
    {FileDecision::Python, "python", "Mapped onto changed entities"},
    {FileDecision::All, "all", "Every test runs"},
    {FileDecision::Tests, "tests", "The tests listed in `tests`"},
    {FileDecision::Reads, "reads", "The tests whose evidence read the file"},
    {FileDecision::Modules, "modules", "The importers of the built modules"},
    {FileDecision::Packages, "packages",
     "The importers of the changed dependencies"},
    {FileDecision::Ignore, "ignore", "Nothing runs"},
};

/// The attribute spelling of \p decision.
inline llvm::StringRef stringifyFileDecision(FileDecision decision) {
  return stringifyEnum<FileDecision>(kFileDecisionNames, decision);
}
/// The decision spelled \p text, or none for an unknown spelling.
inline std::optional<FileDecision> symbolizeFileDecision(llvm::StringRef text) {
  return symbolizeEnum<FileDecision>(kFileDecisionNames, text);
}

} // namespace fastci

#endif // FASTCI_DIFF_FILEDECISION_H
