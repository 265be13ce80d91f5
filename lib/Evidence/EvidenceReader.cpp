//===- EvidenceReader.cpp - Reading one file of sampled stacks ------------===//
//
// The reader is built for throughput: a file holds one line per distinct
// stack, sorted, so consecutive lines share long prefixes. Each line is
// compared bytewise with the previous one and reading resumes after the last
// frame separator inside the common prefix, reusing the trie node, reduction
// state and staleness reached there; only the new suffix is validated,
// split and looked up. Distinct frame texts are decoded and resolved once per
// thread (a FrameCache, shared by the files one thread reads) and cached by
// a 128-bit hash of their raw bytes; a file only numbers the frames it uses, in
// the order it first uses them, so its tables do not depend on what else the
// thread read.
//
// The bytes a line shares with the previous line cannot hold a newline, so
// the search for the line's end starts after them: each byte of the common
// prefix is read once (by a 16-byte compare), not twice.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceReader.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/xxhash.h"
#include <algorithm>
#include <cstring>
#include <optional>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FASTCI_EVIDENCE_AVX2 1
#endif

using namespace fastci;

/// The first line of every file in FastCI's format, without the version.
static constexpr llvm::StringLiteral kMagic = "# fastci-evidence: ";
/// The newest format version this reader understands (it reads 1 too).
static constexpr llvm::StringLiteral kVersion = "2";
static constexpr unsigned kNewestVersion = 2;

/// Finds the end of the line that continues at \p from in \p text: returns
/// the offset of the next newline (npos if none) and sets \p invalid to the
/// offset of the first byte before it that is not valid UTF-8 or is a
/// control character other than tab, or npos; a carriage return just before
/// the newline is accepted. Evidence is text; such bytes mean binary junk or
/// corruption, and accepting them would put garbage symbols in the IR.
/// \p from must be a character boundary. One pass finds both: a 16-byte
/// block with no byte below 0x20 (as a signed byte) holds neither a newline
/// nor anything to check.
static size_t scanLine(llvm::StringRef text, size_t from, size_t &invalid) {
  const auto *bytes = reinterpret_cast<const llvm::UTF8 *>(text.data());
  size_t size = text.size();
  size_t i = from;
  invalid = llvm::StringRef::npos;
  for (;;) {
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(0x20);
    for (; i + 16 <= size; i += 16) {
      __m128i block =
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes + i));
      if (unsigned special =
              unsigned(_mm_movemask_epi8(_mm_cmplt_epi8(block, space)))) {
        i += llvm::countr_zero(special);
        break;
      }
    }
#endif
    while (i < size && bytes[i] >= 0x20 && bytes[i] < 0x80)
      ++i;
    if (i == size)
      return llvm::StringRef::npos;
    llvm::UTF8 byte = bytes[i];
    if (byte == '\n')
      return i;
    if (byte < 0x80) {
      if (byte != '\t' &&
          !(byte == '\r' && i + 1 < size && bytes[i + 1] == '\n'))
        break;
      ++i;
      continue;
    }
    unsigned length = llvm::getNumBytesForUTF8(byte);
    if (length > size - i ||
        !llvm::isLegalUTF8Sequence(bytes + i, bytes + i + length))
      break;
    i += length;
  }
  // Only the newline is left to find.
  invalid = i;
  return text.find('\n', i);
}

/// The offset of the first byte of \p line (which holds no newline) that
/// scanLine would reject, or npos.
static size_t findInvalidByte(llvm::StringRef line) {
  size_t invalid;
  scanLine(line, 0, invalid);
  return invalid;
}

/// The length of the longest common prefix of \p lhs and \p rhs, with the
/// instructions every x86-64 (or other) machine has. Lines are hundreds of
/// bytes and share most of them, so this compares blocks at a time; it is
/// the reader's innermost loop.
static size_t commonPrefixLengthBaseline(llvm::StringRef lhs,
                                         llvm::StringRef rhs) {
  size_t limit = std::min(lhs.size(), rhs.size());
  size_t i = 0;
#if defined(__SSE2__)
  auto equalBytes = [&](size_t at) {
    __m128i a =
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(lhs.data() + at));
    __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(rhs.data() + at));
    return _mm_cmpeq_epi8(a, b);
  };
  // 64 bytes per test while the lines agree, then 16 to find where not.
  for (; i + 64 <= limit; i += 64) {
    __m128i all =
        _mm_and_si128(_mm_and_si128(equalBytes(i), equalBytes(i + 16)),
                      _mm_and_si128(equalBytes(i + 32), equalBytes(i + 48)));
    if (_mm_movemask_epi8(all) != 0xffff)
      break;
  }
  for (; i + 16 <= limit; i += 16) {
    unsigned equal = unsigned(_mm_movemask_epi8(equalBytes(i)));
    if (equal != 0xffff)
      return i + llvm::countr_one(equal);
  }
#endif
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

#ifdef FASTCI_EVIDENCE_AVX2
/// A bit per byte of the 32 at \p lhs and \p rhs, set where they are equal.
__attribute__((target("avx2"))) static inline unsigned
equalMask32(const char *lhs, const char *rhs) {
  __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(lhs));
  __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(rhs));
  return unsigned(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)));
}

/// commonPrefixLengthBaseline with 32-byte compares, for machines with AVX2.
__attribute__((target("avx2"))) static size_t
commonPrefixLengthAVX2(llvm::StringRef lhs, llvm::StringRef rhs) {
  size_t limit = std::min(lhs.size(), rhs.size());
  const char *a = lhs.data(), *b = rhs.data();
  size_t i = 0;
  for (; i + 64 <= limit; i += 64)
    if ((equalMask32(a + i, b + i) & equalMask32(a + i + 32, b + i + 32)) !=
        ~0u)
      break;
  for (; i + 32 <= limit; i += 32)
    if (unsigned equal = equalMask32(a + i, b + i); equal != ~0u)
      return i + llvm::countr_one(equal);
  return i + commonPrefixLengthBaseline(lhs.drop_front(i), rhs.drop_front(i));
}
#endif

/// The length of the longest common prefix of \p lhs and \p rhs: AVX2 when
/// the machine has it (checked once), else the baseline.
static size_t commonPrefixLength(llvm::StringRef lhs, llvm::StringRef rhs) {
#ifdef FASTCI_EVIDENCE_AVX2
  static const bool hasAVX2 = __builtin_cpu_supports("avx2");
  if (hasAVX2)
    return commonPrefixLengthAVX2(lhs, rhs);
#endif
  return commonPrefixLengthBaseline(lhs, rhs);
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

/// Parses a non-empty run of decimal digits of value at most \p max (any
/// number of leading zeros). Every line has a count and most frames a new
/// line number, so this is a plain loop rather than getAsInteger's general
/// one.
static bool parseDecimal(llvm::StringRef text, uint64_t max, uint64_t &out) {
  if (text.empty())
    return false;
  uint64_t value = 0;
  for (char c : text) {
    unsigned digit = static_cast<unsigned char>(c) - unsigned('0');
    if (digit > 9 || __builtin_mul_overflow(value, uint64_t(10), &value) ||
        __builtin_add_overflow(value, uint64_t(digit), &value))
      return false;
  }
  if (value > max)
    return false;
  out = value;
  return true;
}

/// Parses a decimal line number (digits only, at most 2^32-1).
static bool parseLineNumber(llvm::StringRef text, uint32_t &line) {
  uint64_t value;
  if (!parseDecimal(text, UINT32_MAX, value))
    return false;
  line = uint32_t(value);
  return true;
}

namespace {

/// What a frame text is.
enum class FrameKind : uint8_t {
  /// A repository entity, a library leaf or vanished code.
  Resolved,
  /// A py-spy pseudo-frame (`process ...`, `thread (...)`): skipped.
  Pseudo,
  /// Malformed; the reader's \c malformed says why and where.
  Malformed,
};

/// One frame of a source stack, split but not yet resolved.
struct FrameText {
  std::string path, qualname;
  uint32_t line = 0;
};

/// A frame text as the index keys it: its 128-bit xxh3 hash. The table holds
/// tens of thousands of texts, well beyond the caches, and a lookup that had
/// to compare the stored bytes would miss the cache once more per frame; the
/// hash alone identifies a text. Two of a run's n distinct texts collide with
/// probability about n^2 / 2^129 (below 10^-29 for a million texts); a
/// collision crafted on purpose needs write access to the evidence, which
/// could misattribute samples far more simply by writing other frames.
struct FrameKey {
  uint64_t low, high;

  static FrameKey get(llvm::StringRef text) {
    llvm::XXH128_hash_t hash =
        llvm::xxh3_128bits(llvm::arrayRefFromStringRef(text));
    FrameKey key{hash.low64, hash.high64};
    // The table's two reserved keys stand for no text.
    if (key.high == ~uint64_t(0) && key.low >= ~uint64_t(1))
      key.high = 0;
    return key;
  }
  bool operator==(const FrameKey &other) const {
    return low == other.low && high == other.high;
  }
};

struct FrameKeyInfo {
  static FrameKey getEmptyKey() { return {~uint64_t(0), ~uint64_t(0)}; }
  static FrameKey getTombstoneKey() { return {~uint64_t(1), ~uint64_t(0)}; }
  static unsigned getHashValue(const FrameKey &key) {
    return unsigned(key.low);
  }
  static bool isEqual(const FrameKey &lhs, const FrameKey &rhs) {
    return lhs == rhs;
  }
};

/// What a distinct frame text resolved to, whichever file it came from: the
/// fields every file that uses the frame reads. It is the index's value, so
/// that a lookup touches one place in memory; the rarely read rest is a
/// SharedFrameDetail.
struct SharedFrame {
  /// Resolved or Pseudo; malformed frames are not shared.
  FrameKind kind = FrameKind::Resolved;
  /// The ResolvedFrame's kind and staleness.
  ResolvedFrame::Kind resolvedKind = ResolvedFrame::Kind::Library;
  bool stale = false;
  /// The FrameTarget of an entity or leaf.
  uint32_t target = 0;
  /// The last file that used this frame (a FrameCache stamp) and the frame's
  /// index in that file's table, so a file finds its own entry with the same
  /// lookup.
  uint32_t stamp = 0, local = 0;
  /// The frame's SharedFrameDetail.
  uint32_t detail = 0;
};

/// The rest of a SharedFrame: read once per file that uses the frame's
/// target, or never.
struct SharedFrameDetail {
  ResolvedFrame resolved;
  /// For a py-spy `process <pid>:` pseudo-frame with a readable pid.
  bool hasPid = false;
  int64_t pid = 0;
};

/// A distinct entity or library leaf that frames resolve to: texts that
/// differ only in the line often land in one entity, and a file numbers each
/// once (EvidenceFile::frames).
struct FrameTarget {
  /// The last file that used it and its index in that file's frames.
  uint32_t stamp = 0, token = 0;
};

/// The frames resolved with one resolver, pair of roots and format: what a
/// text resolves to depends on nothing else.
struct FrameContext {
  const FrameResolver *resolver = nullptr;
  std::string root, defaultRoot;
  EvidenceFormat format = EvidenceFormat::FastCI;
  /// Every distinct text, and what it resolved to.
  llvm::DenseMap<FrameKey, SharedFrame, FrameKeyInfo> index;
  std::vector<SharedFrameDetail> details;
  /// Indexed alike: every entity and leaf, and the frame a file lists for
  /// it (a few thousand, unlike the texts, so they stay in cache).
  std::vector<FrameTarget> targets;
  std::vector<ResolvedFrame> targetFrames;
  llvm::DenseMap<EntityId, uint32_t> entityTargets;
  llvm::StringMap<uint32_t> leafTargets;
};

/// A frame as one file uses it.
struct CachedFrame {
  FrameKind kind = FrameKind::Resolved;
  ResolvedFrame::Kind resolvedKind = ResolvedFrame::Kind::Library;
  /// Index into EvidenceFile::frames, for entities and leaves.
  uint32_t token = 0;
  bool stale = false;
  /// True once the stale symbol was recorded (on the first good line).
  bool staleRecorded = false;
  /// The frame's SharedFrameDetail, for the stale symbol.
  uint32_t detail = 0;
};

/// Hashes a trie edge, (parent << 32 | frame). DenseMapInfo<uint64_t>
/// multiplies by 37 and keeps the low 32 bits, which drops the parent
/// entirely: every child of one frame would collide.
struct NodeKeyInfo : llvm::DenseMapInfo<uint64_t> {
  static unsigned getHashValue(uint64_t key) {
    return unsigned((key * 0x9e3779b97f4a7c15ull) >> 32);
  }
};

} // namespace

struct FrameCache::Impl {
  /// Contexts, most recently added last. Files of one directory nearly
  /// always share one; a bound keeps odd inputs (a root per file) small.
  std::vector<std::unique_ptr<FrameContext>> contexts;
  /// Incremented per file read with the cache.
  uint32_t stamp = 0;
  /// The tables of the file being read, kept between files so that their
  /// memory is reused rather than grown again for every file.
  std::vector<CachedFrame> fileFrames;
  llvm::DenseMap<uint64_t, uint32_t, NodeKeyInfo> children;

  /// The context for files read with these settings.
  FrameContext &getContext(const FrameResolver *resolver, llvm::StringRef root,
                           llvm::StringRef defaultRoot, EvidenceFormat format) {
    for (std::unique_ptr<FrameContext> &context : contexts)
      if (context->resolver == resolver && context->format == format &&
          context->root == root && context->defaultRoot == defaultRoot)
        return *context;
    constexpr size_t kMaxContexts = 8;
    if (contexts.size() == kMaxContexts)
      contexts.erase(contexts.begin());
    auto context = std::make_unique<FrameContext>();
    context->resolver = resolver;
    context->root = root.str();
    context->defaultRoot = defaultRoot.str();
    context->format = format;
    contexts.push_back(std::move(context));
    return *contexts.back();
  }

  /// A stamp no frame carries yet, for the next file.
  uint32_t nextStamp() {
    if (++stamp == 0) {
      // Wrapped after 2^32 files: forget the old stamps.
      for (std::unique_ptr<FrameContext> &context : contexts) {
        for (auto &entry : context->index)
          entry.second.stamp = 0;
        for (FrameTarget &target : context->targets)
          target.stamp = 0;
      }
      stamp = 1;
    }
    return stamp;
  }
};

FrameCache::FrameCache() : impl(std::make_unique<Impl>()) {}
FrameCache::~FrameCache() = default;
FrameCache::FrameCache(FrameCache &&) noexcept = default;
FrameCache &FrameCache::operator=(FrameCache &&) noexcept = default;

size_t FrameCache::size() const {
  size_t size = 0;
  for (const std::unique_ptr<FrameContext> &context : impl->contexts)
    size += context->index.size();
  return size;
}

namespace {

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

/// getFrame's answer for a malformed frame (see Reader::malformed).
constexpr uint32_t kMalformedFrame = ~0u;

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
  /// Reads one version-2 entity line (`@f frame`, `@i module frame`, `@m
  /// path`, `@r path`), whose first byte that is not text is at \p invalid.
  void readEntityLine(llvm::StringRef line, size_t offset, unsigned lineNo,
                      size_t invalid);
  /// The entity a frame text of an entity line resolves to (kNoEntity for
  /// library or vanished code), noting stale code; false if malformed.
  bool resolveEntity(llvm::StringRef text, EntityId &entity);
  /// Reads one `frames count` line, whose first \p shared bytes (at least)
  /// are those of the previous good line's stack, and whose first byte that
  /// is not text is at \p invalid (npos if none).
  void readStackLine(llvm::StringRef line, size_t offset, unsigned lineNo,
                     size_t shared, size_t invalid);
  /// The CachedFrame index for raw frame text \p text, or kMalformedFrame.
  uint32_t getFrame(llvm::StringRef text);
  /// Makes \p shared one of this file's frames.
  uint32_t addFileFrame(SharedFrame &shared);
  /// Splits a frame in FastCI's syntax, or says why it cannot.
  FrameKind splitFastCIFrame(llvm::StringRef text, FrameText &frame);
  /// Splits a frame in py-spy's syntax, or says why it cannot.
  FrameKind splitPySpyFrame(llvm::StringRef text, FrameText &frame,
                            SharedFrameDetail &shared);
  /// Resolves \p frame into \p shared.
  void resolve(FrameText &frame, SharedFrameDetail &shared);
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

  /// The cache of the options, or one for this file alone.
  std::optional<FrameCache> ownCache;
  FrameContext *context = nullptr;
  uint32_t stamp = 0;
  /// This file's frames, in the order it first uses them.
  std::vector<CachedFrame> *cache = nullptr;
  /// Why the frame getFrame last called malformed is, and where (0-based
  /// column in the frame).
  std::string malformed;
  size_t malformedColumn = 0;
  /// This file's trie edges, (parent << 32 | frame) to node.
  llvm::DenseMap<uint64_t, uint32_t, NodeKeyInfo> *children = nullptr;

  /// The header's keys so far, with their decoded values and lines.
  llvm::StringMap<std::pair<std::string, unsigned>> headerKeys;
  /// True when an identity key was given two values: the file is skipped.
  bool headerConflict = false;

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
  FrameCache *frameCache = options.frameCache;
  if (!frameCache)
    frameCache = &ownCache.emplace();
  FrameCache::Impl &cacheImpl = frameCache->getImpl();
  context = &cacheImpl.getContext(resolver, file.header.root,
                                  options.defaultRoot, file.format);
  stamp = cacheImpl.nextStamp();
  cache = &cacheImpl.fileFrames;
  cache->clear();
  children = &cacheImpl.children;
  children->clear();

  for (; pos < buffer.size(); ++lineNo) {
    // The shared bytes equal those of the previous stack, which holds no
    // newline.
    size_t shared = commonPrefixLength(buffer.drop_front(pos), previousBody);
    // They are also valid text (previousBody was checked), so checking starts
    // at the first difference, backed up to a character boundary: just after
    // an ASCII byte, or the start of the line.
    size_t check = pos + shared;
    while (check > pos && static_cast<unsigned char>(buffer[check - 1]) >= 0x80)
      --check;
    size_t invalid;
    size_t newline = scanLine(buffer, check, invalid);
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
    if (line.starts_with("@") && file.header.version >= 2) {
      ++file.lines;
      readEntityLine(line, offset, lineNo,
                     invalid < newline ? invalid - offset
                                       : llvm::StringRef::npos);
      continue;
    }
    if (line.starts_with("#") && file.format == EvidenceFormat::FastCI) {
      // The header loop consumed every leading `#` line.
      problem(offset, lineNo, 0, "header line after stack lines; ignored");
      ++file.malformedLines;
      resetPrefix();
      continue;
    }
    ++file.lines;
    readStackLine(line, offset, lineNo, shared,
                  invalid < newline ? invalid - offset : llvm::StringRef::npos);
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
  if (file.header.version >= 2 && file.malformedLines) {
    // A compact record lists each function once: a lost line is a lost
    // function, not a lost sample, and reading the rest would under-select.
    file.skipped = file.corrupt = true;
    file.problems.push_back(
        {0, 1, 1,
         "compact evidence file has " + std::to_string(file.malformedLines) +
             " bad line(s); skipped, and its test is treated as having no "
             "evidence"});
  }
  llvm::sort(file.staleSymbols);
  auto unique = [](auto &values) {
    llvm::sort(values);
    values.erase(std::unique(values.begin(), values.end()), values.end());
  };
  unique(file.functions);
  unique(file.importFunctions);
  unique(file.imports);
  unique(file.reads);
  unique(file.packages);
  unique(file.provides);
  unique(file.requirements);
  unique(file.versions);
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
  unsigned number = 0;
  if (version.getAsInteger(10, number) || number == 0 ||
      !llvm::all_of(version, llvm::isDigit)) {
    problem(0, 1, kMagic.size(),
            "unsupported evidence format version '" + version +
                "' (this reader knows versions 1 to " + kVersion +
                "); skipped");
    return false;
  }
  if (number > kNewestVersion) {
    problem(0, 1, kMagic.size(),
            "evidence format version " + version +
                " was written by a newer FastCI (this reader knows versions "
                "1 to " +
                kVersion + "); skipped, the test has no evidence from it");
    return false;
  }
  file.header.version = number;
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
  if (headerConflict)
    return false;
  if (file.header.testId.empty() && !file.header.collection) {
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
  // A key written twice is a writer's bug or two files pasted together. The
  // same value again is harmless; another value for a key that says whose
  // samples these are (or how to count them) leaves the file's meaning
  // undecidable, so the file is skipped: its test then has no evidence from
  // it and is treated conservatively. Other keys keep their first value.
  auto [seen, first] = headerKeys.try_emplace(key, decoded, lineNo);
  if (!first) {
    if (seen->second.first == decoded) {
      problem(offset, lineNo, 2, "header '" + key + "' repeated; ignored");
      return;
    }
    static constexpr llvm::StringLiteral kIdentityKeys[] = {
        "test-id", "pid", "rank", "local-rank", "rate", "revision", "root"};
    std::string where =
        ("header '" + key + "' repeated with another value (first at line " +
         llvm::Twine(seen->second.second) + ")")
            .str();
    if (llvm::is_contained(kIdentityKeys, key)) {
      problem(offset, lineNo, 2, where + "; file skipped");
      headerConflict = true;
    } else {
      problem(offset, lineNo, 2, where + "; the first is kept");
    }
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
  } else if (header.version >= 2 && key == "coverage") {
    if (decoded == "exact" || decoded == "sampled")
      header.exactCoverage = decoded == "exact";
    else
      problem(offset, lineNo, valueColumn,
              "header 'coverage' is not 'exact' or 'sampled'; sampled assumed");
  } else if (header.version >= 2 && key == "scope") {
    if (decoded == "test" || decoded == "collection")
      header.collection = decoded == "collection";
    else
      problem(offset, lineNo, valueColumn,
              "header 'scope' is not 'test' or 'collection'; 'test' assumed");
  } else if (header.version >= 2 && key == "time")
    parseFloat(header.time);
  else if (header.version >= 2 && key == "executable")
    header.executable = decoded;
  else if (header.version >= 2 && key == "import-samples") {
    int64_t value = 0;
    parseInt(value);
    header.importSamples = value > 0 ? value : 0;
  } else if (header.version >= 2 && key == "packages") {
    header.packagesRecorded = true;
  } else if (header.version >= 2 && key == "external-samples") {
    int64_t value = 0;
    parseInt(value);
    file.externalSamples += value > 0 ? value : 0;
  }
  // Other keys (python, sampler, samples, ...) are informational.
}

void Reader::readStackLine(llvm::StringRef line, size_t offset, unsigned lineNo,
                           size_t shared, size_t invalid) {
  size_t space = line.rfind(' ');
  llvm::StringRef body =
      space == llvm::StringRef::npos ? line : line.take_front(space);

  // Resume after the last frame separator the line shares with the previous
  // one: states[i].end < shared means that separator is in the shared part.
  shared = std::min(shared, body.size());
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
  if (invalid != llvm::StringRef::npos)
    return fail(invalid, line[invalid] & 0x80
                             ? "invalid UTF-8; line ignored"
                             : "control character in stack line; ignored");
  if (line.empty())
    return fail(0, "empty line; ignored");
  if (space == llvm::StringRef::npos)
    return fail(line.size(), "expected 'stack count', found no sample count; "
                             "line ignored");
  llvm::StringRef countText = line.drop_front(space + 1);
  uint64_t count = 0;
  if (!parseDecimal(countText, UINT64_MAX, count))
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
    if (index == kMalformedFrame)
      return fail(pos + malformedColumn, malformed + "; line ignored");
    const CachedFrame &frame = (*cache)[index];
    if (frame.kind == FrameKind::Resolved) {
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
    CachedFrame &frame = (*cache)[states[i].frame];
    if (frame.stale && !frame.staleRecorded) {
      frame.staleRecorded = true;
      file.staleSymbols.push_back(context->details[frame.detail].resolved.name);
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

bool Reader::resolveEntity(llvm::StringRef text, EntityId &entity) {
  uint32_t index = getFrame(text);
  if (index == kMalformedFrame)
    return false;
  CachedFrame &frame = (*cache)[index];
  entity = kNoEntity;
  if (frame.kind != FrameKind::Resolved)
    return true;
  const ResolvedFrame &resolved = context->details[frame.detail].resolved;
  if (frame.stale && !frame.staleRecorded) {
    frame.staleRecorded = true;
    file.staleSymbols.push_back(resolved.name);
  }
  if (resolved.kind == ResolvedFrame::Kind::Entity)
    entity = resolved.entity;
  return true;
}

void Reader::readEntityLine(llvm::StringRef line, size_t offset,
                            unsigned lineNo, size_t invalid) {
  auto fail = [&](size_t column, const llvm::Twine &message) {
    ++file.malformedLines;
    problem(offset, lineNo, column, message);
  };
  if (invalid != llvm::StringRef::npos)
    return fail(invalid, line[invalid] & 0x80
                             ? "invalid UTF-8; line ignored"
                             : "control character in entity line; ignored");
  auto [tag, rest] = line.split(' ');
  size_t restColumn = tag.size() + 1;
  if (rest.empty())
    return fail(line.size(),
                "entity line '" + tag + "' has no operand; line ignored");
  // A module path names its module entity through the frame of its body.
  auto moduleFrame = [](llvm::StringRef path) {
    return (path + ":<module>:0").str();
  };
  EntityId entity = kNoEntity;
  if (tag == "@f") {
    if (!resolveEntity(rest, entity))
      return fail(restColumn + malformedColumn, malformed + "; line ignored");
    if (entity != kNoEntity)
      file.functions.push_back(entity);
  } else if (tag == "@i") {
    auto [module, frame] = rest.split(' ');
    if (frame.empty())
      return fail(line.size(), "expected '@i module frame'; line ignored");
    EntityId importer = kNoEntity;
    if (module != "-" && !resolveEntity(moduleFrame(module), importer))
      return fail(restColumn, malformed + " (in the module path); line "
                                          "ignored");
    if (!resolveEntity(frame, entity))
      return fail(restColumn + module.size() + 1 + malformedColumn,
                  malformed + "; line ignored");
    if (entity != kNoEntity)
      file.importFunctions.push_back({importer, entity});
  } else if (tag == "@m") {
    if (!resolveEntity(moduleFrame(rest), entity))
      return fail(restColumn, malformed + " (in the module path); line "
                                          "ignored");
    if (entity != kNoEntity)
      file.imports.push_back(entity);
  } else if (tag == "@r") {
    std::string path;
    size_t errorAt = 0;
    if (!percentDecode(rest, path, errorAt))
      return fail(restColumn + errorAt,
                  "malformed '%' escape in path; line ignored");
    llvm::StringRef relative = path;
    for (llvm::StringRef root :
         {llvm::StringRef(file.header.root), options.defaultRoot}) {
      root = root.rtrim('/');
      if (!root.empty() && relative.size() > root.size() &&
          relative.starts_with(root) && relative[root.size()] == '/') {
        relative = relative.drop_front(root.size() + 1);
        break;
      }
    }
    file.reads.push_back(relative.str());
  } else if (tag == "@x" || tag == "@p" || tag == "@q" || tag == "@v") {
    // Names outside the repository: decoded, never resolved.
    llvm::SmallVector<llvm::StringRef, 2> fields;
    rest.split(fields, ' ');
    size_t arity = tag == "@x" ? 1 : 2;
    if (fields.size() != arity || llvm::is_contained(fields, ""))
      return fail(restColumn, "expected '" + tag +
                                  (arity == 1 ? " name'" : " name name'") +
                                  "; line ignored");
    std::string names[2];
    size_t column = restColumn;
    for (size_t i = 0; i < arity; ++i) {
      size_t errorAt = 0;
      if (!percentDecode(fields[i], names[i], errorAt))
        return fail(column + errorAt,
                    "malformed '%' escape in name; line ignored");
      column += fields[i].size() + 1;
    }
    if (tag == "@x")
      file.packages.push_back(std::move(names[0]));
    else
      (tag == "@p"   ? file.provides
       : tag == "@q" ? file.requirements
                     : file.versions)
          .emplace_back(std::move(names[0]), std::move(names[1]));
  } else {
    // A later writer's kind of entity: this reader cannot use it, and the
    // rest of the file stays valid.
    return fail(0, "unknown entity line '" + tag + "'; ignored");
  }
}

uint32_t Reader::getChild(uint32_t parent, uint32_t token) {
  uint64_t key = uint64_t(parent) << 32 | token;
  auto [it, inserted] = children->try_emplace(key, file.nodes.size());
  if (inserted) {
    file.nodes.push_back({parent, token});
    file.counts.push_back(0);
  }
  return it->second;
}

uint32_t Reader::getFrame(llvm::StringRef text) {
  FrameKey key = FrameKey::get(text);
  auto it = context->index.find(key);
  if (it != context->index.end()) {
    SharedFrame &shared = it->second;
    return shared.stamp == stamp ? shared.local : addFileFrame(shared);
  }
  // A new text: split, decode and resolve it once for every file of the
  // cache. Malformed frames are reported and not kept, so junk cannot grow
  // the cache.
  FrameText frame;
  SharedFrame shared;
  SharedFrameDetail detail;
  if (text.empty()) {
    malformed = "empty frame";
    malformedColumn = 0;
    shared.kind = FrameKind::Malformed;
  } else if (file.format == EvidenceFormat::FastCI) {
    shared.kind = splitFastCIFrame(text, frame);
  } else {
    shared.kind = splitPySpyFrame(text, frame, detail);
  }
  if (shared.kind == FrameKind::Malformed)
    return kMalformedFrame;
  if (shared.kind == FrameKind::Resolved) {
    resolve(frame, detail);
    const ResolvedFrame &resolved = detail.resolved;
    shared.resolvedKind = resolved.kind;
    shared.stale = resolved.stale;
    uint32_t numTargets = context->targets.size();
    if (resolved.kind == ResolvedFrame::Kind::Entity)
      shared.target =
          context->entityTargets.try_emplace(resolved.entity, numTargets)
              .first->second;
    else if (resolved.kind == ResolvedFrame::Kind::Library)
      shared.target =
          context->leafTargets.try_emplace(resolved.name, numTargets)
              .first->second;
    if (resolved.kind != ResolvedFrame::Kind::Vanished &&
        shared.target == numTargets) {
      context->targets.emplace_back();
      context->targetFrames.push_back(resolved);
    }
  }
  shared.detail = context->details.size();
  context->details.push_back(std::move(detail));
  return addFileFrame(context->index.try_emplace(key, shared).first->second);
}

uint32_t Reader::addFileFrame(SharedFrame &shared) {
  shared.stamp = stamp;
  shared.local = cache->size();
  CachedFrame &cached = cache->emplace_back();
  cached.kind = shared.kind;
  cached.detail = shared.detail;
  if (shared.kind == FrameKind::Pseudo) {
    const SharedFrameDetail &detail = context->details[shared.detail];
    if (detail.hasPid)
      pseudoPid = detail.pid;
    return shared.local;
  }
  cached.resolvedKind = shared.resolvedKind;
  cached.stale = shared.stale;
  if (shared.resolvedKind != ResolvedFrame::Kind::Vanished) {
    FrameTarget &target = context->targets[shared.target];
    if (target.stamp != stamp) {
      target.stamp = stamp;
      target.token = file.frames.size();
      file.frames.push_back(context->targetFrames[shared.target]);
    }
    cached.token = target.token;
  }
  return shared.local;
}

FrameKind Reader::splitFastCIFrame(llvm::StringRef text, FrameText &frame) {
  auto fail = [&](size_t column, const llvm::Twine &message) {
    malformed = message.str();
    malformedColumn = column;
    return FrameKind::Malformed;
  };
  // Qualnames escape `:`, so the last two colons delimit the fields even
  // when the path contains colons.
  size_t lineColon = text.rfind(':');
  size_t nameColon = lineColon == llvm::StringRef::npos
                         ? llvm::StringRef::npos
                         : text.rfind(':', lineColon);
  if (nameColon == llvm::StringRef::npos)
    return fail(0, "frame '" + text + "' is not 'path:qualname:line'");
  llvm::StringRef path = text.take_front(nameColon);
  llvm::StringRef qualname = text.slice(nameColon + 1, lineColon);
  llvm::StringRef lineText = text.drop_front(lineColon + 1);
  if (path.empty())
    return fail(0, "frame has an empty path");
  if (qualname.empty())
    return fail(nameColon + 1, "frame has an empty qualified name");
  if (!parseLineNumber(lineText, frame.line))
    return fail(lineColon + 1,
                "frame line '" + lineText + "' is not a line number");
  size_t errorAt = 0;
  if (!percentDecode(path, frame.path, errorAt))
    return fail(errorAt, "malformed '%' escape in frame");
  if (!percentDecode(qualname, frame.qualname, errorAt))
    return fail(nameColon + 1 + errorAt, "malformed '%' escape in frame");
  return FrameKind::Resolved;
}

FrameKind Reader::splitPySpyFrame(llvm::StringRef text, FrameText &frame,
                                  SharedFrameDetail &shared) {
  // py-spy prefixes stacks with pseudo-frames when run with --subprocesses
  // or --threads; they name no code.
  if (text.starts_with("process ") || text.starts_with("thread (")) {
    llvm::StringRef pid =
        text.drop_front(strlen("process ")).take_while(llvm::isDigit);
    if (text.starts_with("process ") && !pid.empty())
      shared.hasPid = !pid.getAsInteger(10, shared.pid);
    return FrameKind::Pseudo;
  }
  auto fail = [&] {
    malformed = ("frame '" + text + "' is not 'name (file:line)'").str();
    malformedColumn = 0;
    return FrameKind::Malformed;
  };
  size_t open = text.rfind(" (");
  if (open == llvm::StringRef::npos || !text.ends_with(")"))
    return fail();
  frame.qualname = text.take_front(open).str();
  llvm::StringRef location = text.slice(open + 2, text.size() - 1);
  size_t colon = location.rfind(':');
  if (colon != llvm::StringRef::npos &&
      parseLineNumber(location.drop_front(colon + 1), frame.line))
    location = location.take_front(colon);
  else
    frame.line = 0;
  frame.path = location.str();
  if (frame.path.empty() || frame.qualname.empty())
    return fail();
  return FrameKind::Resolved;
}

void Reader::resolve(FrameText &frame, SharedFrameDetail &shared) {
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
  shared.resolved = resolver->resolve(path, frame.qualname, frame.line);
}

EvidenceFile fastci::readEvidence(llvm::StringRef buffer,
                                  const EvidenceReadOptions &options) {
  EvidenceFile file;
  Reader(buffer, options, file).read();
  return file;
}
