// Safetensors files (common/safetensors/): round trips of odd shapes and dtypes, the layout the
// format fixes (little-endian length, 8-byte aligned data), and an independent reader and writer
// (tests/integration/safetensors_numpy.py: numpy, /usr/bin/python3) agreeing with ours on every
// tensor both ways. Damaged files are refused naming the file and the tensor.
#include "common/safetensors/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/dtype.h"
#include "tests/integration/cli_process.h"
#include "tests/support/temp_dir.h"

namespace ddp::safetensors {
namespace {

const std::string kPython = "/usr/bin/python3";
const std::string kScript = std::string(DDP_SOURCE_DIR) + "/tests/integration/safetensors_numpy.py";

bool numpyAvailable() {
  return test::runCli({kPython, "-c", "import numpy"}, 30).exitCode == 0;
}

template <typename T>
Tensor typed(std::string name, std::string dtype, std::vector<int64_t> shape, const std::vector<T>& v) {
  return {std::move(name), std::move(dtype), std::move(shape),
          std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T))};
}

File oddFile() {
  File f;
  const std::vector<float> w = {1.5f, -2.f, 3.25f, 0.f, 1e-3f, 7.f};
  f.tensors.push_back(floatTensor("layer.0.weight", {2, 3}, w.data()));
  f.tensors.push_back(typed<double>("b", "F64", {1, 1, 3}, {0.1, -0.2, 1e300}));
  f.tensors.push_back(typed<float>("empty", "F32", {0, 4}, {}));
  f.tensors.push_back(typed<float>("scalar", "F32", {}, {2.5f}));
  f.tensors.push_back(typed<int64_t>("ids", "I64", {3, 1}, {-3, 0, 1LL << 40}));
  f.tensors.push_back(typed<uint16_t>("half", "F16", {3}, {floatToHalf(1.5f), floatToHalf(-2.f), floatToHalf(65504.f)}));
  f.tensors.push_back(typed<uint8_t>("bytes", "U8", {5}, {0, 1, 2, 3, 255}));
  f.metadata = {{"format", "pt"}, {"model", "type: mlp\nhidden: [3]\n"}};
  return f;
}

// Our reading of `file` in the independent reader's `dump` format.
std::string dumpLines(const File& file) {
  std::map<std::string, std::string> lines;
  for (const Tensor& t : file.tensors) {
    static const std::map<std::string, std::string> kStr = {{"F32", "<f4"}, {"F64", "<f8"}, {"F16", "<f2"},
                                                            {"I64", "<i8"}, {"U8", "|u1"}};
    double sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const char* p = t.bytes.data() + i * dtypeBytes(t.dtype);
      if (t.dtype == "F32") { float v; std::memcpy(&v, p, 4); sum += v; }
      if (t.dtype == "F64") { double v; std::memcpy(&v, p, 8); sum += v; }
      if (t.dtype == "F16") { uint16_t v; std::memcpy(&v, p, 2); sum += halfToFloat(v); }
      if (t.dtype == "I64") { int64_t v; std::memcpy(&v, p, 8); sum += static_cast<double>(v); }
      if (t.dtype == "U8") sum += static_cast<unsigned char>(*p);
    }
    std::string shape = "[";
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s %s %s] %.6g\n", t.name.c_str(), kStr.at(t.dtype).c_str(), shape.c_str(), sum);
    lines[t.name] = buf;
  }
  std::string out;
  for (const auto& [name, line] : lines) out += line;
  return out;
}

TEST(SafetensorsTest, RoundTripsOddShapesWithAlignedData) {
  const File f = oddFile();
  auto bytes = encode(f);
  ASSERT_TRUE(bytes.isOk()) << bytes.status();
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>((*bytes)[i])) << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  EXPECT_EQ((*bytes)[8], '{');
  EXPECT_EQ((*bytes)[8 + n - 1] == '}' || (*bytes)[8 + n - 1] == ' ', true);
  auto back = decode(*bytes, "mem");
  ASSERT_TRUE(back.isOk()) << back.status();
  ASSERT_EQ(back->tensors.size(), f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    EXPECT_EQ(back->tensors[i].name, f.tensors[i].name);
    EXPECT_EQ(back->tensors[i].dtype, f.tensors[i].dtype);
    EXPECT_EQ(back->tensors[i].shape, f.tensors[i].shape);
    EXPECT_EQ(back->tensors[i].bytes, f.tensors[i].bytes) << f.tensors[i].name;
  }
  EXPECT_EQ(back->metadata, f.metadata);
  ASSERT_NE(back->find("scalar"), nullptr);
  EXPECT_EQ(back->find("scalar")->floats().value(), std::vector<float>{2.5f});
  EXPECT_FALSE(back->find("ids")->floats().isOk());
}

TEST(SafetensorsTest, TheNumpyReaderReadsOurFile) {
  if (!numpyAvailable()) GTEST_SKIP() << "/usr/bin/python3 with numpy (Debian python3-numpy) not installed";
  test::TempDir dir("safetensors_test");
  const std::string path = dir.path() + "/ours.safetensors";
  ASSERT_TRUE(writeFile(path, oddFile()).isOk());
  auto r = test::runCli({kPython, kScript, "dump", path}, 60);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, dumpLines(oddFile()) + "meta format=\"pt\"\nmeta model=\"type: mlp\\nhidden: [3]\\n\"\n");
}

TEST(SafetensorsTest, WeReadTheNumpyWritersFile) {
  if (!numpyAvailable()) GTEST_SKIP() << "/usr/bin/python3 with numpy (Debian python3-numpy) not installed";
  test::TempDir dir("safetensors_test");
  const std::string path = dir.path() + "/numpy.safetensors";
  auto w = test::runCli({kPython, kScript, "write-odd", path}, 60);
  ASSERT_EQ(w.exitCode, 0) << w.err;
  auto f = readFile(path);
  ASSERT_TRUE(f.isOk()) << f.status();
  auto dump = test::runCli({kPython, kScript, "dump", path}, 60);
  ASSERT_EQ(dump.exitCode, 0) << dump.err;
  EXPECT_EQ(dump.out, dumpLines(*f) + "meta note=\"odd shapes\"\nmeta who=\"numpy\"\n");
  EXPECT_EQ(f->metadata.at("who"), "numpy");
  const Tensor* ids = f->find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->shape, (std::vector<int64_t>{3, 3}));
  int64_t last = 0;
  std::memcpy(&last, ids->bytes.data() + 8 * 8, 8);
  EXPECT_EQ(last, 5);
  EXPECT_EQ(f->find("scalar")->shape, std::vector<int64_t>{});
  EXPECT_EQ(f->find("empty")->shape, (std::vector<int64_t>{0, 4}));
}

TEST(SafetensorsTest, ReadHeaderChecksTheLayoutWithoutTheData) {
  test::TempDir dir("safetensors_test");
  const std::string path = dir.path() + "/ours.safetensors";
  ASSERT_TRUE(writeFile(path, oddFile()).isOk());
  auto h = readHeader(path);
  ASSERT_TRUE(h.isOk()) << h.status();
  ASSERT_EQ(h->tensors.size(), oddFile().tensors.size());
  EXPECT_EQ(h->tensors[1].shape, (std::vector<int64_t>{1, 1, 3}));
  EXPECT_TRUE(h->tensors[1].bytes.empty());
  EXPECT_EQ(h->metadata, oddFile().metadata);
  std::string bytes = encode(oddFile()).value();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 1);
  auto cut = readHeader(path);
  ASSERT_FALSE(cut.isOk());
  EXPECT_NE(cut.status().message().find(path + ": tensor 'bytes': data runs past the end of the file"), std::string::npos)
      << cut.status();
  EXPECT_EQ(readHeader(dir.path() + "/none").status().code(), StatusCode::kNotFound);
}

std::string withHeader(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

TEST(SafetensorsTest, DamagedFilesAreRefusedNamingTheTensor) {
  const std::string four(16, '\0');
  auto err = [](const Result<File>& r) { return r.isOk() ? std::string("ok") : r.status().message(); };
  EXPECT_NE(err(decode("abc", "f.st")).find("f.st: 3 bytes, not a safetensors file"), std::string::npos);
  EXPECT_NE(err(decode(withHeader("{}", "").substr(0, 9), "f.st")).find("exceeds the file"), std::string::npos);
  EXPECT_NE(err(decode(withHeader("[1]", ""), "f.st")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(err(decode(withHeader(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", four), "f.st"))
                .find("f.st: tensor 'w': data_offsets leave a gap"),
            std::string::npos);
  EXPECT_NE(err(decode(withHeader(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", four), "f.st"))
                .find("tensor 'w': 16 bytes, its shape and dtype take 12"),
            std::string::npos);
  EXPECT_NE(err(decode(withHeader(R"({"w":{"dtype":"Q8","shape":[3],"data_offsets":[0,16]}})", four), "f.st"))
                .find("f.st: tensor 'w': unknown dtype \"Q8\""),
            std::string::npos);
  EXPECT_NE(err(decode(withHeader(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four), "f.st"))
                .find("8 bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(err(decode(withHeader(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", four), "f.st"))
                .find("past the end"),
            std::string::npos);
  File dup;
  const float v = 1.f;
  dup.tensors = {floatTensor("x", {1}, &v), floatTensor("x", {1}, &v)};
  EXPECT_EQ(encode(dup).status().message(), "tensor 'x' is named twice");
  File bad;
  bad.tensors = {floatTensor("y", {1}, &v)};
  bad.tensors[0].shape = {2};
  EXPECT_EQ(encode(bad).status().message(), "tensor 'y': 4 bytes, its shape and dtype take 8");
}

}  // namespace
}  // namespace ddp::safetensors
