//===- ConfigSections.cpp - Sections and keys of build files --------------===//
//
// Reads files line by line from the top, as an INI, TOML or make reader
// would, and stops at the line asked for. The formats share the shape the
// policy needs: a header line names a section (a Makefile's rule line), a
// key starts at column 0 (a variable assignment), and what follows it until
// the next key or header is its value (a recipe).
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ConfigSections.h"
#include "fastci/Diff/Requirements.h"
#include "llvm/Support/Path.h"

using namespace fastci;
using llvm::StringRef;

std::string ConfigLine::getPath() const {
  if (key.empty())
    return section;
  return section.empty() ? key : section + "/" + key;
}

ConfigFormat fastci::getConfigFormat(StringRef path) {
  StringRef name = llvm::sys::path::filename(path);
  if (name == "Makefile" || name == "GNUmakefile" || name == "makefile" ||
      name.ends_with(".mk"))
    return ConfigFormat::Makefile;
  return ConfigFormat::IniToml;
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

/// Whether \p text ends in a backslash that joins the next line to it.
static bool continuesOnNextLine(StringRef text) {
  size_t backslashes = text.size() - text.rtrim('\\').size();
  return backslashes % 2 == 1;
}

/// The variable a Makefile line assigns (`VAR = x`, `VAR := x`, `export
/// VAR ?= x`, `override VAR += x`), or none. A `:` before any `=` that is
/// not part of `:=` or `::=` makes the line a rule (`target: VAR = x` sets
/// a target-specific variable: it is the target's).
static std::optional<StringRef> parseMakeAssignment(StringRef text) {
  size_t op = text.find_first_of(":=");
  if (op == StringRef::npos)
    return std::nullopt;
  if (text[op] == ':' && !text.substr(op).starts_with(":=") &&
      !text.substr(op).starts_with("::="))
    return std::nullopt;
  StringRef name = text.take_front(op).rtrim("?+! \t");
  for (StringRef prefix : {"export", "override", "private"})
    if (name.starts_with(prefix) && name.size() > prefix.size() &&
        (name[prefix.size()] == ' ' || name[prefix.size()] == '\t'))
      name = name.drop_front(prefix.size()).ltrim();
  if (name.empty() || name.find_first_of(" \t") != StringRef::npos)
    return std::nullopt;
  return name;
}

/// The targets a Makefile rule line names (`quality style: deps`,
/// `.PHONY: x`, `%.o: %.c`), or none.
static std::optional<StringRef> parseMakeRule(StringRef text) {
  size_t colon = text.find(':');
  if (colon == 0 || colon == StringRef::npos)
    return std::nullopt;
  StringRef targets = text.take_front(colon).trim();
  if (targets.empty())
    return std::nullopt;
  return targets;
}

static ConfigLine locateMakefileLine(llvm::ArrayRef<StringRef> lines,
                                     uint32_t line) {
  ConfigLine where, previous;
  std::string rule;   // the rule whose recipe a tab-indented line continues
  std::string define; // the variable a `define` block is assigning
  bool continued = false;
  for (uint32_t number = 1; number <= line; ++number) {
    StringRef text = lines[number - 1].rtrim("\r");
    StringRef trimmed = text.trim();
    bool joined = continued;
    continued = continuesOnNextLine(text);
    where = ConfigLine();
    if (joined) {
      where = previous; // the logical line goes on
    } else if (!define.empty()) {
      where.key = define;
      if (trimmed == "endef" || trimmed.starts_with("endef "))
        define.clear();
    } else if (text.starts_with("\t")) {
      // A recipe line; one outside every rule means whatever make makes of it.
      if (trimmed.empty() || trimmed.starts_with("#"))
        where.insignificant = true;
      else
        where.section = rule;
    } else if (trimmed.empty() || trimmed.starts_with("#")) {
      where.insignificant = true; // blank lines and comments keep the rule
    } else if (trimmed.starts_with("define ") ||
               trimmed.starts_with("define\t")) {
      StringRef name = trimmed.drop_front(7).trim();
      name = name.take_until(
          [](char c) { return c == ' ' || c == '\t' || c == '='; });
      define = name.empty() ? std::string("define") : name.str();
      rule.clear();
      where.key = define;
    } else if (std::optional<StringRef> name = parseMakeAssignment(trimmed)) {
      rule.clear();
      where.key = name->str();
    } else if (trimmed.starts_with("ifeq") || trimmed.starts_with("ifneq") ||
               trimmed.starts_with("ifdef") || trimmed.starts_with("ifndef") ||
               trimmed == "else" || trimmed.starts_with("else ") ||
               trimmed == "endif" || trimmed.starts_with("endif ")) {
      // A conditional: of no section, and recipes may go on across it.
    } else if (std::optional<StringRef> targets = parseMakeRule(trimmed)) {
      rule = targets->str();
      where.section = rule;
    } else {
      rule.clear(); // include, vpath, $(eval ...): of no section or key
    }
    if (!where.insignificant)
      previous = where;
  }
  return where;
}

ConfigLine fastci::locateConfigLine(llvm::ArrayRef<StringRef> lines,
                                    uint32_t line, ConfigFormat format) {
  ConfigLine where;
  if (line == 0 || line > lines.size()) {
    where.insignificant = true;
    return where;
  }
  if (format == ConfigFormat::Makefile)
    return locateMakefileLine(lines, line);
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
  if (where.section.empty() && where.key.empty())
    return false; // a line of neither is named by no pattern
  return (!where.section.empty() && pattern.match(where.section)) ||
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

std::vector<std::string>
fastci::getBuildRequirements(llvm::ArrayRef<StringRef> lines) {
  // `requires = ["setuptools>=61", "setuptools_scm[toml]"]`, on one line or
  // several, in the `[build-system]` table.
  std::vector<std::string> names;
  bool inTable = false, inRequires = false;
  for (StringRef line : lines) {
    StringRef trimmed = line.trim();
    if (trimmed.starts_with("[") && !inRequires) {
      inTable =
          parseHeader(trimmed) == std::optional<StringRef>("build-system");
      continue;
    }
    if (!inTable)
      continue;
    if (!inRequires) {
      if (!trimmed.consume_front("requires"))
        continue;
      trimmed = trimmed.ltrim();
      if (!trimmed.consume_front("="))
        continue;
      inRequires = true;
    }
    // The quoted strings of the array, up to its closing bracket.
    for (size_t at = 0; at < trimmed.size(); ++at) {
      char c = trimmed[at];
      if (c == '#')
        break;
      if (c == ']') {
        inRequires = false;
        break;
      }
      if (c != '"' && c != '\'')
        continue;
      size_t end = trimmed.find(c, at + 1);
      if (end == StringRef::npos)
        break;
      StringRef requirement = trimmed.slice(at + 1, end).trim();
      size_t stop = requirement.find_first_of("<>=!~;[ @(");
      names.push_back(normalizeDistributionName(requirement.take_front(stop)));
      at = end;
    }
  }
  return names;
}

bool fastci::isOtherToolTable(StringRef section,
                              llvm::ArrayRef<std::string> buildRequirements) {
  if (!section.consume_front("tool."))
    return false;
  std::string tool = normalizeDistributionName(section.split('.').first);
  if (tool.empty() || tool == "pytest")
    return false;
  return llvm::none_of(buildRequirements, [&](const std::string &name) {
    return StringRef(name).starts_with(tool);
  });
}
