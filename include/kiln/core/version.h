#pragma once
/// @file
/// The library's version.

#include <string>

namespace kiln {

/// The kiln version as "major.minor.patch".
std::string Version();

}  // namespace kiln
