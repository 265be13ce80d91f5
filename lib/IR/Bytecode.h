//===- Bytecode.h - Constants of the binary module format -------*- C++ -*-===//
//
// The layout shared by the bytecode writer and reader; docs/IR.md describes
// it in full. Everything is a LEB128 varint unless noted: signed values are
// zigzag-encoded, optional ids are stored as id + 1 (0 = none), floats are 8
// little-endian bytes, and every string is an index into the string table
// that precedes the body.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_LIB_IR_BYTECODE_H
#define FASTCI_LIB_IR_BYTECODE_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace fastci {
namespace bytecode {

/// The first bytes of every bytecode file. 0xFC never occurs in UTF-8 text
/// or JSON, so format detection cannot mistake one for the other.
inline constexpr llvm::StringLiteral kMagic = "\xFC"
                                              "FCI";

/// The format version; readers reject any other.
inline constexpr uint64_t kVersion = 1;

/// Tags of attribute values.
enum AttrTag : uint8_t {
  None = 0,
  False = 1,
  True = 2,
  Int = 3,
  Float = 4,
  String = 5,
  Symbol = 6,
  List = 7,
  Dict = 8,
};

/// Tags of stack frames.
enum FrameTag : uint8_t { EntityFrame = 0, LeafFrame = 1 };

/// Zigzag encoding: small magnitudes of either sign become small varints.
inline uint64_t encodeZigzag(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^
         static_cast<uint64_t>(value >> 63);
}
inline int64_t decodeZigzag(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

} // namespace bytecode
} // namespace fastci

#endif // FASTCI_LIB_IR_BYTECODE_H
