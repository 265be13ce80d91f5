//===- GitRunner.h - Asking a repository for diffs and old files -*- C++ -*-===//
//
// mark-changed can read a merge request straight from a repository instead
// of a diff file. It runs `git` itself (never through a shell, so revision
// names cannot inject commands) with stdout redirected to a temporary file,
// and remembers every command line so that the exact git invocations can be
// shown in verbose output and recorded in the module.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_GITRUNNER_H
#define FASTCI_DIFF_GITRUNNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fastci {

/// Runs git commands in one repository.
class GitRunner {
public:
  /// A runner for the repository at \p repoDir, using the `git` found on
  /// PATH; fails when there is none or \p repoDir is not a directory.
  static llvm::Expected<GitRunner> create(llvm::StringRef repoDir);

  /// Runs `git -C <repo> <args...>` and returns its stdout. A non-zero exit
  /// is an error carrying the command and git's own stderr.
  llvm::Expected<std::string> run(llvm::ArrayRef<std::string> args);

  /// The merge base of \p base and \p head, as a full commit id.
  llvm::Expected<std::string> getMergeBase(llvm::StringRef base,
                                           llvm::StringRef head);
  /// `git diff` of \p from against \p to with rename detection, binary
  /// markers and \p context lines of context.
  llvm::Expected<std::string> getDiff(llvm::StringRef from, llvm::StringRef to,
                                      unsigned context);
  /// The contents of \p path at \p revision.
  llvm::Expected<std::string> getFileAt(llvm::StringRef revision,
                                        llvm::StringRef path);

  /// Every command run so far, as shell-quoted command lines.
  llvm::ArrayRef<std::string> getCommands() const { return commands; }

private:
  GitRunner(std::string git, std::string repoDir)
      : git(std::move(git)), repoDir(std::move(repoDir)) {}

  std::string git, repoDir;
  std::vector<std::string> commands;
};

} // namespace fastci

#endif // FASTCI_DIFF_GITRUNNER_H
