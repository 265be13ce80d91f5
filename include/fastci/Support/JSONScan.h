//===- JSONScan.h - Checks llvm::json cannot make ---------------*- C++ -*-===//
//
// llvm::json::parse keeps the last of two equal keys in an object and
// reports nothing, so a reader built on it silently takes one of two
// conflicting values. FastCI's JSON readers run this scan over text that
// has already parsed, to report a repeated key at its position instead.
//
//===----------------------------------------------------------------------===//

#ifndef FASTCI_SUPPORT_JSONSCAN_H
#define FASTCI_SUPPORT_JSONSCAN_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>

namespace fastci {

/// A key that occurs twice in one JSON object.
struct DuplicateJSONKey {
  /// The offset of the second occurrence's opening quote.
  size_t offset;
  /// The key as written between its quotes (escapes not decoded).
  llvm::StringRef key;
};

/// Finds the first key repeated within one object of \p text, which must be
/// valid JSON. Keys are compared as written, so `"a"` and `"\u0061"` count
/// as different: no writer FastCI reads spells one key two ways.
std::optional<DuplicateJSONKey> findDuplicateJSONKey(llvm::StringRef text);

} // namespace fastci

#endif // FASTCI_SUPPORT_JSONSCAN_H
