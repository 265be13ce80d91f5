//===- FuzzManifest.cpp - libFuzzer target: test manifest reader ----------===//
//
// Loads the input as a YAML test manifest into an empty module, which
// exercises the YAML reader and the manifest's own checks.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/IR/Module.h"
#include "fastci/Workload/Manifest.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  Module module;
  ManifestLoadStats stats;
  (void)loadTestManifest(bufferId, module, diag, stats);
  return 0;
}
