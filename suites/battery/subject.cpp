#include "suites/battery/subject.h"

namespace samplecheck::battery {

std::vector<int32_t> declared_dtypes(const subject& s) {
  std::vector<int32_t> dtypes;
  if (s.sampler == nullptr) return dtypes;
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (s.sampler->input_dtypes & SC_DTYPE_BIT(d)) dtypes.push_back(d);
  return dtypes;
}

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case SC_DTYPE_F32: return "f32";
    case SC_DTYPE_BF16: return "bf16";
    case SC_DTYPE_F16: return "f16";
  }
  return "?";
}

}  // namespace samplecheck::battery
