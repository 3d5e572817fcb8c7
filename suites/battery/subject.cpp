#include "suites/battery/subject.h"

namespace samplecheck::battery {

std::vector<int32_t> declared_dtypes(const subject& s) {
  std::vector<int32_t> dtypes;
  if (s.sampler == nullptr) return dtypes;
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (s.sampler->input_dtypes & SC_DTYPE_BIT(d)) dtypes.push_back(d);
  return dtypes;
}

}  // namespace samplecheck::battery
