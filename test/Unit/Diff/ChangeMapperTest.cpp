//===- ChangeMapperTest.cpp - Unit tests of diff-to-entity mapping --------===//
//
// Builds small old and new modules by hand and checks which entities a diff
// marks, and how: innermost entity, decorators, cosmetic changes by hash,
// renames and moves paired by hash, and policy decisions for other files.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangeMapper.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

constexpr const char *kPolicy = R"(
rules:
  - {match: "*.md", category: docs, action: ignore}
  - {match: "*.py", action: python}
  - {match: "*.yaml", category: config, action: tests}
  - {match: "*.cu", category: native, action: extension}
)";

/// Adds `pkg/m.py` with f (lines 3-5, decorated at 2), class C (7-12) with
/// method g (9-10) to \p module. Hashes are parameters so that tests can make
/// versions differ.
void addFile(Module &module, llvm::StringRef path, llvm::StringRef name,
             uint64_t fHash, uint64_t gHash) {
  EntityId file = module.addEntity(EntityKind::File, path);
  EntityId mod = module.addEntity(EntityKind::Module, name, file,
                                  {1, 0, 12, 0}, 1);
  EntityId f = module.addEntity(EntityKind::Function, (name + ".f").str(), mod,
                                {3, 0, 5, 0}, fHash);
  module.getEntity(f).attrs.set("decorators",
                                Attribute::getStringList({"cache"}));
  EntityId c = module.addEntity(EntityKind::Class, (name + ".C").str(), mod,
                                {7, 0, 12, 0}, 3);
  module.addEntity(EntityKind::Function, (name + ".C.g").str(), c,
                   {9, 0, 10, 0}, gHash);
}

struct MapResult {
  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  DiagnosticEngine diag{&errorStream};
  Module module;
  Module old;
  ChangePolicy policy;
  bool ok = false;

  /// Maps \p diff; \p withOld decides whether the old module is known.
  void run(llvm::StringRef diff, bool withOld = true) {
    Patch patch;
    unsigned policyId = diag.addBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(kPolicy, "policy.yaml"));
    unsigned diffId =
        diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(diff, "x.diff"));
    ok = succeeded(ChangePolicy::parse(policyId, diag, policy)) &&
         succeeded(parseUnifiedDiff(diffId, diag, patch)) &&
         succeeded(ChangeMapper(module, policy, diag, withOld ? &old : nullptr)
                       .map(patch));
  }

  std::string summary() const {
    std::string text;
    for (const Change &change : module.getChanges()) {
      text += (stringifyChangeKind(change.kind) + " " + change.symbol).str();
      if (Attribute from = change.attrs.get("moved_from"))
        text += " from " + from.getString().str();
      text += "\n";
    }
    return text;
  }
};

std::string hunkAt(unsigned line, llvm::StringRef oldText,
                   llvm::StringRef newText) {
  return "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n"
         "@@ -" + std::to_string(line) + " +" + std::to_string(line) +
         " @@\n-" + oldText.str() + "\n+" + newText.str() + "\n";
}

TEST(ChangeMapperTest, InnermostEntityAndHashes) {
  MapResult result;
  addFile(result.module, "pkg/m.py", "pkg.m", 10, 20);
  addFile(result.old, "pkg/m.py", "pkg.m", 10, 21);
  // Line 9 is in C.g (modified: hash differs), line 4 in f (cosmetic), line 8
  // in C outside g, line 2 is f's decorator.
  std::string diff = hunkAt(9, "a", "b");
  result.run(diff);
  ASSERT_TRUE(result.ok) << result.errors;
  EXPECT_EQ(result.summary(), "modified pkg.m.C.g\n");

  MapResult cosmetic;
  addFile(cosmetic.module, "pkg/m.py", "pkg.m", 10, 20);
  addFile(cosmetic.old, "pkg/m.py", "pkg.m", 10, 20);
  cosmetic.run(hunkAt(4, "x  = 1", "x = 1"));
  EXPECT_EQ(cosmetic.summary(), "cosmetic pkg.m.f\n");

  MapResult decorator;
  addFile(decorator.module, "pkg/m.py", "pkg.m", 10, 20);
  addFile(decorator.old, "pkg/m.py", "pkg.m", 10, 20);
  decorator.old.getEntity(2).attrs.set("decorators",
                                       Attribute::getStringList({"other"}));
  decorator.run(hunkAt(2, "@other", "@cache"));
  EXPECT_EQ(decorator.summary(), "modified pkg.m.f\n");

  MapResult classAttr;
  addFile(classAttr.module, "pkg/m.py", "pkg.m", 10, 20);
  classAttr.run(hunkAt(8, "x = 1", "x = 2"), /*withOld=*/false);
  EXPECT_EQ(classAttr.summary(), "modified pkg.m.C\n");
}

TEST(ChangeMapperTest, RenameAndMovePairedByHash) {
  MapResult result;
  addFile(result.module, "pkg/m.py", "pkg.m", 10, 20);
  addFile(result.old, "pkg/m.py", "pkg.m", 10, 20);
  // Old version had `h` at 3-5 where the new one has `f`, same body.
  result.old.getEntity(2).symbol = result.old.intern("pkg.m.h");
  result.run(hunkAt(3, "def h():", "def f():"));
  ASSERT_TRUE(result.ok) << result.errors;
  EXPECT_EQ(result.summary(), "renamed pkg.m.f from pkg.m.h\n");
}

TEST(ChangeMapperTest, NonPythonFilesFollowThePolicy) {
  MapResult result;
  addFile(result.module, "pkg/m.py", "pkg.m", 10, 20);
  TestId t = result.module.addTest("tests/test_a.py::test_cfg");
  result.module.getTest(t).attrs.set(
      "args", Attribute::getString("--config configs/gpt.yaml"));
  result.module.addTest("tests/test_a.py::test_other");
  result.run("diff --git a/README.md b/README.md\n--- a/README.md\n"
             "+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n"
             "diff --git a/configs/gpt.yaml b/configs/gpt.yaml\n"
             "--- a/configs/gpt.yaml\n+++ b/configs/gpt.yaml\n"
             "@@ -1 +1 @@\n-a\n+b\n"
             "diff --git a/csrc/k.cu b/csrc/k.cu\n--- a/csrc/k.cu\n"
             "+++ b/csrc/k.cu\n@@ -1 +1 @@\n-a\n+b\n"
             "diff --git a/x.bin b/x.bin\nBinary files a/x.bin and b/x.bin "
             "differ\n");
  ASSERT_TRUE(result.ok) << result.errors;
  auto files = result.module.getChangedFiles();
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0].attrs.get("decision").getString(), "ignore");
  EXPECT_EQ(files[1].attrs.get("decision").getString(), "tests");
  EXPECT_EQ(files[1].attrs.get("tests").getList().size(), 1u);
  EXPECT_EQ(files[2].attrs.get("decision").getString(), "all");
  EXPECT_EQ(files[3].attrs.get("decision").getString(), "all");
  EXPECT_EQ(files[3].attrs.get("category").getString(), "unknown");
  EXPECT_TRUE(result.module.getAttrs().get("policy_all").getBool());
  EXPECT_EQ(
      result.module.getAttrs().get("policy_all_reasons").getList().size(), 2u);
}

TEST(ChangeMapperTest, ModuleNamesFollowSourceRoots) {
  Module module;
  EntityId file = module.addEntity(EntityKind::File, "src/pkg/a.py");
  module.addEntity(EntityKind::Module, "pkg.a", file);
  EXPECT_EQ(getModuleNameForPath(module, "src/pkg/b/__init__.py"), "pkg.b");
  EXPECT_EQ(getModuleNameForPath(module, "tools/x.py"), "tools.x");
}

} // namespace
