//===- AnalyzerNames.cpp - Names an entity loads; import-time tests -------===//
//
// Two things the walk records besides entities: the module-level names each
// function, class and module loads (the `names` attribute; scopes follow
// Python's, and roles are read from the walk's path rather than from field
// lookups), and calls in module or class code that create tests at import
// time (`globals()[...] =`, `setattr`, torch's instantiate functions).
//
//===----------------------------------------------------------------------===//
#include "AnalyzerInternal.h"
#include "fastci/Python/ModuleLevel.h"
#include <map>

using namespace fastci;
using namespace fastci::python;
using namespace fastci::python::detail;
using llvm::StringRef;

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
  int index = static_cast<int>(scopes.size());
  NameScope &scope = scopes.emplace_back(NameScope{kind, parent, owner, depth});
  if (kind != ScopeKind::Function) {
    // A body: statement 0 stands for what runs outside its statements (a
    // class's bases, keywords and decorators), which may act on anything.
    scope.body = index;
    scope.statement = 0;
    scope.statements.push_back(BodyStatement{/*effect=*/true, {}, {}});
  } else if (parent >= 0 && scopes[parent].owner == owner) {
    // A comprehension or unnamed lambda belongs to the statement around it.
    scope.body = scopes[parent].body;
    scope.statement = scopes[parent].statement;
  }
  openScopes.push_back(index);
}

void FileAnalyzer::load(StringRef name) {
  NameScope &scope = scopes[openScopes.back()];
  scope.loads.push_back({name, scope.body >= 0 ? scope.statement : -1});
}

void FileAnalyzer::enterBodyStatement(TSNode node, uint32_t depth) {
  int index = openScopes.back();
  NameScope &scope = scopes[index];
  if (scope.body != index || depth == 0 || !ts_node_is_named(node))
    return;
  // A module's statements sit at depth 1; a class's in the block of its
  // class_definition, which is the scope's node or, decorated, its child.
  bool inBody =
      scope.kind == ScopeKind::Module
          ? depth == 1
          : depth >= 3 && kindPath[depth - 1] == Kind::Block &&
                kindPath[depth - 2] == Kind::ClassDefinition &&
                (depth - 2 == scope.depth || depth - 3 == scope.depth);
  if (!inBody)
    return;
  ModuleLevelEdit edit;
  classifyStatement(source, node, edit);
  scope.statement = static_cast<int>(scope.statements.size());
  scope.statements.push_back(
      BodyStatement{edit.effect, std::move(edit.defines), {}});
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
        load(chain);
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
    load(text(node));
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
    StringRef last;
    std::optional<std::string> resolved;
    for (const NameLoad &loaded : scope.loads) {
      if (loaded.text != last || &loaded == scope.loads.data()) {
        last = loaded.text;
        resolved = resolveLoad(scope, loaded.text);
        if (resolved)
          byOwner[scope.owner + 1].push_back(*resolved);
      }
      if (resolved && scope.body >= 0 && loaded.statement >= 0)
        scopes[scope.body].statements[loaded.statement].reads.push_back(
            *resolved);
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
  for (const NameScope &scope : scopes) {
    if (&scope - scopes.data() != scope.body)
      continue;
    if (scope.kind == ScopeKind::Module)
      summary.moduleBody = getBodyFlows(scope);
    else if (scope.owner >= 0 &&
             static_cast<size_t>(scope.owner) < summary.entities.size())
      summary.entities[scope.owner].body = getBodyFlows(scope);
  }
}

std::optional<std::string> FileAnalyzer::resolveLoad(const NameScope &scope,
                                                     StringRef load) const {
  auto [head, rest] = load.split('.');
  auto withRest = [&](StringRef base) {
    return rest.empty() ? base.str() : (base + "." + rest).str();
  };
  // Python's lookup: the scope itself, enclosing function scopes (class
  // bodies are not visible from nested scopes), then the module.
  bool first = true;
  for (int at = &scope - scopes.data(); at > 0;
       at = scopes[at].parent, first = false) {
    const NameScope &candidate = scopes[at];
    if (candidate.kind == ScopeKind::Class && !first)
      continue;
    auto declared = candidate.declared.find(head);
    if (declared != candidate.declared.end() && declared->second)
      break; // `global`: the module's binding.
    // An import inside a function still names where the value lives.
    auto import = candidate.imports.find(head);
    if (import != candidate.imports.end())
      return withRest(import->second);
    if (candidate.bound.contains(head))
      return std::nullopt; // local
  }
  const NameScope &module = scopes[0];
  auto import = module.imports.find(head);
  if (import != module.imports.end())
    return withRest(import->second);
  if (module.bound.contains(head))
    return moduleName.empty() ? load.str() : (moduleName + "." + load).str();
  if (isBuiltinName(head))
    return std::nullopt;
  return load.str();
}

BodyFlows FileAnalyzer::getBodyFlows(const NameScope &scope) const {
  BodyFlows flows;
  std::map<std::string, std::vector<std::string>> byName;
  for (const BodyStatement &statement : scope.statements) {
    if (statement.effect) {
      llvm::append_range(flows.effectNames, statement.reads);
      continue;
    }
    for (const std::string &bound : statement.binds)
      if (bound != "*")
        llvm::append_range(byName[bound], statement.reads);
  }
  for (auto &[name, reads] : byName) {
    llvm::sort(reads);
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    if (!reads.empty())
      flows.flows.emplace_back(name, std::move(reads));
  }
  llvm::sort(flows.effectNames);
  flows.effectNames.erase(
      std::unique(flows.effectNames.begin(), flows.effectNames.end()),
      flows.effectNames.end());
  return flows;
}
