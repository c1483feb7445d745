#pragma once
// Pure text formatting for ddpctl's client commands: the kubectl-like tables, ages, the watch
// progress line and summary, and the describe page, all from the controller's JSON objects
// (docs/API.md). Every field may be missing or null: a table cell then shows "-", a describe
// line "<none>". Nothing here does I/O or reads a clock (the caller passes "now").
// Thread model: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/ddpctl/job_fields.h"

namespace ddp::ddpctl {

inline constexpr int kProgressBarWidth = 24;

// Seconds since the Unix epoch for an RFC 3339 time ("2026-11-23T10:00:00Z"; a fraction and a
// "+hh:mm" offset are accepted); nullopt when `text` is not one.
std::optional<int64_t> parseRfc3339(const std::string& text);

// kubectl's AGE column: "5s", "3m", "2h", "4d", "2y" (whole units, rounded down); a negative age
// (clock skew) shows "0s".
std::string formatAge(int64_t seconds);
// A duration with two units where that helps: "12s", "3m20s", "2h5m", "1d3h".
std::string formatSeconds(double seconds);

// Columns separated by three spaces and padded to the widest cell (the last column unpadded);
// `indent` spaces before every line. Widths count UTF-8 code points.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
std::string renderTable(const Table& table, int indent = 0);

// `get`: NAME PHASE WORKERS STEP PROGRESS LOSS ACCURACY AGE (+ GENERATION RESTARTS ETA when
// `wide`) for a JSON array of job objects. `nowUnix` is the time the ages are measured to.
// Language models: VAL-LOSS after LOSS when a listed job reports one, and with `wide` TOKENS/S
// and MFU at the end when one reports them; without such a job the table is as above.
Table jobTable(const Json& jobs, int64_t nowUnix, bool wide);
// `checkpoints`: STEP TIME BYTES WORLD-SIZE PATH for a JSON array of checkpoint objects.
Table checkpointTable(const Json& checkpoints);

// `describe`: the job's metadata, status, a spec summary (model, data, workers, optimizer,
// hook, epochs/steps, checkpoint), then its conditions, workers and `events` (a JSON array).
// A language model's figures add "Val loss" and "Throughput" lines after "Test accuracy".
// `flightRecords`: GET /v1/jobs/{name}/flightrecords's array; each hang gets its summary line.
std::string describeJob(const Json& job, const Json& events, int64_t nowUnix,
                        const Json& flightRecords = Json::array());

// `watch`: one line for the job's state now, e.g.
//   "Running     [#####-------------------]  120/2814   4.3%  loss 0.5200  9000 samples/s  ETA 12s"
// (a language model adds "val loss 2.2500 (ppl 9.49)" after the loss and "81920 tokens/s  MFU
// 42.0%" after the speed, each when reported)
std::string progressLine(const Json& job, int barWidth = kProgressBarWidth);
// Just the bar: "[#####---]" with `width` cells filled in proportion to `fraction` (clamped).
std::string progressBar(double fraction, int width);
// `watch`'s last line, e.g. "job mnist Succeeded: step 2814/2814, loss 0.3120, test accuracy
// 87.3%, took 1m12s" (a failure adds the Failed condition's message; a language model shows
// "val loss 2.2500, perplexity 9.49" and its test accuracy only when it has one).
std::string watchSummary(const Json& job);

// A JSON value as a YAML document (block style; strings that would read back as another type
// are quoted), ending in a newline.
std::string jsonToYaml(const Json& value);

}  // namespace ddp::ddpctl
