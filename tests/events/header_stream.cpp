// SPDX-License-Identifier: BSD-3-Clause
// Compiles the public header alone: it must include everything it uses.
#include <events/stream.h>
