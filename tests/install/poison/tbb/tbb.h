// Placed ahead of the system headers on the include path of tests/install/both_apis.cc: an
// installed chakraflow header that includes this library fails the build.
#error "chakraflow's installed headers must not include tbb/tbb.h"
