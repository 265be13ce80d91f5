//===- FuzzEvidence.cpp - libFuzzer target: evidence readers --------------===//
//
// Reads the input as one evidence file: FastCI's collapsed stacks when it
// starts with a `#` header, py-spy's raw output otherwise. Frames resolve
// against a small module with one file so that both the repository and the
// library paths of the resolver are exercised.
//
//===----------------------------------------------------------------------===//

#include "EvidenceFixture.h"
#include "FuzzHelpers.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::EvidenceFixture fixture;
  EvidenceReadOptions options = fixture.getReadOptions();
  (void)readEvidence(fuzz::asText(data, size), options);
  return 0;
}
