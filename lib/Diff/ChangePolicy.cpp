//===- ChangePolicy.cpp - What a changed non-Python file means ------------===//
//
// Reads policy files with LLVM's own YAML parser. The scanner's errors and
// the schema's errors both point into the buffer the DiagnosticEngine owns,
// so every mistake in a policy prints as `policy.yaml:line:col: error: ...`.
// Unknown keys are errors rather than ignored, because a misspelt key in a
// policy silently changes which tests run.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangePolicy.h"
#include "fastci/Python/GitIgnore.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

using namespace fastci;
namespace yaml = llvm::yaml;

llvm::StringRef fastci::stringifyPolicyAction(PolicyAction action) {
  switch (action) {
  case PolicyAction::Ignore:
    return "ignore";
  case PolicyAction::Python:
    return "python";
  case PolicyAction::ReferencingTests:
    return "tests";
  case PolicyAction::Extension:
    return "extension";
  case PolicyAction::All:
    return "all";
  }
  return "all";
}

llvm::StringRef fastci::getDefaultChangePolicyText() {
  static const char text[] =
#include "DefaultPolicy.inc"
      ;
  return llvm::StringRef(text, sizeof(text) - 1);
}

bool fastci::matchPolicyGlob(llvm::StringRef glob, llvm::StringRef path) {
  if (glob.consume_front("/") || glob.contains('/'))
    return python::matchGlob(glob, path);
  return python::matchGlob(glob, path.rsplit('/').second.empty()
                                     ? path
                                     : path.rsplit('/').second);
}

const PolicyRule *ChangePolicy::match(llvm::StringRef path) const {
  for (const PolicyRule &rule : rules)
    for (const std::string &glob : rule.globs)
      if (matchPolicyGlob(glob, path))
        return &rule;
  return nullptr;
}

std::vector<const ExtensionDecl *>
ChangePolicy::findExtensions(llvm::StringRef path) const {
  std::vector<const ExtensionDecl *> found;
  for (const ExtensionDecl &ext : extensions)
    if (llvm::any_of(ext.sources, [&](const std::string &glob) {
          return matchPolicyGlob(glob, path);
        }))
      found.push_back(&ext);
  return found;
}

namespace fastci {

/// Walks the YAML document of a policy, checking it against the schema.
class PolicyParser {
public:
  PolicyParser(DiagnosticEngine &diag, ChangePolicy &policy)
      : diag(diag), policy(policy), errorsAtStart(diag.getNumErrors()) {}

  LogicalResult parseDocument(yaml::Node *root);

private:
  LogicalResult parseRule(yaml::Node *node);
  LogicalResult parseExtension(yaml::Node *node);
  /// Calls \p fn on each key/value of \p node, rejecting duplicate keys and
  /// keys not in \p allowed.
  LogicalResult
  forEachKey(yaml::Node *node, llvm::StringRef what,
             llvm::ArrayRef<llvm::StringRef> allowed,
             llvm::function_ref<LogicalResult(llvm::StringRef, yaml::Node *,
                                              yaml::Node *)>
                 fn);
  LogicalResult parseString(yaml::Node *node, std::string &value);
  LogicalResult parseStringList(yaml::Node *node,
                                std::vector<std::string> &values);
  LogicalResult emitError(yaml::Node *node, const llvm::Twine &message) {
    diag.error(node->getSourceRange().Start, message);
    return failure();
  }

  DiagnosticEngine &diag;
  ChangePolicy &policy;
  unsigned errorsAtStart;
};

} // namespace fastci

/// `'a', 'b' or 'c'`, for messages listing what was expected.
static std::string formatChoices(llvm::ArrayRef<llvm::StringRef> choices) {
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i)
      text += i + 1 == choices.size() ? " or " : ", ";
    text += "'" + choices[i].str() + "'";
  }
  return text;
}

LogicalResult PolicyParser::forEachKey(
    yaml::Node *node, llvm::StringRef what,
    llvm::ArrayRef<llvm::StringRef> allowed,
    llvm::function_ref<LogicalResult(llvm::StringRef, yaml::Node *,
                                      yaml::Node *)>
        fn) {
  auto *map = llvm::dyn_cast<yaml::MappingNode>(node);
  if (!map)
    return emitError(node, what + " must be a mapping");
  llvm::StringSet<> seen;
  for (yaml::KeyValueNode &entry : *map) {
    yaml::Node *keyNode = entry.getKey();
    if (!keyNode)
      return failure();
    std::string key;
    if (failed(parseString(keyNode, key)))
      return failure();
    if (!llvm::is_contained(allowed, key))
      return emitError(keyNode, "unknown key '" + key + "' in " + what +
                                    "; expected " + formatChoices(allowed));
    if (!seen.insert(key).second)
      return emitError(keyNode, "duplicate key '" + key + "' in " + what);
    yaml::Node *value = entry.getValue();
    if (!value || llvm::isa<yaml::NullNode>(value))
      return emitError(keyNode, "key '" + key + "' has no value");
    if (failed(fn(key, keyNode, value)))
      return failure();
  }
  return success();
}

LogicalResult PolicyParser::parseString(yaml::Node *node, std::string &value) {
  if (auto *scalar = llvm::dyn_cast<yaml::ScalarNode>(node)) {
    llvm::SmallString<64> storage;
    value = scalar->getValue(storage).str();
    return success();
  }
  if (auto *block = llvm::dyn_cast<yaml::BlockScalarNode>(node)) {
    value = block->getValue().str();
    return success();
  }
  return emitError(node, "expected a string");
}

LogicalResult PolicyParser::parseStringList(yaml::Node *node,
                                            std::vector<std::string> &values) {
  auto *list = llvm::dyn_cast<yaml::SequenceNode>(node);
  if (!list) {
    if (!llvm::isa<yaml::ScalarNode>(node))
      return emitError(node, "expected a string or a list of strings");
    return parseString(node, values.emplace_back());
  }
  for (yaml::Node &element : *list) {
    if (llvm::isa<yaml::NullNode>(&element))
      return emitError(&element, "expected a string");
    if (failed(parseString(&element, values.emplace_back())))
      return failure();
    if (values.back().empty())
      return emitError(&element, "empty string in a list");
  }
  if (values.empty())
    return emitError(node, "expected a non-empty list");
  return success();
}

LogicalResult PolicyParser::parseDocument(yaml::Node *root) {
  bool sawRules = false;
  if (failed(forEachKey(
          root, "the policy", {"rules", "extensions"},
          [&](llvm::StringRef key, yaml::Node *, yaml::Node *value) {
            auto *list = llvm::dyn_cast<yaml::SequenceNode>(value);
            if (!list)
              return emitError(value, "'" + key + "' must be a list");
            bool isRules = key == "rules";
            sawRules |= isRules;
            for (yaml::Node &element : *list)
              if (failed(isRules ? parseRule(&element)
                                 : parseExtension(&element)))
                return failure();
            return success();
          })))
    return failure();
  // A scanner error ends the document early; "no rules" would only echo it.
  if (diag.getNumErrors() != errorsAtStart)
    return failure();
  if (!sawRules || policy.rules.empty())
    return emitError(root, "the policy has no rules");
  return success();
}

LogicalResult PolicyParser::parseRule(yaml::Node *node) {
  PolicyRule rule;
  auto [line, column] = diag.getLineAndColumn(node->getSourceRange().Start);
  rule.origin = (policy.name + ":" + llvm::Twine(line)).str();
  bool sawAction = false;
  yaml::Node *fallbackKey = nullptr;
  if (failed(forEachKey(
          node, "a rule", {"match", "category", "action", "fallback-tags"},
          [&](llvm::StringRef key, yaml::Node *keyNode, yaml::Node *value) {
            if (key == "match") {
              if (failed(parseStringList(value, rule.globs)))
                return failure();
              for (const std::string &glob : rule.globs)
                if (glob.empty() || glob == "/")
                  return emitError(value, "empty glob");
              return success();
            }
            if (key == "category")
              return parseString(value, rule.category);
            if (key == "fallback-tags") {
              fallbackKey = keyNode;
              return parseStringList(value, rule.fallbackTags);
            }
            std::string action;
            if (failed(parseString(value, action)))
              return failure();
            static constexpr PolicyAction kActions[] = {
                PolicyAction::Ignore, PolicyAction::Python,
                PolicyAction::ReferencingTests, PolicyAction::Extension,
                PolicyAction::All};
            for (PolicyAction candidate : kActions)
              if (action == stringifyPolicyAction(candidate)) {
                rule.action = candidate;
                sawAction = true;
                return success();
              }
            return emitError(value, "unknown action '" + action +
                                        "'; expected 'ignore', 'python', "
                                        "'tests', 'extension' or 'all'");
          })))
    return failure();
  if (rule.globs.empty())
    return emitError(node, "rule has no 'match' globs");
  if (!sawAction)
    return emitError(node, "rule has no 'action'");
  if (rule.category.empty())
    rule.category = stringifyPolicyAction(rule.action).str();
  if (fallbackKey && rule.action != PolicyAction::ReferencingTests)
    return emitError(fallbackKey,
                     "'fallback-tags' only applies to rules with action "
                     "'tests'");
  policy.rules.push_back(std::move(rule));
  return success();
}

LogicalResult PolicyParser::parseExtension(yaml::Node *node) {
  ExtensionDecl ext;
  if (failed(forEachKey(
          node, "an extension", {"name", "sources", "modules"},
          [&](llvm::StringRef key, yaml::Node *, yaml::Node *value) {
            if (key == "name")
              return parseString(value, ext.name);
            return parseStringList(value,
                                   key == "sources" ? ext.sources : ext.modules);
          })))
    return failure();
  if (ext.sources.empty() || ext.modules.empty())
    return emitError(node, "an extension needs 'sources' and 'modules'");
  if (ext.name.empty())
    ext.name = ext.modules.front();
  policy.extensions.push_back(std::move(ext));
  return success();
}

LogicalResult ChangePolicy::parse(unsigned bufferId, DiagnosticEngine &diag,
                                  ChangePolicy &policy) {
  const llvm::MemoryBuffer *buffer =
      diag.getSourceMgr().getMemoryBuffer(bufferId);
  policy = ChangePolicy();
  policy.name = buffer->getBufferIdentifier().str();

  // The scanner reports through a SourceMgr of its own; forward its
  // messages to the engine, whose SourceMgr owns the same bytes.
  llvm::SourceMgr yamlSourceMgr;
  yamlSourceMgr.setDiagHandler(
      [](const llvm::SMDiagnostic &smDiag, void *context) {
        static_cast<DiagnosticEngine *>(context)->error(smDiag.getLoc(),
                                                        smDiag.getMessage());
      },
      &diag);
  unsigned errorsBefore = diag.getNumErrors();
  yaml::Stream stream(buffer->getMemBufferRef(), yamlSourceMgr);
  PolicyParser parser(diag, policy);
  yaml::document_iterator doc = stream.begin();
  if (doc == stream.end() || !doc->getRoot()) {
    if (diag.getNumErrors() == errorsBefore)
      diag.emit(Severity::Error, policy.name, 1, 1, "the policy is empty");
    return failure();
  }
  yaml::Node *root = doc->getRoot();
  if (llvm::isa<yaml::NullNode>(root)) {
    if (diag.getNumErrors() == errorsBefore)
      diag.error(llvm::SMLoc::getFromPointer(buffer->getBufferStart()),
                 "the policy is empty");
    return failure();
  }
  if (failed(parser.parseDocument(root)))
    return failure();
  // Finish scanning so that trailing garbage and extra documents are caught.
  if (++doc != stream.end() && !stream.failed()) {
    yaml::Node *extra = doc->getRoot();
    if (extra && !llvm::isa<yaml::NullNode>(extra)) {
      diag.error(extra->getSourceRange().Start,
                 "a policy is a single YAML document");
      return failure();
    }
  }
  return failure(stream.failed() || diag.getNumErrors() != errorsBefore);
}
