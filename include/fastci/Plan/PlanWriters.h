//===- PlanWriters.h - Spelling a plan for CI engines -----------*- C++ -*-===//
//
// One writer per output format of emit-plan: the versioned JSON plan that the
// `fastci` driver runs and audits, a pytest argument file, a GitHub Actions
// job matrix, a GitLab child pipeline and a POSIX shell script. Each format is
// a pure function of the Plan, so formats never disagree about order,
// commands or environment. docs/Plan.md shows every format.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PLAN_PLANWRITERS_H
#define FASTCI_PLAN_PLANWRITERS_H

#include "fastci/Plan/Plan.h"
#include "fastci/Support/EnumNames.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace fastci {

/// The output formats of a plan.
enum class PlanFormat : uint8_t { Json, Pytest, GithubMatrix, Gitlab, Shell };

/// The spellings of PlanFormat (emit-plan's `format=`).
inline constexpr EnumName<PlanFormat> kPlanFormatNames[] = {
    {PlanFormat::Json, "json", "plan.json (docs/Plan.md)"},
    {PlanFormat::Pytest, "pytest", "pytest arguments"},
    {PlanFormat::GithubMatrix, "github-matrix", "a GitHub Actions matrix"},
    {PlanFormat::Gitlab, "gitlab", "a GitLab child pipeline"},
    {PlanFormat::Shell, "shell", "a POSIX shell script"},
};

/// The format named \p name (`json`, `pytest`, ...), if any.
inline std::optional<PlanFormat> symbolizePlanFormat(llvm::StringRef name) {
  return symbolizeEnum<PlanFormat>(kPlanFormatNames, name);
}

/// Writes \p plan to \p os in \p format.
void writePlan(const Plan &plan, PlanFormat format, llvm::raw_ostream &os);

/// \p word quoted for a POSIX shell (bare when it needs no quoting).
std::string shellQuote(llvm::StringRef word);

/// The test's command as one POSIX shell command line, its environment
/// prefixed through `env` so the line is self-contained.
std::string shellCommandLine(const PlannedTest &test);

} // namespace fastci

#endif // FASTCI_PLAN_PLANWRITERS_H
