//===- ConfigSignature.cpp - The configuration a test validates -----------===//
//
// Signatures are plain strings so that they can be compared, hashed and
// printed in witnesses without a second representation.
//
//===----------------------------------------------------------------------===//
#include "fastci/Select/ConfigSignature.h"
#include "fastci/Select/ChangeSet.h"
#include "fastci/Workload/Lowering.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace fastci;

ConfigSignatureBuilder::ConfigSignatureBuilder(WorkloadSchema schema)
    : schema(std::move(schema)) {}

/// True for the roles that change what code does rather than how much of it
/// runs.
static bool isBehaviourChanging(DimensionRole role) {
  return role == DimensionRole::Parallel || role == DimensionRole::Precision;
}

void ConfigSignatureBuilder::appendDialect(const Dialect &dialect,
                                           const Test &test,
                                           std::string &out) const {
  for (const Dimension &dim : dialect.dimensions) {
    // Derived dimensions (dp = world / (tp x pp x cp)) are functions of the
    // others, and the process count is recorded once below.
    if (!isBehaviourChanging(dim.role) || dim.flag.empty())
      continue;
    std::string value;
    if (const Attribute *attr = test.workload.lookup(dim.flag))
      value = attr->str();
    else if (dim.defaultValue)
      value = std::to_string(*dim.defaultValue);
    else
      value = "unset";
    // A flag given without a value (`--bf16`) is stored as `true`; the
    // default of such a switch is 0.
    if (value == "true")
      value = "1";
    else if (value == "false")
      value = "0";
    out += dialect.name + "." + dim.name + "=" + value + ";";
  }
}

std::string ConfigSignatureBuilder::getSignature(const Test &test) const {
  std::string out;
  const Dialect *dialect = nullptr;
  if (std::optional<llvm::StringRef> name =
          lookupString(test.attrs, workload::attr::kDialect))
    dialect = schema.lookup(*name);
  if (dialect) {
    appendDialect(*dialect, test, out);
  } else {
    for (const Dialect &each : schema.dialects)
      appendDialect(each, test, out);
  }
  Attribute nproc = test.attrs.get(workload::attr::kNproc);
  if (!nproc)
    nproc = test.workload.get("nproc");
  out += "nproc=" + (nproc ? nproc.str() : std::string("unset")) + ";";
  // A test that declares no scope validates what its name says (`[tp]`,
  // `gpt_cp2`), as lower-workload infers it later: without this, a tp test
  // and an unrelated one running the same lines would look interchangeable.
  std::vector<std::string> scope = test.scope;
  if (scope.empty()) {
    if (dialect) {
      scope = inferScope(test.name, *dialect);
    } else {
      for (const Dialect &each : schema.dialects)
        llvm::append_range(scope, inferScope(test.name, each));
    }
  }
  llvm::sort(scope);
  scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
  out += "scope=" + llvm::join(scope, ",");
  return out;
}
