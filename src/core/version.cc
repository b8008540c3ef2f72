#include "kiln/core/version.h"

namespace kiln {

std::string Version() { return KILN_VERSION; }

}  // namespace kiln
