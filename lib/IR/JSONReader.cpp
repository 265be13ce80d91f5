//===- JSONReader.cpp - Reading the JSON form of a module -----------------===//
//
// Reads the JSON written by JSONWriter. Syntax errors come from llvm::json
// with a byte offset; schema errors name the path of the offending value
// (`tests[3].cost.gpus`) and point at it in the buffer. llvm::json keeps no
// positions, so on error the reader walks the original text along that path
// to find one; the walk is only done once, on the failure path. Nesting is
// bounded before llvm::json sees the text, so deep input cannot exhaust the
// stack.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Parser.h"
#include "fastci/Support/JSONScan.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;
using llvm::StringRef;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace {
/// One step of a path into a JSON document: an object key or array index.
struct PathSegment {
  PathSegment(std::string key) : key(std::move(key)) {}
  PathSegment(size_t index) : index(index) {}
  bool isKey() const { return index == kKey; }

  static constexpr size_t kKey = SIZE_MAX;
  std::string key;
  size_t index = kKey;
};
} // namespace

/// `@"name"`, escaped as in .fir, for messages.
static std::string formatSymbol(StringRef name) {
  std::string result;
  llvm::raw_string_ostream os(result);
  printSymbolRef(os, name);
  return result;
}

//===----------------------------------------------------------------------===//
// Locating values in the source text
//===----------------------------------------------------------------------===//

namespace {
/// Walks syntactically valid JSON text; used only to turn a path into a
/// position for a diagnostic.
class TextWalker {
public:
  explicit TextWalker(StringRef text) : text(text) {}

  /// The offset of the value at \p path, or of the deepest enclosing value
  /// that could be found.
  size_t locate(llvm::ArrayRef<PathSegment> path) {
    skipSpace();
    size_t found = pos;
    for (const PathSegment &segment : path) {
      if (!step(segment))
        break;
      skipSpace();
      found = pos;
    }
    return found;
  }

private:
  void skipSpace() {
    while (pos < text.size() && llvm::isSpace(text[pos]))
      ++pos;
  }
  /// Skips a string starting at its opening quote; returns its raw body.
  StringRef skipString() {
    size_t start = ++pos;
    while (pos < text.size() && text[pos] != '"')
      pos += text[pos] == '\\' ? 2 : 1;
    StringRef body = text.slice(start, std::min(pos, text.size()));
    ++pos;
    return body;
  }
  /// Skips one value, iteratively so that depth cannot matter.
  void skipValue() {
    size_t depth = 0;
    do {
      skipSpace();
      if (pos >= text.size())
        return;
      char c = text[pos];
      if (c == '"') {
        skipString();
      } else if (c == '{' || c == '[') {
        ++depth;
        ++pos;
      } else if (c == '}' || c == ']') {
        --depth;
        ++pos;
      } else {
        while (pos < text.size() &&
               !llvm::StringRef(",]} \t\r\n").contains(text[pos]))
          ++pos;
      }
      skipSpace();
      // Inside a container, separators and keys are part of the walk.
      while (depth && pos < text.size() &&
             (text[pos] == ',' || text[pos] == ':'))
        ++pos;
    } while (depth);
  }
  /// Moves from the container at pos to its member \p segment.
  bool step(const PathSegment &segment) {
    if (pos >= text.size())
      return false;
    char open = text[pos];
    if (open != '{' && open != '[')
      return false;
    ++pos;
    for (size_t index = 0;; ++index) {
      skipSpace();
      if (pos >= text.size() || text[pos] == '}' || text[pos] == ']')
        return false;
      if (open == '{') {
        StringRef key = skipString();
        skipSpace();
        ++pos; // ':'
        skipSpace();
        if (segment.isKey() && key == segment.key)
          return true;
      } else if (index == segment.index) {
        return true;
      }
      skipValue();
      skipSpace();
      if (pos < text.size() && text[pos] == ',')
        ++pos;
    }
  }

  StringRef text;
  size_t pos = 0;
};

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

class JSONReader {
public:
  JSONReader(StringRef text, DiagnosticEngine &diag, Module &module)
      : text(text), diag(diag), module(module) {}

  LogicalResult read();

private:
  /// Pushes a path segment for the lifetime of the scope.
  struct Scope {
    Scope(JSONReader &reader, PathSegment segment) : reader(reader) {
      reader.path.push_back(std::move(segment));
    }
    ~Scope() { reader.path.pop_back(); }
    JSONReader &reader;
  };

  /// Reports \p message at the current path.
  LogicalResult emitError(const llvm::Twine &message);

  LogicalResult getObject(const Value &value, const Object *&object);
  LogicalResult getArray(const Value &value, const Array *&array);
  LogicalResult getString(const Value &value, StringRef &str);
  LogicalResult getInt(const Value &value, int64_t &number);
  LogicalResult getUInt32(const Value &value, uint32_t &number);
  LogicalResult getDouble(const Value &value, double &number);
  LogicalResult getBool(const Value &value, bool &flag);
  /// Fails on keys of \p object outside \p known.
  LogicalResult checkKeys(const Object &object,
                          std::initializer_list<StringRef> known);
  /// Calls \p fn on member \p key of \p object inside its path scope; a
  /// missing member is an error only when \p required.
  template <typename Fn>
  LogicalResult member(const Object &object, StringRef key, bool required,
                       Fn fn) {
    const Value *value = object.get(key);
    if (!value)
      return required ? emitError("missing key '" + key + "'") : success();
    Scope scope(*this, key.str());
    return fn(*value);
  }
  /// Calls \p fn on each element of the array \p value.
  template <typename Fn> LogicalResult elements(const Value &value, Fn fn) {
    const Array *array;
    if (failed(getArray(value, array)))
      return failure();
    for (size_t i = 0, e = array->size(); i != e; ++i) {
      Scope scope(*this, i);
      if (failed(fn((*array)[i])))
        return failure();
    }
    return success();
  }
  LogicalResult getEntityRef(const Value &value, EntityId &id);
  LogicalResult getStringList(const Value &value,
                              std::vector<std::string> &list);
  LogicalResult readAttr(const Value &value, Attribute &attr, unsigned depth);
  LogicalResult readAttrDict(const Value &value, AttrDict &dict,
                             unsigned depth = 0);

  LogicalResult readEntity(const Value &value);
  LogicalResult readEdge(const Value &value);
  LogicalResult readTest(const Value &value);
  LogicalResult readEvidence(const Value &value);
  LogicalResult readChange(const Value &value);
  LogicalResult readChangedFile(const Value &value);

  StringRef text;
  DiagnosticEngine &diag;
  Module &module;
  std::vector<PathSegment> path;
  /// An entity's parent, which may be defined later in the array.
  struct ParentRef {
    EntityId entity;
    size_t index;
    std::string symbol;
  };
  std::vector<ParentRef> parentRefs;
};
} // namespace

LogicalResult JSONReader::emitError(const llvm::Twine &message) {
  std::string where;
  llvm::raw_string_ostream os(where);
  for (const PathSegment &segment : path) {
    if (segment.isKey())
      os << (where.empty() ? "" : ".") << segment.key;
    else
      os << '[' << segment.index << ']';
  }
  size_t offset = TextWalker(text).locate(path);
  diag.error(llvm::SMLoc::getFromPointer(text.data() + offset),
             message + (where.empty() ? "" : " at " + where));
  return failure();
}

LogicalResult JSONReader::getObject(const Value &value, const Object *&object) {
  object = value.getAsObject();
  return object ? success() : emitError("expected object");
}

LogicalResult JSONReader::getArray(const Value &value, const Array *&array) {
  array = value.getAsArray();
  return array ? success() : emitError("expected array");
}

LogicalResult JSONReader::getString(const Value &value, StringRef &str) {
  std::optional<StringRef> result = value.getAsString();
  if (!result)
    return emitError("expected string");
  str = *result;
  return success();
}

LogicalResult JSONReader::getInt(const Value &value, int64_t &number) {
  std::optional<int64_t> result = value.getAsInteger();
  if (!result)
    return emitError(value.kind() == Value::Number ? "integer out of range"
                                                   : "expected integer");
  number = *result;
  return success();
}

LogicalResult JSONReader::getUInt32(const Value &value, uint32_t &number) {
  int64_t wide = 0; // set by getInt on success; g++ 12 cannot tell
  if (failed(getInt(value, wide)))
    return failure();
  if (wide < 0 || wide > UINT32_MAX)
    return emitError("integer out of range");
  number = static_cast<uint32_t>(wide);
  return success();
}

LogicalResult JSONReader::getDouble(const Value &value, double &number) {
  Attribute attr;
  if (failed(readAttr(value, attr, /*depth=*/0)))
    return failure();
  if (!attr.isNumber())
    return emitError("expected number");
  number = attr.getNumber();
  return success();
}

LogicalResult JSONReader::getBool(const Value &value, bool &flag) {
  std::optional<bool> result = value.getAsBoolean();
  if (!result)
    return emitError("expected boolean");
  flag = *result;
  return success();
}

LogicalResult JSONReader::checkKeys(const Object &object,
                                    std::initializer_list<StringRef> known) {
  // Object iteration order is unspecified; report the smallest unknown key
  // so that the diagnostic is deterministic.
  std::optional<StringRef> unknown;
  for (const auto &entry : object) {
    StringRef key = entry.first;
    if (!llvm::is_contained(known, key) && (!unknown || key < *unknown))
      unknown = key;
  }
  if (!unknown)
    return success();
  Scope scope(*this, unknown->str());
  return emitError("unknown key '" + *unknown + "'");
}

LogicalResult JSONReader::getEntityRef(const Value &value, EntityId &id) {
  StringRef symbol;
  if (failed(getString(value, symbol)))
    return failure();
  id = module.lookupEntity(symbol);
  if (id == kNoEntity)
    return emitError("undefined symbol " + formatSymbol(symbol));
  return success();
}

LogicalResult JSONReader::getStringList(const Value &value,
                                        std::vector<std::string> &list) {
  return elements(value, [&](const Value &element) {
    StringRef str;
    if (failed(getString(element, str)))
      return failure();
    list.push_back(str.str());
    return success();
  });
}

LogicalResult JSONReader::readAttr(const Value &value, Attribute &attr,
                                   unsigned depth) {
  if (depth >= kMaxAttrNesting)
    return emitError("nesting too deep");
  switch (value.kind()) {
  case Value::Null:
    attr = Attribute();
    return success();
  case Value::Boolean:
    attr = Attribute::getBool(*value.getAsBoolean());
    return success();
  case Value::Number:
    if (std::optional<int64_t> number = value.getAsInteger())
      attr = Attribute::getInt(*number);
    else
      attr = Attribute::getFloat(*value.getAsNumber());
    return success();
  case Value::String:
    attr = Attribute::getString(*value.getAsString());
    return success();
  case Value::Array: {
    std::vector<Attribute> list;
    if (failed(elements(value, [&](const Value &element) {
          return readAttr(element, list.emplace_back(), depth + 1);
        })))
      return failure();
    attr = Attribute::getList(std::move(list));
    return success();
  }
  case Value::Object:
    break;
  }
  const Object &object = *value.getAsObject();
  if (object.size() == 1 && StringRef(object.begin()->first).starts_with("$")) {
    StringRef tag = object.begin()->first;
    const Value &payload = object.begin()->second;
    Scope scope(*this, tag.str());
    if (tag == "$dict") {
      AttrDict dict;
      if (failed(readAttrDict(payload, dict, depth + 1)))
        return failure();
      attr = Attribute::getDict(std::move(dict));
      return success();
    }
    StringRef str;
    if (tag != "$symbol" && tag != "$float" && tag != "$bytes")
      return emitError("unknown tag '" + tag + "'");
    if (failed(getString(payload, str)))
      return failure();
    if (tag == "$symbol") {
      attr = Attribute::getSymbol(str);
      return success();
    }
    if (tag == "$bytes") {
      std::string bytes;
      if (!llvm::tryGetFromHex(str, bytes))
        return emitError("expected hex digits");
      attr = Attribute::getString(bytes);
      return success();
    }
    double number;
    if (str == "nan" || str == "inf" || str == "-inf")
      number = str == "nan" ? NAN : (str == "inf" ? INFINITY : -INFINITY);
    else if (!llvm::to_float(str, number))
      return emitError("expected float");
    attr = Attribute::getFloat(number);
    return success();
  }
  AttrDict dict;
  if (failed(readAttrDict(value, dict, depth + 1)))
    return failure();
  attr = Attribute::getDict(std::move(dict));
  return success();
}

LogicalResult JSONReader::readAttrDict(const Value &value, AttrDict &dict,
                                       unsigned depth) {
  if (depth >= kMaxAttrNesting)
    return emitError("nesting too deep");
  const Object *object;
  if (failed(getObject(value, object)))
    return failure();
  for (const auto &entry : *object) {
    Scope scope(*this, entry.first.str());
    Attribute attr;
    if (failed(readAttr(entry.second, attr, depth)))
      return failure();
    dict.set(entry.first, std::move(attr));
  }
  return success();
}

LogicalResult JSONReader::readEntity(const Value &value) {
  const Object *object;
  StringRef kindName, symbol;
  if (failed(getObject(value, object)) ||
      failed(checkKeys(*object, {"kind", "symbol", "parent", "range", "hash",
                                 "attributes"})) ||
      failed(member(*object, "kind", true,
                    [&](const Value &v) { return getString(v, kindName); })) ||
      failed(member(*object, "symbol", true,
                    [&](const Value &v) { return getString(v, symbol); })))
    return failure();
  std::optional<EntityKind> kind =
      llvm::StringSwitch<std::optional<EntityKind>>(kindName)
          .Case("file", EntityKind::File)
          .Case("module", EntityKind::Module)
          .Case("class", EntityKind::Class)
          .Case("function", EntityKind::Function)
          .Default(std::nullopt);
  if (!kind) {
    Scope scope(*this, std::string("kind"));
    return emitError("unknown entity kind '" + kindName + "'");
  }
  EntityId id = module.addEntity(*kind, symbol);
  return failure(
      failed(member(*object, "parent", false,
                    [&](const Value &v) -> LogicalResult {
                      StringRef parent;
                      if (failed(getString(v, parent)))
                        return failure();
                      parentRefs.push_back(
                          {id, path[path.size() - 2].index, parent.str()});
                      return success();
                    })) ||
      failed(member(*object, "range", false,
                    [&](const Value &v) -> LogicalResult {
                      const Array *array;
                      if (failed(getArray(v, array)))
                        return failure();
                      if (array->size() != 4)
                        return emitError("expected 4 integers");
                      SourceRange &range = module.getEntity(id).range;
                      uint32_t *fields[] = {&range.startLine,
                                            &range.startColumn, &range.endLine,
                                            &range.endColumn};
                      for (size_t i = 0; i < 4; ++i) {
                        Scope scope(*this, i);
                        if (failed(getUInt32((*array)[i], *fields[i])))
                          return failure();
                      }
                      return success();
                    })) ||
      failed(member(
          *object, "hash", false,
          [&](const Value &v) -> LogicalResult {
            StringRef hex;
            if (failed(getString(v, hex)))
              return failure();
            if (hex.size() != 16 || !llvm::all_of(hex, llvm::isHexDigit) ||
                hex.getAsInteger(16, module.getEntity(id).contentHash))
              return emitError("expected 16 hex digits");
            return success();
          })) ||
      failed(member(*object, "attributes", false, [&](const Value &v) {
        return readAttrDict(v, module.getEntity(id).attrs);
      })));
}

LogicalResult JSONReader::readEdge(const Value &value) {
  const Object *object;
  StringRef kindName, to;
  StaticEdge edge;
  bool resolved = false;
  if (failed(getObject(value, object)) ||
      failed(checkKeys(*object, {"kind", "from", "to", "resolved", "line"})) ||
      failed(member(*object, "kind", true,
                    [&](const Value &v) { return getString(v, kindName); })))
    return failure();
  if (kindName != "import" && kindName != "call") {
    Scope scope(*this, std::string("kind"));
    return emitError("unknown edge kind '" + kindName + "'");
  }
  edge.kind = kindName == "import" ? EdgeKind::Import : EdgeKind::Call;
  if (failed(
          member(*object, "from", true,
                 [&](const Value &v) { return getEntityRef(v, edge.from); })) ||
      failed(member(*object, "resolved", true,
                    [&](const Value &v) { return getBool(v, resolved); })) ||
      failed(member(*object, "to", true,
                    [&](const Value &v) {
                      return resolved ? getEntityRef(v, edge.to)
                                      : getString(v, to);
                    })) ||
      failed(member(*object, "line", false,
                    [&](const Value &v) { return getUInt32(v, edge.line); })))
    return failure();
  edge.name = resolved ? module.getEntity(edge.to).symbol : to;
  module.addEdge(edge);
  return success();
}

LogicalResult JSONReader::readTest(const Value &value) {
  const Object *object;
  StringRef name;
  if (failed(getObject(value, object)) ||
      failed(checkKeys(*object, {"name", "entry", "cost", "workload", "scope",
                                 "tags", "history", "attributes"})) ||
      failed(member(*object, "name", true,
                    [&](const Value &v) { return getString(v, name); })))
    return failure();
  Test &test = module.getTest(module.addTest(name));
  auto readCost = [&](const Value &v) -> LogicalResult {
    const Object *cost;
    return failure(
        failed(getObject(v, cost)) ||
        failed(checkKeys(*cost, {"gpus", "seconds", "gpu_seconds"})) ||
        failed(member(
            *cost, "gpus", false,
            [&](const Value &n) { return getInt(n, test.cost.gpus); })) ||
        failed(member(
            *cost, "seconds", false,
            [&](const Value &n) { return getDouble(n, test.cost.seconds); })) ||
        failed(member(*cost, "gpu_seconds", false, [&](const Value &n) {
          return getDouble(n, test.cost.gpuSeconds);
        })));
  };
  auto readOutcome = [&](const Value &v) -> LogicalResult {
    const Object *entry;
    Outcome outcome;
    StringRef revision, kindName;
    if (failed(getObject(v, entry)) ||
        failed(
            checkKeys(*entry, {"revision", "time", "outcome", "duration"})) ||
        failed(
            member(*entry, "revision", true,
                   [&](const Value &n) { return getString(n, revision); })) ||
        failed(
            member(*entry, "time", true,
                   [&](const Value &n) { return getInt(n, outcome.time); })) ||
        failed(
            member(*entry, "outcome", true,
                   [&](const Value &n) { return getString(n, kindName); })) ||
        failed(member(*entry, "duration", true, [&](const Value &n) {
          return getDouble(n, outcome.duration);
        })))
      return failure();
    std::optional<OutcomeKind> kind =
        llvm::StringSwitch<std::optional<OutcomeKind>>(kindName)
            .Case("pass", OutcomeKind::Pass)
            .Case("fail", OutcomeKind::Fail)
            .Case("error", OutcomeKind::Error)
            .Case("skip", OutcomeKind::Skip)
            .Default(std::nullopt);
    if (!kind) {
      Scope scope(*this, std::string("outcome"));
      return emitError("unknown outcome '" + kindName + "'");
    }
    outcome.kind = *kind;
    outcome.revision = module.intern(revision);
    test.history.push_back(outcome);
    return success();
  };
  return failure(
      failed(member(
          *object, "entry", false,
          [&](const Value &v) { return getEntityRef(v, test.entry); })) ||
      failed(member(*object, "cost", false, readCost)) ||
      failed(member(
          *object, "workload", false,
          [&](const Value &v) { return readAttrDict(v, test.workload); })) ||
      failed(member(
          *object, "scope", false,
          [&](const Value &v) { return getStringList(v, test.scope); })) ||
      failed(member(
          *object, "tags", false,
          [&](const Value &v) { return getStringList(v, test.tags); })) ||
      failed(
          member(*object, "history", false,
                 [&](const Value &v) { return elements(v, readOutcome); })) ||
      failed(member(*object, "attributes", false, [&](const Value &v) {
        return readAttrDict(v, test.attrs);
      })));
}

LogicalResult JSONReader::readEvidence(const Value &value) {
  const Object *object;
  StringRef testName, revision;
  if (failed(getObject(value, object)) ||
      failed(checkKeys(*object, {"test", "pid", "rank", "revision", "rate",
                                 "attributes", "samples"})) ||
      failed(member(*object, "test", true,
                    [&](const Value &v) { return getString(v, testName); })))
    return failure();
  TestId test = module.lookupTest(testName);
  if (test == kNoTest) {
    Scope scope(*this, std::string("test"));
    std::string name;
    llvm::raw_string_ostream os(name);
    printEscapedString(os, testName);
    return emitError("undefined test " + name);
  }
  EvidenceRecord &record = module.addEvidence(test);
  auto readFrame =
      [&](const Value &v,
          llvm::SmallVectorImpl<FrameId> &frames) -> LogicalResult {
    const Object *frame;
    if (failed(getObject(v, frame)) ||
        failed(checkKeys(*frame, {"entity", "leaf"})))
      return failure();
    if (frame->size() != 1)
      return emitError("expected one of 'entity' or 'leaf'");
    if (frame->get("leaf"))
      return member(*frame, "leaf", true, [&](const Value &n) {
        StringRef leaf;
        if (failed(getString(n, leaf)))
          return failure();
        frames.push_back(module.getLeafFrame(leaf));
        return success();
      });
    return member(*frame, "entity", true, [&](const Value &n) {
      EntityId entity;
      if (failed(getEntityRef(n, entity)))
        return failure();
      frames.push_back(module.getEntityFrame(entity));
      return success();
    });
  };
  auto readSample = [&](const Value &v) -> LogicalResult {
    const Object *sample;
    int64_t count = 0;
    llvm::SmallVector<FrameId, 32> frames;
    if (failed(getObject(v, sample)) ||
        failed(checkKeys(*sample, {"count", "stack"})) ||
        failed(member(*sample, "count", true,
                      [&](const Value &n) { return getInt(n, count); })) ||
        failed(member(*sample, "stack", true, [&](const Value &n) {
          return elements(n,
                          [&](const Value &f) { return readFrame(f, frames); });
        })))
      return failure();
    if (count < 0)
      return member(*sample, "count", true,
                    [&](const Value &) { return emitError("negative count"); });
    if (frames.empty())
      return member(*sample, "stack", true,
                    [&](const Value &) { return emitError("empty stack"); });
    record.samples.push_back(
        {module.getStack(frames), static_cast<uint64_t>(count)});
    return success();
  };
  return failure(
      failed(member(*object, "pid", true,
                    [&](const Value &v) { return getInt(v, record.pid); })) ||
      failed(member(*object, "rank", true,
                    [&](const Value &v) { return getInt(v, record.rank); })) ||
      failed(member(*object, "revision", false,
                    [&](const Value &v) {
                      if (failed(getString(v, revision)))
                        return failure();
                      record.revision = module.intern(revision);
                      return success();
                    })) ||
      failed(
          member(*object, "rate", true,
                 [&](const Value &v) { return getDouble(v, record.rate); })) ||
      failed(member(
          *object, "attributes", false,
          [&](const Value &v) { return readAttrDict(v, record.attrs); })) ||
      failed(member(*object, "samples", true,
                    [&](const Value &v) { return elements(v, readSample); })));
}

LogicalResult JSONReader::readChange(const Value &value) {
  const Object *object;
  StringRef kindName, symbol, file;
  EntityId entity = kNoEntity;
  if (failed(getObject(value, object)) ||
      failed(checkKeys(*object, {"kind", "entity", "symbol", "file", "lines",
                                 "attributes"})) ||
      failed(member(*object, "kind", true,
                    [&](const Value &v) { return getString(v, kindName); })))
    return failure();
  std::optional<ChangeKind> kind =
      llvm::StringSwitch<std::optional<ChangeKind>>(kindName)
          .Case("added", ChangeKind::Added)
          .Case("modified", ChangeKind::Modified)
          .Case("deleted", ChangeKind::Deleted)
          .Case("moved", ChangeKind::Moved)
          .Case("renamed", ChangeKind::Renamed)
          .Case("cosmetic", ChangeKind::Cosmetic)
          .Default(std::nullopt);
  if (!kind) {
    Scope scope(*this, std::string("kind"));
    return emitError("unknown change kind '" + kindName + "'");
  }
  if (object->get("entity")
          ? failed(
                member(*object, "entity", true,
                       [&](const Value &v) { return getEntityRef(v, entity); }))
          : failed(member(*object, "symbol", true, [&](const Value &v) {
              return getString(v, symbol);
            })))
    return failure();
  if (failed(member(*object, "file", false,
                    [&](const Value &v) { return getString(v, file); })))
    return failure();
  if (entity != kNoEntity) {
    symbol = module.getEntity(entity).symbol;
    if (file.empty())
      file = module.getFilePath(entity);
  }
  Change &change = module.addChange(*kind, symbol, file);
  change.entity = entity;
  return failure(
      failed(member(*object, "lines", false,
                    [&](const Value &v) {
                      return elements(v, [&](const Value &r) -> LogicalResult {
                        const Array *pair;
                        if (failed(getArray(r, pair)))
                          return failure();
                        if (pair->size() != 2)
                          return emitError("expected 2 integers");
                        LineRange &range = change.lines.emplace_back();
                        Scope first(*this, size_t(0));
                        if (failed(getUInt32((*pair)[0], range.first)))
                          return failure();
                        path.back() = size_t(1);
                        return getUInt32((*pair)[1], range.last);
                      });
                    })) ||
      failed(member(*object, "attributes", false, [&](const Value &v) {
        return readAttrDict(v, change.attrs);
      })));
}

LogicalResult JSONReader::readChangedFile(const Value &value) {
  const Object *object;
  StringRef filePath, status;
  if (failed(getObject(value, object)) ||
      failed(checkKeys(*object, {"path", "status", "attributes"})) ||
      failed(member(*object, "path", true,
                    [&](const Value &v) { return getString(v, filePath); })) ||
      failed(member(*object, "status", true,
                    [&](const Value &v) { return getString(v, status); })))
    return failure();
  ChangedFile &file = module.addChangedFile(filePath, status);
  return member(*object, "attributes", false,
                [&](const Value &v) { return readAttrDict(v, file.attrs); });
}

/// Finds the first point where brackets nest deeper than llvm::json and our
/// recursive walks should go; returns its offset or npos.
static size_t findExcessiveNesting(StringRef text, size_t limit) {
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit)
        return i;
    } else if ((c == '}' || c == ']') && depth) {
      --depth;
    }
  }
  return StringRef::npos;
}

LogicalResult JSONReader::read() {
  // Module structure adds a few levels above the deepest attribute.
  size_t deep = findExcessiveNesting(text, kMaxAttrNesting + 8);
  if (deep != StringRef::npos) {
    diag.error(llvm::SMLoc::getFromPointer(text.data() + deep),
               "nesting too deep");
    return failure();
  }
  llvm::Expected<Value> root = llvm::json::parse(text);
  if (!root) {
    std::string message = llvm::toString(root.takeError());
    // llvm::json reports "[line:col, byte=N]: message".
    size_t offset = 0;
    StringRef rest = StringRef(message).split("byte=").second;
    StringRef digits = rest.take_while(llvm::isDigit);
    digits.getAsInteger(10, offset);
    StringRef what = rest.split("]: ").second;
    diag.error(llvm::SMLoc::getFromPointer(text.data() +
                                           std::min(offset, text.size())),
               "invalid JSON: " + what);
    return failure();
  }
  if (std::optional<DuplicateJSONKey> dup = findDuplicateJSONKey(text)) {
    diag.error(llvm::SMLoc::getFromPointer(text.data() + dup->offset),
               "duplicate key '" + dup->key + "'");
    return failure();
  }
  const Object *object;
  if (failed(getObject(*root, object)) ||
      failed(checkKeys(*object, {"attributes", "entities", "edges", "tests",
                                 "evidence", "changes", "changed_files"})) ||
      failed(member(*object, "attributes", false,
                    [&](const Value &v) {
                      return readAttrDict(v, module.getAttrs());
                    })) ||
      failed(member(*object, "entities", false, [&](const Value &v) {
        return elements(v, [&](const Value &e) { return readEntity(e); });
      })))
    return failure();
  for (const ParentRef &ref : parentRefs) {
    EntityId parent = module.lookupEntity(ref.symbol);
    if (parent == kNoEntity) {
      path = {std::string("entities"), ref.index, std::string("parent")};
      return emitError("undefined symbol " + formatSymbol(ref.symbol));
    }
    module.getEntity(ref.entity).parent = parent;
  }
  return failure(
      failed(member(*object, "edges", false,
                    [&](const Value &v) {
                      return elements(
                          v, [&](const Value &e) { return readEdge(e); });
                    })) ||
      failed(member(*object, "tests", false,
                    [&](const Value &v) {
                      return elements(
                          v, [&](const Value &e) { return readTest(e); });
                    })) ||
      failed(member(*object, "evidence", false,
                    [&](const Value &v) {
                      return elements(
                          v, [&](const Value &e) { return readEvidence(e); });
                    })) ||
      failed(member(*object, "changes", false,
                    [&](const Value &v) {
                      return elements(
                          v, [&](const Value &e) { return readChange(e); });
                    })) ||
      failed(member(*object, "changed_files", false, [&](const Value &v) {
        return elements(v, [&](const Value &e) { return readChangedFile(e); });
      })));
}

std::unique_ptr<Module> fastci::parseModuleJSON(unsigned bufferId,
                                                DiagnosticEngine &diag) {
  auto module = std::make_unique<Module>();
  JSONReader reader(diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer(),
                    diag, *module);
  if (failed(reader.read()))
    return nullptr;
  return module;
}
