#include "common/safetensors/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <cerrno>
#include <fstream>
#include <set>

#include "common/checkpoint/atomic_file.h"

namespace ddp::safetensors {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the reference reader's limit

Status checkTensor(const Tensor& t) {
  const std::string where = "tensor '" + t.name + "'";
  if (t.name.empty()) return invalidArgument("a tensor has an empty name");
  if (t.name == "__metadata__") return invalidArgument("a tensor may not be named __metadata__");
  if (dtypeBytes(t.dtype) == 0) return invalidArgument(where + ": unknown dtype '" + t.dtype + "'");
  for (int64_t d : t.shape) {
    if (d < 0) return invalidArgument(where + ": negative dimension " + std::to_string(d));
  }
  const int64_t want = t.numel() * dtypeBytes(t.dtype);
  if (static_cast<int64_t>(t.bytes.size()) != want) {
    return invalidArgument(where + ": " + std::to_string(t.bytes.size()) + " bytes, its shape and dtype take " +
                           std::to_string(want));
  }
  return Status::ok();
}

// A JSON number that is a non-negative integer, else -1.
int64_t nonNegative(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(u);
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return -1;
}

struct Entry {
  Tensor tensor;
  int64_t begin = 0, end = 0;
};

Result<Entry> parseEntry(const std::string& name, const nlohmann::json& v, const std::string& where) {
  Entry e;
  e.tensor.name = name;
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
    return invalidArgument(where + ": needs dtype, shape and data_offsets");
  }
  if (!v["dtype"].is_string() || dtypeBytes(v["dtype"].get<std::string>()) == 0) {
    return invalidArgument(where + ": unknown dtype " + v["dtype"].dump());
  }
  e.tensor.dtype = v["dtype"].get<std::string>();
  if (!v["shape"].is_array()) return invalidArgument(where + ": shape is not a list");
  for (const auto& d : v["shape"]) {
    if (nonNegative(d) < 0) return invalidArgument(where + ": shape " + v["shape"].dump() + " is not a list of sizes");
    e.tensor.shape.push_back(nonNegative(d));
  }
  const auto& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || nonNegative(off[0]) < 0 || nonNegative(off[1]) < nonNegative(off[0])) {
    return invalidArgument(where + ": data_offsets " + off.dump() + " is not [begin, end]");
  }
  e.begin = nonNegative(off[0]);
  e.end = nonNegative(off[1]);
  return e;
}

Result<std::vector<Entry>> parseHeader(const nlohmann::json& header, const std::string& what, File* file) {
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return invalidArgument(what + ": __metadata__ is not an object");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) return invalidArgument(what + ": __metadata__ '" + k + "' is not a string");
        file->metadata[k] = s.get<std::string>();
      }
      continue;
    }
    DDP_ASSIGN_OR_RETURN(Entry e, parseEntry(name, v, what + ": tensor '" + name + "'"));
    entries.push_back(std::move(e));
  }
  return entries;
}

uint64_t headerLength(std::string_view eight) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(eight[i])) << (8 * i);
  return n;
}

// The tensors a header announces (bytes not filled in), sorted by offset, checked against a file
// of `fileSize` bytes whose header is `n` bytes; the metadata into `file` (when not null).
Result<std::vector<Entry>> layout(std::string_view text, uint64_t n, uint64_t fileSize, const std::string& what,
                                  File* file) {
  if (n > kMaxHeaderBytes || n > fileSize - 8) {
    return invalidArgument(what + ": header length " + std::to_string(n) + " exceeds the file (" +
                           std::to_string(fileSize) + " bytes): not a safetensors file");
  }
  if (text.empty() || text[0] != '{') return invalidArgument(what + ": the header is not a JSON object");
  const auto header = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return invalidArgument(what + ": the header is not valid JSON");
  File scratch;
  DDP_ASSIGN_OR_RETURN(std::vector<Entry> entries, parseHeader(header, what, file != nullptr ? file : &scratch));
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const auto dataSize = static_cast<int64_t>(fileSize - 8 - n);
  int64_t expect = 0;
  for (const Entry& e : entries) {
    const std::string where = what + ": tensor '" + e.tensor.name + "'";
    if (e.begin != expect) return invalidArgument(where + ": data_offsets leave a gap or overlap at byte " + std::to_string(expect));
    if (e.end > dataSize) return invalidArgument(where + ": data runs past the end of the file");
    const int64_t want = e.tensor.numel() * dtypeBytes(e.tensor.dtype);
    if (e.end - e.begin != want) {
      return invalidArgument(where + ": " + std::to_string(e.end - e.begin) + " bytes, its shape and dtype take " +
                             std::to_string(want));
    }
    expect = e.end;
  }
  if (expect != dataSize) return invalidArgument(what + ": " + std::to_string(dataSize - expect) + " bytes after the last tensor");
  return entries;
}

}  // namespace

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<std::vector<float>> Tensor::floats() const {
  if (dtype != "F32") return invalidArgument("tensor '" + name + "' is " + dtype + ", not F32");
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

const Tensor* File::find(const std::string& name) const {
  for (const Tensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

int64_t dtypeBytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> kBytes = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},
                                                         {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
                                                         {"U8", 1},  {"BOOL", 1}};
  auto it = kBytes.find(dtype);
  return it == kBytes.end() ? 0 : it->second;
}

Tensor floatTensor(std::string name, std::vector<int64_t> shape, const float* values) {
  Tensor t{std::move(name), "F32", std::move(shape), {}};
  t.bytes.assign(reinterpret_cast<const char*>(values), static_cast<size_t>(t.numel()) * sizeof(float));
  return t;
}

Result<std::string> encode(const File& file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const Tensor& t : file.tensors) {
    DDP_RETURN_IF_ERROR(checkTensor(t));
    if (!names.insert(t.name).second) return invalidArgument("tensor '" + t.name + "' is named twice");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += json;
  out.reserve(out.size() + offset);
  for (const Tensor& t : file.tensors) out += t.bytes;
  return out;
}

Result<File> decode(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 8) return invalidArgument(what + ": " + std::to_string(bytes.size()) + " bytes, not a safetensors file");
  const uint64_t n = headerLength(bytes.substr(0, 8));
  File file;
  DDP_ASSIGN_OR_RETURN(std::vector<Entry> entries, layout(bytes.substr(8, n), n, bytes.size(), what, &file));
  const std::string_view data = bytes.substr(8 + n);
  for (Entry& e : entries) {
    e.tensor.bytes.assign(data.substr(static_cast<size_t>(e.begin), static_cast<size_t>(e.end - e.begin)));
    file.tensors.push_back(std::move(e.tensor));
  }
  return file;
}

Result<File> readHeader(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return notFound(path + ": cannot open (" + std::strerror(errno) + ")");
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size < 8) return invalidArgument(path + ": " + std::to_string(size) + " bytes, not a safetensors file");
  std::string head(8, '\0');
  in.seekg(0);
  in.read(head.data(), 8);
  const uint64_t n = headerLength(head);
  std::string text(static_cast<size_t>(std::min(n, std::min(kMaxHeaderBytes, size - 8))), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in) return unavailable(path + ": cannot read its header");
  File file;
  DDP_ASSIGN_OR_RETURN(std::vector<Entry> entries, layout(text, n, size, path, &file));
  for (Entry& e : entries) file.tensors.push_back(std::move(e.tensor));
  return file;
}

Status writeFile(const std::string& path, const File& file) {
  DDP_ASSIGN_OR_RETURN(std::string bytes, encode(file));
  return runtime::writeFileAtomic(path, bytes).withContext("writing " + path);
}

Result<File> readFile(const std::string& path) {
  DDP_ASSIGN_OR_RETURN(std::string bytes, runtime::readFile(path));
  return decode(bytes, path);
}

}  // namespace ddp::safetensors
