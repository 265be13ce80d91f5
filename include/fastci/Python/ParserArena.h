//===- ParserArena.h - tree-sitter's memory, one file at a time -*- C++ -*-===//
//
// tree-sitter allocates and frees a small block for almost every token and
// syntax node, and glibc's malloc/free took 10-13% of the parse-python pass
// (measured with perf on /usr/lib/python3.11). A ParserArenaScope gives the
// thread that opens it a private arena for everything tree-sitter allocates
// until the scope ends: size-class free lists over reusable slabs, no locks,
// and no per-node frees at the end, since the whole arena is reclaimed at
// once (so the syntax tree need not be deleted node by node).
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_PARSERARENA_H
#define FASTCI_PYTHON_PARSERARENA_H

#include <cstddef>

namespace fastci::python {

/// Routes tree-sitter's allocator (ts_set_allocator) through the arena. Must
/// run before tree-sitter allocates anything in the process; idempotent and
/// thread-safe. Outside a scope the hooks forward to malloc/free. Returns
/// false, installing nothing, in sanitizer builds, where the system
/// allocator must see every block.
bool installParserArena();

/// While alive, tree-sitter's allocations on this thread come from the
/// thread's arena; its destructor reclaims all of them. Every tree-sitter
/// object (parser, tree, cursor) created inside the scope must be dead or
/// abandoned when it ends, and none may cross to another thread. Scopes do
/// not nest.
class ParserArenaScope {
public:
  ParserArenaScope();
  ~ParserArenaScope();
  ParserArenaScope(const ParserArenaScope &) = delete;
  ParserArenaScope &operator=(const ParserArenaScope &) = delete;

  /// True when the arena is in use, so objects need not be freed one by
  /// one (false in sanitizer builds or when not installed).
  bool reclaimsAll() const { return active; }

private:
  bool active;
};

/// The calling thread's arena, for tests and measurements.
struct ParserArenaStats {
  /// Bytes of slabs held (kept between scopes up to a cap).
  size_t slabBytes = 0;
  /// Blocks too large for a slab that are currently allocated.
  size_t largeBlocks = 0;
  /// Small blocks currently handed out (allocated and not freed).
  size_t liveBlocks = 0;
};
ParserArenaStats getParserArenaStats();

/// The most slab memory a thread keeps between scopes.
inline constexpr size_t kParserArenaRetainedBytes = size_t(32) << 20;

} // namespace fastci::python

#endif // FASTCI_PYTHON_PARSERARENA_H
