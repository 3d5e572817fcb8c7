// Under ctest with a resource spec (samplecheck_add_qualification(... GPUS n)), the GPUs
// ctest allotted to this test arrive as CTEST_RESOURCE_GROUP_<i>_GPUS="id:<n>,slots:1";
// they become CUDA_VISIBLE_DEVICES before any check's child initialises CUDA.
#pragma once

#include <string>

namespace samplecheck::cli {

// The CUDA_VISIBLE_DEVICES value for ctest's allocation ("2,3"); empty when this process
// was given no GPU group or the ids are not device indices (the spec's placeholders).
std::string ctest_visible_devices();

// Sets CUDA_VISIBLE_DEVICES (and CUDA_DEVICE_ORDER=PCI_BUS_ID, the order nvidia-smi
// lists, which the spec's ids follow) when ctest allotted GPUs.
void use_ctest_gpus();

}  // namespace samplecheck::cli
