#pragma once
/// @file
/// A progress bar for train::Loop (GoMLX's commandline.AttachProgressBar): steps done and total,
/// steps and examples per second, elapsed time and ETA, and the train metrics by short name.
/// On a terminal it redraws one line in place; otherwise it prints a plain line at most every
/// 10 seconds or every 5% of the steps (and at the end).

#include <iosfwd>

#include "kiln/train/loop.h"

namespace kiln::commandline {

/// Attaches the progress bar to `loop`, writing to stdout (a terminal or not, as detected).
void AttachProgressBar(train::Loop& loop);
/// The same on `out`, drawn as on a terminal when `terminal` is true.
void AttachProgressBar(train::Loop& loop, std::ostream& out, bool terminal);

}  // namespace kiln::commandline
