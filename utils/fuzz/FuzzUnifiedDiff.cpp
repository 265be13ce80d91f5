//===- FuzzUnifiedDiff.cpp - libFuzzer target: unified diff reader --------===//
//
// Parses the input as a unified diff, then rebuilds each file's old text
// from the hunks, which trusts the line counts the parser accepted.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/Diff/UnifiedDiff.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  Patch patch;
  if (failed(parseUnifiedDiff(bufferId, diag, patch)))
    return 0;
  for (const FileDiff &file : patch.files)
    (void)reconstructOldFileFromDiff(file);
  return 0;
}
