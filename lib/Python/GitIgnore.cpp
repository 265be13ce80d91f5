//===- GitIgnore.cpp - gitignore pattern semantics ------------------------===//
//
// The glob matcher follows git's wildmatch.c in WM_PATHNAME mode: its two
// abort codes give up on a `*` as soon as no later position can succeed, so
// hostile patterns cannot make the walk hang.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/GitIgnore.h"
#include "llvm/ADT/StringExtras.h"

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
    patterns.push_back(std::move(pattern));
  }
}

std::optional<bool> GitIgnoreFile::match(StringRef path, bool isDir) const {
  StringRef relative = path;
  if (!baseDir.empty()) {
    if (!relative.consume_front(baseDir) || !relative.consume_front("/"))
      return std::nullopt;
  }
  StringRef basename = relative.substr(relative.rfind('/') + 1);
  for (const Pattern &pattern : llvm::reverse(patterns)) {
    if (pattern.dirOnly && !isDir)
      continue;
    if (matchGlob(pattern.glob, pattern.anchored ? relative : basename))
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
