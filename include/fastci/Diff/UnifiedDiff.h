//===- UnifiedDiff.h - A merge request's diff, parsed -----------*- C++ -*-===//
//
// The data model and reader for unified diffs as `git diff` writes them: any
// context size (-U0 included), rename and copy detection, mode changes, new
// and deleted files, binary patches and `\ No newline at end of file`. Plain
// `---`/`+++` diffs without git's extended headers are read too. The reader
// is strict: anything it does not understand is a located error rather than
// a file silently left out of the change set, because a dropped file is a
// test silently not run. So is a file listed twice (concatenated patches),
// whose second section counts lines in a tree the first already changed.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_DIFF_UNIFIEDDIFF_H
#define FASTCI_DIFF_UNIFIEDDIFF_H

#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fastci {

/// What a diff did to a file.
enum class FileStatus : uint8_t { Added, Modified, Deleted, Renamed, Copied };

/// The keyword naming \p status (`added`, `modified`, ...).
llvm::StringRef stringifyFileStatus(FileStatus status);

/// One line of a hunk.
struct DiffLine {
  /// ' ' (context), '+' (added) or '-' (removed).
  char kind = ' ';
  /// The line's text without the marker and without the newline; points into
  /// the diff buffer.
  llvm::StringRef text;
  /// Line number in the old file (for ' ' and '-') and in the new file (for
  /// ' ' and '+'); 0 where the line does not exist on that side.
  uint32_t oldLine = 0, newLine = 0;
};

/// One `@@ -a,b +c,d @@` block.
struct Hunk {
  /// The header's numbers, as written (a count of 0 puts the start just
  /// before the change, as diff does).
  uint32_t oldStart = 0, oldCount = 0, newStart = 0, newCount = 0;
  /// The lines, in order.
  std::vector<DiffLine> lines;
  /// The header, for diagnostics.
  llvm::SMLoc loc;
};

/// Everything the diff says about one file.
struct FileDiff {
  /// The path before and after, relative to the repository root, without the
  /// `a/` and `b/` prefixes. Empty on the side where the file does not exist.
  std::string oldPath, newPath;
  /// What happened to the file.
  FileStatus status = FileStatus::Modified;
  /// Git's similarity index for renames and copies (0-100).
  unsigned similarity = 0;
  /// File modes (octal, e.g. 0100644) where the diff states them.
  std::optional<uint32_t> oldMode, newMode;
  /// True for `Binary files ... differ` and `GIT binary patch`.
  bool isBinary = false;
  /// The text hunks, in order.
  std::vector<Hunk> hunks;
  /// True when a side's last line has no newline.
  bool oldNoNewlineAtEnd = false, newNoNewlineAtEnd = false;
  /// The file's first header line, for diagnostics.
  llvm::SMLoc loc;

  /// The path that names the file after the change (the old path when the
  /// file was deleted).
  llvm::StringRef getPath() const {
    return newPath.empty() ? llvm::StringRef(oldPath) : newPath;
  }
  /// True when only the mode changed.
  bool isModeChangeOnly() const {
    return status == FileStatus::Modified && !isBinary && hunks.empty() &&
           oldMode != newMode;
  }
};

/// A whole diff: one entry per file, in diff order.
struct Patch {
  std::vector<FileDiff> files;
};

/// Parses buffer \p bufferId of \p diag's SourceMgr as a unified diff into
/// \p patch. A path may appear once as a new path and once as an old path
/// that a section modifies, deletes or renames away (a copy's source may
/// recur); a second section for it is an error at its header. Every problem
/// is reported at its position in the buffer; on
/// failure \p patch holds what was read before the first error. Lines of
/// \p patch point into the buffer, which the SourceMgr keeps alive.
LogicalResult parseUnifiedDiff(unsigned bufferId, DiagnosticEngine &diag,
                               Patch &patch);

/// Reads \p path into \p diag's SourceMgr and parses it; returns the buffer
/// id through \p bufferId. A file that cannot be read is reported as an error.
LogicalResult parseUnifiedDiffFile(llvm::StringRef path,
                                   DiagnosticEngine &diag, Patch &patch);

/// Rebuilds the old version of \p file by applying its hunks in reverse to
/// \p newText, the file's new version (empty for a deleted file). Lines
/// between hunks are unchanged, so this is exact for any context size.
/// Returns std::nullopt when the hunks do not fit \p newText.
std::optional<std::string> reconstructOldFile(const FileDiff &file,
                                              llvm::StringRef newText);

/// Rebuilds as much of the old version of \p file as the diff alone shows:
/// the whole file for deletions and for diffs whose context covers the file
/// from its first line without gaps (as `git diff -U<large>` writes). Lines
/// after the last hunk cannot be known and are missing. Returns std::nullopt
/// when a gap between hunks makes the text unknowable.
std::optional<std::string> reconstructOldFileFromDiff(const FileDiff &file);

} // namespace fastci

#endif // FASTCI_DIFF_UNIFIEDDIFF_H
