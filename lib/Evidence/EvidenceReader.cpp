//===- EvidenceReader.cpp - Reading one file of sampled stacks ------------===//
//
// The reader is built for throughput: a file holds one line per distinct
// stack, sorted, so consecutive lines share long prefixes. Each line is
// compared bytewise with the previous one and reading resumes after the last
// frame separator inside the common prefix, reusing the trie node, reduction
// state and staleness reached there; only the new suffix is validated,
// split and looked up. Distinct frame texts are decoded and resolved once per
// file and cached by their raw bytes.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceReader.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/SwapByteOrder.h"
#include <algorithm>
#include <cstring>

using namespace fastci;

/// The first line of every file in FastCI's format, without the version.
static constexpr llvm::StringLiteral kMagic = "# fastci-evidence: ";
/// The only format version this reader understands.
static constexpr llvm::StringLiteral kVersion = "1";

/// Returns the offset of the first byte of \p text that is not valid UTF-8
/// or is a control character other than tab, or npos. Evidence is text; such
/// bytes mean binary junk or corruption, and accepting them would put
/// garbage symbols in the IR.
static size_t findInvalidByte(llvm::StringRef text) {
  const auto *bytes = reinterpret_cast<const llvm::UTF8 *>(text.data());
  size_t size = text.size();
  size_t i = 0;
  // Fast path: whole words of printable ASCII. A byte b is below 0x20 iff
  // (b - 0x20) borrows into its top bit while b's own top bit is clear.
  constexpr uint64_t kOnes = 0x0101010101010101, kHighs = 0x8080808080808080;
  for (; i + sizeof(uint64_t) <= size; i += sizeof(uint64_t)) {
    uint64_t word;
    std::memcpy(&word, bytes + i, sizeof(word));
    if ((word & kHighs) || ((word - 0x20 * kOnes) & ~word & kHighs))
      break;
  }
  while (i < size) {
    llvm::UTF8 byte = bytes[i];
    if (byte < 0x80) {
      if (byte < 0x20 && byte != '\t')
        return i;
      ++i;
      continue;
    }
    unsigned length = llvm::getNumBytesForUTF8(byte);
    if (length > size - i ||
        !llvm::isLegalUTF8Sequence(bytes + i, bytes + i + length))
      return i;
    i += length;
  }
  return llvm::StringRef::npos;
}

/// The length of the longest common prefix of \p lhs and \p rhs. Lines are
/// hundreds of bytes and share most of them, so this compares a word at a
/// time; it is the reader's innermost loop.
static size_t commonPrefixLength(llvm::StringRef lhs, llvm::StringRef rhs) {
  size_t limit = std::min(lhs.size(), rhs.size());
  size_t i = 0;
  if constexpr (llvm::sys::IsLittleEndianHost) {
    for (; i + sizeof(uint64_t) <= limit; i += sizeof(uint64_t)) {
      uint64_t a, b;
      std::memcpy(&a, lhs.data() + i, sizeof(a));
      std::memcpy(&b, rhs.data() + i, sizeof(b));
      if (a != b)
        return i + llvm::countr_zero(a ^ b) / 8;
    }
  }
  while (i < limit && lhs[i] == rhs[i])
    ++i;
  return i;
}

/// Decodes `%XX` escapes of \p text into \p out. On a malformed escape,
/// returns false and sets \p errorAt to its offset.
static bool percentDecode(llvm::StringRef text, std::string &out,
                          size_t &errorAt) {
  out.clear();
  if (!text.contains('%')) {
    out.assign(text.data(), text.size());
    return true;
  }
  out.reserve(text.size());
  for (size_t i = 0, e = text.size(); i != e; ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (e - i < 3) {
      errorAt = i;
      return false;
    }
    unsigned hi = llvm::hexDigitValue(text[i + 1]);
    unsigned lo = llvm::hexDigitValue(text[i + 2]);
    if (hi == ~0u || lo == ~0u) {
      errorAt = i;
      return false;
    }
    out += char(hi << 4 | lo);
    i += 2;
  }
  return true;
}

/// Parses a decimal line number (digits only, at most 2^32-1).
static bool parseLineNumber(llvm::StringRef text, uint32_t &line) {
  if (text.empty() || !llvm::all_of(text, llvm::isDigit))
    return false;
  uint64_t value;
  if (text.getAsInteger(10, value) || value > UINT32_MAX)
    return false;
  line = uint32_t(value);
  return true;
}

namespace {

/// One frame of a source stack, split but not yet resolved.
struct FrameText {
  std::string path, qualname;
  uint32_t line = 0;
};

/// A distinct raw frame text of the file and what it became.
struct CachedFrame {
  enum class Kind : uint8_t {
    /// A repository entity, a library leaf or vanished code.
    Resolved,
    /// A py-spy pseudo-frame (`process ...`, `thread (...)`): skipped.
    Pseudo,
    /// Malformed; \c error and \c errorColumn say why and where.
    Malformed,
  };
  Kind kind = Kind::Resolved;
  ResolvedFrame::Kind resolvedKind = ResolvedFrame::Kind::Library;
  /// Index into EvidenceFile::frames, for entities and leaves.
  uint32_t token = 0;
  bool stale = false;
  /// True once the stale symbol was recorded (on the first good line).
  bool staleRecorded = false;
  /// The stale symbol, for stale frames.
  std::string staleSymbol;
  std::string error;
  size_t errorColumn = 0;
};

/// The state after a frame of the previous good line, from which the next
/// line resumes when it shares the prefix up to this frame.
struct FrameState {
  /// Offset (in the line) of the separator after this frame.
  size_t end;
  /// Trie node reached, kRoot if none.
  uint32_t node;
  /// True when the last kept frame is a repository frame, so the next
  /// library frame becomes a leaf.
  bool afterRepository;
  /// True when the stack so far passes through stale code.
  bool stale;
  /// The CachedFrame this frame is.
  uint32_t frame;
};

/// Reads one file into an EvidenceFile.
class Reader {
public:
  Reader(llvm::StringRef buffer, const EvidenceReadOptions &options,
         EvidenceFile &file)
      : buffer(buffer), options(options), file(file) {}

  void read();

private:
  /// Reads the FastCI header from the lines starting at \p pos; returns
  /// false if the file must be skipped. Leaves \p pos at the first body line.
  bool readHeader(size_t &pos, unsigned &lineNo);
  /// Applies one `# key: value` header line.
  void readHeaderLine(llvm::StringRef line, size_t offset, unsigned lineNo);
  /// Reads one `frames count` line.
  void readStackLine(llvm::StringRef line, size_t offset, unsigned lineNo);
  /// The CachedFrame index for raw frame text \p text.
  uint32_t getFrame(llvm::StringRef text);
  /// Splits a frame in FastCI's syntax, or says why it cannot.
  void splitFastCIFrame(llvm::StringRef text, FrameText &frame,
                        CachedFrame &cached);
  /// Splits a frame in py-spy's syntax, or says why it cannot.
  void splitPySpyFrame(llvm::StringRef text, FrameText &frame,
                       CachedFrame &cached);
  /// Resolves \p frame and records it in the file's frame table.
  void resolve(FrameText &frame, CachedFrame &cached);
  /// The trie node \p parent extended by frame \p token.
  uint32_t getChild(uint32_t parent, uint32_t token);
  /// Records a problem at \p column (0-based) of the line at \p lineOffset.
  void problem(size_t lineOffset, unsigned lineNo, size_t column,
               const llvm::Twine &message);
  /// Forgets the previous line, so the next one is read from its start.
  void resetPrefix() {
    states.clear();
    previousBody = {};
  }

  llvm::StringRef buffer;
  const EvidenceReadOptions &options;
  EvidenceFile &file;
  const FrameResolver *resolver = nullptr;
  unsigned numProblems = 0;

  std::vector<CachedFrame> cache;
  llvm::DenseMap<llvm::StringRef, uint32_t> cacheIndex;
  llvm::DenseMap<EntityId, uint32_t> entityTokens;
  llvm::StringMap<uint32_t> leafTokens;
  llvm::DenseMap<uint64_t, uint32_t> children;

  llvm::StringRef previousBody;
  llvm::SmallVector<FrameState, 64> states;
  /// A pid named by a py-spy `process N:` pseudo-frame.
  int64_t pseudoPid = 0;
};

} // namespace

void Reader::problem(size_t lineOffset, unsigned lineNo, size_t column,
                     const llvm::Twine &message) {
  ++numProblems;
  if (numProblems > options.maxProblems)
    return;
  file.problems.push_back(
      {lineOffset + column, lineNo, unsigned(column + 1), message.str()});
}

void Reader::read() {
  size_t pos = 0;
  unsigned lineNo = 1;
  if (buffer.empty()) {
    file.skipped = true;
    problem(0, 1, 0, "empty evidence file; skipped");
    return;
  }

  if (buffer.starts_with("#")) {
    file.format = EvidenceFormat::FastCI;
    if (!readHeader(pos, lineNo)) {
      file.skipped = true;
      return;
    }
  } else {
    file.format = EvidenceFormat::PySpyRaw;
    file.header.testId = options.pyspyTestId.str();
  }
  resolver = &options.getResolver(file.header.revision);

  for (; pos < buffer.size(); ++lineNo) {
    size_t newline = buffer.find('\n', pos);
    if (newline == llvm::StringRef::npos) {
      // Writers end every line; a missing newline means the file was cut
      // short, and a cut count would be a silently wrong answer.
      ++file.malformedLines;
      problem(pos, lineNo, buffer.size() - pos,
              "last line has no newline (truncated file?); ignored");
      break;
    }
    llvm::StringRef line = buffer.slice(pos, newline);
    size_t offset = pos;
    pos = newline + 1;
    line.consume_back("\r");
    if (line.empty() && file.format == EvidenceFormat::PySpyRaw)
      continue;
    if (line.starts_with("#") && file.format == EvidenceFormat::FastCI) {
      // The header loop consumed every leading `#` line.
      problem(offset, lineNo, 0, "header line after stack lines; ignored");
      ++file.malformedLines;
      resetPrefix();
      continue;
    }
    ++file.lines;
    readStackLine(line, offset, lineNo);
  }

  if (numProblems > options.maxProblems)
    file.problems.push_back({file.problems.back().offset,
                             file.problems.back().line,
                             file.problems.back().column,
                             (llvm::Twine(numProblems - options.maxProblems) +
                              " more problems in this file not shown")
                                 .str()});
  if (file.format == EvidenceFormat::PySpyRaw && pseudoPid)
    file.header.pid = pseudoPid;
  llvm::sort(file.staleSymbols);
}

bool Reader::readHeader(size_t &pos, unsigned &lineNo) {
  size_t newline = buffer.find('\n');
  llvm::StringRef first = buffer.slice(0, newline).rtrim('\r');
  if (!first.starts_with(kMagic)) {
    problem(0, 1, 0,
            "not a FastCI evidence file: the first line must be '" + kMagic +
                kVersion + "'; skipped");
    return false;
  }
  llvm::StringRef version = first.drop_front(kMagic.size());
  if (version != kVersion) {
    problem(0, 1, kMagic.size(),
            "unsupported evidence format version '" + version +
                "' (this reader knows version " + kVersion + "); skipped");
    return false;
  }
  if (newline == llvm::StringRef::npos) {
    problem(0, 1, first.size(),
            "evidence file ends inside its header; skipped");
    return false;
  }
  pos = newline + 1;
  lineNo = 2;
  while (pos < buffer.size() && buffer[pos] == '#') {
    newline = buffer.find('\n', pos);
    if (newline == llvm::StringRef::npos)
      break; // Reported by the body loop as a truncated line.
    readHeaderLine(buffer.slice(pos, newline).rtrim('\r'), pos, lineNo);
    pos = newline + 1;
    ++lineNo;
  }
  if (file.header.testId.empty()) {
    problem(0, 1, 0, "evidence header has no 'test-id'; skipped");
    return false;
  }
  return true;
}

void Reader::readHeaderLine(llvm::StringRef line, size_t offset,
                            unsigned lineNo) {
  if (size_t bad = findInvalidByte(line); bad != llvm::StringRef::npos) {
    problem(offset, lineNo, bad, "header line is not UTF-8 text; ignored");
    return;
  }
  llvm::StringRef text = line.drop_front().ltrim(' ');
  auto [key, value] = text.split(": ");
  if (key.empty() || key.size() == text.size()) {
    problem(offset, lineNo, 0, "header line is not '# key: value'; ignored");
    return;
  }
  size_t valueColumn = value.data() - line.data();
  std::string decoded;
  size_t errorAt = 0;
  if (!percentDecode(value, decoded, errorAt)) {
    problem(offset, lineNo, valueColumn + errorAt,
            "malformed '%' escape in header value; ignored");
    return;
  }
  EvidenceHeader &header = file.header;
  auto parseInt = [&](int64_t &out) {
    if (llvm::StringRef(decoded).getAsInteger(10, out))
      problem(offset, lineNo, valueColumn,
              "header '" + key + "' is not an integer; ignored");
  };
  auto parseFloat = [&](double &out) {
    if (llvm::StringRef(decoded).getAsDouble(out) || out < 0)
      problem(offset, lineNo, valueColumn,
              "header '" + key + "' is not a non-negative number; ignored");
  };
  if (key == "test-id") {
    header.testId = decoded;
    file.testIdLine = lineNo;
    file.testIdColumn = valueColumn + 1;
  } else if (key == "pid")
    parseInt(header.pid);
  else if (key == "rank")
    parseInt(header.rank);
  else if (key == "local-rank")
    parseInt(header.localRank);
  else if (key == "rate")
    parseFloat(header.rate);
  else if (key == "wall-seconds")
    parseFloat(header.wallSeconds);
  else if (key == "cpu-seconds")
    parseFloat(header.cpuSeconds);
  else if (key == "revision")
    header.revision = decoded == "unknown" ? "" : decoded;
  else if (key == "root")
    header.root = decoded;
  else if (key == "complete") {
    if (decoded == "true" || decoded == "false")
      header.complete = decoded == "true";
    else
      problem(offset, lineNo, valueColumn,
              "header 'complete' is not 'true' or 'false'; ignored");
  }
  // Other keys (python, sampler, samples, ...) are informational.
}

void Reader::readStackLine(llvm::StringRef line, size_t offset,
                           unsigned lineNo) {
  size_t space = line.rfind(' ');
  llvm::StringRef body =
      space == llvm::StringRef::npos ? line : line.take_front(space);

  // Resume after the last frame separator the line shares with the previous
  // one: states[i].end < shared means that separator is in the shared part.
  size_t shared = commonPrefixLength(body, previousBody);
  size_t resumed = std::partition_point(states.begin(), states.end(),
                                        [&](const FrameState &state) {
                                          return state.end < shared;
                                        }) -
                   states.begin();
  states.resize(resumed);
  size_t from = resumed ? states.back().end + 1 : 0;

  auto fail = [&](size_t column, const llvm::Twine &message) {
    ++file.malformedLines;
    problem(offset, lineNo, column, message);
    resetPrefix();
  };
  if (size_t bad = findInvalidByte(line.drop_front(from));
      bad != llvm::StringRef::npos) {
    return fail(from + bad, line[from + bad] & 0x80
                                ? "invalid UTF-8; line ignored"
                                : "control character in stack line; ignored");
  }
  if (line.empty())
    return fail(0, "empty line; ignored");
  if (space == llvm::StringRef::npos)
    return fail(line.size(), "expected 'stack count', found no sample count; "
                             "line ignored");
  llvm::StringRef countText = line.drop_front(space + 1);
  uint64_t count = 0;
  if (countText.empty() || !llvm::all_of(countText, llvm::isDigit) ||
      countText.getAsInteger(10, count))
    return fail(space + 1, "sample count '" + countText +
                               "' is not a non-negative integer; line ignored");
  if (body.empty())
    return fail(0, "empty stack; line ignored");

  uint32_t node = resumed ? states.back().node : EvidenceFile::kRoot;
  bool afterRepository = resumed && states.back().afterRepository;
  bool stale = resumed && states.back().stale;
  for (size_t pos = from;;) {
    size_t end = std::min(body.find(';', pos), body.size());
    uint32_t index = getFrame(body.slice(pos, end));
    const CachedFrame &frame = cache[index];
    if (frame.kind == CachedFrame::Kind::Malformed)
      return fail(pos + frame.errorColumn, frame.error + "; line ignored");
    if (frame.kind == CachedFrame::Kind::Resolved) {
      stale |= frame.stale;
      switch (frame.resolvedKind) {
      case ResolvedFrame::Kind::Entity:
        node = getChild(node, frame.token);
        afterRepository = true;
        break;
      case ResolvedFrame::Kind::Library:
        if (afterRepository)
          node = getChild(node, frame.token);
        afterRepository = false;
        break;
      case ResolvedFrame::Kind::Vanished:
        // The code is gone but it ran here: what it called stays attributed
        // to the caller, which is the conservative reading.
        break;
      }
    }
    states.push_back({end, node, afterRepository, stale, index});
    if (end == body.size())
      break;
    pos = end + 1;
  }

  previousBody = body;
  for (size_t i = resumed, e = states.size(); i != e; ++i) {
    CachedFrame &frame = cache[states[i].frame];
    if (frame.stale && !frame.staleRecorded) {
      frame.staleRecorded = true;
      file.staleSymbols.push_back(frame.staleSymbol);
    }
  }
  file.samples += count;
  if (stale)
    file.staleSamples += count;
  if (node == EvidenceFile::kRoot)
    file.externalSamples += count;
  else
    file.counts[node] += count;
}

uint32_t Reader::getChild(uint32_t parent, uint32_t token) {
  uint64_t key = uint64_t(parent) << 32 | token;
  auto [it, inserted] = children.try_emplace(key, file.nodes.size());
  if (inserted) {
    file.nodes.push_back({parent, token});
    file.counts.push_back(0);
  }
  return it->second;
}

uint32_t Reader::getFrame(llvm::StringRef text) {
  auto [it, inserted] = cacheIndex.try_emplace(text, cache.size());
  if (!inserted)
    return it->second;
  CachedFrame &cached = cache.emplace_back();
  FrameText frame;
  if (text.empty()) {
    cached.kind = CachedFrame::Kind::Malformed;
    cached.error = "empty frame";
  } else if (file.format == EvidenceFormat::FastCI) {
    splitFastCIFrame(text, frame, cached);
  } else {
    splitPySpyFrame(text, frame, cached);
  }
  if (cached.kind == CachedFrame::Kind::Resolved)
    resolve(frame, cached);
  return it->second;
}

void Reader::splitFastCIFrame(llvm::StringRef text, FrameText &frame,
                              CachedFrame &cached) {
  auto malformed = [&](size_t column, const llvm::Twine &message) {
    cached.kind = CachedFrame::Kind::Malformed;
    cached.error = message.str();
    cached.errorColumn = column;
  };
  // Qualnames escape `:`, so the last two colons delimit the fields even
  // when the path contains colons.
  size_t lineColon = text.rfind(':');
  size_t nameColon = lineColon == llvm::StringRef::npos
                         ? llvm::StringRef::npos
                         : text.rfind(':', lineColon);
  if (nameColon == llvm::StringRef::npos)
    return malformed(0, "frame '" + text + "' is not 'path:qualname:line'");
  llvm::StringRef path = text.take_front(nameColon);
  llvm::StringRef qualname = text.slice(nameColon + 1, lineColon);
  llvm::StringRef lineText = text.drop_front(lineColon + 1);
  if (path.empty())
    return malformed(0, "frame has an empty path");
  if (qualname.empty())
    return malformed(nameColon + 1, "frame has an empty qualified name");
  if (!parseLineNumber(lineText, frame.line))
    return malformed(lineColon + 1,
                     "frame line '" + lineText + "' is not a line number");
  size_t errorAt = 0;
  if (!percentDecode(path, frame.path, errorAt))
    return malformed(errorAt, "malformed '%' escape in frame");
  if (!percentDecode(qualname, frame.qualname, errorAt))
    return malformed(nameColon + 1 + errorAt, "malformed '%' escape in frame");
}

void Reader::splitPySpyFrame(llvm::StringRef text, FrameText &frame,
                             CachedFrame &cached) {
  // py-spy prefixes stacks with pseudo-frames when run with --subprocesses
  // or --threads; they name no code.
  if (text.starts_with("process ") || text.starts_with("thread (")) {
    cached.kind = CachedFrame::Kind::Pseudo;
    llvm::StringRef pid =
        text.drop_front(strlen("process ")).take_while(llvm::isDigit);
    if (text.starts_with("process ") && !pid.empty())
      pid.getAsInteger(10, pseudoPid);
    return;
  }
  size_t open = text.rfind(" (");
  if (open == llvm::StringRef::npos || !text.ends_with(")")) {
    cached.kind = CachedFrame::Kind::Malformed;
    cached.error = ("frame '" + text + "' is not 'name (file:line)'").str();
    return;
  }
  frame.qualname = text.take_front(open).str();
  llvm::StringRef location = text.slice(open + 2, text.size() - 1);
  size_t colon = location.rfind(':');
  if (colon != llvm::StringRef::npos &&
      parseLineNumber(location.drop_front(colon + 1), frame.line))
    location = location.take_front(colon);
  else
    frame.line = 0;
  frame.path = location.str();
  if (frame.path.empty() || frame.qualname.empty()) {
    cached.kind = CachedFrame::Kind::Malformed;
    cached.error = ("frame '" + text + "' is not 'name (file:line)'").str();
  }
}

void Reader::resolve(FrameText &frame, CachedFrame &cached) {
  llvm::StringRef path = frame.path;
  for (llvm::StringRef root :
       {llvm::StringRef(file.header.root), options.defaultRoot}) {
    root = root.rtrim('/');
    if (!root.empty() && path.size() > root.size() && path.starts_with(root) &&
        path[root.size()] == '/') {
      path = path.drop_front(root.size() + 1);
      break;
    }
  }
  ResolvedFrame resolved = resolver->resolve(path, frame.qualname, frame.line);
  cached.resolvedKind = resolved.kind;
  cached.stale = resolved.stale;
  if (resolved.stale)
    cached.staleSymbol = resolved.name;
  switch (resolved.kind) {
  case ResolvedFrame::Kind::Entity: {
    auto [it, inserted] =
        entityTokens.try_emplace(resolved.entity, file.frames.size());
    if (inserted)
      file.frames.push_back(std::move(resolved));
    cached.token = it->second;
    break;
  }
  case ResolvedFrame::Kind::Library: {
    auto [it, inserted] =
        leafTokens.try_emplace(resolved.name, file.frames.size());
    if (inserted)
      file.frames.push_back(std::move(resolved));
    cached.token = it->second;
    break;
  }
  case ResolvedFrame::Kind::Vanished:
    break;
  }
}

EvidenceFile fastci::readEvidence(llvm::StringRef buffer,
                                  const EvidenceReadOptions &options) {
  EvidenceFile file;
  Reader(buffer, options, file).read();
  return file;
}
