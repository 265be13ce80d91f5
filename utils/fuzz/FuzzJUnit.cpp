//===- FuzzJUnit.cpp - libFuzzer target: JUnit XML history reader ---------===//
//
// Reads the input as a pytest --junitxml report.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/History/HistoryReaders.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  std::vector<HistoryRecord> records;
  int64_t runTime = 0;
  (void)readJUnitXML(bufferId, diag, /*fallbackTime=*/0, records, runTime);
  return 0;
}
