//===- FuzzPassPipeline.cpp - libFuzzer target: pass-pipeline parser ------===//
//
// Parses the input as a --pass-pipeline string against the full registry of
// built-in passes, so that every pass's typed options are parsed too. The
// passes are never run: only the text is under test.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/Pass/PassManager.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Passes.h"

using namespace fastci;

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  registerAllPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  PassManager pm;
  (void)parsePassPipeline(fuzz::asText(data, size), pm, diag);
  return 0;
}
