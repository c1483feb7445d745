#pragma once
// Numeric CSV files: a header line of column names, then one line per sample of numbers
// separated by commas (no quoting inside a cell; a name may be double-quoted; spaces around a
// cell and a '\r' at the end of a line are ignored). The header check is cheap (the controller's
// at submission); reading every cell is the worker's (worker/data/csv_dataset.h).
// Thread model: free functions.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::datafiles {

// The cells of one line, trimmed (quotes around a cell removed).
std::vector<std::string_view> splitCsvLine(std::string_view line);
// The header's column names. NotFound / PermissionDenied naming the file; InvalidArgument for an
// empty file, an empty or repeated column name.
Result<std::vector<std::string>> readCsvHeader(const std::string& path);
// The index of `target` in `columns`; InvalidArgument naming the file, the column and the
// columns there are. At least one other column (a feature) must exist.
Result<size_t> csvTargetColumn(const std::string& path, const std::vector<std::string>& columns,
                               const std::string& target);

}  // namespace ddp::datafiles
