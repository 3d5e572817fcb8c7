// A plugin compiled as C++ with -fvisibility=hidden, returning no descriptor. Without
// SC_PLUGIN_EXPORT (SAMPLECHECK_MANGLED) its entry is exported under the C++-mangled name
// only, which samplecheck must name in its refusal; with it the entry is found, so the
// refusal is the NULL it returns.
#include "kernels/samplecheck_plugin.h"

#ifdef SAMPLECHECK_MANGLED
__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin() { return nullptr; }
#else
SC_PLUGIN_EXPORT const sc_plugin* samplecheck_plugin(void) { return nullptr; }
#endif
