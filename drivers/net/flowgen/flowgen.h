// SPDX-License-Identifier: BSD-3-Clause
// Contract: the flowgen driver in one include. config.h (Config, parse_config, check_config, help),
// stats.h (Stats), core.h (Core: EAL-free frames into buffers), generator.h (Generator: frames into
// mbufs) and port.h (Port: the ethdev). See drivers/net/flowgen/flowgen.md for the traffic model.
#pragma once

#include <flowgen/capture.h>
#include <flowgen/config.h>
#include <flowgen/core.h>
#include <flowgen/generator.h>
#include <flowgen/port.h>
#include <flowgen/rss_dealer.h>
#include <flowgen/stats.h>
