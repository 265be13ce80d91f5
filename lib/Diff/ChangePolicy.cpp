//===- ChangePolicy.cpp - What a changed non-Python file means ------------===//
//
// Reads policy files through FastCI's located YAML reader (Support/YAML.h),
// which already rejects invalid UTF-8, duplicate keys, deep nesting and alias
// bombs, so every mistake in a policy prints as
// `policy.yaml:line:col: error: ...`. Unknown keys are errors rather than
// ignored, because a misspelt key in a policy silently changes which tests
// run.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangePolicy.h"
#include "fastci/Python/GitIgnore.h"
#include "fastci/Support/YAML.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fastci;

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
  case PolicyAction::DirectoryTests:
    return "directory";
  case PolicyAction::Dependencies:
    return "dependencies";
  case PolicyAction::Scripts:
    return "scripts";
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
  return python::matchGlob(
      glob, path.rsplit('/').second.empty() ? path : path.rsplit('/').second);
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
      : diag(diag), policy(policy) {}

  LogicalResult parseDocument(const YAMLNode &root);

private:
  LogicalResult parseRule(const YAMLNode &node);
  LogicalResult parseExtension(const YAMLNode &node);
  /// Calls \p fn on each key/value of \p node after checking that its keys
  /// are all in \p allowed and have values.
  LogicalResult forEachKey(
      const YAMLNode &node, llvm::StringRef what,
      llvm::ArrayRef<llvm::StringRef> allowed,
      llvm::function_ref<LogicalResult(const YAMLNode &, const YAMLNode &)> fn);
  LogicalResult parseString(const YAMLNode &node, std::string &value);
  LogicalResult parseStringList(const YAMLNode &node,
                                std::vector<std::string> &values);
  LogicalResult emitError(const YAMLNode &node, const llvm::Twine &message) {
    diag.error(node.loc, message);
    return failure();
  }

  DiagnosticEngine &diag;
  ChangePolicy &policy;
};

} // namespace fastci

LogicalResult PolicyParser::forEachKey(
    const YAMLNode &node, llvm::StringRef what,
    llvm::ArrayRef<llvm::StringRef> allowed,
    llvm::function_ref<LogicalResult(const YAMLNode &, const YAMLNode &)> fn) {
  if (failed(checkMappingKeys(node, allowed, what, diag)))
    return failure();
  for (const auto &[key, value] : node.entries) {
    if (value.isNull())
      return emitError(key, "key '" + key.scalar + "' has no value");
    if (failed(fn(key, value)))
      return failure();
  }
  return success();
}

LogicalResult PolicyParser::parseString(const YAMLNode &node,
                                        std::string &value) {
  if (!node.isScalar())
    return emitError(node, "expected a string");
  value = node.scalar;
  return success();
}

LogicalResult PolicyParser::parseStringList(const YAMLNode &node,
                                            std::vector<std::string> &values) {
  if (node.isScalar())
    return parseString(node, values.emplace_back());
  if (!node.isSequence())
    return emitError(node, "expected a string or a list of strings");
  for (const YAMLNode &element : node.elements) {
    if (failed(parseString(element, values.emplace_back())))
      return failure();
    if (values.back().empty())
      return emitError(element, "empty string in a list");
  }
  if (values.empty())
    return emitError(node, "expected a non-empty list");
  return success();
}

LogicalResult PolicyParser::parseDocument(const YAMLNode &root) {
  if (failed(forEachKey(root, "the policy", {"rules", "extensions"},
                        [&](const YAMLNode &key, const YAMLNode &value) {
                          if (!value.isSequence())
                            return emitError(value, "'" + key.scalar +
                                                        "' must be a list");
                          bool isRules = key.scalar == "rules";
                          for (const YAMLNode &element : value.elements)
                            if (failed(isRules ? parseRule(element)
                                               : parseExtension(element)))
                              return failure();
                          return success();
                        })))
    return failure();
  if (policy.rules.empty())
    return emitError(root, "the policy has no rules");
  return success();
}

LogicalResult PolicyParser::parseRule(const YAMLNode &node) {
  PolicyRule rule;
  auto [line, column] = diag.getLineAndColumn(node.loc);
  rule.origin = (policy.name + ":" + llvm::Twine(line)).str();
  bool sawAction = false;
  const YAMLNode *fallbackKey = nullptr, *sectionsKey = nullptr;
  if (failed(forEachKey(
          node, "a rule",
          {"match", "category", "action", "fallback-tags", "ignore-sections"},
          [&](const YAMLNode &key, const YAMLNode &value) {
            if (key.scalar == "match") {
              if (failed(parseStringList(value, rule.globs)))
                return failure();
              for (const std::string &glob : rule.globs)
                if (glob.empty() || glob == "/")
                  return emitError(value, "empty glob");
              return success();
            }
            if (key.scalar == "category")
              return parseString(value, rule.category);
            if (key.scalar == "fallback-tags") {
              fallbackKey = &key;
              return parseStringList(value, rule.fallbackTags);
            }
            if (key.scalar == "ignore-sections") {
              sectionsKey = &key;
              if (failed(parseStringList(value, rule.ignoreSections)))
                return failure();
              for (llvm::StringRef pattern : rule.ignoreSections) {
                pattern.consume_front("+");
                if (pattern.empty())
                  return emitError(value, "empty section pattern");
                llvm::Expected<llvm::GlobPattern> glob =
                    llvm::GlobPattern::create(pattern);
                if (!glob)
                  return emitError(
                      value, "bad section pattern '" + pattern +
                                 "': " + llvm::toString(glob.takeError()));
              }
              return success();
            }
            std::string action;
            if (failed(parseString(value, action)))
              return failure();
            static constexpr PolicyAction kActions[] = {
                PolicyAction::Ignore,
                PolicyAction::Python,
                PolicyAction::ReferencingTests,
                PolicyAction::Extension,
                PolicyAction::All,
                PolicyAction::DirectoryTests,
                PolicyAction::Dependencies,
                PolicyAction::Scripts};
            for (PolicyAction candidate : kActions)
              if (action == stringifyPolicyAction(candidate)) {
                rule.action = candidate;
                sawAction = true;
                return success();
              }
            return emitError(value, "unknown action '" + action +
                                        "'; expected 'ignore', 'python', "
                                        "'tests', 'extension', 'all', "
                                        "'directory', 'dependencies' or "
                                        "'scripts'");
          })))
    return failure();
  if (rule.globs.empty())
    return emitError(node, "rule has no 'match' globs");
  if (!sawAction)
    return emitError(node, "rule has no 'action'");
  if (rule.category.empty())
    rule.category = stringifyPolicyAction(rule.action).str();
  if (fallbackKey && rule.action != PolicyAction::ReferencingTests)
    return emitError(*fallbackKey,
                     "'fallback-tags' only applies to rules with action "
                     "'tests'");
  if (sectionsKey && rule.action != PolicyAction::All)
    return emitError(*sectionsKey,
                     "'ignore-sections' only applies to rules with action "
                     "'all'");
  policy.rules.push_back(std::move(rule));
  return success();
}

LogicalResult PolicyParser::parseExtension(const YAMLNode &node) {
  ExtensionDecl ext;
  if (failed(forEachKey(node, "an extension", {"name", "sources", "modules"},
                        [&](const YAMLNode &key, const YAMLNode &value) {
                          if (key.scalar == "name")
                            return parseString(value, ext.name);
                          return parseStringList(value, key.scalar == "sources"
                                                            ? ext.sources
                                                            : ext.modules);
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
  std::optional<YAMLNode> root = parseYAML(bufferId, diag);
  if (!root)
    return failure();
  if (root->isNull()) {
    diag.error(llvm::SMLoc::getFromPointer(buffer->getBufferStart()),
               "the policy is empty");
    return failure();
  }
  return PolicyParser(diag, policy).parseDocument(*root);
}
