//===- SourceEncoding.h - PEP 263 source encodings --------------*- C++ -*-===//
//
// CPython reads a source file in the encoding its first or second line
// declares (`# -*- coding: latin-1 -*-`, PEP 263), UTF-8 otherwise, and
// parses the decoded text; `ast` positions are then byte offsets into its
// UTF-8 form. tree-sitter only reads UTF-8, so a file declared in another
// encoding is decoded to UTF-8 first, which keeps entity names, string
// literals (parametrize ids) and columns exactly as CPython sees them.
//
// Latin-1 and cp1252 (the legacy encodings met in practice) are decoded by
// table; UTF-8 and ASCII need no conversion. Any other declared encoding is
// reported and the bytes are analysed as they are.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_SOURCEENCODING_H
#define FASTCI_PYTHON_SOURCEENCODING_H

#include "fastci/Python/FileSummary.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci::python {

/// The encodings FastCI can decode.
enum class SourceEncoding {
  /// UTF-8 (also what ASCII and `utf-8-sig` declarations amount to).
  Utf8,
  /// ISO-8859-1: every byte is the code point of its value.
  Latin1,
  /// Windows-1252: Latin-1 with printable characters in 0x80-0x9F.
  Cp1252,
  /// Declared, but not one of the above.
  Unsupported,
};

/// The encoding declared on line \p line (1 or 2) of a file.
struct EncodingDeclaration {
  /// The name as written (`latin-1`, `cp1252`, ...).
  std::string name;
  /// 1-based line of the declaration.
  unsigned line = 0;
  SourceEncoding encoding = SourceEncoding::Utf8;
};

/// Finds the PEP 263 declaration of \p source (without a BOM) as CPython's
/// tokenizer does: a comment matching `coding[:=][ \t]*([-\w.]+)` on the first
/// line, or on the second when the first is blank or only a comment.
std::optional<EncodingDeclaration>
findEncodingDeclaration(llvm::StringRef source);

/// Maps an encoding name to the encodings above, with Python's codec
/// aliases (`latin_1`, `iso-8859-1`, `L1`, `windows-1252`, `utf8`, ...).
SourceEncoding lookupSourceEncoding(llvm::StringRef name);

/// Decodes \p source into UTF-8 when it declares Latin-1 or cp1252 and
/// returns the text; returns nothing when the bytes are to be analysed as
/// they are (UTF-8 or undeclared, and the unsupported cases). Problems (an
/// unsupported encoding, a BOM contradicting the declaration, a byte cp1252
/// leaves undefined) are appended to \p warnings with their line.
std::optional<std::string>
decodePythonSource(llvm::StringRef source, std::vector<FileWarning> &warnings);

} // namespace fastci::python

#endif // FASTCI_PYTHON_SOURCEENCODING_H
