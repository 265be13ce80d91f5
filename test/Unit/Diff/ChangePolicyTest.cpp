//===- ChangePolicyTest.cpp - Unit tests of change policies ---------------===//
//
// Checks first-match-wins rule order, the glob slash rule, extension lookup
// and that schema mistakes are reported at their position in the YAML.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ChangePolicy.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

struct ParsedPolicy {
  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  DiagnosticEngine diag{&errorStream};
  ChangePolicy policy;
  bool ok = false;

  explicit ParsedPolicy(llvm::StringRef text) {
    unsigned id = diag.addBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "policy.yaml"));
    ok = succeeded(ChangePolicy::parse(id, diag, policy));
  }
};

TEST(ChangePolicyTest, FirstMatchWins) {
  ParsedPolicy parsed(R"(
rules:
  - match: [setup.py, "requirements*.txt"]
    category: build
    action: all
  - match: "*.py"
    action: python
  - match: [docs/**, "*.md"]
    category: docs
    action: ignore
  - match: ["*.yaml"]
    category: config
    action: tests
    fallback-tags: [smoke]
extensions:
  - name: fused_adam
    sources: [csrc/adam/**]
    modules: [pkg.optim.adam]
)");
  ASSERT_TRUE(parsed.ok) << parsed.errors;
  const ChangePolicy &policy = parsed.policy;
  EXPECT_EQ(policy.match("setup.py")->category, "build");
  EXPECT_EQ(policy.match("pkg/setup.py")->category, "build");
  EXPECT_EQ(policy.match("pkg/m.py")->action, PolicyAction::Python);
  EXPECT_EQ(policy.match("pkg/m.py")->category, "python");
  EXPECT_EQ(policy.match("docs/a/b.png")->category, "docs");
  EXPECT_EQ(policy.match("README.md")->category, "docs");
  EXPECT_EQ(policy.match("requirements-dev.txt")->category, "build");
  EXPECT_EQ(policy.match("configs/gpt.yaml")->fallbackTags.front(), "smoke");
  EXPECT_EQ(policy.match("configs/gpt.yaml")->origin, "policy.yaml:11");
  EXPECT_EQ(policy.match("image.bin"), nullptr);
  ASSERT_EQ(policy.findExtensions("csrc/adam/k.cu").size(), 1u);
  EXPECT_TRUE(policy.findExtensions("csrc/other.cu").empty());
}

TEST(ChangePolicyTest, GlobSlashRule) {
  EXPECT_TRUE(matchPolicyGlob("*.md", "a/b/c.md"));
  EXPECT_FALSE(matchPolicyGlob("docs/*.md", "docs/a/c.md"));
  EXPECT_TRUE(matchPolicyGlob("docs/**", "docs/a/c.md"));
  EXPECT_TRUE(matchPolicyGlob("/Dockerfile", "Dockerfile"));
  EXPECT_FALSE(matchPolicyGlob("/Dockerfile", "x/Dockerfile"));
  EXPECT_TRUE(matchPolicyGlob(".github/workflows/**", ".github/workflows/ci.yml"));
}

struct BadPolicy {
  const char *text;
  const char *message;
};

TEST(ChangePolicyTest, BadPoliciesAreLocatedErrors) {
  const BadPolicy cases[] = {
      {"", "policy.yaml:1:1: error: the policy is empty"},
      {"- a\n", "policy.yaml:1:1: error: the policy must be a mapping"},
      {"rulez: []\n", "policy.yaml:1:1: error: unknown key 'rulez' in the "
                      "policy; expected 'rules' or 'extensions'"},
      {"rules: x\n", "policy.yaml:1:8: error: 'rules' must be a list"},
      {"rules: []\n", "error: the policy has no rules"},
      {"rules:\n  - match: a\n", "policy.yaml:2:5: error: rule has no 'action'"},
      {"rules:\n  - action: all\n",
       "policy.yaml:2:5: error: rule has no 'match' globs"},
      {"rules:\n  - {match: a, action: maybe}\n",
       "policy.yaml:2:24: error: unknown action 'maybe'"},
      {"rules:\n  - {match: a, action: all, action: all}\n",
       "policy.yaml:2:29: error: duplicate key 'action'\n"},
      {"rules:\n  - {match: a, action: all, fallback-tags: [x]}\n",
       "error: 'fallback-tags' only applies to rules with action 'tests'"},
      {"rules:\n  - {match: {a: b}, action: all}\n",
       "policy.yaml:2:14: error: expected a string or a list of strings"},
      {"rules:\n  - {match: [], action: all}\n",
       "error: expected a non-empty list"},
      {"rules:\n  - {match: a, action: all}\nextensions:\n  - {sources: a}\n",
       "policy.yaml:4:6: error: an extension needs 'sources' and 'modules'"},
      {"rules: [\n", "policy.yaml:"},
      {"rules:\n  - {match: a, action: all}\n---\nrules: []\n",
       "error: expected a single YAML document"},
      {"rules:\n\t- x\n", "policy.yaml:2:4: error: a rule must be a mapping"},
  };
  for (const BadPolicy &c : cases) {
    ParsedPolicy parsed(c.text);
    EXPECT_FALSE(parsed.ok) << c.text;
    EXPECT_NE(parsed.errors.find(c.message), std::string::npos)
        << "input:\n" << c.text << "\ngot:\n" << parsed.errors;
  }
}

} // namespace
