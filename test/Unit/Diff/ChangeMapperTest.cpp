//===- ChangeMapperTest.cpp - Unit tests of diff-to-entity mapping --------===//
//
// Builds small old and new modules by hand and checks which entities a diff
// marks, and how: innermost entity, decorators (multi-line ones placed from
// the file's text), cosmetic changes by hash, renames and moves paired by
// hash (the analyzer leaves a definition's own name out of its hash),
// renames with edits paired by body similarity, the added and removed lines
// of each change, and policy decisions for other files.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangeMapper.h"
#include "fastci/Python/Analyzer.h"
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

  /// Supplies new files' text to the mapper when set.
  SourceReader reader;

  /// Maps \p diff; \p withOld decides whether the old module is known.
  void run(llvm::StringRef diff, bool withOld = true) {
    Patch patch;
    unsigned policyId = diag.addBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(kPolicy, "policy.yaml"));
    unsigned diffId =
        diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(diff, "x.diff"));
    ok = succeeded(ChangePolicy::parse(policyId, diag, policy)) &&
         succeeded(parseUnifiedDiff(diffId, diag, patch));
    if (!ok)
      return;
    ChangeMapper mapper(module, policy, diag, withOld ? &old : nullptr);
    mapper.setNewSourceReader(reader);
    ok = succeeded(mapper.map(patch));
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

TEST(ChangeMapperTest, RenamedClassMovesItsUntouchedMembers) {
  MapResult result;
  addFile(result.module, "pkg/m.py", "pkg.m", 10, 20);
  addFile(result.old, "pkg/m.py", "pkg.m", 10, 20);
  // The old class was `Old` (7-12) with method `Old.g`; only its header
  // line changed, so g's lines are untouched but its symbol is new.
  result.old.getEntity(3).symbol = result.old.intern("pkg.m.Old");
  result.old.getEntity(4).symbol = result.old.intern("pkg.m.Old.g");
  result.run(hunkAt(7, "class Old:", "class C:"));
  ASSERT_TRUE(result.ok) << result.errors;
  EXPECT_EQ(result.summary(), "renamed pkg.m.C from pkg.m.Old\n"
                              "moved pkg.m.C.g from pkg.m.Old.g\n");
  // The rename reports its own added line and its old self's removed one.
  const Change &renamed = result.module.getChanges()[0];
  EXPECT_EQ(renamed.lines, (std::vector<LineRange>{{7, 7}}));
  EXPECT_EQ(renamed.attrs.get("removed_lines"),
            Attribute::getStringList({"7:7"}));
}

TEST(ChangeMapperTest, AnalyzerLeavesOwnNamesOutOfHashes) {
  using python::analyzePythonSource;
  auto hashOf = [](const python::FileSummary &summary, llvm::StringRef name) {
    for (const python::EntitySummary &entity : summary.entities)
      if (entity.qualname == name)
        return entity.hash;
    ADD_FAILURE() << "no entity " << name.str();
    return uint64_t(0);
  };
  python::FileSummary a = analyzePythonSource(
      "@dec\nclass A:\n    def m(self):\n        return 1\n", "m.py", "m");
  python::FileSummary b = analyzePythonSource(
      "@dec\nclass B:\n    def n(self):\n        return 1\n", "m.py", "m");
  python::FileSummary c = analyzePythonSource(
      "@dec\nclass B:\n    def n(self):\n        return 2\n", "m.py", "m");
  // A renamed class or method keeps its hash: the symbol carries the name.
  EXPECT_EQ(hashOf(a, "A.m"), hashOf(b, "B.n"));
  EXPECT_NE(hashOf(b, "B.n"), hashOf(c, "B.n"));
  // The parent still names its children, so renaming one changes it.
  EXPECT_NE(hashOf(a, "A"), hashOf(b, "B"));
  EXPECT_EQ(hashOf(b, "B"), hashOf(c, "B"));
  EXPECT_NE(a.moduleHash, b.moduleHash);
  // Other identifiers, and uses of the name inside the body, still count.
  python::FileSummary f =
      analyzePythonSource("def f(n):\n    return f(n)\n", "m.py", "m");
  python::FileSummary g =
      analyzePythonSource("def g(n):\n    return g(n)\n", "m.py", "m");
  python::FileSummary h =
      analyzePythonSource("def h(n):\n    return f(n)\n", "m.py", "m");
  EXPECT_NE(hashOf(f, "f"), hashOf(g, "g"));
  EXPECT_EQ(hashOf(f, "f"), hashOf(h, "h"));
}

TEST(ChangeMapperTest, FindDecoratorStartCoversMultiLineDecorators) {
  const char *text = "import pytest\n"             // 1
                     "X = 1\n"                     // 2
                     "@pytest.mark.parametrize(\n" // 3
                     "    \"x\", [\n"              // 4
                     "        1,\n"                // 5
                     "        2])\n"               // 6
                     "# a comment\n"               // 7
                     "@torch.no_grad(\n"           // 8
                     ")\n"                         // 9
                     "def f(x):\n"                 // 10
                     "    return x\n"              // 11
                     "class C:\n"                  // 12
                     "    @staticmethod\n"         // 13
                     "    def g():\n"              // 14
                     "        @inner(\n"           // 15
                     "@x)\n"                       // 16
                     "        def h(): pass\n";    // 17
  EXPECT_EQ(findDecoratorStart(text, 10, 2), 3u);
  EXPECT_EQ(findDecoratorStart(text, 10, 1), 8u);
  EXPECT_EQ(findDecoratorStart(text, 14, 1), 13u);
  // `@` at another indentation (a matrix product, an argument) is not a
  // decorator of h.
  EXPECT_EQ(findDecoratorStart(text, 17, 1), 15u);
  EXPECT_EQ(findDecoratorStart(text, 10, 3), std::nullopt);
  EXPECT_EQ(findDecoratorStart(text, 99, 1), std::nullopt);
  // A text that does not start a definition there is not the entity's.
  EXPECT_EQ(findDecoratorStart(text, 11, 1), std::nullopt);
}

TEST(ChangeMapperTest, MultiLineDecoratorChangesTheFunction) {
  // f (lines 6-7) has two decorators spanning lines 2-5; line 1 is module
  // code. A change on line 3, inside the first decorator's arguments, is
  // f's only when the mapper can read the file; otherwise one line per
  // decorator (4-5) is all f claims, and line 3 falls to the module.
  const char *text = "X = 1\n"
                     "@pytest.mark.parametrize(\n"
                     "    \"x\", [1,\n"
                     "              2])\n"
                     "@torch.no_grad()\n"
                     "def f(x):\n"
                     "    return x\n";
  auto build = [](Module &module, uint64_t fHash) {
    EntityId file = module.addEntity(EntityKind::File, "pkg/m.py");
    EntityId mod =
        module.addEntity(EntityKind::Module, "pkg.m", file, {1, 0, 7, 0}, 1);
    EntityId f = module.addEntity(EntityKind::Function, "pkg.m.f", mod,
                                  {6, 0, 7, 0}, fHash);
    module.getEntity(f).attrs.set(
        "decorators",
        Attribute::getStringList({"pytest.mark.parametrize", "torch.no_grad"}));
  };
  std::string diff = hunkAt(3, "    \"x\", [0,", "    \"x\", [1,");

  MapResult withText;
  build(withText.module, 10);
  build(withText.old, 11);
  withText.reader = [&](llvm::StringRef path) -> std::optional<std::string> {
    EXPECT_EQ(path, "pkg/m.py");
    return std::string(text);
  };
  // The old side knows its decorators' first line from `decorator_line`.
  withText.old.getEntity(2).attrs.set("decorator_line", Attribute::getInt(2));
  withText.run(diff);
  ASSERT_TRUE(withText.ok) << withText.errors;
  EXPECT_EQ(withText.summary(), "modified pkg.m.f\n");

  MapResult withoutText;
  build(withoutText.module, 10);
  build(withoutText.old, 11);
  withoutText.run(diff);
  ASSERT_TRUE(withoutText.ok) << withoutText.errors;
  EXPECT_EQ(withoutText.summary(), "cosmetic pkg.m\n");
}

TEST(ChangeMapperTest, ChangesReportAddedAndRemovedLines) {
  MapResult result;
  addFile(result.module, "pkg/m.py", "pkg.m", 11, 20);
  addFile(result.old, "pkg/m.py", "pkg.m", 10, 21);
  // f (3-5): old line 4 replaced by new lines 4-5. g (9-10): only loses
  // old line 10 (the diff's second hunk; new numbering is one line ahead).
  result.run("diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n"
             "+++ b/pkg/m.py\n@@ -4,2 +4,3 @@\n-a\n+b\n+c\n d\n"
             "@@ -10 +10,0 @@\n-x\n");
  ASSERT_TRUE(result.ok) << result.errors;
  ASSERT_EQ(result.summary(), "modified pkg.m.f\nmodified pkg.m.C.g\n");
  const Change &f = result.module.getChanges()[0];
  EXPECT_EQ(f.lines, (std::vector<LineRange>{{4, 5}}));
  EXPECT_EQ(f.attrs.get("removed_lines"), Attribute::getStringList({"4:4"}));
  const Change &g = result.module.getChanges()[1];
  EXPECT_TRUE(g.lines.empty());
  EXPECT_EQ(g.attrs.get("removed_lines"), Attribute::getStringList({"10:10"}));

  // Without the old file, the removal is attributed to the new entities
  // around it, still in old-file numbers.
  MapResult unknown;
  addFile(unknown.module, "pkg/m.py", "pkg.m", 11, 20);
  unknown.run(hunkAt(4, "a", "b"), /*withOld=*/false);
  ASSERT_TRUE(unknown.ok) << unknown.errors;
  ASSERT_EQ(unknown.summary(), "modified pkg.m.f\n");
  EXPECT_EQ(unknown.module.getChanges()[0].lines,
            (std::vector<LineRange>{{4, 4}}));
  EXPECT_EQ(unknown.module.getChanges()[0].attrs.get("removed_lines"),
            Attribute::getStringList({"4:4"}));
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

TEST(ChangeMapperTest, BodySimilarityComparesNormalizedTokens) {
  // A pure rename, recursion through the own name included, is identical.
  EXPECT_EQ(getBodySimilarity("def f(n):\n    return f(n - 1)\n", "f",
                              "def g(n):\n    return g(n - 1)\n", "g"),
            1.0);
  // Comments and layout do not count; a `#` inside a string is no comment.
  EXPECT_EQ(getBodySimilarity("def f(x):  # old\n    return '#' + x\n", "f",
                              "def g( x ):\n\n    return '#'+x  # new\n", "g"),
            1.0);
  // A string is one token, quotes and all, even spanning lines.
  EXPECT_LT(getBodySimilarity("x = '''a b'''", "", "x = '''a c'''", ""), 1.0);
  EXPECT_EQ(getBodySimilarity("x = '''a\n#b'''", "", "x = '''a\n#b'''", ""),
            1.0);
  // Multiset Jaccard: `def N ( x ) : return x + 1` against the same ending
  // in `2`: 9 tokens in common of 11.
  EXPECT_DOUBLE_EQ(getBodySimilarity("def f(x):\n    return x + 1\n", "f",
                                     "def g(x):\n    return x + 2\n", "g"),
                   9.0 / 11.0);
  // The own name of one side is not the other's.
  EXPECT_LT(
      getBodySimilarity("def f(): return f", "f", "def g(): return f", "g"),
      1.0);
  EXPECT_EQ(getBodySimilarity("", "f", "  # only a comment\n", "g"), 0.0);
  // Unterminated strings end at the line (or the text) without overrunning.
  EXPECT_GT(getBodySimilarity("x = 'abc\ny = 1", "", "x = 'abc\ny = 2", ""),
            0.0);
  EXPECT_EQ(getBodySimilarity("'''", "", "'''", ""), 1.0);
}

/// Adds the Python file \p path, module \p name, parsed from \p text, to
/// \p module, as parse-python and mark-changed do.
void addPythonFile(Module &module, llvm::StringRef path, llvm::StringRef name,
                   llvm::StringRef text) {
  python::FileSummary summary = python::analyzePythonSource(text, path, name);
  EntityId file = module.addEntity(EntityKind::File, path);
  EntityId mod = module.addEntity(EntityKind::Module, name, file,
                                  {1, 0, std::max(summary.numLines, 1u), 0},
                                  summary.moduleHash);
  std::vector<EntityId> ids;
  for (const python::EntitySummary &entity : summary.entities)
    ids.push_back(module.addEntity(
        entity.kind, (name + "." + entity.qualname).str(),
        entity.parent == python::kModuleScope ? mod : ids[entity.parent],
        entity.range, entity.hash));
}

/// A diff of `pkg/m.py` replacing all of \p oldText with all of \p newText.
std::string replaceAll(llvm::StringRef oldText, llvm::StringRef newText) {
  llvm::SmallVector<llvm::StringRef> oldLines, newLines;
  oldText.rtrim('\n').split(oldLines, '\n');
  newText.rtrim('\n').split(newLines, '\n');
  std::string diff = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n"
                     "+++ b/pkg/m.py\n@@ -1," +
                     std::to_string(oldLines.size()) + " +1," +
                     std::to_string(newLines.size()) + " @@\n";
  for (llvm::StringRef line : oldLines)
    diff += "-" + line.str() + "\n";
  for (llvm::StringRef line : newLines)
    diff += "+" + line.str() + "\n";
  return diff;
}

/// Maps a diff from \p oldText to \p newText of `pkg/m.py`, the new text
/// readable (and the old one when \p withOldReader), at \p threshold.
void runRenamed(MapResult &result, llvm::StringRef oldText,
                llvm::StringRef newText, double threshold,
                bool withOldReader = true) {
  addPythonFile(result.module, "pkg/m.py", "pkg.m", newText);
  addPythonFile(result.old, "pkg/m.py", "pkg.m", oldText);
  std::string newCopy = newText.str(), oldCopy = oldText.str();
  Patch patch;
  unsigned policyId = result.diag.addBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(kPolicy, "policy.yaml"));
  unsigned diffId = result.diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(
      replaceAll(oldText, newText), "x.diff"));
  result.ok =
      succeeded(ChangePolicy::parse(policyId, result.diag, result.policy)) &&
      succeeded(parseUnifiedDiff(diffId, result.diag, patch));
  if (!result.ok)
    return;
  ChangeMapper mapper(result.module, result.policy, result.diag, &result.old);
  mapper.setNewSourceReader(
      [newCopy](llvm::StringRef) -> std::optional<std::string> {
        return newCopy;
      });
  if (withOldReader)
    mapper.setOldSourceReader(
        [oldCopy](llvm::StringRef) -> std::optional<std::string> {
          return oldCopy;
        });
  mapper.setRenameSimilarity(threshold);
  result.ok = succeeded(mapper.map(patch));
  EXPECT_EQ(mapper.getStats().editedMoves,
            unsigned(llvm::count_if(
                result.module.getChanges(), [](const Change &change) {
                  return change.attrs.lookup("similarity") != nullptr;
                })));
}

TEST(ChangeMapperTest, RenamedAndEditedPairBestFirst) {
  // h is most like a (12 of 14 tokens), g like a (10 of 12) and less like b
  // (7 of 11): best first, h takes a and g gets b. Taking the added ones
  // in diff order would give g a and leave h and b unpaired (7 of 15).
  const char *oldText = "def a(p):\n    return x + y + z\n\n\n"
                        "def b(p):\n    return w\n";
  const char *newText = "def g(p):\n    return x + y\n\n\n"
                        "def h(p):\n    return x + y + z + q\n";
  MapResult result;
  runRenamed(result, oldText, newText, 0.5);
  ASSERT_TRUE(result.ok) << result.errors;
  EXPECT_EQ(result.summary(), "renamed pkg.m.g from pkg.m.b\n"
                              "renamed pkg.m.h from pkg.m.a\n");
  const Change &g = result.module.getChanges()[0];
  EXPECT_EQ(g.attrs.get("modified"), Attribute::getBool(true));
  EXPECT_EQ(g.attrs.get("similarity"), Attribute::getInt(64));
  EXPECT_EQ(g.attrs.get("removed_lines"), Attribute::getStringList({"5:6"}));

  // Above g's similarity to b, only h pairs.
  MapResult strict;
  runRenamed(strict, oldText, newText, 0.7);
  ASSERT_TRUE(strict.ok) << strict.errors;
  EXPECT_EQ(strict.summary(), "deleted pkg.m.b\nadded pkg.m.g\n"
                              "renamed pkg.m.h from pkg.m.a\n");

  // Off.
  MapResult off;
  runRenamed(off, oldText, newText, 0);
  ASSERT_TRUE(off.ok) << off.errors;
  EXPECT_EQ(off.summary(), "deleted pkg.m.a\ndeleted pkg.m.b\n"
                           "added pkg.m.g\nadded pkg.m.h\n");

  // Without an old text reader, the old text is rebuilt from the new one
  // and the diff: the same pairs.
  MapResult rebuilt;
  runRenamed(rebuilt, oldText, newText, 0.5, /*withOldReader=*/false);
  ASSERT_TRUE(rebuilt.ok) << rebuilt.errors;
  EXPECT_EQ(rebuilt.summary(), result.summary());
}

TEST(ChangeMapperTest, RenamedAndEditedTiesFollowDiffOrder) {
  // a and b are equally like g (their hashes differ: `1` and `2`).
  MapResult result;
  runRenamed(result, "def a():\n    return 1\n\n\ndef b():\n    return 2\n",
             "def g():\n    return 3\n", 0.5);
  ASSERT_TRUE(result.ok) << result.errors;
  EXPECT_EQ(result.summary(),
            "deleted pkg.m.b\nrenamed pkg.m.g from pkg.m.a\n");
}

TEST(ChangeMapperTest, RenamedAndEditedNeedsTheSameScopeAndKind) {
  // A method does not pair with a function, nor with a method of another
  // class that was not itself paired; a class does not pair with a function.
  MapResult result;
  runRenamed(result,
             "class A:\n    def m(self, v):\n        return v + 1\n\n\n"
             "class K:\n    pass\n",
             "def n(self, v):\n    return v + 2\n\n\n"
             "def K2():\n    pass\n\n\n"
             "class Other:\n    x = [1, 2, 3, 4, 5]\n\n    def m2(self, v):\n"
             "        return v + 3\n",
             0.5);
  ASSERT_TRUE(result.ok) << result.errors;
  EXPECT_EQ(result.summary(), "deleted pkg.m.A\ndeleted pkg.m.A.m\n"
                              "deleted pkg.m.K\nadded pkg.m.n\n"
                              "added pkg.m.K2\nadded pkg.m.Other\n"
                              "added pkg.m.Other.m2\n");

  // Within a class paired first, its edited method pairs as moved.
  MapResult nested;
  runRenamed(nested,
             "class A:\n    x = 1\n\n    def m(self, v):\n"
             "        return v + 1\n",
             "class B:\n    x = 2\n\n    def m(self, v):\n"
             "        return v + 2\n",
             0.5);
  ASSERT_TRUE(nested.ok) << nested.errors;
  EXPECT_EQ(nested.summary(), "renamed pkg.m.B from pkg.m.A\n"
                              "moved pkg.m.B.m from pkg.m.A.m\n");
}

TEST(ChangeMapperTest, ModuleNamesFollowSourceRoots) {
  Module module;
  EntityId file = module.addEntity(EntityKind::File, "src/pkg/a.py");
  module.addEntity(EntityKind::Module, "pkg.a", file);
  EXPECT_EQ(getModuleNameForPath(module, "src/pkg/b/__init__.py"), "pkg.b");
  EXPECT_EQ(getModuleNameForPath(module, "tools/x.py"), "tools.x");
}

} // namespace
