//===- FuzzWorkloadSchema.cpp - libFuzzer target: workload schema reader --===//
//
// Parses the input as a YAML workload schema.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/Workload/Schema.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  (void)parseWorkloadSchema(bufferId, diag);
  return 0;
}
