// The protocol's vocabulary (common/protocol/vocabulary.h): every worker state and command type
// reads back from the name it is written as (the spellings docs/API.md gives), and any other
// text is refused, leaving the output as it was.
#include "common/protocol/vocabulary.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ddp::protocol {
namespace {

TEST(VocabularyTest, WorkerStatesRoundTripUnderTheirDocumentedNames) {
  const std::pair<WorkerState, std::string> states[] = {{WorkerState::kRunning, "Running"},
                                                        {WorkerState::kSucceeded, "Succeeded"},
                                                        {WorkerState::kFailed, "Failed"},
                                                        {WorkerState::kStopped, "Stopped"}};
  for (const auto& [state, name] : states) {
    EXPECT_EQ(workerStateName(state), name);
    WorkerState back = WorkerState::kRunning;
    ASSERT_TRUE(parseWorkerState(name, &back)) << name;
    EXPECT_EQ(back, state) << name;
  }
  WorkerState untouched = WorkerState::kFailed;
  for (const char* text : {"running", "Sleeping", "", "Running "}) {
    EXPECT_FALSE(parseWorkerState(text, &untouched)) << text;
    EXPECT_EQ(untouched, WorkerState::kFailed) << text;
  }
}

TEST(VocabularyTest, CommandTypesRoundTripUnderTheirDocumentedNames) {
  const std::pair<CommandType, std::string> types[] = {{CommandType::kNone, "none"},
                                                       {CommandType::kCheckpoint, "checkpoint"},
                                                       {CommandType::kStop, "stop"},
                                                       {CommandType::kAbort, "abort"},
                                                       {CommandType::kFlightRecord, "flightRecord"}};
  for (const auto& [type, name] : types) {
    EXPECT_EQ(commandTypeName(type), name);
    CommandType back = CommandType::kNone;
    ASSERT_TRUE(parseCommandType(name, &back)) << name;
    EXPECT_EQ(back, type) << name;
  }
  CommandType untouched = CommandType::kStop;
  for (const char* text : {"Stop", "flightrecord", "", "restart"}) {
    EXPECT_FALSE(parseCommandType(text, &untouched)) << text;
    EXPECT_EQ(untouched, CommandType::kStop) << text;
  }
}

TEST(VocabularyTest, ExitCodesAreDistinct) {
  EXPECT_EQ(kWorkerExitOk, 0);
  EXPECT_EQ((std::set<int>{kWorkerExitOk, kWorkerExitFailure, kWorkerExitBadConfig}).size(), 3u);
}

}  // namespace
}  // namespace ddp::protocol
