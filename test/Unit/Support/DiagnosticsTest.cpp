//===- DiagnosticsTest.cpp - DiagnosticEngine unit tests ------------------===//
//
// The diagnostic engine is the one path every error takes, so its format
// (`file:line:col: error: message`, source line, caret) and its counting and
// interception are pinned down here.
//
//===----------------------------------------------------------------------===//
#include "fastci/Support/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

TEST(DiagnosticsTest, LocatedErrorHasFileLineColumnAndCaret) {
  std::string output;
  llvm::raw_string_ostream os(output);
  DiagnosticEngine diag(&os);
  unsigned id = diag.addBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("first line\nsecond line\n", "in.fir"));
  const char *start =
      diag.getSourceMgr().getMemoryBuffer(id)->getBufferStart();
  diag.error(llvm::SMLoc::getFromPointer(start + 18), "bad token");
  EXPECT_EQ(output, "in.fir:2:8: error: bad token\nsecond line\n       ^\n");
  EXPECT_EQ(diag.getNumErrors(), 1u);
  EXPECT_EQ(diag.getLineAndColumn(llvm::SMLoc::getFromPointer(start + 18)),
            std::make_pair(2u, 8u));
  EXPECT_EQ(diag.getBufferName(llvm::SMLoc::getFromPointer(start)), "in.fir");
}

TEST(DiagnosticsTest, UnlocatedDiagnosticNamesTheFile) {
  std::string output;
  llvm::raw_string_ostream os(output);
  DiagnosticEngine diag(&os);
  diag.emit(Severity::Warning, "evidence/a.stacks", 7, 3, "no count");
  diag.emit(Severity::Error, "missing.fir", 0, 0, "could not open");
  EXPECT_EQ(output, "evidence/a.stacks:7:3: warning: no count\n"
                    "missing.fir: error: could not open\n");
  EXPECT_EQ(diag.getNumWarnings(), 1u);
  EXPECT_EQ(diag.getNumErrors(), 1u);
}

TEST(DiagnosticsTest, HandlerConsumesButStillCounts) {
  std::string output;
  llvm::raw_string_ostream os(output);
  DiagnosticEngine diag(&os);
  std::vector<std::string> seen;
  diag.setHandler([&](const Diagnostic &d) {
    seen.push_back(d.message);
    return d.severity == Severity::Error;
  });
  diag.emit(Severity::Error, "", 0, 0, "swallowed");
  diag.emit(Severity::Note, "", 0, 0, "printed");
  EXPECT_EQ(seen, (std::vector<std::string>{"swallowed", "printed"}));
  EXPECT_EQ(output, "fastci: note: printed\n");
  EXPECT_EQ(diag.getNumErrors(), 1u);
}

} // namespace
