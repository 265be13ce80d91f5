//===- YAML.cpp - YAML documents as located trees -------------------------===//
//
// Converts llvm::yaml's lazily parsed node graph into an owned, located tree.
// The conversion is where input limits are enforced: one document, unique
// keys (or last-wins with a warning), bounded nesting, and a bounded expanded
// size, since anchors and aliases (with `<<` merge keys, as real CI
// configurations use them) can make a small file expand exponentially.
//
//===----------------------------------------------------------------------===//
#include "fastci/Support/YAML.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/YAMLParser.h"
#include <cerrno>
#include <cstdlib>

using namespace fastci;

/// Deeper documents are rejected: real manifests nest a handful of levels,
/// and the bound keeps conversion off the edge of the stack.
static constexpr unsigned kMaxNesting = 128;
/// Aliases expand; past this many nodes a document is rejected.
static constexpr size_t kMaxNodes = 1000000;

YAMLNode::YAMLNode() = default;
YAMLNode::YAMLNode(const YAMLNode &) = default;
YAMLNode::YAMLNode(YAMLNode &&) noexcept = default;
YAMLNode &YAMLNode::operator=(const YAMLNode &) = default;
YAMLNode &YAMLNode::operator=(YAMLNode &&) noexcept = default;
YAMLNode::~YAMLNode() = default;

const YAMLNode *YAMLNode::get(llvm::StringRef key) const {
  for (const auto &[k, v] : entries)
    if (k.isScalar() && k.scalar == key)
      return &v;
  return nullptr;
}

std::optional<int64_t> YAMLNode::getAsInt() const {
  if (!isScalar())
    return std::nullopt;
  int64_t value;
  llvm::StringRef text(scalar);
  if (text.starts_with("+"))
    text = text.drop_front();
  if (text.empty() || text.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

std::optional<double> YAMLNode::getAsNumber() const {
  if (std::optional<int64_t> i = getAsInt())
    return static_cast<double>(*i);
  if (!isScalar() || scalar.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(scalar.c_str(), &end);
  if (errno != 0 || end != scalar.c_str() + scalar.size())
    return std::nullopt;
  return value;
}

std::optional<bool> YAMLNode::getAsBool() const {
  if (!isScalar())
    return std::nullopt;
  llvm::StringRef text(scalar);
  if (text.equals_insensitive("true") || text.equals_insensitive("yes"))
    return true;
  if (text.equals_insensitive("false") || text.equals_insensitive("no"))
    return false;
  return std::nullopt;
}

Attribute YAMLNode::toAttribute() const {
  switch (kind) {
  case Kind::Null:
    return Attribute();
  case Kind::Scalar:
    if (!quoted) {
      if (std::optional<int64_t> i = getAsInt())
        return Attribute::getInt(*i);
      if (std::optional<bool> b = getAsBool())
        return Attribute::getBool(*b);
      if (std::optional<double> d = getAsNumber())
        return Attribute::getFloat(*d);
      if (scalar == "null" || scalar == "~")
        return Attribute();
    }
    return Attribute::getString(scalar);
  case Kind::Sequence: {
    std::vector<Attribute> list;
    for (const YAMLNode &element : elements)
      list.push_back(element.toAttribute());
    return Attribute::getList(std::move(list));
  }
  case Kind::Mapping: {
    AttrDict dict;
    for (const auto &[key, value] : entries)
      dict.set(key.scalar, value.toAttribute());
    return Attribute::getDict(std::move(dict));
  }
  }
  return Attribute();
}

namespace {
/// Walks llvm::yaml nodes into YAMLNodes, reporting the first problem.
class Converter {
public:
  Converter(DiagnosticEngine &diag, DuplicateKeys duplicates)
      : diag(diag), duplicates(duplicates) {}

  bool convert(llvm::yaml::Node *node, YAMLNode &out, unsigned depth) {
    if (!node)
      return false;
    out.loc = node->getSourceRange().Start;
    if (depth > kMaxNesting) {
      diag.error(out.loc, "nesting deeper than " + llvm::Twine(kMaxNesting) +
                              " levels");
      return false;
    }
    if (auto *scalar = llvm::dyn_cast<llvm::yaml::ScalarNode>(node)) {
      llvm::SmallString<64> storage;
      out.kind = YAMLNode::Kind::Scalar;
      out.scalar = scalar->getValue(storage).str();
      llvm::StringRef raw = scalar->getRawValue();
      out.quoted = raw.starts_with("\"") || raw.starts_with("'");
      return remember(node, out);
    }
    if (auto *block = llvm::dyn_cast<llvm::yaml::BlockScalarNode>(node)) {
      out.kind = YAMLNode::Kind::Scalar;
      out.scalar = block->getValue().str();
      out.quoted = true;
      return true;
    }
    if (llvm::isa<llvm::yaml::NullNode>(node)) {
      out.kind = YAMLNode::Kind::Null;
      return true;
    }
    if (auto *sequence = llvm::dyn_cast<llvm::yaml::SequenceNode>(node)) {
      out.kind = YAMLNode::Kind::Sequence;
      for (llvm::yaml::Node &element : *sequence) {
        if (!convert(&element, out.elements.emplace_back(), depth + 1))
          return false;
      }
      return !sequence->failed() && remember(node, out);
    }
    if (auto *mapping = llvm::dyn_cast<llvm::yaml::MappingNode>(node)) {
      out.kind = YAMLNode::Kind::Mapping;
      return convertMapping(*mapping, out, depth) && remember(node, out);
    }
    if (auto *alias = llvm::dyn_cast<llvm::yaml::AliasNode>(node)) {
      // LLVM gives an alias the position of the token after it; its name
      // points into the buffer just past the '*'.
      out.loc = llvm::SMLoc::getFromPointer(alias->getName().data() - 1);
      auto it = anchors.find(alias->getName());
      if (it == anchors.end()) {
        diag.error(out.loc, "undefined YAML alias '*" + alias->getName() + "'");
        return false;
      }
      llvm::SMLoc loc = out.loc;
      out = it->second;
      out.loc = loc;
      return countNodes(out, /*deep=*/true);
    }
    diag.error(out.loc, "unsupported YAML node");
    return false;
  }

private:
  /// Converts a mapping, applying `<<` merge keys: merged entries never
  /// override the mapping's own keys, wherever those appear.
  bool convertMapping(llvm::yaml::MappingNode &mapping, YAMLNode &out,
                      unsigned depth) {
    llvm::StringMap<size_t> index;
    llvm::StringSet<> merged;
    for (llvm::yaml::KeyValueNode &entry : mapping) {
      YAMLNode key, value;
      if (!convert(entry.getKey(), key, depth + 1))
        return false;
      if (!key.isScalar()) {
        diag.error(key.loc, "mapping keys must be scalars");
        return false;
      }
      if (!convert(entry.getValue(), value, depth + 1))
        return false;
      if (key.scalar == "<<" && !key.quoted) {
        if (!merge(value, out, index, merged))
          return false;
        continue;
      }
      auto [it, inserted] = index.try_emplace(key.scalar, out.entries.size());
      if (inserted) {
        out.entries.emplace_back(std::move(key), std::move(value));
        continue;
      }
      if (!merged.erase(key.scalar)) {
        if (duplicates == DuplicateKeys::Error) {
          diag.error(key.loc, "duplicate key '" + key.scalar + "'");
          return false;
        }
        diag.warning(key.loc, "duplicate key '" + key.scalar +
                                  "'; the last value is used");
      }
      out.entries[it->second].second = std::move(value);
    }
    return !mapping.failed();
  }

  /// Adds the entries of \p source (a mapping or a list of mappings) that
  /// \p out does not have yet.
  bool merge(const YAMLNode &source, YAMLNode &out,
             llvm::StringMap<size_t> &index, llvm::StringSet<> &merged) {
    if (source.isSequence()) {
      for (const YAMLNode &element : source.elements)
        if (!merge(element, out, index, merged))
          return false;
      return true;
    }
    if (!source.isMapping()) {
      diag.error(source.loc, "a '<<' merge key needs a mapping");
      return false;
    }
    for (const auto &[key, value] : source.entries) {
      if (!index.try_emplace(key.scalar, out.entries.size()).second)
        continue;
      merged.insert(key.scalar);
      out.entries.emplace_back(key, value);
    }
    return true;
  }

  /// Records \p out under its node's anchor, if it has one.
  bool remember(llvm::yaml::Node *node, const YAMLNode &out) {
    if (!node->getAnchor().empty())
      anchors[node->getAnchor()] = out;
    return countNodes(out);
  }

  /// Bounds the document's expanded size: aliases to aliases can make a
  /// few hundred bytes expand exponentially. A converted node counts its
  /// direct children (theirs were counted as they were converted); an alias
  /// copy counts its whole subtree, stopping as soon as the bound is passed.
  bool countNodes(const YAMLNode &node, bool deep = false) {
    numNodes += 1 + node.elements.size() + 2 * node.entries.size();
    if (deep && numNodes <= kMaxNodes) {
      for (const YAMLNode &element : node.elements)
        if (!countNodes(element, true))
          return false;
      for (const auto &[key, value] : node.entries)
        if (!countNodes(value, true))
          return false;
    }
    if (numNodes <= kMaxNodes)
      return true;
    diag.error(node.loc, "YAML document expands to more than " +
                             llvm::Twine(kMaxNodes) + " nodes");
    return false;
  }

  DiagnosticEngine &diag;
  DuplicateKeys duplicates;
  llvm::StringMap<YAMLNode> anchors;
  size_t numNodes = 0;
};
} // namespace

std::optional<YAMLNode> fastci::parseYAML(unsigned bufferId,
                                          DiagnosticEngine &diag,
                                          DuplicateKeys duplicates) {
  llvm::SourceMgr &sourceMgr = diag.getSourceMgr();
  llvm::MemoryBufferRef buffer = sourceMgr.getMemoryBuffer(bufferId)->getMemBufferRef();
  unsigned errorsBefore = diag.getNumErrors();
  // llvm::yaml passes invalid UTF-8 through into scalars, from where it would
  // reach test ids and the IR, whose readers reject it.
  const llvm::UTF8 *cursor =
      reinterpret_cast<const llvm::UTF8 *>(buffer.getBufferStart());
  if (!llvm::isLegalUTF8String(&cursor, reinterpret_cast<const llvm::UTF8 *>(
                                            buffer.getBufferEnd()))) {
    diag.error(
        llvm::SMLoc::getFromPointer(reinterpret_cast<const char *>(cursor)),
        "invalid UTF-8");
    return std::nullopt;
  }
  llvm::yaml::Stream stream(buffer, sourceMgr, /*ShowColors=*/false);
  YAMLNode root;
  auto document = stream.begin();
  if (document != stream.end()) {
    Converter converter(diag, duplicates);
    llvm::yaml::Node *node = document->getRoot();
    if (node && !converter.convert(node, root, 0) &&
        diag.getNumErrors() == errorsBefore)
      diag.error(node->getSourceRange().Start, "malformed YAML");
    if (diag.getNumErrors() == errorsBefore && ++document != stream.end())
      diag.error(document->getRoot() ? document->getRoot()->getSourceRange().Start
                                     : llvm::SMLoc(),
                 "expected a single YAML document");
  }
  if (stream.failed() || diag.getNumErrors() != errorsBefore)
    return std::nullopt;
  return root;
}

std::string fastci::formatChoices(llvm::ArrayRef<llvm::StringRef> choices) {
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i)
      text += i + 1 == choices.size() ? " or " : ", ";
    text += "'" + choices[i].str() + "'";
  }
  return text;
}

LogicalResult fastci::checkMappingKeys(const YAMLNode &node,
                                       llvm::ArrayRef<llvm::StringRef> allowed,
                                       llvm::StringRef what,
                                       DiagnosticEngine &diag) {
  if (!node.isMapping()) {
    diag.error(node.loc, what.empty() ? llvm::Twine("expected a mapping")
                                      : what + " must be a mapping");
    return failure();
  }
  for (const auto &[key, value] : node.entries) {
    if (llvm::is_contained(allowed, llvm::StringRef(key.scalar)))
      continue;
    if (what.empty())
      diag.error(key.loc, "unknown key '" + key.scalar + "'");
    else
      diag.error(key.loc, "unknown key '" + key.scalar + "' in " + what +
                              "; expected " + formatChoices(allowed));
    return failure();
  }
  return success();
}
