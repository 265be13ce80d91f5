//===- FuzzChangePolicy.cpp - libFuzzer target: change policy reader ------===//
//
// Parses the input as a YAML change policy, then matches a few paths
// against its rules, whose globs come from the input.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/Diff/ChangePolicy.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  ChangePolicy policy;
  if (failed(ChangePolicy::parse(bufferId, diag, policy)))
    return 0;
  for (llvm::StringRef path : {"README.md", "csrc/fused/adam.cu",
                               "megatron/core/model.py", "a/b/c/d/e.yaml"}) {
    (void)policy.match(path);
    (void)policy.findExtensions(path);
  }
  return 0;
}
