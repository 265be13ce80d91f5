//===- ModuleTest.cpp - Building, querying and printing modules -----------===//
//
// Unit tests of the Module API as passes use it: building a module in C++,
// attribute access, symbol and test lookup, the stack trie, and the text and
// JSON round trips of a module that never was text.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Parser.h"
#include "fastci/IR/Printer.h"
#include "fastci/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fastci;

namespace {
/// A small, valid module built through the API.
std::unique_ptr<Module> buildModule() {
  auto module = std::make_unique<Module>();
  module->getAttrs().set("revision", Attribute::getString("abc"));
  EntityId file = module->addEntity(EntityKind::File, "pkg/m.py");
  EntityId mod = module->addEntity(EntityKind::Module, "pkg.m", file,
                                   {1, 0, 30, 0}, 0x1234);
  EntityId fn = module->addEntity(EntityKind::Function, "pkg.m.f", mod,
                                  {2, 0, 10, 4}, 0xabcdef);
  module->getEntity(fn).attrs.set("async", Attribute::getBool(true));
  module->addEdge({EdgeKind::Call, fn, kNoEntity, "torch.mm", 5, {}});
  TestId test = module->addTest("tests/t.py::test_f");
  module->getTest(test).entry = fn;
  module->getTest(test).cost = {2, 1.5, 3.0};
  module->getTest(test).attrs.set("selected", Attribute::getBool(false));
  EvidenceRecord &record = module->addEvidence(test);
  record.rate = 99.5;
  FrameId frames[] = {module->getEntityFrame(mod), module->getEntityFrame(fn),
                      module->getLeafFrame("torch.mm")};
  record.samples.push_back({module->getStack(frames), 7});
  module->addChange(ChangeKind::Modified, fn).lines.push_back({3, 4});
  return module;
}

std::string print(const Module &module, ModuleFormat format) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeModule(module, format, os);
  return text;
}

/// Parses \p text through a fresh engine; diagnostics go to \p errors.
std::unique_ptr<Module> parse(llvm::StringRef text, DiagnosticEngine &diag) {
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "in"));
  return parseModule(id, diag);
}
} // namespace

TEST(ModuleTest, LookupAndParents) {
  auto module = buildModule();
  EntityId fn = module->lookupEntity("pkg.m.f");
  ASSERT_NE(fn, kNoEntity);
  EXPECT_EQ(module->getEntity(fn).kind, EntityKind::Function);
  EXPECT_EQ(module->getFilePath(fn), "pkg/m.py");
  EXPECT_EQ(module->lookupEntity("pkg.m.g"), kNoEntity);
  EXPECT_EQ(module->lookupTest("tests/t.py::test_f"), 0u);
  EXPECT_EQ(module->lookupTest("nope"), kNoTest);
  EXPECT_EQ(module->getChanges()[0].file, "pkg/m.py");
}

TEST(ModuleTest, Attributes) {
  AttrDict dict{{"b", Attribute::getInt(2)}, {"a", Attribute::getFloat(0.5)}};
  EXPECT_EQ(dict.begin()->first, "a"); // Sorted by key.
  EXPECT_EQ(dict.get("b").asInt(), 2);
  EXPECT_EQ(dict.get("a").asNumber(), 0.5);
  EXPECT_FALSE(dict.get("c"));
  dict.set("b", Attribute::getString("x"));
  EXPECT_EQ(dict.get("b").asString(), "x");
  EXPECT_TRUE(dict.erase("b"));
  EXPECT_FALSE(dict.contains("b"));
  EXPECT_EQ(Attribute::getFloat(NAN), Attribute::getFloat(NAN));
  EXPECT_EQ(Attribute::getFloat(100.0).str(), "100.0");
  EXPECT_EQ(Attribute::getFloat(0.1).str(), "0.1");
  EXPECT_EQ(Attribute::getFloat(1e300).str(), "1e+300");
}

TEST(ModuleTest, StackTrieSharesPrefixes) {
  Module module;
  FrameId a = module.getLeafFrame("a"), b = module.getLeafFrame("b"),
          c = module.getLeafFrame("c");
  EXPECT_EQ(module.getLeafFrame("a"), a);
  FrameId abc[] = {a, b, c}, ab[] = {a, b};
  StackId s1 = module.getStack(abc);
  StackId s2 = module.getStack(ab);
  EXPECT_EQ(module.getNumStacks(), 3u);
  EXPECT_EQ(module.getStackNode(s1).parent, s2);
  EXPECT_EQ(module.getStackNode(s1).depth, 3u);
  EXPECT_EQ(module.getStack(abc), s1);
  llvm::SmallVector<FrameId> frames;
  module.getStackFrames(s1, frames);
  EXPECT_EQ(frames, llvm::SmallVector<FrameId>({a, b, c}));
}

TEST(ModuleTest, BuiltModuleVerifiesAndRoundTrips) {
  auto module = buildModule();
  DiagnosticEngine diag;
  ASSERT_TRUE(succeeded(verifyModule(*module, diag)));
  for (ModuleFormat format :
       {ModuleFormat::Text, ModuleFormat::JSON, ModuleFormat::Bytecode}) {
    std::string written = print(*module, format);
    DiagnosticEngine readDiag;
    auto reread = parse(written, readDiag);
    ASSERT_TRUE(reread) << written;
    EXPECT_EQ(print(*reread, ModuleFormat::Text),
              print(*module, ModuleFormat::Text));
    EXPECT_EQ(print(*reread, format), written);
  }
}

TEST(ModuleTest, TextLocationsAndSubRanges) {
  std::string text = "file @\"a.py\"\n// -----\nfile @\"b.py\" bogus\n";
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(&os);
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "split.fir"));
  llvm::StringRef buffer = diag.getSourceMgr().getMemoryBuffer(id)->getBuffer();
  auto [first, second] = buffer.split("// -----\n");
  EXPECT_TRUE(parseModuleText(first, diag));
  EXPECT_FALSE(parseModuleText(second, diag));
  // The chunk's error carries the whole file's line number.
  EXPECT_NE(errors.find("split.fir:3:14: error: expected end of line"),
            std::string::npos)
      << errors;
}

TEST(ModuleTest, VerifierNamesConstructsWithoutLocations) {
  auto module = buildModule();
  module->getTest(0).cost.gpus = -1;
  module->addEntity(EntityKind::Module, "pkg.m");
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(&os);
  EXPECT_TRUE(failed(verifyModule(*module, diag)));
  EXPECT_EQ(diag.getNumErrors(), 2u);
  EXPECT_NE(errors.find("module @\"pkg.m\": duplicate symbol @\"pkg.m\""),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("test \"tests/t.py::test_f\": negative cost 'gpus'"),
            std::string::npos)
      << errors;
}
