//===- SummaryCache.cpp - One file of cached file summaries ---------------===//
//
// Layout (little-endian): magic, format version, the caller's key (the
// pytest configuration and the summary format), the time the cache was
// written, the entry count, then per entry its path, module name, size,
// modification time, content hash, the offset and length of its summary
// in the blob that follows, whether it was linked and the files it was
// linked from, and last an xxh3 of everything before it, so a
// damaged file is dropped as a whole rather than misread.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/SummaryCache.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <chrono>

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;
namespace endian = llvm::support::endian;

namespace {
constexpr uint32_t kCacheMagic = 0x43534346; // "FCSC"
// 3: summaries in an IR and a link section (FileSummary.cpp).
constexpr uint32_t kCacheVersion = 3;
constexpr const char *kCacheFile = "summaries.fcsc";
/// Modification times this close to the cache's write are not trusted:
/// file systems with coarse timestamps (and a write in the same tick)
/// could leave an edited file's time unchanged.
constexpr int64_t kRacySlackNs = 2'000'000'000;

uint64_t hashBytes(StringRef bytes) {
  return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
} // namespace

std::string SummaryCache::getPath(StringRef dir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, kCacheFile);
  return std::string(path);
}

SummaryCache SummaryCache::open(StringRef dir, uint64_t key,
                                std::string *problem) {
  SummaryCache cache;
  auto buffer = llvm::MemoryBuffer::getFile(getPath(dir), /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return cache;
  auto fail = [&](std::string why) {
    if (problem)
      *problem = std::move(why);
    return SummaryCache();
  };
  StringRef data = (*buffer)->getBuffer();
  if (data.size() < 36)
    return fail("truncated");
  // The version first, so that a cache of another build is named as such
  // (its layout past the header may differ).
  if (endian::read32le(data.data()) != kCacheMagic)
    return fail("not a summary cache");
  if (uint32_t version = endian::read32le(data.data() + 4);
      version != kCacheVersion)
    return fail("of format version " + std::to_string(version) +
                ", this build reads " + std::to_string(kCacheVersion));
  StringRef body = data.drop_back(8);
  if (endian::read64le(data.end() - 8) != hashBytes(body))
    return fail("damaged or truncated (checksum mismatch)");
  const char *p = body.data(), *end = body.end();
  auto u32 = [&](uint32_t &out) {
    if (end - p < 4)
      return false;
    out = endian::read32le(p);
    p += 4;
    return true;
  };
  auto u64 = [&](uint64_t &out) {
    if (end - p < 8)
      return false;
    out = endian::read64le(p);
    p += 8;
    return true;
  };
  auto str = [&](StringRef &out) {
    uint32_t length;
    if (!u32(length) || static_cast<size_t>(end - p) < length)
      return false;
    out = StringRef(p, length);
    p += length;
    return true;
  };
  uint32_t magic, version, count;
  uint64_t storedKey, written;
  // (A cache made under another pytest configuration is not a problem.)
  if (!u32(magic) || !u32(version) || !u64(storedKey) || !u64(written) ||
      !u32(count) || storedKey != key)
    return cache;
  struct Pending {
    SummaryCacheEntry entry;
    uint64_t offset;
    uint32_t length;
  };
  std::vector<Pending> pending;
  pending.reserve(std::min<uint32_t>(count, 1u << 20));
  for (uint32_t i = 0; i < count; ++i) {
    Pending next;
    uint64_t size, mtime;
    uint32_t linked;
    if (!str(next.entry.path) || !str(next.entry.moduleName) || !u64(size) ||
        !u64(mtime) || !u64(next.entry.contentHash) || !u64(next.offset) ||
        !u32(next.length) || !u32(linked) || !str(next.entry.linkReads))
      return fail("damaged (bad entry)");
    next.entry.linked = linked != 0;
    next.entry.size = size;
    next.entry.mtimeNs = static_cast<int64_t>(mtime);
    pending.push_back(next);
  }
  StringRef blob(p, end - p);
  for (Pending &next : pending) {
    if (next.offset > blob.size() || blob.size() - next.offset < next.length)
      return fail("damaged (bad entry)");
    next.entry.summary = blob.substr(next.offset, next.length);
    cache.entries[next.entry.path] = next.entry;
  }
  cache.writtenNs = static_cast<int64_t>(written);
  cache.buffer = std::move(*buffer);
  return cache;
}

const SummaryCacheEntry *SummaryCache::lookup(StringRef path) const {
  auto it = entries.find(path);
  return it == entries.end() ? nullptr : &it->second;
}

bool SummaryCache::isStatTrusted(const SummaryCacheEntry &entry) const {
  return entry.mtimeNs < writtenNs - kRacySlackNs;
}

llvm::Error SummaryCache::write(StringRef dir, uint64_t key,
                                llvm::ArrayRef<SummaryCacheEntry> entries) {
  std::string out;
  size_t blobSize = 0;
  for (const SummaryCacheEntry &entry : entries)
    blobSize += entry.summary.size();
  out.reserve(64 + entries.size() * 96 + blobSize);
  auto u32 = [&](uint32_t value) {
    char bytes[4];
    endian::write32le(bytes, value);
    out.append(bytes, 4);
  };
  auto u64 = [&](uint64_t value) {
    char bytes[8];
    endian::write64le(bytes, value);
    out.append(bytes, 8);
  };
  auto str = [&](StringRef value) {
    u32(value.size());
    out.append(value.data(), value.size());
  };
  u32(kCacheMagic);
  u32(kCacheVersion);
  u64(key);
  // The time the files were looked at is before this: an edit after the
  // walk has a later time than any recorded one, and one during the walk
  // falls within the slack.
  u64(static_cast<uint64_t>(nowNs()));
  u32(entries.size());
  uint64_t offset = 0;
  for (const SummaryCacheEntry &entry : entries) {
    str(entry.path);
    str(entry.moduleName);
    u64(entry.size);
    u64(static_cast<uint64_t>(entry.mtimeNs));
    u64(entry.contentHash);
    u64(offset);
    u32(entry.summary.size());
    u32(entry.linked);
    str(entry.linked ? entry.linkReads : StringRef());
    offset += entry.summary.size();
  }
  for (const SummaryCacheEntry &entry : entries)
    out.append(entry.summary.data(), entry.summary.size());
  u64(hashBytes(out));

  // Write-then-rename: a concurrent or interrupted run never sees half a
  // cache.
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, "tmp-%%%%%%%%.fcsc");
  int fd;
  llvm::SmallString<256> tempPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, tempPath))
    return llvm::errorCodeToError(ec);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << out;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      llvm::sys::fs::remove(tempPath);
      return llvm::errorCodeToError(ec);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, getPath(dir))) {
    llvm::sys::fs::remove(tempPath);
    return llvm::errorCodeToError(ec);
  }
  return llvm::Error::success();
}
