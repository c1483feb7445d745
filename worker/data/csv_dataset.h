#pragma once
// A split from a numeric CSV file (common/datafiles/csv_file.h): the header names the columns,
// `target` is the label column (class labels: whole numbers >= 0; or float values), every other column is a
// feature (sample shape {columns - 1}, in the file's order). A missing, extra or non-numeric
// cell, a non-finite number or a label that is not a whole number >= 0 is an error naming the
// file, the line and the column ("data.csv:7: column 3 (petal_length): 'abc' is not a number").
// Blank lines are skipped.
// Thread model: plain functions.

#include <string>

#include "common/status.h"
#include "worker/data/dataset.h"

namespace ddp::data {

// Dataset::name is the file; classes is left 0 (the caller decides: user_data.h). floatTargets
// (regression, spec.loss mse): the target column is read as float values, any finite number.
Result<Dataset> loadCsvDataset(const std::string& path, const std::string& target, bool floatTargets = false);

}  // namespace ddp::data
