//===- FuzzEvidence.cpp - libFuzzer target: evidence readers --------------===//
//
// Reads the input as one evidence file: FastCI's collapsed stacks when it
// starts with a `#` header, py-spy's raw output otherwise. Frames resolve
// against a small module with one file so that both the repository and the
// library paths of the resolver are exercised.
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/Evidence/EvidenceReader.h"
#include "fastci/Evidence/FrameResolver.h"
#include "fastci/IR/Parser.h"

using namespace fastci;

namespace {
/// The module frames resolve against, parsed once.
struct ResolverFixture {
  DiagnosticEngine diag{&llvm::errs()};
  std::unique_ptr<Module> module;
  std::unique_ptr<LineIndex> index;
  std::unique_ptr<FrameResolver> resolver;

  ResolverFixture() {
    module = parseModuleText(
        diag.addBuffer(llvm::MemoryBuffer::getMemBuffer(kModule, "fixture")),
        diag);
    if (!module)
      llvm::report_fatal_error("fuzz fixture module does not parse");
    index = std::make_unique<LineIndex>(*module);
    resolver = std::make_unique<FrameResolver>(*module, *index);
  }

  static constexpr const char *kModule = R"fir(
module attributes {revision = "rev2", root = "/work/repo"}
file @"pkg/mod.py"
module @"pkg.mod" parent @"pkg/mod.py" at 1:0-100:0 hash "0000000000000001"
function @"pkg.mod.outer" parent @"pkg.mod" at 10:0-30:0 hash "0000000000000002"
class @"pkg.mod.C" parent @"pkg.mod" at 40:0-60:0 hash "0000000000000004"
function @"pkg.mod.C.m" parent @"pkg.mod.C" at 42:4-50:0 hash "0000000000000005"
test "tests/test_a.py::test_x"
)fir";
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ResolverFixture fixture;
  EvidenceReadOptions options;
  options.getResolver = [&](llvm::StringRef) -> const FrameResolver & {
    return *fixture.resolver;
  };
  options.defaultRoot = "/work/repo";
  options.pyspyTestId = "tests/test_a.py::test_x";
  (void)readEvidence(fuzz::asText(data, size), options);
  return 0;
}
