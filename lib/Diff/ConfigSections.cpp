//===- ConfigSections.cpp - Sections and keys of INI and TOML files -------===//
//
// Reads files line by line from the top, as an INI or TOML reader would, and
// stops at the line asked for. Both formats share the shape the policy needs:
// a header line names a section, a key starts at column 0, and what follows
// it until the next key or header is its value.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ConfigSections.h"

using namespace fastci;
using llvm::StringRef;

std::string ConfigLine::getPath() const {
  return key.empty() ? section : section + "/" + key;
}

/// The section a header line opens (`[tool.black]`, `[[tool.x]]`,
/// `[coverage:run]  # comment`), or none.
static std::optional<StringRef> parseHeader(StringRef trimmed) {
  if (!trimmed.consume_front("["))
    return std::nullopt;
  bool array = trimmed.consume_front("[");
  size_t close = trimmed.find(']');
  if (close == StringRef::npos)
    return std::nullopt;
  StringRef name = trimmed.take_front(close).trim();
  StringRef rest = trimmed.drop_front(close + 1);
  if (array && !rest.consume_front("]"))
    return std::nullopt;
  rest = rest.ltrim();
  if (!rest.empty() && rest.front() != '#' && rest.front() != ';')
    return std::nullopt;
  return name;
}

/// The key a line at column 0 starts (`license_files = LICENSE`,
/// `max-line-length: 120`, `"quoted.key" = 1`), or none.
static std::optional<StringRef> parseKey(StringRef line) {
  if (line.empty() || line.front() == ' ' || line.front() == '\t')
    return std::nullopt;
  size_t end = line.find_first_of("=:");
  if (end == 0 || end == StringRef::npos)
    return std::nullopt;
  StringRef key = line.take_front(end).trim();
  if (key.empty() || key.find_first_of("[]{}(),") != StringRef::npos)
    return std::nullopt;
  return key;
}

ConfigLine fastci::locateConfigLine(llvm::ArrayRef<StringRef> lines,
                                    uint32_t line) {
  ConfigLine where;
  if (line == 0 || line > lines.size()) {
    where.insignificant = true;
    return where;
  }
  for (uint32_t number = 1; number <= line; ++number) {
    StringRef text = lines[number - 1].rtrim("\r");
    StringRef trimmed = text.trim();
    bool current = number == line;
    if (trimmed.empty() || trimmed.front() == '#' || trimmed.front() == ';') {
      if (current)
        where.insignificant = true;
      continue;
    }
    if (std::optional<StringRef> header = parseHeader(trimmed)) {
      where.section = header->str();
      where.key.clear();
      continue;
    }
    if (std::optional<StringRef> key = parseKey(text))
      where.key = key->str();
  }
  return where;
}

bool fastci::matchConfigSection(const llvm::GlobPattern &pattern,
                                const ConfigLine &where) {
  return pattern.match(where.section) ||
         (!where.key.empty() && pattern.match(where.getPath()));
}

/// The indentation of \p text, in columns (tabs count as one).
static size_t getIndent(StringRef text) {
  return text.size() - text.ltrim(" \t").size();
}

ManifestLine fastci::locateManifestLine(llvm::ArrayRef<StringRef> lines,
                                        uint32_t line) {
  ManifestLine where;
  if (line == 0 || line > lines.size()) {
    where.insignificant = true;
    return where;
  }
  auto text = [&](uint32_t number) { return lines[number - 1].rtrim("\r"); };
  auto isBlank = [&](uint32_t number) {
    StringRef trimmed = text(number).trim();
    return trimmed.empty() || trimmed.starts_with("#");
  };
  if (isBlank(line)) {
    where.insignificant = true;
    return where;
  }
  // The entries of the block list under a column-0 `tests:`: from each
  // dash at the list's indentation to the line before the next one (or the
  // next top-level key).
  uint32_t itemStart = 0, itemEnd = 0;
  auto close = [&](uint32_t last) {
    if (itemStart && !itemEnd)
      itemEnd = last;
  };
  size_t dash = StringRef::npos;
  bool inTests = false;
  for (uint32_t number = 1; number <= lines.size() && !itemEnd; ++number) {
    if (isBlank(number))
      continue;
    StringRef current = text(number);
    size_t indent = getIndent(current);
    StringRef trimmed = current.ltrim(" \t");
    bool item = trimmed == "-" || trimmed.starts_with("- ");
    if (indent == 0 && !item) {
      // A top-level key ends the list; before `line`, its entries do not
      // hold it.
      if (number < line)
        itemStart = 0;
      else
        close(number - 1);
      StringRef rest = trimmed;
      inTests = rest.consume_front("tests:") &&
                (rest.trim().empty() || rest.trim().starts_with("#"));
      dash = StringRef::npos;
    } else if (inTests && item && (dash == StringRef::npos || indent == dash)) {
      dash = indent;
      if (number > line) {
        close(number - 1);
      } else {
        itemStart = number;
      }
    }
  }
  close(lines.size());
  if (!itemStart || itemStart > line || itemEnd < line)
    return where;
  // The entry's `id:`, on its dash line or as one of its keys.
  for (uint32_t number = itemStart; number <= itemEnd; ++number) {
    StringRef trimmed = text(number).ltrim(" \t");
    if (number == itemStart)
      trimmed = trimmed.drop_front(1).ltrim(" \t");
    if (trimmed.consume_front("id:")) {
      StringRef id = trimmed.split('#').first.trim().trim("\"'");
      where.id = id.str();
      break;
    }
  }
  return where;
}
