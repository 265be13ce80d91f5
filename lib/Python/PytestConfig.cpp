//===- PytestConfig.cpp - The collection options of pytest's ini files ----===//
//
// Mirrors _pytest/config/findpaths.py (locate_config: which file, in which
// order), iniconfig's line format (sections, `key = value`, continuation
// lines indented, `#`/`;` comment lines), the TOML subset pyproject.toml
// options use (strings and arrays of strings), and the matching helpers of
// _pytest/python.py and _pytest/pathlib.py (fnmatch_ex,
// path_matches_patterns, _matches_prefix_or_glob_option).
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/PytestConfig.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <optional>

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;

bool fastci::python::pythonFnmatch(StringRef name, StringRef pattern) {
  // Iterative matching with one backtrack point per `*`, like a glob.
  size_t n = 0, p = 0, starP = StringRef::npos, starN = 0;
  auto matchClass = [&](size_t &at, char c) -> std::optional<bool> {
    // pattern[at] == '['; returns whether c matches, advancing `at` past
    // `]`, or nothing when the class is unterminated (then `[` is literal).
    size_t i = at + 1;
    bool negate = i < pattern.size() && pattern[i] == '!';
    if (negate)
      ++i;
    size_t first = i;
    bool matched = false;
    for (; i < pattern.size() && (pattern[i] != ']' || i == first); ++i) {
      if (i + 2 < pattern.size() && pattern[i + 1] == '-' &&
          pattern[i + 2] != ']') {
        matched |= pattern[i] <= c && c <= pattern[i + 2];
        i += 2;
      } else {
        matched |= pattern[i] == c;
      }
    }
    if (i >= pattern.size())
      return std::nullopt;
    at = i + 1;
    return matched != negate;
  };
  while (n < name.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        starP = p++;
        starN = n;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++n;
        continue;
      }
      if (pc == '[') {
        size_t at = p;
        std::optional<bool> result = matchClass(at, name[n]);
        if (result && *result) {
          p = at;
          ++n;
          continue;
        }
        if (!result && name[n] == '[') {
          ++p;
          ++n;
          continue;
        }
      } else if (pc == name[n]) {
        ++p;
        ++n;
        continue;
      }
    }
    if (starP == StringRef::npos)
      return false;
    p = starP + 1;
    n = ++starN;
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

/// pytest's fnmatch_ex for a path relative to the root: a pattern without
/// `/` matches the file name, one with `/` the whole path (pytest prefixes
/// `*/` and matches the absolute path).
static bool fnmatchEx(StringRef pattern, StringRef relPath) {
  if (!pattern.contains('/'))
    return pythonFnmatch(llvm::sys::path::filename(relPath), pattern);
  return pythonFnmatch(("/" + relPath).str(), ("*/" + pattern).str());
}

static bool matchesPrefixOrGlob(StringRef name,
                                const std::vector<std::string> &options) {
  for (const std::string &option : options) {
    if (name.starts_with(option))
      return true;
    if (StringRef(option).find_first_of("*?[") != StringRef::npos &&
        pythonFnmatch(name, option))
      return true;
  }
  return false;
}

bool PytestConfig::isTestClassName(StringRef name) const {
  return matchesPrefixOrGlob(name, pythonClasses);
}

bool PytestConfig::isTestFunctionName(StringRef name) const {
  return matchesPrefixOrGlob(name, pythonFunctions);
}

bool PytestConfig::isTestFile(StringRef relPath) const {
  // Which argument the file is found under: the whole root by default.
  StringRef below = relPath;
  if (!roots.empty() || !testPaths.empty()) {
    bool found = false;
    for (const auto &[root, isFile] : roots) {
      if (isFile) {
        // An initial path is collected whatever python_files says.
        if (relPath == root)
          return true;
        continue;
      }
      if (root.empty()) {
        found = true;
        below = relPath;
        break;
      }
      if (relPath.starts_with(root) && relPath.size() > root.size() &&
          relPath[root.size()] == '/') {
        found = true;
        below = relPath.drop_front(root.size() + 1);
        break;
      }
    }
    if (!found)
      return false;
  }
  // norecursedirs applies to the directories pytest recurses into below an
  // argument, matched by name (or by path for patterns with `/`).
  StringRef prefix = relPath.drop_back(below.size());
  for (size_t slash = below.find('/'); slash != StringRef::npos;
       slash = below.find('/', slash + 1)) {
    StringRef directory =
        relPath.take_front(prefix.size() + slash); // relative to the root
    for (const std::string &pattern : noRecurseDirs)
      if (fnmatchEx(pattern, directory))
        return false;
  }
  StringRef fileName = llvm::sys::path::filename(relPath);
  if (fileName == "__init__.py")
    return false;
  for (const std::string &pattern : pythonFiles)
    if (fnmatchEx(pattern, relPath))
      return true;
  return false;
}

std::string PytestConfig::fingerprint() const {
  std::string out;
  auto add = [&](const std::vector<std::string> &values) {
    for (const std::string &value : values)
      out += value + '\x1f';
    out += '\x1e';
  };
  add(pythonFiles);
  add(pythonClasses);
  add(pythonFunctions);
  add(noRecurseDirs);
  for (const auto &[root, isFile] : roots)
    out += root + (isFile ? "\x1d" : "\x1c");
  out += testPaths.empty() ? "" : "\x1b";
  return out;
}

//===----------------------------------------------------------------------===//
// Reading the files
//===----------------------------------------------------------------------===//

namespace {
/// One option as written: its value and the line it is on.
struct RawOption {
  std::string value;
  std::vector<std::string> list;
  bool isList = false;
  uint32_t line = 0;
};

using RawOptions = llvm::StringMap<RawOption>;

/// iniconfig: `[section]`, `name = value` or `name: value`, continuation
/// lines indented, comment lines starting with `#` or `;`. Returns whether
/// the \p wanted section exists, and its options.
bool readIniSection(StringRef text, StringRef wanted, RawOptions &options) {
  bool inSection = false, found = false;
  RawOption *last = nullptr;
  uint32_t lineNo = 0;
  for (StringRef rest = text; !rest.empty();) {
    StringRef line;
    std::tie(line, rest) = rest.split('\n');
    line = line.rtrim("\r");
    ++lineNo;
    StringRef trimmed = line.trim();
    if (trimmed.empty() || trimmed.starts_with("#") || trimmed.starts_with(";"))
      continue;
    if (line.front() == ' ' || line.front() == '\t') {
      if (inSection && last) {
        if (!last->value.empty())
          last->value += '\n';
        last->value += trimmed.str();
      }
      continue;
    }
    last = nullptr;
    if (trimmed.starts_with("[")) {
      StringRef name =
          trimmed.drop_front().take_until([](char c) { return c == ']'; });
      inSection = name.trim() == wanted;
      found |= inSection;
      continue;
    }
    if (!inSection)
      continue;
    size_t equals = trimmed.find_first_of("=:");
    if (equals == StringRef::npos)
      continue;
    RawOption &option = options[trimmed.take_front(equals).trim()];
    option.value = trimmed.drop_front(equals + 1).trim().str();
    option.line = lineNo;
    last = &option;
  }
  return found;
}

/// A TOML basic or literal string at the start of \p text, advancing it.
std::optional<std::string> readTomlString(StringRef &text) {
  if (text.empty() || (text.front() != '"' && text.front() != '\''))
    return std::nullopt;
  char quote = text.front();
  std::string out;
  size_t i = 1;
  for (; i < text.size() && text[i] != quote; ++i) {
    if (quote == '"' && text[i] == '\\' && i + 1 < text.size()) {
      char e = text[++i];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      continue;
    }
    out += text[i];
  }
  if (i >= text.size())
    return std::nullopt;
  text = text.drop_front(i + 1);
  return out;
}

/// The `[tool.pytest.ini_options]` table of a pyproject.toml: string and
/// string-array values (arrays may span lines). Returns whether the table
/// exists; sets \p errorLine for a value it cannot read.
bool readTomlTable(StringRef text, RawOptions &options, uint32_t &errorLine) {
  bool inTable = false, found = false;
  uint32_t lineNo = 0;
  auto stripComment = [](StringRef line) {
    // A `#` outside a string starts a comment.
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quote) {
        if (c == '\\' && quote == '"')
          ++i;
        else if (c == quote)
          quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#') {
        return line.take_front(i);
      }
    }
    return line;
  };
  for (StringRef rest = text; !rest.empty();) {
    StringRef line;
    std::tie(line, rest) = rest.split('\n');
    ++lineNo;
    StringRef trimmed = stripComment(line).trim();
    if (trimmed.empty())
      continue;
    if (trimmed.starts_with("[")) {
      StringRef name = trimmed.trim("[] \t");
      inTable = name == "tool.pytest.ini_options";
      found |= inTable;
      continue;
    }
    if (!inTable)
      continue;
    size_t equals = trimmed.find('=');
    if (equals == StringRef::npos)
      continue;
    StringRef key = trimmed.take_front(equals).trim().trim("\"'");
    StringRef value = trimmed.drop_front(equals + 1).trim();
    RawOption option;
    option.line = lineNo;
    if (value.starts_with("[")) {
      // Gather the array up to its closing bracket.
      std::string array = value.str();
      while (StringRef(array).count('[') > StringRef(array).count(']') &&
             !rest.empty()) {
        StringRef next;
        std::tie(next, rest) = rest.split('\n');
        ++lineNo;
        array += " " + stripComment(next).trim().str();
      }
      StringRef items = StringRef(array).trim().drop_front();
      option.isList = true;
      bool ok = true;
      for (;;) {
        items = items.ltrim(" \t\r,");
        if (items.starts_with("]"))
          break;
        std::optional<std::string> item = readTomlString(items);
        if (!item) {
          ok = false;
          break;
        }
        option.list.push_back(std::move(*item));
      }
      if (!ok) {
        errorLine = option.line;
        continue;
      }
    } else if (value.starts_with("\"") || value.starts_with("'")) {
      std::optional<std::string> string = readTomlString(value);
      if (!string) {
        errorLine = option.line;
        continue;
      }
      option.value = std::move(*string);
    } else {
      // Numbers, booleans: options collection does not read.
      option.value = value.str();
    }
    options[key] = std::move(option);
  }
  return found;
}

/// shlex.split in POSIX mode, as pytest splits "args" options.
std::vector<std::string> shlexSplit(StringRef text) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'' || c == '"') {
      inWord = true;
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (c == '"' && text[i] == '\\' && i + 1 < text.size() &&
            StringRef("\\\"$`\n").contains(text[i + 1]))
          ++i;
        word += text[i];
      }
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      inWord = true;
      continue;
    }
    if (llvm::isSpace(c)) {
      if (inWord)
        words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    word += c;
    inWord = true;
  }
  if (inWord)
    words.push_back(std::move(word));
  return words;
}

std::vector<std::string> optionWords(const RawOption &option) {
  return option.isList ? option.list : shlexSplit(option.value);
}

/// Python's glob.glob(pattern, recursive=True) as a test of one relative
/// path: components matched one by one (`*` stays within one), `**` spans
/// any number of them, and wildcards skip names starting with `.`.
bool globMatches(llvm::ArrayRef<StringRef> path,
                 llvm::ArrayRef<StringRef> pattern) {
  if (pattern.empty())
    return path.empty();
  if (pattern.front() == "**") {
    for (size_t skip = 0; skip <= path.size(); ++skip) {
      if (skip && path[skip - 1].starts_with("."))
        break;
      if (globMatches(path.drop_front(skip), pattern.drop_front()))
        return true;
    }
    return false;
  }
  if (path.empty())
    return false;
  if (path.front().starts_with(".") && !pattern.front().starts_with("."))
    return false;
  return pythonFnmatch(path.front(), pattern.front()) &&
         globMatches(path.drop_front(), pattern.drop_front());
}

/// Expands testpaths the way pytest 7.2 does: each entry globbed
/// (recursive `**`) relative to the root, entries that match nothing
/// dropped; when none is left, pytest falls back to the root.
void resolveTestPaths(StringRef root, PytestConfig &config) {
  for (const std::string &entry : config.testPaths) {
    StringRef path = StringRef(entry).trim('/');
    if (path.starts_with("./"))
      path = path.drop_front(2);
    if (path == ".")
      path = "";
    if (path.find_first_of("*?[") == StringRef::npos) {
      llvm::SmallString<256> full(root);
      llvm::sys::path::append(full, path);
      if (llvm::sys::fs::is_directory(full))
        config.roots.emplace_back(path.str(), false);
      else if (llvm::sys::fs::exists(full))
        config.roots.emplace_back(path.str(), true);
      continue;
    }
    // A glob: walk the tree for matches (entries are few and shallow).
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end;
         it != end && !ec; it.increment(ec)) {
      StringRef full = it->path();
      StringRef rel = StringRef(full).drop_front(root.size()).ltrim('/');
      if (rel.starts_with(".git") || it.level() > 8)
        continue;
      llvm::SmallVector<StringRef, 8> relParts, patternParts;
      rel.split(relParts, '/');
      path.split(patternParts, '/');
      if (globMatches(relParts, patternParts))
        config.roots.emplace_back(
            rel.str(), it->type() != llvm::sys::fs::file_type::directory_file);
    }
  }
  llvm::sort(config.roots);
  config.roots.erase(std::unique(config.roots.begin(), config.roots.end()),
                     config.roots.end());
}
} // namespace

PytestConfig
fastci::python::readPytestConfig(StringRef root,
                                 std::vector<FileWarning> &warnings) {
  PytestConfig config;
  // findpaths.locate_config, in the rootdir only (FastCI imports `root` as
  // the repository; a configuration above it belongs to something else).
  static const std::pair<const char *, const char *> kCandidates[] = {
      {"pytest.ini", "pytest"},
      {".pytest.ini", "pytest"},
      {"pyproject.toml", nullptr},
      {"tox.ini", "pytest"},
      {"setup.cfg", "tool:pytest"}};
  RawOptions options;
  for (const auto &[name, section] : kCandidates) {
    llvm::SmallString<256> path(root);
    llvm::sys::path::append(path, name);
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      continue;
    StringRef text = (*buffer)->getBuffer();
    bool found;
    if (!section) {
      uint32_t errorLine = 0;
      found = readTomlTable(text, options, errorLine);
      if (errorLine)
        warnings.push_back({errorLine, 1,
                            "cannot read this [tool.pytest.ini_options] value; "
                            "pytest's default is assumed"});
    } else {
      found = readIniSection(text, section, options);
      // pytest.ini is the configuration even without a [pytest] section.
      found |=
          StringRef(name) == "pytest.ini" || StringRef(name) == ".pytest.ini";
    }
    if (found) {
      config.source = name;
      break;
    }
    options.clear();
  }
  auto take = [&](StringRef key, std::vector<std::string> &out) {
    auto it = options.find(key);
    if (it != options.end())
      out = optionWords(it->second);
  };
  take("testpaths", config.testPaths);
  take("python_files", config.pythonFiles);
  take("python_classes", config.pythonClasses);
  take("python_functions", config.pythonFunctions);
  take("norecursedirs", config.noRecurseDirs);
  resolveTestPaths(root, config);
  if (config.roots.empty())
    config.testPaths.clear();
  return config;
}
