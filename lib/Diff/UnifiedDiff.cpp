//===- UnifiedDiff.cpp - A merge request's diff, parsed -------------------===//
//
// A single forward pass over the diff's lines. Each file section is a header
// (`diff --git` plus git's extended lines, or a bare `---`/`+++` pair), then
// either a binary marker or text hunks whose line counts are checked against
// their headers, so that a truncated or hand-edited diff is an error at the
// line where it goes wrong instead of a shorter change set.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/UnifiedDiff.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fastci;
using llvm::SMLoc;
using llvm::StringRef;

llvm::StringRef fastci::stringifyFileStatus(FileStatus status) {
  switch (status) {
  case FileStatus::Added:
    return "added";
  case FileStatus::Modified:
    return "modified";
  case FileStatus::Deleted:
    return "deleted";
  case FileStatus::Renamed:
    return "renamed";
  case FileStatus::Copied:
    return "copied";
  }
  return "modified";
}

namespace {

/// Reads a diff line by line and reports errors at byte positions.
class DiffParser {
public:
  DiffParser(StringRef buffer, DiagnosticEngine &diag)
      : buffer(buffer), diag(diag) {}

  LogicalResult parse(Patch &patch);

private:
  //===--------------------------------------------------------------------===//
  // Lines

  bool atEnd() const { return pos >= buffer.size(); }
  /// The current line without its newline (and without a trailing '\r', which
  /// headers never carry meaningfully).
  StringRef peekLine() const {
    size_t end = buffer.find('\n', pos);
    return buffer.slice(pos, end == StringRef::npos ? buffer.size() : end);
  }
  StringRef peekHeader() const { return peekLine().rtrim('\r'); }
  void nextLine() {
    size_t end = buffer.find('\n', pos);
    pos = end == StringRef::npos ? buffer.size() : end + 1;
  }
  SMLoc locAt(StringRef text) const { return SMLoc::getFromPointer(text.data()); }
  SMLoc here() const { return SMLoc::getFromPointer(buffer.data() + pos); }

  LogicalResult emitError(SMLoc loc, const llvm::Twine &message) {
    diag.error(loc, message);
    return failure();
  }

  //===--------------------------------------------------------------------===//
  // Grammar

  LogicalResult parseFile(FileDiff &file);
  LogicalResult parseGitHeader(FileDiff &file);
  LogicalResult parseExtendedHeader(FileDiff &file, StringRef line);
  LogicalResult parseFileNames(FileDiff &file);
  LogicalResult parseBinaryPatch();
  LogicalResult parseHunk(FileDiff &file);
  LogicalResult parseRange(StringRef &text, char sign, uint32_t &start,
                           uint32_t &count);
  LogicalResult parseNumber(StringRef &text, uint32_t &value);
  LogicalResult parsePath(StringRef text, std::string &path);
  LogicalResult parseMode(StringRef text, uint32_t &mode);
  LogicalResult checkFile(FileDiff &file);
  LogicalResult checkNotSeen(const FileDiff &file);

  StringRef buffer;
  DiagnosticEngine &diag;
  size_t pos = 0;
  /// The first header of each path already read: new paths, and old paths a
  /// section consumes (modified, deleted or renamed away).
  llvm::StringMap<SMLoc> seenNew, seenOld;
};

} // namespace

/// Strips git's `a/`/`b/` prefix (absent under --no-prefix).
static StringRef stripPrefix(StringRef path, StringRef prefix) {
  path.consume_front(prefix);
  return path;
}

LogicalResult DiffParser::parse(Patch &patch) {
  while (!atEnd()) {
    StringRef line = peekHeader();
    // Blank lines separate nothing in git's output, but editors and mail
    // clients add them; they carry no change.
    if (line.trim().empty()) {
      nextLine();
      continue;
    }
    if (line.starts_with("diff --cc ") || line.starts_with("diff --combined "))
      return emitError(locAt(line),
                       "combined (merge) diffs are not supported; diff the "
                       "merge base against the head (git diff base...head)");
    if (!line.starts_with("diff --git ") && !line.starts_with("--- "))
      return emitError(locAt(line),
                       "expected a file header ('diff --git' or '---')");
    FileDiff &file = patch.files.emplace_back();
    if (failed(parseFile(file)) || failed(checkNotSeen(file)))
      return failure();
  }
  return success();
}

LogicalResult DiffParser::checkNotSeen(const FileDiff &file) {
  // Each path is one side of one section. A second section for a path (two
  // patches concatenated) numbers its lines in a tree the first one already
  // changed, so mapping both onto the same old and new files would blame the
  // wrong entities. A copy's source is not consumed: git may copy a file
  // and also modify it, each in its own section.
  auto check = [&](llvm::StringMap<SMLoc> &seen,
                   const std::string &path) -> LogicalResult {
    if (path.empty())
      return success();
    auto [it, inserted] = seen.try_emplace(path, file.loc);
    if (inserted)
      return success();
    return emitError(
        file.loc,
        "'" + path + "' already has a section in this diff (at line " +
            llvm::Twine(diag.getLineAndColumn(it->second).first) +
            "); the second section's line numbers refer to a file the first "
            "already changed, so diff the base against the head once instead "
            "of concatenating patches");
  };
  if (failed(check(seenNew, file.newPath)))
    return failure();
  if (file.status != FileStatus::Copied && file.status != FileStatus::Added)
    return check(seenOld, file.oldPath);
  return success();
}

LogicalResult DiffParser::parseFile(FileDiff &file) {
  StringRef first = peekHeader();
  file.loc = locAt(first);
  if (first.starts_with("diff --git ")) {
    if (failed(parseGitHeader(file)))
      return failure();
  }
  if (!atEnd()) {
    StringRef line = peekHeader();
    if (line.starts_with("Binary files ") && line.ends_with(" differ")) {
      file.isBinary = true;
      nextLine();
      return checkFile(file);
    }
    if (line == "GIT binary patch") {
      file.isBinary = true;
      nextLine();
      if (failed(parseBinaryPatch()))
        return failure();
      return checkFile(file);
    }
    if (line.starts_with("--- ") && failed(parseFileNames(file)))
      return failure();
  }
  while (!atEnd() && peekHeader().starts_with("@@"))
    if (failed(parseHunk(file)))
      return failure();
  return checkFile(file);
}

LogicalResult DiffParser::parseGitHeader(FileDiff &file) {
  StringRef line = peekHeader();
  StringRef names = line.drop_front(strlen("diff --git "));
  // The names are only a fallback: the extended headers and the ---/+++ lines
  // name the files unambiguously. Unquoted names with spaces are split where
  // both halves agree, which is always the case without a rename.
  std::string oldName, newName;
  if (names.starts_with("\"")) {
    size_t close = 1;
    while (close < names.size() && names[close] != '"')
      close += names[close] == '\\' ? 2 : 1;
    if (close >= names.size())
      return emitError(locAt(names), "unterminated quoted path");
    if (failed(parsePath(names.take_front(close + 1), oldName)) ||
        failed(parsePath(names.drop_front(close + 1).ltrim(' '), newName)))
      return failure();
  } else {
    size_t split = StringRef::npos;
    if (names.size() % 2 == 1) {
      size_t half = names.size() / 2;
      if (names[half] == ' ' &&
          stripPrefix(names.take_front(half), "a/") ==
              stripPrefix(names.drop_front(half + 1), "b/"))
        split = half;
    }
    if (split == StringRef::npos)
      split = names.find(" b/");
    if (split == StringRef::npos)
      split = names.find(' ');
    if (split == StringRef::npos)
      return emitError(locAt(names), "expected two paths after 'diff --git'");
    if (failed(parsePath(names.take_front(split), oldName)) ||
        failed(parsePath(names.drop_front(split + 1), newName)))
      return failure();
  }
  file.oldPath = stripPrefix(oldName, "a/").str();
  file.newPath = stripPrefix(newName, "b/").str();
  nextLine();

  while (!atEnd()) {
    StringRef ext = peekHeader();
    if (ext.starts_with("diff ") || ext.starts_with("--- ") ||
        ext.starts_with("@@") || ext.starts_with("Binary files ") ||
        ext == "GIT binary patch")
      break;
    if (failed(parseExtendedHeader(file, ext)))
      return failure();
    nextLine();
  }
  if (file.status == FileStatus::Added)
    file.oldPath.clear();
  if (file.status == FileStatus::Deleted)
    file.newPath.clear();
  return success();
}

LogicalResult DiffParser::parseExtendedHeader(FileDiff &file, StringRef line) {
  uint32_t mode = 0;
  auto consume = [&](StringRef keyword) { return line.consume_front(keyword); };
  if (consume("old mode ")) {
    if (failed(parseMode(line, mode)))
      return failure();
    file.oldMode = mode;
  } else if (consume("new mode ")) {
    if (failed(parseMode(line, mode)))
      return failure();
    file.newMode = mode;
  } else if (consume("new file mode ")) {
    if (failed(parseMode(line, mode)))
      return failure();
    file.newMode = mode;
    file.status = FileStatus::Added;
  } else if (consume("deleted file mode ")) {
    if (failed(parseMode(line, mode)))
      return failure();
    file.oldMode = mode;
    file.status = FileStatus::Deleted;
  } else if (consume("similarity index ") || consume("dissimilarity index ")) {
    uint32_t percent = 0;
    StringRef digits = line;
    if (failed(parseNumber(digits, percent)))
      return failure();
    if (digits != "%" || percent > 100)
      return emitError(locAt(line), "expected a percentage from 0% to 100%");
    file.similarity = percent;
  } else if (consume("rename from ") || consume("rename old ")) {
    file.status = FileStatus::Renamed;
    return parsePath(line, file.oldPath);
  } else if (consume("rename to ") || consume("rename new ")) {
    file.status = FileStatus::Renamed;
    return parsePath(line, file.newPath);
  } else if (consume("copy from ")) {
    file.status = FileStatus::Copied;
    return parsePath(line, file.oldPath);
  } else if (consume("copy to ")) {
    file.status = FileStatus::Copied;
    return parsePath(line, file.newPath);
  } else if (consume("index ")) {
    // `index <old>..<new>[ <mode>]`: the blob ids are not needed.
    if (!line.contains(".."))
      return emitError(locAt(line), "expected '<old>..<new>' blob ids");
    size_t space = line.find(' ');
    if (space != StringRef::npos &&
        failed(parseMode(line.drop_front(space + 1), mode)))
      return failure();
  } else {
    return emitError(locAt(line), "unrecognized line in the header of '" +
                                      file.getPath() + "'");
  }
  return success();
}

LogicalResult DiffParser::parseFileNames(FileDiff &file) {
  StringRef minus = peekHeader();
  if (file.loc.getPointer() == nullptr)
    file.loc = locAt(minus);
  nextLine();
  if (atEnd() || !peekHeader().starts_with("+++ "))
    return emitError(atEnd() ? here() : locAt(peekHeader()),
                     "expected '+++' after '---'");
  StringRef plus = peekHeader();
  nextLine();

  // Plain diffs may append a tab and a timestamp to each name.
  auto name = [&](StringRef line, std::string &path) {
    StringRef text = line.drop_front(4);
    if (!text.starts_with("\""))
      text = text.split('\t').first;
    return parsePath(text, path);
  };
  std::string oldName, newName;
  if (failed(name(minus, oldName)) || failed(name(plus, newName)))
    return failure();
  if (oldName == "/dev/null") {
    file.status = FileStatus::Added;
    file.oldPath.clear();
  } else {
    file.oldPath = stripPrefix(oldName, "a/").str();
  }
  if (newName == "/dev/null") {
    if (file.status == FileStatus::Added)
      return emitError(locAt(plus), "both sides of the diff are /dev/null");
    file.status = FileStatus::Deleted;
    file.newPath.clear();
  } else {
    file.newPath = stripPrefix(newName, "b/").str();
  }
  // `+++ b/` names no file: a diff cut off inside its header, which would
  // otherwise read as a change of the file's mode only.
  if (file.status != FileStatus::Added && file.oldPath.empty())
    return emitError(locAt(minus), "expected a file name after '---'");
  if (file.status != FileStatus::Deleted && file.newPath.empty())
    return emitError(locAt(plus), "expected a file name after '+++'");
  return success();
}

LogicalResult DiffParser::parseBinaryPatch() {
  // `GIT binary patch` is one or two blocks (forward, then reverse), each a
  // `literal <size>` or `delta <size>` line, base85 lines and a blank line.
  for (unsigned block = 0; block < 2 && !atEnd(); ++block) {
    StringRef line = peekHeader();
    if (block == 1 && !line.starts_with("literal ") &&
        !line.starts_with("delta "))
      break;
    StringRef size = line;
    if (!size.consume_front("literal ") && !size.consume_front("delta "))
      return emitError(locAt(line),
                       "expected 'literal <size>' or 'delta <size>' in a "
                       "binary patch");
    uint32_t bytes = 0;
    StringRef digits = size;
    if (failed(parseNumber(digits, bytes)))
      return failure();
    if (!digits.empty())
      return emitError(locAt(digits), "expected the end of the line");
    nextLine();
    while (!atEnd() && !peekHeader().empty()) {
      StringRef data = peekHeader();
      // The first character encodes the line's decoded length: A-Z is 1-26,
      // a-z is 27-52; the rest is base85 in groups of five.
      char lengthChar = data[0];
      if (!llvm::isAlpha(lengthChar) || (data.size() - 1) % 5 != 0)
        return emitError(locAt(data), "malformed base85 line in a binary "
                                      "patch");
      nextLine();
    }
    if (!atEnd())
      nextLine(); // The blank line that ends the block.
  }
  return success();
}

LogicalResult DiffParser::parseHunk(FileDiff &file) {
  StringRef header = peekHeader();
  Hunk &hunk = file.hunks.emplace_back();
  hunk.loc = locAt(header);
  StringRef text = header.drop_front(2);
  if (!text.consume_front(" "))
    return emitError(locAt(text), "expected ' ' after '@@'");
  if (failed(parseRange(text, '-', hunk.oldStart, hunk.oldCount)))
    return failure();
  if (!text.consume_front(" "))
    return emitError(locAt(text), "expected ' ' between the hunk's ranges");
  if (failed(parseRange(text, '+', hunk.newStart, hunk.newCount)))
    return failure();
  if (!text.consume_front(" @@"))
    return emitError(locAt(text), "expected ' @@' after the hunk's ranges");
  nextLine();

  // Hunks must move forward through both files; an overlap means the diff
  // was edited or concatenated by hand.
  if (file.hunks.size() > 1) {
    const Hunk &prev = file.hunks[file.hunks.size() - 2];
    if (uint64_t(hunk.oldStart) < uint64_t(prev.oldStart) + prev.oldCount ||
        uint64_t(hunk.newStart) < uint64_t(prev.newStart) + prev.newCount)
      return emitError(hunk.loc, "hunk overlaps the previous hunk");
  }

  uint32_t oldLine = hunk.oldCount ? hunk.oldStart : hunk.oldStart + 1;
  uint32_t newLine = hunk.newCount ? hunk.newStart : hunk.newStart + 1;
  uint32_t oldLeft = hunk.oldCount, newLeft = hunk.newCount;
  char lastKind = 0;
  while (!atEnd()) {
    StringRef line = peekLine();
    char kind = line.empty() ? ' ' : line[0];
    if (kind == '\\') {
      // `\ No newline at end of file` belongs to the line before it.
      if (lastKind == 0)
        return emitError(locAt(line), "'\\' line without a preceding line");
      if (lastKind != '+')
        file.oldNoNewlineAtEnd = true;
      if (lastKind != '-')
        file.newNoNewlineAtEnd = true;
      nextLine();
      continue;
    }
    if (oldLeft == 0 && newLeft == 0)
      break;
    if (kind != ' ' && kind != '+' && kind != '-')
      return emitError(locAt(line),
                       "expected ' ', '+', '-' or '\\' at the start of a hunk "
                       "line; the hunk at line " +
                           llvm::Twine(diag.getLineAndColumn(hunk.loc).first) +
                           " still needs " + llvm::Twine(oldLeft) +
                           " old and " + llvm::Twine(newLeft) + " new lines");
    bool isOld = kind != '+', isNew = kind != '-';
    if ((isOld && oldLeft == 0) || (isNew && newLeft == 0))
      return emitError(locAt(line),
                       llvm::Twine("hunk has more ") +
                           (isOld && oldLeft == 0 ? "old" : "new") +
                           " lines than its header at line " +
                           llvm::Twine(diag.getLineAndColumn(hunk.loc).first) +
                           " says");
    DiffLine &diffLine = hunk.lines.emplace_back();
    diffLine.kind = kind;
    diffLine.text = line.empty() ? line : line.drop_front();
    if (isOld) {
      diffLine.oldLine = oldLine++;
      --oldLeft;
    }
    if (isNew) {
      diffLine.newLine = newLine++;
      --newLeft;
    }
    lastKind = kind;
    nextLine();
  }
  if (oldLeft || newLeft)
    return emitError(here(), "diff ends inside the hunk at line " +
                                 llvm::Twine(diag.getLineAndColumn(hunk.loc).first) +
                                 ": " + llvm::Twine(oldLeft) + " old and " +
                                 llvm::Twine(newLeft) +
                                 " new lines are missing");
  return success();
}

LogicalResult DiffParser::parseRange(StringRef &text, char sign,
                                     uint32_t &start, uint32_t &count) {
  StringRef signText(&sign, 1);
  if (!text.consume_front(signText))
    return emitError(locAt(text), "expected '" + signText +
                                      "' to start the hunk's range");
  if (failed(parseNumber(text, start)))
    return failure();
  count = 1;
  if (text.consume_front(","))
    return parseNumber(text, count);
  return success();
}

LogicalResult DiffParser::parseNumber(StringRef &text, uint32_t &value) {
  size_t digits = 0;
  while (digits < text.size() && llvm::isDigit(text[digits]))
    ++digits;
  if (digits == 0)
    return emitError(locAt(text), "expected a number");
  uint64_t parsed = 0;
  for (char c : text.take_front(digits)) {
    parsed = parsed * 10 + (c - '0');
    if (parsed > UINT32_MAX)
      return emitError(locAt(text), "number is too large");
  }
  value = static_cast<uint32_t>(parsed);
  text = text.drop_front(digits);
  return success();
}

LogicalResult DiffParser::parseMode(StringRef text, uint32_t &mode) {
  if (text.empty() || text.size() > 7 ||
      !llvm::all_of(text, [](char c) { return c >= '0' && c <= '7'; }))
    return emitError(locAt(text), "expected an octal file mode");
  text.getAsInteger(8, mode);
  return success();
}

/// Unquotes a path git wrote as a C string (`"a/caf\303\251.py"`), which it
/// does for names with control characters, quotes, backslashes or non-ASCII.
LogicalResult DiffParser::parsePath(StringRef text, std::string &path) {
  path.clear();
  if (text.empty())
    return emitError(locAt(text), "expected a path");
  if (!text.starts_with("\"")) {
    path = text.str();
    return success();
  }
  size_t i = 1;
  for (; i < text.size() && text[i] != '"'; ++i) {
    char c = text[i];
    if (c != '\\') {
      path.push_back(c);
      continue;
    }
    if (++i == text.size())
      break;
    char escape = text[i];
    switch (escape) {
    case 'n':
      path.push_back('\n');
      break;
    case 't':
      path.push_back('\t');
      break;
    case 'a':
      path.push_back('\a');
      break;
    case 'b':
      path.push_back('\b');
      break;
    case 'f':
      path.push_back('\f');
      break;
    case 'r':
      path.push_back('\r');
      break;
    case 'v':
      path.push_back('\v');
      break;
    case '"':
    case '\\':
      path.push_back(escape);
      break;
    default: {
      if (i + 2 >= text.size() || !llvm::all_of(text.substr(i, 3), [](char d) {
            return d >= '0' && d <= '7';
          }))
        return emitError(locAt(text.drop_front(i - 1)),
                         "invalid escape in a quoted path");
      unsigned byte = 0;
      text.substr(i, 3).getAsInteger(8, byte);
      if (byte > 255)
        return emitError(locAt(text.drop_front(i - 1)),
                         "invalid escape in a quoted path");
      path.push_back(static_cast<char>(byte));
      i += 2;
    }
    }
  }
  if (i >= text.size())
    return emitError(locAt(text), "unterminated quoted path");
  if (i + 1 != text.size())
    return emitError(locAt(text.drop_front(i + 1)),
                     "unexpected text after a quoted path");
  return success();
}

LogicalResult DiffParser::checkFile(FileDiff &file) {
  if (file.oldPath.empty() && file.newPath.empty())
    return emitError(file.loc, "file header names no file");
  for (const Hunk &hunk : file.hunks) {
    if (file.status == FileStatus::Added && hunk.oldCount)
      return emitError(hunk.loc, "hunk removes lines from a new file");
    if (file.status == FileStatus::Deleted && hunk.newCount)
      return emitError(hunk.loc, "hunk adds lines to a deleted file");
  }
  return success();
}

LogicalResult fastci::parseUnifiedDiff(unsigned bufferId,
                                       DiagnosticEngine &diag, Patch &patch) {
  StringRef buffer =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  return DiffParser(buffer, diag).parse(patch);
}

LogicalResult fastci::parseUnifiedDiffFile(llvm::StringRef path,
                                           DiagnosticEngine &diag,
                                           Patch &patch) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (std::error_code ec = buffer.getError()) {
    diag.emit(Severity::Error, path, 0, 0,
              "cannot read diff: " + ec.message());
    return failure();
  }
  return parseUnifiedDiff(diag.addBuffer(std::move(*buffer)), diag, patch);
}

//===----------------------------------------------------------------------===//
// Pre-image reconstruction
//===----------------------------------------------------------------------===//

/// Appends \p line and its newline to \p out.
static void appendLine(std::string &out, StringRef line) {
  out.append(line.data(), line.size());
  out.push_back('\n');
}

std::optional<std::string> fastci::reconstructOldFile(const FileDiff &file,
                                                      StringRef newText) {
  if (file.status == FileStatus::Added)
    return std::string();
  llvm::SmallVector<StringRef> newLines;
  if (!newText.empty())
    newText.split(newLines, '\n');
  // A trailing newline ends the last line; it does not start another.
  if (!newLines.empty() && newLines.back().empty())
    newLines.pop_back();

  std::string old;
  uint32_t nextNew = 1; // The first new line not yet copied.
  for (const Hunk &hunk : file.hunks) {
    uint32_t hunkNewFirst = hunk.newCount ? hunk.newStart : hunk.newStart + 1;
    if (hunkNewFirst < nextNew || hunkNewFirst - 1 > newLines.size())
      return std::nullopt;
    for (; nextNew < hunkNewFirst; ++nextNew)
      appendLine(old, newLines[nextNew - 1]);
    for (const DiffLine &line : hunk.lines) {
      if (line.kind != '-') {
        // Context and added lines must be what the new file holds there.
        if (line.newLine > newLines.size() ||
            newLines[line.newLine - 1].rtrim('\r') != line.text.rtrim('\r'))
          return std::nullopt;
        nextNew = line.newLine + 1;
      }
      if (line.kind != '+')
        appendLine(old, line.text);
    }
  }
  for (; nextNew <= newLines.size(); ++nextNew)
    appendLine(old, newLines[nextNew - 1]);
  if (file.oldNoNewlineAtEnd && !old.empty())
    old.pop_back();
  return old;
}

std::optional<std::string>
fastci::reconstructOldFileFromDiff(const FileDiff &file) {
  if (file.status == FileStatus::Added)
    return std::string();
  std::string old;
  uint32_t nextOld = 1;
  for (const Hunk &hunk : file.hunks) {
    for (const DiffLine &line : hunk.lines) {
      if (line.kind == '+')
        continue;
      if (line.oldLine != nextOld)
        return std::nullopt;
      appendLine(old, line.text);
      ++nextOld;
    }
  }
  if (file.oldNoNewlineAtEnd && !old.empty())
    old.pop_back();
  return old;
}
