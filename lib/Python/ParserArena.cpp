//===- ParserArena.cpp - tree-sitter's memory, one file at a time ---------===//
//
// Every block carries a 16-byte header whose last word tags it: a size
// class (a small block carved from the thread's slabs), kLargeTag (a block
// too big for a slab, malloc'ed and linked into the scope's list so that the
// scope's end frees it), or kSystemTag (allocated outside any scope, a plain
// malloc block). The word before the tag names the owning arena, so a block
// can never land on another thread's free list. Slabs survive the scope and
// are reused by the next file, up to kParserArenaRetainedBytes.
//
// The grammar's external scanner allocates through the same hooks (it is
// compiled with TREE_SITTER_REUSE_ALLOCATOR): it frees and reallocates its
// indent stack on every token, which cost 2.5% of the parse through malloc.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/ParserArena.h"
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

// Declared by tree-sitter's api.h only from 0.22 on; Debian's 0.20.7
// exports it with this signature.
extern "C" void ts_set_allocator(void *(*newMalloc)(size_t),
                                 void *(*newCalloc)(size_t, size_t),
                                 void *(*newRealloc)(void *, size_t),
                                 void (*newFree)(void *));

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FASTCI_PARSER_ARENA 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||     \
    __has_feature(memory_sanitizer)
#define FASTCI_PARSER_ARENA 0
#endif
#endif
#ifndef FASTCI_PARSER_ARENA
#define FASTCI_PARSER_ARENA 1
#endif

using namespace fastci::python;

#if FASTCI_PARSER_ARENA
namespace {
constexpr uint64_t kSystemTag = 0xFFFF0000;
constexpr uint64_t kLargeTag = 0xFFFF0001;
/// Size classes: blocks (header included) of 32 << c bytes.
constexpr unsigned kNumClasses = 12;
constexpr size_t kLargestSmall = size_t(32) << (kNumClasses - 1); // 64 KiB
constexpr size_t kSlabBytes = size_t(256) << 10;

struct ThreadArena;

/// The 16 bytes in front of every block.
struct Header {
  ThreadArena *owner;
  uint64_t tag;
};
static_assert(sizeof(Header) == 16, "keeps blocks 16-byte aligned");

/// A large block's links and size, in front of its Header.
struct LargeLinks {
  LargeLinks *prev, *next;
  size_t size;
  uint64_t unused;
};
static_assert(sizeof(LargeLinks) % 16 == 0, "keeps blocks 16-byte aligned");

struct FreeBlock {
  FreeBlock *next;
};

struct Slab {
  Slab *next;
  size_t size;
};
static_assert(sizeof(Slab) % 16 == 0, "keeps blocks 16-byte aligned");

Header *headerOf(void *user) { return static_cast<Header *>(user) - 1; }
LargeLinks *linksOf(void *user) {
  return reinterpret_cast<LargeLinks *>(headerOf(user)) - 1;
}

unsigned classOf(size_t total) {
  if (total <= 32)
    return 0;
  return 64 - __builtin_clzll(total - 1) - 5;
}

/// A thread's arena. Trivially constructible and destructible, so the hot
/// paths read a plain thread_local; ArenaCleanup frees the slabs at thread
/// exit.
struct ThreadArena {
  bool active;
  FreeBlock *freeLists[kNumClasses];
  Slab *firstSlab, *currentSlab;
  char *bump;
  size_t left;
  size_t slabBytes;
  LargeLinks *large;
  size_t largeCount;
  size_t liveBlocks;

  void *allocate(size_t size);
  void *allocateLarge(size_t size);
  void release(void *user, Header *header);
  void *grow(void *user, Header *header, size_t size);
  void nextSlab();
  void reset();
  void freeSlabsAfter(Slab *keep);
};

// Initial-exec: libFastCI.so is always loaded with the program, and the
// default model for a shared library would call __tls_get_addr on every
// allocation (1.2% of the pass).
constinit thread_local ThreadArena arena
    __attribute__((tls_model("initial-exec"))){};

/// Frees the thread's slabs when the thread exits.
struct ArenaCleanup {
  ~ArenaCleanup() {
    arena.reset();
    arena.freeSlabsAfter(nullptr);
  }
};

void *systemAllocate(size_t size) {
  auto *header = static_cast<Header *>(std::malloc(sizeof(Header) + size));
  if (!header)
    return nullptr;
  *header = {nullptr, kSystemTag};
  return header + 1;
}

void ThreadArena::nextSlab() {
  Slab *slab = currentSlab ? currentSlab->next : firstSlab;
  if (!slab) {
    slab = static_cast<Slab *>(std::malloc(kSlabBytes));
    if (!slab)
      std::abort();
    *slab = {nullptr, kSlabBytes};
    (currentSlab ? currentSlab->next : firstSlab) = slab;
    slabBytes += kSlabBytes;
  }
  currentSlab = slab;
  bump = reinterpret_cast<char *>(slab + 1);
  left = slab->size - sizeof(Slab);
}

void *ThreadArena::allocate(size_t size) {
  size_t total = sizeof(Header) + size;
  if (total > kLargestSmall || total < size)
    return allocateLarge(size);
  unsigned sizeClass = classOf(total);
  ++liveBlocks;
  if (FreeBlock *block = freeLists[sizeClass]) {
    freeLists[sizeClass] = block->next;
    return block; // its header is intact
  }
  size_t blockSize = size_t(32) << sizeClass;
  if (left < blockSize)
    nextSlab();
  auto *header = reinterpret_cast<Header *>(bump);
  bump += blockSize;
  left -= blockSize;
  *header = {this, sizeClass};
  return header + 1;
}

void *ThreadArena::allocateLarge(size_t size) {
  size_t total = sizeof(LargeLinks) + sizeof(Header) + size;
  if (total < size)
    return nullptr;
  auto *links = static_cast<LargeLinks *>(std::malloc(total));
  if (!links)
    return nullptr;
  *links = {nullptr, large, size, 0};
  if (large)
    large->prev = links;
  large = links;
  ++largeCount;
  auto *header = reinterpret_cast<Header *>(links + 1);
  *header = {this, kLargeTag};
  return header + 1;
}

void ThreadArena::release(void *user, Header *header) {
  if (header->tag != kLargeTag) {
    auto *block = static_cast<FreeBlock *>(user);
    block->next = freeLists[header->tag];
    freeLists[header->tag] = block;
    --liveBlocks;
    return;
  }
  LargeLinks *links = linksOf(user);
  (links->prev ? links->prev->next : large) = links->next;
  if (links->next)
    links->next->prev = links->prev;
  --largeCount;
  std::free(links);
}

void *ThreadArena::grow(void *user, Header *header, size_t size) {
  if (header->tag != kLargeTag) {
    size_t capacity = (size_t(32) << header->tag) - sizeof(Header);
    if (size <= capacity)
      return user;
    void *moved = allocate(size);
    if (moved) {
      std::memcpy(moved, user, capacity);
      release(user, header);
    }
    return moved;
  }
  LargeLinks *links = linksOf(user);
  size_t total = sizeof(LargeLinks) + sizeof(Header) + size;
  if (total < size)
    return nullptr;
  auto *moved = static_cast<LargeLinks *>(std::realloc(links, total));
  if (!moved)
    return nullptr;
  moved->size = size;
  (moved->prev ? moved->prev->next : large) = moved;
  if (moved->next)
    moved->next->prev = moved;
  return reinterpret_cast<Header *>(moved + 1) + 1;
}

void ThreadArena::reset() {
  active = false;
  std::memset(freeLists, 0, sizeof(freeLists));
  while (large) {
    LargeLinks *next = large->next;
    std::free(large);
    large = next;
  }
  largeCount = 0;
  liveBlocks = 0;
  currentSlab = nullptr;
  bump = nullptr;
  left = 0;
  // Keep what the next file will likely need, but not a huge file's peak.
  size_t kept = 0;
  Slab *last = nullptr;
  for (Slab *slab = firstSlab;
       slab && kept + slab->size <= kParserArenaRetainedBytes;
       slab = slab->next) {
    kept += slab->size;
    last = slab;
  }
  freeSlabsAfter(last);
}

void ThreadArena::freeSlabsAfter(Slab *keep) {
  Slab *slab = keep ? keep->next : firstSlab;
  (keep ? keep->next : firstSlab) = nullptr;
  while (slab) {
    Slab *next = slab->next;
    slabBytes -= slab->size;
    std::free(slab);
    slab = next;
  }
}

//===----------------------------------------------------------------------===//
// tree-sitter's allocator hooks
//===----------------------------------------------------------------------===//

void *hookMalloc(size_t size) {
  ThreadArena &local = arena;
  return local.active ? local.allocate(size) : systemAllocate(size);
}

void *hookCalloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total))
    return nullptr;
  void *user = hookMalloc(total);
  if (user)
    std::memset(user, 0, total);
  return user;
}

void hookFree(void *user) {
  if (!user)
    return;
  Header *header = headerOf(user);
  if (header->tag == kSystemTag) {
    std::free(header);
    return;
  }
  ThreadArena &local = arena;
  // A block of another (or an ended) scope is reclaimed with its arena.
  if (header->owner == &local && local.active)
    local.release(user, header);
}

void *hookRealloc(void *user, size_t size) {
  if (!user)
    return hookMalloc(size);
  Header *header = headerOf(user);
  if (header->tag == kSystemTag) {
    size_t total = sizeof(Header) + size;
    if (total < size)
      return nullptr;
    auto *moved = static_cast<Header *>(std::realloc(header, total));
    return moved ? moved + 1 : nullptr;
  }
  ThreadArena &local = arena;
  if (header->owner == &local && local.active)
    return local.grow(user, header, size);
  // Not ours to move: copy what the block can hold, leave it to its arena.
  size_t capacity = header->tag == kLargeTag
                        ? linksOf(user)->size
                        : (size_t(32) << header->tag) - sizeof(Header);
  void *moved = hookMalloc(size);
  if (moved)
    std::memcpy(moved, user, std::min(capacity, size));
  return moved;
}
} // namespace

bool fastci::python::installParserArena() {
  static std::once_flag once;
  std::call_once(once, [] {
    ts_set_allocator(hookMalloc, hookCalloc, hookRealloc, hookFree);
  });
  return true;
}

ParserArenaScope::ParserArenaScope()
    : active(installParserArena() && !arena.active) {
  if (!active)
    return;
  thread_local ArenaCleanup cleanup;
  (void)cleanup;
  arena.active = true;
}

ParserArenaScope::~ParserArenaScope() {
  if (active)
    arena.reset();
}

ParserArenaStats fastci::python::getParserArenaStats() {
  return {arena.slabBytes, arena.largeCount, arena.liveBlocks};
}
#else
// Sanitizer builds: tree-sitter keeps the system allocator.
bool fastci::python::installParserArena() { return false; }
ParserArenaScope::ParserArenaScope() : active(false) {}
ParserArenaScope::~ParserArenaScope() = default;
ParserArenaStats fastci::python::getParserArenaStats() { return {}; }
#endif
