// Reads fixtures/matmul/layer_shapes.txt: the matmul shapes and batch-size lists.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace samplecheck::matmul_suite {

struct matmul_shape {
  std::string name;
  int64_t n = 0;  // output features
  int64_t k = 0;  // input features
  std::string tag;
};

struct matmul_fixture {
  std::vector<matmul_shape> shapes;
  std::map<std::string, std::vector<int64_t>> batch_sizes;

  const matmul_shape& shape(const std::string& name) const;          // throws if absent
  const std::vector<int64_t>& sizes(const std::string& name) const;  // throws if absent
};

// Throws std::runtime_error naming the file, line and field of any bad record.
matmul_fixture read_matmul_fixture(const std::string& path);

}  // namespace samplecheck::matmul_suite
