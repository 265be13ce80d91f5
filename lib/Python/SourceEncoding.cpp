//===- SourceEncoding.cpp - PEP 263 source encodings ----------------------===//
//
// Mirrors CPython 3.11's tokenizer (get_coding_spec, check_coding_spec and
// get_normal_name in Parser/tokenizer.c) and the alias table of the
// `encodings` package, so that a declaration is recognised exactly when
// CPython would honour it. Files without a declaration cost one scan of
// their first two lines.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/SourceEncoding.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;

namespace {
/// The declaration on one line, as get_coding_spec finds it: the line must
/// be a comment, and the first `coding` followed by `:` or `=` and a name
/// wins.
std::optional<std::string> getCodingSpec(StringRef line) {
  StringRef rest = line.ltrim(" \t\f");
  if (!rest.starts_with("#"))
    return std::nullopt;
  for (size_t at = rest.find("coding"); at != StringRef::npos;
       at = rest.find("coding", at + 1)) {
    StringRef after = rest.drop_front(at + 6);
    if (after.empty() || (after.front() != ':' && after.front() != '='))
      continue;
    after = after.drop_front().ltrim(" \t");
    size_t length = 0;
    while (length < after.size() &&
           (llvm::isAlnum(after[length]) || after[length] == '-' ||
            after[length] == '_' || after[length] == '.'))
      ++length;
    if (length)
      return after.take_front(length).str();
  }
  return std::nullopt;
}

/// True for a line CPython's check_coding_spec lets the second line's
/// declaration follow: blank, or a comment.
bool isBlankOrComment(StringRef line) {
  StringRef rest = line.ltrim(" \t\f\r");
  return rest.empty() || rest.starts_with("#");
}

/// The cp1252 code points of bytes 0x80-0x9F; 0 where cp1252 leaves the
/// byte undefined (Python's codec rejects those).
constexpr uint16_t kCp1252High[32] = {
    0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0,      0x017D, 0,
    0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

void appendUtf8(std::string &out, uint32_t cp) {
  char buffer[4];
  char *end = buffer;
  llvm::ConvertCodePointToUTF8(cp, end);
  out.append(buffer, end);
}
} // namespace

std::optional<EncodingDeclaration>
fastci::python::findEncodingDeclaration(StringRef source) {
  // Only the first two lines can declare an encoding; the second only when
  // the first is blank or a comment.
  auto [first, rest] = source.split('\n');
  if (std::optional<std::string> name = getCodingSpec(first))
    return EncodingDeclaration{*name, 1, lookupSourceEncoding(*name)};
  if (!isBlankOrComment(first) || rest.data() == nullptr)
    return std::nullopt;
  StringRef second = rest.split('\n').first;
  if (std::optional<std::string> name = getCodingSpec(second))
    return EncodingDeclaration{*name, 2, lookupSourceEncoding(*name)};
  return std::nullopt;
}

SourceEncoding fastci::python::lookupSourceEncoding(StringRef name) {
  // get_normal_name: the first 12 characters, lower-cased, `_` read as `-`;
  // `utf-8-*` is UTF-8 and `latin-1-*` Latin-1 whatever follows.
  std::string head = name.take_front(12).lower();
  std::replace(head.begin(), head.end(), '_', '-');
  StringRef normal = head;
  if (normal == "utf-8" || normal.starts_with("utf-8-"))
    return SourceEncoding::Utf8;
  for (StringRef latin : {"latin-1", "iso-8859-1", "iso-latin-1"})
    if (normal == latin || normal.starts_with((latin + "-").str()))
      return SourceEncoding::Latin1;

  // encodings.normalize_encoding, then the codec alias table.
  std::string key;
  bool pendingSeparator = false;
  for (char c : name) {
    if (llvm::isAlnum(c) || c == '.') {
      if (pendingSeparator && !key.empty())
        key.push_back('_');
      pendingSeparator = false;
      key.push_back(llvm::toLower(c));
    } else {
      pendingSeparator = true;
    }
  }
  static const char *const kUtf8[] = {"utf_8",
                                      "u8",
                                      "utf",
                                      "utf8",
                                      "utf8_ucs2",
                                      "utf8_ucs4",
                                      "cp65001",
                                      "utf_8_sig",
                                      "ascii",
                                      "646",
                                      "us_ascii",
                                      "us",
                                      "iso646_us",
                                      "cp367",
                                      "ibm367",
                                      "csascii",
                                      "iso_ir_6",
                                      "ansi_x3.4_1968",
                                      "ansi_x3_4_1968",
                                      "ansi_x3.4_1986",
                                      "iso_646.irv_1991"};
  static const char *const kLatin1[] = {
      "latin_1",   "latin1",          "latin",      "l1",
      "iso8859_1", "iso_8859_1",      "8859",       "cp819",
      "ibm819",    "iso_8859_1_1987", "iso_ir_100", "csisolatin1"};
  static const char *const kCp1252[] = {"cp1252", "windows_1252", "1252"};
  if (llvm::is_contained(kUtf8, key))
    return SourceEncoding::Utf8;
  if (llvm::is_contained(kLatin1, key))
    return SourceEncoding::Latin1;
  if (llvm::is_contained(kCp1252, key))
    return SourceEncoding::Cp1252;
  return SourceEncoding::Unsupported;
}

std::optional<std::string>
fastci::python::decodePythonSource(StringRef source,
                                   std::vector<FileWarning> &warnings) {
  // Cheap rejection first: almost every file declares nothing.
  StringRef head = source.take_front(source.find('\n', source.find('\n') + 1));
  if (!head.contains("coding"))
    return std::nullopt;
  bool hasBom = source.starts_with("\xEF\xBB\xBF");
  StringRef text = hasBom ? source.drop_front(3) : source;
  std::optional<EncodingDeclaration> declaration =
      findEncodingDeclaration(text);
  if (!declaration || declaration->encoding == SourceEncoding::Utf8)
    return std::nullopt;
  if (hasBom) {
    // CPython refuses the file ("encoding problem: ... with BOM"); the BOM
    // is the stronger evidence of what the bytes are.
    warnings.push_back({declaration->line, 1,
                        "source encoding '" + declaration->name +
                            "' contradicts the UTF-8 byte order mark; "
                            "file analysed as UTF-8"});
    return std::nullopt;
  }
  if (declaration->encoding == SourceEncoding::Unsupported) {
    warnings.push_back({declaration->line, 1,
                        "unsupported source encoding '" + declaration->name +
                            "'; file analysed as raw bytes"});
    return std::nullopt;
  }

  std::string out;
  out.reserve(source.size() + source.size() / 8);
  uint32_t line = 1;
  size_t lineStart = 0;
  bool reportedUndefined = false;
  for (size_t i = 0; i < source.size(); ++i) {
    unsigned char c = source[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
    }
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    uint32_t cp = c;
    if (declaration->encoding == SourceEncoding::Cp1252 && c < 0xA0) {
      if (kCp1252High[c - 0x80]) {
        cp = kCp1252High[c - 0x80];
      } else if (!reportedUndefined) {
        // Python's codec fails here; keep the byte's Latin-1 reading.
        reportedUndefined = true;
        warnings.push_back(
            {line, static_cast<uint32_t>(i - lineStart + 1),
             llvm::formatv("byte 0x{0:X-2} is undefined in cp1252; read as "
                           "U+00{0:X-2}",
                           static_cast<unsigned>(c))
                 .str()});
      }
    }
    appendUtf8(out, cp);
  }
  return out;
}
