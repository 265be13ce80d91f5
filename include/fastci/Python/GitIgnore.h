//===- GitIgnore.h - gitignore pattern semantics ----------------*- C++ -*-===//
//
// A faithful implementation of the pattern language of gitignore(5), so that
// the repository walk skips exactly the files git itself would not track:
// nested .gitignore files scoped to their directory, later patterns
// overriding earlier ones, `!` negation (which cannot re-include a file whose
// parent directory is excluded), patterns anchored by a leading or middle
// slash, `**` spanning directories, directory-only patterns with a trailing
// slash, character classes and backslash escapes. The same glob matcher
// serves the pass's include= and exclude= options.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_GITIGNORE_H
#define FASTCI_PYTHON_GITIGNORE_H

#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>
#include <vector>

namespace fastci::python {

/// Matches \p text against the glob \p pattern with gitignore's wildmatch
/// rules: `*` and `?` never match `/`, `**` between slashes (or at either
/// end) matches any number of directories, `[...]` is a character class
/// (`!` or `^` negates it), and `\` escapes the next character.
bool matchGlob(llvm::StringRef pattern, llvm::StringRef text);

/// The patterns of one .gitignore file, scoped to the directory holding it.
class GitIgnoreFile {
public:
  /// Parses \p contents, the text of the .gitignore in \p baseDir (a path
  /// relative to the repository root, "" for the root itself).
  GitIgnoreFile(llvm::StringRef baseDir, llvm::StringRef contents);

  /// Decides \p path (relative to the repository root, `/`-separated): true
  /// when the last matching pattern ignores it, false when it re-includes it
  /// with `!`, and nothing when no pattern of this file matches.
  std::optional<bool> match(llvm::StringRef path, bool isDir) const;

  /// Number of patterns read (blank lines and comments excluded).
  size_t size() const { return patterns.size(); }

private:
  struct Pattern {
    std::string glob;
    bool negated = false;
    bool dirOnly = false;
    /// Matches the whole path relative to baseDir rather than its last
    /// component (the pattern had a slash before its end).
    bool anchored = false;
  };
  std::string baseDir;
  std::vector<Pattern> patterns;
};

/// The stack of .gitignore files in effect while walking down a tree: a
/// deeper file takes precedence over a shallower one.
class GitIgnoreStack {
public:
  /// Enters a directory whose .gitignore (possibly empty) is \p file.
  void push(GitIgnoreFile file) { files.push_back(std::move(file)); }
  /// Leaves the directory entered by the matching push().
  void pop() { files.pop_back(); }
  /// True when \p path (relative to the root) is ignored. The caller never
  /// asks about the contents of an ignored directory, which is how an
  /// excluded parent wins over a negated pattern below it, as in git.
  bool isIgnored(llvm::StringRef path, bool isDir) const;

private:
  std::vector<GitIgnoreFile> files;
};

} // namespace fastci::python

#endif // FASTCI_PYTHON_GITIGNORE_H
