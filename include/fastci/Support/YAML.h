//===- YAML.h - YAML documents as located trees ------------------*- C++ -*-===//
//
// FastCI reads several YAML inputs (test manifests, workload schemas, change
// policies). This reader turns a YAML document into a small tree whose every
// node remembers where it came from, using LLVM's YAML parser, so that each
// reader can report `file:line:col: error: ...` at the offending value rather
// than at the file. Anchors, aliases and `<<` merge keys are resolved;
// duplicate keys, excessive nesting and documents that expand past a fixed
// size are rejected here, once, for every reader.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SUPPORT_YAML_H
#define FASTCI_SUPPORT_YAML_H

#include "fastci/IR/Attributes.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fastci {

/// One node of a YAML document.
class YAMLNode {
public:
  /// The shape of the node.
  enum class Kind { Null, Scalar, Sequence, Mapping };

  /// What the node is.
  Kind kind = Kind::Null;
  /// The scalar's text (unescaped), for scalars.
  std::string scalar;
  /// True if the scalar was quoted, so `"1"` stays a string.
  bool quoted = false;
  /// The elements, for sequences.
  std::vector<YAMLNode> elements;
  /// The key/value pairs in document order, for mappings.
  std::vector<std::pair<YAMLNode, YAMLNode>> entries;
  /// Where the node starts.
  llvm::SMLoc loc;

  // Defined out of line: implicit inline members would instantiate
  // std::pair<YAMLNode, YAMLNode> while YAMLNode is incomplete, which
  // clang rejects with libstdc++'s C++20 (constexpr) containers.
  YAMLNode();
  YAMLNode(const YAMLNode &);
  YAMLNode(YAMLNode &&) noexcept;
  YAMLNode &operator=(const YAMLNode &);
  YAMLNode &operator=(YAMLNode &&) noexcept;
  ~YAMLNode();

  bool isNull() const { return kind == Kind::Null; }
  bool isScalar() const { return kind == Kind::Scalar; }
  bool isSequence() const { return kind == Kind::Sequence; }
  bool isMapping() const { return kind == Kind::Mapping; }

  /// The value of \p key in a mapping, or nullptr.
  const YAMLNode *get(llvm::StringRef key) const;

  /// The scalar as an integer, if it is one (decimal, optional sign).
  std::optional<int64_t> getAsInt() const;
  /// The scalar as a number, if it is one.
  std::optional<double> getAsNumber() const;
  /// The scalar as a boolean (`true`/`false`/`yes`/`no`), if it is one.
  std::optional<bool> getAsBool() const;

  /// Converts the node to an attribute: unquoted scalars become ints, floats,
  /// bools or the absent value (`null`, `~`) where they read as such, other
  /// scalars strings; sequences lists; mappings dicts.
  Attribute toAttribute() const;
};

/// What a repeated mapping key means.
enum class DuplicateKeys {
  /// An error: FastCI's own formats, where a repeat is a mistake.
  Error,
  /// A warning, the last value wins: files written for PyYAML, which reads
  /// them that way (Megatron-LM's test configurations have repeats).
  WarnLastWins,
};

/// Parses buffer \p bufferId of \p diag's SourceMgr as one YAML document.
/// Reports syntax errors, duplicate keys, undefined aliases, excessive
/// nesting and expansion at
/// their location and returns std::nullopt. An empty document is a Null node.
std::optional<YAMLNode> parseYAML(unsigned bufferId, DiagnosticEngine &diag,
                                  DuplicateKeys duplicates = DuplicateKeys::Error);

/// Checks that \p node is a mapping whose keys are all in \p allowed, for
/// strict readers where a misspelt key would silently change behaviour.
/// Reports "<what> must be a mapping", or "unknown key 'k' in <what>;
/// expected 'a', 'b' or 'c'" at the first offending key; with an empty
/// \p what, the terse "expected a mapping" and "unknown key 'k'".
LogicalResult checkMappingKeys(const YAMLNode &node,
                               llvm::ArrayRef<llvm::StringRef> allowed,
                               llvm::StringRef what, DiagnosticEngine &diag);

/// `'a', 'b' or 'c'`: \p choices quoted, for messages listing what was
/// expected.
std::string formatChoices(llvm::ArrayRef<llvm::StringRef> choices);

} // namespace fastci

#endif // FASTCI_SUPPORT_YAML_H
