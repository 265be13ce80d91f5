//===- TypeID.h - Identity of C++ types across shared objects ---*- C++ -*-===//
//
// The analysis manager caches analyses by type and passes are told apart by
// type, including types defined in pass plugins. A TypeID is the address of a
// variable with vague linkage instantiated per type; with default visibility
// the dynamic linker merges those across libFastCI.so and every plugin, so a
// plugin that asks for getAnalysis<EvidenceGraph>() finds the host's entry.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_TYPEID_H
#define FASTCI_PASS_TYPEID_H

#include "llvm/ADT/DenseMapInfo.h"
#include <cstdint>

namespace fastci {

namespace detail {
/// One variable per type; only its address matters.
template <typename T> struct TypeIDStorage { static inline char id = 0; };
} // namespace detail

/// An opaque, comparable identifier of a C++ type.
class TypeID {
public:
  /// The identifier of \p T.
  template <typename T> static TypeID get() {
    return TypeID(&detail::TypeIDStorage<T>::id);
  }
  /// The opaque pointer, for hashing.
  const void *getAsOpaquePointer() const { return storage; }
  /// Rebuilds a TypeID from getAsOpaquePointer().
  static TypeID getFromOpaquePointer(const void *pointer) {
    return TypeID(pointer);
  }

  friend bool operator==(TypeID lhs, TypeID rhs) {
    return lhs.storage == rhs.storage;
  }
  friend bool operator!=(TypeID lhs, TypeID rhs) { return !(lhs == rhs); }

private:
  explicit TypeID(const void *storage) : storage(storage) {}
  const void *storage;
};

} // namespace fastci

namespace llvm {
/// Lets TypeID key DenseMap and friends.
template <> struct DenseMapInfo<fastci::TypeID> {
  static fastci::TypeID getEmptyKey() {
    return fastci::TypeID::getFromOpaquePointer(
        DenseMapInfo<const void *>::getEmptyKey());
  }
  static fastci::TypeID getTombstoneKey() {
    return fastci::TypeID::getFromOpaquePointer(
        DenseMapInfo<const void *>::getTombstoneKey());
  }
  static unsigned getHashValue(fastci::TypeID id) {
    return DenseMapInfo<const void *>::getHashValue(id.getAsOpaquePointer());
  }
  static bool isEqual(fastci::TypeID lhs, fastci::TypeID rhs) {
    return lhs == rhs;
  }
};
} // namespace llvm

#endif // FASTCI_PASS_TYPEID_H
