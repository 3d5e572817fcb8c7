#define CATCH_CONFIG_RUNNER
#include "suites/testing/catch_session.h"

int main(int argc, char* argv[]) { return samplecheck::testing::run_catch_session(argc, argv); }
