//===- GitIgnore.cpp - gitignore pattern semantics ------------------------===//
//
// The glob matcher follows git's wildmatch.c in WM_PATHNAME mode: its two
// abort codes give up on a `*` as soon as no later position can succeed, so
// hostile patterns cannot make the walk hang.
//
// The exclude files outside the tree are found the way git finds them: the
// git directory from a `.git` directory or `gitdir:` file in the root or an
// ancestor (its `commondir` for a linked worktree), `core.excludesFile` from
// the system, global and repository configuration, the last setting winning.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/GitIgnore.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace fastci::python;
using llvm::StringRef;

namespace {
enum class WildResult { Match, NoMatch, AbortAll, AbortToStarStar };

/// Tests \p c against the POSIX class \p name (`alpha`, `digit`, ...).
std::optional<bool> matchNamedClass(StringRef name, char c) {
  auto uc = static_cast<unsigned char>(c);
  if (name == "alpha")
    return llvm::isAlpha(c);
  if (name == "digit")
    return llvm::isDigit(c);
  if (name == "alnum")
    return llvm::isAlnum(c);
  if (name == "space")
    return llvm::isSpace(c);
  if (name == "upper")
    return uc >= 'A' && uc <= 'Z';
  if (name == "lower")
    return uc >= 'a' && uc <= 'z';
  if (name == "xdigit")
    return llvm::isHexDigit(c);
  if (name == "punct")
    return llvm::isPrint(c) && !llvm::isAlnum(c) && c != ' ';
  if (name == "blank")
    return c == ' ' || c == '\t';
  return std::nullopt;
}

/// Matches the bracket expression whose first member is at \p p against
/// \p c and leaves \p p on its closing `]`. An unterminated class means the
/// whole pattern can never match, as in git.
std::optional<bool> matchClass(const char *&p, const char *pe, char c) {
  bool negated = p < pe && (*p == '!' || *p == '^');
  if (negated)
    ++p;
  bool matched = false;
  int prev = -1;
  // A `]` right after `[` or `[!` is a literal member.
  for (bool first = true; p < pe && (first || *p != ']'); first = false, ++p) {
    char member = *p;
    if (member == '\\') {
      if (++p >= pe)
        return std::nullopt;
      member = *p;
    } else if (member == '-' && prev >= 0 && p + 1 < pe && p[1] != ']') {
      char hi = *++p;
      if (hi == '\\') {
        if (++p >= pe)
          return std::nullopt;
        hi = *p;
      }
      matched |=
          static_cast<unsigned char>(prev) <= static_cast<unsigned char>(c) &&
          static_cast<unsigned char>(c) <= static_cast<unsigned char>(hi);
      prev = -1;
      continue;
    } else if (member == '[' && p + 1 < pe && p[1] == ':') {
      StringRef rest(p + 2, pe - p - 2);
      size_t close = rest.find(":]");
      if (close == StringRef::npos)
        return std::nullopt;
      std::optional<bool> inClass = matchNamedClass(rest.take_front(close), c);
      if (!inClass)
        return std::nullopt;
      matched |= *inClass;
      p += close + 3; // leaves p on the class's closing `]`
      prev = -1;
      continue;
    }
    matched |= member == c;
    prev = static_cast<unsigned char>(member);
  }
  if (p >= pe)
    return std::nullopt;
  return matched != negated;
}

WildResult doWild(const char *ps, const char *p, const char *pe, const char *t,
                  const char *te) {
  for (; p < pe; ++p, ++t) {
    char pc = *p;
    if (t >= te && pc != '*')
      return WildResult::AbortAll;
    switch (pc) {
    case '\\':
      if (++p >= pe || *t != *p)
        return WildResult::NoMatch;
      continue;
    case '?':
      if (*t == '/')
        return WildResult::NoMatch;
      continue;
    case '[': {
      if (*t == '/')
        return WildResult::NoMatch;
      ++p;
      std::optional<bool> matched = matchClass(p, pe, *t);
      if (!matched)
        return WildResult::AbortAll;
      if (!*matched)
        return WildResult::NoMatch;
      continue;
    }
    case '*': {
      bool matchSlash = false;
      if (p + 1 < pe && p[1] == '*') {
        const char *before = p - 1;
        while (p + 1 < pe && p[1] == '*')
          ++p;
        ++p;
        // `**` spans directories only as a whole path component; elsewhere
        // it is an ordinary `*`.
        if ((before < ps || *before == '/') && (p == pe || *p == '/')) {
          // `**/` may also match no directory at all.
          if (p < pe && doWild(ps, p + 1, pe, t, te) == WildResult::Match)
            return WildResult::Match;
          matchSlash = true;
        }
      } else {
        ++p;
      }
      if (p == pe) {
        // A trailing `**` matches everything, a trailing `*` the rest of
        // one component.
        if (!matchSlash && StringRef(t, te - t).contains('/'))
          return WildResult::NoMatch;
        return WildResult::Match;
      }
      if (!matchSlash && *p == '/') {
        // One `*` followed by a slash matches up to the next directory.
        const char *slash = static_cast<const char *>(memchr(t, '/', te - t));
        if (!slash)
          return WildResult::NoMatch;
        t = slash;
        continue; // both slashes are consumed by the loop increment
      }
      for (; t < te; ++t) {
        WildResult result = doWild(ps, p, pe, t, te);
        if (result != WildResult::NoMatch) {
          if (!matchSlash || result != WildResult::AbortToStarStar)
            return result;
        } else if (!matchSlash && *t == '/') {
          return WildResult::AbortToStarStar;
        }
      }
      return WildResult::AbortAll;
    }
    default:
      if (*t != pc)
        return WildResult::NoMatch;
      continue;
    }
  }
  return t == te ? WildResult::Match : WildResult::NoMatch;
}
} // namespace

bool fastci::python::matchGlob(StringRef pattern, StringRef text) {
  const char *ps = pattern.data();
  return doWild(ps, ps, ps + pattern.size(), text.data(),
                text.data() + text.size()) == WildResult::Match;
}

GitIgnoreFile::GitIgnoreFile(StringRef baseDir, StringRef contents)
    : baseDir(baseDir.str()) {
  while (!contents.empty()) {
    StringRef line;
    std::tie(line, contents) = contents.split('\n');
    line.consume_back("\r");
    if (line.empty() || line.front() == '#')
      continue;
    // Trailing spaces are dropped unless escaped with a backslash.
    while (line.ends_with(" ") && !line.ends_with("\\ "))
      line = line.drop_back();
    if (line.empty())
      continue;
    Pattern pattern;
    if (line.front() == '!') {
      pattern.negated = true;
      line = line.drop_front();
    } else if (line.starts_with("\\!") || line.starts_with("\\#")) {
      line = line.drop_front();
    }
    if (line.ends_with("/") && !line.ends_with("\\/")) {
      pattern.dirOnly = true;
      line = line.rtrim('/');
    }
    if (line.empty())
      continue;
    // A slash anywhere but at the end anchors the pattern to this directory.
    pattern.anchored = line.contains('/');
    line.consume_front("/");
    pattern.glob = line.str();
    constexpr StringRef kSpecial = "*?[\\";
    if (line.find_first_of(kSpecial) == StringRef::npos)
      pattern.form = Pattern::Form::Literal;
    else if (!pattern.anchored && line.size() > 1 && line.front() == '*' &&
             line.drop_front().find_first_of(kSpecial) == StringRef::npos)
      pattern.form = Pattern::Form::Suffix;
    patterns.push_back(std::move(pattern));
  }
}

GitIgnoreFile GitIgnoreFile::forAncestor(StringRef rootPrefix,
                                         StringRef contents) {
  GitIgnoreFile file("", contents);
  file.rootPrefix = rootPrefix.str();
  return file;
}

std::optional<bool> GitIgnoreFile::match(StringRef path, bool isDir) const {
  std::string joined;
  if (!rootPrefix.empty()) {
    joined = rootPrefix + "/" + path.str();
    path = joined;
  }
  StringRef relative = path;
  if (!baseDir.empty()) {
    if (!relative.consume_front(baseDir) || !relative.consume_front("/"))
      return std::nullopt;
  }
  StringRef basename = relative.substr(relative.rfind('/') + 1);
  for (const Pattern &pattern : llvm::reverse(patterns)) {
    if (pattern.dirOnly && !isDir)
      continue;
    StringRef text = pattern.anchored ? relative : basename;
    bool matched;
    switch (pattern.form) {
    case Pattern::Form::Literal:
      matched = text == pattern.glob;
      break;
    case Pattern::Form::Suffix:
      // `*` matches any run of characters but `/`, which a basename lacks.
      matched = text.ends_with(StringRef(pattern.glob).drop_front());
      break;
    case Pattern::Form::Glob:
      matched = matchGlob(pattern.glob, text);
      break;
    }
    if (matched)
      return !pattern.negated;
  }
  return std::nullopt;
}

bool GitIgnoreStack::isIgnored(StringRef path, bool isDir) const {
  for (const GitIgnoreFile &file : llvm::reverse(files))
    if (std::optional<bool> decision = file.match(path, isDir))
      return *decision;
  return false;
}

//===----------------------------------------------------------------------===//
// Exclude files outside the tree
//===----------------------------------------------------------------------===//

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {
std::optional<std::string> readFile(const llvm::Twine &filePath) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(filePath, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

std::string joinPath(StringRef base, StringRef relative) {
  if (path::is_absolute(relative))
    return relative.str();
  llvm::SmallString<256> joined(base);
  path::append(joined, relative);
  return std::string(joined);
}

/// Reads one value of a git configuration line: quotes removed, escapes
/// decoded, an unquoted `#` or `;` starting a comment, trailing blanks
/// dropped.
std::string parseConfigValue(StringRef text) {
  std::string value;
  bool quoted = false;
  size_t keep = 0; // length of value up to its last significant character
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      quoted = !quoted;
      keep = value.size();
      continue;
    }
    if (!quoted && (c == '#' || c == ';'))
      break;
    if (c == '\\' && i + 1 < text.size()) {
      char e = text[++i];
      value.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      keep = value.size();
      continue;
    }
    value.push_back(c);
    if (quoted || (c != ' ' && c != '\t'))
      keep = value.size();
  }
  value.resize(keep);
  return StringRef(value).ltrim(" \t").str();
}
} // namespace

std::optional<std::string>
fastci::python::findExcludesFileSetting(StringRef config, StringRef home) {
  std::optional<std::string> result;
  bool inCore = false;
  while (!config.empty()) {
    StringRef line;
    std::tie(line, config) = config.split('\n');
    line = line.trim();
    if (line.starts_with("[")) {
      size_t close = line.find(']');
      if (close == StringRef::npos) {
        inCore = false;
        continue;
      }
      // Section names are case-insensitive; `[core "x"]` is a subsection.
      inCore = line.slice(1, close).trim().equals_insensitive("core");
      line = line.drop_front(close + 1).ltrim();
    }
    if (!inCore || line.empty())
      continue;
    auto [key, value] = line.split('=');
    if (!key.trim().equals_insensitive("excludesfile") || !line.contains('='))
      continue;
    std::string setting = parseConfigValue(value);
    if (StringRef(setting).starts_with("~/"))
      setting = joinPath(home, StringRef(setting).drop_front(2));
    result = std::move(setting);
  }
  return result;
}

GitIgnoreStack fastci::python::loadRepositoryIgnores(
    StringRef root, std::optional<std::string> home,
    std::optional<std::string> xdgConfigHome) {
  GitIgnoreStack stack;
  if (!home)
    home = llvm::sys::Process::GetEnv("HOME").value_or("");
  if (!xdgConfigHome)
    xdgConfigHome = llvm::sys::Process::GetEnv("XDG_CONFIG_HOME").value_or("");

  // The top of the work tree: the nearest directory, from root upwards,
  // holding `.git` (a directory, or a file naming the git directory).
  llvm::SmallString<256> top;
  if (fs::real_path(root, top))
    return stack;
  std::string gitDir;
  std::vector<std::string> below; // root's path components under top
  for (;;) {
    llvm::SmallString<256> dotGit(top);
    path::append(dotGit, ".git");
    if (fs::is_directory(dotGit)) {
      gitDir = std::string(dotGit);
      break;
    }
    if (fs::is_regular_file(dotGit)) {
      if (std::optional<std::string> contents = readFile(dotGit)) {
        StringRef line = StringRef(*contents).split('\n').first.trim();
        if (line.consume_front("gitdir:"))
          gitDir = joinPath(top, line.trim());
      }
      break;
    }
    std::string parent = path::parent_path(top).str();
    if (parent.empty() || parent == top)
      return stack; // not in a git work tree
    below.push_back(path::filename(top).str());
    top = parent;
  }
  std::string commonDir = gitDir;
  if (!gitDir.empty())
    if (std::optional<std::string> common =
            readFile(joinPath(gitDir, "commondir")))
      commonDir = joinPath(gitDir, StringRef(*common).trim());

  // core.excludesFile: system, then global (XDG, then ~/.gitconfig), then
  // repository configuration; the last setting wins.
  std::string xdgGit = xdgConfigHome->empty() ? joinPath(*home, ".config/git")
                                              : joinPath(*xdgConfigHome, "git");
  std::vector<std::string> configs;
  if (!llvm::sys::Process::GetEnv("GIT_CONFIG_NOSYSTEM"))
    configs.push_back("/etc/gitconfig");
  configs.push_back(joinPath(xdgGit, "config"));
  if (!home->empty())
    configs.push_back(joinPath(*home, ".gitconfig"));
  if (!gitDir.empty()) {
    configs.push_back(joinPath(commonDir, "config"));
    if (commonDir != gitDir)
      configs.push_back(joinPath(gitDir, "config.worktree"));
  }
  std::string excludesFile = joinPath(xdgGit, "ignore");
  for (const std::string &config : configs)
    if (std::optional<std::string> text = readFile(config))
      if (std::optional<std::string> setting =
              findExcludesFileSetting(*text, *home))
        excludesFile = joinPath(top, *setting);

  // Patterns of these files are relative to the top of the work tree.
  std::string rootPrefix;
  for (const std::string &component : llvm::reverse(below))
    rootPrefix += (rootPrefix.empty() ? "" : "/") + component;
  auto push = [&](StringRef prefix, const std::string &file) {
    if (std::optional<std::string> contents = readFile(file))
      stack.push(GitIgnoreFile::forAncestor(prefix, *contents));
  };
  push(rootPrefix, excludesFile);
  if (!gitDir.empty())
    push(rootPrefix, joinPath(commonDir, "info/exclude"));
  // The .gitignore files from the top down to root's parent.
  llvm::SmallString<256> dir(top);
  StringRef remaining = rootPrefix;
  while (!remaining.empty()) {
    push(remaining, joinPath(dir, ".gitignore"));
    auto [component, rest] = remaining.split('/');
    path::append(dir, component);
    remaining = rest;
  }
  return stack;
}
