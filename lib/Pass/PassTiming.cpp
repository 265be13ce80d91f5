//===- PassTiming.cpp - --timing instrumentation --------------------------===//
//
// Measures wall and CPU (user + system, whole process, so time spent in
// parallelFor workers counts) of each pass and of each analysis, nested under
// the pass that asked for it. Times accumulate over runs, so a
// --split-input-file invocation reports totals. The layout follows mlir-opt's
// -mlir-timing report.
//
//===----------------------------------------------------------------------===//
#include "PassDetail.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace fastci;
using namespace fastci::detail;

void PassTiming::runBeforePipeline(Module &) {
  pipelineStart = llvm::TimeRecord::getCurrentTime(/*Start=*/true);
}

void PassTiming::runAfterPipeline(Module &) {
  llvm::TimeRecord elapsed = llvm::TimeRecord::getCurrentTime(/*Start=*/false);
  elapsed -= pipelineStart;
  pipelineTotal += elapsed;
}

void PassTiming::start(Timer &timer) {
  active.emplace_back(&timer, llvm::TimeRecord::getCurrentTime(true));
}

void PassTiming::runBeforePass(Pass *pass, Module &) {
  Timer &timer = passes[pass];
  timer.key = pass;
  timer.name = pass->getArgument().str();
  start(timer);
}

void PassTiming::stop() {
  llvm::TimeRecord elapsed = llvm::TimeRecord::getCurrentTime(false);
  elapsed -= active.back().second;
  active.back().first->total += elapsed;
  active.pop_back();
}

void PassTiming::runAfterPass(Pass *, Module &) { stop(); }
void PassTiming::runAfterPassFailed(Pass *, Module &) { stop(); }

PassTiming::Timer &PassTiming::getAnalysisTimer(TypeID id) {
  // Timers of enclosing passes and analyses are never in the vector that
  // grows here, so the pointers in `active` stay valid.
  std::vector<Timer> &siblings =
      active.empty() ? topLevelAnalyses : active.back().first->children;
  for (Timer &timer : siblings)
    if (timer.key == id.getAsOpaquePointer())
      return timer;
  Timer &timer = siblings.emplace_back();
  timer.key = id.getAsOpaquePointer();
  return timer;
}

void PassTiming::runBeforeAnalysis(llvm::StringRef name, TypeID id, Module &) {
  Timer &timer = getAnalysisTimer(id);
  timer.name = ("(A) " + name).str();
  start(timer);
}

void PassTiming::runAfterAnalysis(llvm::StringRef, TypeID, Module &) { stop(); }

namespace {
/// One line of the report.
struct ReportLine {
  std::string name;
  double wall = 0, cpu = 0;
  unsigned depth = 0;
};
} // namespace

static void addLine(const auto &timer, unsigned depth,
                    std::vector<ReportLine> &lines) {
  lines.push_back({timer.name, timer.total.getWallTime(),
                   timer.total.getProcessTime(), depth});
  for (const auto &child : timer.children)
    addLine(child, depth + 1, lines);
}

void PassTiming::print(llvm::raw_ostream &os) const {
  std::vector<ReportLine> lines;
  for (const auto &analysis : topLevelAnalyses)
    addLine(analysis, 0, lines);
  for (const auto &entry : passes)
    addLine(entry.second, 0, lines);

  if (display == TimingDisplay::List) {
    // One line per name, slowest first; analyses are no longer nested.
    llvm::StringMap<ReportLine> merged;
    std::vector<std::string> order;
    for (const ReportLine &line : lines) {
      auto [it, inserted] =
          merged.try_emplace(line.name, ReportLine{line.name});
      if (inserted)
        order.push_back(line.name);
      it->second.wall += line.wall;
      it->second.cpu += line.cpu;
    }
    lines.clear();
    for (const std::string &name : order)
      lines.push_back(merged[name]);
    std::stable_sort(lines.begin(), lines.end(),
                     [](const ReportLine &lhs, const ReportLine &rhs) {
                       return lhs.wall > rhs.wall;
                     });
  }

  double totalWall = pipelineTotal.getWallTime();
  double totalCPU = pipelineTotal.getProcessTime();
  auto printColumn = [&](double value, double total) {
    double percent = total > 0 ? 100.0 * value / total : 0.0;
    os << llvm::format("  %8.4f (%5.1f%%)", value, percent);
  };
  os << "===" << std::string(73, '-') << "===\n"
     << std::string(25, ' ') << "... Execution time report ...\n"
     << "===" << std::string(73, '-') << "===\n"
     << llvm::format("  Total Execution Time: %.4f seconds\n\n", totalWall)
     << "  ----Wall Time----  ----CPU Time-----  ----Name----\n";
  for (const ReportLine &line : lines) {
    printColumn(line.wall, totalWall);
    printColumn(line.cpu, totalCPU);
    os << "  ";
    os.indent(2 * line.depth) << line.name << '\n';
  }
  printColumn(totalWall, totalWall);
  printColumn(totalCPU, totalCPU);
  os << "  Total\n";
}
