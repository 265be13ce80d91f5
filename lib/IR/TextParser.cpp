//===- TextParser.cpp - Reading the textual IR ----------------------------===//
//
// A recursive-descent parser for .fir text (grammar in docs/IR.md). It builds
// the Module directly while parsing; symbol references that point forward
// (an edge or a test naming an entity defined further down) are recorded as
// fixups and resolved once the whole text has been read. The parser stops at
// the first error, and attribute nesting is bounded so that adversarial input
// cannot exhaust the stack.
//
//===----------------------------------------------------------------------===//
#include "Lexer.h"
#include "fastci/IR/Parser.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

using namespace fastci;
using namespace fastci::detail;
using llvm::SMLoc;
using llvm::StringRef;

/// `@"name"`, escaped as the printer would write it, for messages.
static std::string formatSymbol(StringRef name) {
  std::string result;
  llvm::raw_string_ostream os(result);
  printSymbolRef(os, name);
  return result;
}

/// `"name"`, escaped, for messages.
static std::string formatString(StringRef name) {
  std::string result;
  llvm::raw_string_ostream os(result);
  printEscapedString(os, name);
  return result;
}

namespace {
/// A reference to an entity that was not defined yet where it was used.
struct EntityFixup {
  enum Kind { EntityParent, EdgeFrom, EdgeTo, TestEntry, ChangeEntity };
  Kind kind;
  /// The index of the referring node in its vector.
  uint32_t index;
  std::string symbol;
  SMLoc loc;
};

/// An evidence record naming a test that was not defined yet.
struct TestFixup {
  uint32_t record;
  std::string name;
  SMLoc loc;
};

/// An outcome of a test that was not defined yet; appended at the end.
struct PendingOutcome {
  Outcome outcome;
  std::string test;
  SMLoc loc;
};

/// A sample whose stack names an entity that was not defined yet. The frame
/// tokens point into the source buffer, which outlives the parser.
struct PendingStack {
  uint32_t record, sample;
  llvm::SmallVector<Token, 8> frames;
};

class Parser {
public:
  Parser(StringRef text, DiagnosticEngine &diag, Module &module)
      : lexer(text, diag), diag(diag), module(module) {
    consume();
  }

  LogicalResult parseModule();

private:
  //===--------------------------------------------------------------------===//
  // Tokens

  void consume() { tok = lexer.lex(); }

  /// Reports \p message at \p loc, unless the lexer already reported the
  /// malformed token the parser is looking at.
  LogicalResult emitError(SMLoc loc, const llvm::Twine &message) {
    if (!tok.is(Token::Error))
      diag.error(loc, message);
    return failure();
  }
  LogicalResult emitError(const llvm::Twine &message) {
    return emitError(tok.getLoc(), message);
  }

  bool consumeIf(Token::Kind kind) {
    if (!tok.is(kind))
      return false;
    consume();
    return true;
  }
  bool consumeIfKeyword(StringRef keyword) {
    if (!tok.isKeyword(keyword))
      return false;
    consume();
    return true;
  }
  /// Consumes a \p kind token or reports `expected <what>`.
  LogicalResult parseToken(Token::Kind kind, StringRef what) {
    if (consumeIf(kind))
      return success();
    return emitError("expected " + what);
  }
  LogicalResult parseKeyword(StringRef keyword) {
    if (consumeIfKeyword(keyword))
      return success();
    return emitError("expected '" + keyword + "'");
  }

  //===--------------------------------------------------------------------===//
  // Literals

  /// Parses a string literal; the value lives in \p storage or the buffer.
  LogicalResult parseString(StringRef &value, std::string &storage);
  /// Parses a string literal and interns it in the module.
  LogicalResult parseInternedString(StringRef &value);
  /// Parses a string literal into a std::string.
  LogicalResult parseString(std::string &value);
  /// Parses `@"..."`; the value lives in \p storage or the buffer.
  LogicalResult parseSymbolRef(StringRef &value, std::string &storage);
  /// Parses an unsigned integer no larger than \p max.
  LogicalResult parseUnsigned(uint64_t &value, uint64_t max);
  LogicalResult parseUInt32(uint32_t &value);
  /// Parses a possibly negative 64-bit integer.
  LogicalResult parseInt64(int64_t &value);
  /// Parses a number (integer, float, `inf`, `nan`, optionally negated).
  LogicalResult parseDouble(double &value);
  /// Parses `"` 16 hex digits `"`.
  LogicalResult parseHash(uint64_t &value);
  /// Parses `[` string (`,` string)* `]`.
  LogicalResult parseStringList(std::vector<std::string> &values);

  //===--------------------------------------------------------------------===//
  // Attributes

  LogicalResult parseAttribute(Attribute &value, unsigned depth);
  LogicalResult parseAttrDict(AttrDict &dict, unsigned depth = 0);
  /// Parses the `key = value, ... }` that follows a dictionary's `{`.
  LogicalResult parseAttrDictBody(AttrDict &dict, unsigned depth);
  /// Parses an attribute dictionary if one starts here.
  LogicalResult parseOptionalAttrDict(AttrDict &dict) {
    return tok.is(Token::LBrace) ? parseAttrDict(dict) : success();
  }
  /// Parses a number attribute after an optional `-`.
  LogicalResult parseNumberAttr(Attribute &value, bool negate);

  //===--------------------------------------------------------------------===//
  // Constructs

  LogicalResult parseModuleAttributes(SMLoc loc);
  LogicalResult parseEntity(EntityKind kind, SMLoc loc);
  LogicalResult parseSourceRange(SourceRange &range);
  LogicalResult parseEdge(EdgeKind kind, SMLoc loc);
  LogicalResult parseTest(SMLoc loc);
  LogicalResult parseCost(Cost &cost);
  LogicalResult parseOutcome(SMLoc loc);
  LogicalResult parseEvidence(SMLoc loc);
  LogicalResult parseSample(uint32_t record);
  LogicalResult parseChange(SMLoc loc);
  LogicalResult parseLineRanges(std::vector<LineRange> &lines);
  LogicalResult parseChangedFile(SMLoc loc);

  /// The entity named \p symbol, or kNoEntity after recording a fixup that
  /// will set it once the whole text is read.
  EntityId resolveEntity(StringRef symbol, SMLoc loc, EntityFixup::Kind kind,
                         uint32_t index);
  /// Resolves every forward reference; reports the first that stays
  /// undefined.
  LogicalResult resolveFixups();
  /// The stack of \p frames, or nullopt if one names an unknown entity.
  std::optional<StackId> buildStack(llvm::ArrayRef<Token> frames,
                                    const Token **unresolved);

  Lexer lexer;
  Token tok;
  DiagnosticEngine &diag;
  Module &module;
  bool sawModuleAttributes = false;

  std::vector<EntityFixup> entityFixups;
  std::vector<TestFixup> testFixups;
  std::vector<PendingOutcome> pendingOutcomes;
  std::vector<PendingStack> pendingStacks;
};
} // namespace

//===----------------------------------------------------------------------===//
// Literals
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseString(StringRef &value, std::string &storage) {
  if (!tok.is(Token::String))
    return emitError("expected string");
  value = Lexer::getStringValue(tok, storage);
  consume();
  return success();
}

LogicalResult Parser::parseInternedString(StringRef &value) {
  std::string storage;
  if (failed(parseString(value, storage)))
    return failure();
  value = module.intern(value);
  return success();
}

LogicalResult Parser::parseString(std::string &value) {
  StringRef ref;
  std::string storage;
  if (failed(parseString(ref, storage)))
    return failure();
  value = ref.str();
  return success();
}

LogicalResult Parser::parseSymbolRef(StringRef &value, std::string &storage) {
  if (!tok.is(Token::SymbolRef))
    return emitError("expected symbol reference");
  value = Lexer::getStringValue(tok, storage);
  consume();
  return success();
}

LogicalResult Parser::parseUnsigned(uint64_t &value, uint64_t max) {
  if (!tok.is(Token::Integer))
    return emitError("expected integer");
  if (tok.spelling.getAsInteger(10, value) || value > max)
    return emitError("integer out of range");
  consume();
  return success();
}

LogicalResult Parser::parseUInt32(uint32_t &value) {
  uint64_t wide;
  if (failed(parseUnsigned(wide, UINT32_MAX)))
    return failure();
  value = static_cast<uint32_t>(wide);
  return success();
}

LogicalResult Parser::parseInt64(int64_t &value) {
  bool negate = consumeIf(Token::Minus);
  uint64_t magnitude;
  if (failed(parseUnsigned(magnitude, uint64_t(INT64_MAX) + negate)))
    return failure();
  value = negate ? static_cast<int64_t>(0 - magnitude)
                 : static_cast<int64_t>(magnitude);
  return success();
}

LogicalResult Parser::parseDouble(double &value) {
  bool negate = consumeIf(Token::Minus);
  Attribute attr;
  if (failed(parseNumberAttr(attr, negate)))
    return failure();
  value = attr.getNumber();
  return success();
}

LogicalResult Parser::parseHash(uint64_t &value) {
  SMLoc loc = tok.getLoc();
  StringRef text;
  std::string storage;
  if (failed(parseString(text, storage)))
    return failure();
  if (text.size() != 16 || !llvm::all_of(text, llvm::isHexDigit) ||
      text.getAsInteger(16, value))
    return emitError(loc, "expected 16 hex digits");
  return success();
}

LogicalResult Parser::parseStringList(std::vector<std::string> &values) {
  if (failed(parseToken(Token::LSquare, "'['")))
    return failure();
  if (consumeIf(Token::RSquare))
    return success();
  do {
    if (failed(parseString(values.emplace_back())))
      return failure();
  } while (consumeIf(Token::Comma));
  return parseToken(Token::RSquare, "']'");
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseNumberAttr(Attribute &value, bool negate) {
  if (tok.is(Token::Integer)) {
    uint64_t magnitude;
    if (tok.spelling.getAsInteger(10, magnitude) ||
        magnitude > uint64_t(INT64_MAX) + negate)
      return emitError("integer out of range");
    value = Attribute::getInt(negate ? static_cast<int64_t>(0 - magnitude)
                                     : static_cast<int64_t>(magnitude));
    consume();
    return success();
  }
  if (tok.is(Token::Float)) {
    // strtod needs a terminator; tokens are short, so copy.
    llvm::SmallString<32> text(tok.spelling);
    errno = 0;
    double number = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(number))
      return emitError("float out of range");
    value = Attribute::getFloat(negate ? -number : number);
    consume();
    return success();
  }
  if (tok.isKeyword("inf") || tok.isKeyword("nan")) {
    double number = tok.isKeyword("inf") ? INFINITY : NAN;
    value = Attribute::getFloat(negate ? -number : number);
    consume();
    return success();
  }
  return emitError("expected number");
}

LogicalResult Parser::parseAttribute(Attribute &value, unsigned depth) {
  if (depth >= kMaxAttrNesting)
    return emitError("nesting too deep");
  switch (tok.kind) {
  case Token::Integer:
  case Token::Float:
    return parseNumberAttr(value, /*negate=*/false);
  case Token::Minus:
    consume();
    return parseNumberAttr(value, /*negate=*/true);
  case Token::String: {
    StringRef text;
    std::string storage;
    if (failed(parseString(text, storage)))
      return failure();
    value = Attribute::getString(text);
    return success();
  }
  case Token::SymbolRef: {
    StringRef text;
    std::string storage;
    if (failed(parseSymbolRef(text, storage)))
      return failure();
    value = Attribute::getSymbol(text);
    return success();
  }
  case Token::LSquare: {
    consume();
    std::vector<Attribute> elements;
    if (!consumeIf(Token::RSquare)) {
      do {
        if (failed(parseAttribute(elements.emplace_back(), depth + 1)))
          return failure();
      } while (consumeIf(Token::Comma));
      if (failed(parseToken(Token::RSquare, "']'")))
        return failure();
    }
    value = Attribute::getList(std::move(elements));
    return success();
  }
  case Token::LBrace: {
    AttrDict dict;
    if (failed(parseAttrDict(dict, depth + 1)))
      return failure();
    value = Attribute::getDict(std::move(dict));
    return success();
  }
  case Token::Identifier:
    if (tok.isKeyword("true") || tok.isKeyword("false")) {
      value = Attribute::getBool(tok.isKeyword("true"));
      consume();
      return success();
    }
    if (tok.isKeyword("unit")) {
      value = Attribute();
      consume();
      return success();
    }
    if (tok.isKeyword("inf") || tok.isKeyword("nan"))
      return parseNumberAttr(value, /*negate=*/false);
    [[fallthrough]];
  default:
    return emitError("expected attribute value");
  }
}

LogicalResult Parser::parseAttrDict(AttrDict &dict, unsigned depth) {
  if (depth >= kMaxAttrNesting)
    return emitError("nesting too deep");
  if (failed(parseToken(Token::LBrace, "'{'")))
    return failure();
  if (consumeIf(Token::RBrace))
    return success();
  return parseAttrDictBody(dict, depth);
}

LogicalResult Parser::parseAttrDictBody(AttrDict &dict, unsigned depth) {
  do {
    SMLoc keyLoc = tok.getLoc();
    StringRef key;
    std::string storage;
    if (tok.is(Token::Identifier)) {
      key = tok.spelling;
      consume();
    } else if (tok.is(Token::String)) {
      if (failed(parseString(key, storage)))
        return failure();
    } else {
      return emitError("expected attribute name");
    }
    if (dict.contains(key))
      return emitError(keyLoc, "duplicate attribute '" + key + "'");
    std::string keyCopy = key.str();
    Attribute value;
    if (failed(parseToken(Token::Equal, "'='")) ||
        failed(parseAttribute(value, depth)))
      return failure();
    dict.set(keyCopy, std::move(value));
  } while (consumeIf(Token::Comma));
  return parseToken(Token::RBrace, "'}'");
}

//===----------------------------------------------------------------------===//
// Constructs
//===----------------------------------------------------------------------===//

EntityId Parser::resolveEntity(StringRef symbol, SMLoc loc,
                               EntityFixup::Kind kind, uint32_t index) {
  EntityId id = module.lookupEntity(symbol);
  if (id == kNoEntity)
    entityFixups.push_back({kind, index, symbol.str(), loc});
  return id;
}

LogicalResult Parser::parseModuleAttributes(SMLoc loc) {
  if (sawModuleAttributes)
    return emitError(loc, "duplicate module attributes");
  sawModuleAttributes = true;
  consume(); // 'attributes'
  return parseAttrDict(module.getAttrs());
}

LogicalResult Parser::parseSourceRange(SourceRange &range) {
  return failure(failed(parseUInt32(range.startLine)) ||
                 failed(parseToken(Token::Colon, "':'")) ||
                 failed(parseUInt32(range.startColumn)) ||
                 failed(parseToken(Token::Minus, "'-'")) ||
                 failed(parseUInt32(range.endLine)) ||
                 failed(parseToken(Token::Colon, "':'")) ||
                 failed(parseUInt32(range.endColumn)));
}

LogicalResult Parser::parseEntity(EntityKind kind, SMLoc loc) {
  StringRef symbol;
  std::string storage;
  if (failed(parseSymbolRef(symbol, storage)))
    return failure();
  EntityId id = module.addEntity(kind, symbol);
  module.getEntity(id).loc = loc;

  if (consumeIfKeyword("parent")) {
    SMLoc parentLoc = tok.getLoc();
    StringRef parent;
    if (failed(parseSymbolRef(parent, storage)))
      return failure();
    module.getEntity(id).parent =
        resolveEntity(parent, parentLoc, EntityFixup::EntityParent, id);
  }
  Entity &entity = module.getEntity(id);
  if (consumeIfKeyword("at") && failed(parseSourceRange(entity.range)))
    return failure();
  if (consumeIfKeyword("hash") && failed(parseHash(entity.contentHash)))
    return failure();
  return parseOptionalAttrDict(entity.attrs);
}

LogicalResult Parser::parseEdge(EdgeKind kind, SMLoc loc) {
  uint32_t index = module.getEdges().size();
  StaticEdge edge;
  edge.kind = kind;
  edge.loc = loc;

  SMLoc fromLoc = tok.getLoc();
  StringRef from;
  std::string storage;
  if (failed(parseSymbolRef(from, storage)))
    return failure();
  edge.from = resolveEntity(from, fromLoc, EntityFixup::EdgeFrom, index);

  if (failed(parseToken(Token::Arrow, "'->'")))
    return failure();
  SMLoc toLoc = tok.getLoc();
  if (tok.is(Token::SymbolRef)) {
    if (failed(parseSymbolRef(edge.name, storage)))
      return failure();
    edge.to = resolveEntity(edge.name, toLoc, EntityFixup::EdgeTo, index);
  } else if (tok.is(Token::String)) {
    if (failed(parseString(edge.name, storage)))
      return failure();
  } else {
    return emitError("expected symbol reference or string");
  }
  if (consumeIfKeyword("at") && failed(parseUInt32(edge.line)))
    return failure();
  module.addEdge(edge);
  return success();
}

LogicalResult Parser::parseCost(Cost &cost) {
  if (failed(parseToken(Token::LBrace, "'{'")))
    return failure();
  if (consumeIf(Token::RBrace))
    return success();
  llvm::SmallVector<StringRef, 3> seen;
  do {
    SMLoc keyLoc = tok.getLoc();
    if (!tok.is(Token::Identifier))
      return emitError("expected cost field");
    StringRef key = tok.spelling;
    if (key != "gpus" && key != "seconds" && key != "gpu_seconds")
      return emitError("unknown cost field '" + key + "'");
    if (llvm::is_contained(seen, key))
      return emitError(keyLoc, "duplicate cost field '" + key + "'");
    seen.push_back(key);
    consume();
    if (failed(parseToken(Token::Equal, "'='")))
      return failure();
    if (key == "gpus") {
      if (failed(parseInt64(cost.gpus)))
        return failure();
    } else if (failed(parseDouble(key == "seconds" ? cost.seconds
                                                   : cost.gpuSeconds))) {
      return failure();
    }
  } while (consumeIf(Token::Comma));
  return parseToken(Token::RBrace, "'}'");
}

LogicalResult Parser::parseTest(SMLoc loc) {
  StringRef name;
  std::string storage;
  if (failed(parseString(name, storage)))
    return failure();
  TestId id = module.addTest(name);
  module.getTest(id).loc = loc;

  if (consumeIfKeyword("entry")) {
    SMLoc entryLoc = tok.getLoc();
    StringRef entry;
    if (failed(parseSymbolRef(entry, storage)))
      return failure();
    module.getTest(id).entry =
        resolveEntity(entry, entryLoc, EntityFixup::TestEntry, id);
  }
  Test &test = module.getTest(id);
  if (consumeIfKeyword("cost") && failed(parseCost(test.cost)))
    return failure();
  if (consumeIfKeyword("workload") && failed(parseAttrDict(test.workload)))
    return failure();
  if (consumeIfKeyword("scope") && failed(parseStringList(test.scope)))
    return failure();
  if (consumeIfKeyword("tags") && failed(parseStringList(test.tags)))
    return failure();
  return parseOptionalAttrDict(test.attrs);
}

LogicalResult Parser::parseOutcome(SMLoc loc) {
  SMLoc nameLoc = tok.getLoc();
  StringRef name;
  std::string storage;
  Outcome outcome;
  if (failed(parseString(name, storage)) || failed(parseKeyword("rev")) ||
      failed(parseInternedString(outcome.revision)) ||
      failed(parseKeyword("time")) || failed(parseInt64(outcome.time)))
    return failure();

  std::optional<OutcomeKind> kind;
  if (tok.is(Token::Identifier))
    kind = llvm::StringSwitch<std::optional<OutcomeKind>>(tok.spelling)
               .Case("pass", OutcomeKind::Pass)
               .Case("fail", OutcomeKind::Fail)
               .Case("error", OutcomeKind::Error)
               .Case("skip", OutcomeKind::Skip)
               .Default(std::nullopt);
  if (!kind)
    return emitError("expected outcome kind (pass, fail, error or skip)");
  outcome.kind = *kind;
  consume();
  if (failed(parseDouble(outcome.duration)))
    return failure();

  TestId test = module.lookupTest(name);
  if (test == kNoTest)
    pendingOutcomes.push_back({outcome, name.str(), nameLoc});
  else
    module.getTest(test).history.push_back(outcome);
  return success();
}

std::optional<StackId> Parser::buildStack(llvm::ArrayRef<Token> frames,
                                          const Token **unresolved) {
  // Resolve every entity before creating anything, so that a stack that
  // must wait for a later definition leaves no partial trie behind.
  llvm::SmallVector<EntityId, 16> entities;
  std::string storage;
  for (const Token &frame : frames) {
    if (frame.is(Token::String)) {
      entities.push_back(kNoEntity);
      continue;
    }
    EntityId id = module.lookupEntity(Lexer::getStringValue(frame, storage));
    if (id == kNoEntity) {
      *unresolved = &frame;
      return std::nullopt;
    }
    entities.push_back(id);
  }
  StackId stack = kEmptyStack;
  for (auto [frame, entity] : llvm::zip_equal(frames, entities)) {
    FrameId id =
        entity == kNoEntity
            ? module.getLeafFrame(Lexer::getStringValue(frame, storage))
            : module.getEntityFrame(entity);
    stack = module.getStack(stack, id);
  }
  return stack;
}

LogicalResult Parser::parseSample(uint32_t record) {
  uint64_t count;
  if (failed(parseUnsigned(count, UINT64_MAX)) ||
      failed(parseToken(Token::Colon, "':'")))
    return failure();
  llvm::SmallVector<Token, 16> frames;
  while (tok.is(Token::SymbolRef) || tok.is(Token::String)) {
    frames.push_back(tok);
    consume();
  }
  if (frames.empty())
    return emitError("expected stack frame");

  EvidenceRecord &evidence = module.getEvidence()[record];
  const Token *unresolved = nullptr;
  std::optional<StackId> stack = buildStack(frames, &unresolved);
  if (!stack)
    pendingStacks.push_back(
        {record, static_cast<uint32_t>(evidence.samples.size()),
         llvm::SmallVector<Token, 8>(frames.begin(), frames.end())});
  evidence.samples.push_back({stack.value_or(kEmptyStack), count});
  return success();
}

LogicalResult Parser::parseEvidence(SMLoc loc) {
  SMLoc nameLoc = tok.getLoc();
  StringRef name;
  std::string storage;
  if (failed(parseString(name, storage)))
    return failure();
  TestId test = module.lookupTest(name);
  uint32_t index = module.getEvidence().size();
  if (test == kNoTest)
    testFixups.push_back({index, name.str(), nameLoc});
  EvidenceRecord &record = module.addEvidence(test);
  record.loc = loc;
  if (failed(parseKeyword("pid")) || failed(parseInt64(record.pid)) ||
      failed(parseKeyword("rank")) || failed(parseInt64(record.rank)))
    return failure();
  if (consumeIfKeyword("rev") && failed(parseInternedString(record.revision)))
    return failure();
  if (failed(parseKeyword("rate")) || failed(parseDouble(record.rate)))
    return failure();

  // The attribute dictionary and the body both open with `{`; a body holds
  // `count:` lines, a dictionary `key =` pairs.
  if (failed(parseToken(Token::LBrace, "'{'")))
    return failure();
  if (tok.is(Token::Identifier) || tok.is(Token::String)) {
    if (failed(parseAttrDictBody(record.attrs, /*depth=*/0)) ||
        failed(parseToken(Token::LBrace, "'{'")))
      return failure();
  }
  while (!consumeIf(Token::RBrace)) {
    if (!tok.is(Token::Integer))
      return emitError("expected sample count or '}'");
    if (failed(parseSample(index)))
      return failure();
  }
  return success();
}

LogicalResult Parser::parseLineRanges(std::vector<LineRange> &lines) {
  if (failed(parseToken(Token::LSquare, "'['")))
    return failure();
  if (consumeIf(Token::RSquare))
    return success();
  do {
    LineRange &range = lines.emplace_back();
    if (failed(parseUInt32(range.first)) ||
        failed(parseToken(Token::Colon, "':'")) ||
        failed(parseUInt32(range.last)))
      return failure();
  } while (consumeIf(Token::Comma));
  return parseToken(Token::RSquare, "']'");
}

LogicalResult Parser::parseChange(SMLoc loc) {
  std::optional<ChangeKind> kind;
  if (tok.is(Token::Identifier))
    kind = llvm::StringSwitch<std::optional<ChangeKind>>(tok.spelling)
               .Case("added", ChangeKind::Added)
               .Case("modified", ChangeKind::Modified)
               .Case("deleted", ChangeKind::Deleted)
               .Case("moved", ChangeKind::Moved)
               .Case("renamed", ChangeKind::Renamed)
               .Case("cosmetic", ChangeKind::Cosmetic)
               .Default(std::nullopt);
  if (!kind)
    return emitError("expected change kind (added, modified, deleted, moved, "
                     "renamed or cosmetic)");
  consume();

  uint32_t index = module.getChanges().size();
  SMLoc symbolLoc = tok.getLoc();
  StringRef symbol;
  std::string storage;
  bool isEntity = tok.is(Token::SymbolRef);
  if (isEntity ? failed(parseSymbolRef(symbol, storage))
               : failed(parseString(symbol, storage)))
    return failure();
  Change &change = module.addChange(*kind, symbol, /*file=*/"");
  change.loc = loc;
  if (isEntity)
    change.entity =
        resolveEntity(symbol, symbolLoc, EntityFixup::ChangeEntity, index);
  if (consumeIfKeyword("in") && failed(parseInternedString(change.file)))
    return failure();
  if (consumeIfKeyword("lines") && failed(parseLineRanges(change.lines)))
    return failure();
  return parseOptionalAttrDict(change.attrs);
}

LogicalResult Parser::parseChangedFile(SMLoc loc) {
  StringRef path;
  std::string storage;
  if (failed(parseString(path, storage)))
    return failure();
  StringRef status;
  std::string statusStorage;
  if (tok.is(Token::Identifier)) {
    status = tok.spelling;
    consume();
  } else if (tok.is(Token::String)) {
    if (failed(parseString(status, statusStorage)))
      return failure();
  } else {
    return emitError("expected file status");
  }
  ChangedFile &file = module.addChangedFile(path, status);
  file.loc = loc;
  return parseOptionalAttrDict(file.attrs);
}

LogicalResult Parser::resolveFixups() {
  for (const EntityFixup &fixup : entityFixups) {
    EntityId id = module.lookupEntity(fixup.symbol);
    if (id == kNoEntity)
      return emitError(fixup.loc,
                       "undefined symbol " + formatSymbol(fixup.symbol));
    switch (fixup.kind) {
    case EntityFixup::EntityParent:
      module.getEntity(fixup.index).parent = id;
      break;
    case EntityFixup::EdgeFrom:
      module.getEdges()[fixup.index].from = id;
      break;
    case EntityFixup::EdgeTo:
      module.getEdges()[fixup.index].to = id;
      break;
    case EntityFixup::TestEntry:
      module.getTest(fixup.index).entry = id;
      break;
    case EntityFixup::ChangeEntity:
      module.getChanges()[fixup.index].entity = id;
      break;
    }
  }
  for (const TestFixup &fixup : testFixups) {
    TestId id = module.lookupTest(fixup.name);
    if (id == kNoTest)
      return emitError(fixup.loc, "undefined test " + formatString(fixup.name));
    module.getEvidence()[fixup.record].test = id;
  }
  for (const PendingOutcome &pending : pendingOutcomes) {
    TestId id = module.lookupTest(pending.test);
    if (id == kNoTest)
      return emitError(pending.loc,
                       "undefined test " + formatString(pending.test));
    module.getTest(id).history.push_back(pending.outcome);
  }
  for (const PendingStack &pending : pendingStacks) {
    const Token *unresolved = nullptr;
    std::optional<StackId> stack = buildStack(pending.frames, &unresolved);
    if (!stack) {
      std::string storage;
      return emitError(unresolved->getLoc(),
                       "undefined symbol " + formatSymbol(Lexer::getStringValue(
                                                 *unresolved, storage)));
    }
    module.getEvidence()[pending.record].samples[pending.sample].stack = *stack;
  }
  // An entity change without `in` names its entity's file.
  for (Change &change : module.getChanges())
    if (change.entity != kNoEntity && change.file.empty())
      change.file = module.getFilePath(change.entity);
  return success();
}

LogicalResult Parser::parseModule() {
  while (!tok.is(Token::Eof)) {
    if (tok.is(Token::Error))
      return failure();
    if (!tok.startsLine)
      return emitError("expected end of line");
    if (!tok.is(Token::Identifier))
      return emitError("expected keyword");
    StringRef keyword = tok.spelling;
    SMLoc loc = tok.getLoc();
    consume();
    LogicalResult result = success();
    if (keyword == "module" && tok.isKeyword("attributes"))
      result = parseModuleAttributes(loc);
    else if (keyword == "file")
      result = parseEntity(EntityKind::File, loc);
    else if (keyword == "module")
      result = parseEntity(EntityKind::Module, loc);
    else if (keyword == "class")
      result = parseEntity(EntityKind::Class, loc);
    else if (keyword == "function")
      result = parseEntity(EntityKind::Function, loc);
    else if (keyword == "import")
      result = parseEdge(EdgeKind::Import, loc);
    else if (keyword == "call")
      result = parseEdge(EdgeKind::Call, loc);
    else if (keyword == "test")
      result = parseTest(loc);
    else if (keyword == "outcome")
      result = parseOutcome(loc);
    else if (keyword == "evidence")
      result = parseEvidence(loc);
    else if (keyword == "change")
      result = parseChange(loc);
    else if (keyword == "changed_file")
      result = parseChangedFile(loc);
    else
      result = emitError(loc, "unknown keyword '" + keyword + "'");
    if (failed(result))
      return failure();
  }
  return resolveFixups();
}

std::unique_ptr<Module> fastci::parseModuleText(StringRef text,
                                                DiagnosticEngine &diag) {
  auto module = std::make_unique<Module>();
  Parser parser(text, diag, *module);
  if (failed(parser.parseModule()))
    return nullptr;
  return module;
}

std::unique_ptr<Module> fastci::parseModuleText(unsigned bufferId,
                                                DiagnosticEngine &diag) {
  return parseModuleText(
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer(), diag);
}
