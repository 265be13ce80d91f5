//===- ModuleLevel.cpp - What a module-level edit does at import ----------===//
//
// The file is parsed with tree-sitter-python and the scope's statements are
// walked once; a statement counts when its lines (decorators included)
// overlap the changed ones. Compound statements (`if`, `try`, `with`,
// `for`, `while`) are definitions exactly when every statement inside them
// is: `try: import x` / `except ImportError: x = None` binds `x` and does
// nothing else, while a call anywhere in them is an effect. Their tests and
// headers are treated as predicates: `if is_torch_available():` runs the
// same (unchanged) function as before, so it is not an effect of the edit.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/ModuleLevel.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <cstring>
#include <memory>
#include <tree_sitter/api.h>

extern "C" const TSLanguage *tree_sitter_python(void);

using namespace fastci;
using llvm::StringRef;

void ModuleLevelEdit::finish() {
  for (std::vector<std::string> *names : {&defines, &imports}) {
    llvm::sort(*names);
    names->erase(std::unique(names->begin(), names->end()), names->end());
  }
}

bool fastci::isPureDecorator(StringRef name) {
  // Strip the module path of the well-known spellings (`functools.wraps`,
  // `torch.no_grad`): the last component names the decorator.
  StringRef last =
      name.rsplit('.').second.empty() ? name : name.rsplit('.').second;
  if (name.starts_with("pytest.") || name.starts_with("typing.") ||
      name.starts_with("abc.") || name.starts_with("functools.") ||
      name.starts_with("unittest.") || name.starts_with("contextlib."))
    return true;
  return llvm::StringSwitch<bool>(last)
      .Cases("property", "staticmethod", "classmethod", "setter", "getter",
             "deleter", "cached_property", true)
      .Cases("abstractmethod", "abstractproperty", "overload", "final",
             "override", true)
      .Cases("wraps", "lru_cache", "cache", "total_ordering", "singledispatch",
             "singledispatchmethod", true)
      .Cases("contextmanager", "asynccontextmanager", "dataclass", "no_grad",
             "inference_mode", "enable_grad", true)
      .Cases("fixture", "skip", "skipIf", "skipUnless", "expectedFailure", true)
      .Cases("unique", "runtime_checkable", "no_type_check", "deprecated", true)
      .Default(false);
}

namespace {

struct TreeDeleter {
  void operator()(TSTree *tree) const { ts_tree_delete(tree); }
};
struct ParserDeleter {
  void operator()(TSParser *parser) const { ts_parser_delete(parser); }
};

class Classifier {
public:
  Classifier(StringRef source, llvm::ArrayRef<uint32_t> lines,
             ModuleLevelEdit &edit)
      : source(source), lines(lines), edit(edit) {}

  void run(StringRef qualName);
  /// Classifies \p node whole, whatever the changed lines.
  void classify(TSNode node) { statement(node); }

private:
  StringRef type(TSNode node) const { return ts_node_type(node); }
  StringRef text(TSNode node) const {
    uint32_t begin = ts_node_start_byte(node), end = ts_node_end_byte(node);
    return source.slice(begin, end);
  }
  uint32_t firstLine(TSNode node) const {
    return ts_node_start_point(node).row + 1;
  }
  uint32_t lastLine(TSNode node) const {
    TSPoint end = ts_node_end_point(node);
    // A node ending at column 0 ends on the previous line (its newline).
    return end.column == 0 && end.row > 0 ? end.row : end.row + 1;
  }
  bool overlaps(TSNode node) const {
    uint32_t first = firstLine(node), last = lastLine(node);
    auto it = llvm::lower_bound(lines, first);
    return it != lines.end() && *it <= last;
  }
  TSNode field(TSNode node, const char *name) const {
    return ts_node_child_by_field_name(node, name, std::strlen(name));
  }
  template <typename Fn> void forEachNamedChild(TSNode node, Fn fn) const {
    uint32_t count = ts_node_named_child_count(node);
    for (uint32_t i = 0; i < count; ++i)
      fn(ts_node_named_child(node, i));
  }

  void effect(TSNode node) {
    if (!edit.effect) {
      edit.effect = true;
      StringRef first = text(node).split('\n').first.trim();
      edit.effectStatement =
          llvm::formatv("line {0}: {1}", firstLine(node), first.take_front(80))
              .str();
    }
  }
  void define(StringRef name) { edit.defines.push_back(name.str()); }

  void statement(TSNode node);
  void block(TSNode node);
  void assignment(TSNode statement, TSNode node);
  bool bindTarget(TSNode target);
  void importNames(TSNode node);
  void definition(TSNode node, llvm::ArrayRef<TSNode> decorators);

  StringRef source;
  llvm::ArrayRef<uint32_t> lines;
  ModuleLevelEdit &edit;
};

} // namespace

bool Classifier::bindTarget(TSNode target) {
  StringRef kind = type(target);
  if (kind == "identifier") {
    define(text(target));
    return true;
  }
  if (kind == "pattern_list" || kind == "tuple_pattern" ||
      kind == "list_pattern" || kind == "expression_list" || kind == "tuple" ||
      kind == "list" || kind == "list_splat_pattern" ||
      kind == "parenthesized_expression") {
    bool ok = true;
    forEachNamedChild(target, [&](TSNode child) { ok &= bindTarget(child); });
    return ok;
  }
  // `obj.attr = v`, `table[k] = v`: another object changes.
  return false;
}

void Classifier::assignment(TSNode statement, TSNode node) {
  TSNode left = field(node, "left");
  if (ts_node_is_null(left) || !bindTarget(left))
    return effect(statement);
  // The right-hand side may call anything (`logger = get_logger(...)`,
  // `DEFAULTS = env("X", 1)`): what the statement does is bind the result.
  // Functions called there are assumed to act through their return value;
  // a change to their body is caught as import-time code of its own.
  TSNode right = field(node, "right");
  if (!ts_node_is_null(right) &&
      (type(right) == "assignment" || type(right) == "augmented_assignment"))
    assignment(statement, right);
}

void Classifier::importNames(TSNode node) {
  StringRef kind = type(node);
  if (kind == "future_import_statement")
    return;
  bool isFrom = kind == "import_from_statement";
  TSNode moduleName = isFrom ? field(node, "module_name") : TSNode{};
  std::string from;
  if (isFrom && !ts_node_is_null(moduleName)) {
    from = text(moduleName).str();
    llvm::erase_if(from, [](char c) { return c == ' ' || c == '\n'; });
    edit.imports.push_back(from);
  }
  auto imported = [&](StringRef name) {
    if (!isFrom)
      return edit.imports.push_back(name.str());
    edit.imports.push_back(from.empty() || from.back() == '.'
                               ? from + name.str()
                               : from + "." + name.str());
  };
  uint32_t count = ts_node_named_child_count(node);
  for (uint32_t i = 0; i < count; ++i) {
    TSNode child = ts_node_named_child(node, i);
    if (isFrom && ts_node_eq(child, moduleName))
      continue;
    StringRef childKind = type(child);
    if (childKind == "wildcard_import") {
      define("*");
    } else if (childKind == "aliased_import") {
      TSNode alias = field(child, "alias");
      if (!ts_node_is_null(alias))
        define(text(alias));
      if (TSNode name = field(child, "name"); !ts_node_is_null(name))
        imported(text(name));
    } else if (childKind == "dotted_name") {
      // `import a.b` binds `a`; `from m import x` binds `x`.
      StringRef name = text(child);
      define(isFrom ? name : name.split('.').first);
      imported(name);
    }
  }
}

void Classifier::definition(TSNode node, llvm::ArrayRef<TSNode> decorators) {
  TSNode name = field(node, "name");
  if (!ts_node_is_null(name))
    define(text(name));
  for (TSNode decorator : decorators) {
    // `@name`, `@name(args)`: the expression after `@`.
    TSNode expression = ts_node_named_child(decorator, 0);
    if (!ts_node_is_null(expression) && type(expression) == "call")
      expression = field(expression, "function");
    std::string dotted;
    if (!ts_node_is_null(expression)) {
      StringRef written = text(expression);
      dotted = written.str();
      llvm::erase_if(dotted, [](char c) { return c == ' ' || c == '\n'; });
    }
    if (dotted.empty() || !isPureDecorator(dotted))
      return effect(decorator);
  }
}

void Classifier::block(TSNode node) {
  forEachNamedChild(node, [&](TSNode child) {
    if (overlaps(child))
      statement(child);
  });
}

void Classifier::statement(TSNode node) {
  StringRef kind = type(node);
  if (kind == "comment")
    return;
  edit.found = true;
  if (kind == "import_statement" || kind == "import_from_statement" ||
      kind == "future_import_statement")
    return importNames(node);
  edit.onlyImports = false;
  if (kind == "pass_statement" || kind == "global_statement" ||
      kind == "nonlocal_statement")
    return;
  if (kind == "function_definition" || kind == "class_definition")
    return definition(node, {});
  if (kind == "decorated_definition") {
    llvm::SmallVector<TSNode, 4> decorators;
    forEachNamedChild(node, [&](TSNode child) {
      if (type(child) == "decorator")
        decorators.push_back(child);
    });
    TSNode inner = field(node, "definition");
    if (ts_node_is_null(inner))
      return effect(node);
    return definition(inner, decorators);
  }
  if (kind == "delete_statement") {
    bool ok = true;
    forEachNamedChild(node, [&](TSNode child) { ok &= bindTarget(child); });
    if (!ok)
      effect(node);
    return;
  }
  if (kind == "type_alias_statement") {
    TSNode left = field(node, "left");
    if (!ts_node_is_null(left))
      define(text(left).split('[').first.trim());
    return;
  }
  if (kind == "expression_statement") {
    forEachNamedChild(node, [&](TSNode child) {
      StringRef childKind = type(child);
      if (childKind == "assignment")
        return assignment(node, child);
      if (childKind == "augmented_assignment") {
        TSNode left = field(child, "left");
        if (ts_node_is_null(left) || type(left) != "identifier")
          return effect(node);
        return define(text(left));
      }
      // A docstring or another literal does nothing; a name or attribute
      // read alone can only raise.
      if (childKind == "string" || childKind == "concatenated_string" ||
          childKind == "ellipsis" || childKind == "integer" ||
          childKind == "identifier")
        return;
      effect(node);
    });
    return;
  }
  if (kind == "if_statement" || kind == "try_statement" ||
      kind == "with_statement" || kind == "for_statement" ||
      kind == "while_statement" || kind == "elif_clause" ||
      kind == "else_clause" || kind == "except_clause" ||
      kind == "finally_clause" || kind == "except_group_clause") {
    // A loop binds its target; its body and every clause are walked whole,
    // since a changed header alters which of them run.
    if (kind == "for_statement") {
      TSNode left = field(node, "left");
      if (!ts_node_is_null(left) && !bindTarget(left))
        return effect(node);
    }
    forEachNamedChild(node, [&](TSNode child) {
      StringRef childKind = type(child);
      if (childKind == "block") {
        forEachNamedChild(child, [&](TSNode inner) { statement(inner); });
      } else if (childKind.ends_with("_clause")) {
        statement(child);
      } else if (childKind == "as_pattern" || childKind == "with_clause") {
        // `except E as e`, `with open(p) as f`: the bound names.
        std::vector<TSNode> stack{child};
        while (!stack.empty()) {
          TSNode at = stack.back();
          stack.pop_back();
          if (type(at) == "as_pattern_target") {
            forEachNamedChild(at, [&](TSNode target) { bindTarget(target); });
            continue;
          }
          forEachNamedChild(at, [&](TSNode inner) { stack.push_back(inner); });
        }
      }
    });
    return;
  }
  // assert, raise, return, match, print, exec, ERROR, ...: unknown effects.
  effect(node);
}

void Classifier::run(StringRef qualName) {
  std::unique_ptr<TSParser, ParserDeleter> parser(ts_parser_new());
  ts_parser_set_language(parser.get(), tree_sitter_python());
  ts_parser_set_timeout_micros(parser.get(), 10'000'000);
  std::unique_ptr<TSTree, TreeDeleter> tree(ts_parser_parse_string(
      parser.get(), nullptr, source.data(), uint32_t(source.size())));
  if (!tree) {
    edit.found = true;
    edit.effect = true;
    edit.effectStatement = "the file could not be parsed";
    return;
  }
  TSNode scope = ts_tree_root_node(tree.get());
  if (qualName.empty())
    return block(scope);

  // Descend to the class `A.B` through class definitions (decorated or
  // not) directly in each scope's body.
  llvm::SmallVector<StringRef, 4> parts;
  qualName.split(parts, '.');
  TSNode outer = scope; // The statement holding the class, decorators included.
  for (StringRef part : parts) {
    TSNode body = type(scope) == "module" ? scope : field(scope, "body");
    TSNode found{};
    bool have = false;
    if (!ts_node_is_null(body))
      forEachNamedChild(body, [&](TSNode child) {
        TSNode definition = child;
        if (type(child) == "decorated_definition")
          definition = field(child, "definition");
        if (have || ts_node_is_null(definition) ||
            type(definition) != "class_definition")
          return;
        TSNode name = field(definition, "name");
        if (!ts_node_is_null(name) && text(name) == part) {
          found = definition;
          outer = child;
          have = true;
        }
      });
    if (!have) {
      edit.found = true;
      edit.effect = true;
      edit.effectStatement = ("class '" + qualName + "' not found").str();
      return;
    }
    scope = found;
  }
  // The header (`class A(Base):`) and decorators belong to the class itself:
  // they bind its name, and decorators may register it.
  TSNode body = field(scope, "body");
  uint32_t bodyStart =
      ts_node_is_null(body) ? lastLine(scope) + 1 : firstLine(body);
  bool headerTouched = llvm::any_of(lines, [&](uint32_t line) {
    return line >= firstLine(outer) && line < bodyStart;
  });
  if (headerTouched) {
    edit.found = true;
    llvm::SmallVector<TSNode, 4> decorators;
    if (type(outer) == "decorated_definition")
      forEachNamedChild(outer, [&](TSNode child) {
        if (type(child) == "decorator")
          decorators.push_back(child);
      });
    definition(scope, decorators);
  }
  if (!ts_node_is_null(body))
    block(body);
}

void fastci::classifyModuleLevel(StringRef source, StringRef qualName,
                                 llvm::ArrayRef<uint32_t> lines,
                                 ModuleLevelEdit &edit) {
  if (lines.empty())
    return;
  std::vector<uint32_t> sorted(lines.begin(), lines.end());
  llvm::sort(sorted);
  Classifier(source, sorted, edit).run(qualName);
}

void fastci::classifyStatement(StringRef source, const TSNode &statement,
                               ModuleLevelEdit &edit) {
  Classifier(source, {}, edit).classify(statement);
}
