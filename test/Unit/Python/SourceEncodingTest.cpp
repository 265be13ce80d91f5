//===- SourceEncodingTest.cpp - PEP 263 declarations and decoding ---------===//
//
// Expected results are what CPython 3.11's tokenizer and codecs do with the
// same bytes.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/SourceEncoding.h"
#include "fastci/Python/Analyzer.h"
#include "gtest/gtest.h"

using namespace fastci::python;

TEST(SourceEncodingTest, Declarations) {
  auto name = [](llvm::StringRef source) {
    std::optional<EncodingDeclaration> found = findEncodingDeclaration(source);
    return found ? found->name + "@" + std::to_string(found->line)
                 : std::string("-");
  };
  EXPECT_EQ(name("# -*- coding: latin-1 -*-\n"), "latin-1@1");
  EXPECT_EQ(name("#!/usr/bin/python\n# vim: set fileencoding=cp1252 :\n"),
            "cp1252@2");
  EXPECT_EQ(name("\n# coding=utf8\n"), "utf8@2");
  // The second line counts only after a comment or a blank line.
  EXPECT_EQ(name("import os\n# coding: latin-1\n"), "-");
  // Not a comment, or no name after the colon.
  EXPECT_EQ(name("x = 1  # coding: latin-1\n"), "-");
  EXPECT_EQ(name("# coding: \n"), "-");
  EXPECT_EQ(name("# decoding: latin-1\n"), "latin-1@1");
  EXPECT_EQ(name("# a\n# b\n# coding: latin-1\n"), "-");
}

TEST(SourceEncodingTest, Aliases) {
  EXPECT_EQ(lookupSourceEncoding("latin-1"), SourceEncoding::Latin1);
  EXPECT_EQ(lookupSourceEncoding("ISO_8859_1"), SourceEncoding::Latin1);
  EXPECT_EQ(lookupSourceEncoding("iso-latin-1-unix"), SourceEncoding::Latin1);
  EXPECT_EQ(lookupSourceEncoding("L1"), SourceEncoding::Latin1);
  EXPECT_EQ(lookupSourceEncoding("windows-1252"), SourceEncoding::Cp1252);
  EXPECT_EQ(lookupSourceEncoding("CP1252"), SourceEncoding::Cp1252);
  EXPECT_EQ(lookupSourceEncoding("utf-8-unix"), SourceEncoding::Utf8);
  EXPECT_EQ(lookupSourceEncoding("UTF8"), SourceEncoding::Utf8);
  EXPECT_EQ(lookupSourceEncoding("ascii"), SourceEncoding::Utf8);
  EXPECT_EQ(lookupSourceEncoding("euc-jp"), SourceEncoding::Unsupported);
  EXPECT_EQ(lookupSourceEncoding("latin-2"), SourceEncoding::Unsupported);
}

TEST(SourceEncodingTest, Decoding) {
  std::vector<FileWarning> warnings;
  // Undeclared and UTF-8 files are left alone (no copy).
  EXPECT_FALSE(decodePythonSource("x = 'caf\xc3\xa9'\n", warnings));
  EXPECT_FALSE(decodePythonSource("# coding: utf-8\nx = 1\n", warnings));
  std::optional<std::string> latin =
      decodePythonSource("# coding: latin-1\nx = '\xe9\x80'\n", warnings);
  ASSERT_TRUE(latin);
  EXPECT_EQ(*latin, "# coding: latin-1\nx = '\xc3\xa9\xc2\x80'\n");
  std::optional<std::string> cp =
      decodePythonSource("# coding: cp1252\nx = '\x80\x93'\n", warnings);
  ASSERT_TRUE(cp);
  EXPECT_EQ(*cp, "# coding: cp1252\nx = '\xe2\x82\xac\xe2\x80\x9c'\n");
  EXPECT_TRUE(warnings.empty());

  EXPECT_FALSE(decodePythonSource("# coding: big5\n", warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].line, 1u);
  EXPECT_EQ(warnings[0].message,
            "unsupported source encoding 'big5'; file analysed as raw bytes");
}

TEST(SourceEncodingTest, AnalyzerDecodes) {
  FileSummary summary = analyzePythonSource(
      "# coding: latin-1\nclass \xc9t\xe9:\n    pass\n", "m.py", "m");
  ASSERT_EQ(summary.entities.size(), 1u);
  EXPECT_EQ(summary.entities[0].qualname, "\xc3\x89t\xc3\xa9");
  EXPECT_TRUE(summary.warnings.empty());
}
