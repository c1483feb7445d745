#include "worker/comm/flight_recorder.h"

#include <algorithm>
#include <cstdio>

namespace ddp::comm {

const char* flightStateName(FlightState s) {
  switch (s) {
    case FlightState::kQueued: return "queued";
    case FlightState::kRunning: return "running";
    case FlightState::kCompleted: return "completed";
    case FlightState::kFailed: return "failed";
    case FlightState::kTimedOut: return "timed_out";
    case FlightState::kAborted: return "aborted";
  }
  return "?";
}

FlightRecorder::FlightRecorder(size_t capacity, const Clock& clock)
    : clock_(clock), ring_(std::max<size_t>(capacity, 1)) {}

FlightRecord* FlightRecorder::find(uint64_t seq) {
  FlightRecord& r = ring_[seq % ring_.size()];
  return r.seq == seq ? &r : nullptr;
}

void FlightRecorder::recordIssued(uint64_t seq, const std::string& op, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  FlightRecord& r = ring_[seq % ring_.size()];
  r = FlightRecord{};
  r.seq = seq;
  r.op = op;
  r.bytes = bytes;
  r.issued = clock_.now();
}

void FlightRecorder::recordStarted(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FlightRecord* r = find(seq)) {
    r->started = clock_.now();
    if (r->state == FlightState::kQueued) r->state = FlightState::kRunning;
  }
}

void FlightRecorder::recordEnded(uint64_t seq, FlightState state, const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FlightRecord* r = find(seq)) {
    // The first terminal state wins (a timed-out op later failing in the transport stays
    // "timed_out").
    if (r->state == FlightState::kQueued || r->state == FlightState::kRunning) {
      r->state = state;
      r->ended = clock_.now();
      r->detail = detail;
    }
  }
}

std::vector<FlightRecord> FlightRecorder::snapshot() const {
  std::vector<FlightRecord> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& r : ring_) {
      if (r.seq != 0) out.push_back(r);
    }
  }
  std::sort(out.begin(), out.end(), [](const FlightRecord& a, const FlightRecord& b) { return a.seq < b.seq; });
  return out;
}

std::string FlightRecorder::dump(const std::string& group) const {
  const auto records = snapshot();
  std::string out = "flight record of group " + group + " (last " + std::to_string(records.size()) + " ops)";
  const TimePoint now = clock_.now();
  auto ago = [&](TimePoint t) -> std::string {
    if (t == TimePoint{}) return "-";
    return formatDuration(now - t) + " ago";
  };
  for (const auto& r : records) {
    char line[256];
    std::snprintf(line, sizeof line, "\n  seq %llu %s %zu bytes state=%s issued %s started %s ended %s",
                  static_cast<unsigned long long>(r.seq), r.op.c_str(), r.bytes, flightStateName(r.state),
                  ago(r.issued).c_str(), ago(r.started).c_str(), ago(r.ended).c_str());
    out += line;
    if (!r.detail.empty()) out += " (" + r.detail + ")";
  }
  return out;
}

}  // namespace ddp::comm
