//===- FuzzModuleText.cpp - libFuzzer target: .fir text reader ------------===//
//
// Parses the input as .fir text; a module that parses is verified and
// written in every format (see fuzz::checkModule).
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/IR/Parser.h"

using namespace fastci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(&llvm::nulls());
  unsigned bufferId = fuzz::addFuzzBuffer(diag, data, size);
  fuzz::checkModule(parseModuleText(bufferId, diag), diag);
  return 0;
}
