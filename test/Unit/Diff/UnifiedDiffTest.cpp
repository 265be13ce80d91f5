//===- UnifiedDiffTest.cpp - Unit tests of the unified diff reader --------===//
//
// Exercises the reader on the shapes `git diff` produces and on the malformed
// inputs it must reject with a located error, and checks that the old file
// is rebuilt exactly from the new one for any context size.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/UnifiedDiff.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

/// Parses \p text as `test.diff`, keeping the engine (and so the buffer and
/// the lines pointing into it) alive as long as the fixture.
struct ParsedDiff {
  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  DiagnosticEngine diag{&errorStream};
  Patch patch;
  bool ok = false;

  explicit ParsedDiff(llvm::StringRef text) {
    unsigned id = diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "test.diff"));
    ok = succeeded(parseUnifiedDiff(id, diag, patch));
  }
};

TEST(UnifiedDiffTest, ModifiedFileWithContext) {
  ParsedDiff parsed("diff --git a/pkg/m.py b/pkg/m.py\n"
                    "index 1111111..2222222 100644\n"
                    "--- a/pkg/m.py\n"
                    "+++ b/pkg/m.py\n"
                    "@@ -1,3 +1,4 @@ def f():\n"
                    " a\n"
                    "-b\n"
                    "+B\n"
                    "+C\n"
                    " c\n");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  ASSERT_EQ(parsed.patch.files.size(), 1u);
  const FileDiff &file = parsed.patch.files[0];
  EXPECT_EQ(file.oldPath, "pkg/m.py");
  EXPECT_EQ(file.newPath, "pkg/m.py");
  EXPECT_EQ(file.status, FileStatus::Modified);
  ASSERT_EQ(file.hunks.size(), 1u);
  const Hunk &hunk = file.hunks[0];
  ASSERT_EQ(hunk.lines.size(), 5u);
  EXPECT_EQ(hunk.lines[1].kind, '-');
  EXPECT_EQ(hunk.lines[1].oldLine, 2u);
  EXPECT_EQ(hunk.lines[3].kind, '+');
  EXPECT_EQ(hunk.lines[3].newLine, 3u);
  EXPECT_EQ(hunk.lines[4].oldLine, 3u);
  EXPECT_EQ(hunk.lines[4].newLine, 4u);
}

TEST(UnifiedDiffTest, ZeroContextInsertion) {
  ParsedDiff parsed("diff --git a/x.py b/x.py\n"
                    "--- a/x.py\n"
                    "+++ b/x.py\n"
                    "@@ -5,0 +6,2 @@\n"
                    "+p\n"
                    "+q\n"
                    "@@ -9 +11 @@\n"
                    "-r\n"
                    "+s\n");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  const FileDiff &file = parsed.patch.files[0];
  ASSERT_EQ(file.hunks.size(), 2u);
  EXPECT_EQ(file.hunks[0].lines[0].newLine, 6u);
  EXPECT_EQ(file.hunks[1].oldCount, 1u);
  EXPECT_EQ(file.hunks[1].lines[0].oldLine, 9u);
  EXPECT_EQ(file.hunks[1].lines[1].newLine, 11u);
}

TEST(UnifiedDiffTest, RenameModeBinaryAndNewFiles) {
  ParsedDiff parsed("diff --git a/old.py b/new.py\n"
                    "similarity index 100%\n"
                    "rename from old.py\n"
                    "rename to new.py\n"
                    "diff --git a/run.sh b/run.sh\n"
                    "old mode 100644\n"
                    "new mode 100755\n"
                    "diff --git a/img.png b/img.png\n"
                    "index 1111111..2222222 100644\n"
                    "GIT binary patch\n"
                    "literal 5\n"
                    "McmZ?wbhEMm\n"
                    "\n"
                    "literal 3\n"
                    "KcmZ?wbg%ab\n"
                    "\n"
                    "diff --git a/gone.txt b/gone.txt\n"
                    "deleted file mode 100644\n"
                    "index 1111111..0000000\n"
                    "Binary files a/gone.txt and /dev/null differ\n"
                    "diff --git \"a/caf\\303\\251 x.py\" \"b/caf\\303\\251 x.py\"\n"
                    "new file mode 100644\n"
                    "--- /dev/null\n"
                    "+++ \"b/caf\\303\\251 x.py\"\n"
                    "@@ -0,0 +1 @@\n"
                    "+x = 1\n"
                    "\\ No newline at end of file\n");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  ASSERT_EQ(parsed.patch.files.size(), 5u);
  const auto &files = parsed.patch.files;
  EXPECT_EQ(files[0].status, FileStatus::Renamed);
  EXPECT_EQ(files[0].oldPath, "old.py");
  EXPECT_EQ(files[0].newPath, "new.py");
  EXPECT_EQ(files[0].similarity, 100u);
  EXPECT_TRUE(files[1].isModeChangeOnly());
  EXPECT_EQ(*files[1].newMode, 0100755u);
  EXPECT_TRUE(files[2].isBinary);
  EXPECT_EQ(files[3].status, FileStatus::Deleted);
  EXPECT_EQ(files[3].getPath(), "gone.txt");
  EXPECT_EQ(files[4].status, FileStatus::Added);
  EXPECT_EQ(files[4].newPath, "caf\xc3\xa9 x.py");
  EXPECT_TRUE(files[4].newNoNewlineAtEnd);
}

TEST(UnifiedDiffTest, PlainDiffWithTimestamps) {
  ParsedDiff parsed("--- a/f.txt\t2024-01-01 00:00:00\n"
                    "+++ b/f.txt\t2024-01-02 00:00:00\n"
                    "@@ -1 +1 @@\n"
                    "-a\n"
                    "+b\n");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  EXPECT_EQ(parsed.patch.files[0].newPath, "f.txt");
}

TEST(UnifiedDiffTest, EmptyDiff) {
  ParsedDiff parsed("");
  ASSERT_TRUE(parsed.ok);
  EXPECT_TRUE(parsed.patch.files.empty());
}

/// Each malformed diff and the start of the message it must produce.
struct MalformedCase {
  const char *text;
  const char *message;
};

TEST(UnifiedDiffTest, MalformedDiffsAreLocatedErrors) {
  const MalformedCase cases[] = {
      {"hello\n", "test.diff:1:1: error: expected a file header"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n",
       "test.diff:6:1: error: diff ends inside the hunk"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n",
       "test.diff:6:1: error: hunk has more old lines"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -a +1 @@\n",
       "test.diff:4:5: error: expected a number"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1\n",
       "test.diff:4:9: error: expected ' @@'"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -99999999999 +1 @@\n",
       "error: number is too large"},
      {"diff --git a/x b/x\n--- a/x\nfoo\n", "test.diff:3:1: error: expected '+++'"},
      {"diff --git a/x b/x\nwhat is this\n",
       "test.diff:2:1: error: unrecognized line in the header"},
      {"diff --git a/x b/x\nold mode 12x\n",
       "test.diff:2:10: error: expected an octal file mode"},
      {"diff --git a/x b/x\nsimilarity index 120%\n",
       "error: expected a percentage"},
      {"diff --git a/x b/x\nGIT binary patch\nbogus\n",
       "test.diff:3:1: error: expected 'literal <size>'"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
       "@@ -1 +1 @@\n-a\n+b\n",
       "test.diff:7:1: error: hunk overlaps the previous hunk"},
      {"diff --git \"a/x b/x\n", "error: unterminated quoted path"},
      {"diff --git \"a/\\q\" \"b/x\"\n", "error: invalid escape"},
      {"diff --cc x\n", "error: combined (merge) diffs are not supported"},
      {"diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n"
       "@@ -1 +1 @@\n-a\n+b\n",
       "error: hunk removes lines from a new file"},
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n*b\n",
       "test.diff:6:1: error: expected ' ', '+', '-' or '\\'"},
  };
  for (const MalformedCase &c : cases) {
    ParsedDiff parsed(c.text);
    EXPECT_FALSE(parsed.ok) << c.text;
    EXPECT_NE(parsed.errors.find(c.message), std::string::npos)
        << "input:\n" << c.text << "\ngot:\n" << parsed.errors;
  }
}

TEST(UnifiedDiffTest, FileListedTwiceIsAnError) {
  const MalformedCase cases[] = {
      // Two patches of one file concatenated.
      {"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
       "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-b\n+c\n",
       "test.diff:7:1: error: 'x' already has a section in this diff (at "
       "line 1)"},
      // Plain headers; the error is at the second `---`.
      {"--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n--- x\n+++ x\n@@ -1 +1 @@\n-b\n+c\n",
       "test.diff:6:1: error: 'x' already has a section"},
      // Added twice.
      {"diff --git a/x b/x\nnew file mode 100644\n"
       "diff --git a/x b/x\nnew file mode 100644\n",
       "test.diff:3:1: error: 'x' already has a section"},
      // Deleted twice.
      {"diff --git a/x b/x\ndeleted file mode 100644\n"
       "diff --git a/x b/x\ndeleted file mode 100644\n",
       "test.diff:3:1: error: 'x' already has a section"},
      // Renamed away, then modified under its old name.
      {"diff --git a/x b/y\nrename from x\nrename to y\n"
       "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n",
       "test.diff:4:1: error: 'x' already has a section"},
  };
  for (const MalformedCase &c : cases) {
    ParsedDiff parsed(c.text);
    EXPECT_FALSE(parsed.ok) << c.text;
    EXPECT_NE(parsed.errors.find(c.message), std::string::npos)
        << "input:\n"
        << c.text << "\ngot:\n"
        << parsed.errors;
  }

  // Each path once per side: a copy's source modified too, a file renamed
  // away while a new one takes its path, a file deleted while another is
  // renamed to its path.
  ParsedDiff fine("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n"
                  "diff --git a/a b/c\ncopy from a\ncopy to c\n"
                  "diff --git a/a b/d\ncopy from a\ncopy to d\n"
                  "diff --git a/e b/f\nrename from e\nrename to f\n"
                  "diff --git a/e b/e\nnew file mode 100644\n"
                  "diff --git a/g b/g\ndeleted file mode 100644\n"
                  "diff --git a/h b/g\nrename from h\nrename to g\n");
  EXPECT_TRUE(fine.ok) << fine.errors;
  EXPECT_EQ(fine.patch.files.size(), 7u);
}

TEST(UnifiedDiffTest, BinaryGarbageNeverCrashes) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i)
    garbage.push_back(char((i * 7919) % 256));
  ParsedDiff parsed(garbage);
  EXPECT_FALSE(parsed.ok);
  EXPECT_NE(parsed.errors.find("error:"), std::string::npos);
}

TEST(UnifiedDiffTest, ReconstructsOldFileFromNewFile) {
  // -U0: the diff alone shows almost nothing of the old file.
  ParsedDiff parsed("diff --git a/x b/x\n--- a/x\n+++ b/x\n"
                    "@@ -2 +2,2 @@\n-two\n+TWO\n+extra\n"
                    "@@ -4,0 +6 @@\n+six\n");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  const FileDiff &file = parsed.patch.files[0];
  std::optional<std::string> old =
      reconstructOldFile(file, "one\nTWO\nextra\nthree\nfour\nsix\nfive\n");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(*old, "one\ntwo\nthree\nfour\nfive\n");
  EXPECT_FALSE(reconstructOldFileFromDiff(file).has_value());
  // A new file that does not fit the hunks is detected.
  EXPECT_FALSE(reconstructOldFile(file, "one\nXXX\n").has_value());
}

TEST(UnifiedDiffTest, ReconstructsDeletedFileFromDiff) {
  ParsedDiff parsed("diff --git a/x b/x\ndeleted file mode 100644\n"
                    "--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
                    "\\ No newline at end of file\n");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  std::optional<std::string> old =
      reconstructOldFileFromDiff(parsed.patch.files[0]);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(*old, "a\nb");
}

} // namespace
