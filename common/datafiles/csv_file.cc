#include "common/datafiles/csv_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

namespace ddp::datafiles {

std::vector<std::string_view> splitCsvLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    std::string_view cell = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
    while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
    if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = cell.substr(1, cell.size() - 2);
    cells.push_back(cell);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

Result<std::vector<std::string>> readCsvHeader(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return notFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalidArgument(path + ": not a regular file");
  std::ifstream in(path);
  if (!in) return permissionDenied(path + ": cannot be read: " + std::strerror(errno));
  std::string line;
  if (!std::getline(in, line)) return invalidArgument(path + ": empty file (a CSV source starts with a header line)");
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (std::string_view cell : splitCsvLine(line)) {
    const std::string name(cell);
    const std::string where = path + ":1: column " + std::to_string(names.size() + 1);
    if (name.empty()) return invalidArgument(where + ": empty column name in the header");
    if (!seen.insert(name).second) {
      return invalidArgument(where + ": column name '" + name + "' appears twice in the header");
    }
    names.push_back(name);
  }
  return names;
}

Result<size_t> csvTargetColumn(const std::string& path, const std::vector<std::string>& columns,
                               const std::string& target) {
  std::string all;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == target) {
      if (columns.size() < 2) return invalidArgument(path + ": only the target column '" + target + "', no feature column");
      return i;
    }
    all += (all.empty() ? "" : ", ") + columns[i];
  }
  return invalidArgument(path + ": no column '" + target + "' (spec.data.target) in the header; the columns are " + all);
}

}  // namespace ddp::datafiles
