#include "worker/data/csv_dataset.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "common/datafiles/csv_file.h"

namespace ddp::data {
namespace {

std::string where(const std::string& path, int64_t line, size_t column, const std::vector<std::string>& names) {
  return path + ":" + std::to_string(line) + ": column " + std::to_string(column + 1) + " (" + names[column] + ")";
}

// The cell as a finite double, or InvalidArgument naming file, line and column.
Result<double> number(std::string_view cell, const std::string& path, int64_t line, size_t column,
                      const std::vector<std::string>& names) {
  if (cell.empty()) return invalidArgument(where(path, line, column, names) + ": empty cell (a value is missing)");
  const std::string text(cell);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    return invalidArgument(where(path, line, column, names) + ": '" + text + "' is not a number");
  }
  if (!std::isfinite(v) || !std::isfinite(static_cast<float>(v))) {
    return invalidArgument(where(path, line, column, names) + ": '" + text + "' is not a finite float");
  }
  return v;
}

}  // namespace

Result<Dataset> loadCsvDataset(const std::string& path, const std::string& target, bool floatTargets) {
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> names, datafiles::readCsvHeader(path));
  DDP_ASSIGN_OR_RETURN(size_t targetColumn, datafiles::csvTargetColumn(path, names, target));
  std::ifstream in(path);
  if (!in) return permissionDenied(path + ": cannot be read: " + std::strerror(errno));
  Dataset d;
  d.name = path;
  d.floatTargets = floatTargets;
  d.sampleShape = {static_cast<int64_t>(names.size()) - 1};
  std::string line;
  std::getline(in, line);  // the header
  for (int64_t lineNo = 2; std::getline(in, line); ++lineNo) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string_view> cells = datafiles::splitCsvLine(line);
    if (cells.size() != names.size()) {
      return invalidArgument(path + ":" + std::to_string(lineNo) + ": " + std::to_string(cells.size()) +
                             " cells, the header has " + std::to_string(names.size()) + " columns");
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      DDP_ASSIGN_OR_RETURN(double v, number(cells[c], path, lineNo, c, names));
      if (c != targetColumn) {
        d.images.push_back(static_cast<float>(v));
        continue;
      }
      if (floatTargets) {
        d.values.push_back(static_cast<float>(v));
        continue;
      }
      if (v < 0 || v != std::floor(v) || v > std::numeric_limits<int32_t>::max()) {
        return invalidArgument(where(path, lineNo, c, names) + ": class label '" + std::string(cells[c]) +
                               "' is not a whole number in [0, 2^31)");
      }
      d.labels.push_back(static_cast<int32_t>(v));
    }
  }
  if (d.size() == 0) return invalidArgument(path + ": no samples after the header");
  return d;
}

}  // namespace ddp::data
