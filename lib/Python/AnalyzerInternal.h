//===- AnalyzerInternal.h - The file analyzer's state ------------*- C++
//-*-===//
//
// Private to lib/Python: the grammar table, the walk's frames and name
// scopes, and the FileAnalyzer class, whose members are defined in
// Analyzer.cpp (the walk, entities, hashes, imports, calls, syntax errors),
// AnalyzerNames.cpp (module-level names, import-time test registration)
// and AnalyzerLiterals.cpp (literal evaluation of decorator arguments).
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_LIB_PYTHON_ANALYZERINTERNAL_H
#define FASTCI_LIB_PYTHON_ANALYZERINTERNAL_H

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
#include <tuple>

extern "C" const TSLanguage *tree_sitter_python(void);

namespace fastci::python::detail {
using llvm::StringRef;
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

inline const Grammar &getGrammar() {
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
inline ParserPtr createParser() {
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
inline std::optional<size_t> findInvalidUTF8(StringRef text) {
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
  /// A module's: the byte ranges of `tokens` holding the placeholders of
  /// members that only bind their name (pure decorators), which the
  /// statements hash leaves out.
  std::vector<std::pair<size_t, size_t>> bindingOnlyMembers{};
  /// The name of the definition that opened the frame: its text stays out
  /// of the hash (the symbol carries it), so a renamed function or class
  /// keeps its hash and mark-changed pairs it with its old name.
  const void *nameNode = nullptr;
};

/// What one statement directly in a module's or class's body does with
/// names (BodyFlows).
struct BodyStatement {
  /// It may act beyond binding names (classifyStatement).
  bool effect = false;
  /// The names it binds.
  std::vector<std::string> binds;
  /// The module-level names it loads, resolved.
  std::vector<std::string> reads;
};

/// A name or attribute chain loaded in a scope, as written, and the body
/// statement it belongs to (NameScope::statement), or -1.
struct NameLoad {
  StringRef text;
  int statement;
  friend bool operator<(const NameLoad &a, const NameLoad &b) {
    return std::tie(a.text, a.statement) < std::tie(b.text, b.statement);
  }
  friend bool operator==(const NameLoad &a, const NameLoad &b) {
    return a.text == b.text && a.statement == b.statement;
  }
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
  /// Names and attribute chains loaded here.
  std::vector<NameLoad> loads{};
  /// The module or class scope whose body statements hold this scope's
  /// loads: itself for a body, the enclosing body for a comprehension or an
  /// unnamed lambda in it; -1 inside functions.
  int body = -1;
  /// The statement of that body being walked (a body scope), or the one
  /// this scope lies in; -1 outside every statement (a class's header).
  int statement = -1;
  /// A body scope's statements, in order.
  std::vector<BodyStatement> statements{};
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
  /// Records a load of \p name (as written) in the current scope.
  void load(StringRef name);
  /// Opens a statement of the current body scope when \p node is one.
  void enterBodyStatement(TSNode node, uint32_t depth);
  /// The flows of the body scope \p scope, its loads resolved.
  BodyFlows getBodyFlows(const NameScope &scope) const;
  /// Binds every name an assignment target pattern holds.
  void bindTargets(TSNode target, bool markStores = true, unsigned depth = 0);
  void bindParameters(TSNode parameters);
  void resolveNames();
  /// What \p load (a name or chain loaded in \p scope) names: the dotted
  /// module-level name, or nothing for a local or a builtin.
  std::optional<std::string> resolveLoad(const NameScope &scope,
                                         StringRef load) const;
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
} // namespace fastci::python::detail

#endif // FASTCI_LIB_PYTHON_ANALYZERINTERNAL_H
