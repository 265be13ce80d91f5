//===- GitIgnore.h - gitignore pattern semantics ----------------*- C++ -*-===//
//
// A faithful implementation of the pattern language of gitignore(5), so that
// the repository walk skips exactly the files git itself would not track:
// nested .gitignore files scoped to their directory, later patterns
// overriding earlier ones, `!` negation (which cannot re-include a file whose
// parent directory is excluded), patterns anchored by a leading or middle
// slash, `**` spanning directories, directory-only patterns with a trailing
// slash, character classes and backslash escapes. Like git, the walk also
// honours `$GIT_DIR/info/exclude`, `core.excludesFile` and the .gitignore
// files above the walk's root. The same glob matcher serves the pass's
// include= and exclude= options.
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

  /// Parses the patterns of an exclude file that lies above the walk's
  /// root: `$GIT_DIR/info/exclude`, `core.excludesFile`, or a .gitignore of
  /// a directory between the work tree's top and the root. \p rootPrefix is
  /// the root's path relative to the directory the patterns are relative
  /// to ("" when that is the root itself).
  static GitIgnoreFile forAncestor(llvm::StringRef rootPrefix,
                                   llvm::StringRef contents);

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
    /// How the glob is matched: most patterns are plain names (`.venv`) or
    /// `*` and a plain suffix (`*.pyc`), which need no wildcard matcher
    /// (every path of a warm run is matched against every pattern).
    enum class Form : uint8_t { Glob, Literal, Suffix } form = Form::Glob;
  };
  std::string baseDir;
  /// For an ancestor's file: prepended (with a `/`) to every path asked.
  std::string rootPrefix;
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

/// The exclude files git reads besides the .gitignore files inside \p root,
/// lowest precedence first: `core.excludesFile` (from the system, global
/// and repository configuration; by default `$XDG_CONFIG_HOME/git/ignore`
/// or `~/.config/git/ignore`), `$GIT_DIR/info/exclude`, and, when \p root
/// lies below the top of its work tree, the .gitignore files from the top
/// down to \p root's parent. The walk pushes its own .gitignore files on
/// top. Files that are missing or unreadable count as empty, as in git.
/// \p home and \p xdgConfigHome stand for `$HOME` and `$XDG_CONFIG_HOME`
/// (read from the environment when unset).
GitIgnoreStack
loadRepositoryIgnores(llvm::StringRef root,
                      std::optional<std::string> home = std::nullopt,
                      std::optional<std::string> xdgConfigHome = std::nullopt);

/// The value of `core.excludesFile` in the git configuration text
/// \p config (the last one wins; `~/` is expanded with \p home), or
/// nothing when it is not set.
std::optional<std::string> findExcludesFileSetting(llvm::StringRef config,
                                                   llvm::StringRef home);

} // namespace fastci::python

#endif // FASTCI_PYTHON_GITIGNORE_H
