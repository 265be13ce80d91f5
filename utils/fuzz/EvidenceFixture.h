//===- EvidenceFixture.h - The module evidence fuzz targets resolve against =//
//
// A small module with one package file (a function, a class with a method)
// and one test, parsed once per fuzzer process, with the resolver frames map
// through: both the repository and the library paths of the resolver are
// exercised. Shared by FuzzEvidence.cpp and FuzzEvidenceV2.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_UTILS_FUZZ_EVIDENCEFIXTURE_H
#define FASTCI_UTILS_FUZZ_EVIDENCEFIXTURE_H

#include "fastci/Evidence/EvidenceReader.h"
#include "fastci/Evidence/FrameResolver.h"
#include "fastci/IR/Parser.h"
#include "fastci/Support/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace fastci::fuzz {

/// The module frames resolve against, parsed once.
struct EvidenceFixture {
  DiagnosticEngine diag{&llvm::errs()};
  std::unique_ptr<Module> module;
  std::unique_ptr<LineIndex> index;
  std::unique_ptr<FrameResolver> resolver;

  EvidenceFixture() {
    module = parseModuleText(
        diag.addBuffer(llvm::MemoryBuffer::getMemBuffer(kModule, "fixture")),
        diag);
    if (!module)
      llvm::report_fatal_error("fuzz fixture module does not parse");
    index = std::make_unique<LineIndex>(*module);
    resolver = std::make_unique<FrameResolver>(*module, *index);
  }

  /// Read options resolving every file with this fixture's resolver.
  EvidenceReadOptions getReadOptions() const {
    EvidenceReadOptions options;
    options.getResolver = [this](llvm::StringRef) -> const FrameResolver & {
      return *resolver;
    };
    options.defaultRoot = "/work/repo";
    options.pyspyTestId = "tests/test_a.py::test_x";
    return options;
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

} // namespace fastci::fuzz

#endif // FASTCI_UTILS_FUZZ_EVIDENCEFIXTURE_H
