//===- BytecodeTest.cpp - The bytecode reader on hostile input ------------===//
//
// Every truncation and every single-byte corruption of a real bytecode file
// must be rejected with a diagnostic or decode to some module; none may
// crash. Done in-process, so the sweep is exhaustive (the lit test samples
// it through the driver).
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Parser.h"
#include "fastci/IR/Printer.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {
/// Reads \p bytes as bytecode; true if it decoded. A failure must come with
/// exactly one error naming a byte offset.
bool readBytecode(llvm::StringRef bytes) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(&os);
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(bytes, "x.fbc"));
  bool ok = parseModuleBytecode(id, diag) != nullptr;
  if (!ok) {
    EXPECT_EQ(diag.getNumErrors(), 1u);
    EXPECT_NE(errors.find("at byte offset"), std::string::npos) << errors;
  }
  return ok;
}

std::string sampleBytecode() {
  const char *text = R"(module attributes {r = "x", l = [1, 2.5, {k = @"m"}]}
file @"m.py"
module @"m" parent @"m.py" at 1:0-9:0 hash "0123456789abcdef"
function @"m.f" parent @"m" at 2:0-3:0 {tags = ["a"]}
call @"m.f" -> "torch.mm" at 2
test "t" entry @"m.f" cost {gpus = 1, seconds = 2.0, gpu_seconds = 2.0} tags ["slow"]
outcome "t" rev "r" time 5 pass 1.0
evidence "t" pid 1 rank 0 rev "r" rate 10.0 {
  3: @"m" @"m.f" "torch.mm"
  1: @"m"
}
change modified @"m.f" lines [2:3]
changed_file "c.cu" modified {category = "native"}
)";
  DiagnosticEngine diag;
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "s.fir"));
  std::unique_ptr<Module> module = parseModuleText(id, diag);
  EXPECT_TRUE(module);
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  writeModuleBytecode(*module, os);
  return bytes;
}
} // namespace

TEST(BytecodeTest, IntactFileDecodes) {
  EXPECT_TRUE(readBytecode(sampleBytecode()));
}

TEST(BytecodeTest, EveryTruncationIsAnError) {
  std::string bytes = sampleBytecode();
  for (size_t length = 0; length < bytes.size(); ++length)
    EXPECT_FALSE(readBytecode(llvm::StringRef(bytes).take_front(length)))
        << "prefix of " << length << " bytes decoded";
}

TEST(BytecodeTest, EveryByteCorruptionIsHandled) {
  std::string bytes = sampleBytecode();
  for (size_t offset = 0; offset < bytes.size(); ++offset) {
    for (unsigned value = 0; value < 256; ++value) {
      std::string mutant = bytes;
      mutant[offset] = static_cast<char>(value);
      readBytecode(mutant); // Must not crash; the result may go either way.
    }
  }
}
