//===- FuzzEvidenceV2.cpp - libFuzzer target: compact evidence records ----===//
//
// Reads the input as the body of a version-2 evidence file (entity lines
// `@f frame`, `@i module frame`, `@m path`, `@r path`, then stacks), behind
// a fixed valid header, so that the fuzzer spends its effort on the compact
// records rather than on rediscovering the header. Frames resolve against
// the same small module as FuzzEvidence.cpp. A second read of the raw input
// covers version-2 headers (coverage, scope, time, import-samples).
//
//===----------------------------------------------------------------------===//

#include "FuzzHelpers.h"

#include "fastci/Evidence/EvidenceReader.h"
#include "fastci/Evidence/FrameResolver.h"
#include "fastci/IR/Parser.h"

using namespace fastci;

namespace {
struct ResolverFixture {
  DiagnosticEngine diag{&llvm::errs()};
  std::unique_ptr<Module> module;
  std::unique_ptr<LineIndex> index;
  std::unique_ptr<FrameResolver> resolver;
  FrameCache cache;

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
  // The frame cache persists across inputs, as it does across the files a
  // merge thread reads.
  options.frameCache = &fixture.cache;
  llvm::StringRef input = fuzz::asText(data, size);
  std::string text =
      "# fastci-evidence: 2\n# test-id: tests/test_a.py::test_x\n"
      "# root: /work/repo\n# coverage: exact\n";
  text += input;
  (void)readEvidence(text, options);
  (void)readEvidence(input, options);
  return 0;
}
