//===- FuzzResultsCSV.cpp - libFuzzer target: CSV results reader ----------===//
//
// Reads the input as CI job results in CSV, through the CSV tokenizer.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/History/HistoryReaders.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  std::vector<HistoryRecord> records;
  (void)readResultsCSV(bufferId, diag, records);
  return 0;
}
