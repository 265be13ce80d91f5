//===- Analyzer.cpp - Summarizing one Python file with tree-sitter --------===//
//
// One iterative walk of the syntax tree (deeply nested input cannot overflow
// the stack) with a stack of open scopes. Each scope accumulates the token
// stream of its own code — node kinds and leaf texts, never whitespace or
// comments — so every entity's hash covers exactly its own tokens, with a
// nested class or function replaced by a placeholder naming it.
//
// Ranges follow CPython's `ast`: a definition starts at `def`/`class`/`async`
// (not at its decorators) and ends at the end of its last statement, which
// is the last token of the node that is not a comment (a trailing `;`
// counts)
// (tree-sitter keeps trailing comments inside a block, `ast` does not).
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/Analyzer.h"
#include "fastci/Python/ParserArena.h"
#include "fastci/Python/Pytest.h"
#include "fastci/Python/SourceEncoding.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Unicode.h"
#include "llvm/Support/xxhash.h"
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <tree_sitter/api.h>

extern "C" const TSLanguage *tree_sitter_python(void);

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;

namespace {
//===----------------------------------------------------------------------===//
// The grammar's symbols and fields, looked up once
//===----------------------------------------------------------------------===//

/// The node kinds the analyzer distinguishes.
enum class Kind : uint8_t {
  Other,
  Module,
  Comment,
  Error,
  FunctionDefinition,
  ClassDefinition,
  DecoratedDefinition,
  Decorator,
  Block,
  ExpressionStatement,
  Assignment,
  Lambda,
  Call,
  Attribute,
  Identifier,
  ImportStatement,
  ImportFromStatement,
  FutureImportStatement,
  DottedName,
  AliasedImport,
  RelativeImport,
  ImportPrefix,
  WildcardImport,
  GlobalStatement,
  String,
  StringContent,
  ConcatenatedString,
  Interpolation,
  Integer,
  Float,
  True,
  False,
  None,
  Tuple,
  List,
  Set,
  Dictionary,
  Pair,
  ParenthesizedExpression,
  KeywordArgument,
  UnaryOperator,
  ArgumentList,
  Async,
  Semicolon,
  // Name binding and scoping (the `names` attribute).
  AugmentedAssignment,
  ForStatement,
  ForInClause,
  NamedExpression,
  AsPattern,
  AsPatternTarget,
  ExceptClause,
  DeleteStatement,
  NonlocalStatement,
  DefaultParameter,
  TypedParameter,
  TypedDefaultParameter,
  ListSplatPattern,
  DictionarySplatPattern,
  ListSplat,
  PatternList,
  TuplePattern,
  ListPattern,
  ExpressionList,
  ListComprehension,
  SetComprehension,
  DictionaryComprehension,
  GeneratorExpression,
  KeywordPattern,
  Subscript,
  Parameters,
  LambdaParameters,
};

struct Grammar {
  const TSLanguage *language = tree_sitter_python();
  std::vector<Kind> kinds;
  TSFieldId name, body, definition, function, arguments, object, attribute,
      left, right, moduleName, alias, value, key, operatorField, argument,
      parameters;
  /// Kinds whose identifiers are never loads (their names are bound or
  /// declared elsewhere, or are import paths).
  bool isNameContext(Kind kind) const {
    switch (kind) {
    case Kind::GlobalStatement:
    case Kind::NonlocalStatement:
    case Kind::DottedName:
    case Kind::AliasedImport:
    case Kind::ImportPrefix:
    case Kind::RelativeImport:
    case Kind::ImportStatement:
    case Kind::ImportFromStatement:
    case Kind::FutureImportStatement:
    case Kind::KeywordPattern:
      return true;
    default:
      return false;
    }
  }

  Grammar() {
    static const std::pair<const char *, Kind> kNamed[] = {
        {"module", Kind::Module},
        {"comment", Kind::Comment},
        {"ERROR", Kind::Error},
        {"function_definition", Kind::FunctionDefinition},
        {"class_definition", Kind::ClassDefinition},
        {"decorated_definition", Kind::DecoratedDefinition},
        {"decorator", Kind::Decorator},
        {"block", Kind::Block},
        {"expression_statement", Kind::ExpressionStatement},
        {"assignment", Kind::Assignment},
        {"lambda", Kind::Lambda},
        {"call", Kind::Call},
        {"attribute", Kind::Attribute},
        {"identifier", Kind::Identifier},
        {"import_statement", Kind::ImportStatement},
        {"import_from_statement", Kind::ImportFromStatement},
        {"future_import_statement", Kind::FutureImportStatement},
        {"dotted_name", Kind::DottedName},
        {"aliased_import", Kind::AliasedImport},
        {"relative_import", Kind::RelativeImport},
        {"import_prefix", Kind::ImportPrefix},
        {"wildcard_import", Kind::WildcardImport},
        {"global_statement", Kind::GlobalStatement},
        {"string", Kind::String},
        {"string_content", Kind::StringContent},
        {"concatenated_string", Kind::ConcatenatedString},
        {"interpolation", Kind::Interpolation},
        {"integer", Kind::Integer},
        {"float", Kind::Float},
        {"true", Kind::True},
        {"false", Kind::False},
        {"none", Kind::None},
        {"tuple", Kind::Tuple},
        {"list", Kind::List},
        {"set", Kind::Set},
        {"dictionary", Kind::Dictionary},
        {"pair", Kind::Pair},
        {"parenthesized_expression", Kind::ParenthesizedExpression},
        {"keyword_argument", Kind::KeywordArgument},
        {"unary_operator", Kind::UnaryOperator},
        {"argument_list", Kind::ArgumentList},
        {"augmented_assignment", Kind::AugmentedAssignment},
        {"for_statement", Kind::ForStatement},
        {"for_in_clause", Kind::ForInClause},
        {"named_expression", Kind::NamedExpression},
        {"as_pattern", Kind::AsPattern},
        {"as_pattern_target", Kind::AsPatternTarget},
        {"except_clause", Kind::ExceptClause},
        {"delete_statement", Kind::DeleteStatement},
        {"nonlocal_statement", Kind::NonlocalStatement},
        {"default_parameter", Kind::DefaultParameter},
        {"typed_parameter", Kind::TypedParameter},
        {"typed_default_parameter", Kind::TypedDefaultParameter},
        {"list_splat_pattern", Kind::ListSplatPattern},
        {"dictionary_splat_pattern", Kind::DictionarySplatPattern},
        {"list_splat", Kind::ListSplat},
        {"pattern_list", Kind::PatternList},
        {"tuple_pattern", Kind::TuplePattern},
        {"list_pattern", Kind::ListPattern},
        {"expression_list", Kind::ExpressionList},
        {"list_comprehension", Kind::ListComprehension},
        {"set_comprehension", Kind::SetComprehension},
        {"dictionary_comprehension", Kind::DictionaryComprehension},
        {"generator_expression", Kind::GeneratorExpression},
        {"keyword_pattern", Kind::KeywordPattern},
        {"subscript", Kind::Subscript},
        {"parameters", Kind::Parameters},
        {"lambda_parameters", Kind::LambdaParameters},
    };
    uint32_t count = ts_language_symbol_count(language);
    kinds.assign(count, Kind::Other);
    for (uint32_t symbol = 0; symbol < count; ++symbol) {
      StringRef symbolName = ts_language_symbol_name(language, symbol);
      bool named =
          ts_language_symbol_type(language, symbol) == TSSymbolTypeRegular;
      if (!named) {
        if (symbolName == "async")
          kinds[symbol] = Kind::Async;
        else if (symbolName == ";")
          kinds[symbol] = Kind::Semicolon;
        continue;
      }
      for (const auto &[kindName, kind] : kNamed)
        if (symbolName == kindName)
          kinds[symbol] = kind;
    }
    auto field = [&](const char *fieldName) {
      return ts_language_field_id_for_name(language, fieldName,
                                           strlen(fieldName));
    };
    name = field("name");
    body = field("body");
    definition = field("definition");
    function = field("function");
    arguments = field("arguments");
    object = field("object");
    attribute = field("attribute");
    left = field("left");
    right = field("right");
    moduleName = field("module_name");
    alias = field("alias");
    value = field("value");
    key = field("key");
    operatorField = field("operator");
    argument = field("argument");
    parameters = field("parameters");
  }

  Kind kindOf(TSNode node) const {
    if (ts_node_is_null(node))
      return Kind::Other;
    TSSymbol symbol = ts_node_symbol(node);
    return symbol < kinds.size() ? kinds[symbol] : Kind::Other;
  }
};

const Grammar &getGrammar() {
  static const Grammar grammar;
  return grammar;
}

/// The per-file budget. Real source files stay far below both: the largest
/// of six LLM-training repositories is 0.9 MB and parses in 0.1 s. Beyond
/// them a file is data or an attack; it is reported and marked
/// `parse_error` (selection then runs whatever it touches).
constexpr size_t kMaxSourceBytes = 4u << 20;
constexpr uint64_t kParseTimeoutMicros = 2'000'000;

struct ParserDeleter {
  void operator()(TSParser *parser) const { ts_parser_delete(parser); }
};
using ParserPtr = std::unique_ptr<TSParser, ParserDeleter>;

/// A parser for one file: its memory lives in the file's ParserArenaScope,
/// so it cannot serve the next file (with the arena, creating one is cheap).
ParserPtr createParser() {
  ParserPtr parser(ts_parser_new());
  ts_parser_set_language(parser.get(), getGrammar().language);
  // Error recovery on adversarial input is the one place tree-sitter can
  // take unbounded time; give up (with a warning) rather than hang.
  ts_parser_set_timeout_micros(parser.get(), kParseTimeoutMicros);
  return parser;
}

/// Iterates the children of a node with a cursor (ts_node_child(i) is
/// linear in i, which would make wide nodes quadratic).
template <typename Fn> void forEachChild(TSNode node, Fn fn) {
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      fn(ts_tree_cursor_current_node(&cursor),
         ts_tree_cursor_current_field_id(&cursor));
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
}

/// The offset of the first byte that does not start a valid UTF-8 sequence,
/// as llvm::isLegalUTF8String finds it, or none. ASCII runs are skipped a
/// word at a time: checking byte by byte cost 2% of the whole pass.
std::optional<size_t> findInvalidUTF8(StringRef text) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const llvm::UTF8 *p = begin, *end = begin + text.size();
  while (p != end) {
    while (end - p >= 8) {
      uint64_t word;
      memcpy(&word, p, sizeof(word));
      if (word & 0x8080808080808080ULL)
        break;
      p += 8;
    }
    while (p != end && *p < 0x80)
      ++p;
    if (p == end)
      break;
    if (!llvm::isLegalUTF8Sequence(p, end))
      return static_cast<size_t>(p - begin);
    p += llvm::getNumBytesForUTF8(*p);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The file walk
//===----------------------------------------------------------------------===//

/// No entity (a failed lookup).
constexpr LocalId kNoLocal = -2;

/// What kind of Python scope an open frame is.
enum class ScopeKind { Module, Class, Function };

/// An open scope (the module, or an entity being walked).
struct Frame {
  ScopeKind scope;
  LocalId entity;
  /// Depth of the tree node that opened the frame.
  uint32_t depth;
  /// The docstring statement to leave out of the hash, if any.
  const void *docstring = nullptr;
  /// Names declared `global` in this scope (they reset `__qualname__`).
  llvm::StringSet<> globals{};
  /// The token stream being hashed.
  std::string tokens{};
  /// The name of the definition that opened the frame: its text stays out
  /// of the hash (the symbol carries it), so a renamed function or class
  /// keeps its hash and mark-changed pairs it with its old name.
  const void *nameNode = nullptr;
};

/// A Python scope as name resolution sees it: an entity's (module, class,
/// function, named lambda) or a comprehension's or unnamed lambda's, which
/// belong to the entity around them.
struct NameScope {
  ScopeKind kind;
  /// The enclosing scope (index into the scopes), -1 for the module.
  int parent;
  /// The entity whose `names` its loads feed.
  LocalId owner;
  /// Depth of the tree node that opened it.
  uint32_t depth;
  /// Names bound here by assignment, parameters, definitions, ...
  llvm::StringSet<> bound{};
  /// Names bound here by imports, to the dotted target.
  llvm::StringMap<std::string> imports{};
  /// `global` (true) and `nonlocal` (false) declarations.
  llvm::StringMap<bool> declared{};
  /// Names and attribute chains loaded here, as written.
  std::vector<StringRef> loads{};
};

struct PendingCall {
  LocalId from;
  std::string callee;
  uint32_t line;
};

class FileAnalyzer {
public:
  FileAnalyzer(StringRef source, StringRef path, StringRef moduleName,
               const PytestConfig &config)
      : source(source), path(path), moduleName(moduleName), config(config),
        grammar(getGrammar()) {}

  FileSummary run();

private:
  StringRef text(TSNode node) const {
    uint32_t begin = ts_node_start_byte(node), end = ts_node_end_byte(node);
    if (begin > source.size() || end > source.size() || end < begin)
      return {};
    return source.slice(begin, end);
  }
  TSNode field(TSNode node, TSFieldId id) const {
    return ts_node_child_by_field_id(node, id);
  }

  void walk(TSNode root);
  bool enter(TSNode node, uint32_t depth);
  void leave(uint32_t depth);

  void openEntity(TSNode outer, TSNode def, StringRef name, EntityKind kind,
                  uint32_t depth);
  void closeFrame();
  const void *findDocstring(TSNode body) const;
  bool isPlainStr(TSNode node) const;
  SourceRange getAstRange(TSNode node) const;
  std::string getDottedName(TSNode node) const;
  std::string getDecoratorName(TSNode expression) const;
  void recordImport(TSNode node);
  std::string resolveRelative(unsigned level, StringRef rest) const;
  std::optional<PyValue> evaluate(TSNode node, unsigned depth) const;
  /// The parameters of the `def` \p def that pytest's getfuncargnames
  /// reads: positional-or-keyword and keyword-only ones without a default.
  std::vector<std::string> getFixtureRequests(TSNode def) const;
  std::optional<PyValue> evaluateString(TSNode node) const;
  void recordSyntaxError(TSNode node, bool missing);
  /// Name loads and bindings of \p node (the `names` attribute).
  void recordNames(TSNode node, Kind kind, uint32_t depth);
  void pushScope(ScopeKind kind, LocalId owner, uint32_t depth);
  /// Binds \p name in the current scope (or where `global` sends it).
  void bind(StringRef name);
  /// Binds every name an assignment target pattern holds.
  void bindTargets(TSNode target, bool markStores = true, unsigned depth = 0);
  void bindParameters(TSNode parameters);
  void resolveNames();
  /// The dotted name source[begin, end) spells, whitespace and line
  /// continuations dropped; "" when it holds anything else.
  StringRef chainText(uint32_t begin, uint32_t end);
  /// A call in module or class code that may create tests at import time.
  void recordImportTimeCall(TSNode node, StringRef callee, uint32_t depth);
  void reportSyntaxErrors(TSNode root);
  /// For an ERROR node that runs to the end of the file: the offset and
  /// text of its cause (an unclosed bracket or string), or nothing.
  std::optional<std::pair<size_t, std::string>>
  diagnoseAtEndOfFile(TSNode node) const;
  void resolveCalls();
  std::string resolveCallee(LocalId from, StringRef callee) const;
  std::string symbolOf(LocalId id) const {
    return moduleName.empty()
               ? summary.entities[id].qualname
               : (moduleName + "." + summary.entities[id].qualname).str();
  }
  LocalId currentEntity() const { return frames.back().entity; }

  StringRef source, path, moduleName;
  const PytestConfig &config;
  const Grammar &grammar;
  /// What module-level code does to classes (setattr, torch's instantiate
  /// calls), for pytest collection.
  ImportTimeEffects effects;
  FileSummary summary;
  std::vector<Frame> frames;
  /// Per-entity decorator values, for pytest collection.
  std::vector<std::vector<PyValue>> decoratorValues;
  std::vector<PyValue> moduleMarks;
  /// The definition inside a decorated_definition whose entity is already
  /// open, and the lambda bound by the assignment being walked.
  const void *openedDefinition = nullptr;
  const void *namedLambda = nullptr;
  std::string namedLambdaName;
  /// Open frames' hashing is muted inside a docstring until this depth.
  uint32_t muteDepth = UINT32_MAX;
  llvm::StringMap<unsigned> qualnameCounts;
  /// Local name bindings from imports: name -> dotted target.
  llvm::StringMap<std::string> importAliases;
  std::vector<PendingCall> calls;
  /// (scope, name) -> the first entity of that name in that scope.
  llvm::DenseMap<std::pair<LocalId, StringRef>, LocalId> childByName;
  /// The kinds of the nodes on the walk's path, by depth: ts_node_parent
  /// would search down from the root for every assignment.
  llvm::SmallVector<Kind, 64> kindPath;
  /// The start offsets of the same nodes: an identifier that starts where
  /// its parent starts is the parent's first child (the head of an
  /// attribute chain, a keyword argument's or parameter's name).
  llvm::SmallVector<uint32_t, 64> startPath, endPath;
  /// Attribute chains written with spaces or line breaks, normalized
  /// (loads point into the source otherwise).
  std::deque<std::string> normalizedChains;
  /// Syntax errors as found, in source order; the first kMaxSyntaxErrors
  /// become warnings of their own, the rest one count.
  std::vector<FileWarning> syntaxErrors;
  unsigned numSyntaxErrors = 0;
  TSPoint firstUnreported{};
  /// Name scopes, and the open ones innermost last.
  std::vector<NameScope> scopes;
  std::vector<int> openScopes;
  /// Identifiers already accounted for (bound, or the head of a chain
  /// recorded whole): not loads of their own.
  llvm::DenseSet<const void *> notLoads;
  /// Depth of the ERROR node being walked (nested ones are not reported).
  uint32_t errorDepth = UINT32_MAX;
};
} // namespace

FileSummary FileAnalyzer::run() {
  // CPython's tokenizer drops a UTF-8 byte order mark; so do we, so that
  // first-line columns agree.
  if (source.starts_with("\xEF\xBB\xBF"))
    source = source.drop_front(3);
  StringRef content = source;
  content.consume_back("\n");
  content.consume_back("\r");
  summary.numLines = content.count('\n') + 1;
  summary.lastLineLength = content.size() - (content.rfind('\n') + 1);

  if (std::optional<size_t> offset = findInvalidUTF8(source)) {
    StringRef before = source.take_front(*offset);
    size_t lineStart = before.rfind('\n') + 1; // npos + 1 == 0
    summary.warnings.push_back(
        {static_cast<uint32_t>(before.count('\n') + 1),
         static_cast<uint32_t>(*offset - lineStart + 1),
         "file is not valid UTF-8; analysed as far as tree-sitter recovers"});
    summary.parseError = true;
  }
  // CPython refuses a file with a NUL byte ("source code cannot contain
  // null bytes"); tree-sitter reads on past it.
  size_t nul = source.find('\0');
  if (nul != StringRef::npos) {
    StringRef before = source.take_front(nul);
    size_t lineStart = before.rfind('\n') + 1;
    summary.warnings.push_back(
        {static_cast<uint32_t>(before.count('\n') + 1),
         static_cast<uint32_t>(nul - lineStart + 1),
         "source contains a NUL byte (CPython rejects the file); analysed as "
         "far as tree-sitter recovers"});
    summary.parseError = true;
  }

  if (source.size() > kMaxSourceBytes) {
    summary.warnings.push_back({1, 1,
                                "file of " + std::to_string(source.size()) +
                                    " bytes exceeds the budget of " +
                                    std::to_string(kMaxSourceBytes >> 20) +
                                    " MiB per file; not analysed"});
    summary.parseError = true;
    return std::move(summary);
  }

  // Everything tree-sitter allocates for this file comes from one arena,
  // reclaimed at once when the scope ends (see ParserArena.h).
  ParserArenaScope arena;
  ParserPtr parser = createParser();
  TSTree *tree = ts_parser_parse_string(parser.get(), nullptr, source.data(),
                                        static_cast<uint32_t>(source.size()));
  if (!tree) {
    summary.warnings.push_back(
        {1, 1,
         "parsing exceeded the budget of " +
             std::to_string(kParseTimeoutMicros / 1'000'000) +
             " s per file; file not analysed"});
    summary.parseError = true;
    return std::move(summary);
  }
  TSNode root = ts_tree_root_node(tree);
  walk(root);
  // Releasing the tree node by node would cost 2-3% of the parse.
  if (!arena.reclaimsAll())
    ts_tree_delete(tree);

  reportSyntaxErrors(root);
  resolveCalls();
  resolveNames();
  // Every file: a test class may inherit from a class of any module.
  collectPytestItems(path, moduleName, source, summary, decoratorValues,
                     moduleMarks, effects, config);
  return std::move(summary);
}

void FileAnalyzer::walk(TSNode root) {
  frames.push_back(Frame{ScopeKind::Module, kModuleScope, 0});
  frames.back().docstring = findDocstring(root);
  pushScope(ScopeKind::Module, kModuleScope, 0);
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  uint32_t depth = 0;
  for (;;) {
    TSNode node = ts_tree_cursor_current_node(&cursor);
    if (enter(node, depth) && ts_tree_cursor_goto_first_child(&cursor)) {
      ++depth;
      continue;
    }
    leave(depth);
    bool done = false;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        done = true;
        break;
      }
      --depth;
      leave(depth);
    }
    if (done)
      break;
  }
  ts_tree_cursor_delete(&cursor);
  while (!frames.empty())
    closeFrame();
}

bool FileAnalyzer::enter(TSNode node, uint32_t depth) {
  Kind kind = grammar.kindOf(node);
  if (kind == Kind::Comment)
    return false;
  if (kindPath.size() <= depth) {
    kindPath.resize(depth + 1);
    startPath.resize(depth + 1);
    endPath.resize(depth + 1);
  }
  kindPath[depth] = kind;
  startPath[depth] = ts_node_start_byte(node);
  endPath[depth] = ts_node_end_byte(node);
  if (ts_node_is_missing(node)) {
    recordSyntaxError(node, /*missing=*/true);
    return false;
  }
  if (kind == Kind::Error && errorDepth == UINT32_MAX) {
    // Only the outermost ERROR of a region: the nested ones are the same
    // error.
    recordSyntaxError(node, /*missing=*/false);
    errorDepth = depth;
  }
  if (node.id == frames.back().docstring && muteDepth == UINT32_MAX)
    muteDepth = depth;
  // Named lambdas open an entity (and its scope) in the switch below.
  if (kind != Kind::Lambda || node.id != namedLambda)
    recordNames(node, kind, depth);

  switch (kind) {
  case Kind::DecoratedDefinition: {
    TSNode def = field(node, grammar.definition);
    Kind defKind = grammar.kindOf(def);
    if (defKind == Kind::FunctionDefinition ||
        defKind == Kind::ClassDefinition) {
      openEntity(node, def, text(field(def, grammar.name)),
                 defKind == Kind::ClassDefinition ? EntityKind::Class
                                                  : EntityKind::Function,
                 depth);
      openedDefinition = def.id;
      return true;
    }
    break;
  }
  case Kind::FunctionDefinition:
  case Kind::ClassDefinition:
    if (node.id == openedDefinition) {
      openedDefinition = nullptr;
      break;
    }
    openEntity(node, node, text(field(node, grammar.name)),
               kind == Kind::ClassDefinition ? EntityKind::Class
                                             : EntityKind::Function,
               depth);
    return true;
  case Kind::Assignment: {
    // `name = lambda ...` (possibly annotated or parenthesized) names the
    // lambda, as `def name` would; chained and tuple targets do not.
    TSNode target = field(node, grammar.left);
    TSNode value = field(node, grammar.right);
    while (grammar.kindOf(value) == Kind::ParenthesizedExpression)
      value = ts_node_named_child(value, 0);
    if (grammar.kindOf(target) == Kind::Identifier &&
        grammar.kindOf(value) == Kind::Lambda &&
        (depth == 0 || kindPath[depth - 1] != Kind::Assignment)) {
      namedLambda = value.id;
      namedLambdaName = text(target).str();
    }
    if (frames.back().scope == ScopeKind::Module &&
        grammar.kindOf(target) == Kind::Identifier &&
        text(target) == "pytestmark") {
      if (std::optional<PyValue> marks = evaluate(value, 0)) {
        if (marks->isSequence())
          moduleMarks = marks->elements;
        else
          moduleMarks = {*marks};
      }
    }
    break;
  }
  case Kind::Lambda:
    if (node.id == namedLambda) {
      namedLambda = nullptr;
      openEntity(node, node, namedLambdaName, EntityKind::Function, depth);
      return true;
    }
    break;
  case Kind::Call: {
    std::string callee = getDottedName(field(node, grammar.function));
    if (frames.back().scope != ScopeKind::Function && !callee.empty())
      recordImportTimeCall(node, callee, depth);
    if (!callee.empty())
      calls.push_back({currentEntity(), std::move(callee),
                       ts_node_start_point(node).row + 1});
    break;
  }
  case Kind::ImportStatement:
  case Kind::ImportFromStatement:
    recordImport(node);
    break;
  case Kind::GlobalStatement:
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (grammar.kindOf(child) == Kind::Identifier)
        frames.back().globals.insert(text(child));
    });
    break;
  default:
    break;
  }

  if (depth < muteDepth) {
    std::string &tokens = frames.back().tokens;
    TSSymbol symbol = ts_node_symbol(node);
    tokens.push_back(static_cast<char>(symbol & 0xff));
    tokens.push_back(static_cast<char>(symbol >> 8));
    // String contents are hashed whole: tree-sitter splits them around
    // escape sequences, and the text in between matters.
    if (ts_node_child_count(node) == 0 || kind == Kind::StringContent) {
      if (node.id != frames.back().nameNode)
        tokens.append(text(node));
      tokens.push_back('\0');
    }
  }
  return true;
}

void FileAnalyzer::leave(uint32_t depth) {
  if (openScopes.size() > 1 && scopes[openScopes.back()].depth == depth)
    openScopes.pop_back();
  if (depth == errorDepth)
    errorDepth = UINT32_MAX;
  if (depth == muteDepth)
    muteDepth = UINT32_MAX;
  if (frames.size() > 1 && frames.back().depth == depth)
    closeFrame();
}

void FileAnalyzer::openEntity(TSNode outer, TSNode def, StringRef name,
                              EntityKind kind, uint32_t depth) {
  const Frame &parentFrame = frames.back();
  EntitySummary entity;
  entity.kind = kind;
  entity.name = name.str();
  entity.parent = parentFrame.entity;
  std::string qualname;
  if (parentFrame.scope == ScopeKind::Module ||
      parentFrame.globals.contains(name))
    qualname = entity.name;
  else if (parentFrame.scope == ScopeKind::Class)
    qualname =
        summary.entities[parentFrame.entity].qualname + "." + entity.name;
  else
    qualname = summary.entities[parentFrame.entity].qualname + ".<locals>." +
               entity.name;
  unsigned count = ++qualnameCounts[qualname];
  if (count > 1)
    qualname += "#" + std::to_string(count);
  entity.qualname = std::move(qualname);
  entity.range = getAstRange(def);
  entity.isLambda = grammar.kindOf(def) == Kind::Lambda;
  if (!entity.isLambda && ts_node_child_count(def) > 0)
    entity.isAsync = grammar.kindOf(ts_node_child(def, 0)) == Kind::Async;

  std::vector<PyValue> decorators;
  if (outer.id != def.id) {
    forEachChild(outer, [&](TSNode child, TSFieldId) {
      if (grammar.kindOf(child) != Kind::Decorator)
        return;
      TSNode expression = ts_node_named_child(child, 0);
      std::string decorator = getDecoratorName(expression);
      if (decorator == "pytest.fixture" || decorator == "fixture" ||
          decorator == "pytest.yield_fixture")
        entity.isFixture = true;
      entity.decorators.push_back(std::move(decorator));
      std::optional<PyValue> value = evaluate(expression, 0);
      decorators.push_back(value ? std::move(*value) : PyValue());
    });
  }

  // What pytest would inject: read only where collection needs it.
  if (kind == EntityKind::Function && !entity.isLambda &&
      (entity.isFixture || name.starts_with("test") ||
       config.isTestFunctionName(name)))
    entity.parameters = getFixtureRequests(def);

  // The parent hashes a placeholder, so adding, removing or renaming a
  // member changes it while editing the member's body does not.
  if (depth < muteDepth) {
    std::string &parentTokens = frames.back().tokens;
    // Split literals: "\x01class" would read as the escape \x01c.
    parentTokens += kind == EntityKind::Class ? "\x01" "class " : "\x01" "def ";
    parentTokens += name;
    parentTokens.push_back('\0');
  }

  LocalId id = static_cast<LocalId>(summary.entities.size());
  summary.entities.push_back(std::move(entity));
  decoratorValues.push_back(std::move(decorators));
  // The definition binds its name where it stands; its parameters are its
  // own.
  bind(name);
  pushScope(kind == EntityKind::Class ? ScopeKind::Class : ScopeKind::Function,
            id, depth);
  if (kind == EntityKind::Function)
    bindParameters(field(def, grammar.parameters));
  Frame frame{kind == EntityKind::Class ? ScopeKind::Class
                                        : ScopeKind::Function,
              id, depth};
  if (grammar.kindOf(def) != Kind::Lambda) {
    frame.docstring = findDocstring(field(def, grammar.body));
    frame.nameNode = field(def, grammar.name).id;
  }
  frames.push_back(std::move(frame));
}

void FileAnalyzer::closeFrame() {
  Frame &frame = frames.back();
  uint64_t hash = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(frame.tokens.data()),
      frame.tokens.size()));
  if (frame.entity == kModuleScope)
    summary.moduleHash = hash;
  else
    summary.entities[frame.entity].hash = hash;
  frames.pop_back();
}

const void *FileAnalyzer::findDocstring(TSNode body) const {
  // Like CPython: the first statement, if it is a string literal expression
  // (implicitly concatenated pieces included, f-strings excluded).
  // Stops at the first statement: a body can have thousands.
  const void *docstring = nullptr;
  TSTreeCursor cursor = ts_tree_cursor_new(body);
  bool more = ts_tree_cursor_goto_first_child(&cursor);
  for (; more; more = ts_tree_cursor_goto_next_sibling(&cursor)) {
    TSNode child = ts_tree_cursor_current_node(&cursor);
    if (!ts_node_is_named(child) || grammar.kindOf(child) == Kind::Comment)
      continue;
    if (grammar.kindOf(child) == Kind::ExpressionStatement &&
        ts_node_named_child_count(child) == 1 &&
        isPlainStr(ts_node_named_child(child, 0)))
      docstring = child.id;
    break;
  }
  ts_tree_cursor_delete(&cursor);
  return docstring;
}

bool FileAnalyzer::isPlainStr(TSNode node) const {
  Kind kind = grammar.kindOf(node);
  if (kind == Kind::String) {
    StringRef literal = text(node);
    StringRef prefix = literal.take_front(literal.find_first_of("'\""));
    return !prefix.contains_insensitive('f') &&
           !prefix.contains_insensitive('b');
  }
  if (kind != Kind::ConcatenatedString)
    return false;
  bool plain = true;
  forEachChild(node, [&](TSNode child, TSFieldId) {
    if (ts_node_is_named(child) && grammar.kindOf(child) != Kind::Comment)
      plain &= isPlainStr(child);
  });
  return plain;
}

SourceRange FileAnalyzer::getAstRange(TSNode node) const {
  SourceRange range;
  TSPoint start = ts_node_start_point(node);
  range.startLine = start.row + 1;
  range.startColumn = start.column;
  // Descend along last children, skipping comments and zero-width
  // (missing) tokens, to the last real token.
  TSNode last = node;
  for (unsigned guard = 0; guard < 100000; ++guard) {
    uint32_t count = ts_node_child_count(last);
    TSNode next = {};
    bool found = false;
    for (uint32_t i = count; i-- > 0;) {
      TSNode child = ts_node_child(last, i);
      Kind kind = grammar.kindOf(child);
      if (kind == Kind::Comment ||
          ts_node_start_byte(child) == ts_node_end_byte(child))
        continue;
      next = child;
      found = true;
      break;
    }
    if (!found)
      break;
    last = next;
  }
  TSPoint end = ts_node_end_point(last);
  range.endLine = end.row + 1;
  range.endColumn = end.column;
  return range;
}

std::string FileAnalyzer::getDottedName(TSNode node) const {
  llvm::SmallVector<StringRef, 8> parts;
  while (grammar.kindOf(node) == Kind::Attribute) {
    TSNode attribute = field(node, grammar.attribute);
    if (ts_node_is_null(attribute))
      return {};
    parts.push_back(text(attribute));
    node = field(node, grammar.object);
  }
  if (grammar.kindOf(node) != Kind::Identifier)
    return {};
  parts.push_back(text(node));
  std::reverse(parts.begin(), parts.end());
  return llvm::join(parts, ".");
}

std::string FileAnalyzer::getDecoratorName(TSNode expression) const {
  TSNode callee = expression;
  if (grammar.kindOf(expression) == Kind::Call)
    callee = field(expression, grammar.function);
  std::string dotted = getDottedName(callee);
  if (!dotted.empty())
    return dotted;
  // Any other expression (PEP 614): its text with whitespace collapsed.
  llvm::SmallVector<StringRef, 8> words;
  text(expression).split(words, ' ', -1, /*KeepEmpty=*/false);
  std::string joined = llvm::join(words, " ");
  llvm::erase_if(joined, [](char c) { return c == '\n' || c == '\r'; });
  return joined;
}

std::string FileAnalyzer::resolveRelative(unsigned level,
                                          StringRef rest) const {
  // The package a relative import starts from: the module itself for an
  // `__init__.py`, else its parent.
  StringRef package = moduleName;
  if (!path.ends_with("__init__.py") || path == "__init__.py")
    package = package.contains('.') ? package.rsplit('.').first : "";
  for (unsigned i = 1; i < level; ++i) {
    if (package.empty())
      return (std::string(level, '.') + rest).str();
    package = package.contains('.') ? package.rsplit('.').first : "";
  }
  if (package.empty())
    return rest.empty() ? std::string(level, '.') : rest.str();
  return rest.empty() ? package.str() : (package + "." + rest).str();
}

void FileAnalyzer::recordImport(TSNode node) {
  LocalId from = currentEntity();
  uint32_t line = ts_node_start_point(node).row + 1;
  if (grammar.kindOf(node) == Kind::ImportStatement) {
    forEachChild(node, [&](TSNode child, TSFieldId fieldId) {
      if (fieldId != grammar.name)
        return;
      if (grammar.kindOf(child) == Kind::AliasedImport) {
        std::string target = text(field(child, grammar.name)).str();
        StringRef alias = text(field(child, grammar.alias));
        importAliases[alias] = target;
        scopes[openScopes.back()].imports[alias] = target;
        summary.edges.push_back(
            {EdgeKind::Import, from, target, line, 0, alias.str()});
        return;
      }
      std::string target = text(child).str();
      // `import a.b` binds `a`.
      StringRef head = StringRef(target).split('.').first;
      importAliases.try_emplace(head, head.str());
      scopes[openScopes.back()].imports.try_emplace(head, head.str());
      summary.edges.push_back({EdgeKind::Import, from, target, line, 0, ""});
    });
    return;
  }

  TSNode moduleNode = field(node, grammar.moduleName);
  std::string module;
  if (grammar.kindOf(moduleNode) == Kind::RelativeImport) {
    unsigned level = 0;
    StringRef rest;
    forEachChild(moduleNode, [&](TSNode child, TSFieldId) {
      if (grammar.kindOf(child) == Kind::ImportPrefix)
        level = text(child).count('.');
      else if (grammar.kindOf(child) == Kind::DottedName)
        rest = text(child);
    });
    module = resolveRelative(level, rest);
  } else {
    module = text(moduleNode).str();
  }
  bool any = false;
  forEachChild(node, [&](TSNode child, TSFieldId fieldId) {
    if (grammar.kindOf(child) == Kind::WildcardImport) {
      summary.edges.push_back({EdgeKind::Import, from, module, line,
                               static_cast<uint32_t>(module.size()), ""});
      any = true;
      return;
    }
    if (fieldId != grammar.name)
      return;
    StringRef name = text(child), bound = name;
    if (grammar.kindOf(child) == Kind::AliasedImport) {
      name = text(field(child, grammar.name));
      bound = text(field(child, grammar.alias));
    }
    std::string target =
        module.empty() ? name.str() : module + "." + name.str();
    importAliases[bound] = target;
    scopes[openScopes.back()].imports[bound] = target;
    summary.edges.push_back({EdgeKind::Import, from, target, line,
                             static_cast<uint32_t>(module.size()),
                             bound == name ? std::string() : bound.str()});
    any = true;
  });
  if (!any && !module.empty())
    summary.edges.push_back({EdgeKind::Import, from, module, line,
                             static_cast<uint32_t>(module.size()), ""});
}

/// Syntax errors reported one by one; beyond this, one warning counts them.
constexpr unsigned kMaxSyntaxErrors = 10;

void FileAnalyzer::recordSyntaxError(TSNode node, bool missing) {
  TSPoint point = ts_node_start_point(node);
  if (numSyntaxErrors++ >= kMaxSyntaxErrors) {
    if (numSyntaxErrors == kMaxSyntaxErrors + 1)
      firstUnreported = point;
    return;
  }
  std::string message = "invalid syntax: ";
  if (missing) {
    // A MISSING node is the token tree-sitter had to invent: `)` for an
    // unclosed bracket, an identifier after `x = 1 +`.
    StringRef type = ts_node_type(node);
    message += type == "identifier" ? std::string("expression expected")
                                    : ("missing '" + type + "'").str();
  } else if (std::optional<std::pair<size_t, std::string>> eof =
                 diagnoseAtEndOfFile(node)) {
    // A region that runs to the end of the file starts wherever the
    // parser lost track; the cause is usually an unclosed bracket or
    // string inside it.
    StringRef before = source.take_front(eof->first);
    point.row = before.count('\n');
    point.column = eof->first - (before.rfind('\n') + 1);
    message += eof->second;
  } else {
    // Quote the start of what tree-sitter could not fit, on one line.
    StringRef skipped = text(node);
    skipped = skipped.take_until([](char c) { return c == '\n' || c == '\r'; });
    skipped = skipped.rtrim();
    if (skipped.empty()) {
      message += "unexpected end of file";
    } else {
      std::string quoted;
      for (char c : skipped.take_front(20)) {
        if (llvm::isPrint(c) || (c & 0x80)) {
          quoted += c;
        } else {
          quoted += "\\x";
          quoted += llvm::hexdigit((uint8_t)c >> 4, true);
          quoted += llvm::hexdigit((uint8_t)c & 15, true);
        }
      }
      message += "unexpected '" + quoted + (skipped.size() > 20 ? "...'" : "'");
    }
  }
  message += "; entities recovered by tree-sitter";
  syntaxErrors.push_back({point.row + 1, point.column + 1, std::move(message)});
}

std::optional<std::pair<size_t, std::string>>
FileAnalyzer::diagnoseAtEndOfFile(TSNode node) const {
  size_t begin = ts_node_start_byte(node), end = ts_node_end_byte(node);
  if (end > source.size() || begin >= end ||
      !source.drop_front(end).trim().empty())
    return std::nullopt;
  // Brackets and strings, as the tokenizer sees them.
  llvm::SmallVector<size_t, 16> open;
  for (size_t i = begin; i < end; ++i) {
    char c = source[i];
    if (c == '#') {
      i = std::min(source.find('\n', i), end);
    } else if (c == '\'' || c == '"') {
      size_t start = i;
      bool triple = i + 2 < end && source[i + 1] == c && source[i + 2] == c;
      i += triple ? 3 : 1;
      for (; i < end; ++i) {
        if (source[i] == '\\') {
          ++i;
          continue;
        }
        if (!triple && source[i] == '\n')
          return std::make_pair(start,
                                std::string("unterminated string literal"));
        if (source[i] == c && (!triple || (i + 2 < end && source[i + 1] == c &&
                                           source[i + 2] == c)))
          break;
      }
      if (i >= end)
        return std::make_pair(
            start, std::string(triple ? "unterminated triple-quoted string "
                                        "literal"
                                      : "unterminated string literal"));
      if (triple)
        i += 2;
    } else if (c == '(' || c == '[' || c == '{') {
      open.push_back(i);
    } else if (c == ')' || c == ']' || c == '}') {
      if (!open.empty())
        open.pop_back();
    }
  }
  if (!open.empty())
    return std::make_pair(open.front(),
                          "'" + std::string(1, source[open.front()]) +
                              "' was never closed");
  return std::make_pair(end, std::string("unexpected end of file"));
}

void FileAnalyzer::reportSyntaxErrors(TSNode root) {
  // Never silent: a tree that says it has an error where the walk met no
  // ERROR or MISSING node (tree-sitter can mark an error on a node's own
  // flags) still gets a warning, at the root.
  if (!numSyntaxErrors && ts_node_has_error(root))
    recordSyntaxError(root, /*missing=*/false);
  if (!numSyntaxErrors)
    return;
  summary.parseError = true;
  for (FileWarning &warning : syntaxErrors)
    summary.warnings.push_back(std::move(warning));
  if (numSyntaxErrors > kMaxSyntaxErrors)
    summary.warnings.push_back(
        {firstUnreported.row + 1, firstUnreported.column + 1,
         std::to_string(numSyntaxErrors - kMaxSyntaxErrors) +
             " more syntax errors in this file"});
}

std::string FileAnalyzer::resolveCallee(LocalId from, StringRef callee) const {
  auto [head, rest] = callee.split('.');
  auto withRest = [&](std::string base) {
    return rest.empty() ? base : base + "." + rest.str();
  };
  // `self.m()` / `cls.m()` inside a class: that class's member.
  if ((head == "self" || head == "cls") && !rest.empty()) {
    for (LocalId id = from; id != kModuleScope;
         id = summary.entities[id].parent)
      if (summary.entities[id].kind == EntityKind::Class)
        return withRest(symbolOf(id));
    return callee.str();
  }
  // Python's scoping: enclosing function scopes (class bodies are not
  // visible from their methods), then the module, then imports.
  auto findChild = [&](LocalId scope) -> LocalId {
    auto it = childByName.find({scope, head});
    return it == childByName.end() ? kNoLocal : it->second;
  };
  bool first = true;
  for (LocalId scope = from; scope != kModuleScope;
       scope = summary.entities[scope].parent, first = false) {
    if (summary.entities[scope].kind == EntityKind::Class && !first)
      continue;
    LocalId found = findChild(scope);
    if (found >= 0)
      return withRest(symbolOf(found));
  }
  LocalId found = findChild(kModuleScope);
  if (found >= 0)
    return withRest(symbolOf(found));
  auto alias = importAliases.find(head);
  if (alias != importAliases.end())
    return withRest(alias->second);
  return callee.str();
}

void FileAnalyzer::recordImportTimeCall(TSNode node, StringRef callee,
                                        uint32_t depth) {
  bool atModule = frames.back().scope == ScopeKind::Module;
  auto markScope = [&] {
    if (atModule)
      summary.dynamicTests = true;
    else
      effects.dynamicMembers.insert(summary.entities[currentEntity()].qualname);
  };
  // `globals()[name] = ...`, `globals().update(...)`, `locals()[...]` in a
  // class body: names bound by computed strings.
  if ((callee == "globals" || callee == "vars" || callee == "locals") &&
      depth > 0 &&
      (kindPath[depth - 1] == Kind::Subscript ||
       kindPath[depth - 1] == Kind::Attribute)) {
    markScope();
    return;
  }
  if (callee == "exec") {
    markScope();
    return;
  }
  TSNode arguments = field(node, grammar.arguments);
  if (grammar.kindOf(arguments) != Kind::ArgumentList)
    return;
  std::vector<TSNode> positional;
  bool passesGlobals = false;
  forEachChild(arguments, [&](TSNode child, TSFieldId) {
    if (!ts_node_is_named(child) || grammar.kindOf(child) == Kind::Comment ||
        grammar.kindOf(child) == Kind::KeywordArgument)
      return;
    positional.push_back(child);
    if (grammar.kindOf(child) == Kind::Call &&
        getDottedName(field(child, grammar.function)) == "globals")
      passesGlobals = true;
  });
  StringRef last = callee.substr(callee.rfind('.') + 1);
  auto firstClass = [&]() -> std::string {
    if (positional.empty() || grammar.kindOf(positional[0]) != Kind::Identifier)
      return {};
    return text(positional[0]).str();
  };
  if (last == "setattr" && callee == "setattr" && !positional.empty()) {
    std::string target = firstClass();
    if (!target.empty())
      effects.dynamicMembers.insert(target);
    else if (text(positional[0]).contains("sys.modules"))
      markScope();
    return;
  }
  if (last == "instantiate_parametrized_tests") {
    std::string target = firstClass();
    if (!target.empty())
      effects.instantiated.insert(target);
    return;
  }
  if (last == "instantiate_device_type_tests") {
    // Replaces the generic class by per-device classes with per-device
    // test names.
    std::string target = firstClass();
    if (!target.empty())
      effects.replaced.insert(target);
    markScope();
    return;
  }
  if (passesGlobals)
    markScope();
}

//===----------------------------------------------------------------------===//
// Module-level names each entity loads
//===----------------------------------------------------------------------===//

void FileAnalyzer::pushScope(ScopeKind kind, LocalId owner, uint32_t depth) {
  int parent = openScopes.empty() ? -1 : openScopes.back();
  scopes.push_back(NameScope{kind, parent, owner, depth});
  openScopes.push_back(static_cast<int>(scopes.size() - 1));
}

void FileAnalyzer::bind(StringRef name) {
  NameScope &scope = scopes[openScopes.back()];
  auto declared = scope.declared.find(name);
  if (declared == scope.declared.end()) {
    scope.bound.insert(name);
    return;
  }
  // `global x`: the binding is the module's; `nonlocal x`: an enclosing
  // function's, which binds it already.
  if (declared->second)
    scopes[0].bound.insert(name);
}

void FileAnalyzer::bindTargets(TSNode target, bool markStores, unsigned depth) {
  if (ts_node_is_null(target) || depth > 64)
    return;
  switch (grammar.kindOf(target)) {
  case Kind::Identifier:
    bind(text(target));
    // Parameters' names are recognised by their parents instead.
    if (markStores)
      notLoads.insert(target.id);
    return;
  case Kind::PatternList:
  case Kind::TuplePattern:
  case Kind::ListPattern:
  case Kind::Tuple:
  case Kind::List:
  case Kind::ExpressionList:
  case Kind::ParenthesizedExpression:
  case Kind::ListSplatPattern:
  case Kind::DictionarySplatPattern:
  case Kind::ListSplat:
  case Kind::AsPatternTarget:
    forEachChild(target, [&](TSNode child, TSFieldId) {
      if (ts_node_is_named(child))
        bindTargets(child, markStores, depth + 1);
    });
    return;
  default:
    // `obj.attr = ...` and `obj[i] = ...` bind nothing; `obj` is a load.
    return;
  }
}

void FileAnalyzer::bindParameters(TSNode parameters) {
  if (ts_node_is_null(parameters))
    return;
  forEachChild(parameters, [&](TSNode child, TSFieldId) {
    switch (grammar.kindOf(child)) {
    case Kind::Identifier:
    case Kind::ListSplatPattern:
    case Kind::DictionarySplatPattern:
    case Kind::TuplePattern:
      bindTargets(child, /*markStores=*/false);
      break;
    case Kind::DefaultParameter:
    case Kind::TypedDefaultParameter:
      bindTargets(field(child, grammar.name), /*markStores=*/false);
      break;
    case Kind::TypedParameter:
      bindTargets(ts_node_named_child(child, 0), /*markStores=*/false);
      break;
    default:
      break;
    }
  });
}

StringRef FileAnalyzer::chainText(uint32_t begin, uint32_t end) {
  if (begin >= end || end > source.size())
    return {};
  StringRef chain = source.slice(begin, end);
  bool plain = llvm::all_of(chain, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || (c & 0x80);
  });
  if (plain)
    return chain;
  std::string normalized;
  for (size_t i = 0; i < chain.size(); ++i) {
    char c = chain[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\' ||
        c == '\f')
      continue;
    if (!(llvm::isAlnum(c) || c == '_' || c == '.' || (c & 0x80)))
      return {}; // a comment inside the chain: rare, left out
    normalized += c;
  }
  normalizedChains.push_back(std::move(normalized));
  return normalizedChains.back();
}

void FileAnalyzer::recordNames(TSNode node, Kind kind, uint32_t depth) {
  // Roles are read from the path (parent kinds and start offsets), not from
  // field lookups: ts_tree_cursor_current_field_id and
  // ts_node_child_by_field_id per identifier cost a quarter of the walk.
  switch (kind) {
  case Kind::Identifier: {
    if (!notLoads.empty() && notLoads.erase(node.id))
      return;
    if (depth == 0)
      return;
    Kind parent = kindPath[depth - 1];
    bool first = startPath[depth] == startPath[depth - 1];
    switch (parent) {
    case Kind::Attribute: {
      // The attribute of `x.attr`, or of `call().attr`.
      if (!first)
        return;
      // The head of a chain of names: one load of the whole chain, from
      // the outermost attribute that starts here.
      uint32_t top = depth - 1;
      while (top > 0 && kindPath[top - 1] == Kind::Attribute &&
             startPath[top - 1] == startPath[depth])
        --top;
      // The chain's text runs to the end of the outermost attribute's
      // last identifier, which ends the attribute node.
      StringRef chain = chainText(startPath[top], endPath[top]);
      if (!chain.empty())
        scopes[openScopes.back()].loads.push_back(chain);
      return;
    }
    case Kind::FunctionDefinition:
    case Kind::ClassDefinition:
    case Kind::ListSplatPattern:
    case Kind::DictionarySplatPattern:
      // A definition's name; `*rest` / `**kw` targets and parameters.
      return;
    case Kind::KeywordArgument:
    case Kind::DefaultParameter:
    case Kind::TypedParameter:
    case Kind::TypedDefaultParameter:
      // Their first identifier is a name; a later one is in the value.
      if (first)
        return;
      break;
    case Kind::Parameters:
    case Kind::LambdaParameters:
      return;
    default:
      if (grammar.isNameContext(parent))
        return;
      break;
    }
    scopes[openScopes.back()].loads.push_back(text(node));
    return;
  }
  case Kind::Assignment:
  case Kind::AugmentedAssignment:
  case Kind::ForStatement:
  case Kind::ForInClause:
    bindTargets(field(node, grammar.left));
    return;
  case Kind::NamedExpression:
    bindTargets(field(node, grammar.name));
    return;
  case Kind::AsPattern:
  case Kind::ExceptClause:
    bindTargets(field(node, grammar.alias));
    return;
  case Kind::DeleteStatement:
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (ts_node_is_named(child))
        bindTargets(child);
    });
    return;
  case Kind::GlobalStatement:
  case Kind::NonlocalStatement:
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (grammar.kindOf(child) == Kind::Identifier)
        scopes[openScopes.back()].declared[text(child)] =
            kind == Kind::GlobalStatement;
    });
    return;
  case Kind::ListComprehension:
  case Kind::SetComprehension:
  case Kind::DictionaryComprehension:
  case Kind::GeneratorExpression:
    pushScope(ScopeKind::Function, currentEntity(), depth);
    return;
  case Kind::Lambda:
    // Unnamed lambdas are part of the entity around them, with their own
    // parameters.
    pushScope(ScopeKind::Function, currentEntity(), depth);
    bindParameters(field(node, grammar.parameters));
    return;
  default:
    return;
  }
}

/// Names Python finds in builtins (and module attributes every module has).
static bool isBuiltinName(StringRef name) {
  static const llvm::StringSet<> kBuiltins = {"ArithmeticError",
                                              "AssertionError",
                                              "AttributeError",
                                              "BaseException",
                                              "BaseExceptionGroup",
                                              "BlockingIOError",
                                              "BrokenPipeError",
                                              "BufferError",
                                              "BytesWarning",
                                              "ChildProcessError",
                                              "ConnectionAbortedError",
                                              "ConnectionError",
                                              "ConnectionRefusedError",
                                              "ConnectionResetError",
                                              "DeprecationWarning",
                                              "EOFError",
                                              "Ellipsis",
                                              "EncodingWarning",
                                              "EnvironmentError",
                                              "Exception",
                                              "ExceptionGroup",
                                              "False",
                                              "FileExistsError",
                                              "FileNotFoundError",
                                              "FloatingPointError",
                                              "FutureWarning",
                                              "GeneratorExit",
                                              "IOError",
                                              "ImportError",
                                              "ImportWarning",
                                              "IndentationError",
                                              "IndexError",
                                              "InterruptedError",
                                              "IsADirectoryError",
                                              "KeyError",
                                              "KeyboardInterrupt",
                                              "LookupError",
                                              "MemoryError",
                                              "ModuleNotFoundError",
                                              "NameError",
                                              "None",
                                              "NotADirectoryError",
                                              "NotImplemented",
                                              "NotImplementedError",
                                              "OSError",
                                              "OverflowError",
                                              "PendingDeprecationWarning",
                                              "PermissionError",
                                              "ProcessLookupError",
                                              "RecursionError",
                                              "ReferenceError",
                                              "ResourceWarning",
                                              "RuntimeError",
                                              "RuntimeWarning",
                                              "StopAsyncIteration",
                                              "StopIteration",
                                              "SyntaxError",
                                              "SyntaxWarning",
                                              "SystemError",
                                              "SystemExit",
                                              "TabError",
                                              "TimeoutError",
                                              "True",
                                              "TypeError",
                                              "UnboundLocalError",
                                              "UnicodeDecodeError",
                                              "UnicodeEncodeError",
                                              "UnicodeError",
                                              "UnicodeTranslateError",
                                              "UnicodeWarning",
                                              "UserWarning",
                                              "ValueError",
                                              "Warning",
                                              "ZeroDivisionError",
                                              "__annotations__",
                                              "__build_class__",
                                              "__builtins__",
                                              "__cached__",
                                              "__class__",
                                              "__debug__",
                                              "__dict__",
                                              "__doc__",
                                              "__file__",
                                              "__import__",
                                              "__loader__",
                                              "__module__",
                                              "__name__",
                                              "__package__",
                                              "__path__",
                                              "__qualname__",
                                              "__spec__",
                                              "abs",
                                              "aiter",
                                              "all",
                                              "anext",
                                              "any",
                                              "ascii",
                                              "bin",
                                              "bool",
                                              "breakpoint",
                                              "bytearray",
                                              "bytes",
                                              "callable",
                                              "chr",
                                              "classmethod",
                                              "compile",
                                              "complex",
                                              "copyright",
                                              "credits",
                                              "delattr",
                                              "dict",
                                              "dir",
                                              "divmod",
                                              "enumerate",
                                              "eval",
                                              "exec",
                                              "exit",
                                              "filter",
                                              "float",
                                              "format",
                                              "frozenset",
                                              "getattr",
                                              "globals",
                                              "hasattr",
                                              "hash",
                                              "help",
                                              "hex",
                                              "id",
                                              "input",
                                              "int",
                                              "isinstance",
                                              "issubclass",
                                              "iter",
                                              "len",
                                              "license",
                                              "list",
                                              "locals",
                                              "map",
                                              "max",
                                              "memoryview",
                                              "min",
                                              "next",
                                              "object",
                                              "oct",
                                              "open",
                                              "ord",
                                              "pow",
                                              "print",
                                              "property",
                                              "quit",
                                              "range",
                                              "repr",
                                              "reversed",
                                              "round",
                                              "set",
                                              "setattr",
                                              "slice",
                                              "sorted",
                                              "staticmethod",
                                              "str",
                                              "sum",
                                              "super",
                                              "tuple",
                                              "type",
                                              "vars",
                                              "zip"};
  return kBuiltins.contains(name);
}

void FileAnalyzer::resolveNames() {
  std::vector<std::vector<std::string>> byOwner(summary.entities.size() + 1);
  for (NameScope &scope : scopes) {
    // A name is usually loaded many times: resolve it once.
    llvm::sort(scope.loads);
    scope.loads.erase(std::unique(scope.loads.begin(), scope.loads.end()),
                      scope.loads.end());
    for (StringRef load : scope.loads) {
      auto [head, rest] = load.split('.');
      auto withRest = [&](StringRef base) {
        return rest.empty() ? base.str() : (base + "." + rest).str();
      };
      // Python's lookup: the scope itself, enclosing function scopes (class
      // bodies are not visible from nested scopes), then the module.
      std::optional<std::string> resolved;
      bool local = false, toModule = false;
      bool first = true;
      for (int at = &scope - scopes.data(); at > 0 && !resolved && !local;
           at = scopes[at].parent, first = false) {
        const NameScope &candidate = scopes[at];
        if (candidate.kind == ScopeKind::Class && !first)
          continue;
        auto declared = candidate.declared.find(head);
        if (declared != candidate.declared.end() && declared->second) {
          toModule = true;
          break;
        }
        // An import inside a function still names where the value lives.
        auto import = candidate.imports.find(head);
        if (import != candidate.imports.end())
          resolved = withRest(import->second);
        else if (candidate.bound.contains(head))
          local = true;
      }
      (void)toModule;
      if (local)
        continue;
      if (!resolved) {
        const NameScope &module = scopes[0];
        auto import = module.imports.find(head);
        if (import != module.imports.end())
          resolved = withRest(import->second);
        else if (module.bound.contains(head))
          resolved =
              moduleName.empty() ? load : (moduleName + "." + load).str();
        else if (isBuiltinName(head))
          continue;
        else
          resolved = load.str();
      }
      byOwner[scope.owner + 1].push_back(std::move(*resolved));
    }
  }
  for (auto [index, names] : llvm::enumerate(byOwner)) {
    llvm::sort(names);
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (index == 0)
      summary.moduleNames = std::move(names);
    else
      summary.entities[index - 1].names = std::move(names);
  }
}

void FileAnalyzer::resolveCalls() {
  // The first binding of a name in a scope stands for it.
  for (LocalId id = 0; id < static_cast<LocalId>(summary.entities.size());
       ++id) {
    const EntitySummary &entity = summary.entities[id];
    childByName.try_emplace({entity.parent, entity.name}, id);
  }
  llvm::StringSet<> seen;
  for (const PendingCall &call : calls) {
    std::string target = resolveCallee(call.from, call.callee);
    std::string key = std::to_string(call.from) + ":" +
                      std::to_string(call.line) + ":" + target;
    if (!seen.insert(key).second)
      continue;
    summary.edges.push_back(
        {EdgeKind::Call, call.from, std::move(target), call.line, 0, ""});
  }
}

//===----------------------------------------------------------------------===//
// Literal evaluation (decorator arguments, pytestmark)
//===----------------------------------------------------------------------===//

/// Appends code point \p cp to \p out as UTF-8 (surrogates included, as
/// CPython's str can hold them).
static void appendCodePoint(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | cp >> 6));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | cp >> 12));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | cp >> 18));
    out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// The code point a `\N{name}` escape denotes, as CPython's unicodedata
/// finds it: names and aliases in any case, but the algorithmic CJK and
/// Hangul names in upper case only. Nothing for what LLVM's table does not
/// know (the abbreviation aliases such as `BOM`), which then stays unknown.
static std::optional<uint32_t> lookupUnicodeName(StringRef name) {
  std::string upper = name.upper();
  if ((StringRef(upper).starts_with("CJK UNIFIED IDEOGRAPH-") ||
       StringRef(upper).starts_with("HANGUL SYLLABLE ")) &&
      upper != name)
    return std::nullopt;
  if (std::optional<char32_t> cp =
          llvm::sys::unicode::nameToCodepointStrict(upper))
    return static_cast<uint32_t>(*cp);
  return std::nullopt;
}

/// Decodes the body of one string literal with Python's escape rules.
/// Returns false for escapes that cannot be decoded statically (a `\N{...}`
/// name LLVM's Unicode table lacks).
static bool decodeEscapes(StringRef body, bool isBytes, bool isFString,
                          std::string &out) {
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (isFString && (c == '{' || c == '}') && i + 1 < body.size() &&
        body[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '\\' || i + 1 == body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    auto hex = [&](unsigned digits) -> std::optional<uint32_t> {
      uint32_t value = 0;
      for (unsigned k = 1; k <= digits; ++k) {
        if (i + k >= body.size() || !llvm::isHexDigit(body[i + k]))
          return std::nullopt;
        value = value * 16 + llvm::hexDigitValue(body[i + k]);
      }
      i += digits;
      return value;
    };
    switch (e) {
    case '\n':
      break;
    case '\\':
    case '\'':
    case '"':
      out.push_back(e);
      break;
    case 'a':
      out.push_back('\a');
      break;
    case 'b':
      out.push_back('\b');
      break;
    case 'f':
      out.push_back('\f');
      break;
    case 'n':
      out.push_back('\n');
      break;
    case 'r':
      out.push_back('\r');
      break;
    case 't':
      out.push_back('\t');
      break;
    case 'v':
      out.push_back('\v');
      break;
    case 'x': {
      std::optional<uint32_t> value = hex(2);
      if (!value)
        return false;
      if (isBytes)
        out.push_back(static_cast<char>(*value));
      else
        appendCodePoint(out, *value);
      break;
    }
    case 'u':
    case 'U': {
      if (isBytes) {
        out.push_back('\\');
        out.push_back(e);
        break;
      }
      std::optional<uint32_t> value = hex(e == 'u' ? 4 : 8);
      if (!value || *value > 0x10FFFF)
        return false;
      appendCodePoint(out, *value);
      break;
    }
    case 'N': {
      if (isBytes) {
        out.push_back('\\');
        out.push_back(e);
        break;
      }
      if (i + 1 >= body.size() || body[i + 1] != '{')
        return false;
      size_t close = body.find('}', i + 2);
      if (close == StringRef::npos)
        return false;
      std::optional<uint32_t> value =
          lookupUnicodeName(body.slice(i + 2, close));
      if (!value)
        return false;
      appendCodePoint(out, *value);
      i = close;
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t value = e - '0';
        for (unsigned k = 0; k < 2 && i + 1 < body.size() &&
                             body[i + 1] >= '0' && body[i + 1] <= '7';
             ++k)
          value = value * 8 + (body[++i] - '0');
        if (isBytes)
          out.push_back(static_cast<char>(value & 0xFF));
        else
          appendCodePoint(out, value);
        break;
      }
      // Unknown escapes are kept verbatim.
      out.push_back('\\');
      out.push_back(e);
      break;
    }
  }
  return true;
}

std::vector<std::string> FileAnalyzer::getFixtureRequests(TSNode def) const {
  std::vector<std::string> names;
  TSNode parameters = field(def, grammar.parameters);
  if (ts_node_is_null(parameters))
    return names;
  forEachChild(parameters, [&](TSNode child, TSFieldId) {
    StringRef type = ts_node_type(child);
    if (type == "positional_separator") {
      // Positional-only parameters cannot be requested by keyword.
      names.clear();
    } else if (type == "identifier") {
      names.push_back(text(child).str());
    } else if (type == "typed_parameter") {
      // `x: int`; a typed `*args` holds a splat pattern instead.
      TSNode first = ts_node_named_child(child, 0);
      if (grammar.kindOf(first) == Kind::Identifier)
        names.push_back(text(first).str());
    }
    // Parameters with defaults, `*args`, `**kwargs` and `*` are not
    // requests.
  });
  return names;
}

std::optional<PyValue> FileAnalyzer::evaluateString(TSNode node) const {
  bool hasInterpolation = false;
  forEachChild(node, [&](TSNode child, TSFieldId) {
    hasInterpolation |= grammar.kindOf(child) == Kind::Interpolation;
  });
  if (hasInterpolation)
    return std::nullopt;
  StringRef literal = text(node);
  size_t quote = literal.find_first_of("'\"");
  if (quote == StringRef::npos)
    return std::nullopt;
  std::string prefix = literal.take_front(quote).lower();
  StringRef rest = literal.drop_front(quote);
  size_t quoteLength =
      rest.starts_with("'''") || rest.starts_with("\"\"\"") ? 3 : 1;
  if (rest.size() < 2 * quoteLength)
    return std::nullopt;
  StringRef body = rest.drop_front(quoteLength).drop_back(quoteLength);
  PyValue value;
  bool isBytes = StringRef(prefix).contains('b');
  value.kind = isBytes ? PyValue::Kind::Bytes : PyValue::Kind::Str;
  if (StringRef(prefix).contains('r')) {
    value.text = body.str();
    return value;
  }
  if (!decodeEscapes(body, isBytes, StringRef(prefix).contains('f'),
                     value.text))
    return std::nullopt;
  return value;
}

std::optional<PyValue> FileAnalyzer::evaluate(TSNode node,
                                              unsigned depth) const {
  if (ts_node_is_null(node) || depth > 32)
    return std::nullopt;
  PyValue value;
  switch (grammar.kindOf(node)) {
  case Kind::True:
  case Kind::False:
    value.kind = PyValue::Kind::Bool;
    value.boolValue = grammar.kindOf(node) == Kind::True;
    return value;
  case Kind::None:
    value.kind = PyValue::Kind::None;
    return value;
  case Kind::Integer: {
    std::string digits = text(node).str();
    llvm::erase(digits, '_');
    StringRef ref = digits;
    if (ref.ends_with("j") || ref.ends_with("J"))
      return std::nullopt;
    unsigned radix = 10;
    if (ref.starts_with_insensitive("0x"))
      radix = 16;
    else if (ref.starts_with_insensitive("0o"))
      radix = 8;
    else if (ref.starts_with_insensitive("0b"))
      radix = 2;
    if (radix != 10)
      ref = ref.drop_front(2);
    unsigned long long parsed;
    if (llvm::getAsUnsignedInteger(ref, radix, parsed) ||
        parsed > static_cast<unsigned long long>(INT64_MAX))
      return std::nullopt;
    value.kind = PyValue::Kind::Int;
    value.intValue = static_cast<int64_t>(parsed);
    return value;
  }
  case Kind::Float: {
    std::string digits = text(node).str();
    llvm::erase(digits, '_');
    if (StringRef(digits).ends_with_insensitive("j"))
      return std::nullopt;
    value.kind = PyValue::Kind::Float;
    value.floatValue = strtod(digits.c_str(), nullptr);
    return value;
  }
  case Kind::String:
    return evaluateString(node);
  case Kind::ConcatenatedString: {
    std::optional<PyValue> joined;
    bool ok = true;
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (!ok || grammar.kindOf(child) != Kind::String)
        return;
      std::optional<PyValue> piece = evaluateString(child);
      if (!piece || (joined && joined->kind != piece->kind)) {
        ok = false;
        return;
      }
      if (!joined)
        joined = std::move(piece);
      else
        joined->text += piece->text;
    });
    return ok ? joined : std::nullopt;
  }
  case Kind::UnaryOperator: {
    std::optional<PyValue> operand =
        evaluate(field(node, grammar.argument), depth + 1);
    StringRef op = text(field(node, grammar.operatorField));
    if (!operand || (op != "-" && op != "+"))
      return std::nullopt;
    if (op == "+")
      return operand;
    if (operand->kind == PyValue::Kind::Int)
      operand->intValue = -operand->intValue;
    else if (operand->kind == PyValue::Kind::Float)
      operand->floatValue = -operand->floatValue;
    else
      return std::nullopt;
    return operand;
  }
  case Kind::ParenthesizedExpression:
    return evaluate(ts_node_named_child(node, 0), depth + 1);
  case Kind::Tuple:
  case Kind::List:
  case Kind::Set:
  case Kind::Dictionary: {
    Kind kind = grammar.kindOf(node);
    value.kind = kind == Kind::Tuple  ? PyValue::Kind::Tuple
                 : kind == Kind::List ? PyValue::Kind::List
                 : kind == Kind::Set  ? PyValue::Kind::Set
                                      : PyValue::Kind::Dict;
    bool ok = true;
    forEachChild(node, [&](TSNode child, TSFieldId) {
      if (!ok || !ts_node_is_named(child) ||
          grammar.kindOf(child) == Kind::Comment)
        return;
      if (value.kind == PyValue::Kind::Dict) {
        if (grammar.kindOf(child) != Kind::Pair) {
          ok = false;
          return;
        }
        std::optional<PyValue> key =
            evaluate(field(child, grammar.key), depth + 1);
        std::optional<PyValue> item =
            evaluate(field(child, grammar.value), depth + 1);
        if (!key || !item) {
          ok = false;
          return;
        }
        value.elements.push_back(std::move(*key));
        value.elements.push_back(std::move(*item));
        return;
      }
      std::optional<PyValue> element = evaluate(child, depth + 1);
      if (!element) {
        // A non-literal element keeps its place as Unknown: parametrize can
        // still give it an `argname<index>` id.
        if (kind == Kind::Tuple || kind == Kind::List) {
          value.elements.emplace_back();
          return;
        }
        ok = false;
        return;
      }
      value.elements.push_back(std::move(*element));
    });
    if (!ok)
      return std::nullopt;
    return value;
  }
  case Kind::Identifier:
  case Kind::Attribute: {
    std::string dotted = getDottedName(node);
    if (dotted.empty())
      return std::nullopt;
    value.kind = PyValue::Kind::Name;
    value.text = std::move(dotted);
    return value;
  }
  case Kind::Call: {
    value.kind = PyValue::Kind::Call;
    value.text = getDottedName(field(node, grammar.function));
    TSNode arguments = field(node, grammar.arguments);
    if (grammar.kindOf(arguments) != Kind::ArgumentList)
      return value.text.empty() ? std::nullopt : std::optional(value);
    bool ok = true;
    forEachChild(arguments, [&](TSNode child, TSFieldId) {
      if (!ok || !ts_node_is_named(child) ||
          grammar.kindOf(child) == Kind::Comment)
        return;
      if (grammar.kindOf(child) == Kind::KeywordArgument) {
        std::optional<PyValue> argument =
            evaluate(field(child, grammar.value), depth + 1);
        value.keywords.emplace_back(text(field(child, grammar.name)).str(),
                                    argument ? std::move(*argument)
                                             : PyValue());
        return;
      }
      std::optional<PyValue> argument = evaluate(child, depth + 1);
      value.elements.push_back(argument ? std::move(*argument) : PyValue());
    });
    return value;
  }
  default:
    return std::nullopt;
  }
}

FileSummary fastci::python::analyzePythonSource(StringRef source,
                                                StringRef path,
                                                StringRef moduleName,
                                                const PytestConfig &config) {
  // PEP 263: a file declared in Latin-1 or cp1252 is parsed as its UTF-8
  // decoding, as CPython would see it.
  std::vector<FileWarning> encodingWarnings;
  std::optional<std::string> decoded =
      decodePythonSource(source, encodingWarnings);
  FileSummary summary = FileAnalyzer(decoded ? StringRef(*decoded) : source,
                                     path, moduleName, config)
                            .run();
  summary.warnings.insert(summary.warnings.begin(), encodingWarnings.begin(),
                          encodingWarnings.end());
  return summary;
}

FileSummary fastci::python::analyzePythonSource(StringRef source,
                                                StringRef path,
                                                StringRef moduleName) {
  static const PytestConfig defaults;
  return analyzePythonSource(source, path, moduleName, defaults);
}
