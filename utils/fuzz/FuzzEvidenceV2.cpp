//===- FuzzEvidenceV2.cpp - libFuzzer target: compact evidence records ----===//
//
// Reads the input as the body of a version-2 evidence file (entity lines
// `@f frame`, `@i module frame`, `@m path`, `@r path`, then stacks), behind
// a fixed valid header, so that the fuzzer spends its effort on the compact
// records rather than on rediscovering the header. A second read of the raw
// input covers version-2 headers (coverage, scope, time, import-samples).
// The frame cache persists across inputs, as it does across the files one
// merge thread reads.
//
//===----------------------------------------------------------------------===//

#include "EvidenceFixture.h"
#include "FuzzHelpers.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::EvidenceFixture fixture;
  static FrameCache cache;
  EvidenceReadOptions options = fixture.getReadOptions();
  options.frameCache = &cache;
  llvm::StringRef input = fuzz::asText(data, size);
  std::string text =
      "# fastci-evidence: 2\n# test-id: tests/test_a.py::test_x\n"
      "# root: /work/repo\n# coverage: exact\n";
  text += input;
  (void)readEvidence(text, options);
  (void)readEvidence(input, options);
  return 0;
}
