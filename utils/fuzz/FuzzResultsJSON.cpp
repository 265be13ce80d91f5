//===- FuzzResultsJSON.cpp - libFuzzer target: JSON results reader --------===//
//
// Reads the input as CI job results in JSON.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/History/HistoryReaders.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  std::vector<HistoryRecord> records;
  (void)readResultsJSON(bufferId, diag, records);
  return 0;
}
