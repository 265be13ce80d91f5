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
// The analyzer's state is declared in AnalyzerInternal.h; the names an
// entity loads and import-time test registration are in AnalyzerNames.cpp,
// literal evaluation in AnalyzerLiterals.cpp.
//
//===----------------------------------------------------------------------===//
#include "AnalyzerInternal.h"
#include "fastci/Python/ModuleLevel.h"

using namespace fastci;
using namespace fastci::python;
using namespace fastci::python::detail;
using llvm::StringRef;

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
  enterBodyStatement(node, depth);
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
    size_t begin = parentTokens.size();
    // Split literals: "\x01class" would read as the escape \x01c.
    parentTokens += kind == EntityKind::Class ? "\x01" "class " : "\x01" "def ";
    parentTokens += name;
    parentTokens.push_back('\0');
    if (frames.back().scope == ScopeKind::Module &&
        llvm::all_of(entity.decorators,
                     [](StringRef name) { return isPureDecorator(name); }))
      frames.back().bindingOnlyMembers.emplace_back(begin, parentTokens.size());
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
  if (frame.entity == kModuleScope) {
    summary.moduleHash = summary.moduleStatementsHash = hash;
    if (!frame.bindingOnlyMembers.empty()) {
      std::string statements;
      size_t at = 0;
      for (auto [begin, end] : frame.bindingOnlyMembers) {
        statements.append(frame.tokens, at, begin - at);
        at = end;
      }
      statements.append(frame.tokens, at);
      summary.moduleStatementsHash = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(statements.data()),
          statements.size()));
    }
  } else
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
